/*
 * What the EP knows of onnxruntime's C ABI, declared here because no
 * header of onnxruntime can be part of this project: opaque handles, the
 * constants it passes, the tables it calls (ort_api.def, by position) and
 * the structs it fills for onnxruntime (OrtEpFactory, OrtEp,
 * OrtNodeComputeInfo, OrtNodeFusionOptions: their members in the headers'
 * order, up to API version XO_ORT_API_VERSION).
 *
 * A table is a const array of function pointers: XO(api, Name) is entry
 * Name of it, typed by its row in ort_api.def, so a call reads
 * `XO(a, Graph_GetNumNodes)(graph, &n)`.
 */
#ifndef XO_ORT_ABI_H
#define XO_ORT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The API version the EP is written against: onnxruntime 1.23. Older libraries are refused. */
#define XO_ORT_API_VERSION 23
#define XO_ORT_MIN_RELEASE "1.23"

typedef struct OrtStatus OrtStatus;
typedef struct OrtValue OrtValue;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtOpAttr OrtOpAttr;
typedef struct OrtValueInfo OrtValueInfo;
typedef struct OrtNode OrtNode;
typedef struct OrtGraph OrtGraph;
typedef struct OrtKeyValuePairs OrtKeyValuePairs;
typedef struct OrtHardwareDevice OrtHardwareDevice;
typedef struct OrtEpDevice OrtEpDevice;
typedef struct OrtLogger OrtLogger;
typedef struct OrtEpGraphSupportInfo OrtEpGraphSupportInfo;
typedef struct OrtNodeComputeContext OrtNodeComputeContext;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtMemoryDevice OrtMemoryDevice;
typedef struct OrtAllocator OrtAllocator;
typedef struct OrtDataTransferImpl OrtDataTransferImpl;
typedef struct OrtSyncStreamImpl OrtSyncStreamImpl;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtEpFactory OrtEpFactory;
typedef struct OrtEp OrtEp;

/* OrtErrorCode */
enum {
    XO_ORT_OK = 0,
    XO_ORT_FAIL = 1,
    XO_ORT_INVALID_ARGUMENT = 2,
    XO_ORT_NOT_IMPLEMENTED = 9,
    XO_ORT_EP_FAIL = 11
};
/* OrtOpAttrType */
enum {
    XO_ATTR_UNDEFINED,
    XO_ATTR_INT,
    XO_ATTR_INTS,
    XO_ATTR_FLOAT,
    XO_ATTR_FLOATS,
    XO_ATTR_STRING,
    XO_ATTR_STRINGS,
    XO_ATTR_GRAPH,
    XO_ATTR_TENSOR
};
/* ONNXType */
enum { XO_ONNX_TYPE_TENSOR = 1 };
/* OrtHardwareDeviceType */
enum { XO_HW_CPU = 0, XO_HW_GPU = 1, XO_HW_NPU = 2 };

/* struct OrtApiBase: what OrtGetApiBase and CreateEpFactories hand over. */
typedef struct OrtApiBase {
    const void *(*GetApi)(uint32_t version); /* NULL when the library does not have that version */
    const char *(*GetVersionString)(void);
} OrtApiBase;

typedef void (*xo_fn)(void);

