/*
 * Demotion verdicts on disk (codegen/cache/verdict.c): a clear loss holds
 * from the first run of the next process that loads the program; a close
 * one (compiled slower by less than XG_VERDICT_SURE) is measured again by
 * that process, rewritten as agreed by two when it loses again (then it
 * holds), removed when it wins; a line of another version is no verdict.
 *
 * Each "process" is a cache of its own over one folder, as test_demote's
 * calls are: the per-op time reported is 1 ns (demoted) or 20 ms after a
 * 30 ms pause (kept: a compiled run takes microseconds, and no compile
 * ended within those 20 ms), and the close and clear verdicts are written
 * into the file by hand.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/cachefx.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

#define ROWS 16384 /* a compiled run of some tens of microseconds, over the 5 us a verdict needs */
static const char *text = "xlac.graph v1\ninput x: f32[16384,8]\ninput y: f32[16384,8]\n"
                          "a = mul(x, y)\nb = add(a, x)\noutput b\n";

#define KEPT 20000.0 /* us: a per-op time every compiled run beats */

static char said[8192]; /* the info lines of the cache under test */

static void keep_line(xg_log_level level, const char *line)
{
    if (level <= XG_LOG_INFO && strlen(said) + strlen(line) + 2 < sizeof said) {
        strcat(said, line);
        strcat(said, "\n");
    }
}

typedef struct call {
    bool ran; /* compiled code ran */
    const char *reason;
} call;

/* One call as the plugin makes it: a fallback or an asked-for probe reported at per_op_us. */
static call one_call(xg_cache *c, const xe_graph *g, double per_op_us)
{
    xe_status st;
    xe_tensor *in[2], *out[1] = {NULL};
    xt_mul_add_inputs(ROWS, in);
    xg_outcome oc = XG_FALLBACK;
    xg_run_info info = {.can_probe = true};
    cr_assert_eq(xg_run_cluster_info(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &info, &st), XE_OK,
                 "%s", st.msg);
    call r = {.ran = oc == XG_RAN, .reason = info.reason};
    if (r.ran) {
        xt_mul_add_check(out[0], ROWS);
    }
    if (!r.ran || info.probe)
        xg_cluster_per_op_time(c, g, NULL, XE_DEV_CPU, in, per_op_us);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    return r;
}

/* A process: a new cache over f's folder, n calls at per_op_us; ran[] says how each ran. */
static xg_stats process(xt_cache_dir *f, int n, double per_op_us, bool *ran)
{
    said[0] = '\0';
    f->o.async_compilation = false;
    f->o.log = keep_line;
    xe_status st;
    xg_cache *c = xg_cache_new(&f->o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    for (int i = 0; i < n; i++) {
        if (per_op_us > 1000) /* counted only when no compile ended within it */
            nanosleep(&(struct timespec){0, (long)(per_op_us * 1500)}, NULL);
        call r = one_call(c, f->g, per_op_us);
        ran[i] = r.ran;
        if (!r.ran)
            cr_assert_str_eq(r.reason, "slower compiled than per op (demoted)", "call %d", i + 1);
    }
    xg_stats s = xt_stats(c);
    xg_cache_destroy(c);
    return s;
}

/* The one verdict file of dir ("<hex>.slow"), into path; false when there is none. */
static bool verdict_file(const char *dir, char *path, size_t len)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".slow") == 0) {
            snprintf(path, len, "%s/%s", dir, e->d_name);
            found++;
        }
    }
    closedir(d);
    cr_assert_leq(found, 1, "one program, one verdict");
    return found == 1;
}

static void write_verdict(const char *path, const char *line)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(line, f);
    cr_assert_eq(fclose(f), 0);
}

/* A new folder f where a first process demoted (1 ns per op): the program on disk and its
 * verdict, whose path goes to path. */
static void demoted_in_a_first_process(xt_cache_dir *f, char *path, size_t len)
{
    xt_cache_dir_init(f, "verdict", text);
    bool ran[8];
    xg_stats s = process(f, 8, 0.001, ran);
    cr_assert_eq(s.compiles, 1);
    cr_assert_eq(s.demoted, 1);
    cr_assert_not(ran[7], "demoted after its timed runs");
    cr_assert(verdict_file(f->dir, path, len), "the demotion is written beside the program");
    char *line = xt_read_file(path, NULL);
    cr_assert(line && strncmp(line, "xlac-slow 2 ", 12) == 0 && strstr(line, " 1\n"), "%s", line ? line : "");
    free(line);
}

