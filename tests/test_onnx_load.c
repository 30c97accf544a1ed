/*
 * Loading an ONNX model whose weights are external data is quick and
 * exact (issue 23: "a 100 MB model loads in under 1 s with a warm page
 * cache"). The test writes its own model, nothing is committed: a chain
 * of Adds over 25 initializers of 4 MB each (100 MB) in one data file,
 * the ModelProto encoded here by hand (a few protobuf fields). The data
 * file is read once before timing (the warm page cache), and
 * xe_load_graph's time is printed and held to a bound with room for a
 * machine that others load; each weight views the mapped file (no copy). Every constant is then checked against the
 * bytes written, at its start, middle and end, so a load that maps the
 * file reads the right place, and one kept past its graph still reads
 * (a view holds the mapping). Tensors at offsets that are not a multiple
 * of 64 (or of their item size) and a bool tensor (whose bytes are made
 * 0/1) load as well, and a file shrunk below what a tensor needs is an
 * error naming it, not a crash.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xlac/xlac.h"
#include "support/pb.h"
#include "support/tmpdir.h"

#define N_WEIGHTS 25
#define SIDE 1024 /* each weight is SIDE x SIDE floats: 4 MB */
#define LOAD_BOUND_S 5.0 /* the 1 s, with room for a loaded machine and sanitizer builds */

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-onnxload-XXXXXX");
}

TestSuite(onnx_load, .init = setup, .fini = xt_tmp_fini, .timeout = 120);

/* StringStringEntryProto {key, value} as TensorProto.external_data (13). */
static void ext_entry(pb *t, const char *key, const char *value)
{
    pb e = {0};
    pb_str(&e, 1, key);
    pb_str(&e, 2, value);
    pb_msg(t, 13, &e);
}

/* A TensorProto of dtype (ONNX's number) with its data at offset..offset+len of location. */
static void ext_tensor(pb *graph, const char *name, int dtype, const int64_t *dims, int rank,
                       const char *location, size_t offset, size_t len)
{
    pb t = {0};
    char num[32];
    for (int d = 0; d < rank; d++)
        pb_int(&t, 1, (uint64_t)dims[d]);
    pb_int(&t, 2, (uint64_t)dtype);
    pb_str(&t, 8, name);
    ext_entry(&t, "location", location);
    snprintf(num, sizeof num, "%zu", offset);
    ext_entry(&t, "offset", num);
    snprintf(num, sizeof num, "%zu", len);
    ext_entry(&t, "length", num);
    pb_int(&t, 14, 1); /* data_location = EXTERNAL */
    pb_msg(graph, 5, &t);
}

static void node(pb *graph, const char *op, const char *a, const char *b, const char *out)
{
    pb n = {0};
    pb_str(&n, 1, a);
    if (b)
        pb_str(&n, 1, b);
    pb_str(&n, 2, out);
    pb_str(&n, 3, out);
    pb_str(&n, 4, op);
    pb_msg(graph, 1, &n);
}

/* ModelProto {ir_version 8, opset 17, graph} (graph is taken). */
static pb model_of(pb *graph)
{
    pb m = {0}, opset = {0};
    pb_int(&m, 1, 8);
    pb_int(&opset, 2, 17);
    pb_msg(&m, 8, &opset);
    pb_str(graph, 2, "g");
    pb_msg(&m, 7, graph);
    return m;
}

/* The same written to path. */
static void write_model(const char *path, pb *graph)
{
    pb m = model_of(graph);
    pb_write_file(&m, path);
}

/* y = x + w (f32[n]), z = c & b (bool[7]), the two initializers external data at the places given. */
static void add_and_graph(pb *g, int64_t n, const char *w_loc, size_t w_off, size_t w_len,
                          const char *b_loc, size_t b_off)
{
    int64_t dn[1] = {n}, d7[1] = {7};
    ext_tensor(g, "w", 1, dn, 1, w_loc, w_off, w_len);
    ext_tensor(g, "b", 9, d7, 1, b_loc, b_off, 7);
    node(g, "Add", "x", "w", "y");
    node(g, "And", "c", "b", "z");
    pb_graph_value(g, 11, "x", 1, dn, 1);
    pb_graph_value(g, 11, "c", 9, d7, 1);
    pb_graph_value(g, 12, "y", 1, dn, 1);
    pb_graph_value(g, 12, "z", 9, d7, 1);
}

/* Weight k's element i: distinct per weight and position, exact in f32. */
static float weight_value(int k, size_t i)
{
    return (float)k * 4096.0f + (float)(i % 4093);
}

/* The data file: N_WEIGHTS weights one after another, written a weight at a time. */
static void write_weights(const char *path)
{
    size_t n = (size_t)SIDE * SIDE;
    float *w = malloc(n * sizeof *w);
    cr_assert_not_null(w);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    for (int k = 0; k < N_WEIGHTS; k++) {
        for (size_t i = 0; i < n; i++)
            w[i] = weight_value(k, i);
        cr_assert_eq(fwrite(w, sizeof *w, n, f), n);
    }
    cr_assert_eq(fclose(f), 0);
    free(w);
}

