/*
 * Inputs for one run of xlac-run, looked up in this order: an --input
 * file, then the feed folder's NAME.npy, then random values from --seed
 * (floats uniform in [-1, 1), ints in [-10, 10], bools 0/1). A fed file
 * must match the declared dtype and every known dim; the session checks
 * that too, but here the message can name the file and both types. An
 * input with `?` dims has no shape to draw random values for, so it must
 * be fed; every input's source is settled before any is read or generated
 * (an unfed input is reported before gigabytes of random data are made).
 * Mistakes in what the user fed are usage errors (exit 2).
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

static double random_value(xe_dtype dt, uint64_t *state)
{
    uint64_t r = splitmix(state);
    if (xe_dtype_is_float(dt))
        return 2.0 * ((double)(r >> 11) * (1.0 / 9007199254740992.0)) - 1.0;
    if (dt == XE_BOOL)
        return (double)(r >> 63);
    return (double)((int64_t)(r % 21) - 10);
}

static xe_tensor *random_tensor(const xe_type *t, uint64_t seed, xe_status *st)
{
    xe_tensor *x = xe_tensor_new(t->dtype, &t->shape, XE_DEV_CPU, st);
    if (!x)
        return NULL;
    int64_t n = xe_tensor_numel(x);
    for (int64_t i = 0; i < n; i++)
        xe_store_f64(x->data, t->dtype, i, random_value(t->dtype, &seed));
    return x;
}

static xe_code check_type(const char *name, const char *path, const xe_type *want,
                          const xe_tensor *t, xe_status *st)
{
    bool ok = want->dtype == t->dtype && want->shape.rank == t->shape.rank;
    for (int d = 0; ok && d < t->shape.rank; d++)
        ok = want->shape.dims[d] < 0 || want->shape.dims[d] == t->shape.dims[d];
    if (ok)
        return XE_OK;
    char a[160], b[160];
    return xe_fail(st, XE_ERR_USAGE, "input %s: %s holds %s but the graph declares %s", name, path,
                   xe_type_str(&(xe_type){t->dtype, t->shape}, a, sizeof a),
                   xe_type_str(want, b, sizeof b));
}

static xe_tensor *load_checked(const char *name, const char *path, const xe_type *want,
                               xe_status *st)
{
    xe_tensor *t = xe_npy_read(path, st);
    if (!t) {
        if (st->code != XE_ERR_NOMEM)
            st->code = XE_ERR_USAGE; /* a bad file to feed is the caller's mistake: exit 2 */
        xe_status_prefix(st, "input %s: ", name);
        return NULL;
    }
    if (check_type(name, path, want, t, st) != XE_OK) {
        xe_tensor_release(t);
        return NULL;
    }
    return t;
}

static const cli_input *given_input(const cli_options *o, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < o->n_inputs; i++)
        if (o->inputs[i].name_len == len && !memcmp(o->inputs[i].name, name, len))
            return &o->inputs[i];
    return NULL;
}

/*
 * Where input `in` comes from in this run: *path set to the file to read
 * (--input, or the feed folder's NAME.npy), or "" for random values.
 * Allocates nothing, so that every input is checked before any is made.
 */
static xe_code input_source(const cli_options *o, const xe_node *in, const char *feed, char *path, size_t len,
                            xe_status *st)
{
    const cli_input *given = given_input(o, in->name);
    path[0] = '\0';
    if (given) {
        snprintf(path, len, "%s", given->path);
        return XE_OK;
    }
    if (feed) {
        struct stat sb;
        if (snprintf(path, len, "%s/%s.npy", feed, in->name) >= (int)len)
            return xe_fail(st, XE_ERR_USAGE, "--feed %s: path too long", feed);
        if (stat(path, &sb) == 0)
            return XE_OK;
        path[0] = '\0';
    }
    if (!xe_shape_is_known(&in->type.shape)) {
        char t[160];
        return xe_fail(st, XE_ERR_USAGE,
                       "input %s has unknown dims %s: feed it with --input %s=FILE.npy or --feed DIR", in->name,
                       xe_type_str(&in->type, t, sizeof t), in->name);
    }
    return XE_OK;
}

xe_code cli_check_inputs(const cli_options *o, const xe_graph *g, xe_status *st)
{
    for (int i = 0; i < o->n_inputs; i++) {
        const cli_input *in = &o->inputs[i];
        bool found = false;
        for (int k = 0; k < g->n_inputs && !found; k++) {
            const char *name = g->nodes[g->inputs[k]]->name;
            found = strlen(name) == in->name_len && !memcmp(name, in->name, in->name_len);
        }
        if (!found)
            return xe_fail(st, XE_ERR_USAGE, "--input %.*s: the graph has no input named %.*s",
                           (int)in->name_len, in->name, (int)in->name_len, in->name);
    }
    for (int i = 0; i < o->n_feeds; i++) {
        struct stat sb;
        int rc = stat(o->feeds[i], &sb);
        if (rc != 0 || !S_ISDIR(sb.st_mode))
            return xe_fail(st, XE_ERR_USAGE, "--feed %s: %s", o->feeds[i],
                           rc != 0 ? strerror(errno) : "not a folder");
    }
    char path[PATH_MAX]; /* every run's inputs have a source, before the first run makes any */
    for (int i = 0; i < (o->n_feeds ? o->n_feeds : 1); i++)
        for (int k = 0; k < g->n_inputs; k++)
            if (input_source(o, g->nodes[g->inputs[k]], o->n_feeds ? o->feeds[i] : NULL, path, sizeof path, st))
                return st->code;
    return XE_OK;
}

xe_code cli_prepare_inputs(const cli_options *o, const xe_graph *g, const char *feed,
                           xe_tensor **inputs, xe_status *st)
{
    char path[PATH_MAX];
    for (int k = 0; k < g->n_inputs; k++) /* 1. every input has a source, before anything is allocated */
        if (input_source(o, g->nodes[g->inputs[k]], feed, path, sizeof path, st) != XE_OK)
            return st->code;
    for (int k = 0; k < g->n_inputs; k++) { /* 2. read or generate them */
        const xe_node *in = g->nodes[g->inputs[k]];
        inputs[k] = NULL;
        if (input_source(o, in, feed, path, sizeof path, st) == XE_OK)
            inputs[k] = path[0] ? load_checked(in->name, path, &in->type, st)
                                : random_tensor(&in->type, o->seed * 1000003u + (uint64_t)k, st);
        if (!inputs[k]) {
            for (int j = 0; j < k; j++) {
                xe_tensor_release(inputs[j]);
                inputs[j] = NULL;
            }
            return st->code;
        }
    }
    return XE_OK;
}
