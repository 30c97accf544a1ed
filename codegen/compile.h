/*
 * Private to codegen/: the two compilers (cc.c for C, nvrtc.c for CUDA)
 * and small file helpers they and the cache share.
 */
#ifndef XG_COMPILE_H
#define XG_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "xlac/status.h"
#include "xlac/text.h"

/* C source → shared object with the compiler command cc, in a private folder under tmp_dir;
   timeout_s: the compiler (its whole process group) is killed after that many seconds, 0: no limit.
 */
xe_code xg_cc_compile(const char *cc, const char *tmp_dir, const char *source, bool fast_math,
                      int timeout_s, void **so, size_t *so_len, char **log, xe_status *st);
/* Runs the compiler cc with xlac's C flags and args (NULL-terminated: sources, -o, libraries), log
 * in *log. */
xe_code xg_cc_run(const char *cc, const char *tmp_dir, const char *const *args, bool fast_math,
                  int timeout_s, char **log, xe_status *st);
/* CUDA source → cubin for sm_<arch> (PTX for compute_<arch> when NVRTC lacks that arch). */
xe_code xg_nvrtc_compile(const char *source, int arch, bool fast_math, void **code, size_t *len,
                         bool *is_ptx, char **log, xe_status *st);
/* ptxas's resource report (registers, stack, spills per kernel) of the sm_<arch> cubin; malloc'd,
 * NULL on failure. */
char *xg_nvrtc_resource_report(const char *source, int arch, bool fast_math);
/* PTX text of source for compute_<arch> (for dumps). */
char *xg_nvrtc_ptx(const char *source, int arch, bool fast_math);
/* "gcc (Debian 12.2.0-14) 12.2.0" / "nvrtc 13.0"; static storage. The first cc asked about is the
   one probed. *known (may be NULL): the compiler answered (else the text says "version unknown" /
   "unavailable"). */
const char *xg_cc_version(const char *cc, const char *tmp_dir, int timeout_s, bool *known);
const char *xg_nvrtc_version(bool *known);
/*
 * What the compiler's files are now, cheaply (a stat per file, no process): the command, then for
 * each word that names a program (found as posix_spawnp finds it) its resolved path, device,
 * inode, size, mtime and ctime. Another binary at the path, or one changed in place, gives
 * another stamp. false: it cannot be told (the compiler is not found).
 */
bool xg_cc_stamp(const char *cc, xe_text *out);
/* " PATH dev:ino:size:mtime:ctime" of the file at path (its links resolved); false when it cannot
 * be told. */
bool xg_stamp_file(const char *path, xe_text *out);
/* The same for NVRTC: the library file it is loaded from (the toolkit's, as built against); false
   when that file is not there (NVRTC then comes from the loader's path, which is not stamped). */
bool xg_nvrtc_stamp(xe_text *out);
/* As xg_nvrtc_compile for a cubin, the kernels split into at most `parts` programs compiled on as
   many threads (1: one program); more than one part gives a pack of cubins (below). */
xe_code xg_nvrtc_compile_parts(const char *source, int arch, bool fast_math, int parts, void **code,
                               size_t *len, char **log, xe_status *st);

/* Several cubins in one artifact (cubins.c), at most XG_MAX_CUBINS. */
#define XG_MAX_CUBINS 16
void *xg_cubins_pack(void *const *images, const size_t *lens, int n, size_t *len);
/* The parts of a pack: 0 when code is no pack (a plain cubin or PTX), -1 when it is a damaged one.
 */
int xg_cubins_count(const void *code, size_t len);
/* Part i (below the count) of a pack, and its length. */
const void *xg_cubins_get(const void *code, int i, size_t *len);

xe_code xg_read_file(const char *path, void **data, size_t *len, xe_status *st);
xe_code xg_write_file(const char *path, const void *data, size_t len, xe_status *st);
/* data into a file made by mkstemp (fd, closed here; errors name path). */
xe_code xg_write_fd(int fd, const char *path, const void *data, size_t len, xe_status *st);
void xg_first_line(const char *log, char *buf, size_t len);

/*
 * What an interrupted process must undo (cleanup.c): running compilers,
 * private temp folders, the disk cache's lock files this process holds.
 * xg_live_child is false once xg_cleanup_interrupted ran (the caller kills
 * the child it just started). xg_cleanup_interrupted kills and reaps every
 * compiler, removes every folder and lock; returns how many it undid.
 */
bool xg_live_child(pid_t child);
void xg_live_child_done(pid_t child);
void xg_live_folder(const char *path);
void xg_live_folder_done(const char *path);
void xg_live_lock(const char *path);
void xg_live_lock_done(const char *path);
int xg_cleanup_interrupted(void);
/* The first line of a compiler's log that says "error", else its first line. */
void xg_error_line(const char *log, char *buf, size_t len);

#endif
