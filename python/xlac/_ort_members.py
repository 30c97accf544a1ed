"""Every public member of onnxruntime's Python module, classified: what it is in xlac.

  supported    xlac has it and it does what onnxruntime's does
  mapped       xlac has it, doing xlac's nearest equivalent (the note says what)
  hint         accepted with one warning naming it (hints.py); strict mode refuses it
  unsupported  raises XlacUnsupportedError saying why

python/tests/test_ort_members.py walks onnxruntime's own module (its functions,
classes, and the members of the classes below) and fails on a name missing
here, or one whose behaviour in xlac is not its class's. docs/python.md is
the prose of the same table.
"""
import enum

from . import errors

SUPPORTED, MAPPED, HINT, UNSUPPORTED = "supported", "mapped", "hint", "unsupported"

_LORA = "xlac has no LoRA adapters"
_EP = "xlac has no plugin execution providers, EP devices or EP contexts (providers: CPU, CUDA)"
_COMPILE = "xlac compiles clusters itself, at run time or with xlac-compile (docs/aot.md)"
_PKG = "xlac has no model packages"
_MEM = "xlac's tensors are numpy arrays on the host: no device memory objects"

MODULE = {
    "InferenceSession": (SUPPORTED, ""),
    "SessionOptions": (SUPPORTED, "see SessionOptions below"),
    "RunOptions": (SUPPORTED, "see RunOptions below"),
    "IOBinding": (SUPPORTED, "host buffers"),
    "NodeArg": (SUPPORTED, ""),
    "ModelMetadata": (SUPPORTED, ""),
    "OrtValue": (SUPPORTED, "host arrays, DLPack"),
    "GraphOptimizationLevel": (MAPPED, "levels to auto_jit 0, 1, 2"),
    "ExecutionMode": (SUPPORTED, ""),
    "ExecutionOrder": (SUPPORTED, ""),
    "OrtAllocatorType": (SUPPORTED, "the constants"),
    "OrtMemType": (SUPPORTED, "the constants"),
    "OrtSparseFormat": (SUPPORTED, "the constants"),
    "OrtDeviceMemoryType": (SUPPORTED, "the constants"),
    "OrtMemoryInfoDeviceType": (SUPPORTED, "the constants"),
    "OrtDeviceVendorId": (SUPPORTED, "the constants"),
    "get_available_providers": (SUPPORTED, "CUDAExecutionProvider (a CUDA build with a GPU), CPUExecutionProvider"),
    "get_all_providers": (MAPPED, "the providers xlac knows: CUDA and CPU"),
    "get_device": (SUPPORTED, "'GPU' or 'CPU'"),
    "get_version_string": (MAPPED, "xlac's version"),
    "version": (MAPPED, "xlac's version"),
    "package_name": (MAPPED, "'xlac'"),
    "cuda_version": (MAPPED, "'' (the wheel is CPU-only; a CUDA build uses the machine's toolkit)"),
    "get_build_info": (MAPPED, "xlac's version, library folder and devices"),
    "has_collective_ops": (MAPPED, "False: xlac's collectives are its own ops (docs/distributed.md)"),
    "print_debug_info": (MAPPED, "xlac's version, libraries and providers"),
    "set_default_logger_severity": (MAPPED, "the process's log level (_log.py)"),
    "set_default_logger_callback": (SUPPORTED, "every xlac line to callback(severity, category, logid, "
                                               "code_location, message)"),
    "set_default_logger_verbosity": (HINT, "xlac has no verbose log levels beyond debug"),
    "set_seed": (HINT, "xlac's random ops take their seeds from the graph"),
    "set_global_thread_pool_sizes": (HINT, "xlac runs on one OpenMP pool: intra_op_num_threads per session"),
    "preload_dlls": (HINT, "xlac's CUDA device loads the libraries it needs itself"),
    "disable_telemetry_events": (SUPPORTED, "nothing to do: xlac sends no telemetry"),
    "enable_telemetry_events": (HINT, "xlac sends no telemetry"),
    "copy_tensors": (UNSUPPORTED, _MEM),
    "create_and_register_allocator": (UNSUPPORTED, "xlac has no shared allocators"),
    "create_and_register_allocator_v2": (UNSUPPORTED, "xlac has no shared allocators"),
    "get_ep_devices": (UNSUPPORTED, _EP),
    "register_execution_provider_library": (UNSUPPORTED, _EP),
    "unregister_execution_provider_library": (UNSUPPORTED, _EP),
    "SessionIOBinding": (UNSUPPORTED, "onnxruntime's internal binding: use InferenceSession.io_binding()"),
    "SparseTensor": (UNSUPPORTED, "xlac has no sparse tensors"),
    "AdapterFormat": (UNSUPPORTED, _LORA),
    "LoraAdapter": (UNSUPPORTED, _LORA),
    "ModelCompiler": (UNSUPPORTED, _COMPILE),
    "OrtCompileApiFlags": (UNSUPPORTED, _COMPILE),
    "ModelPackage": (UNSUPPORTED, _PKG),
    "ModelPackageComponentContext": (UNSUPPORTED, _PKG),
    "ModelPackageContext": (UNSUPPORTED, _PKG),
    "ModelPackageOptions": (UNSUPPORTED, _PKG),
    "ModelPackageWriteMode": (UNSUPPORTED, _PKG),
    "OrtArenaCfg": (UNSUPPORTED, "xlac has no arena"),
    "OrtDevice": (UNSUPPORTED, _MEM),
    "OrtMemoryInfo": (UNSUPPORTED, _MEM),
    "OrtSyncStream": (UNSUPPORTED, _MEM),
    "OrtExternalInitializerInfo": (UNSUPPORTED, "initializers are the model's constants in xlac"),
    "OrtEpAssignedNode": (UNSUPPORTED, _EP),
    "OrtEpAssignedSubgraph": (UNSUPPORTED, _EP),
    "OrtEpContextData": (UNSUPPORTED, _EP),
    "OrtEpContextDataBuffer": (UNSUPPORTED, _EP),
    "OrtEpDevice": (UNSUPPORTED, _EP),
    "OrtExecutionProviderDevicePolicy": (UNSUPPORTED, _EP),
    "OrtHardwareDevice": (UNSUPPORTED, _EP),
    "OrtHardwareDeviceType": (UNSUPPORTED, _EP),
}

