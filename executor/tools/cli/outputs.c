/*
 * What xlac-run does with a run's outputs: --print-outputs prints each one
 * as "NAME: f32[2,3]" and then its values laid out the way numpy lays them
 * out (nested brackets, one row a line, blank lines between blocks of rank
 * 3 and up, and beyond 1000 elements only 3 items at each edge with "..."
 * between). Floats print in the shortest form that reads back to the same
 * value. --save-outputs writes one .npy per output, named as the model names
 * the output (output_file_name).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xlac/escape.h"
#include "cli.h"

#define PRINT_THRESHOLD 1000 /* numpy's threshold: summarise above this many elements */
#define PRINT_EDGE 3         /* numpy's edgeitems */

/* ---- printing -------------------------------------------------------------- */

static bool reads_back(const char *buf, double v, xe_dtype dt)
{
    double back = strtod(buf, NULL);
    if (dt == XE_F64)
        return back == v;
    if (dt == XE_F32)
        return (float)back == (float)v;
    return xe_f32_to_f16((float)back) == xe_f32_to_f16((float)v);
}

/*
 * The fewest significant digits that read back to the same value of dtype
 * dt, written positionally for exponents in [-4, 16) (as numpy does) and
 * in scientific notation otherwise.
 */
static void format_float(double v, xe_dtype dt, char *buf, size_t cap)
{
    if (isnan(v) || isinf(v)) {
        snprintf(buf, cap, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    int max = dt == XE_F64 ? 17 : 9, digits = 1;
    for (; digits < max; digits++) {
        snprintf(buf, cap, "%.*e", digits - 1, v);
        if (reads_back(buf, v, dt))
            break;
    }
    snprintf(buf, cap, "%.*e", digits - 1, v);
    int exp10 = atoi(strchr(buf, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16)
        snprintf(buf, cap, "%.*f", digits - 1 - exp10 > 0 ? digits - 1 - exp10 : 0, v);
}

static void print_value(const xe_tensor *t, int64_t i)
{
    char buf[64];
    switch (t->dtype) {
    case XE_BOOL:
        fputs(((const uint8_t *)t->data)[i] ? "True" : "False", stdout);
        return;
    case XE_I32:
        printf("%d", ((const int32_t *)t->data)[i]);
        return;
    case XE_I64:
        printf("%lld", (long long)((const int64_t *)t->data)[i]);
        return;
    case XE_U64:
        printf("%llu", (unsigned long long)((const uint64_t *)t->data)[i]);
        return;
    case XE_U8:
    case XE_I8:
    case XE_I16:
    case XE_U16:
    case XE_U32:
        printf("%.0f", xe_load_f64(t->data, t->dtype, i)); /* exact: 32 bits at most */
        return;
    default:
        format_float(xe_load_f64(t->data, t->dtype, i), t->dtype, buf, sizeof buf);
        fputs(buf, stdout);
        return;
    }
}

/* Between two items of dim d: ", " innermost, else "," newlines and indent. */
static void print_separator(int rank, int d)
{
    if (d + 1 == rank) {
        fputs(", ", stdout);
        return;
    }
    putchar(',');
    for (int k = d + 1; k < rank; k++)
        putchar('\n');
    printf("%*s", d + 1, "");
}

/* print_dim = "[" item {sep item} "]", with "..." in place of the middle when summarising. */
static void print_dim(const xe_tensor *t, int d, int64_t base, const int64_t *strides,
                      bool summarize)
{
    if (d == t->shape.rank) {
        print_value(t, base);
        return;
    }
    int64_t n = t->shape.dims[d];
    putchar('[');
    for (int64_t i = 0; i < n; i++) {
        if (summarize && n > 2 * PRINT_EDGE && i == PRINT_EDGE) {
            fputs("...", stdout);
            print_separator(t->shape.rank, d);
            i = n - PRINT_EDGE;
        }
        print_dim(t, d + 1, base + i * strides[d], strides, summarize);
        if (i + 1 < n)
            print_separator(t->shape.rank, d);
    }
    putchar(']');
}

static xe_code print_tensor(const char *name, const xe_tensor *t, xe_status *st)
{
    xe_tensor *host = NULL;
    if (!xe_device_is_host(t->device) && !(t = host = xe_tensor_to_device(t, XE_DEV_CPU, st)))
        return st->code;
    char ty[160];
    printf("%s: %s\n", name, xe_type_str(&(xe_type){t->dtype, t->shape}, ty, sizeof ty));
    int64_t strides[XE_MAX_RANK];
    xe_shape_strides(&t->shape, strides);
    print_dim(t, 0, 0, strides, xe_tensor_numel(t) > PRINT_THRESHOLD);
    putchar('\n');
    xe_tensor_release(host);
    return cli_check_stdout(st);
}

xe_code cli_print_outputs(const xe_graph *g, xe_tensor *const *outs, xe_status *st)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (print_tensor(g->nodes[g->outputs[i]]->name, outs[i], st) != XE_OK)
            return st->code;
    return XE_OK;
}

xe_code cli_check_stdout(xe_status *st)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return xe_fail(st, XE_ERR_IO, "writing to stdout failed: %s", strerror(errno));
    return XE_OK;
}

/* ---- saving ---------------------------------------------------------------- */

/*
 * The file name of graph output n: the model's own name for it (an ONNX
 * output's value name, kept as @output where the importer had to rename the
 * node: `x` for an input passed through as an output, whose node is x_1),
 * else the node's name; a name that is not a plain file name (a '/', a
 * leading '.') is never used as one (xe_esc_file_name), into buf.
 */
static const char *output_file_name(const xe_node *n, char *buf, size_t len)
{
    const char *v = xe_node_attr_string(n, "@output", NULL);
    if (!v || !xe_esc_file_name(buf, len, v))
        xe_esc_file_name(buf, len, n->name);
    return buf;
}

xe_code cli_save_outputs(const cli_options *o, const xe_graph *g, xe_tensor *const *outs,
                         int feed_k, xe_status *st)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int n = o->n_feeds > 1 ? snprintf(dir, sizeof dir, "%s/%d", o->save_dir, feed_k)
                           : snprintf(dir, sizeof dir, "%s", o->save_dir);
    if (n >= (int)sizeof dir)
        return xe_fail(st, XE_ERR_USAGE, "--save-outputs %s: path too long", o->save_dir);
    if (xe_mkdirs(dir, 0777, st) != XE_OK)
        return st->code;
    for (int i = 0; i < g->n_outputs; i++) {
        char file[XE_ESC_MAX + 1];
        const char *name = output_file_name(g->nodes[g->outputs[i]], file, sizeof file);
        int n = o->save_all_ranks
                    ? snprintf(path, sizeof path, "%s/%s.rank%d.npy", dir, name, cli_rank())
                    : snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        if (n >= (int)sizeof path)
            return xe_fail(st, XE_ERR_USAGE, "--save-outputs %s: path too long", o->save_dir);
        if (xe_npy_write(path, outs[i], st) != XE_OK)
            return st->code;
    }
    return XE_OK;
}
