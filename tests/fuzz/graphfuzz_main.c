/*
 * xlac-graphfuzz: the structure-aware graph fuzzer's driver for long
 * campaigns (scripts/fuzz.sh graph runs it; see graphfuzz.h).
 *
 *   xlac-graphfuzz [--seconds N] [--from SEED] [--keep DIR] [--work DIR]
 *
 * Runs cases SEED, SEED+1, ... until N seconds have passed; each failing
 * case is kept as DIR/graph-SEED.xg (copy it to tests/data/fuzz/graph/ so
 * that test_graph_fuzz keeps it fixed) with its reason beside it. Prints
 * libFuzzer's final-stats line (stat::number_of_executed_units) for
 * fuzz.sh; exits 1 when a case failed.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "graphfuzz.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void keep(const char *dir, uint64_t seed, const char *text, const char *why)
{
    char p[4200];
    mkdir(dir, 0700);
    snprintf(p, sizeof p, "%s/graph-%llu.xg", dir, (unsigned long long)seed);
    FILE *f = fopen(p, "w");
    if (f) {
        fprintf(f, "%s", text);
        fclose(f);
    }
    snprintf(p, sizeof p, "%s/graph-%llu.why", dir, (unsigned long long)seed);
    if ((f = fopen(p, "w"))) {
        fprintf(f, "%s\n", why);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    double seconds = 30;
    uint64_t seed = 1;
    const char *keep_dir = "graphfuzz-crashes", *work = "graphfuzz-work";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--from"))
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--keep"))
            keep_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--work"))
            work = argv[i + 1];
    }
    char self[PATH_MAX];
    if (!realpath(argv[0], self)) { /* absolute: the runs happen in the work folder */
        perror(argv[0]);
        return 2;
    }
    const char *bindir = dirname(self);
    long runs = 0, valid = 0, failed = 0;
    double t0 = now_s();
    for (; now_s() - t0 < seconds; seed++, runs++) {
        char *text = gf_case_text(seed), why[4096] = "";
        gf_result r = text ? gf_check(text, bindir, work, why, sizeof why) : GF_INVALID;
        valid += r == GF_SAME;
        if (r == GF_FAILED) {
            failed++;
            keep(keep_dir, seed, text, why);
            fprintf(stderr, "graph %llu failed: %s\n", (unsigned long long)seed, why);
        }
        free(text);
    }
    printf("graphfuzz: %ld graphs (%ld ran and agreed, %ld invalid), %ld failed, in %.0f s\n", runs,
           valid, runs - valid - failed, failed, now_s() - t0);
    printf("stat::number_of_executed_units: %ld\n", runs);
    return failed ? 1 : 0;
}
