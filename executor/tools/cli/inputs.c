/*
 * Inputs for one run of xlac-run, looked up in this order: an --input
 * file, then the feed folder's NAME.npy, NAME.pb or input_K.pb (ONNX
 * TensorProto files; K: the input's position), then random values, only
 * when --seed was given (floats uniform in [-1, 1), ints in [-10, 10],
 * bools 0/1). Nothing is made up silently: an input that nothing feeds
 * without --seed, a feed folder that lacks an input, or one that holds a
 * .npy or .pb file that matches no input (X.npy for x) is an error naming
 * the folder and both names. A fed file
 * must match the declared dtype and every known dim; the session checks
 * that too, but here the message can name the file and both types. An
 * input with `?` dims has no shape to draw random values for, so it must
 * be fed. Every input's source is settled before any is read or generated
 * (an unfed input is reported before gigabytes of random data are made).
 * Mistakes in what the user fed are usage errors (exit 2).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
    if (xe_dtype_is_unsigned(dt))
        return (double)(r % 21);
    return (double)((int64_t)(r % 21) - 10);
}

/* Random data for input `name` of type t; an allocation failure names the input. */
static xe_tensor *random_tensor(const char *name, const xe_type *t, uint64_t seed, xe_status *st)
{
    xe_tensor *x = xe_tensor_new(t->dtype, &t->shape, XE_DEV_CPU, st);
    if (!x) {
        xe_status_prefix(st, "input %s: ", name);
        return NULL;
    }
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

/* A .npy file, or an ONNX TensorProto for a name ending in .pb. */
static xe_tensor *read_tensor(const char *path, xe_status *st)
{
    size_t n = strlen(path);
    if (n < 3 || strcmp(path + n - 3, ".pb"))
        return xe_npy_read(path, st);
    char *name = NULL;
    xe_tensor *t = xe_onnx_read_tensor(path, &name, st);
    free(name);
    return t;
}

/* --feed-shard: slice cli_rank() of cli_world() along t's leading dim (t is released). */
static xe_tensor *shard(xe_tensor *t, const char *path, xe_status *st)
{
    int r = cli_rank(), w = cli_world();
    if (w == 1)
        return t;
    if (t->shape.rank < 1 || t->shape.dims[0] % w) {
        xe_fail(st, XE_ERR_USAGE,
                "--feed-shard: the leading dim of %s (%lld) is not divisible by the world size %d",
                path, t->shape.rank ? (long long)t->shape.dims[0] : 0LL, w);
        xe_tensor_release(t);
        return NULL;
    }
    xe_shape sh = t->shape;
    sh.dims[0] /= w;
    xe_tensor *s = xe_tensor_new(t->dtype, &sh, XE_DEV_CPU, st);
    if (s && s->nbytes)
        memcpy(s->data, (const char *)t->data + (size_t)r * s->nbytes, s->nbytes);
    xe_tensor_release(t);
    return s;
}

static xe_tensor *load_checked(const char *name, const char *path, const xe_type *want,
                               bool sharded, xe_status *st)
{
    xe_tensor *t = read_tensor(path, st);
    if (t && sharded)
        t = shard(t, path, st);
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

/* Whether input in is fed by --input (under its name or its ONNX name). */
static bool given(const cli_options *o, const xe_node *in)
{
    const char *orig = xe_node_attr_string(in, "@onnx", NULL);
    return given_input(o, in->name) || (orig && given_input(o, orig));
}

/*
 * The file in feed folder dir for input `name` (or its ONNX name `orig`) at
 * position k: NAME.npy, NAME.pb, then input_K.pb. False when there is none.
 */
static bool feed_file(const char *dir, const char *name, const char *orig, int k, char *path)
{
    const char *names[2] = {name, orig};
    struct stat sb;
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 2; i++)
            if (names[i] &&
                snprintf(path, PATH_MAX, "%s/%s%s", dir, names[i], e ? ".pb" : ".npy") < PATH_MAX &&
                stat(path, &sb) == 0)
                return true;
    return snprintf(path, PATH_MAX, "%s/input_%d.pb", dir, k) < PATH_MAX && stat(path, &sb) == 0;
}

/*
 * Where input k (`in`) comes from in this run: path (PATH_MAX bytes) set to
 * the file to read (--input, or the feed folder's file), or "" for random
 * values. Allocates nothing, so that every input is checked before any is
 * made (an unfed input is reported before gigabytes of random data).
 */
static xe_code input_source(const cli_options *o, const xe_node *in, int k, const char *feed,
                            char *path, xe_status *st)
{
    const char *orig = xe_node_attr_string(in, "@onnx", NULL);
    const cli_input *given = given_input(o, in->name);
    if (!given && orig)
        given = given_input(o, orig);
    path[0] = '\0';
    if (given) {
        snprintf(path, PATH_MAX, "%s", given->path);
        return XE_OK;
    }
    if (feed && feed_file(feed, in->name, orig, k, path))
        return XE_OK;
    path[0] = '\0';
    if (feed && !o->seed_given)
        return xe_fail(st, XE_ERR_USAGE,
                       "--feed %s: no file for input %s (%s.npy, %s.pb or input_%d.pb); "
                       "give --seed N to run it on random values",
                       feed, in->name, in->name, in->name, k);
    if (!o->seed_given)
        return xe_fail(st, XE_ERR_USAGE,
                       "input %s is not fed: give --input %s=FILE.npy, --feed DIR, or --seed N "
                       "for random values",
                       in->name, in->name);
    if (!xe_shape_is_known(&in->type.shape)) {
        char t[160];
        return xe_fail(
            st, XE_ERR_USAGE,
            "input %s has unknown dims %s: feed it with --input %s=FILE.npy or --feed DIR",
            in->name, xe_type_str(&in->type, t, sizeof t), in->name);
    }
    return XE_OK;
}

/* Whether file name `f` (NAME.npy, NAME.pb or input_K.pb) is one that input k of g would be read
 * from. */
static bool feeds_input(const xe_graph *g, int k, const char *f)
{
    const xe_node *in = g->nodes[g->inputs[k]];
    const char *names[2] = {in->name, xe_node_attr_string(in, "@onnx", NULL)};
    char want[PATH_MAX];
    for (int i = 0; i < 2; i++)
        for (int e = 0; names[i] && e < 2; e++)
            if (snprintf(want, sizeof want, "%s%s", names[i], e ? ".pb" : ".npy") <
                    (int)sizeof want &&
                !strcmp(want, f))
                return true;
    snprintf(want, sizeof want, "input_%d.pb", k);
    return !strcmp(want, f);
}

/*
 * Whether f is named by position in ONNX's test_data_set layout (input_K.pb: an ONNX model may list
 * more inputs than the graph keeps, its initializers among them; output_K.pb) or is where an
 * output's expected value would be (NAME.npy or NAME.pb of an output).
 */
static bool names_output(const xe_graph *g, const char *f)
{
    char want[PATH_MAX];
    int k;
    char tail;
    if ((sscanf(f, "output_%d.p%c", &k, &tail) == 2 || sscanf(f, "input_%d.p%c", &k, &tail) == 2) &&
        tail == 'b')
        return true;
    for (int i = 0; i < g->n_outputs; i++)
        for (int e = 0; e < 2; e++)
            if (snprintf(want, sizeof want, "%s%s", g->nodes[g->outputs[i]]->name,
                         e ? ".pb" : ".npy") < (int)sizeof want &&
                !strcmp(want, f))
                return true;
    return false;
}

/*
 * Every .npy and .pb file in feed folder dir feeds some input of g (or is an output's expected
 * value, which a feed folder may keep beside the inputs): X.npy beside input x is a mistake, said.
 */
static xe_code check_feed_files(const xe_graph *g, const char *dir, xe_status *st)
{
    DIR *d = opendir(dir);
    if (!d)
        return xe_fail(st, XE_ERR_USAGE, "--feed %s: %s", dir, strerror(errno));
    xe_code c = XE_OK;
    for (struct dirent *e; c == XE_OK && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        bool tensor = (n > 4 && !strcmp(e->d_name + n - 4, ".npy")) ||
                      (n > 3 && !strcmp(e->d_name + n - 3, ".pb"));
        bool used = tensor && names_output(g, e->d_name);
        for (int k = 0; tensor && k < g->n_inputs && !used; k++)
            used = feeds_input(g, k, e->d_name);
        if (tensor && !used) {
            xe_text names = {0};
            for (int k = 0; k < g->n_inputs; k++)
                xe_text_printf(&names, "%s%s", k ? ", " : "", g->nodes[g->inputs[k]]->name);
            c = xe_fail(st, XE_ERR_USAGE,
                        "--feed %s: %s matches no input of the graph (its inputs: %s)", dir,
                        e->d_name, names.buf ? names.buf : "none");
            free(names.buf);
        }
    }
    closedir(d);
    return c;
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
        if (check_feed_files(g, o->feeds[i], st) != XE_OK)
            return st->code;
    }
    if (o->to_xg && !o->n_feeds && !o->save_dir && !o->print_outputs && !o->iterations)
        return XE_OK;    /* --to-xg alone: nothing runs, no input is needed */
    char path[PATH_MAX]; /* every run's inputs have a source, before the first run makes any */
    for (int i = 0; i < (o->n_feeds ? o->n_feeds : 1); i++)
        for (int k = 0; k < g->n_inputs; k++)
            if (input_source(o, g->nodes[g->inputs[k]], k, o->n_feeds ? o->feeds[i] : NULL, path,
                             st) != XE_OK)
                return st->code;
    return XE_OK;
}

