"""end_profiling()'s file in onnxruntime's profile schema, made from the Chrome trace xlac wrote.

onnxruntime writes a JSON array of complete events ("ph": "X", microseconds): "cat": "Session" for
the session's own work ("model_run" each run), "cat": "Node" for each kernel, named
"<node>_kernel_time", with "args.op_name" and "args.provider". Programs that read that file
(summing Node durations by op_name, say) read this one unchanged. What onnxruntime has no name for
is kept under xlac's own categories, never as "Node", so that no kernel time is counted twice:
a compile ("cat": "Session", "name": "xlac_compile", as onnxruntime counts its own session
initialization), a cluster's steps and a fallback's span (both inside a launch: "cat": "xlac").

The mapping:
  xlac "run"              -> Session "model_run"
  an op (args.op)         -> Node "<node>_kernel_time", op_name = xlac's op, provider by its device
  "cluster launch"        -> Node "<cluster>_kernel_time", op_name "xlac_launch" (the node type
                             optimized_model_filepath .onnx writes for a cluster), args.ops
  "compile", "disk"       -> Session "xlac_compile", args.cluster, args.cache
  anything else           -> its own name under "cat": "xlac"
"""
import json
import os

CPU, CUDA = "CPUExecutionProvider", "CUDAExecutionProvider"


def _provider(args):
    device = str(args.get("device", "CPU"))
    return CUDA if device.upper().startswith(("GPU", "CUDA")) else CPU


def _event(e, cat, name, args):
    return {"cat": cat, "pid": e.get("pid", 1), "tid": e.get("tid", 1), "dur": int(round(e.get("dur", 0))),
            "ts": int(round(e.get("ts", 0))), "ph": "X", "name": name, "args": args}


def _convert(e, provider_of_launch):
    cat, name, args = e.get("cat", ""), str(e.get("name", "")), dict(e.get("args") or {})
    if cat == "run":
        return _event(e, "Session", "model_run", args)
    if cat == "cluster launch":
        return _event(e, "Node", name + "_kernel_time",
                      {"op_name": "xlac_launch", "provider": provider_of_launch, **args})
    if cat in ("compile", "disk"):
        return _event(e, "Session", "xlac_compile", {"where": cat, **args})
    if "op" in args:
        return _event(e, "Node", name + "_kernel_time",
                      {"op_name": str(args["op"]), "provider": _provider(args), **args})
    return _event(e, "xlac", name, {"xlac_cat": cat, **args})


def ort_events(trace):
    """The events of a Chrome trace (xlac's: a dict with traceEvents, or a bare list) in
    onnxruntime's schema, in time order; metadata events ("ph": "M") are left out."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else list(trace)
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    on_gpu = any(_provider(e.get("args") or {}) == CUDA for e in complete if "op" in (e.get("args") or {}))
    launch_provider = CUDA if on_gpu else CPU
    return sorted((_convert(e, launch_provider) for e in complete), key=lambda e: (e["ts"], -e["dur"]))


def write_ort_profile(trace_path, out_path):
    """Reads xlac's Chrome trace at trace_path and writes out_path in onnxruntime's schema
    (written to a temporary name and renamed, so a reader never sees half a file)."""
    with open(trace_path, encoding="utf-8") as f:
        trace = json.load(f)
    tmp = "%s.tmp-%d" % (out_path, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(ort_events(trace), f, indent=0)
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
