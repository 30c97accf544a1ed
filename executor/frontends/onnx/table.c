/*
 * The op table: one entry per ONNX op type (and opset range), naming the
 * builder, the attributes it reads (any other attribute is refused as
 * unsupported) and, for table-driven builders, the executor op. Lookup is
 * a linear scan: a model has at most a few thousand nodes.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

#define B(name) xe_code ox_b_##name(ox_b *b)
B(unary);
B(binary);
B(xor);
B(variadic);
B(div);
B(mod);
B(pow);
B(reciprocal);
B(leaky_relu);
B(prelu);
B(thresholded_relu);
B(elu);
B(selu);
B(celu);
B(hard_sigmoid);
B(hard_swish);
B(softsign);
B(softplus);
B(mish);
B(swiglu);
B(causal_conv_with_state);
B(swish);
B(shrink);
B(sign);
B(isnan);
B(isinf);
B(trig);
B(round);
B(gelu);
B(where);
B(clip);
B(cast);
B(cast_like);
B(bitcast);
B(det);
B(identity);
B(reshape);
B(flatten);
B(squeeze);
B(unsqueeze);
B(transpose);
B(concat);
B(split);
B(slice);
B(expand);
B(tile);
B(shape);
B(size);
B(constant);
B(constant_of_shape);
B(range);
B(eye_like);
B(gather);
B(pad);
B(trilu);
B(reduce);
B(argmax);
B(matmul);
B(gemm);
B(softmax);
B(log_softmax);
B(hardmax);
B(layer_norm);
B(batch_norm);
B(instance_norm);
B(global_pool);
B(lp_norm);
B(mvn);
B(lrn);
B(rms_norm);
B(nll_loss);
B(sce_loss);
B(attention);
B(linear_attention);
B(gather_elements);
B(depth_space);
B(one_hot);
B(conv);
B(conv_transpose);
B(rnn);
B(dft);
B(pool);
B(lp_pool);
B(window);
B(center_crop_pad);
B(group_norm);
B(reverse_sequence);
B(rotary);
B(affine_grid);
B(col2im);
B(collective);
B(gather_nd);
B(cumsum);
B(scatter_nd);
B(scatter_elements);
B(nonzero);
B(compress);
B(nms);
B(grid_sample);
B(deform_conv);
B(roi_align);
B(max_unpool);
B(loop);
B(scan);
B(sequence_empty);
B(sequence_construct);
B(sequence_insert);
B(sequence_at);
B(sequence_length);
B(concat_from_sequence);
B(split_to_sequence);
B(topk);
B(resize);
B(einsum);
B(if);
B(quantize);
B(dequantize);
B(dynamic_quantize);
B(bit_shift);
B(matmul_integer);
B(qlinear_matmul);
B(qlinear_conv);
B(conv_integer);
B(qlinear_binary);
B(qlinear_global_pool);
B(qgemm);
#undef B

#define U(type, xop)                                                                               \
    {                                                                                              \
        type, 1, 0, ox_b_unary, "", XE_OP_##xop, 0                                                 \
    }
#define BIN(type, xop)                                                                             \
    {                                                                                              \
        type, 1, 0, ox_b_binary, "", XE_OP_##xop, 0                                                \
    }
#define RED(type, xop, kind)                                                                       \
    {                                                                                              \
        type, 1, 0, ox_b_reduce, "axes keepdims noop_with_empty_axes", XE_OP_##xop, kind           \
    }
#define F(type, fn, attrs)                                                                         \
    {                                                                                              \
        type, 1, 0, ox_b_##fn, attrs, -1, 0                                                        \
    }

static const ox_entry table[] = {
    U("Neg", NEG),
    U("Abs", ABS),
    U("Exp", EXP),
    U("Log", LOG),
    U("Sqrt", SQRT),
    U("Tanh", TANH),
    U("Sigmoid", SIGMOID),
    U("Relu", RELU),
    U("Erf", ERF),
    U("Sin", SIN),
    U("Cos", COS),
    U("Floor", FLOOR),
    U("Ceil", CEIL),
    U("Not", LOGICAL_NOT),
    U("Asin", ASIN),
    U("Acos", ACOS),
    U("Atan", ATAN),
    BIN("Add", ADD),
    BIN("Sub", SUB),
    BIN("Mul", MUL),
    BIN("Equal", EQUAL),
    BIN("Less", LESS),
    BIN("LessOrEqual", LESS_EQUAL),
    BIN("Greater", GREATER),
    BIN("GreaterOrEqual", GREATER_EQUAL),
    BIN("And", LOGICAL_AND),
    BIN("Or", LOGICAL_OR),
    {"Sum", 1, 0, ox_b_variadic, "", XE_OP_ADD, 0},
    {"Max", 1, 0, ox_b_variadic, "", XE_OP_MAXIMUM, 0},
    {"Min", 1, 0, ox_b_variadic, "", XE_OP_MINIMUM, 0},
    {"Mean", 1, 0, ox_b_variadic, "", XE_OP_DIV, 0},
    F("Xor", xor, ""),
    F("Div", div, ""),
    F("Mod", mod, "fmod"),
    F("Pow", pow, ""),
    F("Reciprocal", reciprocal, ""),
    F("LeakyRelu", leaky_relu, "alpha"),
    F("PRelu", prelu, ""),
    F("ThresholdedRelu", thresholded_relu, "alpha"),
    F("Elu", elu, "alpha"),
    F("Selu", selu, "alpha gamma"),
    F("Celu", celu, "alpha"),
    F("HardSigmoid", hard_sigmoid, "alpha beta"),
    F("HardSwish", hard_swish, ""),
    F("Softsign", softsign, ""),
    F("Softplus", softplus, ""),
    F("Mish", mish, ""),
    F("Swish", swish, "alpha"),
    {"SwiGLU", 28, 0, ox_b_swiglu, "alpha", -1, 0},
    F("Shrink", shrink, "bias lambd"),
    F("Sign", sign, ""),
    F("IsNaN", isnan, ""),
    F("IsInf", isinf, "detect_negative detect_positive"),
    F("Tan", trig, ""),
    F("Sinh", trig, ""),
    F("Cosh", trig, ""),
    F("Asinh", trig, ""),
    F("Acosh", trig, ""),
    F("Atanh", trig, ""),
    F("Round", round, ""),
    F("Gelu", gelu, "approximate"),
    F("Where", where, ""),
    F("Clip", clip, "min max"),
    {"DynamicQuantizeLinear", 11, 0, ox_b_dynamic_quantize, "", -1, 0},
    {"MatMulInteger", 10, 0, ox_b_matmul_integer, "", -1, 0},
    {"QLinearMatMul", 10, 0, ox_b_qlinear_matmul, "", -1, 0},
    {"QLinearConv", 10, 0, ox_b_qlinear_conv, "auto_pad dilations group kernel_shape pads strides",
     -1, 0},
    {"ConvInteger", 10, 0, ox_b_conv_integer, "auto_pad dilations group kernel_shape pads strides",
     -1, 0},
    BIN("BitwiseAnd", BITWISE_AND),
    BIN("BitwiseOr", BITWISE_OR),
    BIN("BitwiseXor", BITWISE_XOR),
    U("BitwiseNot", BITWISE_NOT),
    F("BitShift", bit_shift, "direction"),
    {"QuantizeLinear", 10, 0, ox_b_quantize, "axis saturate block_size output_dtype precision", -1,
     0},
    {"DequantizeLinear", 10, 0, ox_b_dequantize, "axis block_size output_dtype", -1, 0},
    F("Cast", cast, "to saturate round_mode"),
    F("CastLike", cast_like, "saturate round_mode"),
    {"BitCast", 26, 0, ox_b_bitcast, "to", -1, 0},
    {"Det", 11, 0, ox_b_det, "", -1, 0},
    F("Identity", identity, ""),
    F("Dropout", identity, "ratio seed"),
    F("Reshape", reshape, "allowzero"),
    F("Flatten", flatten, "axis"),
    F("Squeeze", squeeze, "axes"),
    F("Unsqueeze", unsqueeze, "axes"),
    F("Transpose", transpose, "perm"),
    F("Concat", concat, "axis"),
    F("Split", split, "axis split num_outputs"),
    F("Slice", slice, "starts ends axes"),
    F("Expand", expand, ""),
    F("Tile", tile, ""),
    F("Shape", shape, "start end"),
    F("Size", size, ""),
    F("Constant", constant,
      "value value_float value_floats value_int value_ints sparse_value value_string "
      "value_strings"),
    F("ConstantOfShape", constant_of_shape, "value"),
    F("Range", range, ""),
    F("EyeLike", eye_like, "dtype k"),
    F("Gather", gather, "axis"),
    F("Pad", pad, "mode pads value"),
    F("Trilu", trilu, "upper"),
    F("GatherElements", gather_elements, "axis"),
    F("DepthToSpace", depth_space, "blocksize mode"),
    F("OneHot", one_hot, "axis"),
    {"SpaceToDepth", 1, 27, ox_b_depth_space, "blocksize", -1, 0},
    {"SpaceToDepth", 28, 0, ox_b_depth_space, "blocksize mode", -1, 0},
    RED("ReduceSum", REDUCE_SUM, 0),
    RED("ReduceMean", REDUCE_MEAN, 0),
    RED("ReduceMax", REDUCE_MAX, 0),
    RED("ReduceMin", REDUCE_MIN, 0),
    RED("ReduceProd", REDUCE_PROD, 0),
    RED("ReduceL1", REDUCE_SUM, 1),
    RED("ReduceL2", REDUCE_SUM, 2),
    RED("ReduceLogSum", REDUCE_SUM, 3),
    RED("ReduceLogSumExp", REDUCE_SUM, 4),
    RED("ReduceSumSquare", REDUCE_SUM, 5),
    F("ArgMax", argmax, "axis keepdims select_last_index"),
    F("ArgMin", argmax, "axis keepdims select_last_index"),
    F("MatMul", matmul, ""),
    F("Gemm", gemm, "alpha beta transA transB"),
    F("Softmax", softmax, "axis"),
    F("LogSoftmax", log_softmax, "axis"),
    F("Hardmax", hardmax, "axis"),
    F("LayerNormalization", layer_norm, "axis epsilon stash_type"),
    F("RMSNormalization", rms_norm, "axis epsilon stash_type"),
    {"RotaryEmbedding", 23, 0, ox_b_rotary, "interleaved num_heads rotary_embedding_dim", -1, 0},
    F("NegativeLogLikelihoodLoss", nll_loss, "ignore_index reduction"),
    F("SoftmaxCrossEntropyLoss", sce_loss, "ignore_index reduction"),
    F("Attention", attention,
      "is_causal kv_num_heads q_num_heads qk_matmul_output_mode scale softcap "
      "softmax_precision left_window_size right_window_size"),
    {"LinearAttention", 27, 0, ox_b_linear_attention,
     "chunk_size kv_num_heads q_num_heads scale update_rule", -1, 0},
    F("BatchNormalization", batch_norm, "epsilon momentum training_mode"),
    F("InstanceNormalization", instance_norm, "epsilon"),
    {"GroupNormalization", 18, 0, ox_b_group_norm, "epsilon num_groups stash_type", -1, 0},
    {"GlobalAveragePool", 1, 0, ox_b_global_pool, "", XE_OP_REDUCE_MEAN, 0},
    {"GlobalMaxPool", 1, 0, ox_b_global_pool, "", XE_OP_REDUCE_MAX, 0},
    F("Conv", conv, "auto_pad dilations group kernel_shape pads strides"),
    {"CausalConvWithState", 27, 0, ox_b_causal_conv_with_state, "activation", -1, 0},
    F("RNN", rnn, "activation_alpha activation_beta activations clip direction hidden_size layout"),
    F("GRU", rnn,
      "activation_alpha activation_beta activations clip direction hidden_size layout "
      "linear_before_reset"),
    F("LSTM", rnn,
      "activation_alpha activation_beta activations clip direction hidden_size input_forget "
      "layout"),
    F("Col2Im", col2im, "dilations pads strides"),
    F("ConvTranspose", conv_transpose,
      "auto_pad dilations group kernel_shape output_padding output_shape pads strides"),
    {"MaxPool", 1, 0, ox_b_pool,
     "auto_pad ceil_mode dilations kernel_shape pads storage_order strides", XE_OP_MAX_POOL2D, 0},
    {"AveragePool", 1, 0, ox_b_pool,
     "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides", XE_OP_AVG_POOL2D,
     0},
    {"DFT", 17, 0, ox_b_dft, "axis inverse onesided", -1, 0},
    F("HannWindow", window, "output_datatype periodic"),
    F("HammingWindow", window, "output_datatype periodic"),
    F("BlackmanWindow", window, "output_datatype periodic"),
    F("CenterCropPad", center_crop_pad, "axes"),
    F("AffineGrid", affine_grid, "align_corners"),
    F("LpPool", lp_pool, "auto_pad ceil_mode dilations kernel_shape p pads strides"),
    F("LpNormalization", lp_norm, "axis p"),
    F("MeanVarianceNormalization", mvn, "axes"),
    F("LRN", lrn, "alpha beta bias size"),
    F("GatherND", gather_nd, "batch_dims"),
    F("CumSum", cumsum, "exclusive reverse"),
    F("CumProd", cumsum, "exclusive reverse"),
    F("ScatterND", scatter_nd, "reduction"),
    F("ScatterElements", scatter_elements, "axis reduction"),
    {"Scatter", 9, 10, ox_b_scatter_elements, "axis", -1,
     0}, /* ScatterElements before its rename */
    F("ReverseSequence", reverse_sequence, "batch_axis time_axis"),
    F("NonZero", nonzero, ""),
    {"Compress", 9, 0, ox_b_compress, "axis", -1, 0},
    {"NonMaxSuppression", 10, 0, ox_b_nms, "center_point_box", -1, 0},
    /* sampling at computed places (ops/sample.c) */
    {"GridSample", 16, 0, ox_b_grid_sample, "align_corners mode padding_mode", -1, 0},
    {"DeformConv", 19, 0, ox_b_deform_conv,
     "dilations group kernel_shape offset_group pads strides", -1, 0},
    {"RoiAlign", 10, 0, ox_b_roi_align,
     "coordinate_transformation_mode mode output_height output_width sampling_ratio "
     "spatial_scale",
     -1, 0},
    {"MaxUnpool", 9, 0, ox_b_max_unpool, "kernel_shape pads strides", -1, 0},
    /* unrolled at import; sequences are lists of nodes (ops/loop.c, ops/scan.c, ops/sequence.c) */
    {"Loop", 1, 0, ox_b_loop, "body", -1, 0},
    {"Scan", 8, 8, ox_b_scan, "body directions num_scan_inputs", -1, 0},
    {"Scan", 9, 0, ox_b_scan,
     "body num_scan_inputs scan_input_axes scan_input_directions scan_output_axes "
     "scan_output_directions",
     -1, 0},
    {"SequenceEmpty", 11, 0, ox_b_sequence_empty, "dtype", -1, 0},
    {"SequenceConstruct", 11, 0, ox_b_sequence_construct, "", -1, 0},
    {"SequenceInsert", 11, 0, ox_b_sequence_insert, "", -1, 0},
    {"SequenceAt", 11, 0, ox_b_sequence_at, "", -1, 0},
    {"SequenceLength", 11, 0, ox_b_sequence_length, "", -1, 0},
    {"ConcatFromSequence", 11, 0, ox_b_concat_from_sequence, "axis new_axis", -1, 0},
    {"SplitToSequence", 11, 0, ox_b_split_to_sequence, "axis keepdims", -1, 0},
    {"TopK", 10, 0, ox_b_topk, "axis largest sorted", -1, 0},
    {"Resize", 10, 0, ox_b_resize,
     "mode coordinate_transformation_mode nearest_mode cubic_coeff_a exclude_outside "
     "extrapolation_value antialias axes keep_aspect_ratio_policy",
     -1, 0},
    {"Upsample", 7, 9, ox_b_resize, "mode scales", -1, 0},
    F("Einsum", einsum, "equation"),
    F("If", if, "then_branch else_branch"),
};

