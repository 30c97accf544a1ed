/*
 * Hostile inputs through xlac-run, one table: element counts that overflow
 * int64, zero and negative dims, a 10^5-node chain, 10^4-way fan-out and
 * fan-in, mismatched dtypes, cycles and duplicate names, absurd attribute
 * values, .npy feeds whose header lies about the data, truncated files,
 * names that are not UTF-8, and tensors beyond the address-space limit.
 * Each row is run op by op and, with the plugin preloaded, clustered (its
 * compiler /bin/false, so that every cluster falls back per op: the
 * clustering of the huge graphs is what is timed, not cc), in a child
 * whose address space is limited (ulimit -v 3 GiB) and whose time is
 * bounded (120 s). Each must end as its row says: a correct run (exit 0),
 * or an error (exit 2 for the graph or a feed, 1 at run time) whose one
 * line starts "xlac-run: " and names the place (file:line, the input or
 * the node); never a signal.
 *
 * Out of memory on the host: a tensor beyond the limit is exit 1 with its
 * name, type and size. Under AddressSanitizer (whose shadow memory does not
 * fit under a ulimit) the limit is ASan's allocator's instead
 * (max_allocation_size_mb, allocator_may_return_null), and LeakSanitizer
 * checks that the failing run frees everything. On the device, the same
 * check needs a GPU: without one the test says so and passes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xlac/xlac.h"
#include "support/tmpdir.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static char err[4096]; /* the last run's stderr (its start) */

static void setup(void)
{
    xt_tmp_make("/tmp/xlac-hostile-XXXXXX");
}

static void teardown(void)
{
    cr_assert(xt_tmp_remove());
}

