/*
 * Which loader a graph file needs, judged by its content: .xg text starts
 * (after blank and comment lines) with the `xlac.graph` header; anything
 * whose first byte is a protobuf tag of a ModelProto field (ir_version,
 * opset_import, producer fields, graph) is taken as ONNX. The extension
 * only breaks ties for files too short or odd to tell; a file that is
 * neither, not named .xg, is refused as such (not with the parser's
 * complaint about a missing header).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xlac/io.h"
#include "xlac/onnx.h"

/* Field numbers 1..8 of ModelProto with their wire types, as a first tag byte. */
static bool model_tag(unsigned char c)
{
    unsigned field = c >> 3, wt = c & 7;
    return (field == 1 || field == 5) ? wt == 0 : (field >= 2 && field <= 8) ? wt == 2 : false;
}

xe_file_kind xe_sniff_file(const char *path)
{
    xe_status st;
    int fd = xe_open_regular(path, &st); /* a FIFO or a folder: unknown, the loader then says why */
    if (fd < 0)
        return XE_FILE_UNKNOWN;
    char buf[4096];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    buf[n] = '\0';
    size_t i = 0;
    while (i < n) { /* skip blank and comment lines */
        while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
            i++;
        if (i < n && buf[i] == '#')
            while (i < n && buf[i] != '\n')
                i++;
        else
            break;
    }
    if (n - i >= 10 && !strncmp(buf + i, "xlac.graph", 10))
        return XE_FILE_XG;
    if (n && model_tag((unsigned char)buf[0]))
        return XE_FILE_ONNX;
    return XE_FILE_UNKNOWN;
}

/* The file's first byte, -1 when it is empty or cannot be read (the loader then says why). */
static int first_byte(const char *path)
{
    xe_status st;
    int fd = xe_open_regular(path, &st);
    if (fd < 0)
        return -1;
    unsigned char c;
    ssize_t got = read(fd, &c, 1);
    close(fd);
    return got == 1 ? c : -1;
}

xe_graph *xe_load_graph(const char *path, const xe_onnx_options *opt, xe_status *st)
{
    xe_file_kind k = xe_sniff_file(path);
    size_t len = strlen(path);
    if (k == XE_FILE_UNKNOWN && len > 5 && !strcmp(path + len - 5, ".onnx"))
        k = XE_FILE_ONNX;
    if (k == XE_FILE_ONNX)
        return xe_onnx_load(path, opt, st);
    if (k == XE_FILE_UNKNOWN && !(len > 3 && !strcmp(path + len - 3, ".xg")) &&
        first_byte(path) >= 0) {
        xe_fail(
            st, XE_ERR_PARSE,
            "%s is neither an ONNX model nor a .xg graph: its first byte 0x%02x is no "
            "field of an ONNX ModelProto, and a .xg graph starts with the header 'xlac.graph v1'",
            path, first_byte(path));
        return NULL;
    }
    if (opt && opt->n_pins) {
        xe_fail(st, XE_ERR_USAGE,
                "%s: shapes pinned at load (--shape, --dim) apply to ONNX models; a .xg graph "
                "declares its own",
                path);
        return NULL;
    }
    return xe_parse_file(path, st); /* .xg (named so, or empty), or the parser's own error for it */
}