Test(verdict, a_clear_loss_holds_from_the_first_run_of_the_next_process)
{
    xt_cache_dir f;
    char path[512];
    demoted_in_a_first_process(&f, path, sizeof path); /* compiled us against 0.001: clear */
    bool ran[3];
    xg_stats s = process(&f, 3, KEPT, ran);
    cr_assert_eq(s.disk_hits, 1);
    cr_assert_eq(s.demoted, 1);
    cr_assert(!ran[0] && !ran[1] && !ran[2], "per op from its first call");
    /* a clear loss written by hand (1.3x): the same */
    write_verdict(path, "xlac-slow 2 1300.000 1000.000 1\n");
    s = process(&f, 1, KEPT, ran);
    cr_assert(!ran[0] && s.demoted == 1);
    xt_cache_dir_fini(&f);
}

Test(verdict, a_close_loss_is_measured_again_and_removed_when_the_program_wins)
{
    xt_cache_dir f;
    char path[512];
    demoted_in_a_first_process(&f, path, sizeof path);
    write_verdict(path, "xlac-slow 2 1100.000 1000.000 1\n"); /* 10 % slower, one process's word */
    bool ran[8];
    xg_stats s = process(&f, 8, KEPT, ran); /* any compiled run beats 20 ms */
    cr_assert_eq(s.disk_hits, 1);
    cr_assert_eq(s.demoted, 0, "%s", said);
    for (int i = 0; i < 8; i++)
        cr_assert(ran[i], "call %d runs compiled", i + 1);
    cr_assert(strstr(said, "cluster_0 ran slower compiled (1.100 ms) than per op (1.000 ms) in an earlier run, "
                           "too close to hold on one run's word; it runs compiled and is measured again"),
              "%s", said);
    cr_assert(strstr(said, "cluster_0 ran faster compiled ("), "%s", said);
    cr_assert(strstr(said, "the earlier run's verdict is removed"), "%s", said);
    cr_assert_neq(access(path, F_OK), 0, "the verdict is gone");
    xt_cache_dir_fini(&f);
}

Test(verdict, a_close_loss_found_again_is_agreed_by_two_and_holds)
{
    xt_cache_dir f;
    char path[512];
    demoted_in_a_first_process(&f, path, sizeof path);
    write_verdict(path, "xlac-slow 2 1100.000 1000.000 1\n");
    bool ran[8];
    xg_stats s = process(&f, 8, 0.001, ran); /* measured again, and it loses again */
    cr_assert(ran[0], "the first call runs compiled: the verdict was too close to hold");
    cr_assert_not(ran[7]);
    cr_assert_eq(s.demoted, 1);
    char *line = xt_read_file(path, NULL);
    cr_assert(line && strncmp(line, "xlac-slow 2 ", 12) == 0 && strstr(line, " 2\n"), "agreed by two: %s",
              line ? line : "(no verdict)");
    free(line);
    /* agreed by two, however close: from the first call of the next process */
    write_verdict(path, "xlac-slow 2 1100.000 1000.000 2\n");
    s = process(&f, 2, KEPT, ran);
    cr_assert(!ran[0] && !ran[1] && s.demoted == 1, "%s", said);
    xt_cache_dir_fini(&f);
}

Test(verdict, a_line_of_another_version_or_malformed_is_no_verdict)
{
    xt_cache_dir f;
    char path[512];
    demoted_in_a_first_process(&f, path, sizeof path);
    const char *lines[] = {"xlac-slow 1 2000.000 1000.000\n", "xlac-slow 2 2000.000 1000.000 0\n",
                           "xlac-slow 2 900.000 1000.000 1\n", "xlac-slow 2 2000.000 1000.000 1"};
    for (int k = 0; k < 4; k++) {
        write_verdict(path, lines[k]);
        bool ran[1];
        xg_stats s = process(&f, 1, KEPT, ran);
        cr_assert(ran[0] && s.demoted == 0, "%s: measured again", lines[k]);
    }
    xt_cache_dir_fini(&f);
}
