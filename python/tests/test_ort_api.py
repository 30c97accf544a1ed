"""onnxruntime's API on xlac: SessionOptions and RunOptions (honoured, mapped or refused, never
ignored), model sources (path, bytes, ModelProto), providers, metadata, profiling, the
clustered graph written out, io_binding, and run() from several threads with close()."""
import json
import os
import threading
import time

import numpy as np
import pytest

import xlac

GRAPH = """
input x: f32[?,32]
input y: f32[?,32]
t = mul(x, y)
u = add(t, x)
s = reduce_sum(u, axes=[1], keepdims=false)
output s
output u
"""


def ref(x, y):
    u = x * y + x
    return u.sum(axis=1), u


def feeds(rows=4, seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal((rows, 32)).astype(np.float32) for k in "xy"}


def test_levels_map_to_auto_jit():
    L = xlac.GraphOptimizationLevel
    assert xlac.SessionOptions().graph_optimization_level == L.ORT_ENABLE_ALL
    assert [xlac.options.auto_jit_of(x) for x in (L.ORT_DISABLE_ALL, L.ORT_ENABLE_BASIC,
                                                  L.ORT_ENABLE_EXTENDED, L.ORT_ENABLE_ALL)] == [0, 1, 2, 2]


def test_disable_all_runs_op_by_op_and_all_clusters(graph, tmp_path):
    path = graph(GRAPH)
    so = xlac.SessionOptions()
    so.graph_optimization_level = xlac.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = str(tmp_path / "plain.xg")
    xlac.InferenceSession(path, so)
    assert "xlac_launch" not in (tmp_path / "plain.xg").read_text()
    so = xlac.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "clustered.xg")
    sess = xlac.InferenceSession(path, so)
    text = (tmp_path / "clustered.xg").read_text()
    assert "xlac_launch" in text, text
    f = feeds()
    s, u = sess.run(None, f)
    np.testing.assert_allclose(s, ref(**f)[0], rtol=1e-5)
    # the written graph runs again
    s2, _ = xlac.InferenceSession(str(tmp_path / "clustered.xg")).run(None, f)
    np.testing.assert_allclose(s2, s, rtol=1e-6)


def test_wrong_kinds_and_unknown_names_are_refused():
    so = xlac.SessionOptions()
    with pytest.raises(AttributeError, match="intra_op_num_thread"):
        so.intra_op_num_thread = 2  # a typo is not a new attribute
    with pytest.raises(xlac.XlacUsageError, match="execution_mode"):
        so.execution_mode = 7
    with pytest.raises(xlac.XlacUsageError, match="enable_mem_pattern"):
        so.enable_mem_pattern = "yes"
    with pytest.raises(xlac.XlacUsageError, match="log_severity_level"):
        so.log_severity_level = 5
    with pytest.raises(xlac.XlacUsageError, match="inter_op_num_threads"):
        so.inter_op_num_threads = -1
    with pytest.raises(xlac.XlacUnsupportedError, match="add_initializer"):
        so.add_initializer("w", np.zeros(2))
    with pytest.raises(xlac.XlacUsageError, match="optimized_model_filepath"):
        so.optimized_model_filepath = "model.opt.ort"
    ro = xlac.RunOptions()
    with pytest.raises(xlac.XlacUsageError, match="terminate"):
        ro.terminate = 1
    with pytest.raises(xlac.XlacUnsupportedError, match="add_active_adapter"):
        ro.add_active_adapter(None)
    with pytest.raises(AttributeError):
        ro.no_such = 1


def hinted_options():
    """Every onnxruntime setting of the issue that xlac has no use for."""
    so = xlac.SessionOptions()
    so.inter_op_num_threads = 4
    so.execution_mode = xlac.ExecutionMode.ORT_PARALLEL
    so.enable_cpu_mem_arena = True
    so.enable_mem_pattern = True
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return so


def test_settings_xlac_has_no_use_for_warn_once_naming_each(graph, caplog):
    path = graph(GRAPH)
    so = hinted_options()
    assert so.inter_op_num_threads == 4 and so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with caplog.at_level("WARNING", logger="xlac"):
        sess = xlac.InferenceSession(path, so, providers=["TensorrtExecutionProvider", "CPUExecutionProvider"],
                                     provider_options=[{}, {}], auto_jit=0)
        xlac.InferenceSession(path, so, auto_jit=0)  # the same settings again: no second warning
    text = "\n".join(r.getMessage() for r in caplog.records)
    for name in ("inter_op_num_threads=4", "execution_mode", "enable_cpu_mem_arena=True",
                 "enable_mem_pattern=True", "session.intra_op.allow_spinning", "TensorrtExecutionProvider"):
        assert text.count(name) == 1, (name, text)
    assert "strict mode" in text
    assert sess.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_allclose(sess.run(None, feeds())[0], ref(**feeds())[0], rtol=1e-5)


