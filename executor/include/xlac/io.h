/*
 * Reading and writing graphs (.xg) and tensors (.npy).
 *
 * The parser reports the first error as "FILE:LINE:COL: message" and
 * returns NULL; it never crashes on any input. It infers shapes as it
 * goes, so a shape or dtype mismatch is reported at the node's line.
 * The writer's text parses back to the same graph (annotations included).
 */
#ifndef XLAC_IO_H
#define XLAC_IO_H

#include <stdint.h>
#include <stdio.h>

#include "xlac/graph.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

xe_graph *xe_parse_file(const char *path, xe_status *st);

/* A whole file into a malloc'd, NUL-terminated buffer (len excludes the NUL). */
xe_code xe_read_file(const char *path, char **data, size_t *len, xe_status *st);
xe_graph *xe_parse_string(const char *text, const char *file, xe_status *st);

/* Returns malloc'd text; NULL with *st set on failure. */
char *xe_write_string(const xe_graph *g, xe_status *st);
xe_code xe_write_file(const xe_graph *g, const char *path, xe_status *st);
/*
 * The same, with every constant of at least min_elems elements (0: none)
 * written as NAME.npy beside path (binary, exact) and referenced from the
 * text as const(TYPE, file="NAME.npy"), which the parser reads from the
 * graph file's own folder.
 */
xe_code xe_write_file_consts(const xe_graph *g, const char *path, int64_t min_elems, xe_status *st);

/* .npy v1/v2/v3, little-endian, C order. Errors name the path. */
xe_tensor *xe_npy_read(const char *path, xe_status *st);
/* t may live on any device. */
xe_code xe_npy_write(const char *path, const xe_tensor *t, xe_status *st);

/* mkdir -p: path and its missing parents (mode for the ones it creates); an existing
   folder is fine, a file in the way is an error naming it. */
xe_code xe_mkdirs(const char *path, unsigned mode, xe_status *st);

/*
 * Opens path for reading only if it is a regular file: never waits on a
 * FIFO (opened O_NONBLOCK, checked with fstat, then made blocking again).
 * Returns the descriptor (O_CLOEXEC), or -1 with *st naming the path and
 * why (XE_ERR_IO).
 */
int xe_open_regular(const char *path, xe_status *st);
/*
 * The same for dir/rel, where rel must resolve inside dir: "..", an
 * absolute rel or a symbolic link that leads out is refused (XE_ERR_GRAPH,
 * naming the path), as onnxruntime refuses it.
 */
int xe_open_beneath(const char *dir, const char *rel, xe_status *st);

/*
 * Creates (or truncates) path for writing: O_NOFOLLOW, so a symbolic link
 * planted at that name is refused, not followed; a FIFO there is refused
 * too (no reader: ENXIO) instead of blocking. Returns the descriptor
 * (O_CLOEXEC) or -1 with *st naming the path (XE_ERR_IO); xe_fcreate is
 * the same as a FILE * (mode 0644) or NULL.
 */
int xe_create(const char *path, unsigned mode, xe_status *st);
FILE *xe_fcreate(const char *path, xe_status *st);
/*
 * Writes a report file (a trace, a summary) whole or not at all: write()
 * fills a temp file beside path (mkstemp), which is flushed, synced and
 * renamed into place, so a full disk or a failed write leaves the previous
 * file as it was and returns XE_ERR_IO naming path. family_start (seconds
 * since the epoch; 0: none) is when the run began that this process is a
 * part of (inherited by the processes it starts): a file at path written
 * since then is another process's of the same run, and this one goes to
 * path with ".PID" before the extension instead of replacing it. *used
 * gets the path written.
 */
xe_code xe_publish(const char *path, xe_code (*write)(FILE *f, void *user, xe_status *st),
                   void *user, double family_start, char *used, size_t used_len, xe_status *st);

#endif