#define XO_API(index, since, ret, name, params)                                                    \
    typedef ret(*xo_t_##name) params;                                                              \
    enum { XO_I_##name = index };
#define XO_EPAPI(index, since, ret, name, params)                                                  \
    typedef ret(*xo_t_##name) params;                                                              \
    enum { XO_I_##name = index };
typedef struct OrtNodeFusionOptions OrtNodeFusionOptions;
#include "ort_api.def"

/* Entry name of table api (OrtApi or OrtEpApi, as const xo_fn *). */
#define XO(api, name) ((xo_t_##name)(api)[XO_I_##name])

/* struct OrtNodeFusionOptions (1.23). */
struct OrtNodeFusionOptions {
    uint32_t ort_version_supported;
    bool drop_constant_initializers;
};

/* struct OrtNodeComputeInfo (1.23). */
typedef struct OrtNodeComputeInfo OrtNodeComputeInfo;
struct OrtNodeComputeInfo {
    uint32_t ort_version_supported;
    OrtStatus *(*CreateState)(OrtNodeComputeInfo *self, OrtNodeComputeContext *ctx, void **state);
    OrtStatus *(*Compute)(OrtNodeComputeInfo *self, void *state, OrtKernelContext *ctx);
    void (*ReleaseState)(OrtNodeComputeInfo *self, void *state);
};

/* struct OrtEp, the members up to 1.23 (optional ones NULL). */
struct OrtEp {
    uint32_t ort_version_supported;
    const char *(*GetName)(const OrtEp *self);
    OrtStatus *(*GetCapability)(OrtEp *self, const OrtGraph *graph, OrtEpGraphSupportInfo *info);
    OrtStatus *(*Compile)(OrtEp *self, const OrtGraph **graphs, const OrtNode **fused_nodes,
                          size_t count, OrtNodeComputeInfo **infos, OrtNode **ep_context_nodes);
    void (*ReleaseNodeComputeInfos)(OrtEp *self, OrtNodeComputeInfo **infos, size_t count);
    OrtStatus *(*GetPreferredDataLayout)(OrtEp *self, int *layout);
    OrtStatus *(*ShouldConvertDataLayoutForOp)(OrtEp *self, const char *domain, const char *op_type,
                                               int layout, int *should_convert);
    OrtStatus *(*SetDynamicOptions)(OrtEp *self, const char *const *keys, const char *const *values,
                                    size_t n);
    OrtStatus *(*OnRunStart)(OrtEp *self, const OrtRunOptions *options);
    OrtStatus *(*OnRunEnd)(OrtEp *self, const OrtRunOptions *options, bool sync_stream);
    OrtStatus *(*CreateAllocator)(OrtEp *self, const OrtMemoryInfo *info, OrtAllocator **out);
    OrtStatus *(*CreateSyncStreamForDevice)(OrtEp *self, const OrtMemoryDevice *device,
                                            OrtSyncStreamImpl **out);
    const char *(*GetCompiledModelCompatibilityInfo)(OrtEp *self, const OrtGraph *graph);
};

/* struct OrtEpFactory, the members up to 1.23. */
struct OrtEpFactory {
    uint32_t ort_version_supported;
    const char *(*GetName)(const OrtEpFactory *self);
    const char *(*GetVendor)(const OrtEpFactory *self);
    OrtStatus *(*GetSupportedDevices)(OrtEpFactory *self, const OrtHardwareDevice *const *devices,
                                      size_t n, OrtEpDevice **ep_devices, size_t max,
                                      size_t *n_ep_devices);
    OrtStatus *(*CreateEp)(OrtEpFactory *self, const OrtHardwareDevice *const *devices,
                           const OrtKeyValuePairs *const *metadata, size_t n,
                           const OrtSessionOptions *options, const OrtLogger *logger, OrtEp **out);
    void (*ReleaseEp)(OrtEpFactory *self, OrtEp *ep);
    uint32_t (*GetVendorId)(const OrtEpFactory *self);
    const char *(*GetVersion)(const OrtEpFactory *self);
    OrtStatus *(*ValidateCompiledModelCompatibilityInfo)(OrtEpFactory *self,
                                                         const OrtHardwareDevice *const *devices,
                                                         size_t n, const char *info,
                                                         int *compatibility);
    OrtStatus *(*CreateAllocator)(OrtEpFactory *self, const OrtMemoryInfo *info,
                                  const OrtKeyValuePairs *options, OrtAllocator **out);
    void (*ReleaseAllocator)(OrtEpFactory *self, OrtAllocator *allocator);
    OrtStatus *(*CreateDataTransfer)(OrtEpFactory *self, OrtDataTransferImpl **out);
    bool (*IsStreamAware)(const OrtEpFactory *self);
    OrtStatus *(*CreateSyncStreamForDevice)(OrtEpFactory *self, const OrtMemoryDevice *device,
                                            const OrtKeyValuePairs *options,
                                            OrtSyncStreamImpl **out);
};

#endif