def test_strict_mode_refuses_them(graph):
    xlac.set_strict(True)
    try:
        with pytest.raises(xlac.XlacUsageError, match="inter_op_num_threads=4.*enable_cpu_mem_arena"):
            xlac.InferenceSession(graph(GRAPH), hinted_options(), auto_jit=0)
        with pytest.raises(xlac.XlacUsageError, match="TensorrtExecutionProvider"):
            xlac.InferenceSession(graph(GRAPH), providers=["TensorrtExecutionProvider"], auto_jit=0)
        xlac.InferenceSession(graph(GRAPH), auto_jit=0)  # nothing to refuse
    finally:
        xlac.set_strict(False)


@pytest.mark.parametrize("severity", [3, 4])
def test_log_severity_3_and_4_silence_the_warnings(graph, severity, caplog):
    so = hinted_options()
    so.inter_op_num_threads = 3 + severity  # a value not warned about yet
    so.log_severity_level = severity
    try:
        xlac.InferenceSession(graph(GRAPH), so, providers=["NoSuchExecutionProvider"], auto_jit=0)
        assert not [r for r in caplog.records if r.name == "xlac"], caplog.records
    finally:
        xlac.set_default_logger_severity(2)


def test_run_options_hints_warn_at_run(graph, caplog):
    sess = xlac.InferenceSession(graph(GRAPH), auto_jit=0)
    ro = xlac.RunOptions()
    ro.terminate = True
    ro.only_execute_path_to_fetches = True
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with caplog.at_level("WARNING", logger="xlac"):
        s, _ = sess.run(None, feeds(), ro)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "RunOptions.terminate=True" in text and "memory.enable_memory_arena_shrinkage" in text, text
    np.testing.assert_allclose(s, ref(**feeds())[0], rtol=1e-5)


def test_config_entries_are_xlac_flags(graph, tmp_path):
    so = xlac.SessionOptions()
    so.add_session_config_entry("xlac.min_cluster_size", "9")
    so.optimized_model_filepath = str(tmp_path / "g.xg")
    xlac.InferenceSession(graph(GRAPH), so)
    assert so.get_session_config_entry("xlac.min_cluster_size") == "9"
    assert "xlac_launch" not in (tmp_path / "g.xg").read_text()  # 3 ops < 9: nothing clustered
    so.add_session_config_entry("xlac.no_such_flag", "1")
    with pytest.raises(xlac.XlacUsageError, match="no_such_flag"):
        xlac.InferenceSession(graph(GRAPH), so)
    so = xlac.SessionOptions()  # op by op, flags all the same checked, never dropped
    so.graph_optimization_level = xlac.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("xlac.no_such_flag", "1")
    with pytest.raises(xlac.XlacUsageError, match="no_such_flag"):
        xlac.InferenceSession(graph(GRAPH), so)


def test_run_options_logid_prefixes_errors(graph):
    sess = xlac.InferenceSession(graph(GRAPH), auto_jit=0)
    ro = xlac.RunOptions()
    ro.logid = "req-7"
    ro.log_severity_level = 2
    bad = {"x": np.zeros((2, 32), np.float32), "y": np.zeros((3, 32), np.float32)}
    with pytest.raises(xlac.XlacError, match=r"^\[req-7\]"):
        sess.run(None, bad, ro)


