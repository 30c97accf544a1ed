/*
 * Several cubins in one artifact. NVRTC compiles a program's kernels
 * faster in parts on several threads (nvrtc.c), and each part is a cubin
 * of its own: non-relocatable cubins cannot be linked into one, so the
 * artifact holds them side by side and the loader loads each as a library
 * (program.c). A program compiled in one part stays a plain cubin.
 *
 * Layout: "XGCUBINS" | uint32 count | uint32 0 | count x uint64 length |
 * the images, each at an offset that is a multiple of 64 (the ELF loader's
 * alignment wishes), host byte order (an artifact never leaves its host:
 * the disk cache's key names the machine's compiler and architecture).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

static const char magic[8] = {'X', 'G', 'C', 'U', 'B', 'I', 'N', 'S'};

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t header_bytes(int n)
{
    return align64(16 + (size_t)n * 8);
}

void *xg_cubins_pack(void *const *images, const size_t *lens, int n, size_t *len)
{
    size_t total = header_bytes(n);
    for (int i = 0; i < n; i++)
        total = align64(total) + lens[i];
    char *out = calloc(1, total);
    if (!out)
        return NULL;
    uint32_t count = (uint32_t)n;
    memcpy(out, magic, sizeof magic);
    memcpy(out + 8, &count, sizeof count);
    size_t at = header_bytes(n);
    for (int i = 0; i < n; i++) {
        uint64_t l = lens[i];
        memcpy(out + 16 + (size_t)i * 8, &l, sizeof l);
        memcpy(out + at, images[i], lens[i]);
        at = align64(at + lens[i]);
    }
    *len = total;
    return out;
}

int xg_cubins_count(const void *code, size_t len)
{
    if (!code || len < 16 || memcmp(code, magic, sizeof magic) != 0)
        return 0;
    uint32_t n;
    memcpy(&n, (const char *)code + 8, sizeof n);
    if (n == 0 || n > XG_MAX_CUBINS || header_bytes((int)n) > len)
        return -1;
    size_t at = header_bytes((int)n);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, (const char *)code + 16 + (size_t)i * 8, sizeof l);
        if (l == 0 || l > len || at > len - l)
            return -1;
        at = align64(at + l);
    }
    return (int)n;
}

const void *xg_cubins_get(const void *code, int i, size_t *len)
{
    uint32_t n;
    memcpy(&n, (const char *)code + 8, sizeof n);
    size_t at = header_bytes((int)n);
    for (int k = 0;; k++) {
        uint64_t l;
        memcpy(&l, (const char *)code + 16 + (size_t)k * 8, sizeof l);
        if (k == i) {
            *len = l;
            return (const char *)code + at;
        }
        at = align64(at + l);
    }
}