static void write_bytes(const char *name, const void *data, size_t len)
{
    const char *p = xt_path(name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static void write_text(const char *name, const char *text)
{
    write_bytes(name, text, strlen(text));
}

/* An .npy file: the header dict as given (padded to 64-byte alignment), then `data` bytes of junk.
 */
static void write_npy(const char *name, const char *dict, size_t data, size_t cut)
{
    char buf[4096] = "\x93NUMPY\x01\x00";
    size_t hl = strlen(dict) + 1, pad = (64 - (10 + hl) % 64) % 64;
    buf[8] = (char)((hl + pad) & 0xff), buf[9] = (char)((hl + pad) >> 8);
    memcpy(buf + 10, dict, strlen(dict));
    memset(buf + 10 + strlen(dict), ' ', pad);
    buf[10 + hl + pad - 1] = '\n';
    size_t len = 10 + hl + pad + data;
    cr_assert_leq(len, sizeof buf);
    memset(buf + 10 + hl + pad, 0x3f, data);
    write_bytes(name, buf, cut && cut < len ? cut : len);
}

/*
 * Runs `xlac-run ARGS` in the test folder, op by op or with the plugin (clustering,
 * /bin/false as the compiler), under the memory and time bounds. Returns
 * the exit status; a signal fails the test.
 */
static int run(const char *args, bool plugin)
{
    char cmd[8192];
#ifdef UNDER_ASAN
    const char *limit =
        "export ASAN_OPTIONS=\"$ASAN_OPTIONS:allocator_may_return_null=1:"
        "max_allocation_size_mb=3072:verify_asan_link_order=0\";"; /* the plugin is preloaded */
#else
    const char *limit = "ulimit -v 3145728;";
#endif
    snprintf(
        cmd, sizeof cmd,
        "cd %s && %s timeout -s KILL 120 env -u LD_PRELOAD -u XLAC_AUTO_JIT -u XLAC_FLAGS %s "
        "%s/bin/xlac-run %s%s >/dev/null 2>stderr.txt",
        xt_tmp, limit,
        plugin
            ? "CC=/bin/false XLAC_AUTO_JIT=2 XLAC_FLAGS=--disk_cache=0 LD_PRELOAD=" XLAC_BINARY_DIR
              "/lib/libxlac.so"
            : "",
        XLAC_BINARY_DIR, args, strstr(args, "--seed") ? "" : " --seed 0"); /* random values for what is not fed */
    int status = system(cmd);
    xt_read_head(xt_path("stderr.txt"), err, sizeof err);
    cr_assert(WIFEXITED(status), "xlac-run %s: killed by a signal", args);
    return WEXITSTATUS(status);
}

/* One row: a graph text (or a file written beforehand), the arguments, and how it must end. */
typedef struct row {
    const char *what; /* the hostile thing */
    const char *text; /* written to h.xg (NULL: the arguments name files written by the test) */
    const char *args; /* xlac-run's arguments ("h.xg" when NULL) */
    int rc;           /* the exit status */
    const char *says; /* a part of stderr's one line (rc != 0) */
} row;

#define H "xlac.graph v1\n"

static const row rows[] = {
    /* element counts that overflow int64 */
    {"dims whose product overflows",
     H "input x: f32[3037000500,3037000500]\ny = neg(x)\noutput y\n", NULL, 2, "h.xg:2:"},
    {"a dim beyond int64", H "input x: f32[99999999999999999999]\ny = neg(x)\noutput y\n", NULL, 2,
     "h.xg:2:"},
    {"broadcast to 2^64 elements",
     H "input x: f32[4294967296,1]\ninput y: f32[1,4294967296]\nz = add(x, y)\n"
       "output z\n",
     NULL, 2, "h.xg:4:"},
    {"reshape to an overflowing shape",
     H "input x: f32[4]\ny = reshape(x, shape=[4611686018427387904,4])\n"
       "output y\n",
     NULL, 2, "h.xg:3:"},
    {"tile to an overflowing shape",
     H "input x: f32[5]\ny = tile(x, repeats=[4611686018427387904])\noutput y\n", NULL, 2,
     "h.xg:3:"},
    {"tile to 2^64 elements",
     H "input x: f32[1,1]\nc = tile(x, repeats=[4294967296,4294967296])\noutput c\n", NULL, 2,
     "h.xg:3:1: node c (tile): result f32[4294967296,4294967296] is too large"},
    {"broadcast_to 2^64 x 20 elements",
     H "input x: f32[20]\nb = broadcast_to(x, shape=[4294967296,4294967296,20])\n"
       "s = reduce_sum(b)\noutput s\n",
     NULL, 2, "h.xg:3:1: node b (broadcast_to): result"},
    {"iota of 2^64 elements", H "c = iota(shape=[4294967296,4294967296], dtype=f32)\noutput c\n",
     NULL, 2, "h.xg:2:1: node c (iota): result"},
    {"pad beyond int64",
     H "input x: f32[5]\ny = pad(x, pads=[9223372036854775807,9223372036854775807])\n"
       "output y\n",
     NULL, 2, "h.xg:3:"},
    /* zero and negative dims */
    {"zero dims",
     H "input x: f32[0,5]\ny = neg(x)\ns = reduce_sum(x, axes=[0])\noutput y\noutput s\n", NULL, 0,
     NULL},
    {"max over an empty axis", H "input x: f32[0,5]\nm = reduce_max(x, axes=[0])\noutput m\n", NULL,
     1, "reduce_max"},
    {"a negative dim", H "input x: f32[-3,5]\ny = neg(x)\noutput y\n", NULL, 2, "h.xg:2:"},
    {"reshape to a negative dim", H "input x: f32[6]\ny = reshape(x, shape=[-2,-3])\noutput y\n",
     NULL, 2, "h.xg:3:"},
    /* mismatched dtypes */
    {"add of f32 and i32", H "input x: f32[5]\ninput y: i32[5]\nz = add(x, y)\noutput z\n", NULL, 2,
     "h.xg:4:"},
    {"matmul of f32 and f64",
     H "input x: f32[2,2]\ninput y: f64[2,2]\nz = matmul(x, y)\noutput z\n", NULL, 2, "h.xg:4:"},
    {"select on floats", H "input x: f32[5]\nz = select(x, x, x)\noutput z\n", NULL, 2, "h.xg:3:"},
    /* cycles and duplicate names */
    {"a cycle of two", H "input x: f32[5]\na = add(x, b)\nb = neg(a)\noutput b\n", NULL, 2,
     "h.xg:3:"},
    {"a node that reads itself", H "input x: f32[5]\na = add(x, a)\noutput a\n", NULL, 2,
     "h.xg:3:"},
    {"a name defined twice", H "input x: f32[5]\na = neg(x)\na = abs(x)\noutput a\n", NULL, 2,
     "h.xg:4:"},
    {"an input declared twice", H "input x: f32[5]\ninput x: f32[5]\noutput x\n", NULL, 2,
     "h.xg:3:"},
    /* absurd attribute values */
    {"an axis of 10^11", H "input x: f32[5]\na = reduce_sum(x, axes=[99999999999])\noutput a\n",
     NULL, 2, "h.xg:3:"},
    {"argmax on INT64_MIN",
     H "input x: f32[5]\na = argmax(x, axis=-9223372036854775808)\noutput a\n", NULL, 2, "h.xg:3:"},
    {"softmax on a float axis", H "input x: f32[5]\na = softmax(x, axis=1e30)\noutput a\n", NULL, 2,
     "h.xg:3:"},
    {"concat on axis 99", H "input x: f32[5]\na = concat(x, x, axis=99)\noutput a\n", NULL, 2,
     "h.xg:3:"},
    {"transpose with a repeated axis",
     H "input x: f32[2,3]\na = transpose(x, perm=[0,0])\noutput a\n", NULL, 2, "h.xg:3:"},
    {"conv2d with stride 0",
     H "input x: f32[1,1,4,4]\ninput w: f32[1,1,2,2]\ny = conv2d(x, w, strides=[0,0])\n"
       "output y\n",
     NULL, 2, "h.xg:4:"},
    {"cast to no dtype", H "input x: f32[5]\na = cast(x, to=f128)\noutput a\n", NULL, 2, "h.xg:3:"},
    {"slice far beyond the ends",
     H "input x: f32[5]\na = slice(x, begin=[-9223372036854775808], "
       "end=[9223372036854775807])\noutput a\n",
     NULL, 0, NULL},
    {"leaky_relu of alpha 1e308", H "input x: f32[5]\na = leaky_relu(x, alpha=1e308)\noutput a\n",
     NULL, 0, NULL},
    /* truncated files, names that are not UTF-8 */
    {"a file cut in a statement", H "input x: f32[5]\na = add(x,", NULL, 2, "h.xg:3:"},
    {"a file cut in the header", "xlac.gr", NULL, 2, "h.xg:1:"},
    {"an empty file", "", NULL, 2, "h.xg"},
    {"a name that is not UTF-8", H "input \xff\xfe: f32[5]\na = neg(\xff\xfe)\noutput a\n", NULL, 2,
     "h.xg:2:"},
    {"a string that is not UTF-8", H "input x: f32[5] @s=\"\xc3\x28\xff\"\na = neg(x)\noutput a\n",
     NULL, 0, NULL},
    /* out of memory on the host */
    {"an input beyond the address space", H "input x: f32[2000000000]\ny = neg(x)\noutput y\n",
     NULL, 1, "input x: out of memory allocating f32[2000000000] (8000000000 bytes)"},
    {"a node's output beyond the address space",
     H "input x: f32[20]\nb = broadcast_to(x, shape=[100000000,20])\n"
       "s = reduce_sum(b)\noutput s\n",
     NULL, 1, "h.xg:3:1: node b (broadcast_to): out of memory allocating f32[100000000,20]"},
};

static void check_row(const row *r, bool plugin)
{
    if (r->text)
        write_text("h.xg", r->text);
    const char *args = r->args ? r->args : "h.xg";
    int rc = run(args, plugin);
    cr_expect_eq(rc, r->rc, "%s%s: exit %d, want %d: %s", r->what, plugin ? " (plugin)" : "", rc,
                 r->rc, err);
    if (r->rc == 0)
        return;
    cr_expect(!strncmp(xt_last_line(err), "xlac-run: ", 10) && strstr(xt_last_line(err), r->says),
              "%s%s: the message lacks '%s': %s", r->what, plugin ? " (plugin)" : "", r->says, err);
}

Test(hostile, graph_table_op_by_op_and_clustered, .init = setup, .fini = teardown, .timeout = 600)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int plugin = 0; plugin < 2; plugin++)
            check_row(&rows[i], plugin);
}

