"""The wheel's command-line tools: `xlac-run ...` and `xlac-compile ...` (console scripts), or
`python -m xlac run ...` / `python -m xlac compile ...`.

Each runs the package's own binary (xlac/bin, or the source tree's build/bin beside the libraries
_lib.lib_dir() finds), with xlac/lib on LD_LIBRARY_PATH: the binaries find xlac's libraries
through their RUNPATH, but the bundled third-party libraries' own dependencies (OpenBLAS's
libgfortran) only through the search path. The process is replaced (exec): the exit status,
signals and standard streams are the binary's own.
"""
import os
import sys

from . import _lib, errors

TOOLS = {"run": "xlac-run", "compile": "xlac-compile"}


def binary(name):
    """The path of the binary name ("xlac-run"): the package's xlac/bin, else the build's bin/."""
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (os.path.join(here, "bin"), os.path.join(os.path.dirname(_lib.lib_dir()), "bin")):
        p = os.path.join(folder, name)
        if os.access(p, os.X_OK):
            return p
    raise errors.XlacIOError("%s not found in %s/bin or beside %s: install the package with pip (pip install "
                             "./python), or build it (cmake -B build && cmake --build build)" % (
                                 name, here, _lib.lib_dir()))


def _exec(name, args):
    try:
        path = binary(name)
    except errors.XlacIOError as e:
        sys.stderr.write("%s: %s\n" % (name, e))
        return 2
    lib = _lib.lib_dir()
    old = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = lib + (os.pathsep + old if old else "")
    os.execv(path, [name] + list(args))
    return 127  # not reached


def xlac_run():
    return _exec("xlac-run", sys.argv[1:])


def xlac_compile():
    return _exec("xlac-compile", sys.argv[1:])


def main(argv):
    if not argv or argv[0] not in TOOLS:
        sys.stderr.write("usage: python -m xlac run|compile ARGS...  (xlac-run, xlac-compile; --help for theirs)\n")
        return 2
    return _exec(TOOLS[argv[0]], argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
