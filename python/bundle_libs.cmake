# Makes the wheel self-contained: copies the third-party shared libraries that xlac's own
# libraries need (oneDNN, OpenBLAS, protobuf-c, xxHash, libgomp, and theirs: libgfortran,
# libquadmath, libOpenCL) into the package's library folder, each under its SONAME (the real
# file, not the symlink chain, which a wheel cannot hold), and writes the order in which the
# package loads them (bundled.txt, leaves first: python/xlac/_lib.py says why it must).
#
# Run at install time by CMakeLists.txt (component xlac_python, when scikit-build-core builds
# the wheel), with
#   XLAC_BUNDLE_LIBS  our libraries as built (their build RUNPATH finds what they linked)
#   XLAC_BUNDLE_DEST  the installed package's xlac/lib
# Left to the machine: the manylinux policy's base libraries (glibc's, libstdc++, libgcc_s),
# and the CUDA libraries a CUDA wheel's libxlac_cuda.so needs (the driver's and toolkit's,
# tied to the machine's driver; docs/python.md).
cmake_minimum_required(VERSION 3.24)

set(_xlac_keep_out
    "^(libc|libm|libdl|libpthread|librt|libstdc\\+\\+|libgcc_s)\\.so" "^ld-linux"  # base
    "^lib(cuda|cudart|cublas|cublasLt|nccl|nvrtc|nvrtc-builtins|nvJitLink|nvidia-ml)\\.so"  # CUDA
    "^libxlac")  # ours, installed as targets

# The resolved paths of everything ARGN needs, transitively, but what is kept out.
function(xlac_bundle_deps out)
    file(GET_RUNTIME_DEPENDENCIES LIBRARIES ${ARGN} RESOLVED_DEPENDENCIES_VAR found
         UNRESOLVED_DEPENDENCIES_VAR missing PRE_EXCLUDE_REGEXES ${_xlac_keep_out})
    if(missing)
        message(FATAL_ERROR "xlac wheel: ${missing} not found (needed by ${ARGN})")
    endif()
    set(${out} ${found} PARENT_SCOPE)
endfunction()

# 1. what our libraries need
xlac_bundle_deps(_xlac_deps ${XLAC_BUNDLE_LIBS})

# 2. leaves first: a library needs (transitively) fewer others than each library that needs it
set(_xlac_keyed "")
foreach(dep ${_xlac_deps})
    xlac_bundle_deps(_sub ${dep})
    list(LENGTH _sub n)
    math(EXPR key "1000 + ${n}")
    list(APPEND _xlac_keyed "${key}|${dep}")
endforeach()
list(SORT _xlac_keyed)

# 3. the real files under their SONAME (the name they are needed by), and the load order
file(MAKE_DIRECTORY "${XLAC_BUNDLE_DEST}")
set(_xlac_order "")
foreach(entry ${_xlac_keyed})
    string(REGEX REPLACE "^[0-9]+\\|" "" dep "${entry}")
    get_filename_component(name "${dep}" NAME)
    file(REAL_PATH "${dep}" real)
    message(STATUS "xlac wheel: bundling ${name} (${real})")
    file(COPY_FILE "${real}" "${XLAC_BUNDLE_DEST}/${name}")
    string(APPEND _xlac_order "${name}\n")
endforeach()
file(WRITE "${XLAC_BUNDLE_DEST}/bundled.txt" "${_xlac_order}")
