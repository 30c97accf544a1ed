/*
 * The EP library's entry points and its objects. onnxruntime opens the
 * library (register_execution_provider_library) and calls
 * CreateEpFactories with its OrtApiBase: the EP refuses, with a status
 * that says why, an onnxruntime older than the API version it is written
 * for (ort_abi.h) or one whose tables do not answer the probes below as
 * ort_api.def records them; otherwise it reads the plugin's configuration
 * from the environment once (XLAC_AUTO_JIT, XLAC_FLAGS: the same words as
 * libxlac.so's; a bad one is an error status here, never an exit) and
 * registers its own launch op and pass with the executor (under names of
 * its own, so that libxlac.so can live in the same process).
 *
 * The factory offers the EP for onnxruntime's CPU device. An EP holds the
 * session's own XLAC_FLAGS words (provider option "flags", the same as
 * xlac.InferenceSession's session configuration). Its pass clusters only
 * graphs the EP itself hands to the executor (a thread-local flag set
 * around those calls), never another host's sessions.
 *
 * At exit (the library's destructor): background compiles finish, then
 * --stats and --summary, as libxlac.so's; an error is printed, the host's
 * exit status is left alone.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xo.h"

#define XO_EXPORT __attribute__((visibility("default")))

/* ---- the plugin's state, once per process ----------------------------------------- */

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static char
    setup_error[XE_STATUS_MSG_MAX]; /* why the plugin could not be set up ("" when it was) */

/* The pass of the EP's own graphs: the plugin's pass; other hosts' sessions are left alone. */
static xe_code ep_pass(xe_graph **g, const xe_pass_ctx *ctx, void *user, xe_status *st)
{
    return xo_in_ep() ? xlac_pass(g, ctx, user, st) : XE_OK;
}

static void setup(void)
{
    xe_status st;
    xe_status_clear(&st);
    xlac_env env;
    xlac_env_read(&env);
    xlac_flags f;
    if (xlac_flags_parse(&f, &env, &st) != XE_OK) {
        snprintf(setup_error, sizeof setup_error, "%s", st.msg);
        return;
    }
    if (f.help) {
        xlac_flags_help(stderr);
        xlac_flags_free(&f);
        snprintf(setup_error, sizeof setup_error, "XLAC_FLAGS=--help: the flags are listed above");
        return;
    }
    xlac_state_init(&xo_g.state);
    if (xlac_plugin_install_as(&xo_g.state, &f, "xlac_ep_launch", "xlac_ep", ep_pass, &st) !=
        XE_OK) {
        xlac_flags_free(&f);
        snprintf(setup_error, sizeof setup_error, "%s", st.msg);
        return;
    }
    xo_g.ready = true;
}

__attribute__((destructor)) static void xo_fini(void)
{
    xlac_state *s = &xo_g.state;
    if (!xo_g.ready)
        return;
    xlac_launch_drain(s);
    if (atomic_load(&s->n_sessions) && s->flags.stats)
        xlac_print_stats(s, stderr);
    xe_status st;
    xe_status_clear(&st);
    if (xlac_report_write(s, 0, &st) != XE_OK)
        fprintf(stderr, "xlac: error: %s\n", st.msg);
    xlac_plugin_shutdown(s);
    xo_g.ready = false;
}

/* ---- the probes: each table entry the EP leans on at once answers as recorded -------- */

/* NULL when the entries answer as ort_api.def says; else the first that does not. */
static const char *probe(const xo_api *a)
{
    OrtStatus *s = XO(a->ort, CreateStatus)(XO_ORT_INVALID_ARGUMENT, "xlac probe");
    if (!s)
        return "CreateStatus";
    bool ok = XO(a->ort, GetErrorCode)(s) == XO_ORT_INVALID_ARGUMENT;
    const char *msg = ok ? XO(a->ort, GetErrorMessage)(s) : NULL;
    ok = msg && !strcmp(msg, "xlac probe");
    XO(a->ort, ReleaseStatus)(s);
    if (!ok)
        return "GetErrorCode/GetErrorMessage";
    OrtKeyValuePairs *kv = NULL;
    XO(a->ort, CreateKeyValuePairs)(&kv);
    if (!kv)
        return "CreateKeyValuePairs";
    XO(a->ort, AddKeyValuePair)(kv, "xlac", "probe");
    const char *v = XO(a->ort, GetKeyValue)(kv, "xlac");
    ok = v && !strcmp(v, "probe");
    XO(a->ort, ReleaseKeyValuePairs)(kv);
    if (!ok)
        return "AddKeyValuePair/GetKeyValue";
    const char *build = XO(a->ort, GetBuildInfoString)();
    return build && strstr(build, "ORT") ? NULL : "GetBuildInfoString";
}

/* ---- the EP -------------------------------------------------------------------------- */

typedef struct xo_ep {
    OrtEp ep; /* first: onnxruntime's pointer is ours */
    const xo_api *a;
    char *config; /* the session's XLAC_FLAGS words (provider option "flags"), or NULL */
} xo_ep;

static const char *ep_name(const OrtEp *self)
{
    (void)self;
    return XO_EP_NAME;
}

