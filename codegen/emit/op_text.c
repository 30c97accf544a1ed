/*
 * Generated code's text for the elementwise ops, read off ops.def: each
 * expression column is stringified by the preprocessor, and its
 * identifiers x, y, a0..a3 are replaced here by the operands' variables and
 * the attributes' literals. The CPU and CUDA per-op kernels compile the
 * same expressions, so the three compute the same function.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_text.h"
#include "xlac/op.h"

enum { COL_F32, COL_F64, COL_I32, COL_I64, COL_BOOL, N_COLS };

#define X(ENUM, name, min_in, max_in, cls, flags)
#define XU(E, nm, fl, f32, f64, i32, i64, b) [XE_OP_##E] = {#f32, #f64, #i32, #i64, #b},
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) [XE_OP_##E] = {#f32, #f64, #i32, #i64, #b},
/* Per op, the expression text of each compute type ("XE_NA": none; NULL: no row). */
static const char *const exprs[XE_OP_COUNT][N_COLS] = {
#include "xlac/ops.def"
};
#undef XU
#undef XB
#define XV(E, attr, f32, f64) [XE_OP_##E] = {#f32, #f64},
/* The float expressions of the XV rows, used when the row's attribute is set. */
static const char *const variants[XE_OP_COUNT][2] = {
#include "xlac/ops.def"
};
#undef XV
#undef X

void xg_literal(xe_dtype dt, double v, char *buf, size_t len)
{
    bool f = dt == XE_F32 || dt == XE_F16 || dt == XE_BF16;
    static const char *const it[XE_DTYPE_COUNT] = {
        [XE_I32] = "int32_t",    [XE_I64] = "int64_t",        [XE_BOOL] = "uint8_t",
        [XE_U8] = "uint8_t",     [XE_I8] = "int8_t",          [XE_I16] = "int16_t",
        [XE_U16] = "uint16_t",   [XE_U32] = "uint32_t",       [XE_U64] = "uint64_t",
        [XE_F32] = "float",      [XE_F64] = "double",         [XE_F16] = "float",
        [XE_BF16] = "float",     [XE_F8E4M3FN] = "uint8_t",   [XE_F8E4M3FNUZ] = "uint8_t",
        [XE_F8E5M2] = "uint8_t", [XE_F8E5M2FNUZ] = "uint8_t", [XE_I4] = "int8_t",
        [XE_U4] = "uint8_t",     [XE_I2] = "int8_t",          [XE_U2] = "uint8_t",
        [XE_F4E2M1] = "uint8_t", [XE_F8E8M0] = "uint8_t"};
    if (isnan(v))
        snprintf(buf, len, f ? "(0.0f / 0.0f)" : "(0.0 / 0.0)");
    else if (isinf(v))
        snprintf(buf, len, f ? "(%s1.0f / 0.0f)" : "(%s1.0 / 0.0)", v < 0 ? "-" : "");
    else if (dt == XE_F64)
        snprintf(buf, len, "%a", v);
    else if (f)
        snprintf(buf, len, "%af", (double)(float)v);
    else if (dt == XE_BOOL)
        snprintf(buf, len, "%d", v != 0);
    else
        snprintf(buf, len, "((%s)%lldLL)", dt < XE_DTYPE_COUNT ? it[dt] : "int64_t", (long long)v);
}

extern const char xg_scalar_text[];

#define SECTION "/* xe-op "
#define SECTION_END "/* xe-op end */\n"

/* The op a section of scalar.h belongs to ("xe-op NAME: ..."); -1 if none. */
static int section_op(const char *s)
{
    const char *name = s + strlen(SECTION), *colon = strchr(name, ':');
    return colon ? xe_op_find(name, (size_t)(colon - name)) : -1;
}

