/*
 * The ONNX mutator's values (see onnx_mutate_impl.h): the numbers, dims and
 * strings that break importers (0, -1, INT64_MIN and MAX, NaN, names with
 * quotes, "*\/", "..", "$()", a NUL, 100 KB), and the mutations of
 * attributes (a value, a kind, an attribute added, renamed to one the op
 * reads, or removed), of tensors (dims, data type, data that fits the dims
 * or does not, external data pointing anywhere) and of declared shapes
 * (element types, ranks, dims known, unknown or symbolic).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_mutate_impl.h"

int64_t xm_int(xm_rng *r)
{
    /* clang-format off */
    static const int64_t special[] = {0, 1, -1, 2, 3, 4, 7, -9, 8, 16, 255, 256, 65536, INT32_MAX,
                                      INT32_MIN, (int64_t)INT32_MAX + 1, UINT32_MAX, (int64_t)1 << 62,
                                      INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 1};
    /* clang-format on */
    switch (xm_below(r, 4)) {
    case 0:
    case 1:
        return special[xm_below(r, sizeof special / sizeof *special)];
    case 2:
        return (int64_t)xm_below(r, 33) - 16;
    default:
        return (int64_t)xm_next(r);
    }
}

float xm_float(xm_rng *r)
{
    static const float special[] = {0.0f,  -0.0f,         1.0f,    -1.0f,   0.5f,
                                    2.0f,  1e-45f,        FLT_MIN, FLT_MAX, -FLT_MAX,
                                    1e30f, 2147483648.0f, 9.3e18f, 1e-7f};
    switch (xm_below(r, 5)) {
    case 0:
        return NAN;
    case 1:
        return xm_below(r, 2) ? INFINITY : -INFINITY;
    case 2:
    case 3:
        return special[xm_below(r, sizeof special / sizeof *special)];
    default:
        return (float)((double)xm_below(r, 20001) / 1000.0 - 10.0);
    }
}

int64_t xm_dim(xm_rng *r)
{
    /* clang-format off */
    static const int64_t special[] = {0, 1, 2, 3, 4, 8, -1, -2, INT64_MAX, INT64_MIN, (int64_t)1 << 31,
                                      (int64_t)1 << 32, (int64_t)1 << 62, 65536};
    /* clang-format on */
    return xm_below(r, 2) ? special[xm_below(r, sizeof special / sizeof *special)]
                          : (int64_t)xm_below(r, 8) + 1;
}

char *xm_string(xm_rng *r)
{
    /* clang-format off */
    static const char *const strings[] = {
        "", "..", "../../escaped", "/", "/etc/passwd", "a/b", "\"", "'", "\"; touch INJ; \"", "*/",
        "*/\n#include <stdlib.h>\n__attribute__((constructor)) static void pwn(void)"
        "{system(\"touch PWNED\");}\n/*",
        "\n", "line\nbreak", "$(touch INJ)", "`id`", "${HOME}", "%s%s%n%n", "\\", "\\\"", "\xff\xfe",
        "\xe2\x80\xae", "@cluster", "x y", "?", "-1", "0", "#", "=", "[", "}", "jit {", "output",
        "t" XM_NUL_MARK "a", "t" XM_NUL_MARK "b", XM_NUL_MARK, "x", "y", "input", "model.onnx.data",
        "then_branch", "body"};
    /* clang-format on */
    size_t pick = xm_below(r, sizeof strings / sizeof *strings + 2);
    if (pick < sizeof strings / sizeof *strings)
        return xm_strdup(strings[pick]);
    size_t n = pick == sizeof strings / sizeof *strings && xm_below(r, 8) == 0
                   ? 100000
                   : 1 + xm_below(r, 300);
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    for (size_t k = 0; k < n; k++)
        s[k] = n > 1000 ? 'a' : (char)(' ' + xm_below(r, 95));
    s[n] = '\0';
    return s;
}

/* ---- tensors -------------------------------------------------------------------------------- */

/* Bits of one element of ONNX data type dt, 0 for none known (strings, undefined, beyond the list).
 */
static int elem_bits(int32_t dt)
{
    static const int bits[] = {0,  32,  8,  8, 16, 16, 32, 64, 0, 8, 16, 64, 32, 64,
                               64, 128, 16, 8, 8,  8,  8,  4,  4, 4, 8,  2,  2};
    return dt >= 0 && dt < (int32_t)(sizeof bits / sizeof *bits) ? bits[dt] : 0;
}