def test_providers_and_get_providers(graph):
    path = graph(GRAPH)
    sess = xlac.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    both = xlac.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    want = ["CUDAExecutionProvider", "CPUExecutionProvider"] if xlac._lib.has_gpu() else ["CPUExecutionProvider"]
    assert both.get_providers() == want  # the truth: CPU only without a GPU
    # a provider xlac lacks is left out with a warning, as onnxruntime does: the CPU runs it
    assert xlac.InferenceSession(path, providers=["TensorrtExecutionProvider"]).get_providers() == [
        "CPUExecutionProvider"]
    with pytest.raises(xlac.XlacUsageError, match="device_id"):
        xlac.InferenceSession(path, providers=["CPUExecutionProvider"], provider_options=[{"device_id": 1}])
    with pytest.raises(xlac.XlacUsageError, match="one dict per provider"):
        xlac.InferenceSession(path, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    if not xlac._lib.has_gpu():
        with pytest.raises(xlac.XlacError):
            xlac.InferenceSession(path, providers=["CUDAExecutionProvider"])


@pytest.mark.parametrize("auto_jit", [0, 2])
def test_profiling_writes_onnxruntimes_schema_and_a_chrome_trace(graph, tmp_path, auto_jit):
    so = xlac.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = xlac.InferenceSession(graph(GRAPH), so, auto_jit=auto_jit)
    sess.run(None, feeds())
    sess.run(None, feeds())
    path = sess.end_profiling()
    assert path.startswith(str(tmp_path / "prof_")) and path.endswith(".json")
    # what a program written for onnxruntime reads: a list of complete events, two model_runs, and
    # kernels with op_name and provider (the clustered session's cluster as one xlac_launch)
    events = json.load(open(path))
    assert isinstance(events, list) and all(e["ph"] == "X" for e in events), events[:3]
    assert [e["name"] for e in events if e["cat"] == "Session" and e["name"] == "model_run"] == ["model_run"] * 2
    nodes = [e for e in events if e["cat"] == "Node"]
    assert nodes and all(e["name"].endswith("_kernel_time") for e in nodes), nodes[:3]
    assert {e["args"]["provider"] for e in nodes} == {"CPUExecutionProvider"}
    ops = {e["args"]["op_name"] for e in nodes}
    assert ("xlac_launch" in ops) == (auto_jit == 2), ops
    runs = [e for e in events if e["name"] == "model_run"]
    assert all(r["ts"] <= n["ts"] and n["ts"] + n["dur"] <= r["ts"] + r["dur"] + 1 for n in nodes
               for r in runs if r["ts"] <= n["ts"] < r["ts"] + r["dur"]), "a kernel outside its run"
    # xlac's own trace beside it, with what onnxruntime's schema has no name for
    trace = json.load(open(path[: -len(".json")] + ".trace.json"))
    assert any(e.get("name") == "run 0" for e in trace["traceEvents"]), trace["traceEvents"][:5]
    # three sessions with one prefix, within a second: three
    # names, three files
    paths = []
    for _ in range(3):
        s = xlac.InferenceSession(graph(GRAPH), so, auto_jit=0)
        s.run(None, feeds())
        paths.append(s.end_profiling())
    assert len(set(paths)) == 3 and all(os.path.exists(p) for p in paths), paths
    assert all(p.endswith("_%d.json" % os.getpid()) or "_%d_" % os.getpid() in p for p in paths), paths



@pytest.mark.parametrize("auto_jit", [0, 2])
def test_two_sessions_profile_at_once_each_to_its_own_file(graph, tmp_path, auto_jit):
    # onnxruntime lets every session profile; a session left unended must not stop the next one
    def profiled(prefix):
        so = xlac.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / prefix)
        return xlac.InferenceSession(graph(GRAPH), so, auto_jit=auto_jit)

    a, b = profiled("a"), profiled("b")
    for sess in (a, b, a, a):  # a: three runs, b: one
        sess.run(None, feeds())
    pa = a.end_profiling()
    b.run(None, feeds())  # after a's file is written: b's only
    c = profiled("c")  # started while b records
    c.run(None, feeds())
    pb, pc = b.end_profiling(), c.end_profiling()
    runs = {}
    for name, path in (("a", pa), ("b", pb), ("c", pc)):
        events = json.load(open(path))
        runs[name] = [e for e in events if e["name"] == "model_run"]
        nodes = [e for e in events if e["cat"] == "Node"]
        assert nodes, (name, events[:3])
        # every kernel lies inside one of this file's own runs
        assert all(any(r["ts"] <= n["ts"] <= r["ts"] + r["dur"] + 1 for r in runs[name])
                   for n in nodes), name
        trace = json.load(open(path[: -len(".json")] + ".trace.json"))["traceEvents"]
        ids = {e["args"]["session"] for e in trace if e.get("cat") == "run"}
        assert len(ids) == 1, (name, ids)
    assert [len(runs[k]) for k in "abc"] == [3, 2, 1], runs


def test_metadata_inputs_outputs(graph):
    sess = xlac.InferenceSession(graph(GRAPH), auto_jit=0)
    assert [(a.name, a.type, a.shape) for a in sess.get_inputs()] == [
        ("x", "tensor(float)", [None, 32]), ("y", "tensor(float)", [None, 32])]
    assert [a.name for a in sess.get_outputs()] == ["s", "u"]
    assert sess.get_modelmeta().graph_name == "g" and sess.get_modelmeta().producer_name == "xlac"


