"""Installs the xlac package and records where the repository is.

The package is plain ctypes over the C libraries that cmake builds; it does
not build them. At import it looks in $XLAC_LIB_DIR, else in build/lib of
the repository it was installed from, whose path this file writes into
xlac/_repo.py at build time.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BuildPy(build_py):
    """build_py that also writes xlac/_repo.py (REPO_ROOT) into the build."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "xlac", "_repo.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written by setup.py: the repository the package came from."""\n')
            f.write("REPO_ROOT = %r\n" % REPO)


setup(packages=["xlac"], cmdclass={"build_py": BuildPy})
