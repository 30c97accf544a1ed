/*
 * Calls examples/mlp.xg compiled ahead of time, from plain C (docs/aot.md):
 *
 *   build/bin/xlac-compile examples/mlp.xg --target c --out out
 *   cc -I out examples/aot/mlp_main.c out/mlp.so -Wl,-rpath,"$PWD/out" -lm -o mlp_main
 *   ./mlp_main            # prints y[0..3]; writes x.npy w1.npy b1.npy w2.npy b2.npy y.npy
 *
 * The buffers are plain arrays sized by the header's constants; the
 * inputs are a fixed pattern, saved as .npy so that xlac-run can run the
 * same graph on them (--input x=x.npy ...) and its outputs be compared.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "mlp.h"

static float x[MLP_X_SIZE], w1[MLP_W1_SIZE], b1[MLP_B1_SIZE], w2[MLP_W2_SIZE], b2[MLP_B2_SIZE];
static float y[MLP_Y_SIZE];

static void fill(float *v, int n, float scale)
{
    for (int i = 0; i < n; i++)
        v[i] = scale * sinf(0.37f * (float)i + scale);
}

/* A float32 .npy file (version 1.0, C order) of a rank-1 or rank-2 array. */
static int save_npy(const char *path, const float *v, int rank, long d0, long d1)
{
    char header[128];
    int n = rank == 1 ? snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%ld,), }", d0)
                      : snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%ld, %ld), }",
                                 d0, d1);
    int total = (10 + n + 1 + 63) / 64 * 64; /* magic, version, length, header, newline: padded to 64 */
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    uint16_t hlen = (uint16_t)(total - 10);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hlen, 2, 1, f);
    fprintf(f, "%s%*s\n", header, total - 10 - n - 1, "");
    fwrite(v, sizeof *v, (size_t)(d0 * (rank == 2 ? d1 : 1)), f);
    return fclose(f) != 0;
}

int main(void)
{
    fill(x, MLP_X_SIZE, 1.0f);
    fill(w1, MLP_W1_SIZE, 0.1f);
    fill(b1, MLP_B1_SIZE, 0.5f);
    fill(w2, MLP_W2_SIZE, 0.1f);
    fill(b2, MLP_B2_SIZE, 0.25f);
    int rc = mlp_run(x, w1, b1, w2, b2, y);
    if (rc != 0) {
        fprintf(stderr, "mlp_run failed: %d\n", rc);
        return 1;
    }
    printf("y[0..3] = %g %g %g %g\n", y[0], y[1], y[2], y[3]);
    int bad = save_npy("x.npy", x, 2, MLP_X_DIM0, MLP_X_DIM1) | save_npy("w1.npy", w1, 2, MLP_W1_DIM0, MLP_W1_DIM1) |
              save_npy("b1.npy", b1, 1, MLP_B1_DIM0, 0) | save_npy("w2.npy", w2, 2, MLP_W2_DIM0, MLP_W2_DIM1) |
              save_npy("b2.npy", b2, 1, MLP_B2_DIM0, 0) | save_npy("y.npy", y, 2, MLP_Y_DIM0, MLP_Y_DIM1);
    return bad;
}
