/*
 * One configuration per session: in one process, with the plugin installed
 * once, a session made with plugin_config "--auto_jit=0" runs op by op and
 * one made with "--auto_jit=2" is clustered (launch nodes that record
 * their configuration), both running in the same thread pool and sharing
 * the one compilation cache. Each session's outputs agree with the CLI's
 * (xlac-run under LD_PRELOAD with XLAC_AUTO_JIT=0 and =2): bit for bit op
 * by op, and within float tolerance clustered. A session option that
 * belongs to the process (the cache's --fast_math) or a bad value is an
 * error naming it; the process's configuration (no plugin_config) is
 * unchanged.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flags.h"
#include "support/tmpdir.h"
#include "xlac/io.h"
#include "xlac/xlac.h"
#include "xlac_plugin.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"

static xlac_state state;

static const char *graph_text = "xlac.graph v1\n"
                                "input x: f32[64,48]\n"
                                "input y: f32[64,48]\n"
                                "t0 = mul(x, y)\n"
                                "t1 = add(t0, x)\n"
                                "t2 = tanh(t1)\n"
                                "s = reduce_sum(t2, axes=[1], keepdims=false)\n"
                                "output s\n"
                                "output t2\n";

static void install(void)
{
    xt_tmp_make("/tmp/xlac_sesscfg_XXXXXX");
    xe_status st;
    xe_status_clear(&st);
    xlac_flags f;
    xlac_flags_default(&f);
    f.xg.disk_cache = false;
    xlac_state_init(&state);
    cr_assert_eq(xlac_plugin_install(&state, &f, &st), XE_OK, "%s", st.msg);
}

static void uninstall(void)
{
    xlac_plugin_shutdown(&state);
    xt_tmp_fini();
}

TestSuite(session_config, .init = install, .fini = uninstall, .timeout = 240);

static xe_tensor *ramp(float scale, xe_status *st)
{
    xe_shape sh = xe_shape_make(2, (int64_t[]){64, 48});
    xe_tensor *t = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, st);
    cr_assert(t, "%s", st->msg);
    float *p = t->data;
    for (int i = 0; i < 64 * 48; i++)
        p[i] = scale * (float)((i * 7919) % 201 - 100) / 100.0f;
    return t;
}

static xe_session *open_with(const char *config, xe_status *st)
{
    xe_graph *g = xe_parse_string(graph_text, "g.xg", st);
    cr_assert(g, "%s", st->msg);
    xe_session_options o = {.place = XE_PLACE_CPU, .plugin_config = config};
    return xe_session_new(g, &o, st);
}

static int count_launches(const xe_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i]->op == state.launch_op;
    return n;
}

/* The CLI's outputs (under LD_PRELOAD with XLAC_AUTO_JIT=level) into dir. */
static void cli_run(const char *level, const char *dir)
{
    char aj[32];
    snprintf(aj, sizeof aj, "XLAC_AUTO_JIT=%s", level);
    const char *env[] = {aj, "XLAC_FLAGS=--disk_cache=0", NULL};
    const char *argv[] = {XLAC_RUN, "g.xg", "--device", "cpu", "--input", "x=x.npy", "--input", "y=y.npy",
                          "--save-outputs", dir, NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 0, "xlac-run XLAC_AUTO_JIT=%s: %s", level, r.err);
    xt_result_free(&r);
}

/* Compares t with dir/name.npy: bit for bit (exact) or |d| <= 1e-5 + 1e-5 |ref|. */
static void agree(const xe_tensor *t, const char *dir, const char *name, bool exact)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/%s.npy", xt_tmp, dir, name);
    xe_status st;
    xe_status_clear(&st);
    xe_tensor *ref = xe_npy_read(path, &st);
    cr_assert(ref, "%s", st.msg);
    cr_assert_eq(ref->nbytes, t->nbytes, "%s", name);
    const float *a = t->data, *b = ref->data;
    for (size_t i = 0; i < t->nbytes / sizeof(float); i++) {
        if (exact)
            cr_assert_eq(memcmp(&a[i], &b[i], sizeof(float)), 0, "%s[%zu]: %g vs the CLI's %g", name, i, a[i], b[i]);
        else
            cr_assert_leq(fabsf(a[i] - b[i]), 1e-5f + 1e-5f * fabsf(b[i]), "%s[%zu]: %g vs the CLI's %g", name, i,
                          a[i], b[i]);
    }
    xe_tensor_release(ref);
}

