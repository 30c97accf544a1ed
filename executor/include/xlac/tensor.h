/*
 * A tensor: a dense row-major buffer of one dtype on one device. Tensors
 * are reference counted because the executor hands the same value to
 * several consumers and to the caller as a graph output.
 */
#ifndef XLAC_TENSOR_H
#define XLAC_TENSOR_H

#include "xlac/device.h"
#include "xlac/dtype.h"
#include "xlac/status.h"

/*
 * Memory that tensors may view without owning it (a mapped file of ONNX
 * external data): reference counted, freed by drop when the last tensor
 * that views it and its maker have let it go.
 */
typedef struct xe_tensor_keeper {
    int refcount;                             /* changed atomically */
    void (*drop)(struct xe_tensor_keeper *k); /* frees the memory and the keeper */
} xe_tensor_keeper;

void xe_keeper_retain(xe_tensor_keeper *k);
void xe_keeper_release(xe_tensor_keeper *k);

typedef struct xe_tensor {
    xe_dtype dtype;
    xe_shape shape;   /* always fully known */
    xe_device device; /* where data lives */
    void *data;       /* host pointer, or the device's pointer on a device without host memory */
    size_t nbytes;    /* numel * dtype size */
    int refcount;     /* freed when it drops to zero; changed atomically (retain, release) */
    bool borrowed;    /* data is not ours to free */
    xe_tensor_keeper
        *keeper; /* not NULL: data lies in the keeper's memory, held while the tensor lives */
} xe_tensor;

/* Allocates an uninitialised tensor (NULL and *st set on failure). */
xe_tensor *xe_tensor_new(xe_dtype dt, const xe_shape *shape, xe_device dev, xe_status *st);
/* Wraps memory the caller keeps alive; never freed by the tensor. */
xe_tensor *xe_tensor_wrap(xe_dtype dt, const xe_shape *shape, xe_device dev, void *data,
                          xe_status *st);
/* A host tensor over data inside k's memory (read-only to the executor); k is retained. */
xe_tensor *xe_tensor_view(xe_dtype dt, const xe_shape *shape, const void *data, xe_tensor_keeper *k,
                          xe_status *st);
/*
 * base's bytes under another shape of as many elements (a reshape's output, op by op): a host
 * tensor that views them and holds base (or base's own keeper) while it lives. Read-only to the
 * executor, as every input is. NULL with *st set when the element counts differ.
 */
xe_tensor *xe_tensor_alias(xe_tensor *base, const xe_shape *shape, xe_status *st);
xe_tensor *xe_tensor_retain(xe_tensor *t);
void xe_tensor_release(xe_tensor *t);
int64_t xe_tensor_numel(const xe_tensor *t);
/* Copy to another device (or a deep copy on the same one). */
xe_tensor *xe_tensor_to_device(const xe_tensor *t, xe_device dev, xe_status *st);
/* Each of ts[0..n) not on dev replaced, in place, by its copy there. */
xe_code xe_tensors_to_device(xe_tensor **ts, int n, xe_device dev, xe_status *st);

#endif
