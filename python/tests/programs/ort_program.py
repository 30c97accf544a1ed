"""An onnxruntime program as onnxruntime users write them, with the settings they commonly carry.
test_ort_program.py runs it as it is and with only its import line swapped for `import xlac as ort`.
argv: OUT_FOLDER SEVERITY. Writes OUT_FOLDER/result.npz (the outputs) and prints the inputs' shapes."""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

import onnxruntime as ort

out_dir, severity = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
w = rng.standard_normal((64, 32)).astype(np.float32)
b = rng.standard_normal(32).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
     helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
     helper.make_node("Relu", ["hb"], ["y"], name="relu"),
     helper.make_node("ReduceSum", ["y"], ["s"], name="sum", keepdims=0)],
    "program", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
    initializer=[onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model_path = os.path.join(out_dir, "model.onnx")
onnx.save(model, model_path)

ort.set_default_logger_severity(severity)
print("version", ort.get_version_string(), ort.get_available_providers())
so = ort.SessionOptions()
so.log_severity_level = severity
so.intra_op_num_threads = 2
so.inter_op_num_threads = 4
so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.enable_cpu_mem_arena = True
so.enable_mem_pattern = True
so.add_session_config_entry("session.intra_op.allow_spinning", "0")
so.optimized_model_filepath = os.path.join(out_dir, "opt.onnx")
so.enable_profiling = True
so.profile_file_prefix = os.path.join(out_dir, "prof")
sess = ort.InferenceSession(model_path, so, providers=["NoSuchExecutionProvider", "CPUExecutionProvider"],
                            provider_options=[{}, {}])
print("inputs", [(i.name, i.shape, i.type) for i in sess.get_inputs()])
print("outputs", [(o.name, o.shape) for o in sess.get_outputs()])
x = rng.standard_normal((8, 64)).astype(np.float32)
ro = ort.RunOptions()
ro.log_severity_level = severity
y, s = sess.run(None, {"x": x}, ro)
xv = ort.OrtValue.ortvalue_from_numpy(x)
(y2,) = [v.numpy() for v in sess.run_with_ort_values(["y"], {"x": xv})]
np.savez(os.path.join(out_dir, "result.npz"), y=y, s=s, y2=y2)
print("optimized", os.path.exists(so.optimized_model_filepath))
# the profile read as onnxruntime's own: kernel time per provider from the Node events
with open(sess.end_profiling()) as f:
    events = json.load(f)
runs = sum(1 for e in events if e["cat"] == "Session" and e["name"] == "model_run")
kernel_us = {}
for e in events:
    if e["cat"] == "Node":
        kernel_us[e["args"]["provider"]] = kernel_us.get(e["args"]["provider"], 0) + e["dur"]
print("profile runs", runs, "providers", sorted(kernel_us))