static int32_t pick_dtype(xm_rng *r)
{
    static const int32_t odd[] = {0, -1, 8, 24, 27, 255, INT32_MAX};
    return xm_below(r, 6) ? (int32_t)(1 + xm_below(r, 26))
                          : odd[xm_below(r, sizeof odd / sizeof *odd)];
}

/* The bytes t's dims and type call for, or 0 when unknown, negative, or over 64 KB. */
static size_t want_bytes(const Onnx__TensorProto *t)
{
    int bits = elem_bits(t->data_type);
    uint64_t n = 1;
    for (size_t k = 0; k < t->n_dims; k++) {
        if (t->dims[k] < 0 || (t->dims[k] && n > (1u << 20) / (uint64_t)t->dims[k]))
            return 0;
        n *= (uint64_t)t->dims[k];
    }
    uint64_t bytes = (n * (uint64_t)bits + 7) / 8;
    return bits && bytes <= 65536 ? (size_t)bytes : 0;
}

/* Sets t's raw data to n bytes: special floats, small integers or noise. */
static void set_raw(xm_rng *r, Onnx__TensorProto *t, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (!d)
        return;
    unsigned how = (unsigned)xm_below(r, 3);
    for (size_t k = 0; k < n; k++)
        d[k] = how == 0   ? (uint8_t)xm_next(r)
               : how == 1 ? (uint8_t)(k % 4 == 0 ? xm_below(r, 8) : 0)
                          : 0xff;
    for (size_t k = 0; how == 0 && k + 4 <= n && xm_below(r, 4) == 0; k += 4) {
        float f = xm_float(r);
        memcpy(d + k, &f, 4);
    }
    free(t->raw_data.data);
    t->raw_data.data = d;
    t->raw_data.len = n;
    t->has_raw_data = true;
}

static void set_dims(xm_rng *r, Onnx__TensorProto *t, size_t rank)
{
    int64_t *d = malloc((rank ? rank : 1) * sizeof *d);
    if (!d)
        return;
    for (size_t k = 0; k < rank; k++)
        d[k] = xm_below(r, 3) ? (int64_t)xm_below(r, 5) + 1 : xm_dim(r);
    free(t->dims);
    t->dims = d;
    t->n_dims = rank;
}

Onnx__TensorProto *xm_tensor_new(xm_rng *r)
{
    Onnx__TensorProto *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    onnx__tensor_proto__init(t);
    t->has_data_type = true;
    t->data_type = xm_below(r, 2) ? (int32_t)(1 + xm_below(r, 16)) : pick_dtype(r);
    set_dims(r, t, xm_below(r, 4));
    size_t n = want_bytes(t);
    set_raw(r, t, xm_below(r, 8) ? n : xm_below(r, 64));
    return t;
}

/* An external_data entry key = value appended to t. */
static void add_entry(Onnx__TensorProto *t, const char *key, char *value)
{
    Onnx__StringStringEntryProto *e = malloc(sizeof *e);
    if (!e || !value) {
        free(e);
        free(value);
        return;
    }
    onnx__string_string_entry_proto__init(e);
    e->key = xm_strdup(key);
    e->value = value;
    xm_insert((void ***)&t->external_data, &t->n_external_data, t->n_external_data, e);
}

/* t's data moved to an external file: a location in the target's folder, a link or FIFO, or out. */
static void make_external(xm_rng *r, Onnx__TensorProto *t)
{
    /* clang-format off */
    static const char *const where[] = {"model.onnx.data", "weights.bin", "external.weights.bin",
                                        "sub/w.bin", "link.bin", "fifo.bin", "../model.onnx.data",
                                        "/etc/passwd", "sub", ".", "", "model.onnx", "missing.bin",
                                        "sub/../model.onnx.data"};
    /* clang-format on */
    static const char *const numbers[] = {
        "0",    "4",   " 12",  "-1", "+4", "18446744073709551615", "9223372036854775807",
        "4096", "1e3", "0x10", ""};
    for (size_t k = 0; k < t->n_external_data; k++)
        onnx__string_string_entry_proto__free_unpacked(t->external_data[k], NULL);
    free(t->external_data);
    t->external_data = NULL;
    t->n_external_data = 0;
    t->has_data_location = true;
    t->data_location =
        xm_below(r, 8) ? ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL : (int)xm_below(r, 4);
    add_entry(t, "location", xm_strdup(where[xm_below(r, sizeof where / sizeof *where)]));
    if (xm_below(r, 2))
        add_entry(t, "offset", xm_strdup(numbers[xm_below(r, sizeof numbers / sizeof *numbers)]));
    if (xm_below(r, 2))
        add_entry(t, "length", xm_strdup(numbers[xm_below(r, sizeof numbers / sizeof *numbers)]));
    if (xm_below(r, 8) == 0)
        add_entry(t, xm_below(r, 2) ? "checksum" : "location", xm_string(r));
    if (xm_below(r, 2)) {
        free(t->raw_data.data);
        t->raw_data.data = NULL;
        t->raw_data.len = 0;
        t->has_raw_data = false;
    }
}

