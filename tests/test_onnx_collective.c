/*
 * The ONNX importer's com.xlac domain: AllReduce(reduce=...), AllGather,
 * ReduceScatter and Broadcast(root=...) become the executor's collectives
 * with their attributes; a bad reduce is an error naming the node; other
 * custom domains stay refused. The models are written here with a few
 * lines of protobuf encoding (no onnx package needed).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xlac/xlac.h"

/* A protobuf message being written. */
typedef struct pb {
    unsigned char b[2048];
    size_t n;
} pb;

static void varint(pb *m, uint64_t v)
{
    do {
        cr_assert_lt(m->n, sizeof m->b);
        m->b[m->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void num(pb *m, int field, uint64_t v)
{
    varint(m, (uint64_t)field << 3);
    varint(m, v);
}

static void bytes(pb *m, int field, const void *p, size_t n)
{
    varint(m, (uint64_t)field << 3 | 2);
    varint(m, n);
    cr_assert_leq(m->n + n, sizeof m->b);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void str(pb *m, int field, const char *s)
{
    bytes(m, field, s, strlen(s));
}

static void sub(pb *m, int field, const pb *inner)
{
    bytes(m, field, inner->b, inner->n);
}

/* A node x -> y of domain dom; attr "name=value" (string) or "name:int" or NULL. */
static pb node(const char *type, const char *dom, const char *in, const char *out, const char *attr)
{
    pb n = {.n = 0}, a = {.n = 0};
    str(&n, 1, in);
    str(&n, 2, out);
    str(&n, 3, out); /* the node's name: its output's */
    str(&n, 4, type);
    str(&n, 7, dom);
    if (attr) {
        char name[32];
        const char *eq = strpbrk(attr, "=:");
        snprintf(name, sizeof name, "%.*s", (int)(eq - attr), attr);
        str(&a, 1, name);
        if (*eq == '=') {
            num(&a, 20, 3); /* STRING */
            str(&a, 4, eq + 1);
        } else {
            num(&a, 20, 2); /* INT */
            num(&a, 3, (uint64_t)atoll(eq + 1));
        }
        sub(&n, 5, &a);
    }
    return n;
}

/* A model: input x f32[4,3], the given nodes, output `out`; written to path. */
static void write_model(const char *path, const pb *nodes, int n_nodes, const char *out)
{
    pb o1 = {.n = 0}, o2 = {.n = 0}, d1 = {.n = 0}, d2 = {.n = 0}, shape = {.n = 0}, tensor = {.n = 0};
    pb type = {.n = 0}, vx = {.n = 0}, vy = {.n = 0}, g = {.n = 0}, m = {.n = 0};
    str(&o1, 1, "");
    num(&o1, 2, 17);
    str(&o2, 1, "com.xlac");
    num(&o2, 2, 1);
    num(&d1, 1, 4);
    num(&d2, 1, 3);
    sub(&shape, 1, &d1);
    sub(&shape, 1, &d2);
    num(&tensor, 1, 1); /* FLOAT */
    sub(&tensor, 2, &shape);
    sub(&type, 1, &tensor);
    str(&vx, 1, "x");
    sub(&vx, 2, &type);
    str(&vy, 1, out);
    for (int k = 0; k < n_nodes; k++)
        sub(&g, 1, &nodes[k]);
    str(&g, 2, "g");
    sub(&g, 11, &vx);
    sub(&g, 12, &vy);
    num(&m, 1, 8);
    sub(&m, 8, &o1);
    sub(&m, 8, &o2);
    sub(&m, 7, &g);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(m.b, 1, m.n, f), m.n);
    fclose(f);
}

static const xe_node *find_op(const xe_graph *g, int op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == op)
            return g->nodes[i];
    return NULL;
}

Test(onnx_collective, every_collective_imports)
{
    char path[] = "/tmp/xlac-onnx-coll-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    pb nodes[] = {node("AllReduce", "com.xlac", "x", "a", "reduce=mean"),
                  node("AllGather", "com.xlac", "a", "b", NULL),
                  node("ReduceScatter", "com.xlac", "b", "c", "reduce=max"),
                  node("Broadcast", "com.xlac", "c", "d", "root:0")};
    write_model(path, nodes, 4, "d");
    xe_status st;
    xe_graph *g = xe_onnx_load(path, NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    const xe_node *ar = find_op(g, XE_OP_ALL_REDUCE), *rs = find_op(g, XE_OP_REDUCE_SCATTER);
    cr_assert(ar && rs && find_op(g, XE_OP_ALL_GATHER) && find_op(g, XE_OP_BROADCAST));
    cr_assert_str_eq(xe_node_attr_string(ar, "reduce", ""), "mean");
    cr_assert_str_eq(xe_node_attr_string(rs, "reduce", ""), "max");
    const xe_node *bc = find_op(g, XE_OP_BROADCAST);
    cr_assert_eq(bc->type.shape.dims[0], 4, "a world of one: the leading dim is unchanged");
    xe_graph_destroy(g);
    unlink(path);
}

Test(onnx_collective, bad_reduce_and_other_domains_are_refused)
{
    char path[] = "/tmp/xlac-onnx-coll-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    pb bad[] = {node("AllReduce", "com.xlac", "x", "a", "reduce=median"),
                node("AllReduce", "com.example", "a", "b", NULL), node("Gossip", "com.xlac", "b", "c", NULL)};
    write_model(path, bad, 3, "c");
    xe_status st;
    xe_graph *g = xe_onnx_load(path, NULL, &st);
    cr_assert_null(g);
    const char *want[] = {"node 'a' (AllReduce, domain com.xlac", "reduce='median' must be 'sum', 'mean', 'max' or 'min'",
                          "node 'b' (AllReduce, domain com.example", "only ai.onnx and com.xlac are",
                          "node 'c' (Gossip, domain com.xlac"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        cr_expect(strstr(st.msg, want[k]), "missing '%s' in: %s", want[k], st.msg);
    unlink(path);
}