bool ox_takes_sequences(const ox_entry *e)
{
    static const char *const takers[] = {"Loop", "SequenceInsert", "SequenceAt", "SequenceLength",
                                         "ConcatFromSequence"};
    for (size_t k = 0; k < sizeof takers / sizeof *takers; k++)
        if (!strcmp(e->type, takers[k]))
            return true;
    return false;
}

const ox_entry *ox_find_op(const char *type, int opset, bool *known_type)
{
    *known_type = false;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const ox_entry *e = &table[i];
        if (strcmp(e->type, type))
            continue;
        *known_type = true;
        if (opset >= e->since && (!e->until || opset <= e->until))
            return e;
    }
    return NULL;
}

/* Domain com.xlac: the collectives, which ONNX has no standard op for (ops/xlac.c). */
static const ox_entry xlac_table[] = {
    {"AllReduce", 1, 0, ox_b_collective, "reduce", XE_OP_ALL_REDUCE, 0},
    {"AllGather", 1, 0, ox_b_collective, "", XE_OP_ALL_GATHER, 0},
    {"ReduceScatter", 1, 0, ox_b_collective, "reduce", XE_OP_REDUCE_SCATTER, 0},
    {"Broadcast", 1, 0, ox_b_collective, "root", XE_OP_BROADCAST, 0},
};

