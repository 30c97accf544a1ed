/* Everything a program using the executor library needs. */
#ifndef XLAC_XLAC_H
#define XLAC_XLAC_H

#include "xlac/comm.h"
#include "xlac/device.h"
#include "xlac/dtype.h"
#include "xlac/graph.h"
#include "xlac/interrupt.h"
#include "xlac/io.h"
#include "xlac/onnx.h"
#include "xlac/op.h"
#include "xlac/plugin.h"
#include "xlac/session.h"
#include "xlac/status.h"
#include "xlac/tensor.h"
#include "xlac/text.h"
#include "xlac/trace.h"

#define XLAC_VERSION "0.1.0"

#endif
