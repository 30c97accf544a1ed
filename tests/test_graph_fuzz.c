/*
 * The structure-aware graph fuzzer in CI (tests/fuzz/graphfuzz.h): a
 * fixed slice of its cases (random graphs and mutations of them, each run
 * by xlac-run op by op and clustered), and every input kept in
 * tests/data/fuzz/graph/ (cases that once failed). Each must run alike
 * both ways or be rejected alike; a crash, a sanitizer report or a
 * difference fails. Long campaigns: scripts/fuzz.sh --minutes N graph.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/graphfuzz.h"
#include "support/tmpdir.h"

#define KEPT XLAC_SOURCE_DIR "/tests/data/fuzz/graph"
#define SLICE 40


static void setup(void)
{
    xt_tmp_make("/tmp/xlac-graphfuzz-XXXXXX");
}

static void teardown(void)
{
    cr_assert(xt_tmp_remove());
}

Test(graph_fuzz, a_slice_of_cases_runs_alike_op_by_op_and_clustered, .init = setup,
     .fini = teardown, .timeout = 900)
{
    int same = 0;
    for (uint64_t seed = 1; seed <= SLICE; seed++) {
        char *text = gf_case_text(seed), why[4096] = "";
        cr_assert_not_null(text);
        gf_result r = gf_check(text, XLAC_BINARY_DIR "/bin", xt_tmp, why, sizeof why);
        cr_expect_neq(r, GF_FAILED, "case %llu: %s\n%s", (unsigned long long)seed, why, text);
        same += r == GF_SAME;
        free(text);
    }
    cr_log_info("%d of %d cases ran and agreed, the others were rejected alike", same, SLICE);
    cr_expect_geq(same, SLICE / 2, "most cases are valid graphs (%d of %d)", same, SLICE);
}

Test(graph_fuzz, kept_inputs_run_alike, .init = setup, .fini = teardown, .timeout = 600)
{
    DIR *d = opendir(KEPT);
    cr_assert_not_null(d, "%s", KEPT);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".xg"))
            continue;
        char p[4200], why[4096] = "";
        snprintf(p, sizeof p, "%s/%s", KEPT, e->d_name);
        FILE *f = fopen(p, "rb");
        cr_assert_not_null(f);
        char *text = calloc(1, 1 << 20);
        fread(text, 1, (1 << 20) - 1, f);
        fclose(f);
        cr_expect_neq(gf_check(text, XLAC_BINARY_DIR "/bin", xt_tmp, why, sizeof why), GF_FAILED,
                      "%s: %s", p, why);
        free(text);
        n++;
    }
    closedir(d);
    cr_log_info("%d kept inputs", n);
}
