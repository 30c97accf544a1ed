"""SessionOptions and RunOptions: onnxruntime's names, each honoured, mapped to what
xlac does, accepted as a hint, or refused with an error; never silently ignored.

A setting of onnxruntime's own machinery that xlac has no use for keeps the
value set, and the session (or run) warns once naming it (hints.py; strict
mode refuses it); a value of the wrong kind raises XlacUsageError naming it;
a method xlac does not have raises XlacUnsupportedError; a name onnxruntime
does not have raises AttributeError (a typo is not silently a new attribute).
"""
import enum
import os

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
    value = _text(name, os.fspath(value) if hasattr(value, "__fspath__") else value)
    if value and not value.endswith((".xg", ".onnx")):
        raise errors.XlacUsageError(
            "%s=%r: xlac writes the graph as it runs as .xg text (a path ending in .xg) or as an ONNX "
            "model (.onnx)" % (name, value))
    return value


def _severity(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= 4:
        raise errors.XlacUsageError("%s=%r: expected -1 (the default logger's), 0 (verbose), 1 (info), "
                                    "2 (warning), 3 (error) or 4 (fatal)" % (name, value))
    return value


def _enum(kind):
    def check(name, value):
        try:
            return kind(int(value))
        except (TypeError, ValueError):
            raise errors.XlacUsageError("%s=%r: expected one of %s" % (
                name, value, ", ".join(x.name for x in kind))) from None
    return check


class _Hinted(_Checked):
    """_Checked with hints: _HINTS = {name: (xlac_does(value) -> bool, why)}. A value xlac does not
    act on is kept (it reads back as set) and reported by hints() (hints.py warns or refuses)."""
    _HINTS = {}

    def hints(self):
        """[(name, value, why)] of the settings whose value xlac has no use for."""
        out = []
        for name, (does, why) in self._HINTS.items():
            value = getattr(self, name)
            if not does(value):
                out.append((name, value, why))
        return out + list(getattr(self, "_extra_hints", ()))


_ONE_AFTER_ANOTHER = "xlac runs one op after another (each op's work is split over intra_op_num_threads)"


class SessionOptions(_Hinted):
    """
    onnxruntime.SessionOptions for xlac. Honoured: intra_op_num_threads, graph_optimization_level,
    enable_profiling, profile_file_prefix, optimized_model_filepath (.xg), log_severity_level (the
    process's log level from the session's creation on), logid,
    add_session_config_entry("xlac.NAME", value) / ("xlac.flags", "--a=1 --b"). The settings of
    onnxruntime's own machinery (inter-op threads, arenas, other config entries, ...) are accepted as
    hints: the session warns once for each (hints.py; strict mode refuses them).
    """
    _TABLE = {
        "intra_op_num_threads": (0, _int_at_least(0)),
        "inter_op_num_threads": (0, _int_at_least(0)),
        "graph_optimization_level": (GraphOptimizationLevel.ORT_ENABLE_ALL, _level),
        "enable_profiling": (False, _bool),
        "profile_file_prefix": ("onnxruntime_profile_", _text),
        "optimized_model_filepath": ("", _optimized_path),
        "log_severity_level": (-1, _severity),
        "log_verbosity_level": (0, _int_at_least(0)),
        "logid": ("", _text),
        "execution_mode": (ExecutionMode.ORT_SEQUENTIAL, _enum(ExecutionMode)),
        "execution_order": (ExecutionOrder.DEFAULT, _enum(ExecutionOrder)),
        "enable_cpu_mem_arena": (False, _bool),
        "enable_mem_pattern": (False, _bool),
        "enable_mem_reuse": (False, _bool),
        "use_deterministic_compute": (False, _bool),
        "use_per_session_threads": (False, _bool),
    }
    _HINTS = {
        "inter_op_num_threads": (lambda v: v in (0, 1), _ONE_AFTER_ANOTHER),
        "execution_mode": (lambda v: v == ExecutionMode.ORT_SEQUENTIAL, _ONE_AFTER_ANOTHER),
        "execution_order": (lambda v: v == ExecutionOrder.DEFAULT, "xlac runs ops in the graph's order"),
        "log_verbosity_level": (lambda v: v == 0, "xlac has no verbose log levels beyond debug"),
        "enable_cpu_mem_arena": (lambda v: not v, "xlac allocates each tensor on its own (no arena)"),
        "enable_mem_pattern": (lambda v: not v, "xlac plans no memory patterns"),
        "enable_mem_reuse": (lambda v: not v, "xlac plans no buffer reuse between ops"),
        "use_deterministic_compute": (lambda v: not v, "xlac promises no bitwise determinism across "
                                                       "thread counts"),
        "use_per_session_threads": (lambda v: not v, "every xlac session runs on the one process-wide "
                                                     "OpenMP thread pool"),
    }

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_entries", {})
        object.__setattr__(self, "_extra_hints", [])
        object.__setattr__(self, "_dim_pins", [])  # (0 by dim_param | 1 by denotation, name, value)

    def add_session_config_entry(self, key, value):
        """'xlac.NAME' -> the xlac flag --NAME=value (XLAC_FLAGS=--help lists them; 'xlac.auto_jit'
        among them); 'xlac.flags' -> several flags as text. onnxruntime's keys ('session.*', ...) are
        kept and accepted as hints."""
        if not isinstance(key, str) or not key:
            raise errors.XlacUsageError("session config entry %r: the key must be a non-empty string" % (key,))
        if key.startswith("xlac.") and len(key) <= 5:
            raise errors.XlacUsageError("session config entry %r: xlac takes 'xlac.NAME' (its flag --NAME) "
                                        "or 'xlac.flags'" % (key,))
        self._entries[key] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._entries:
            raise errors.XlacUsageError("no session config entry %r" % (key,))
        return self._entries[key]

    def xlac_flags(self):
        """The XLAC_FLAGS words of the 'xlac.' config entries, in the order they were added."""
        words = []
        for key, value in self._entries.items():
            if key == "xlac.flags":
                words += value.split()
            elif key.startswith("xlac."):
                words.append("--%s=%s" % (key[5:], value))
        return " ".join(words)

    def hints(self):
        out = super().hints()
        out += [("session config entry " + repr(k), v, "onnxruntime's setting; xlac's entries are 'xlac.NAME'")
                for k, v in self._entries.items() if not k.startswith("xlac.")]
        return out

    def has_providers(self):
        return False

    def _pin(self, kind, what, name, value):
        if not isinstance(name, str) or not name:
            raise errors.XlacUsageError("%s: the dim's name must be a non-empty string, got %r" % (what, name))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise errors.XlacUsageError("%s(%r): the value must be an int of 0 or more, got %r"
                                        % (what, name, value))
        self._dim_pins.append((kind, name, value))

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Every input dim of the model whose name (dim_param) is dim_name is dim_value, fixed at
        load: the model imports at that size and a fed array of another is refused."""
        self._pin(0, "add_free_dimension_override_by_name", dim_name, dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        """Every input dim of the model whose denotation is dim_denotation is dim_value, fixed at
        load, as add_free_dimension_override_by_name."""
        self._pin(1, "add_free_dimension_override_by_denotation", dim_denotation, dim_value)

    def dim_pins(self):
        """The free dimension overrides, in the order they were added: (kind, name, value)."""
        return list(self._dim_pins)

    def set_load_cancellation_flag(self, value):
        """A hint: loading a model in xlac cannot be cancelled."""
        if value:
            self._extra_hints.append(("set_load_cancellation_flag()", value, "loading cannot be cancelled"))

    for _name in ("add_external_initializers", "add_external_initializers_from_files_in_memory",
                  "add_initializer"):
        locals()[_name] = _refused(_name, "initializers are the model's constants in xlac")
    for _name in ("add_provider", "add_provider_for_devices", "set_provider_selection_policy",
                  "set_provider_selection_policy_delegate"):
        locals()[_name] = _refused(_name, "pass providers=[...] to InferenceSession")
    for _name in ("register_custom_ops_library", "set_ep_context_data_read_func",
                  "clear_ep_context_data_read_func"):
        locals()[_name] = _refused(_name, "xlac has no such mechanism")
    del _name


class RunOptions(_Hinted):
    """
    onnxruntime.RunOptions for xlac. Honoured: logid (prefixes the run's errors). Accepted as hints
    (one warning each, at run()): log_severity_level and log_verbosity_level (xlac's log is the
    process's: set_default_logger_severity), only_execute_path_to_fetches=True (the whole graph runs;
    the outputs asked for are the same), terminate=True (a run cannot be stopped while it runs),
    run config entries.
    """
    _TABLE = {
        "log_severity_level": (-1, _severity),
        "log_verbosity_level": (0, _int_at_least(0)),
        "logid": ("", _text),
        "only_execute_path_to_fetches": (False, _bool),
        "terminate": (False, _bool),
    }
    _HINTS = {
        "log_severity_level": (lambda v: v == -1, "xlac's log level is the process's "
                                                  "(xlac.set_default_logger_severity)"),
        "log_verbosity_level": (lambda v: v == 0, "xlac has no verbose log levels beyond debug"),
        "only_execute_path_to_fetches": (lambda v: not v, "xlac runs the whole graph"),
        "terminate": (lambda v: not v, "xlac cannot stop a run in progress; close() waits for running calls"),
    }

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_entries", {})

    def add_run_config_entry(self, key, value):
        """Kept, and accepted as a hint (xlac has no run config entries)."""
        self._entries[str(key)] = str(value)

    def get_run_config_entry(self, key):
        if key not in self._entries:
            raise errors.XlacUsageError("no run config entry %r" % (key,))
        return self._entries[key]

    def hints(self):
        return super().hints() + [("run config entry " + repr(k), v, "xlac has no run config entries")
                                  for k, v in self._entries.items()]

    add_active_adapter = _refused("add_active_adapter", "xlac has no LoRA adapters")