/* .npy feeds whose header lies: each exit 2 naming the input. */
Test(hostile, lying_and_truncated_npy_feeds, .init = setup, .fini = teardown, .timeout = 300)
{
    write_text("h.xg", H "input x: f32[?]\ny = neg(x)\noutput y\n");
    static const struct {
        const char *dict;
        size_t data, cut;
    } feeds[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }", 40,
         0}, /* more than the file */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", 1000,
         0}, /* less than the file */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 40,
         0}, /* bytes overflow */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 40,
         0},                                                                   /* beyond int64 */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-5,), }", 40, 0}, /* a negative dim */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", 40,
         30}, /* cut in the header */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", 40,
         100},                                                                /* cut in the data */
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 40, 0}, /* another dtype */
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (5,), }", 20, 0},  /* Fortran order */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (5, }", 20, 0},   /* a broken dict */
    };
    for (size_t i = 0; i < sizeof feeds / sizeof feeds[0]; i++) {
        write_npy("x.npy", feeds[i].dict, feeds[i].data, feeds[i].cut);
        for (int plugin = 0; plugin < 2; plugin++) {
            int rc = run("h.xg --input x=x.npy", plugin);
            cr_expect_eq(rc, 2, "feed %zu: exit %d: %s", i, rc, err);
            cr_expect(!strncmp(xt_last_line(err), "xlac-run: ", 10) && strstr(err, "x.npy"),
                      "feed %zu: %s", i, err);
        }
    }
    /* a header length beyond the file */
    write_bytes("x.npy", "\x93NUMPY\x01\x00\xff\xff{'descr'", 18);
    cr_expect_eq(run("h.xg --input x=x.npy", false), 2, "%s", err);
    cr_expect(strstr(err, "x.npy"), "%s", err);
    /* a size known only at run time: tile of a fed [2,2] to 2^64 elements */
    write_text(
        "t.xg",
        H "input x: f32[?,?]\nc = tile(x, repeats=[4294967296,4294967296])\ns = reduce_sum(c)\n"
          "output s\n");
    write_npy("x.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16, 0);
    for (int plugin = 0; plugin < 2; plugin++) {
        int rc = run("t.xg --input x=x.npy", plugin);
        cr_expect(rc == 1 || rc == 2, "exit %d: %s", rc, err);
        cr_expect(
            strstr(xt_last_line(err), "node c (tile): result f32[8589934592,8589934592] is too large"),
            "%s", err);
    }
}

