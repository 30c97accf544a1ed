"""The package under test is the installed one (scripts/test_python.sh sets XLAC_TEST_INSTALLED=1):
its C libraries are inside it and found with no environment variable."""
import os

import pytest

import xlac
from xlac import _lib


@pytest.mark.skipif(not os.environ.get("XLAC_TEST_INSTALLED"), reason="run by scripts/test_python.sh")
def test_the_installed_package_finds_its_own_libraries():
    here = os.path.dirname(os.path.abspath(xlac.__file__))
    assert "site-packages" in here, here
    assert "XLAC_LIB_DIR" not in os.environ
    assert _lib.lib_dir() == os.path.join(here, "lib")
    for name in ("libxlac_executor.so", "libxlac.so"):
        assert os.path.exists(os.path.join(here, "lib", name)), name
    assert xlac.InferenceSession is not None and _lib.executor() is not None