/* Appends scalar.h without its op sections (want < 0), or only op want's section. */
static size_t copy_text(char *out, int want)
{
    size_t u = 0;
    for (const char *p = xg_scalar_text; *p;) {
        bool here = strncmp(p, SECTION, strlen(SECTION)) == 0; /* a section right after another */
        const char *sec = here ? p : strstr(p, "\n" SECTION);
        const char *stop = here ? p : sec ? sec + 1 : p + strlen(p);
        if (want < 0) {
            memcpy(out + u, p, (size_t)(stop - p));
            u += (size_t)(stop - p);
        }
        if (!sec)
            break;
        const char *end = strstr(stop, SECTION_END);
        end = end ? end + strlen(SECTION_END) : stop + strlen(stop);
        if (want >= 0 && section_op(stop) == want) {
            memcpy(out + u, stop, (size_t)(end - stop));
            u += (size_t)(end - stop);
        }
        p = end;
    }
    out[u] = '\0';
    return u;
}

char *xg_scalar_text_for(const bool *used)
{
    char *out =
        malloc(2 * strlen(xg_scalar_text) + 1); /* the common part plus every section, at most */
    if (!out)
        return NULL;
    size_t u = copy_text(out, -1);
    for (int op = 0; op < XE_OP_COUNT; op++)
        if (used[op])
            u += copy_text(out + u, op);
    return out;
}

/* The expression of n's op for compute dtype dt; NULL if it has none. */
static const char *expression(const xe_node *n, xe_dtype dt)
{
    if (n->op < 0 || n->op >= XE_OP_COUNT || xe_dtype_is_narrow(dt)) /* no narrow columns */
        return NULL;
    int col = dt == XE_F64    ? COL_F64
              : dt == XE_I32  ? COL_I32
              : dt == XE_I64  ? COL_I64
              : dt == XE_BOOL ? COL_BOOL
                              : COL_F32;
    const char *e = exprs[n->op][col];
    if (col <= COL_F64 && variants[n->op][col] && xe_op_variant(n))
        e = variants[n->op][col];
    return e && strcmp(e, "XE_NA") != 0 ? e : NULL;
}

/* What identifier id (of length k) stands for: an operand, an attribute's literal, or itself. */
static const char *substitute(const char *id, size_t k, const char *a, const char *b,
                              const double *attrs, xe_dtype dt, char *lit, size_t lit_len)
{
    if (k == 1 && id[0] == 'x')
        return a;
    if (k == 1 && id[0] == 'y')
        return b;
    if (k == 2 && id[0] == 'a' && id[1] >= '0' && id[1] < '0' + XE_MAX_OP_FLOATS) {
        xg_literal(dt, attrs[id[1] - '0'], lit, lit_len);
        return lit;
    }
    return NULL;
}

bool xg_op_text(const xe_node *n, xe_dtype dt, const char *a, const char *b, char *buf, size_t len)
{
    const char *e = expression(n, dt);
    if (!e || !a)
        return e != NULL;
    double attrs[XE_MAX_OP_FLOATS];
    xe_op_float_attrs(n, attrs);
    size_t u = 0;
    for (const char *p = e; *p;) {
        size_t k = 1;
        const char *piece = p;
        char lit[64];
        if (isalpha((unsigned char)*p) || *p == '_' || isdigit((unsigned char)*p)) {
            while (isalnum((unsigned char)p[k]) || p[k] == '_' || p[k] == '.')
                k++; /* an identifier, or a number such as 0.5f or 0x1p-3 */
            const char *s = isdigit((unsigned char)*p)
                                ? NULL
                                : substitute(p, k, a, b, attrs, dt, lit, sizeof lit);
            if (s) {
                size_t m = strlen(s);
                if (u + m >= len)
                    return false;
                memcpy(buf + u, s, m);
                u += m;
                p += k;
                continue;
            }
        }
        if (u + k >= len)
            return false;
        memcpy(buf + u, piece, k);
        u += k;
        p += k;
    }
    buf[u] = '\0';
    return true;
}