def test_io_binding_writes_into_preallocated_arrays(graph):
    sess = xlac.InferenceSession(graph(GRAPH), auto_jit=0)
    f = feeds()
    b = sess.io_binding()
    b.bind_cpu_input("x", f["x"])
    b.bind_cpu_input("y", f["y"])
    out = np.zeros(4, np.float32)
    b.bind_output("s", "cpu", 0, np.float32, out.shape, out.ctypes.data)
    b.bind_output("u")
    sess.run_with_iobinding(b)
    np.testing.assert_allclose(out, ref(**f)[0], rtol=1e-5)  # written in place
    s, u = b.copy_outputs_to_cpu()
    assert np.shares_memory(s, out)
    np.testing.assert_allclose(u, ref(**f)[1], rtol=1e-6)
    wrong = np.zeros(5, np.float32)
    b.bind_output("s", "cpu", 0, np.float32, wrong.shape, wrong.ctypes.data)
    with pytest.raises(xlac.XlacUsageError, match="bound buffer"):
        sess.run_with_iobinding(b)


@pytest.mark.parametrize("auto_jit", [0, 2])
def test_four_threads_fifty_calls_match_single_threaded(graph, auto_jit):
    sess = xlac.InferenceSession(graph(GRAPH), auto_jit=auto_jit)
    inputs = [feeds(rows=1 + k % 7, seed=k) for k in range(200)]
    want = [sess.run(None, f) for f in inputs]
    got = [None] * 200
    errors_seen = []

    def work(t):
        try:
            for k in range(t, 200, 4):
                got[k] = sess.run(None, inputs[k])
        except Exception as e:  # noqa: BLE001 - reported below
            errors_seen.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors_seen, errors_seen
    for k in range(200):
        for a, b in zip(got[k], want[k]):
            if auto_jit == 0:
                assert np.array_equal(a, b), k
            else:  # a signature may be demoted to per op between two calls (slower compiled, a
                # timing verdict): per op rounds differently from the compiled program
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(k))


def test_close_from_another_thread_waits_for_running_calls(graph):
    """Regression: close() did not take run()'s lock and freed the session under it (segfault)."""
    sess = xlac.InferenceSession(graph(GRAPH), auto_jit=0)
    f = feeds(rows=2000)
    stop, results, errs = threading.Event(), [], []

    def work():
        while not stop.is_set():
            try:
                results.append(sess.run(None, f)[0].shape)
            except xlac.XlacUsageError as e:
                errs.append(str(e))
                return

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    sess.close()
    stop.set()
    for t in threads:
        t.join()
    assert results and all(r == (2000,) for r in results)
    assert all("closed" in e for e in errs), errs
    with pytest.raises(xlac.XlacUsageError, match="closed"):
        sess.run(None, f)


def test_model_from_bytes_and_modelproto(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    m = helper.make_model(g, producer_name="unit", opset_imports=[helper.make_opsetid("", 13)])
    m.metadata_props.add(key="k", value="v")
    x = np.array([[-1, 2, -3]], np.float32)
    for source in (m, m.SerializeToString(), _save(onnx, m, tmp_path)):
        sess = xlac.InferenceSession(source, auto_jit=0)
        assert [a.shape for a in sess.get_inputs()] == [["batch", 3]]  # onnxruntime's: the dim_param
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))
        meta = sess.get_modelmeta()
        assert (meta.producer_name, meta.graph_name, meta.custom_metadata_map) == ("unit", "tiny", {"k": "v"})
    garbage = b"\x08\x07\x12\xff\xff\xff" + bytes(range(256)) * 4
    with pytest.raises(xlac.XlacError) as e:
        xlac.InferenceSession(garbage)
    text = str(e.value)
    assert "<model bytes>" in text and "\\x" not in text and "/tmp" not in text and len(text) < 2000, text
    with pytest.raises(xlac.XlacError) as e:
        xlac.InferenceSession(b"GIF89a, not a model at all")
    assert "neither an ONNX model nor a .xg graph" in str(e.value) and "<model bytes>" in str(e.value), e.value


def _save(onnx, m, tmp_path):
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    return p


def test_an_output_passing_an_input_through_is_named_as_the_model_names_it():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    sess = xlac.InferenceSession(m, auto_jit=0)
    assert [o.name for o in sess.get_outputs()] == ["x", "y"]  # not x_1
    x = np.array([-1, 2], np.float32)
    (same,) = sess.run(["x"], {"x": x})
    np.testing.assert_array_equal(same, x)