xe_code cli_prepare_inputs(const cli_options *o, const xe_graph *g, const char *feed,
                           xe_tensor **inputs, xe_status *st)
{
    char path[PATH_MAX];
    for (int k = 0; k < g->n_inputs;
         k++) /* 1. every input has a source, before anything is allocated */
        if (input_source(o, g->nodes[g->inputs[k]], k, feed, path, st) != XE_OK)
            return st->code;
    for (int k = 0; k < g->n_inputs; k++) { /* 2. read or generate them */
        const xe_node *in = g->nodes[g->inputs[k]];
        inputs[k] = NULL;
        if (input_source(o, in, k, feed, path, st) == XE_OK)
            inputs[k] =
                path[0]
                    ? load_checked(in->name, path, &in->type, o->feed_shard && !given(o, in), st)
                    : random_tensor(in->name, &in->type, o->seed * 1000003u + (uint64_t)k, st);
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

xe_tensor *cli_bind_input(const char *name, int position, void *user)
{
    cli_bind_ctx *c = user;
    cli_bound *b = c->bound;
    const cli_input *given = given_input(c->o, name);
    char path[PATH_MAX];
    xe_status st;
    xe_status_clear(&st);
    if (b->n == CLI_MAX_ITEMS)
        return NULL;
    if (given)
        snprintf(path, sizeof path, "%s", given->path);
    else if (!c->o->n_feeds || !feed_file(c->o->feeds[0], name, NULL, position, path))
        return NULL;
    xe_tensor *t = read_tensor(path, &st);
    if (t) {
        b->position[b->n] = position;
        b->value[b->n++] = t;
    }
    return t;
}

xe_code cli_check_bound(const cli_bound *b, const xe_graph *g, xe_tensor *const *inputs,
                        xe_status *st)
{
    for (int i = 0; i < b->n; i++) {
        const xe_tensor *want = b->value[i], *got = inputs[b->position[i]];
        if (got->dtype != want->dtype || !xe_shape_equal(&got->shape, &want->shape) ||
            (want->nbytes && memcmp(got->data, want->data, want->nbytes)))
            return xe_fail(st, XE_ERR_USAGE,
                           "input %s steers shapes and was fixed at load time to the value of "
                           "the first feed; this feed holds another value",
                           g->nodes[g->inputs[b->position[i]]]->name);
    }
    return XE_OK;
}
