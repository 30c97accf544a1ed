/*
 * Private: the recurrent op (ONNX RNN, GRU and LSTM over a whole sequence,
 * one node per layer) as its shape function and its kernels read it,
 * validated once in infer/recurrent.c.
 *
 *   recurrent(x, w, r [, b] [, initial_h] [, initial_c] [, p],
 *             cell="lstm"|"gru"|"rnn", direction="forward"|"reverse"|"bidirectional",
 *             activation="tanh"|"relu"|"sigmoid" (rnn), linear_before_reset=false (gru),
 *             bias=, initial_h=, initial_c=, peepholes= (which optional inputs follow r))
 *
 * x [seq, batch, input], w [dirs, G*hidden, input], r [dirs, G*hidden,
 * hidden], b [dirs, 2*G*hidden] (W's bias then R's), initial_h and
 * initial_c [dirs, batch, hidden], p [dirs, 3*hidden] (LSTM peepholes i, o,
 * f), all of one float type, with ONNX's gate order (LSTM i, o, f, c; GRU
 * z, r, h) and ONNX's activations (LSTM and GRU their defaults: sigmoid
 * and tanh). The result is [seq + extra, dirs, batch, hidden]: rows
 * [0, seq) are ONNX's Y, row seq its Y_h, and for LSTM row seq + 1 its
 * Y_c. Without initial_h (initial_c) the state starts at zero.
 */
#ifndef XE_RECURRENT_H
#define XE_RECURRENT_H

#include <stdbool.h>

#include "xlac/op.h"

typedef enum xe_rnn_act { XE_RNN_TANH, XE_RNN_RELU, XE_RNN_SIGMOID } xe_rnn_act;

/* A recurrent node's cell and where its optional inputs are. */
typedef struct xe_recurrent {
    int gates;        /* 1 rnn, 3 gru, 4 lstm */
    int dirs;         /* 1 or 2 */
    bool reverse;     /* direction="reverse" (one direction, last step first) */
    bool lbr;         /* gru: linear_before_reset */
    xe_rnn_act act;   /* rnn: the activation */
    int b, h0, c0, p; /* input index of each optional input, -1 where absent */
    int extra;        /* rows after Y in the result: 1 (Y_h), 2 for lstm (Y_h, Y_c) */
} xe_recurrent;

/* Node n's attributes, and n_in against them; the message names the attribute. */
xe_code xe_recurrent_read(const xe_node *n, int n_in, xe_recurrent *r, xe_status *st);

#endif
