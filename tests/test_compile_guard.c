/*
 * The C compiler as a hostile or broken program: it is never run through
 * a shell ($CC or a cache folder holding spaces, quotes or `;` works or is
 * refused, never interpreted), and one that hangs is killed after
 * --compile_timeout_s with one warning while the cluster runs op by op.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/cachefx.h"
#include "compile.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static const char *graph_text = "xlac.graph v1\ninput x: f32[3]\na = mul(x, x)\nb = add(a, x)\noutput b\n";

typedef xt_cache_dir guard;

/* No disk cache: every compile is a real one. */
static void guard_init(guard *k)
{
    xt_cache_dir_init(k, "guard", graph_text);
    k->o.cache_dir = NULL;
    k->o.disk_cache = false;
}

static void guard_fini(guard *k)
{
    xt_cache_dir_fini(k);
}

/* An executable script at dir/name (name may hold spaces); returns its path (static). */
static const char *script(const guard *k, const char *name, const char *body)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", k->dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    cr_assert_eq(chmod(path, 0700), 0);
    return path;
}

/* Runs the cluster once; returns whether compiled code ran (the values are checked either way). */
static bool run_once(const xg_options *o, const xe_graph *g, char *err, size_t err_len)
{
    xt_capture k;
    xt_capture_begin(&k);
    xe_status st;
    xg_cache *c = xg_cache_new(o, &st);
    cr_assert_not_null(c);
    xe_shape sh = {1, {3}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *in[1] = {x}, *out[1] = {NULL};
    float *v = x->data;
    v[0] = 1, v[1] = -2, v[2] = 0.5f;
    xg_outcome oc = XG_FALLBACK;
    xe_code code = xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st);
    char *text = xt_capture_end(&k);
    snprintf(err, err_len, "%s", text);
    free(text);
    cr_assert_eq(code, XE_OK, "%s", st.msg);
    for (int i = 0; oc == XG_RAN && i < 3; i++)
        cr_assert_eq(((float *)out[0]->data)[i], v[i] * v[i] + v[i]);
    xe_tensor_release(out[0]);
    xe_tensor_release(x);
    xg_cache_destroy(c);
    return oc == XG_RAN;
}

static int warnings(const char *err)
{
    return xt_occurrences(err, "xlac: warning");
}

Test(compile_guard, hanging_compiler_is_killed_after_the_timeout, .timeout = 60)
{
    guard k;
    guard_init(&k);
    char body[300];
    snprintf(body, sizeof body, "[ \"$1\" = --version ] && { echo slowcc 1; exit 0; }\n"
                                "sleep 30; touch '%s/finished'", k.dir);
    k.o.cc = script(&k, "slowcc", body);
    k.o.compile_timeout_s = 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char err[4096];
    bool ran = run_once(&k.o, k.g, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_not(ran, "the cluster runs op by op");
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 10, "killed after about 1 s");
    cr_assert_eq(warnings(err), 1, "%s", err);
    cr_assert(strstr(err, "compile timeout"), "%s", err);
    sleep(1);
    char fin[128];
    snprintf(fin, sizeof fin, "%s/finished", k.dir);
    cr_assert_neq(access(fin, F_OK), 0, "the script's sleep was killed with it");
    guard_fini(&k);
}

/* gcc's driver writes its temporaries (ccXXXXXX.s) to $TMPDIR: a killed compile left them behind. */
Test(compile_guard, a_killed_compiler_leaves_no_temporary_in_tmpdir, .timeout = 60)
{
    guard k;
    guard_init(&k);
    char tmp[200], left[260], *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    snprintf(tmp, sizeof tmp, "%s/tmp", k.dir);
    cr_assert_eq(mkdir(tmp, 0700), 0);
    setenv("TMPDIR", tmp, 1);
    k.o.cc = script(&k, "tmpcc", "[ \"$1\" = --version ] && { echo tmpcc 1; exit 0; }\n"
                                  "echo junk > \"${TMPDIR:-/tmp}/ccFAKE.s\"; sleep 30");
    k.o.compile_timeout_s = 1;
    char err[4096];
    cr_assert_not(run_once(&k.o, k.g, err, sizeof err), "the cluster runs op by op");
    old ? setenv("TMPDIR", old, 1) : unsetenv("TMPDIR");
    free(old);
    snprintf(left, sizeof left, "%s/ccFAKE.s", tmp);
    cr_assert_neq(access(left, F_OK), 0, "the compiler's temporary was left in $TMPDIR");
    guard_fini(&k);
}

Test(compile_guard, cc_path_with_spaces_works)
{
    guard k;
    guard_init(&k);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/dir with space; and 'quotes'", k.dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    char name[160];
    snprintf(name, sizeof name, "dir with space; and 'quotes'/my cc");
    k.o.cc = script(&k, name, "exec cc \"$@\"");
    char err[4096];
    cr_assert(run_once(&k.o, k.g, err, sizeof err), "%s", err);
    cr_assert_eq(warnings(err), 0, "%s", err);
    guard_fini(&k);
}

/* A $CC that a shell would turn into a second command: refused (op by op), never run as one. */
static void not_interpreted(const char *fmt)
{
    guard k;
    guard_init(&k);
    char cc[300], mark[128];
    snprintf(mark, sizeof mark, "%s/pwned", k.dir);
    snprintf(cc, sizeof cc, fmt, mark);
    k.o.cc = cc;
    char err[4096];
    bool ran = run_once(&k.o, k.g, err, sizeof err);
    cr_assert_neq(access(mark, F_OK), 0, "$CC was interpreted by a shell: %s", cc);
    cr_assert(!ran && warnings(err) == 1, "%s", err);
    guard_fini(&k);
}

Test(compile_guard, semicolon_in_cc_is_not_a_command)
{
    not_interpreted("cc;touch %s");
}

Test(compile_guard, quotes_and_substitution_in_cc_are_not_interpreted)
{
    not_interpreted("cc \"-DX=$(touch %s)\" `touch x`");
}

Test(compile_guard, cache_folder_with_spaces_quotes_and_semicolons_works)
{
    guard k;
    guard_init(&k);
    char dir[200];
    snprintf(dir, sizeof dir, "%s/a b'c\"d;touch e", k.dir);
    k.o.disk_cache = true;
    k.o.cache_dir = dir;
    char err[4096];
    cr_assert(run_once(&k.o, k.g, err, sizeof err), "%s", err);
    xe_status st;
    xg_cache *c = xg_cache_new(&k.o, &st);
    xg_cache_destroy(c);
    struct stat sb;
    cr_assert_eq(stat(dir, &sb), 0);
    cr_assert(S_ISDIR(sb.st_mode));
    cr_assert(run_once(&k.o, k.g, err, sizeof err), "%s", err); /* from the disk this time */
    cr_assert_eq(warnings(err), 0, "%s", err);
    guard_fini(&k);
}