/* Typed data in place of raw data: n values in the field that dtype reads. */
static void make_typed(xm_rng *r, Onnx__TensorProto *t)
{
    size_t n = xm_below(r, 3) ? want_bytes(t) * 8 /
                                    (size_t)(elem_bits(t->data_type) ? elem_bits(t->data_type) : 8)
                              : xm_below(r, 9);
    if (n > 16384)
        n = 16384;
    if (xm_below(r, 2)) {
        free(t->int64_data);
        t->int64_data = malloc((n ? n : 1) * sizeof *t->int64_data);
        t->n_int64_data = t->int64_data ? n : 0;
        for (size_t k = 0; k < t->n_int64_data; k++)
            t->int64_data[k] = xm_below(r, 2) ? (int64_t)xm_below(r, 8) : xm_int(r);
    } else {
        free(t->float_data);
        t->float_data = malloc((n ? n : 1) * sizeof *t->float_data);
        t->n_float_data = t->float_data ? n : 0;
        for (size_t k = 0; k < t->n_float_data; k++)
            t->float_data[k] = xm_below(r, 2) ? (float)xm_below(r, 8) : xm_float(r);
    }
    if (xm_below(r, 2)) {
        free(t->raw_data.data);
        t->raw_data = (ProtobufCBinaryData){0};
        t->has_raw_data = false;
    }
}

bool xm_mut_tensor(xm_ctx *c)
{
    int i = xm_pick(c, &c->tensors);
    if (i < 0)
        return false;
    Onnx__TensorProto *t = c->tensors.p[i];
    switch (xm_below(&c->r, 6)) {
    case 0: /* one dim a special value, or new dims (and data that fits them, mostly) */
        if (t->n_dims && xm_below(&c->r, 2)) {
            t->dims[xm_below(&c->r, t->n_dims)] = xm_dim(&c->r);
            break;
        }
        set_dims(&c->r, t, xm_below(&c->r, 7));
        if (xm_below(&c->r, 4))
            set_raw(&c->r, t, want_bytes(t));
        break;
    case 1:
        t->has_data_type = xm_below(&c->r, 8) != 0;
        t->data_type = pick_dtype(&c->r);
        if (xm_below(&c->r, 2))
            set_raw(&c->r, t, want_bytes(t));
        break;
    case 2: /* data that does not fit: cut, grown, or empty */
        set_raw(&c->r, t, xm_below(&c->r, 3) ? xm_below(&c->r, want_bytes(t) + 9) : 0);
        break;
    case 3:
        make_typed(&c->r, t);
        break;
    case 4:
        make_external(&c->r, t);
        break;
    default:
        set_raw(&c->r, t, want_bytes(t)); /* values that fit: NaN, huge, indices out of range */
    }
    return true;
}

/* ---- attributes ----------------------------------------------------------------------------- */

/* Frees what attribute a holds (not its name) and marks every kind absent. */
static void attr_clear(Onnx__AttributeProto *a)
{
    free(a->s.data);
    a->s = (ProtobufCBinaryData){0};
    a->has_s = a->has_i = a->has_f = false;
    free(a->floats);
    free(a->ints);
    a->floats = NULL;
    a->ints = NULL;
    a->n_floats = a->n_ints = 0;
    for (size_t k = 0; k < a->n_strings; k++)
        free(a->strings[k].data);
    free(a->strings);
    a->strings = NULL;
    a->n_strings = 0;
    if (a->t)
        onnx__tensor_proto__free_unpacked(a->t, NULL);
    if (a->g)
        onnx__graph_proto__free_unpacked(a->g, NULL);
    a->t = NULL;
    a->g = NULL;
}

