/*
 * The fuzz targets (see targets.h). Inputs are copied into exactly sized
 * heap buffers so that AddressSanitizer sees any read past their end; text
 * parsers get a NUL-terminated copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "cache_impl.h"
#include "flags.h"
#include "targets.h"
#include "xlac/xlac.h"

static char *text_of(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (t) {
        memcpy(t, data, size);
        t[size] = '\0';
    }
    return t;
}

int xf_xg(const uint8_t *data, size_t size)
{
    char *text = text_of(data, size);
    xe_status st;
    xe_graph *g = text ? xe_parse_string(text, "fuzz.xg", &st) : NULL;
    if (g && xe_graph_infer(g, &st) == XE_OK) {
        char *again = xe_write_string(g, &st);
        xe_graph *h = again ? xe_parse_string(again, "again.xg", &st) : NULL;
        if (again && !h) { /* what the writer writes, the parser reads */
            fprintf(stderr, "written text does not parse: %s\n%s\n", st.msg, again);
            abort();
        }
        xe_graph_destroy(h);
        free(again);
    }
    xe_graph_destroy(g);
    free(text);
    return 0;
}

int xf_npy(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.npy", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        xe_status st;
        xe_tensor *t = xe_npy_read(path, &st);
        xe_tensor_release(t);
    }
    close(fd);
    return 0;
}

int xf_flags(const uint8_t *data, size_t size)
{
    char *text = text_of(data, size);
    if (!text)
        return 0;
    char *nl = strchr(text, '\n');
    if (nl)
        *nl = '\0';
    xlac_flags f;
    xe_status st;
    /* the first line is XLAC_AUTO_JIT, the rest XLAC_FLAGS; the compiler and folders are fixed */
    xlac_env env = {.auto_jit = text, .flags = nl ? nl + 1 : NULL, .home = "/nonexistent"};
    if (xlac_flags_parse(&f, &env, &st) == XE_OK)
        xlac_flags_free(&f);
    free(text);
    return 0;
}

/* The key stored in a file (after magic and length), or "" when it has none. */
static char *stored_key(const uint8_t *b, size_t n)
{
    uint32_t klen = 0;
    if (n < 12)
        return strdup("");
    memcpy(&klen, b + 8, 4);
    return klen <= n - 12 ? strndup((const char *)b + 12, klen) : strdup("");
}

int xf_disk(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    size_t n = size - 1;
    unsigned char *buf = malloc(n + 16); /* exactly sized below: n or n + 16 bytes */
    if (!buf)
        return 0;
    memcpy(buf, data + 1, n);
    if (mode & 1) { /* a valid checksum: the parser's later checks get exercised */
        XXH128_hash_t h = XXH3_128bits(buf, n);
        memcpy(buf + n, &h.high64, 8);
        memcpy(buf + n + 8, &h.low64, 8);
        n += 16;
    }
    unsigned char *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    char *key = (mode & 2) ? stored_key(exact, n) : strdup("xlac-fuzz-key");
    xg_artifact *a = calloc(1, sizeof *a);
    if (key && a)
        xg_disk_parse(exact, n, key, (mode & 4) ? XG_TARGET_CUDA : XG_TARGET_C, a);
    xg_artifact_destroy(a);
    free(key);
    free(exact);
    return 0;
}

/* data in a memfd; its /proc path in path (64 bytes); the fd, or -1. */
static int memfd_of(const uint8_t *data, size_t size, char *path)
{
    int fd = memfd_create("fuzz.onnx", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

int xf_onnx(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfd_of(data, size, path);
    if (fd < 0)
        return 0;
    xe_status st;
    char *report = NULL;
    xe_graph *g = xe_onnx_load(path, &(xe_onnx_options){.report = &report}, &st);
    if (g && xe_graph_infer(g, &st) == XE_OK) {
        char *text = xe_write_string(g, &st);
        free(text);
    }
    xe_graph_destroy(g);
    free(report);
    char *name = NULL;
    xe_tensor *t = xe_onnx_read_tensor(path, &name, &st);
    xe_tensor_release(t);
    free(name);
    close(fd);
    return 0;
}