_SO_REFUSED = {n: (UNSUPPORTED, "initializers are the model's constants in xlac")
               for n in ("add_external_initializers", "add_external_initializers_from_files_in_memory",
                         "add_initializer")}
_SO_REFUSED.update({n: (UNSUPPORTED, "pass providers=[...] to InferenceSession")
                    for n in ("add_provider", "add_provider_for_devices", "set_provider_selection_policy",
                              "set_provider_selection_policy_delegate")})
_SO_REFUSED.update({n: (UNSUPPORTED, "xlac has no such mechanism")
                    for n in ("register_custom_ops_library", "set_ep_context_data_read_func",
                              "clear_ep_context_data_read_func")})

CLASSES = {
    "SessionOptions": dict({
        "graph_optimization_level": (MAPPED, "auto_jit 0, 1, 2"),
        "intra_op_num_threads": (SUPPORTED, "each run's OpenMP team"),
        "inter_op_num_threads": (HINT, "ops run one after another"),
        "execution_mode": (HINT, "ORT_PARALLEL: ops run one after another"),
        "execution_order": (HINT, "ops run in the graph's order"),
        "enable_profiling": (SUPPORTED, "a Chrome trace"),
        "profile_file_prefix": (SUPPORTED, ""),
        "optimized_model_filepath": (SUPPORTED, ".xg text or .onnx"),
        "log_severity_level": (MAPPED, "the process's log level from the session's creation on"),
        "log_verbosity_level": (HINT, "no verbose levels beyond debug"),
        "logid": (SUPPORTED, "prefixes the session's errors"),
        "enable_cpu_mem_arena": (HINT, "no arena"),
        "enable_mem_pattern": (HINT, "no memory patterns"),
        "enable_mem_reuse": (HINT, "no planned reuse"),
        "use_deterministic_compute": (HINT, "no bitwise promise across thread counts"),
        "use_per_session_threads": (HINT, "one process-wide OpenMP pool"),
        "add_session_config_entry": (MAPPED, "'xlac.NAME' is the flag --NAME; other keys are hints"),
        "get_session_config_entry": (SUPPORTED, ""),
        "has_providers": (SUPPORTED, "False"),
        "add_free_dimension_override_by_name": (SUPPORTED, "the dims fixed at load"),
        "add_free_dimension_override_by_denotation": (SUPPORTED, "the dims fixed at load"),
        "set_load_cancellation_flag": (HINT, "loading cannot be cancelled"),
    }, **_SO_REFUSED),
    "RunOptions": {
        "logid": (SUPPORTED, "prefixes the run's errors"),
        "log_severity_level": (HINT, "the log level is the process's"),
        "log_verbosity_level": (HINT, "no verbose levels beyond debug"),
        "only_execute_path_to_fetches": (HINT, "the whole graph runs; the outputs are the same"),
        "terminate": (HINT, "a run cannot be stopped while it runs"),
        "add_run_config_entry": (HINT, "no run config entries"),
        "get_run_config_entry": (SUPPORTED, "what was added"),
        "add_active_adapter": (UNSUPPORTED, _LORA),
    },
    "InferenceSession": {
        "run": (SUPPORTED, "from several threads at once"),
        "run_async": (SUPPORTED, "a new thread"),
        "run_with_iobinding": (SUPPORTED, ""),
        "run_with_ort_values": (SUPPORTED, ""),
        "run_with_ortvaluevector": (UNSUPPORTED, "onnxruntime's internal form"),
        "io_binding": (SUPPORTED, ""),
        "get_inputs": (SUPPORTED, "symbolic dims by their dim_param"),
        "get_outputs": (SUPPORTED, ""),
        "get_overridable_initializers": (SUPPORTED, "[]"),
        "get_modelmeta": (SUPPORTED, ""),
        "get_providers": (SUPPORTED, ""),
        "get_provider_options": (SUPPORTED, "{} per provider"),
        "get_session_options": (SUPPORTED, ""),
        "get_profiling_start_time_ns": (SUPPORTED, ""),
        "end_profiling": (SUPPORTED, ""),
        "disable_fallback": (SUPPORTED, "nothing to do: xlac never moves a session to another provider"),
        "enable_fallback": (HINT, "xlac never moves a session to another provider"),
        "set_providers": (UNSUPPORTED, "providers are fixed when the session is made"),
        "get_tuning_results": (UNSUPPORTED, "no kernel tuning results"),
        "set_tuning_results": (UNSUPPORTED, "no kernel tuning results"),
        "create_ortvalue_from_shape_and_type": (UNSUPPORTED, "use OrtValue.ortvalue_from_shape_and_type"),
        "get_input_epdevices": (UNSUPPORTED, _EP),
        "get_input_memory_infos": (UNSUPPORTED, _MEM),
        "get_output_memory_infos": (UNSUPPORTED, _MEM),
        "get_provider_graph_assignment_info": (UNSUPPORTED, _EP),
        "set_ep_dynamic_options": (UNSUPPORTED, _EP),
        "release_captured_graph": (UNSUPPORTED, "no captured graphs in the Python API"),
    },
    "OrtValue": {
        "ortvalue_from_numpy": (SUPPORTED, "host arrays, shared"),
        "ortvalue_from_numpy_with_onnx_type": (SUPPORTED, ""),
        "ortvalue_from_shape_and_type": (SUPPORTED, "host arrays"),
        "from_dlpack": (SUPPORTED, "host tensors"),
        "numpy": (SUPPORTED, ""),
        "shape": (SUPPORTED, ""),
        "data_ptr": (SUPPORTED, ""),
        "data_type": (SUPPORTED, ""),
        "element_type": (SUPPORTED, ""),
        "tensor_size_in_bytes": (SUPPORTED, ""),
        "device_name": (SUPPORTED, "'cpu'"),
        "has_value": (SUPPORTED, ""),
        "is_tensor": (SUPPORTED, ""),
        "is_sparse_tensor": (SUPPORTED, "False"),
        "is_tensor_sequence": (SUPPORTED, "False"),
        "update_inplace": (SUPPORTED, ""),
        "as_sparse_tensor": (UNSUPPORTED, "no sparse tensors"),
        "ort_value_from_sparse_tensor": (UNSUPPORTED, "no sparse tensors"),
    },
    "IOBinding": {n: (SUPPORTED, "host buffers") for n in (
        "bind_cpu_input", "bind_input", "bind_ortvalue_input", "bind_ortvalue_output", "bind_output",
        "clear_binding_inputs", "clear_binding_outputs", "copy_outputs_to_cpu", "get_outputs",
        "get_outputs_as_ortvaluevector", "synchronize_inputs", "synchronize_outputs")},
    "NodeArg": {n: (SUPPORTED, "") for n in ("name", "shape", "type")},
    "ModelMetadata": {n: (SUPPORTED, "") for n in (
        "custom_metadata_map", "description", "domain", "graph_description", "graph_name",
        "producer_name", "version")},
}