static OrtStatus *ep_capability(OrtEp *self, const OrtGraph *graph, OrtEpGraphSupportInfo *info)
{
    xo_ep *e = (xo_ep *)self;
    xe_status st;
    xe_status_clear(&st);
    xo_enter(true);
    xe_code c = xo_capability(e->a, graph, info, e->config, &st);
    xo_enter(false);
    return c == XE_OK ? NULL : xo_status(e->a, XO_ORT_EP_FAIL, "%s", st.msg);
}

static OrtStatus *ep_compile(OrtEp *self, const OrtGraph **graphs, const OrtNode **fused,
                             size_t count, OrtNodeComputeInfo **infos, OrtNode **ep_context_nodes)
{
    xo_ep *e = (xo_ep *)self;
    (void)ep_context_nodes; /* no EPContext models: onnxruntime asks for them only when told to */
    xe_status st;
    xe_status_clear(&st);
    xe_code c = XE_OK;
    for (size_t k = 0; k < count; k++)
        infos[k] = NULL;
    xo_enter(true);
    for (size_t k = 0; k < count && c == XE_OK; k++)
        c = xo_compile(e->a, graphs[k], fused[k], e->config, &infos[k], &st);
    xo_enter(false);
    if (c == XE_OK)
        return NULL;
    for (size_t k = 0; k < count; k++) {
        xo_compute_info_free(infos[k]);
        infos[k] = NULL;
    }
    return xo_status(e->a, XO_ORT_EP_FAIL, "%s", st.msg);
}

static void ep_release_infos(OrtEp *self, OrtNodeComputeInfo **infos, size_t count)
{
    (void)self;
    for (size_t k = 0; k < count; k++)
        xo_compute_info_free(infos[k]);
}

static const char *ep_compat(OrtEp *self, const OrtGraph *graph)
{
    (void)self, (void)graph;
    return "xlac " XO_EP_VERSION;
}

/* Provider option key (onnxruntime puts them in the session's config as "ep.<name>.<key>"),
 * malloc'd or NULL. */
static char *session_option(const xo_api *a, const OrtSessionOptions *o, const char *key)
{
    int has = 0;
    char value[4096];
    size_t size = sizeof value;
    OrtStatus *s = XO(a->ort, HasSessionConfigEntry)(o, key, &has);
    if (s || !has) {
        if (s)
            XO(a->ort, ReleaseStatus)(s);
        return NULL;
    }
    if ((s = XO(a->ort, GetSessionConfigEntry)(o, key, value, &size))) {
        XO(a->ort, ReleaseStatus)(s);
        return NULL;
    }
    return strdup(value);
}

static OrtStatus *ep_new(const xo_api *a, const OrtSessionOptions *o, OrtEp **out)
{
    xo_ep *e = calloc(1, sizeof *e);
    if (!e)
        return xo_status(a, XO_ORT_FAIL, "out of memory");
    e->ep = (OrtEp){
        .ort_version_supported = XO_ORT_API_VERSION,
        .GetName = ep_name,
        .GetCapability = ep_capability,
        .Compile = ep_compile,
        .ReleaseNodeComputeInfos = ep_release_infos,
        .GetCompiledModelCompatibilityInfo = ep_compat,
    };
    e->a = a;
    e->config = session_option(a, o, "ep.xlacexecutionprovider.flags");
    if (!e->config)
        e->config = session_option(a, o, "ep." XO_EP_NAME ".flags");
    if (e->config) { /* checked now: a bad word fails the session here, naming it */
        int id;
        xe_status st;
        xe_status_clear(&st);
        if (xlac_config_for(&xo_g.state, e->config, &id, &st) != XE_OK) {
            free(e->config);
            free(e);
            return xo_status(a, XO_ORT_INVALID_ARGUMENT, "provider option flags: %s", st.msg);
        }
    }
    *out = &e->ep;
    return NULL;
}

/* ---- the factory ------------------------------------------------------------------------ */

typedef struct xo_factory {
    OrtEpFactory f; /* first */
    xo_api api;
} xo_factory;

static const char *f_name(const OrtEpFactory *self)
{
    (void)self;
    return XO_EP_NAME;
}

static const char *f_vendor(const OrtEpFactory *self)
{
    (void)self;
    return XO_EP_VENDOR;
}

static uint32_t f_vendor_id(const OrtEpFactory *self)
{
    (void)self;
    return 0;
}

static const char *f_version(const OrtEpFactory *self)
{
    (void)self;
    return XO_EP_VERSION;
}

/* The CPU device: xlac's code generator compiles for it (the GPU is not offered yet). */
static OrtStatus *f_devices(OrtEpFactory *self, const OrtHardwareDevice *const *devices, size_t n,
                            OrtEpDevice **ep_devices, size_t max, size_t *n_ep_devices)
{
    xo_factory *f = (xo_factory *)self;
    *n_ep_devices = 0;
    for (size_t k = 0; k < n && *n_ep_devices < max; k++) {
        if (XO(f->api.ort, HardwareDevice_Type)(devices[k]) != XO_HW_CPU)
            continue;
        OrtEpDevice *d = NULL;
        OrtStatus *s = XO(f->api.ep, CreateEpDevice)(self, devices[k], NULL, NULL, &d);
        if (s)
            return s;
        ep_devices[(*n_ep_devices)++] = d;
        break; /* one CPU device is all the EP runs on */
    }
    return NULL;
}

