/*
 * Cluster fingerprints and signature keys. The fingerprint must ignore
 * what does not change generated code (node names, '@' annotations) and
 * change with everything that does (ops, attributes, dtypes, declared
 * types, wiring, constant values, output order). The signature key adds
 * the concrete shapes and the code-changing flags; it is observed here
 * through the cache: which calls hit, which compile, and how many files
 * the disk cache holds.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache_impl.h"
#include "support/cachefx.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static xe_graph *parse(const char *text)
{
    xe_status st;
    xe_graph *g = xe_parse_string(text, "sig.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    return g;
}

/* Fingerprint of a graph given as text. */
static void fp_of(const char *text, char out[40])
{
    xe_graph *g = parse(text);
    xg_fingerprint(g, out);
    xe_graph_destroy(g);
}

static void assert_same(const char *a, const char *b)
{
    char fa[40], fb[40];
    fp_of(a, fa);
    fp_of(b, fb);
    cr_assert_str_eq(fa, fb, "should match:\n%s\n---\n%s", a, b);
}

static void assert_differ(const char *a, const char *b)
{
    char fa[40], fb[40];
    fp_of(a, fa);
    fp_of(b, fb);
    cr_assert_str_neq(fa, fb, "should differ:\n%s\n---\n%s", a, b);
}

#define HEAD "xlac.graph v1\n"

Test(signature, fingerprint_is_32_hex_digits_and_deterministic)
{
    const char *t = HEAD "input x: f32[?,8]\ny = exp(x)\noutput y\n";
    char a[40], b[40];
    fp_of(t, a);
    fp_of(t, b);
    cr_assert_eq(strlen(a), 32);
    for (int i = 0; i < 32; i++)
        cr_assert(isxdigit((unsigned char)a[i]) && !isupper((unsigned char)a[i]), "%s", a);
    cr_assert_str_eq(a, b);
}

Test(signature, fingerprint_ignores_names_and_annotations)
{
    assert_same(HEAD "input x: f32[?,8]\ninput y: f32[?,8]\na = mul(x, y)\nb = add(a, x)\noutput b\n",
                HEAD "input p: f32[?,8] @device=\"CPU:0\"\ninput q: f32[?,8]\n"
                     "m = mul(p, q, @cluster=\"cluster_7\")\nn = add(m, p, @note=\"x\")\noutput n\n");
}

Test(signature, fingerprint_changes_with_the_op)
{
    assert_differ(HEAD "input x: f32[4]\ny = exp(x)\noutput y\n", HEAD "input x: f32[4]\ny = tanh(x)\noutput y\n");
}

Test(signature, fingerprint_changes_with_attributes)
{
    const char *a = HEAD "input x: f32[?,8]\ns = reduce_sum(x, axes=[1])\noutput s\n";
    assert_differ(a, HEAD "input x: f32[?,8]\ns = reduce_sum(x, axes=[0])\noutput s\n");
    assert_differ(a, HEAD "input x: f32[?,8]\ns = reduce_sum(x, axes=[1], keepdims=true)\noutput s\n");
    assert_differ(a, HEAD "input x: f32[?,8]\ns = reduce_max(x, axes=[1])\noutput s\n");
}

Test(signature, fingerprint_changes_with_dtypes_and_declared_types)
{
    const char *a = HEAD "input x: f32[?,8]\ny = exp(x)\noutput y\n";
    assert_differ(a, HEAD "input x: f64[?,8]\ny = exp(x)\noutput y\n");
    assert_differ(a, HEAD "input x: f32[?,8,1]\ny = exp(x)\noutput y\n");
    assert_differ(a, HEAD "input x: f32[?,1]\ny = exp(x)\noutput y\n");
}

Test(signature, fingerprint_changes_with_wiring)
{
    const char *a = HEAD "input x: f32[4]\ninput y: f32[4]\nd = sub(x, y)\noutput d\n";
    assert_differ(a, HEAD "input x: f32[4]\ninput y: f32[4]\nd = sub(y, x)\noutput d\n");
    assert_differ(a, HEAD "input x: f32[4]\ninput y: f32[4]\nd = sub(x, x)\noutput d\n");
    /* output order is wiring too */
    assert_differ(HEAD "input x: f32[4]\na = exp(x)\nb = tanh(x)\noutput a\noutput b\n",
                  HEAD "input x: f32[4]\na = exp(x)\nb = tanh(x)\noutput b\noutput a\n");
}

Test(signature, fingerprint_changes_with_constant_values)
{
    const char *a = HEAD "input x: f32[3]\nc = const(f32[3], [1, 2, 3])\ny = mul(x, c)\noutput y\n";
    assert_same(a, HEAD "input q: f32[3]\nk = const(f32[3], [1, 2, 3])\ny = mul(q, k)\noutput y\n");
    assert_differ(a, HEAD "input x: f32[3]\nc = const(f32[3], [1, 2, 4])\ny = mul(x, c)\noutput y\n");
    assert_differ(HEAD "input x: f32[3]\nc = const(f32[], 0.5)\ny = mul(x, c)\noutput y\n",
                  HEAD "input x: f32[3]\nc = const(f32[], 0.25)\ny = mul(x, c)\noutput y\n");
}

