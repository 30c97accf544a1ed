/*
 * One growing array: a pointer, a count and a capacity that the caller
 * keeps in its own struct, grown by doubling through xe_vec_grow. It
 * replaces the hand-written "if (n == cap) { cap *= 2; realloc ... }"
 * blocks of the tree, so each array grows the same way and checks the
 * same overflow. The caller assigns the result only when it is not NULL:
 *
 *     xc_item *v = XE_VEC_GROW(l->v, l->cap, l->n + 1, 8);
 *     if (!v)
 *         return false; // l->v is untouched and still l's
 *     l->v = v;
 *     l->v[l->n++] = x;
 */
#ifndef XLAC_VEC_H
#define XLAC_VEC_H

#include <stddef.h>

/*
 * Room for need (> 0) elements of size elem in items, an array of *cap
 * elements (NULL and 0 at first): items itself when it holds them already,
 * else items reallocated to *cap doubled (first when *cap is 0) until need
 * fits, and *cap set to that. NULL when out of memory or when the size
 * would overflow an int count or a size_t: then items and *cap are
 * untouched, and items is still the caller's to free.
 */
void *xe_vec_grow(void *items, int *cap, int need, int first, size_t elem);

/* xe_vec_grow for array `items` whose capacity is the int lvalue `cap`. */
#define XE_VEC_GROW(items, cap, need, first)                                                       \
    xe_vec_grow((items), &(cap), (need), (first), sizeof *(items))

#endif