const ox_entry *ox_find_xlac_op(const char *type)
{
    for (size_t i = 0; i < sizeof xlac_table / sizeof *xlac_table; i++)
        if (!strcmp(xlac_table[i].type, type))
            return &xlac_table[i];
    return NULL;
}

/* Domain com.microsoft: the quantized operators onnxruntime's quantize_static writes in
   QOperator format around QLinearConv (ops/qlinear_ms.c); its other contrib ops are refused. */
static const ox_entry ms_table[] = {
    {"QLinearAdd", 1, 0, ox_b_qlinear_binary, "", XE_OP_ADD, 0},
    {"QLinearMul", 1, 0, ox_b_qlinear_binary, "", XE_OP_MUL, 0},
    {"QLinearGlobalAveragePool", 1, 0, ox_b_qlinear_global_pool, "channels_last", -1, 0},
    {"QGemm", 1, 0, ox_b_qgemm, "alpha transA transB", -1, 0},
};

const ox_entry *ox_find_ms_op(const char *type)
{
    for (size_t i = 0; i < sizeof ms_table / sizeof *ms_table; i++)
        if (!strcmp(ms_table[i].type, type))
            return &ms_table[i];
    return NULL;
}

void ox_ms_op_list(char *buf, size_t size)
{
    size_t n = sizeof ms_table / sizeof *ms_table, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
        int w = snprintf(buf + used, size - used, "%s%s", sep, ms_table[i].type);
        used += w > 0 ? (size_t)w : 0;
    }
}
