"""SessionOptions and RunOptions: onnxruntime's names, each either honoured, mapped to
what xlac does, or refused with an error; never accepted and ignored.

An attribute that xlac cannot honour reads as what xlac actually does, and
setting it to anything else raises XlacUsageError naming it; a method xlac
does not have raises XlacUnsupportedError; a name onnxruntime does not have
raises AttributeError (a typo is not silently a new attribute).
"""
import enum

from . import errors


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels, mapped to xlac's auto-clustering (XLAC_AUTO_JIT)."""
    ORT_DISABLE_ALL = 0      # op by op: auto_jit=0
    ORT_ENABLE_BASIC = 1     # auto_jit=1: fusible ops (elementwise, reductions, softmax, shapes)
    ORT_ENABLE_EXTENDED = 2  # auto_jit=2: every op the code generator compiles
    ORT_ENABLE_LAYOUT = 3    # auto_jit=2
    ORT_ENABLE_ALL = 99      # auto_jit=2 (onnxruntime's default level, so xlac's)


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


def auto_jit_of(level):
    """xlac's auto_jit for an onnxruntime optimization level."""
    level = int(level)
    if level not in {int(x) for x in GraphOptimizationLevel}:
        raise errors.XlacUsageError("graph_optimization_level=%r: expected one of %s" % (
            level, ", ".join(x.name for x in GraphOptimizationLevel)))
    return 0 if level == 0 else 1 if level == 1 else 2


def _refused(name, why):
    def method(self, *args, **kwargs):
        raise errors.XlacUnsupportedError("%s.%s is not supported: %s" % (type(self).__name__, name, why))
    method.__name__ = name
    method.__doc__ = "Refused: " + why
    return method


class _Checked:
    """Attributes from a table: name -> (default, check(value) -> value or raise)."""
    _TABLE = {}

    def __init__(self):
        for name, (default, _) in self._TABLE.items():
            object.__setattr__(self, name, default)

    def __setattr__(self, name, value):
        if name not in self._TABLE:
            raise AttributeError("%s has no attribute %r (xlac refuses names onnxruntime does not have)"
                                 % (type(self).__name__, name))
        object.__setattr__(self, name, self._TABLE[name][1](name, value))


def _only(*allowed, why):
    def check(name, value):
        if value not in allowed:
            raise errors.XlacUsageError("%s=%r is not supported: %s (accepted: %s)" % (
                name, value, why, ", ".join(repr(a) for a in allowed)))
        return value
    return check


def _int_at_least(lo):
    def check(name, value):
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise errors.XlacUsageError("%s=%r: expected an integer >= %d" % (name, value, lo))
        return value
    return check


def _text(name, value):
    if not isinstance(value, str):
        raise errors.XlacUsageError("%s=%r: expected a string" % (name, value))
    return value


def _bool(name, value):
    if not isinstance(value, bool):
        raise errors.XlacUsageError("%s=%r: expected True or False" % (name, value))
    return value


def _level(name, value):
    auto_jit_of(value)
    return GraphOptimizationLevel(int(value))


def _optimized_path(name, value):
    value = _text(name, str(value) if hasattr(value, "__fspath__") else value)
    if value and not value.endswith(".xg"):
        raise errors.XlacUsageError(
            "%s=%r: xlac writes the clustered graph as .xg text (not ONNX): give a path ending in .xg"
            % (name, value))
    return value


_SEVERITY = "xlac prints warnings and errors only and cannot silence them; 0 (verbose) prints " \
            "the placement of every op on the first run"