Test(signature, disk_file_name_is_the_hex_hash_of_the_key)
{
    char a[64], b[64], c[64];
    xg_disk_name("key one", a, sizeof a);
    xg_disk_name("key one", b, sizeof b);
    xg_disk_name("key two", c, sizeof c);
    cr_assert_str_eq(a, b);
    cr_assert_str_neq(a, c);
    cr_assert_eq(strlen(a), 32 + strlen(".xlac"), "%s", a);
    cr_assert_str_eq(a + 32, ".xlac");
    for (int i = 0; i < 32; i++)
        cr_assert(isxdigit((unsigned char)a[i]), "%s", a);
}

/* ---- signature keys, seen through the cache ----------------------------------------- */

static const char *body_a = HEAD "input x: f32[?,8]\ninput y: f32[?,8]\n"
                                 "a = mul(x, y)\nb = add(a, x)\ns = reduce_sum(b, axes=[1])\noutput s\n";
static const char *body_a_renamed = HEAD "input u: f32[?,8]\ninput v: f32[?,8]\n"
                                         "t = mul(u, v, @cluster=\"cluster_3\")\nw = add(t, u)\n"
                                         "r = reduce_sum(w, axes=[1])\noutput r\n";

typedef struct dirfix {
    char dir[64];
    xg_options o;
} dirfix;

static void dir_init(dirfix *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/xlac-sig-test-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    chmod(f->dir, 0700);
    xg_options_default(&f->o);
    f->o.cache_dir = f->dir;
}

static void dir_fini(dirfix *f)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    cr_assert_eq(system(cmd), 0);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".xlac") != NULL && e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Runs g at [rows, 8] (x = i % 7 - 3, y = 0.5); checks any compiled result against doubles. */
static bool run(xg_cache *c, const xe_graph *g, const char *fp, int rows)
{
    xe_status st;
    xe_shape sh = {2, {rows, 8}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert(x && y);
    for (int i = 0; i < rows * 8; i++) {
        ((float *)x->data)[i] = (float)(i % 7 - 3);
        ((float *)y->data)[i] = 0.5f;
    }
    xe_tensor *in[2] = {x, y}, *out[1] = {NULL};
    xg_outcome oc;
    cr_assert_eq(xg_run_cluster(c, g, fp, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st), XE_OK, "%s", st.msg);
    if (oc == XG_RAN) {
        cr_assert_not_null(out[0]);
        cr_assert_eq(out[0]->shape.rank, 1);
        cr_assert_eq(out[0]->shape.dims[0], rows);
        for (int r = 0; r < rows; r++) {
            double want = 0;
            for (int j = 0; j < 8; j++)
                want += 1.5 * (double)((r * 8 + j) % 7 - 3);
            float got = ((float *)out[0]->data)[r];
            cr_assert(got == got, "NaN at row %d", r);
            cr_assert_float_eq(got, want, 1e-4, "row %d: %g vs %g", r, got, want);
        }
        xe_tensor_release(out[0]);
    }
    xe_tensor_release(x);
    xe_tensor_release(y);
    return oc == XG_RAN;
}

Test(signature, renamed_body_shares_the_compiled_program)
{
    dirfix f;
    dir_init(&f);
    f.o.disk_cache = false;
    xe_status st;
    xe_graph *a = parse(body_a), *b = parse(body_a_renamed);
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    cr_assert(run(c, a, NULL, 4));
    cr_assert(run(c, b, NULL, 4));
    cr_assert_eq(xt_stats(c).compiles, 1);
    cr_assert_eq(xt_stats(c).cache_hits, 1);
    xg_cache_destroy(c);
    xe_graph_destroy(a);
    xe_graph_destroy(b);
    dir_fini(&f);
}

Test(signature, given_fingerprint_is_the_computed_one)
{
    dirfix f;
    dir_init(&f);
    f.o.disk_cache = false;
    xe_status st;
    xe_graph *a = parse(body_a);
    char fp[40];
    xg_fingerprint(a, fp);
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run(c, a, NULL, 5));
    cr_assert(run(c, a, fp, 5));
    cr_assert_eq(xt_stats(c).compiles, 1);
    cr_assert_eq(xt_stats(c).cache_hits, 1);
    xg_cache_destroy(c);
    xe_graph_destroy(a);
    dir_fini(&f);
}

Test(signature, each_shape_has_its_own_key_and_file)
{
    dirfix f;
    dir_init(&f);
    f.o.dynamic_after = 100;
    xe_status st;
    xe_graph *a = parse(body_a);
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run(c, a, NULL, 2));
    cr_assert(run(c, a, NULL, 3));
    cr_assert(run(c, a, NULL, 2));
    cr_assert_eq(xt_stats(c).compiles, 2);
    cr_assert_eq(xt_stats(c).cache_hits, 1);
    cr_assert_eq(count_files(f.dir), 2);
    xg_cache_destroy(c);
    xe_graph_destroy(a);
    dir_fini(&f);
}

