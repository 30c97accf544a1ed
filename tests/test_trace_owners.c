/*
 * Several trace files recorded at once (xlac/trace.h): two sessions that
 * profile each get a file of their own slices and of nobody's, from their
 * start to their stop; a file of owner 0 (xlac-run --trace, the plugin's
 * --trace) takes every slice; two owners joining one file make it take
 * every slice, written when the last leaves; an interruption writes every
 * file. Before, a second file was refused while the first was recorded.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "support/tmpdir.h"
#include "xlac/session.h"
#include "xlac/status.h"
#include "xlac/trace.h"

static void setup(void)
{
    xt_tmp_make("/tmp/xlac-trace-owners-XXXXXX");
}

TestSuite(trace_owners, .init = setup, .fini = xt_tmp_fini, .timeout = 60);

/* A slice named name, recorded now by owner. */
static void slice_of(int owner, const char *name)
{
    int was = xe_trace_owner_swap(owner);
    xe_trace_slice(name, "test", xe_now_us(), 1, NULL);
    xe_trace_owner_swap(was);
}

static void start_for(const char *file, int owner)
{
    xe_status st;
    xe_status_clear(&st);
    cr_assert_eq(xe_trace_start_for(xt_path(file), owner, &st), XE_OK, "%s: %s", file, st.msg);
}

static void stop(const char *file)
{
    xe_status st;
    xe_status_clear(&st);
    cr_assert_eq(xe_trace_stop(xt_path(file), &st), XE_OK, "%s: %s", file, st.msg);
}

/* The slices of file among names, as "a1 b1 " (every name checked; the file must exist). */
static void expect(const char *file, const char *const *names, int n, const char *want)
{
    size_t len;
    char *text = xt_read_file(xt_path(file), &len);
    cr_assert_not_null(text, "%s was not written", file);
    char got[256] = "";
    for (int i = 0; i < n; i++) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"name\":\"%s\"", names[i]);
        if (strstr(text, quoted))
            strcat(strcat(got, names[i]), " ");
    }
    free(text);
    cr_assert_str_eq(got, want, "%s holds [%s], expected [%s]", file, got, want);
}

Test(trace_owners, two_sessions_record_at_once_each_file_its_own_slices)
{
    static const char *const names[] = {"a1", "b1", "none1", "b2", "a2", "none2"};
    int n = sizeof names / sizeof names[0];
    start_for("a.json", 1);
    start_for("b.json", 2);
    slice_of(1, "a1");
    slice_of(2, "b1");
    slice_of(0, "none1");
    stop("a.json");
    expect("a.json", names, n, "a1 none1 ");
    cr_assert(xe_trace_on(), "b is still recording");
    start_for("all.json", 0); /* a whole-process trace, started while b records */
    slice_of(2, "b2");
    slice_of(1, "a2"); /* a session whose file is written: only all.json takes it */
    slice_of(0, "none2");
    stop("b.json");
    expect("b.json", names, n, "b1 none1 b2 none2 ");
    stop("all.json");
    expect("all.json", names, n, "b2 a2 none2 ");
    cr_assert(!xe_trace_on(), "no file is recorded, yet slices are");
    stop("a.json"); /* written already: nothing */
    cr_assert(!xe_trace_on());
}

Test(trace_owners, two_owners_of_one_file_share_it_and_the_last_writes_it)
{
    static const char *const names[] = {"x", "y"};
    start_for("one.json", 1);
    start_for("one.json", 2);
    slice_of(1, "x");
    slice_of(2, "y");
    stop("one.json");
    size_t len;
    char *text = xt_read_file(xt_path("one.json"), &len);
    cr_assert_null(text, "written while its second user records");
    stop("one.json");
    expect("one.json", names, 2, "x y ");
}

Test(trace_owners, an_interruption_writes_every_file)
{
    static const char *const names[] = {"p", "q"};
    start_for("p.json", 1);
    start_for("q.json", 2);
    slice_of(1, "p");
    slice_of(2, "q");
    xe_status st;
    xe_status_clear(&st);
    cr_assert_eq(xe_trace_interrupted(2, &st), XE_OK, "%s", st.msg);
    expect("p.json", names, 2, "p ");
    expect("q.json", names, 2, "q ");
    char *text = xt_read_file(xt_path("q.json"), &(size_t){0});
    cr_assert(text && strstr(text, "\"interrupted\":true"), "q.json is not marked interrupted");
    free(text);
    cr_assert(!xe_trace_on());
    stop("p.json"); /* the session's own stop, after: nothing */
}