static void set_ints(xm_rng *r, Onnx__AttributeProto *a)
{
    size_t n = xm_below(r, 8) == 0 ? 64 + xm_below(r, 64) : xm_below(r, 7);
    free(a->ints);
    a->ints = malloc((n ? n : 1) * sizeof *a->ints);
    a->n_ints = a->ints ? n : 0;
    for (size_t k = 0; k < a->n_ints; k++)
        a->ints[k] = xm_below(r, 2) ? (int64_t)xm_below(r, 5) - 1 : xm_int(r);
}

static void set_strings(xm_rng *r, Onnx__AttributeProto *a)
{
    size_t n = xm_below(r, 4);
    a->strings = malloc((n ? n : 1) * sizeof *a->strings);
    a->n_strings = 0;
    for (size_t k = 0; a->strings && k < n; k++) {
        char *s = xm_string(r);
        if (s)
            a->strings[a->n_strings++] = (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
    }
}

/* A graph for a GRAPH attribute: a copy of one of the model's graphs (shallow enough), or an empty
 * one. */
static Onnx__GraphProto *some_graph(xm_ctx *c, int depth)
{
    int i = xm_pick(c, &c->graphs);
    if (i >= 0 && depth + c->graphs.depth[i] < XM_MAX_NEST && xm_below(&c->r, 4))
        return xm_clone(c->graphs.p[i]);
    Onnx__GraphProto *g = malloc(sizeof *g);
    if (g)
        onnx__graph_proto__init(g);
    return g;
}

/* Sets a to hold a value of kind (an ONNX AttributeProto type). */
static void attr_fill(xm_ctx *c, Onnx__AttributeProto *a, int kind, int depth)
{
    /* a graph is copied before a's own are freed: the copy may be of one of them */
    Onnx__GraphProto *g =
        kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ? some_graph(c, depth) : NULL;
    attr_clear(a);
    a->has_type = true;
    a->type = kind;
    char *s;
    switch (kind) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->has_f = true, a->f = xm_float(&c->r);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->has_i = true, a->i = xm_int(&c->r);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        if ((s = xm_string(&c->r)))
            a->has_s = true, a->s = (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        a->t = xm_tensor_new(&c->r);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        a->g = g;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->n_floats = xm_below(&c->r, 5);
        a->floats = malloc((a->n_floats + 1) * sizeof *a->floats);
        for (size_t k = 0; a->floats && k < a->n_floats; k++)
            a->floats[k] = xm_float(&c->r);
        a->n_floats = a->floats ? a->n_floats : 0;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        set_ints(&c->r, a);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        set_strings(&c->r, a);
        break;
    default: /* UNDEFINED, sparse tensors, type protos: a kind the importer has no field for */
        break;
    }
}

static int pick_kind(xm_rng *r)
{
    return xm_below(r, 16) ? (int)(1 + xm_below(r, 8)) : (int)xm_below(r, 15);
}

/* The same kind with another value (mostly), or another kind. */
bool xm_mut_attr_value(xm_ctx *c)
{
    int i = xm_pick(c, &c->attrs);
    if (i < 0)
        return false;
    Onnx__AttributeProto *a = c->attrs.p[i];
    int kind = a->has_type && xm_below(&c->r, 4) ? (int)a->type : pick_kind(&c->r);
    if (kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && a->n_ints && xm_below(&c->r, 2)) {
        a->ints[xm_below(&c->r, a->n_ints)] =
            xm_int(&c->r); /* one entry of a list: pads, axes, perm */
        return true;
    }
    if (kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && a->t && xm_below(&c->r, 2))
        return xm_mut_tensor(c);
    attr_fill(c, a, kind, c->attrs.depth[i]);
    return true;
}

/* An attribute added (named as the op reads one, or not), renamed, duplicated or removed. */
bool xm_mut_attr_set(xm_ctx *c)
{
    int i = xm_pick(c, &c->nodes);
    if (i < 0)
        return false;
    Onnx__NodeProto *n = c->nodes.p[i];
    if (n->n_attribute && xm_below(&c->r, 3) == 0) { /* remove one */
        size_t k = xm_below(&c->r, n->n_attribute);
        onnx__attribute_proto__free_unpacked(n->attribute[k], NULL);
        memmove(n->attribute + k, n->attribute + k + 1,
                (n->n_attribute - k - 1) * sizeof *n->attribute);
        n->n_attribute--;
        return true;
    }
    const char *names = xm_op_attrs(n->op_type ? n->op_type : "");
    size_t count = 0;
    for (const char *p = names; *p; p++)
        count += *p != ' ' && (p == names || p[-1] == ' ');
    Onnx__AttributeProto *a = malloc(sizeof *a);
    if (!a)
        return false;
    onnx__attribute_proto__init(a);
    if (count && xm_below(&c->r, 4)) { /* the k-th name the op reads */
        const char *p = names;
        for (size_t k = xm_below(&c->r, count); k > 0; k--)
            p = strchr(p, ' ') + 1;
        a->name = strndup(p, strcspn(p, " "));
    } else {
        a->name = xm_string(&c->r);
    }
    attr_fill(c, a, pick_kind(&c->r), c->nodes.depth[i]);
    xm_insert((void ***)&n->attribute, &n->n_attribute, xm_below(&c->r, n->n_attribute + 1), a);
    return true;
}

/* ---- declared shapes ------------------------------------------------------------------------ */

static Onnx__TypeProto__Tensor *tensor_type(Onnx__ValueInfoProto *v)
{
    if (!v->type) {
        v->type = malloc(sizeof *v->type);
        if (!v->type)
            return NULL;
        onnx__type_proto__init(v->type);
    }
    if (v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        Onnx__TypeProto__Tensor *t = malloc(sizeof *t);
        if (!t)
            return NULL;
        onnx__type_proto__tensor__init(t);
        v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        v->type->tensor_type = t;
    }
    return v->type->tensor_type;
}

static void set_dim(xm_rng *r, Onnx__TensorShapeProto__Dimension *d)
{
    static const char *const symbols[] = {"N",  "batch", "seq", "",  "?",
                                          "-1", "$(n)",  "a b", "N", "*/"};
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
        free(d->dim_param);
    if (xm_below(r, 3)) {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = xm_dim(r);
    } else if (xm_below(r, 6)) {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = xm_strdup(symbols[xm_below(r, sizeof symbols / sizeof *symbols)]);
    } else {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET; /* neither: unknown */
    }
}

/* A new shape of rank dims, each known, symbolic or unknown. */
static void new_shape(xm_rng *r, Onnx__TypeProto__Tensor *t, size_t rank)
{
    if (t->shape)
        onnx__tensor_shape_proto__free_unpacked(t->shape, NULL);
    t->shape = malloc(sizeof *t->shape);
    if (!t->shape)
        return;
    onnx__tensor_shape_proto__init(t->shape);
    t->shape->dim = malloc((rank ? rank : 1) * sizeof *t->shape->dim);
    for (size_t k = 0; t->shape->dim && k < rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = malloc(sizeof *d);
        if (!d)
            break;
        onnx__tensor_shape_proto__dimension__init(d);
        set_dim(r, d);
        t->shape->dim[t->shape->n_dim++] = d;
    }
}

bool xm_mut_shape(xm_ctx *c)
{
    int i = xm_pick(c, &c->infos);
    if (i < 0)
        return false;
    Onnx__ValueInfoProto *v = c->infos.p[i];
    if (xm_below(&c->r, 16) == 0) { /* no type at all */
        if (v->type)
            onnx__type_proto__free_unpacked(v->type, NULL);
        v->type = NULL;
        return true;
    }
    Onnx__TypeProto__Tensor *t = tensor_type(v);
    if (!t)
        return false;
    switch (xm_below(&c->r, 5)) {
    case 0:
        t->has_elem_type = xm_below(&c->r, 8) != 0;
        t->elem_type = pick_dtype(&c->r);
        break;
    case 1:
        new_shape(&c->r, t, xm_below(&c->r, 8) ? xm_below(&c->r, 6) : 9 + xm_below(&c->r, 60));
        break;
    case 2:
        if (t->shape)
            onnx__tensor_shape_proto__free_unpacked(t->shape, NULL);
        t->shape = NULL; /* rank unknown */
        break;
    default:
        if (t->shape && t->shape->n_dim)
            set_dim(&c->r, t->shape->dim[xm_below(&c->r, t->shape->n_dim)]);
        else
            new_shape(&c->r, t, 1 + xm_below(&c->r, 4));
    }
    return true;
}
