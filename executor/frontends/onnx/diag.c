/*
 * Where a file that protobuf-c refused goes wrong. protobuf-c says only
 * that unpacking failed; this scan says where: it walks the wire format's
 * tags and lengths, message by message (our schema's descriptors say which
 * fields hold nested messages), and stops at the first field that is
 * malformed: a truncated tag, varint or fixed-size value, a length that
 * runs past its message, an invalid wire type, or a wire type that does not
 * match the schema. It decodes no values: parsing is protobuf-c's job.
 *
 * The same walk runs once before protobuf-c (ox_precheck), for what
 * protobuf-c does not refuse but must be: nesting beyond OX_MAX_NESTING
 * (protobuf-c unpacks nested messages recursively with no limit, so a
 * model whose subgraphs nest thousands deep, If inside If inside ...,
 * would overflow its stack) and strings with a NUL byte inside (the
 * importer reads names as C strings: "t\0a" and "t\0b" would both be
 * "t"). The walk itself descends no deeper than OX_MAX_NESTING messages,
 * in either use.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

typedef struct scan {
    const uint8_t *data;
    char *buf;
    size_t cap;
    bool found;      /* the scan is over: buf says why */
    bool depth_only; /* before unpacking: only nesting beyond OX_MAX_NESTING is reported */
} scan;

/* Reads a varint at *pos (< end); false when it is truncated or longer than 10 bytes. */
static bool varint(const uint8_t *d, size_t *pos, size_t end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= end)
            return false;
        uint8_t byte = d[(*pos)++];
        *v |= shift < 64 ? (uint64_t)(byte & 0x7f) << shift : 0;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

static void found(scan *s, size_t at, const ProtobufCMessageDescriptor *desc,
                  const ProtobufCFieldDescriptor *fd, uint64_t number, const char *what)
{
    if (fd)
        snprintf(s->buf, s->cap, "byte %zu: field %s (number %llu) of %s: %s", at, fd->name,
                 (unsigned long long)number, desc->short_name, what);
    else
        snprintf(s->buf, s->cap, "byte %zu: field number %llu of %s: %s", at,
                 (unsigned long long)number, desc->short_name, what);
    s->found = true;
}

/* Whether wire type wt can carry field fd (packed repeated scalars come length-delimited). */
static bool wire_matches(const ProtobufCFieldDescriptor *fd, unsigned wt)
{
    switch (fd->type) {
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return wt == 2;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return wt == 5 || (wt == 2 && fd->label == PROTOBUF_C_LABEL_REPEATED);
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return wt == 1 || (wt == 2 && fd->label == PROTOBUF_C_LABEL_REPEATED);
    default:
        return wt == 0 || (wt == 2 && fd->label == PROTOBUF_C_LABEL_REPEATED);
    }
}

static void walk(scan *s, size_t pos, size_t end, const ProtobufCMessageDescriptor *desc,
                 int depth);

/* Refused before unpacking too: protobuf-c keeps a string's bytes but the importer reads a C
 * string. */
static const char nul_inside[] =
    "a string with a NUL byte inside (a name would be cut there and could "
    "become another)";

/* One field whose tag ended at *pos; advances *pos past its value. NULL, or what is wrong. */
static const char *field(scan *s, size_t *pos, size_t end, const ProtobufCFieldDescriptor *fd,
                         uint64_t number, unsigned wt, int depth, char *what, size_t cap)
{
    uint64_t v;
    if (number == 0)
        return "field number 0 is invalid";
    if (fd && !wire_matches(fd, wt))
        return "wire type does not match the field's type";
    if (wt == 3 || wt == 4 || wt > 5)
        return "invalid or unsupported wire type (groups are not used)";
    if (wt == 0)
        return varint(s->data, pos, end, &v) ? NULL : "truncated varint";
    if (wt == 1 || wt == 5) {
        if (end - *pos < (wt == 1 ? 8u : 4u))
            return "truncated fixed-size value";
        *pos += wt == 1 ? 8 : 4;
        return NULL;
    }
    if (!varint(s->data, pos, end, &v))
        return "truncated length";
    if (v > end - *pos) {
        snprintf(what, cap, "declares %llu bytes but only %zu remain (truncated?)",
                 (unsigned long long)v, end - *pos);
        return what;
    }
    if (fd && fd->type == PROTOBUF_C_TYPE_STRING && strcmp(fd->name, "doc_string") &&
        memchr(s->data + *pos, 0, (size_t)v))
        return nul_inside;
    if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE)
        walk(s, *pos, *pos + v, fd->descriptor, depth + 1);
    *pos += v;
    return NULL;
}

/* The fields of one message of type desc in [pos, end), nested depth messages deep. */
static void walk(scan *s, size_t pos, size_t end, const ProtobufCMessageDescriptor *desc, int depth)
{
    if (depth > OX_MAX_NESTING) {
        snprintf(s->buf, s->cap,
                 "byte %zu: a %s nested more than %d messages deep (subgraphs inside "
                 "subgraphs?): beyond the importer's limit",
                 pos, desc->short_name, OX_MAX_NESTING);
        s->found = true;
        return;
    }
    while (pos < end && !s->found) {
        size_t at = pos;
        uint64_t tag;
        if (!varint(s->data, &pos, end, &tag)) {
            if (!s->depth_only) {
                snprintf(s->buf, s->cap, "byte %zu: truncated field tag in %s", at,
                         desc->short_name);
                s->found = true;
            }
            return;
        }
        uint64_t number = tag >> 3;
        const ProtobufCFieldDescriptor *fd =
            number <= 0x1fffffff ? protobuf_c_message_descriptor_get_field(desc, (unsigned)number)
                                 : NULL;
        char what[128];
        const char *bad =
            field(s, &pos, end, fd, number, (unsigned)(tag & 7), depth, what, sizeof what);
        if (bad && !s->found && (!s->depth_only || bad == nul_inside))
            found(s, at, desc, fd, number, bad);
        if (bad) /* the rest of this message cannot be walked; protobuf-c will refuse it */
            return;
    }
}

bool ox_precheck(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *desc, char *buf,
                 size_t cap)
{
    scan s = {.data = data, .buf = buf, .cap = cap, .depth_only = true};
    walk(&s, 0, len, desc, 0);
    return !s.found;
}

void ox_diagnose(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *desc, char *buf,
                 size_t cap)
{
    scan s = {.data = data, .buf = buf, .cap = cap};
    walk(&s, 0, len, desc, 0);
    if (!s.found)
        snprintf(buf, cap,
                 "no malformed field found by the wire scan of %zu bytes "
                 "(invalid UTF-8 in a string field, or an invalid enum value?)",
                 len);
}
