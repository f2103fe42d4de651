"""python -m rill.run SCRIPT [ARGS...]: runs a TensorFlow 1.x script on rill, unchanged.

For this process only, ``import tensorflow``, ``import tensorflow.compat.v1`` and ``from
tensorflow[.compat.v1] import ...`` resolve to rill.compat.v1 (an import hook on sys.meta_path:
no package named tensorflow is installed, and a real TensorFlow elsewhere is left alone).
``tensorflow.examples.tutorials.mnist.input_data`` is rill's (rill.compat.v1.examples).
``tf.compat.v1`` and ``tf.compat.v1.disable_v2_behavior()`` work as in TF 2.x's compat mode."""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import runpy
import sys
import types

from .compat import v1 as _v1

_ALIASES = ("tensorflow", "tensorflow.compat", "tensorflow.compat.v1")
# tensorflow.<name>... -> rill.compat.v1.<name>... for these packages of TF's Python tree
_SUBPACKAGES = ("tensorflow.examples",)
# the contrib submodules rill has (every other tensorflow.contrib.x stays an ImportError)
_CONTRIB = ("tensorflow.contrib", "tensorflow.contrib.layers", "tensorflow.contrib.framework",
            "tensorflow.contrib.rnn")


def _compat_module():
    m = types.ModuleType("tensorflow.compat")
    m.v1 = _v1
    m.__path__ = []
    return m


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in _ALIASES:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if any(name == p or name.startswith(p + ".") for p in _SUBPACKAGES):
            real = importlib.util.find_spec("rill.compat.v1" + name[len("tensorflow"):])
            if real is not None:
                return importlib.machinery.ModuleSpec(
                    name, self, is_package=real.submodule_search_locations is not None)
        if name in _CONTRIB:
            return importlib.machinery.ModuleSpec(name, self, is_package=name == _CONTRIB[0])
        if name.startswith("tensorflow."):
            raise ImportError(f"rill.run: '{name}' is not part of rill's TensorFlow API "
                              "(tensorflow, tensorflow.compat.v1 are); see docs/PYTHON.md")
        return None

    def create_module(self, spec):
        if spec.name == "tensorflow.compat":
            return _compat_module()
        if spec.name not in _ALIASES:  # _SUBPACKAGES, _CONTRIB: rill's own modules, shared
            return importlib.import_module("rill.compat.v1" + spec.name[len("tensorflow"):])
        return _v1

    def exec_module(self, module):
        pass


def install():
    """Resolves tensorflow to rill in this process."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    if not hasattr(_v1, "compat"):
        _v1.compat = _compat_module()
    if not hasattr(_v1, "__path__"):
        _v1.__path__ = []


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m rill.run SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    install()
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
