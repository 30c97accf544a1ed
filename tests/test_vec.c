/*
 * The growing array (xlac/vec.h): it keeps what it holds as it grows,
 * doubles from its first capacity, hands the same array back when there
 * is room, and refuses a size that would overflow without touching the
 * caller's array.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "xlac/vec.h"

Test(vec, grows_by_doubling_and_keeps_its_elements)
{
    int *v = NULL, n = 0, cap = 0;
    for (int k = 0; k < 1000; k++) {
        int *grown = XE_VEC_GROW(v, cap, n + 1, 4);
        cr_assert_not_null(grown);
        v = grown;
        v[n++] = k;
        cr_assert_geq(cap, n);
    }
    cr_assert_eq(cap, 1024, "4 doubled 8 times is 1024, got %d", cap);
    for (int k = 0; k < n; k++)
        cr_assert_eq(v[k], k);
    free(v);
}

Test(vec, room_enough_is_the_same_array)
{
    int cap = 0;
    double *v = XE_VEC_GROW((double *)NULL, cap, 3, 8);
    cr_assert_not_null(v);
    cr_assert_eq(cap, 8);
    cr_assert_eq(XE_VEC_GROW(v, cap, 8, 8), v);
    cr_assert_eq(cap, 8);
    double *w = XE_VEC_GROW(v, cap, 40, 8); /* doubled until it fits: 16, 32, 64 */
    cr_assert_not_null(w);
    cr_assert_eq(cap, 64);
    free(w);
}

Test(vec, an_overflowing_size_leaves_the_array_alone)
{
    int cap = 0;
    char *v = XE_VEC_GROW((char *)NULL, cap, 16, 16);
    cr_assert_not_null(v);
    v[0] = 'x';
    cr_assert_null(xe_vec_grow(v, &cap, INT_MAX, 16, SIZE_MAX / 4), "a byte size past SIZE_MAX");
    cr_assert_null(XE_VEC_GROW(v, cap, INT_MAX, 16), "a capacity past INT_MAX");
    cr_assert_eq(cap, 16);
    cr_assert_eq(v[0], 'x');
    free(v);
}
