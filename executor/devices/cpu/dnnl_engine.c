/*
 * The CPU compute engine's shared parts (dnnl_engine.h): the process's
 * oneDNN engine, a stream and scratch buffers per thread, reorders and
 * primitive execution with the executor's error messages.
 *
 * Streams and scratch are per thread because sessions run on the caller's
 * threads (test_threads runs eight at once) and a stream is not meant to be
 * shared. Scratch buffers hold an activation converted into the engine's
 * blocked layout for the length of one op; they grow to the largest
 * activation a thread has seen and are freed when the thread ends.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_engine.h"
#include "planes.h"

static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;

/* What a thread holds: its stream and scratch buffers. */
typedef struct thread_state {
    dnnl_stream_t stream;
    void *buf[XE_DNNL_SCRATCH_COUNT];
    size_t cap[XE_DNNL_SCRATCH_COUNT];
} thread_state;

static void thread_state_free(void *p)
{
    thread_state *t = p;
    if (t->stream)
        dnnl_stream_destroy(t->stream);
    for (int i = 0; i < XE_DNNL_SCRATCH_COUNT; i++)
        free(t->buf[i]);
    free(t);
}

static void engine_init(void)
{
    if (pthread_key_create(&thread_key, thread_state_free) != 0)
        return;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
        engine = NULL;
}

dnnl_engine_t xe_dnnl_engine(void)
{
    pthread_once(&engine_once, engine_init);
    return engine;
}

/* The calling thread's state, created on first use; NULL on failure. */
static thread_state *thread_get(void)
{
    if (!xe_dnnl_engine())
        return NULL;
    thread_state *t = pthread_getspecific(thread_key);
    if (t)
        return t;
    if (!(t = calloc(1, sizeof *t)))
        return NULL;
    if (dnnl_stream_create(&t->stream, engine, dnnl_stream_default_flags) != dnnl_success ||
        pthread_setspecific(thread_key, t) != 0) {
        thread_state_free(t);
        return NULL;
    }
    return t;
}

dnnl_stream_t xe_dnnl_stream(void)
{
    thread_state *t = thread_get();
    return t ? t->stream : NULL;
}

void *xe_dnnl_scratch(int slot, size_t bytes)
{
    thread_state *t = thread_get();
    if (!t)
        return NULL;
    if (t->cap[slot] < bytes) {
        size_t want = (bytes + 63) / 64 * 64;
        void *p = aligned_alloc(64, want);
        if (!p)
            return NULL;
        free(t->buf[slot]);
        t->buf[slot] = p;
        t->cap[slot] = want;
    }
    return t->buf[slot];
}

xe_code xe_dnnl_check(dnnl_status_t s, const xe_node *n, const char *what, xe_status *st)
{
    if (s == dnnl_success)
        return XE_OK;
    xe_code c = s == dnnl_out_of_memory   ? XE_ERR_NOMEM
                : s == dnnl_unimplemented ? XE_ERR_UNSUPPORTED
                                          : XE_ERR_RUNTIME;
    return xe_fail(st, c, "node %s (%s): oneDNN %s failed (status %d)", n ? n->name : "?",
                   n ? xe_op_name(n->op) : "?", what, (int)s);
}

xe_code xe_dnnl_primitive(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
                          dnnl_primitive_t *prim, dnnl_primitive_desc_t *pd, const xe_node *n,
                          xe_status *st)
{
    *prim = NULL;
    *pd = NULL;
    if (!xe_dnnl_engine())
        return xe_fail(st, XE_ERR_RUNTIME, "node %s: oneDNN has no CPU engine", n->name);
    if (xe_dnnl_check(dnnl_primitive_desc_create(pd, desc, attr, engine, NULL), n,
                      "primitive descriptor", st) != XE_OK)
        return st->code;
    if (xe_dnnl_check(dnnl_primitive_create(prim, *pd), n, "primitive", st) != XE_OK) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
        return st->code;
    }
    return XE_OK;
}

xe_code xe_dnnl_reorder_make(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                             dnnl_primitive_t *r, const xe_node *n, xe_status *st)
{
    *r = NULL;
    if (dnnl_memory_desc_equal(from, to))
        return XE_OK;
    if (!xe_dnnl_engine())
        return xe_fail(st, XE_ERR_RUNTIME, "node %s: oneDNN has no CPU engine", n->name);
    dnnl_primitive_desc_t pd;
    if (xe_dnnl_check(dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL), n,
                      "reorder descriptor", st) != XE_OK)
        return st->code;
    dnnl_status_t s = dnnl_primitive_create(r, pd);
    dnnl_primitive_desc_destroy(pd);
    return xe_dnnl_check(s, n, "reorder", st);
}