/* y = ((x + w0) + w1) + ... : every weight is used. */
static void write_big_model(const char *path)
{
    pb g = {0};
    int64_t dims[2] = {SIDE, SIDE};
    size_t bytes = (size_t)SIDE * SIDE * sizeof(float);
    char name[32], prev[32] = "x", out[32];
    for (int k = 0; k < N_WEIGHTS; k++) {
        snprintf(name, sizeof name, "w%d", k);
        ext_tensor(&g, name, 1, dims, 2, "model.onnx.data", (size_t)k * bytes, bytes);
        snprintf(out, sizeof out, k == N_WEIGHTS - 1 ? "y" : "a%d", k);
        node(&g, "Add", prev, name, out);
        snprintf(prev, sizeof prev, "%s", out);
    }
    pb_graph_value(&g, 11, "x", 1, dims, 2);
    pb_graph_value(&g, 12, "y", 1, dims, 2);
    write_model(path, &g);
}

/* Reads the whole file once (the page cache is warm afterwards); its size. */
static size_t warm_up(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char buf[1 << 20];
    size_t total = 0, got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        total += got;
    fclose(f);
    return total;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The const node that holds ONNX initializer name, or NULL. */
static const xe_tensor *constant(const xe_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == XE_OP_CONST && g->nodes[i]->name && !strcmp(g->nodes[i]->name, name))
            return g->nodes[i]->value;
    return NULL;
}

Test(onnx_load, a_100_mb_external_data_model_loads_quickly_and_exactly)
{
    write_weights(xt_path("model.onnx.data"));
    write_big_model(xt_path("model.onnx"));
    cr_assert_eq(warm_up(xt_path("model.onnx.data")), (size_t)N_WEIGHTS * SIDE * SIDE * sizeof(float));
    double t0 = now_s();
    xe_graph *g = xe_load_graph(xt_path("model.onnx"), NULL, &st);
    double took = now_s() - t0;
    cr_assert_not_null(g, "%s", st.msg);
    fprintf(stderr, "onnx_load: a %d MB external-data model loaded in %.1f ms (bound %.1f s)\n",
            (int)((size_t)N_WEIGHTS * SIDE * SIDE * sizeof(float) >> 20), took * 1e3, LOAD_BOUND_S);
    size_t n = (size_t)SIDE * SIDE, at[3] = {0, n / 2 + 1, n - 1};
    for (int k = 0; k < N_WEIGHTS; k++) {
        char name[32];
        snprintf(name, sizeof name, "w%d", k);
        const xe_tensor *w = constant(g, name);
        cr_assert_not_null(w, "constant %s", name);
        cr_assert_eq(w->nbytes, n * sizeof(float));
        cr_expect(w->keeper && w->borrowed, "%s (at a 64-aligned offset) views the mapped file", name);
        for (int j = 0; j < 3; j++)
            cr_assert_eq(((const float *)w->data)[at[j]], weight_value(k, at[j]), "%s[%zu]", name, at[j]);
    }
    /* a constant outlives its graph (a compiled program keeps its constants): its bytes stay */
    xe_tensor *last = xe_tensor_retain((xe_tensor *)constant(g, "w24"));
    xe_graph_destroy(g);
    cr_assert_eq(((const float *)last->data)[n - 1], weight_value(24, n - 1));
    xe_tensor_release(last);
    cr_expect_lt(took, LOAD_BOUND_S, "loading took %.3f s", took);
}

/* data.bin: 3 bytes of padding, a float tensor [5] at 3, a bool [7] at 23 (bytes 0, 2, 0, ...). */
static void write_odd_offsets(void)
{
    uint8_t buf[64] = {0xee, 0xee, 0xee};
    for (int i = 0; i < 5; i++) {
        float v = (float)i + 0.5f;
        memcpy(buf + 3 + 4 * i, &v, 4);
    }
    for (int i = 0; i < 7; i++)
        buf[23 + i] = (uint8_t)(i % 2 ? 2 : 0);
    FILE *f = fopen(xt_path("data.bin"), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, 30, f), 30u);
    cr_assert_eq(fclose(f), 0);
    pb g = {0};
    add_and_graph(&g, 5, "data.bin", 3, 20, "data.bin", 23);
    write_model(xt_path("model.onnx"), &g);
}

