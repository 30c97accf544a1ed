/*
 * Every input the fuzzers found a defect with (every file of tests/data/fuzz/TARGET/)
 * replayed through the same target in the normal build, so a fixed crash
 * stays fixed; the ASan build of the suite runs them under the sanitizers.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "targets.h"
#include "xlac/xlac.h"

/* Runs target on every file of tests/data/fuzz/<name>; returns how many. */
static int replay(const char *name, int (*target)(const uint8_t *, size_t))
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/data/fuzz/%s", XLAC_SOURCE_DIR, name);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *data = NULL;
        size_t len = 0;
        xe_status st;
        cr_assert_eq(xe_read_file(path, &data, &len, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(target((const uint8_t *)data, len), 0, "%s", path);
        free(data);
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

Test(fuzz_replay, xg)
{
    cr_assert_geq(replay("xg", xf_xg), 1);
}

Test(fuzz_replay, npy)
{
    cr_assert_geq(replay("npy", xf_npy), 1);
}

Test(fuzz_replay, flags)
{
    cr_assert_geq(replay("flags", xf_flags), 1);
}

Test(fuzz_replay, disk)
{
    cr_assert_geq(replay("disk", xf_disk), 1);
}

Test(fuzz_replay, onnx)
{
    cr_assert_geq(replay("onnx", xf_onnx), 1);
}

/* The models with external data, hostile ones among them (a link out, "..", a FIFO, " 12"); each bounded. */
Test(fuzz_replay, onnx_ext, .timeout = 60)
{
    cr_assert_geq(replay("onnx_ext", xf_onnx_ext), 6);
}
