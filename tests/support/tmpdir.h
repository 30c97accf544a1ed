/*
 * The scaffolding of the tests that run programs in a private folder
 * (test_reports, test_plugin_e2e, test_aot, test_replay, test_distributed,
 * test_hostile, test_faults, test_graph_fuzz, test_onnx, test_cli): the
 * folder itself (mkdtemp, removed with rm -rf), a path in it, writing and
 * reading a file (whole, or its start), the last line of a run's output,
 * a shell command run in the folder with its output captured, and a
 * program run directly (fork and exec) with its stdout and stderr apart.
 * Criterion runs each test in its own process, so the one folder per
 * process is the test's own.
 */
#ifndef XLAC_TEST_TMPDIR_H
#define XLAC_TEST_TMPDIR_H

#include <stdbool.h>
#include <stddef.h>

/* The test's folder, set by xt_tmp_make. */
extern char xt_tmp[64];

/* Makes a fresh folder from template (for mkdtemp: ends in XXXXXX); else fails the test. */
void xt_tmp_make(const char *template);
/* Removes the folder and its contents (rm -rf); false, said on stderr, when it cannot. */
bool xt_tmp_remove(void);
/* xt_tmp_remove as a Criterion .fini: a folder left behind is reported, not a failure. */
void xt_tmp_fini(void);
/* xt_tmp/name, in one of 8 static buffers used in turn (valid until 8 more calls). */
char *xt_path(const char *name);
/* Writes text to path p (the whole file); fails the test when p cannot be opened. */
void xt_write_file(const char *p, const char *text);
/* The whole file at p, NUL-terminated (malloc'd; NULL if it cannot be opened); *len its size. */
char *xt_read_file(const char *p, size_t *len);
/* The start of the file at p (at most cap - 1 bytes) into buf, NUL-terminated; "" if none. */
void xt_read_head(const char *p, char *buf, size_t cap);
/* How many times what occurs in text, not overlapping (0 when text is NULL). */
int xt_occurrences(const char *text, const char *what);
/* The last line of text, without a final newline's empty line ("a\nb\n" -> "b\n"). */
const char *xt_last_line(const char *text);
/*
 * Runs `cd xt_tmp && env -u LD_PRELOAD -u XLAC_* ENV_WORDS CMD` (a clean environment: none of
 * the inherited variables that would change a child's behaviour; under the sanitizers, ASAN_OPTIONS
 * that let a preloaded library come first) with stdout and stderr together in xt_tmp/.log; *out
 * gets that output (malloc'd). Returns the exit status, 128 when the shell did not exit.
 */
int xt_sh(const char *env_words, const char *cmd, char **out);

/*
 * Where another user (the words `as`, e.g. "setpriv --reuid=65534 ... ") finds the build: the
 * build's own bin/ and lib/ when that user can read them, else copies in xt_tmp/stage (a checkout
 * in a folder of mode 0700, which only its owner may enter). bin and lib get the folders (no
 * trailing '/'); env gets the words to put before the command ("LD_LIBRARY_PATH=..." for the
 * copies: the binaries' RUNPATH names the unreachable build; LSAN_OPTIONS with a copy of
 * tests/lsan.supp, which that user could not read either).
 */
void xt_build_for(const char *as, char *bin, char *lib, size_t len, char *env, size_t env_len);

/* A program's exit status (128 + the signal when it did not exit) and its stdout and stderr (malloc'd). */
typedef struct xt_result {
    int rc;
    char *out, *err;
} xt_result;
void xt_result_free(xt_result *r);
/*
 * Runs argv (argv[0] a path, no shell) in folder cwd with the inherited environment minus
 * LD_PRELOAD, XLAC_* and ASAN_OPTIONS and minus every variable env sets, plus env (NULL-terminated
 * "K=V": its values win); preload: with the build's libxlac.so; under the sanitizers, ASAN_OPTIONS
 * that let a preloaded library come first.
 */
xt_result xt_run_in(const char *cwd, bool preload, const char *const *env, const char *const *argv);

/*
 * An environment entry for a child that a test starts with execve and the
 * plugin preloaded: under the sanitizer builds the runtime must not insist
 * on coming first (LD_PRELOAD puts libxlac.so there); elsewhere an inert
 * entry. XT_ASAN_NO_LEAKS also turns leak checks off, for a child that a
 * test interrupts mid-work (its exit leaves what it held, by design).
 */
#ifdef XLAC_SANITIZE
#define XT_ASAN_OPTIONS "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1"
#define XT_ASAN_NO_LEAKS "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"
#else
#define XT_ASAN_OPTIONS "XT_NO_SANITIZER=1"
#define XT_ASAN_NO_LEAKS "XT_NO_SANITIZER=1"
#endif

#endif
