/*
 * The cpu_debug device (executor/devices/cpu_debug/, docs/adding-a-backend.md): a
 * device added as one folder plus one registry line. Its freed buffers are
 * poisoned, and a graph placed on it runs through the executor's device
 * paths (every value copied to it and back) and agrees bit for bit with
 * the same graph on the CPU. Built only with -DXLAC_DEVICE_CPU_DEBUG=ON
 * (scripts/test.sh's plain build); elsewhere the tests say they skipped.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "support/ref.h"
#include "xlac/io.h"
#include "xlac/session.h"

static xe_status st;

static void need_debug_device(void)
{
    if (!xe_device_built(XE_DEV_EXTRA))
        cr_skip_test("skipped: cpu_debug device not built (configure with -DXLAC_DEVICE_CPU_DEBUG=ON)");
}

Test(device_debug, is_in_the_registry_and_never_placed_by_itself)
{
    need_debug_device();
    cr_assert_str_eq(xe_device_name(XE_DEV_EXTRA), "DEBUG:0");
    cr_assert(xe_device_available(XE_DEV_EXTRA));
    cr_assert_not(xe_device_host_memory(XE_DEV_EXTRA));
    cr_assert_not(xe_device_auto_place(XE_DEV_EXTRA), "a test device is never chosen by placement");
    xe_device d;
    cr_assert(xe_device_by_word("debug", 5, &d) && d == XE_DEV_EXTRA);
}

Test(device_debug, freed_memory_is_poisoned)
{
    need_debug_device();
    xe_shape s = {.rank = 1, .dims = {16}};
    xe_tensor *t = xe_tensor_new(XE_F32, &s, XE_DEV_EXTRA, &st);
    cr_assert_not_null(t, "%s", st.msg);
    float *p = t->data;
    for (int i = 0; i < 16; i++)
        p[i] = (float)i;
    xe_tensor_release(t); /* the buffer waits in the device's quarantine, poisoned */
    for (int i = 0; i < 16; i++)
        cr_assert(isnan(p[i]), "element %d after free: %g", i, p[i]);
}

/* Runs examples/mlp.xg on the CPU or on dev; outputs into *y (a host tensor). */
static void run_mlp(xe_device dev, xe_tensor *const *in, xe_tensor **y)
{
    xe_graph *g = xe_parse_file(XLAC_SOURCE_DIR "/examples/mlp.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU, .device = dev}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    const xe_graph *pg = xe_session_graph(s);
    int on_dev = 0;
    for (int i = 0; i < pg->n_nodes; i++)
        on_dev += pg->nodes[i]->device == dev;
    if (dev != XE_DEV_CPU)
        cr_assert_geq(on_dev, 6, "the graph's ops run on %s (%d did)", xe_device_name(dev), on_dev);
    for (int k = 0; k < 2; k++) { /* a second run reuses what the first freed */
        cr_assert_eq(xe_session_run(s, in, y, &st), XE_OK, "%s", st.msg);
        if (k == 0)
            xe_tensor_release(*y);
    }
    xe_session_destroy(s);
}

Test(device_debug, a_graph_on_it_agrees_with_the_cpu_bit_for_bit)
{
    need_debug_device();
    const int64_t dims[5][2] = {{64, 128}, {128, 256}, {256, 1}, {256, 128}, {128, 1}};
    xe_tensor *in[5];
    for (int k = 0; k < 5; k++) {
        xe_shape s = {.rank = dims[k][1] == 1 ? 1 : 2, .dims = {dims[k][0], dims[k][1]}};
        in[k] = ref_random_tensor(XE_F32, &s, -1, 1);
    }
    xe_tensor *cpu = NULL, *dbg = NULL;
    run_mlp(XE_DEV_CPU, in, &cpu);
    run_mlp(XE_DEV_EXTRA, in, &dbg);
    cr_assert_eq(cpu->device, XE_DEV_CPU);
    cr_assert_eq(dbg->device, XE_DEV_CPU, "outputs come back to the host");
    cr_assert_eq(cpu->nbytes, dbg->nbytes);
    cr_assert(memcmp(cpu->data, dbg->data, cpu->nbytes) == 0, "cpu_debug differs from the CPU");
    const float *y = dbg->data;
    for (int64_t i = 0; i < xe_tensor_numel(dbg); i++)
        cr_assert(!isnan(y[i]), "NaN at %lld: a poisoned buffer was read", (long long)i);
    xe_tensor_release(cpu);
    xe_tensor_release(dbg);
    for (int k = 0; k < 5; k++)
        xe_tensor_release(in[k]);
}