Test(signature, fast_math_is_part_of_the_key)
{
    dirfix f;
    dir_init(&f);
    xe_status st;
    xe_graph *a = parse(body_a);
    xg_cache *c1 = xg_cache_new(&f.o, &st);
    cr_assert(run(c1, a, NULL, 4));
    xg_cache_destroy(c1);
    f.o.fast_math = true; /* same folder, different generated code: a new key */
    xg_cache *c2 = xg_cache_new(&f.o, &st);
    cr_assert(run(c2, a, NULL, 4));
    cr_assert_eq(xt_stats(c2).disk_hits, 0);
    cr_assert_eq(xt_stats(c2).compiles, 1);
    cr_assert_eq(count_files(f.dir), 2);
    xg_cache_destroy(c2);
    f.o.fast_math = false; /* and back: the first file serves */
    xg_cache *c3 = xg_cache_new(&f.o, &st);
    cr_assert(run(c3, a, NULL, 4));
    cr_assert_eq(xt_stats(c3).disk_hits, 1);
    cr_assert_eq(xt_stats(c3).compiles, 0);
    xg_cache_destroy(c3);
    xe_graph_destroy(a);
    dir_fini(&f);
}

Test(signature, shape_generic_key_covers_its_pattern_only)
{
    dirfix f;
    dir_init(&f);
    f.o.disk_cache = false;
    f.o.dynamic_after = 1;
    xe_status st;
    xe_graph *a = parse(body_a);
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run(c, a, NULL, 3)); /* specialised */
    cr_assert(run(c, a, NULL, 4)); /* pattern [n,n] goes generic */
    cr_assert_eq(xt_stats(c).compiles, 2);
    for (int rows = 5; rows < 25; rows++)
        cr_assert(run(c, a, NULL, rows));
    cr_assert_eq(xt_stats(c).compiles, 2);
    cr_assert(run(c, a, NULL, 1)); /* [1,8] is another pattern: its own program */
    cr_assert_eq(xt_stats(c).compiles, 3);
    xg_cache_destroy(c);
    xe_graph_destroy(a);
    dir_fini(&f);
}

/* Row r's value in o changed: a bool flipped, an int plus one, a string lengthened. */
static void change_option(xg_options *o, const xg_option *r, char *text, size_t len)
{
    void *at = (char *)o + r->field;
    switch (r->kind) {
    case XG_OPT_BOOL:
        *(bool *)at = !*(bool *)at;
        return;
    case XG_OPT_INT:
        *(int *)at += 1;
        return;
    case XG_OPT_STRING:
        snprintf(text, len, "%s-other", *(const char **)at ? *(const char **)at : "");
        *(const char **)at = text;
        return;
    }
}

/*
 * Every option the table marks as changing generated code changes the
 * signature key: the key is built from that column, so a new
 * code-changing option cannot be forgotten there.
 */
Test(signature, every_code_changing_option_changes_the_key)
{
    xe_graph *g = parse(body_a);
    xe_type types[2] = {{XE_F32, {.rank = 2, .dims = {3, 8}}}, {XE_F32, {.rank = 2, .dims = {3, 8}}}};
    xg_options base;
    xg_options_default(&base);
    char *k0 = xg_signature_key(g, types, XG_TARGET_C, 0, &base);
    cr_assert_not_null(k0);
    int n, marked = 0;
    const xg_option *rows = xg_options_table(&n);
    for (int i = 0; i < n; i++) {
        if (!rows[i].changes_code)
            continue;
        marked++;
        xg_options o = base;
        char text[256];
        change_option(&o, &rows[i], text, sizeof text);
        char *k = xg_signature_key(g, types, XG_TARGET_C, 0, &o);
        cr_assert_not_null(k);
        cr_expect_str_neq(k, k0, "--%s changes generated code but not the key: %s", rows[i].name, k);
        cr_expect(strstr(k, rows[i].name), "the key names --%s: %s", rows[i].name, k);
        free(k);
    }
    cr_expect_geq(marked, 1, "fast_math at least is marked as changing code");
    free(k0);
    xe_graph_destroy(g);
}

/* The defaults come from the table: each row's default is what xg_options_default sets. */
Test(signature, options_default_is_the_table)
{
    xg_options o;
    xg_options_default(&o);
    int n;
    const xg_option *rows = xg_options_table(&n);
    for (int i = 0; i < n; i++) {
        char v[256], want[256];
        xg_option_value(&o, &rows[i], v, sizeof v);
        if (rows[i].kind == XG_OPT_STRING)
            snprintf(want, sizeof want, "%s", rows[i].dflt_text ? rows[i].dflt_text : "");
        else
            snprintf(want, sizeof want, "%lld", rows[i].dflt);
        cr_expect_str_eq(v, want, "--%s", rows[i].name);
    }
    cr_expect_eq(o.max_compiles_per_cluster, 16);
    cr_expect(o.disk_cache);
    cr_expect_str_eq(o.cc, "cc");
}
