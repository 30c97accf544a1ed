/*
 * The incremental cycle detector (cluster/cycles.c) against a brute-force
 * reachability oracle: edge insertions that would close a cycle are
 * refused, the others keep a valid topological order, and contractions
 * are allowed exactly when no other path joins the two nodes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/cycles.h"

Test(cycles, chain_and_back_edge)
{
    xc_cycles *c = xc_cycles_new(4);
    cr_assert_not_null(c);
    cr_assert_eq(xc_cycles_insert_edge(c, 0, 1), 1);
    cr_assert_eq(xc_cycles_insert_edge(c, 1, 2), 1);
    cr_assert_eq(xc_cycles_insert_edge(c, 2, 3), 1);
    cr_assert(xc_cycles_is_reachable(c, 0, 3));
    cr_assert_not(xc_cycles_is_reachable(c, 3, 0));
    cr_assert_eq(xc_cycles_insert_edge(c, 3, 0), 0, "3 -> 0 closes a cycle");
    cr_assert_not(xc_cycles_has_edge(c, 3, 0));
    cr_assert_eq(xc_cycles_insert_edge(c, 2, 2), 1, "self edges are ignored");
    xc_cycles_destroy(c);
}

Test(cycles, insertion_against_the_order_reorders)
{
    xc_cycles *c = xc_cycles_new(4);
    cr_assert_eq(xc_cycles_insert_edge(c, 3, 0), 1);
    cr_assert_eq(xc_cycles_insert_edge(c, 2, 3), 1);
    cr_assert_lt(xc_cycles_rank(c, 3), xc_cycles_rank(c, 0));
    cr_assert_lt(xc_cycles_rank(c, 2), xc_cycles_rank(c, 3));
    cr_assert_eq(xc_cycles_insert_edge(c, 0, 2), 0);
    xc_cycles_destroy(c);
}

/* The classic case: a -> u -> b and a -> b: a and b must not merge. */
Test(cycles, contraction_refused_through_outside_node)
{
    enum { A, U, B };
    xc_cycles *c = xc_cycles_new(3);
    xc_cycles_insert_edge(c, A, U);
    xc_cycles_insert_edge(c, U, B);
    xc_cycles_insert_edge(c, A, B);
    cr_assert_eq(xc_cycles_contract(c, A, B), 0);
    cr_assert(xc_cycles_has_edge(c, A, B), "a refused contraction changes nothing");
    cr_assert_eq(xc_cycles_contract(c, A, U), 1);
    cr_assert_eq(xc_cycles_contract(c, A, B), 1);
    xc_cycles_destroy(c);
}

Test(cycles, contraction_moves_edges)
{
    /* 0 -> 1 -> 2, 3 -> 1: contract 1 into 0: 3 -> 0 and 0 -> 2 */
    xc_cycles *c = xc_cycles_new(4);
    xc_cycles_insert_edge(c, 0, 1);
    xc_cycles_insert_edge(c, 1, 2);
    xc_cycles_insert_edge(c, 3, 1);
    cr_assert_eq(xc_cycles_contract(c, 0, 1), 1);
    cr_assert(xc_cycles_has_edge(c, 0, 2));
    cr_assert(xc_cycles_has_edge(c, 3, 0));
    cr_assert_not(xc_cycles_has_edge(c, 0, 1));
    cr_assert_lt(xc_cycles_rank(c, 3), xc_cycles_rank(c, 0));
    xc_cycles_destroy(c);
}

/* ---- against a brute-force oracle ---------------------------------------- */

#define N 24

typedef struct oracle {
    bool edge[N][N];
    bool alive[N];
} oracle;

static bool reach(const oracle *o, int x, int y)
{
    bool seen[N] = {0};
    int stack[N], sp = 0;
    stack[sp++] = x;
    seen[x] = true;
    while (sp) {
        int v = stack[--sp];
        if (v == y)
            return true;
        for (int w = 0; w < N; w++)
            if (o->edge[v][w] && !seen[w]) {
                seen[w] = true;
                stack[sp++] = w;
            }
    }
    return false;
}

static void check_ranks(xc_cycles *c, const oracle *o)
{
    for (int x = 0; x < N; x++)
        for (int y = 0; y < N; y++)
            if (o->edge[x][y])
                cr_assert_lt(xc_cycles_rank(c, x), xc_cycles_rank(c, y), "edge %d->%d", x, y);
}

static void random_round(unsigned seed)
{
    srand(seed);
    oracle o = {0};
    for (int i = 0; i < N; i++)
        o.alive[i] = true;
    xc_cycles *c = xc_cycles_new(N);
    for (int step = 0; step < 200; step++) {
        int x = rand() % N, y = rand() % N;
        if (!o.alive[x] || !o.alive[y] || x == y)
            continue;
        if (rand() % 4) {
            bool cycle = reach(&o, y, x);
            int r = xc_cycles_insert_edge(c, x, y);
            cr_assert_eq(r, cycle ? 0 : 1, "seed %u: insert %d->%d", seed, x, y);
            if (!cycle)
                o.edge[x][y] = true;
        } else {
            bool ab = o.edge[x][y], ba = o.edge[y][x];
            o.edge[x][y] = o.edge[y][x] = false;
            bool refuse = reach(&o, x, y) || reach(&o, y, x);
            o.edge[x][y] = ab;
            o.edge[y][x] = ba;
            int r = xc_cycles_contract(c, x, y);
            cr_assert_eq(r, refuse ? 0 : 1, "seed %u: contract %d,%d", seed, x, y);
            if (!refuse) {
                for (int z = 0; z < N; z++) {
                    if (o.edge[y][z] && z != x)
                        o.edge[x][z] = true;
                    if (o.edge[z][y] && z != x)
                        o.edge[z][x] = true;
                    o.edge[y][z] = o.edge[z][y] = false;
                }
                o.edge[x][y] = o.edge[y][x] = false;
                o.alive[y] = false;
            }
        }
        check_ranks(c, &o);
        for (int a = 0; a < N; a++)
            for (int b = 0; b < N; b++)
                if (o.alive[a] && o.alive[b])
                    cr_assert_eq(xc_cycles_has_edge(c, a, b), o.edge[a][b]);
    }
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++)
            if (o.alive[a] && o.alive[b])
                cr_assert_eq(xc_cycles_is_reachable(c, a, b), a == b || reach(&o, a, b));
    xc_cycles_destroy(c);
}

Test(cycles, random_against_oracle)
{
    for (unsigned seed = 1; seed <= 60; seed++)
        random_round(seed);
}
