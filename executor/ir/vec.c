/*
 * xe_vec_grow (xlac/vec.h): the tree's one growing array. Doubling keeps
 * pushes amortised constant time; the checks keep a count in an int and a
 * byte size in a size_t, so a huge request fails cleanly instead of
 * wrapping around.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "xlac/vec.h"

void *xe_vec_grow(void *items, int *cap, int need, int first, size_t elem)
{
    if (need <= *cap)
        return items;
    if (need < 0 || first < 1 || elem == 0)
        return NULL;
    int64_t grown = *cap > 0 ? *cap : first;
    while (grown < need)
        grown *= 2;
    if (grown > INT_MAX || (uint64_t)grown > SIZE_MAX / elem)
        return NULL;
    void *v = realloc(items, (size_t)grown * elem);
    if (!v)
        return NULL;
    *cap = (int)grown;
    return v;
}
