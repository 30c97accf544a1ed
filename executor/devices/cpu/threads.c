/*
 * One thread count for the CPU's one pool. The per-op kernels, the
 * generated OpenMP loops of compiled clusters and oneDNN (built with the
 * OpenMP runtime, dnnl_config.h: DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP) all
 * run on the calling thread's OpenMP team, so one count, set on the thread
 * that runs a session (omp_set_num_threads), applies to all three.
 * OpenBLAS, which keeps its own pool, is held to one thread where it is
 * called (conv.c, matmul.c) and runs inside that team.
 *
 * The default of xlac-run is the machine's physical cores: two hardware
 * threads of one core share its FMA units, and a product or convolution
 * at the FLOP roofline gains nothing from the second.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "xlac/op.h"
#include "xlac/session.h"

/* Cores seen: (package, core) pairs of the CPUs Linux lists (at most 4096 CPUs read). */
static int count_cores(void)
{
    enum { MAX_CPUS = 4096 };
    static long seen[MAX_CPUS];
    int n = 0;
    for (int cpu = 0; cpu < MAX_CPUS; cpu++) {
        char path[128];
        long pkg = 0, core = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int ok = fscanf(f, "%ld", &core) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                 cpu);
        if ((f = fopen(path, "r"))) {
            ok = ok && fscanf(f, "%ld", &pkg) == 1;
            fclose(f);
        }
        if (!ok)
            return 0;
        long key = pkg * 65536 + core;
        int k = 0;
        while (k < n && seen[k] != key)
            k++;
        if (k == n)
            seen[n++] = key;
    }
    return n;
}

int xe_physical_cores(void)
{
    int n = count_cores(), procs = omp_get_num_procs();
    return n > 0 && n <= procs ? n : procs; /* a cgroup or affinity mask may allow fewer CPUs */
}

void xe_set_threads(int n)
{
    if (n > 0)
        omp_set_num_threads(n);
}

int xe_threads(void)
{
    return omp_get_max_threads();
}

/* fn over rows [0, rows) cut into `parts` ranges, one per thread of the team. */
static void rows_in_parts(int64_t rows, int64_t parts, xe_panel_fn fn, void *ctx)
{
#pragma omp parallel for schedule(static) if (parts > 1)
    for (int64_t k = 0; k < parts; k++)
        fn(ctx, rows * k / parts, rows * (k + 1) / parts);
}

void xe_cpu_rows(int64_t rows, int64_t cols, xe_panel_fn fn, void *ctx)
{
    int64_t parts = rows * (cols > 0 ? cols : 1) >= 32768 ? omp_get_max_threads() : 1;
    rows_in_parts(rows, parts > rows ? rows : parts, fn, ctx);
}

void xe_cpu_row_blocks(int64_t rows, int64_t min_part, xe_panel_fn fn, void *ctx)
{
    int64_t parts = min_part > 0 ? (rows + min_part - 1) / min_part : rows;
    rows_in_parts(rows, parts < omp_get_max_threads() ? parts : omp_get_max_threads(), fn, ctx);
}
