/*
 * The onnx fuzz targets' structure-aware mutator (tests/fuzz/onnx_mutate.h),
 * run without libFuzzer: its guard refuses issue 31's deep seeds without
 * recursing into them and lets the real exports through; chains of
 * mutations from every seed model stay within the size asked for, mostly
 * still unpack, and stay shallow enough for the next mutation; a seed gives
 * the same mutation twice; cross-over adds the second model's nodes.
 * The ASan builds run it under the sanitizers, so a mutation that frees
 * twice or leaks fails here, not in a fuzz campaign.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx_mutate.h"
#include "xlac/xlac.h"

#define MAX_SIZE (256 * 1024)

static uint8_t *read_seed(const char *rel, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", XLAC_SOURCE_DIR, rel);
    char *data = NULL;
    xe_status st;
    cr_assert_eq(xe_read_file(path, &data, len, &st), XE_OK, "%s", st.msg);
    return (uint8_t *)data;
}

Test(onnx_mutator, guard_refuses_deep_seeds_and_takes_exports)
{
    static const char *const deep[] = {"tests/fuzz/seeds/onnx/nest-if-4000.onnx",
                                       "tests/fuzz/seeds/onnx/nest-loop-20000.onnx"};
    static const char *const fine[] = {"tests/fuzz/seeds/onnx/nest-if-30.onnx",
                                       "tests/fuzz/seeds/onnx/upsample-fixed-inlined.onnx",
                                       "tests/models/exports/distilbert.fixed.script/model.onnx"};
    for (size_t k = 0; k < 2; k++) {
        size_t n;
        uint8_t *d = read_seed(deep[k], &n);
        cr_expect(!xm_guard(d, n), "%s passed the guard", deep[k]);
        cr_expect_eq(xm_mutate(d, n, MAX_SIZE, 7), 0, "%s was mutated by structure", deep[k]);
        free(d);
    }
    for (size_t k = 0; k < 3; k++) {
        size_t n;
        uint8_t *d = read_seed(fine[k], &n);
        cr_expect(xm_guard(d, n), "%s was refused", fine[k]);
        free(d);
    }
    cr_expect(!xm_guard((const uint8_t *)"\x0a\x05\x0a", 3), "a length past the end passed");
}

/* 400 mutations chained from the model at rel; returns how many unpacked. */
static int chain(const char *rel, unsigned seed)
{
    size_t n0;
    uint8_t *seedbytes = read_seed(rel, &n0);
    uint8_t *buf = malloc(MAX_SIZE);
    size_t n = n0;
    cr_assert(n <= MAX_SIZE);
    memcpy(buf, seedbytes, n);
    int unpacked = 0;
    for (unsigned k = 0; k < 400; k++) {
        size_t m = xm_mutate(buf, n, MAX_SIZE, seed + k);
        cr_assert_leq(m, MAX_SIZE);
        if (!m) { /* no structure to mutate (or it grew): start again from the seed */
            memcpy(buf, seedbytes, n = n0);
            continue;
        }
        Onnx__ModelProto *model = onnx__model_proto__unpack(NULL, m, buf);
        unpacked += model != NULL;
        if (model)
            onnx__model_proto__free_unpacked(model, NULL);
        n = m;
    }
    free(buf);
    free(seedbytes);
    return unpacked;
}

Test(onnx_mutator, chains_stay_models, .timeout = 300)
{
    static const char *const seeds[] = {"tests/fuzz/seeds/onnx/nest-if-30.onnx",
                                        "tests/fuzz/seeds/onnx/hostile-names.onnx",
                                        "tests/fuzz/seeds/onnx/attention-zero-kv-heads.onnx",
                                        "tests/fuzz/seeds/onnx/nul-names.onnx",
                                        "tests/fuzz/seeds/onnx/upsample-fixed-inlined.onnx",
                                        "tests/data/onnx/Attention.onnx",
                                        "tests/data/onnx/Add.onnx"};
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        int ok = chain(seeds[k], 1000u * (unsigned)k);
        cr_expect_geq(ok, 300, "%s: %d of 400 mutations unpacked", seeds[k], ok);
    }
}

Test(onnx_mutator, same_seed_same_mutation)
{
    size_t n;
    uint8_t *d = read_seed("tests/fuzz/seeds/onnx/nest-if-30.onnx", &n);
    uint8_t *a = malloc(MAX_SIZE), *b = malloc(MAX_SIZE);
    for (unsigned seed = 1; seed < 50; seed++) {
        memcpy(a, d, n);
        memcpy(b, d, n);
        size_t na = xm_mutate(a, n, MAX_SIZE, seed), nb = xm_mutate(b, n, MAX_SIZE, seed);
        cr_assert_eq(na, nb, "seed %u", seed);
        cr_assert_eq(memcmp(a, b, na), 0, "seed %u", seed);
    }
    free(a);
    free(b);
    free(d);
}

Test(onnx_mutator, cross_over_adds_nodes)
{
    size_t na, nb;
    uint8_t *a = read_seed("tests/data/onnx/Add.onnx", &na);
    uint8_t *b = read_seed("tests/fuzz/seeds/onnx/upsample-fixed-inlined.onnx", &nb);
    uint8_t *out = malloc(MAX_SIZE);
    Onnx__ModelProto *before = onnx__model_proto__unpack(NULL, na, a);
    cr_assert(before);
    int grew = 0;
    for (unsigned seed = 0; seed < 40; seed++) {
        size_t n = xm_cross_over(a, na, b, nb, out, MAX_SIZE, seed);
        Onnx__ModelProto *m = n ? onnx__model_proto__unpack(NULL, n, out) : NULL;
        grew += m && m->graph->n_node + m->graph->n_initializer >
                         before->graph->n_node + before->graph->n_initializer;
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
    }
    cr_expect_geq(grew, 30, "%d of 40 cross-overs added a node or an initializer", grew);
    onnx__model_proto__free_unpacked(before, NULL);
    free(out);
    free(a);
    free(b);
}
