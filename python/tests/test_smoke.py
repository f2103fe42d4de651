"""The installed extension loads and reports the version CMakeLists.txt gives the library."""

import importlib.machinery
import pathlib
import re

import rill._rill as _rill

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cmake_project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(rill\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
    assert m, "no project(rill VERSION x.y.z) line in CMakeLists.txt"
    return m.group(1)


def test_version_is_the_cmake_projects():
    # A compiled module (not a stray source-tree file), with rill_version()'s string.
    assert _rill.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert _rill.__version__ == cmake_project_version()


def test_the_build_asked_for():
    """Under `make test-python-asan` (RILL_EXPECT_SANITIZED=1) the module imported is the one
    built with AddressSanitizer, not the installed one: its dependencies resolve ASan's entry
    points. Elsewhere it must not be."""
    import ctypes
    import os

    lib = ctypes.CDLL(_rill.__file__)
    has_asan = hasattr(lib, "__asan_report_load1")
    assert has_asan == (os.environ.get("RILL_EXPECT_SANITIZED") == "1")