# ---- what xlac answers for the unsupported names ----------------------------------------------

class _RefusedType(type):
    """A class-level name of a refused class (OrtDevice.make) refuses too."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise errors.XlacUnsupportedError("%s.%s is not supported: %s" % (cls.__name__, name, cls._why))


def _refused_class(name, why):
    def init(self, *args, **kwargs):
        raise errors.XlacUnsupportedError("%s is not supported: %s" % (name, why))
    return _RefusedType(name, (), {"_why": why, "__init__": init, "__doc__": "Refused: " + why})


def _refused_function(name, why):
    def fn(*args, **kwargs):
        raise errors.XlacUnsupportedError("%s is not supported: %s" % (name, why))
    fn.__name__ = name
    fn.__doc__ = "Refused: " + why
    return fn


def refused_members():
    """{name: stub} of the module's unsupported names: classes for onnxruntime's classes (capitalised
    names), functions for the rest; each raises XlacUnsupportedError when used."""
    out = {}
    for name, (kind, why) in MODULE.items():
        if kind == UNSUPPORTED:
            out[name] = (_refused_class if name[0].isupper() else _refused_function)(name, why)
    return out


# ---- onnxruntime's enums that are only constants --------------------------------------------

class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class OrtDeviceVendorId(enum.IntEnum):
    NONE = 0
    AMD = 4098
    NVIDIA = 4318
    ARM = 5045
    MICROSOFT = 5140
    HUAWEI = 6629
    QUALCOMM = 20803
    INTEL = 32902