class SessionOptions(_Checked):
    """
    onnxruntime.SessionOptions for xlac. Honoured: intra_op_num_threads, graph_optimization_level,
    enable_profiling, profile_file_prefix, optimized_model_filepath, log_severity_level (-1, 0, 1, 2),
    logid, add_session_config_entry("xlac.NAME", value) / ("xlac.flags", "--a=1 --b"). The others
    read as what xlac does and refuse any other value.
    """
    _TABLE = {
        "intra_op_num_threads": (0, _int_at_least(0)),
        "inter_op_num_threads": (0, _only(0, 1, why="xlac runs one op after another")),
        "graph_optimization_level": (GraphOptimizationLevel.ORT_ENABLE_ALL, _level),
        "enable_profiling": (False, _bool),
        "profile_file_prefix": ("onnxruntime_profile_", _text),
        "optimized_model_filepath": ("", _optimized_path),
        "log_severity_level": (-1, _only(-1, 0, 1, 2, why=_SEVERITY)),
        "log_verbosity_level": (0, _only(0, why="xlac has no verbose log levels")),
        "logid": ("", _text),
        "execution_mode": (ExecutionMode.ORT_SEQUENTIAL,
                           _only(ExecutionMode.ORT_SEQUENTIAL, why="xlac runs one op after another")),
        "execution_order": (ExecutionOrder.DEFAULT,
                            _only(ExecutionOrder.DEFAULT, why="xlac runs ops in the graph's order")),
        "enable_cpu_mem_arena": (False, _only(False, why="xlac allocates each tensor on its own (no arena)")),
        "enable_mem_pattern": (False, _only(False, why="xlac plans no memory patterns")),
        "enable_mem_reuse": (False, _only(False, why="xlac plans no buffer reuse between ops")),
        "use_deterministic_compute": (False, _only(False, why="xlac promises no bitwise determinism "
                                                              "across thread counts")),
        "use_per_session_threads": (False, _only(False, why="every xlac session runs on the one "
                                                            "process-wide OpenMP thread pool")),
    }

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_entries", {})

    def add_session_config_entry(self, key, value):
        """'xlac.NAME' -> the xlac flag --NAME=value (XLAC_FLAGS=--help lists them; 'xlac.auto_jit'
        among them); 'xlac.flags' -> several flags as text. Other keys are refused."""
        if not isinstance(key, str) or not key.startswith("xlac.") or len(key) <= 5:
            raise errors.XlacUsageError(
                "session config entry %r is not supported: xlac takes 'xlac.NAME' (its flag --NAME) "
                "or 'xlac.flags'" % (key,))
        self._entries[key] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._entries:
            raise errors.XlacUsageError("no session config entry %r" % (key,))
        return self._entries[key]

    def xlac_flags(self):
        """The XLAC_FLAGS words of the config entries, in the order they were added."""
        words = []
        for key, value in self._entries.items():
            words += value.split() if key == "xlac.flags" else ["--%s=%s" % (key[5:], value)]
        return " ".join(words)

    def has_providers(self):
        return False

    for _name in ("add_external_initializers", "add_external_initializers_from_files_in_memory",
                  "add_initializer"):
        locals()[_name] = _refused(_name, "initializers are the model's constants in xlac")
    for _name in ("add_free_dimension_override_by_denotation", "add_free_dimension_override_by_name"):
        locals()[_name] = _refused(_name, "symbolic dims are decided by the fed arrays")
    for _name in ("add_provider", "add_provider_for_devices", "set_provider_selection_policy",
                  "set_provider_selection_policy_delegate"):
        locals()[_name] = _refused(_name, "pass providers=[...] to InferenceSession")
    for _name in ("register_custom_ops_library", "set_ep_context_data_read_func",
                  "clear_ep_context_data_read_func", "set_load_cancellation_flag"):
        locals()[_name] = _refused(_name, "xlac has no such mechanism")
    del _name


class RunOptions(_Checked):
    """
    onnxruntime.RunOptions for xlac. Honoured: logid (prefixes the run's errors), log_severity_level
    -1, 1, 2 (xlac's warnings and errors). Refused: terminate=True (a run cannot be stopped while
    it runs), only_execute_path_to_fetches=True (the whole graph runs), run config entries.
    """
    _TABLE = {
        "log_severity_level": (-1, _only(-1, 1, 2, why="per run, xlac prints warnings and errors only "
                                                       "(SessionOptions.log_severity_level=0 prints "
                                                       "the placement of every op)")),
        "log_verbosity_level": (0, _only(0, why="xlac has no verbose log levels")),
        "logid": ("", _text),
        "only_execute_path_to_fetches": (False, _only(False, why="xlac runs the whole graph")),
        "terminate": (False, _only(False, why="xlac cannot stop a run in progress; close() waits for "
                                              "running calls")),
    }

    add_run_config_entry = _refused("add_run_config_entry", "xlac has no run config entries")
    get_run_config_entry = _refused("get_run_config_entry", "xlac has no run config entries")
    add_active_adapter = _refused("add_active_adapter", "xlac has no LoRA adapters")