/* Writes a 10^5-node chain, a 10^4-way fan-out into a 10^4-way fan-in, and runs both ways. */
Test(hostile, huge_chains_and_fans_run_in_bounded_memory, .init = setup, .fini = teardown,
     .timeout = 600)
{
    size_t cap = 4 << 20;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    size_t n = (size_t)snprintf(t, cap, H "input x: f32[8]\nn0 = neg(x)\n");
    for (int i = 1; i < 100000; i++)
        n += (size_t)snprintf(t + n, cap - n, "n%d = %s(n%d)\n", i, i % 2 ? "neg" : "abs", i - 1);
    snprintf(t + n, cap - n, "output n99999\n");
    write_text("chain.xg", t);
    n = (size_t)snprintf(t, cap, H "input x: f32[2]\n");
    for (int i = 0; i < 10000; i++)
        n += (size_t)snprintf(t + n, cap - n, "n%d = neg(x)\n", i);
    n += (size_t)snprintf(t + n, cap - n, "c = concat(");
    for (int i = 0; i < 10000; i++)
        n += (size_t)snprintf(t + n, cap - n, "n%d, ", i);
    snprintf(t + n, cap - n, "axis=0)\ns = reduce_sum(c)\noutput s\n");
    write_text("fan.xg", t);
    free(t);
    for (int plugin = 0; plugin < 2; plugin++) {
        cr_expect_eq(run("chain.xg", plugin), 0, "10^5-node chain%s: %s", plugin ? " (plugin)" : "",
                     err);
        cr_expect_eq(run("fan.xg", plugin), 0, "10^4-way fan%s: %s", plugin ? " (plugin)" : "",
                     err);
    }
}

