/*
 * xe_text, the one growing text buffer: growth far past its first
 * allocation, printf formats, raw bytes, truncation, the out-of-memory flag
 * (set by an append too large to hold, never by a NULL-buffer pointer
 * sum), and take/free.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/text.h"

Test(text, grows_past_many_kib)
{
    xe_text t = {0};
    for (int i = 0; i < 20000; i++)
        xe_text_printf(&t, "%05d,", i);
    cr_assert(!t.oom);
    cr_assert_eq(t.len, 20000 * 6);
    cr_assert_eq(strlen(t.buf), t.len);
    cr_assert(t.cap > t.len);
    for (int i = 0; i < 20000; i += 997) {
        char want[8];
        snprintf(want, sizeof want, "%05d,", i);
        cr_assert(memcmp(t.buf + (size_t)i * 6, want, 6) == 0, "entry %d", i);
    }
    xe_text_free(&t);
    cr_assert_null(t.buf);
    cr_assert_eq(t.len, 0);
}

Test(text, one_append_larger_than_the_first_allocation)
{
    xe_text t = {0};
    xe_text_printf(&t, "%s", "ab");
    xe_text_printf(&t, "%*s|", 100000, "x");
    cr_assert(!t.oom);
    cr_assert_eq(t.len, 2 + 100000 + 1);
    cr_assert_eq(t.buf[t.len - 1], '|');
    cr_assert_eq(t.buf[t.len - 2], 'x');
    cr_assert_eq(t.buf[t.len], '\0');
    xe_text_free(&t);
}

Test(text, formats)
{
    xe_text t = {0};
    xe_text_printf(&t, "%d %lld %s %c %.3f %a %x|", -7, 1LL << 40, "str", 'q', 2.5, 1.0, 255u);
    xe_text_printf(&t, "%%%s", "");
    cr_assert_str_eq(t.buf, "-7 1099511627776 str q 2.500 0x1p+0 ff|%");
    xe_text_free(&t);
}

Test(text, raw_bytes_and_truncate)
{
    xe_text t = {0};
    xe_text_append(&t, "abc", 3);
    xe_text_append(&t, "", 0);
    xe_text_printf(&t, "-%d", 42);
    cr_assert_str_eq(t.buf, "abc-42");
    size_t mark = t.len;
    xe_text_printf(&t, " tail");
    xe_text_truncate(&t, mark);
    cr_assert_str_eq(t.buf, "abc-42");
    cr_assert_eq(t.len, 6);
    xe_text_truncate(&t, 99); /* past the end: nothing to cut */
    cr_assert_eq(t.len, 6);
    xe_text_append(&t, "x\0y", 3);
    cr_assert_eq(t.len, 9);
    cr_assert(memcmp(t.buf + 6, "x\0y", 4) == 0);
    xe_text_free(&t);
}

Test(text, take_hands_over_and_empties)
{
    xe_text t = {0};
    char *empty = xe_text_take(&t);
    cr_assert_str_eq(empty, "");
    free(empty);
    xe_text_printf(&t, "hello %s", "world");
    char *s = xe_text_take(&t);
    cr_assert_str_eq(s, "hello world");
    cr_assert_null(t.buf);
    cr_assert_eq(t.len, 0);
    cr_assert_eq(t.cap, 0);
    xe_text_printf(&t, "again");
    cr_assert_str_eq(t.buf, "again");
    free(s);
    xe_text_free(&t);
}

Test(text, huge_append_sets_the_flag_and_take_says_so)
{
    xe_text t = {0};
    xe_text_printf(&t, "kept");
    xe_text_append(&t, "x", SIZE_MAX - 8); /* no buffer can hold it: never read */
    cr_assert(t.oom);
    cr_assert_str_eq(t.buf, "kept");
    xe_text_printf(&t, "dropped");
    xe_text_append(&t, "y", 1);
    cr_assert_eq(t.len, 4, "appends after a failure are no-ops");
    cr_assert_null(xe_text_take(&t));
    cr_assert_null(t.buf);
    cr_assert(!t.oom, "take empties the buffer, flag included");
}

Test(text, unprintable_format_sets_the_flag)
{
    xe_text t = {0};
    volatile int wide = INT_MAX; /* volatile: the compiler must not see the overflow */
    xe_text_printf(&t, "%*s%*s", wide, "", wide, ""); /* longer than int can count */
    cr_assert(t.oom);
    cr_assert_null(t.buf, "nothing allocated for a failed first append");
    xe_text_free(&t);
}
