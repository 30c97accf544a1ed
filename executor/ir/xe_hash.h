/*
 * uthash, with a failed allocation as an error: uthash's default on out of
 * memory is exit(-1), which would end the host process that loaded the
 * plugin. Include this instead of <uthash.h>; after a HASH_ADD,
 * xe_hash_added(item) says whether the item went in (when it did not, the
 * table is as it was and nothing refers to the item: free it).
 */
#ifndef XE_HASH_H
#define XE_HASH_H

#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) ((void)(obj))
#include <uthash.h>

#define xe_hash_added(item) ((item)->hh.tbl != NULL)

#endif
