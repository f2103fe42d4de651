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
