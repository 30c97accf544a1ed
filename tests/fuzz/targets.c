/*
 * The fuzz targets (see targets.h). Inputs are copied into exactly sized
 * heap buffers so that AddressSanitizer sees any read past their end; text
 * parsers get a NUL-terminated copy.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* ---- onnx_ext: a model and its external data file, loaded by path ------------------------ */

/* The names a model's external data may name in the folder (the seeds use each). */
static const char *const ext_names[] = {"model.onnx.data", "weights.bin", "external.weights.bin", "sub/w.bin"};
static char ext_dir[64]; /* the private folder, made once a process (in /dev/shm when there is one: a file
                            system in memory writes these files 50 times faster than /tmp on a disk) */

/* Removes what ext_folder and xf_onnx_ext put into dir, and dir. */
static void ext_remove_dir(const char *dir)
{
    static const char *const all[] = {"model.onnx", "model.onnx.data", "weights.bin", "external.weights.bin",
                                      "sub/w.bin", "link.bin", "fifo.bin"};
    char p[512];
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        if (snprintf(p, sizeof p, "%s/%s", dir, all[i]) < (int)sizeof p)
            unlink(p);
    }
    if (snprintf(p, sizeof p, "%s/sub", dir) < (int)sizeof p)
        rmdir(p);
    rmdir(dir);
}

static void ext_remove(void)
{
    ext_remove_dir(ext_dir);
}

/* Removes the folders of fuzzing processes that died before their atexit ran (a crash, an
   out-of-memory, a timeout, libFuzzer's minimising children): each names its process. */
static void ext_sweep(const char *parent)
{
    DIR *d = opendir(parent);
    for (struct dirent *e; d && (e = readdir(d));) {
        long pid;
        char rest[16], p[512];
        if (sscanf(e->d_name, "xlac-fuzz-ext-%ld-%15s", &pid, rest) != 2 || pid <= 0 || pid == (long)getpid() ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(p, sizeof p, "%s/%s", parent, e->d_name);
        ext_remove_dir(p);
    }
    if (d)
        closedir(d);
}

/*
 * The folder (mkdtemp: 0700, nobody else's names in it), with what a
 * hostile model could point at: link.bin, a symbolic link out of the folder
 * (to /etc/passwd), and fifo.bin, a FIFO (both must be refused, not read
 * or waited on), and a subfolder. Removed at exit; a process that died
 * first leaves it, and the next one removes it (its name holds the pid).
 */
static const char *ext_folder(void)
{
    if (ext_dir[0])
        return ext_dir;
    const char *parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    ext_sweep(parent);
    snprintf(ext_dir, sizeof ext_dir, "%s/xlac-fuzz-ext-%ld-XXXXXX", parent, (long)getpid());
    if (!mkdtemp(ext_dir)) {
        ext_dir[0] = '\0';
        return NULL;
    }
    char p[128];
    snprintf(p, sizeof p, "%s/sub", ext_dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/link.bin", ext_dir);
    if (symlink("/etc/passwd", p) != 0)
        perror(p);
    snprintf(p, sizeof p, "%s/fifo.bin", ext_dir);
    if (mkfifo(p, 0600) != 0)
        perror(p);
    atexit(ext_remove);
    return ext_dir;
}

static void put(const char *dir, const char *name, const uint8_t *data, size_t size)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f)
        return;
    if (size)
        fwrite(data, 1, size, f);
    fclose(f);
}

/* FNV-1a of n bytes: the oracle compares hashes, never bytes, so that libFuzzer's comparison tracing
   cannot copy the file's bytes into the input (a memcmp against "root:" taught it to write them into
   the model's own data file, a false alarm). */
static uint64_t fnv64(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

#define PASSWD_HEAD 16

/* True when a constant of g starts with /etc/passwd's first PASSWD_HEAD bytes (link.bin's target). */
static bool passwd_read(const xe_graph *g)
{
    static uint64_t want;
    static int ready; /* 0: not read, 1: read, -1: no such file */
    if (!ready) {
        unsigned char head[PASSWD_HEAD];
        FILE *f = fopen("/etc/passwd", "rb");
        ready = f && fread(head, 1, sizeof head, f) == sizeof head ? 1 : -1;
        if (ready == 1)
            want = fnv64(head, sizeof head);
        if (f)
            fclose(f);
    }
    for (int i = 0; ready == 1 && i < g->n_nodes; i++) {
        const xe_node *k = g->nodes[i];
        if (k->op == XE_OP_CONST && k->value && k->value->nbytes >= PASSWD_HEAD &&
            fnv64(k->value->data, PASSWD_HEAD) == want)
            return true;
    }
    return false;
}

/*
 * data: the model's length L (4 bytes, little endian; cut to what there
 * is), L bytes of model, then the external data file's bytes, written
 * under every name of ext_names (hard links); the model is loaded through the path API
 * (xe_load_graph: the sniffer, the importer, external data beside it).
 */
int xf_onnx_ext(const uint8_t *data, size_t size)
{
    const char *dir = ext_folder();
    if (!dir || size < 4)
        return 0;
    size_t n = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    if (n > size - 4)
        n = size - 4;
    put(dir, "model.onnx", data + 4, n);
    put(dir, ext_names[0], data + 4 + n, size - 4 - n);
    for (size_t i = 1; i < sizeof ext_names / sizeof *ext_names; i++) { /* the same file under each name */
        char from[128], to[128];
        snprintf(from, sizeof from, "%s/%s", dir, ext_names[0]);
        snprintf(to, sizeof to, "%s/%s", dir, ext_names[i]);
        unlink(to);
        if (link(from, to) != 0)
            put(dir, ext_names[i], data + 4 + n, size - 4 - n);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    xe_status st;
    char *report = NULL;
    xe_graph *g = xe_load_graph(path, &(xe_onnx_options){.report = &report}, &st);
    if (g && xe_graph_infer(g, &st) == XE_OK) {
        char *text = xe_write_string(g, &st);
        free(text);
    }
    if (g && passwd_read(g)) {
        fprintf(stderr, "a constant holds /etc/passwd: external data left the model's folder\n");
        abort();
    }
    xe_graph_destroy(g);
    free(report);
    return 0;
}
