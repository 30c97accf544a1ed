/*
 * Inputs for one run of xlac-run: --input files first, then the feed
 * folder's NAME.npy, then random values from --seed (floats uniform in
 * [-1, 1), ints in [-10, 10], bools 0/1). A fed file must match the
 * declared dtype and every known dim; an input with `?` dims must be fed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* splitmix64: a small, fixed generator so --seed N gives the same inputs everywhere. */
static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static xe_tensor *random_tensor(const xe_type *t, uint64_t seed, xe_status *st)
{
    xe_tensor *x = xe_tensor_new(t->dtype, &t->shape, XE_DEV_CPU, st);
    if (!x)
        return NULL;
    int64_t n = xe_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = splitmix(&seed);
        double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
        double v = xe_dtype_is_float(t->dtype) ? 2 * u - 1
                   : t->dtype == XE_BOOL      ? (double)(r & 1)
                                              : (double)((int64_t)(r % 21) - 10);
        xe_store_f64(x->data, t->dtype, i, v);
    }
    return x;
}

static xe_code check_type(const char *name, const char *path, const xe_type *want, const xe_tensor *t,
                          xe_status *st)
{
    bool ok = want->dtype == t->dtype && want->shape.rank == t->shape.rank;
    for (int d = 0; ok && d < t->shape.rank; d++)
        ok = want->shape.dims[d] < 0 || want->shape.dims[d] == t->shape.dims[d];
    if (ok)
        return XE_OK;
    char a[128], b[128];
    return xe_fail(st, XE_ERR_USAGE, "input %s: %s holds %s but the graph declares %s", name, path,
                   xe_type_str(&(xe_type){t->dtype, t->shape}, a, sizeof a), xe_type_str(want, b, sizeof b));
}

static xe_tensor *load_checked(const char *name, const char *path, const xe_type *want, xe_status *st)
{
    xe_tensor *t = xe_npy_read(path, st);
    if (t && check_type(name, path, want, t, st) != XE_OK) {
        xe_tensor_release(t);
        return NULL;
    }
    if (!t && st->code == XE_ERR_IO)
        st->code = XE_ERR_USAGE; /* a bad feed is the caller's mistake: exit 2 */
    return t;
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Input k of the graph for one run. */
static xe_tensor *one_input(const cli_options *o, const xe_node *in, int k, const char *feed, xe_status *st)
{
    for (int i = 0; i < o->n_inputs; i++)
        if (!strcmp(o->inputs[i].name, in->name))
            return load_checked(in->name, o->inputs[i].path, &in->type, st);
    if (feed) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.npy", feed, in->name);
        if (file_exists(path))
            return load_checked(in->name, path, &in->type, st);
    }
    if (!xe_shape_is_known(&in->type.shape)) {
        char t[128];
        xe_fail(st, XE_ERR_USAGE, "input %s has unknown dims %s: feed it with --input %s=FILE.npy or --feed DIR",
                in->name, xe_type_str(&in->type, t, sizeof t), in->name);
        return NULL;
    }
    return random_tensor(&in->type, o->seed * 1000003u + (uint64_t)k, st);
}

xe_code cli_prepare_inputs(const cli_options *o, const xe_graph *g, const char *feed,
                           xe_tensor **inputs, xe_status *st)
{
    for (int i = 0; i < o->n_inputs; i++) {
        int idx = xe_graph_find(g, o->inputs[i].name);
        if (idx < 0 || g->nodes[idx]->op != XE_OP_INPUT)
            return xe_fail(st, XE_ERR_USAGE, "--input %s: the graph has no input named %s", o->inputs[i].name,
                           o->inputs[i].name);
    }
    for (int k = 0; k < g->n_inputs; k++) {
        if (!(inputs[k] = one_input(o, g->nodes[g->inputs[k]], k, feed, st))) {
            for (int j = 0; j < k; j++)
                xe_tensor_release(inputs[j]);
            return st->code;
        }
    }
    return XE_OK;
}

xe_code cli_mkdirs(const char *path, xe_status *st)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return xe_fail(st, XE_ERR_IO, "%s: cannot create: %m", buf);
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return xe_fail(st, XE_ERR_IO, "%s: cannot create: %m", buf);
    return XE_OK;
}

/* ---- printing ------------------------------------------------------------------ */

static void print_value(const xe_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case XE_BOOL: printf("%s", ((const uint8_t *)t->data)[i] ? "True" : "False"); break;
    case XE_I32: printf("%d", ((const int32_t *)t->data)[i]); break;
    case XE_I64: printf("%lld", (long long)((const int64_t *)t->data)[i]); break;
    case XE_F64: printf("%.17g", ((const double *)t->data)[i]); break;
    default: printf("%.9g", xe_load_f64(t->data, t->dtype, i)); break;
    }
}

/* numpy-like nested brackets; beyond 1000 elements, 3 per edge and "...". */
static void print_dim(const xe_tensor *t, int d, int64_t base, const int64_t *strides, bool summarize)
{
    if (d == t->shape.rank) {
        print_value(t, base);
        return;
    }
    int64_t n = t->shape.dims[d];
    printf("[");
    for (int64_t i = 0; i < n; i++) {
        if (summarize && n > 6 && i == 3) {
            printf("..., ");
            i = n - 3;
        }
        print_dim(t, d + 1, base + i * strides[d], strides, summarize);
        if (i + 1 < n)
            printf(d + 1 == t->shape.rank ? ", " : ",\n%*s", d + 1 == t->shape.rank ? 0 : d + 1, "");
    }
    printf("]");
}

void cli_print_tensor(const char *name, const xe_tensor *t)
{
    char ty[128];
    printf("%s: %s\n", name, xe_type_str(&(xe_type){t->dtype, t->shape}, ty, sizeof ty));
    int64_t strides[XE_MAX_RANK];
    xe_shape_strides(&t->shape, strides);
    print_dim(t, 0, 0, strides, xe_tensor_numel(t) > 1000);
    printf("\n");
}