/* Out of memory on the device needs a GPU (the CUDA emulation runs on host memory). */
Test(hostile, device_out_of_memory_names_the_tensor, .init = setup, .fini = teardown)
{
    write_text("h.xg", H "input x: f32[4000000000]\ny = neg(x)\noutput y\n");
    int rc = run("h.xg --device gpu", false);
    if (strstr(err, "no CUDA device") || strstr(err, "without CUDA"))
        cr_skip_test("skipped: no CUDA device");
    cr_expect_eq(rc, 1, "%s", err);
    cr_expect(strstr(err, "f32[4000000000]") && strstr(err, "16000000000 bytes"), "%s", err);
}

/*
 * A local user plants symbolic links at the temp names xlac would use: the
 * compiler's version probe (it was $TMPDIR/xlac-ccver-PID.txt, opened
 * O_CREAT|O_TRUNC, so the link's target was overwritten with the probe's
 * output) and guessable names beside it. The child knows its PID before it
 * execs xlac-run, so the link is at exactly the name the old probe used.
 * Every temp file is now in a mkdtemp folder or made O_EXCL: the victim
 * keeps its text and no link is followed.
 */
Test(hostile, planted_symlinks_at_temp_names_are_never_followed, .init = setup, .fini = teardown,
     .timeout = 120)
{
    write_text("g.xg", H "input x: f32[4]\nt = add(x, x)\nu = neg(t)\ny = mul(u, x)\noutput y\n");
    write_text("victim.txt", "precious\n");
    char tmp[300], victim[300];
    snprintf(tmp, sizeof tmp, "%s/tmp", xt_tmp);
    snprintf(victim, sizeof victim, "%s/victim.txt", xt_tmp);
    cr_assert_eq(mkdir(tmp, 0777), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char name[400], env_tmp[320];
        static const char *const names[] = {"xlac-ccver-%d.txt", "xlac-cc-%d", "xlac-so-%d", "xlac-%d.lock"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            char base[64];
            snprintf(base, sizeof base, names[i], (int)getpid());
            snprintf(name, sizeof name, "%s/%s", tmp, base);
            if (symlink(victim, name) != 0)
                _exit(120);
        }
        snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmp);
        char *envp[] = {env_tmp, "XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0 --min_cluster_size=2",
                        "LD_PRELOAD=" XLAC_BINARY_DIR "/lib/libxlac.so", "PATH=/usr/bin:/bin", XT_ASAN_OPTIONS, NULL};
        char *argv[] = {XLAC_BINARY_DIR "/bin/xlac-run", "g.xg", "--seed", "0", NULL};
        if (chdir(xt_tmp) != 0 || !freopen("/dev/null", "w", stdout))
            _exit(121);
        execve(argv[0], argv, envp);
        _exit(122);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "xlac-run: status %d", status);
    char text[64];
    xt_read_head(victim, text, sizeof text);
    cr_expect_str_eq(text, "precious\n", "the file a planted link named was overwritten");
}