xe_code xe_dnnl_execute(dnnl_primitive_t p, const xe_dnnl_arg *args, int n_args, const xe_node *n,
                        xe_status *st)
{
    dnnl_stream_t stream = xe_dnnl_stream();
    if (!stream)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s: no oneDNN stream", n->name);
    dnnl_exec_arg_t ea[12]; /* an LSTM takes 10 */
    if (n_args > 12)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s: %d oneDNN arguments", n->name, n_args);
    int made = 0;
    dnnl_status_t s = dnnl_success;
    for (; made < n_args; made++) {
        ea[made].arg = args[made].arg;
        s = dnnl_memory_create(&ea[made].memory, args[made].md, engine, (void *)args[made].data);
        if (s != dnnl_success)
            break;
    }
    if (s == dnnl_success)
        s = dnnl_primitive_execute(p, stream, n_args, ea);
    for (int i = 0; i < made; i++)
        dnnl_memory_destroy(ea[i].memory);
    return xe_dnnl_check(s, n, "execution", st);
}

/* 0 when m is plain NCHW (abcd), 1 when plain NHWC (acdb), else -1 (blocked, padded, flagged). */
static int plain_4d_order(const dnnl_memory_desc_t *m)
{
    const dnnl_blocking_desc_t *b = &m->format_desc.blocking;
    if (m->ndims != 4 || m->format_kind != dnnl_blocked || b->inner_nblks != 0 || m->offset0 != 0 ||
        m->extra.flags != 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (m->padded_dims[i] != m->dims[i] || m->padded_offsets[i] != 0)
            return -1;
    const dnnl_dim_t *d = m->dims, *s = b->strides;
    if (s[3] == 1 && s[2] == d[3] && s[1] == d[2] * d[3] && s[0] == d[1] * d[2] * d[3])
        return 0;
    if (s[1] == 1 && s[3] == d[1] && s[2] == d[3] * d[1] && s[0] == d[1] * d[2] * d[3])
        return 1;
    return -1;
}

/* Whether from and to lay out one 4-D value: one type, one shape (what planes.c's reorders need).
 */
static bool same_4d_value(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to)
{
    if (from->data_type != to->data_type || from->ndims != 4 || to->ndims != 4)
        return false;
    for (int i = 0; i < 4; i++)
        if (from->dims[i] != to->dims[i])
            return false;
    return true;
}

/*
 * A reorder between plain NCHW and NHWC of one 4-D value (same_4d_value) as transposed planes
 * (planes.c, several times faster than oneDNN 2.6's reorder there); false when from -> to is not
 * one.
 */
static bool transpose_nchw(const dnnl_memory_desc_t *from, const void *src,
                           const dnnl_memory_desc_t *to, void *dst)
{
    int a = plain_4d_order(from), b = plain_4d_order(to);
    if (a < 0 || b < 0 || a == b)
        return false;
    int64_t c = from->dims[1], hw = from->dims[2] * from->dims[3];
    xe_cpu_transpose_planes(src, dst, from->dims[0], a == 0 ? c : hw, a == 0 ? hw : c,
                            dnnl_data_type_size(from->data_type));
    return true;
}

/*
 * b when m is oneDNN's dense channel-blocked 4-D layout N (C/b) H W b (aBcd8b, aBcd16b: what its
 * AVX2 and AVX-512 convolutions pick for activations) with C a multiple of b, else 0 (a padded
 * last block among them).
 */
static int64_t channel_block(const dnnl_memory_desc_t *m)
{
    const dnnl_blocking_desc_t *b = &m->format_desc.blocking;
    if (m->ndims != 4 || m->format_kind != dnnl_blocked || b->inner_nblks != 1 ||
        b->inner_idxs[0] != 1 || m->offset0 != 0 || m->extra.flags != 0)
        return 0;
    for (int i = 0; i < 4; i++)
        if (m->padded_dims[i] != m->dims[i] || m->padded_offsets[i] != 0)
            return 0;
    const dnnl_dim_t *d = m->dims, *s = b->strides;
    int64_t k = b->inner_blks[0], hw = d[2] * d[3];
    if (k < 2 || d[1] % k != 0 || s[3] != k || s[2] != d[3] * k || s[1] != hw * k ||
        s[0] != d[1] * hw)
        return 0;
    return k;
}

/*
 * A reorder of one 4-D value (same_4d_value) between plain NCHW or NHWC and a dense
 * channel-blocked layout as transposed planes of channel blocks (planes.h); false when from -> to
 * is not one. oneDNN 2.6's reorder took 0.1-0.6 ms each way around every AVX2 convolution of a
 * ResNet at batch 8.
 */
static bool block_channels(const dnnl_memory_desc_t *from, const void *src,
                           const dnnl_memory_desc_t *to, void *dst)
{
    int a = plain_4d_order(from), b = plain_4d_order(to);
    int64_t kf = channel_block(from), kt = channel_block(to), k = kf ? kf : kt;
    if (!((a >= 0 && kt) || (kf && b >= 0)))
        return false;
    size_t es = dnnl_data_type_size(from->data_type);
    int64_t n = from->dims[0], cb = from->dims[1] / k, hw = from->dims[2] * from->dims[3];
    if (a == 0) /* NCHW -> blocked: each block's k planes, interleaved */
        xe_cpu_transpose_planes(src, dst, n * cb, k, hw, es);
    else if (b == 0) /* blocked -> NCHW */
        xe_cpu_transpose_planes(src, dst, n * cb, hw, k, es);
    else if (a == 1) /* NHWC -> blocked: per image, positions x blocks of k channels */
        xe_cpu_transpose_planes(src, dst, n, hw, cb, (size_t)k * es);
    else /* blocked -> NHWC */
        xe_cpu_transpose_planes(src, dst, n, cb, hw, (size_t)k * es);
    return true;
}

xe_code xe_dnnl_reorder_run(dnnl_primitive_t r, const dnnl_memory_desc_t *from, const void *src,
                            const dnnl_memory_desc_t *to, void *dst, const xe_node *n,
                            xe_status *st)
{
    if (same_4d_value(from, to) &&
        (transpose_nchw(from, src, to, dst) || block_channels(from, src, to, dst)))
        return XE_OK;
    xe_dnnl_arg args[2] = {{DNNL_ARG_FROM, from, src}, {DNNL_ARG_TO, to, dst}};
    return xe_dnnl_execute(r, args, 2, n, st);
}

static pthread_mutex_t shelf_lock = PTHREAD_MUTEX_INITIALIZER;

static void shelf_free(void *data)
{
    xe_dnnl_shelf *s = data;
    for (int i = 0; s && i < s->n; i++)
        s->free_entry(s->entry[i]);
    free(s);
}

xe_dnnl_shelf *xe_dnnl_shelf_lock(xe_kernel_cache *slot, void (*free_entry)(void *entry))
{
    pthread_mutex_lock(&shelf_lock);
    if (!slot->data) {
        xe_dnnl_shelf *s = calloc(1, sizeof *s);
        if (!s) {
            pthread_mutex_unlock(&shelf_lock);
            return NULL;
        }
        s->free_entry = free_entry;
        slot->data = s;
        slot->free = shelf_free;
    }
    return slot->data;
}

void xe_dnnl_shelf_unlock(void)
{
    pthread_mutex_unlock(&shelf_lock);
}

bool xe_dnnl_shelf_add(xe_dnnl_shelf *s, void *entry)
{
    if (s->n == XE_DNNL_SHELF)
        return false;
    s->entry[s->n++] = entry;
    return true;
}

bool xe_dnnl_input_is_const(const xe_kernel_args *a, int k)
{
    if (!a->graph || k >= a->node->n_inputs)
        return false;
    const xe_node *p = a->graph->nodes[a->node->inputs[k]];
    return p->op == XE_OP_CONST && p->value && p->value->data == a->in[k]->data;
}

/* Whether oneDNN's int8 products are exact here: its effective ISA has VNNI (AVX-512 or AVX2 VNNI).
 */
bool xe_dnnl_int8_exact(void)
{
    static _Atomic int known; /* 0: not asked yet, 1: no, 2: yes */
    if (!known) {
        dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        bool vnni = (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
                    (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
        known = vnni ? 2 : 1;
    }
    return known == 2;
}

static _Atomic dnnl_format_tag_t chain_tag = dnnl_format_tag_undef;

dnnl_format_tag_t xe_dnnl_chain_layout(void)
{
    if (chain_tag == dnnl_format_tag_undef) {
        dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        chain_tag =
            (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? dnnl_nhwc : dnnl_nChw8c;
    }
    return chain_tag;
}

void xe_dnnl_chain_layout_set(dnnl_format_tag_t tag)
{
    chain_tag = tag;
}

bool xe_cpu_int8_engine(void)
{
    return xe_dnnl_int8_exact();
}