Test(onnx_load, tensors_at_unaligned_offsets_and_bools_load_exactly)
{
    write_odd_offsets();
    xe_graph *g = xe_load_graph(xt_path("model.onnx"), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    const xe_tensor *f = constant(g, "w"), *b = constant(g, "b");
    cr_assert(f && b);
    cr_assert_eq((uintptr_t)f->data % sizeof(float), 0u, "a float tensor's data is aligned");
    cr_expect(!f->keeper && !b->keeper, "an unaligned tensor and a bool one are copies");
    for (int i = 0; i < 5; i++)
        cr_expect_eq(((const float *)f->data)[i], (float)i + 0.5f, "f[%d]", i);
    for (int i = 0; i < 7; i++)
        cr_expect_eq(((const uint8_t *)b->data)[i], i % 2, "b[%d] is 0 or 1", i);
    xe_graph_destroy(g);
}

Test(onnx_load, a_data_file_shorter_than_a_tensor_is_an_error_naming_it)
{
    write_odd_offsets();
    cr_assert_eq(truncate(xt_path("data.bin"), 26), 0);
    xe_graph *g = xe_load_graph(xt_path("model.onnx"), NULL, &st);
    cr_assert_null(g);
    cr_expect(strstr(st.msg, "data.bin") && strstr(st.msg, "initializer 'b'"), "%s", st.msg);
}

/* A host's keeper that counts its drops (the test's block outlives it). */
static int drops;
static void count_drop(xe_tensor_keeper *k)
{
    (void)k;
    drops++;
}

/* add_and_graph over the host's blocks "w" (16 floats) and "b" (for host blocks). */
static pb host_model(int64_t w_offset, int64_t w_len)
{
    pb g = {0};
    add_and_graph(&g, 16, "w", (size_t)w_offset, (size_t)w_len, "b", 0);
    return model_of(&g);
}

/* The onnxruntime EP hands its weights to the importer as blocks of its memory (plugin/ort_ep). */
Test(onnx_load, a_model_in_memory_reads_the_hosts_blocks_as_its_external_data)
{
    _Alignas(64) static float w[32];
    static uint8_t b[7] = {0, 2, 0, 2, 0, 2, 0};
    for (int i = 0; i < 32; i++)
        w[i] = (float)i * 0.25f;
    xe_tensor_keeper keeper = {.refcount = 1, .drop = count_drop};
    xe_onnx_block blocks[2] = {{.name = "w", .data = w, .len = sizeof w, .keeper = &keeper},
                               {.name = "b", .data = b, .len = sizeof b}};
    xe_onnx_options o = {.blocks = blocks, .n_blocks = 2};
    drops = 0;
    pb m = host_model(16 * sizeof(float), 16 * sizeof(float)); /* w[16..32): 64-byte aligned */
    xe_graph *g = xe_onnx_load_memory(m.b, m.n, "<host>", &o, &st);
    cr_assert_not_null(g, "%s", st.msg);
    const xe_tensor *wt = constant(g, "w"), *bt = constant(g, "b");
    cr_assert(wt && bt);
    cr_expect(wt->data == w + 16 && wt->keeper == &keeper, "an aligned tensor views the block");
    cr_expect(!bt->keeper && bt->data != (void *)b, "a bool tensor is a copy");
    for (int i = 0; i < 7; i++)
        cr_expect_eq(((const uint8_t *)bt->data)[i], i % 2, "b[%d] is 0 or 1", i);
    cr_expect_eq(keeper.refcount, 2, "the view holds the host's keeper");
    xe_graph_destroy(g);
    cr_expect_eq(keeper.refcount, 1, "let go with the graph");
    cr_expect_eq(drops, 0);
    free(m.b);

    m = host_model(4, 16 * sizeof(float)); /* w[1..17): not aligned, a copy */
    g = xe_onnx_load_memory(m.b, m.n, "<host>", &o, &st);
    cr_assert_not_null(g, "%s", st.msg);
    wt = constant(g, "w");
    cr_assert(wt && !wt->keeper);
    for (int i = 0; i < 16; i++)
        cr_expect_eq(((const float *)wt->data)[i], (float)(i + 1) * 0.25f, "w[%d]", i);
    xe_graph_destroy(g);
    free(m.b);
}

Test(onnx_load, a_block_too_short_or_not_given_is_an_error_naming_it)
{
    _Alignas(64) static float w[16];
    static uint8_t b[7];
    xe_onnx_block blocks[2] = {{.name = "w", .data = w, .len = sizeof w},
                               {.name = "b", .data = b, .len = sizeof b}};
    xe_onnx_options o = {.blocks = blocks, .n_blocks = 2};
    pb m = host_model(4, 16 * sizeof(float)); /* 4 bytes past the block's end */
    cr_assert_null(xe_onnx_load_memory(m.b, m.n, "<host>", &o, &st));
    cr_expect(strstr(st.msg, "initializer 'w'") && strstr(st.msg, "block 'w' holds 64 bytes"), "%s",
              st.msg);
    o.n_blocks = 1; /* no "b" */
    cr_assert_null(xe_onnx_load_memory(m.b, m.n, "<host>", &o, &st));
    cr_expect(strstr(st.msg, "'b' names no block"), "%s", st.msg);
    cr_assert_null(xe_onnx_load_memory(m.b, m.n, "<host>", NULL, &st));
    cr_expect(strstr(st.msg, "external data is not allowed here"), "%s", st.msg);
    free(m.b);
}