static OrtStatus *f_create_ep(OrtEpFactory *self, const OrtHardwareDevice *const *devices,
                              const OrtKeyValuePairs *const *metadata, size_t n,
                              const OrtSessionOptions *options, const OrtLogger *logger,
                              OrtEp **out)
{
    xo_factory *f = (xo_factory *)self;
    (void)devices, (void)metadata, (void)n, (void)logger;
    *out = NULL;
    return ep_new(&f->api, options, out);
}

static void f_release_ep(OrtEpFactory *self, OrtEp *ep)
{
    (void)self;
    xo_ep *e = (xo_ep *)ep;
    if (e)
        free(e->config);
    free(e);
}

static OrtStatus *f_validate(OrtEpFactory *self, const OrtHardwareDevice *const *devices, size_t n,
                             const char *info, int *compatibility)
{
    (void)self, (void)devices, (void)n, (void)info;
    *compatibility =
        0; /* OrtCompiledModelCompatibility_EP_NOT_APPLICABLE: xlac writes no compiled models */
    return NULL;
}

static OrtStatus *f_allocator(OrtEpFactory *self, const OrtMemoryInfo *info,
                              const OrtKeyValuePairs *options, OrtAllocator **out)
{
    (void)self, (void)info, (void)options;
    *out = NULL; /* onnxruntime's CPU allocator */
    return NULL;
}

static void f_release_allocator(OrtEpFactory *self, OrtAllocator *allocator)
{
    (void)self, (void)allocator;
}

static OrtStatus *f_data_transfer(OrtEpFactory *self, OrtDataTransferImpl **out)
{
    (void)self;
    *out = NULL; /* CPU memory only: nothing to copy between devices */
    return NULL;
}

static bool f_stream_aware(const OrtEpFactory *self)
{
    (void)self;
    return false;
}

static xo_factory factory = {
    .f =
        {
            .ort_version_supported = XO_ORT_API_VERSION,
            .GetName = f_name,
            .GetVendor = f_vendor,
            .GetSupportedDevices = f_devices,
            .CreateEp = f_create_ep,
            .ReleaseEp = f_release_ep,
            .GetVendorId = f_vendor_id,
            .GetVersion = f_version,
            .ValidateCompiledModelCompatibilityInfo = f_validate,
            .CreateAllocator = f_allocator,
            .ReleaseAllocator = f_release_allocator,
            .CreateDataTransfer = f_data_transfer,
            .IsStreamAware = f_stream_aware,
        },
};

/* ---- the library's entry points ----------------------------------------------------------- */

/* A status of the oldest table every onnxruntime has (version 1: CreateStatus is its entry 0). */
static OrtStatus *refuse(const OrtApiBase *base, const char *fmt, const char *what)
{
    const xo_fn *old = base && base->GetApi ? base->GetApi(1) : NULL;
    const char *version =
        base && base->GetVersionString ? base->GetVersionString() : "of unknown version";
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, version, what);
    fprintf(stderr, "%s\n", msg);
    return old ? XO(old, CreateStatus)(XO_ORT_FAIL, msg) : NULL;
}

XO_EXPORT OrtStatus *CreateEpFactories(const char *registered_name, const OrtApiBase *base,
                                       const OrtLogger *logger, OrtEpFactory **factories,
                                       size_t max, size_t *n_factories)
{
    (void)registered_name, (void)logger;
    *n_factories = 0;
    const xo_fn *ort = base && base->GetApi ? base->GetApi(XO_ORT_API_VERSION) : NULL;
    if (!ort)
        return refuse(base,
                      "xlac: XlacExecutionProvider needs onnxruntime " XO_ORT_MIN_RELEASE
                      " or newer (its C API version 23); this onnxruntime is %s%s: not registered",
                      "");
    xo_api a = {.base = base, .ort = ort, .ep = XO(ort, GetEpApi)()};
    const char *bad = a.ep ? probe(&a) : "GetEpApi";
    if (bad)
        return refuse(base,
                      "xlac: onnxruntime %s does not answer as plugin/ort_ep/ort_api.def records "
                      "(entry %s): XlacExecutionProvider not registered",
                      bad);
    pthread_once(&setup_once, setup);
    if (!xo_g.ready)
        return refuse(base, "xlac: XlacExecutionProvider not registered (onnxruntime %s): %s",
                      setup_error);
    if (max < 1)
        return refuse(base, "xlac: onnxruntime %s offers no room for a factory%s", "");
    factory.api = a;
    factories[0] = &factory.f;
    *n_factories = 1;
    return NULL;
}

XO_EXPORT OrtStatus *ReleaseEpFactory(OrtEpFactory *f)
{
    (void)f; /* the one static factory: the plugin's state is freed at exit */
    return NULL;
}
