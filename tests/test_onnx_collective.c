/*
 * The ONNX importer's com.xlac domain: AllReduce(reduce=...), AllGather,
 * ReduceScatter and Broadcast(root=...) become the executor's collectives
 * with their attributes; a bad reduce is an error naming the node; other
 * custom domains stay refused. The models are written here with a few
 * lines of protobuf encoding (support/pb.h: no onnx package needed).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/pb.h"
#include "xlac/xlac.h"

/* A node x -> y of domain dom; attr "name=value" (string) or "name:int" or NULL. */
static pb node(const char *type, const char *dom, const char *in, const char *out, const char *attr)
{
    pb n = {0}, a = {0};
    pb_str(&n, 1, in);
    pb_str(&n, 2, out);
    pb_str(&n, 3, out); /* the node's name: its output's */
    pb_str(&n, 4, type);
    pb_str(&n, 7, dom);
    if (attr) {
        char name[32];
        const char *eq = strpbrk(attr, "=:");
        snprintf(name, sizeof name, "%.*s", (int)(eq - attr), attr);
        pb_str(&a, 1, name);
        if (*eq == '=') {
            pb_int(&a, 20, 3); /* STRING */
            pb_str(&a, 4, eq + 1);
        } else {
            pb_int(&a, 20, 2); /* INT */
            pb_int(&a, 3, (uint64_t)atoll(eq + 1));
        }
        pb_msg(&n, 5, &a);
    }
    return n;
}

/* A model: input x f32[4,3], the given nodes, output `out`; written to path. */
static void write_model(const char *path, pb *nodes, int n_nodes, const char *out)
{
    pb o1 = {0}, o2 = {0}, d1 = {0}, d2 = {0}, shape = {0}, tensor = {0};
    pb type = {0}, vx = {0}, vy = {0}, g = {0}, m = {0};
    pb_str(&o1, 1, "");
    pb_int(&o1, 2, 17);
    pb_str(&o2, 1, "com.xlac");
    pb_int(&o2, 2, 1);
    pb_int(&d1, 1, 4);
    pb_int(&d2, 1, 3);
    pb_msg(&shape, 1, &d1);
    pb_msg(&shape, 1, &d2);
    pb_int(&tensor, 1, 1); /* FLOAT */
    pb_msg(&tensor, 2, &shape);
    pb_msg(&type, 1, &tensor);
    pb_str(&vx, 1, "x");
    pb_msg(&vx, 2, &type);
    pb_str(&vy, 1, out);
    for (int k = 0; k < n_nodes; k++)
        pb_msg(&g, 1, &nodes[k]);
    pb_str(&g, 2, "g");
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 12, &vy);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o1);
    pb_msg(&m, 8, &o2);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
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
                          "node 'b' (AllReduce, domain com.example", "only ai.onnx, com.xlac and com.microsoft are",
                          "node 'c' (Gossip, domain com.xlac"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        cr_expect(strstr(st.msg, want[k]), "missing '%s' in: %s", want[k], st.msg);
    unlink(path);
}