Test(session_config, op_by_op_and_clustered_sessions_in_one_process_agree_with_the_cli)
{
    xe_status st;
    xe_status_clear(&st);
    xt_write_file(xt_path("g.xg"), graph_text);
    xe_tensor *in[2] = {ramp(1.0f, &st), ramp(-0.5f, &st)};
    cr_assert_eq(xe_npy_write(xt_path("x.npy"), in[0], &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xe_npy_write(xt_path("y.npy"), in[1], &st), XE_OK, "%s", st.msg);
    xe_session *plain = open_with("--auto_jit=0", &st);
    cr_assert(plain, "%s", st.msg);
    xe_session *jit = open_with("--auto_jit=2", &st);
    cr_assert(jit, "%s", st.msg);
    xe_session *plain2 = open_with("--auto_jit=0", &st); /* the same text: the same configuration */
    cr_assert(plain2, "%s", st.msg);
    cr_assert_eq(count_launches(xe_session_graph(plain)), 0, "auto_jit=0 clustered");
    cr_assert_eq(count_launches(xe_session_graph(jit)), 1, "auto_jit=2: one cluster expected");
    cr_assert_eq(state.n_configs, 2, "two distinct texts, two configurations: %d", state.n_configs);
    cli_run("0", "cli0");
    cli_run("2", "cli2");
    for (int round = 0; round < 3; round++) { /* interleaved, and again after the compile */
        xe_tensor *a[2], *b[2];
        cr_assert_eq(xe_session_run(plain, in, a, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(xe_session_run(jit, in, b, &st), XE_OK, "%s", st.msg);
        agree(a[0], "cli0", "s", true);
        agree(a[1], "cli0", "t2", true);
        agree(b[0], "cli2", "s", false);
        agree(b[1], "cli2", "t2", false);
        for (int k = 0; k < 2; k++) {
            xe_tensor_release(a[k]);
            xe_tensor_release(b[k]);
        }
    }
    cr_assert_geq(atomic_load(&state.n_launches), 3, "the clustered session launched its cluster");
    cr_assert_eq(atomic_load(&state.n_fallbacks), 0, "the cluster ran compiled code every time");
    xe_session_destroy(plain);
    xe_session_destroy(plain2);
    xe_session_destroy(jit);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
}

Test(session_config, codegen_off_in_one_session_only)
{
    xe_status st;
    xe_status_clear(&st);
    xe_session *off = open_with("--auto_jit=2 --codegen=0", &st);
    cr_assert(off, "%s", st.msg);
    xe_tensor *in[2] = {ramp(1.0f, &st), ramp(2.0f, &st)}, *out[2];
    cr_assert_eq(xe_session_run(off, in, out, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(atomic_load(&state.n_fallbacks), 1, "--codegen=0: the launch ran per op");
    for (int k = 0; k < 2; k++)
        xe_tensor_release(out[k]);
    xe_session *on = open_with("--auto_jit=2", &st);
    cr_assert(on, "%s", st.msg);
    cr_assert_eq(xe_session_run(on, in, out, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(atomic_load(&state.n_fallbacks), 1, "the other session compiled");
    for (int k = 0; k < 2; k++) {
        xe_tensor_release(out[k]);
        xe_tensor_release(in[k]);
    }
    xe_session_destroy(off);
    xe_session_destroy(on);
}

Test(session_config, process_wide_and_bad_options_are_refused_by_name)
{
    const char *bad[][2] = {
        {"--fast_math", "--fast_math is the process's"},
        {"--trace=t.json", "--trace is the process's"},
        {"--auto_jit=3", "--auto_jit=3: expected 0 (off), 1 or 2"},
        {"--no_such_flag", "unknown flag '--no_such_flag'"},
        {"--help", "--help is not a session option"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xe_status st;
        xe_status_clear(&st);
        xe_session *s = open_with(bad[i][0], &st);
        cr_assert_null(s, "%s was accepted", bad[i][0]);
        cr_assert_eq(st.code, XE_ERR_USAGE, "%s: %s", bad[i][0], st.msg);
        cr_assert(strstr(st.msg, bad[i][1]), "%s: %s", bad[i][0], st.msg);
    }
    /* the process's value, written again, is no difference */
    xe_status st;
    xe_status_clear(&st);
    xe_session *s = open_with("--fast_math=0 --auto_jit=1", &st);
    cr_assert(s, "%s", st.msg);
    xe_session_destroy(s);
    /* no plugin_config: the process's configuration (auto_jit=0): nothing clustered, no @config */
    xe_session *p = open_with(NULL, &st);
    cr_assert(p, "%s", st.msg);
    cr_assert_eq(count_launches(xe_session_graph(p)), 0);
    xe_session_destroy(p);
}

/*
 * --help shows each code generator option's default as the value that
 * xg_options_default (its options table) sets: the default is written once.
 */
Test(flags_help, code_generator_defaults_come_from_the_options_table)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cr_assert_not_null(out);
    xlac_flags_help(out);
    fclose(out);
    xg_options o;
    xg_options_default(&o);
    int n, shown = 0;
    const xg_option *rows = xg_options_table(&n);
    for (int i = 0; i < n; i++) {
        char flag[80], v[64], want[160];
        snprintf(flag, sizeof flag, "  --%s%s\n", rows[i].name, rows[i].kind == XG_OPT_BOOL ? "[=0|1]" : "=VALUE");
        const char *at = strstr(text, flag);
        if (!at || rows[i].kind == XG_OPT_STRING)
            continue; /* not a flag (level2, cc: from the environment) */
        xg_option_value(&o, &rows[i], v, sizeof v);
        if (rows[i].kind == XG_OPT_BOOL)
            snprintf(v, sizeof v, "%s", strcmp(v, "0") ? "true" : "false");
        snprintf(want, sizeof want, "(default: %s)\n", v);
        const char *eol = strchr(at + strlen(flag), '\n');
        cr_assert_not_null(eol);
        cr_expect(eol - (at + strlen(flag)) >= (long)strlen(want) - 1 &&
                      strncmp(eol + 1 - strlen(want), want, strlen(want)) == 0,
                  "--%s: help should end with '%s': %.*s", rows[i].name, want, (int)(eol - at), at);
        shown++;
    }
    cr_expect_geq(shown, 8, "the code generator's flags are in --help");
    cr_expect(strstr(text, "--max_compiles_per_cluster=VALUE\n"), "%s", text);
    free(text);
}

/* A graph built per input shape (as an ONNX import with symbolic dims is): the plain text at x's rows. */
static xe_graph *make_at_rows(void *user, const xe_shape *in, int n, xe_status *st)
{
    (void)user;
    cr_assert_eq(n, 2);
    char text[512];
    snprintf(text, sizeof text,
             "xlac.graph v1\ninput x: f32[%lld,48]\ninput y: f32[%lld,48]\nt0 = mul(x, y)\nt1 = add(t0, x)\n"
             "t2 = tanh(t1)\ns = reduce_sum(t2, axes=[1], keepdims=false)\noutput s\noutput t2\n",
             (long long)in[0].dims[0], (long long)in[1].dims[0]);
    return xe_parse_string(text, "made.xg", st);
}

static xe_tensor *rows_of(int64_t rows, xe_status *st)
{
    xe_shape sh = xe_shape_make(2, (int64_t[]){rows, 48});
    xe_tensor *t = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, st);
    cr_assert(t, "%s", st->msg);
    for (int64_t i = 0; i < rows * 48; i++)
        ((float *)t->data)[i] = (float)(i % 13) / 13.0f;
    return t;
}

/*
 * Issue 31: the session copied its options shallowly, and the pass that runs at each new shape's
 * first run read plugin_config after the caller (python/xlac/session.py's temporary) had freed it:
 * garbage flags, or silently no clusters. The caller's strings are wiped and freed here before the
 * first and the second shape's runs; both must be clustered.
 */
Test(session_config, the_session_owns_its_option_strings)
{
    xe_status st;
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[?,48]\ninput y: f32[?,48]\n"
                                  "s = reduce_sum(x, axes=[1], keepdims=false)\noutput s\noutput x\n",
                                  "root.xg", &st);
    cr_assert(g, "%s", st.msg);
    xe_graph_maker *mk = calloc(1, sizeof *mk);
    *mk = (xe_graph_maker){.make = make_at_rows};
    xe_graph_set_maker(g, mk);
    char *config = strdup("--auto_jit=2 --min_cluster_size=2");
    xe_session_options o = {.place = XE_PLACE_CPU, .plugin_config = config};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert(s, "%s", st.msg);
    memset(config, 'X', strlen(config)); /* what a freed temporary may hold */
    free(config);
    for (int k = 0; k < 2; k++) {
        unsigned long long before = atomic_load(&state.n_launches);
        xe_tensor *in[2] = {rows_of(k ? 32 : 64, &st), rows_of(k ? 32 : 64, &st)}, *out[2];
        cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "shape %d: %s", k, st.msg);
        cr_assert_gt(atomic_load(&state.n_launches), before, "shape %d ran without clusters", k);
        for (int j = 0; j < 2; j++) {
            xe_tensor_release(in[j]);
            xe_tensor_release(out[j]);
        }
    }
    xe_session_destroy(s);
}
