"""Running TensorFlow beside rill in a test: the reference is real TensorFlow 1.x
(tensorflow.compat.v1 of TF 2.15, in the project's virtualenv), run in a subprocess by the same
interpreter that runs the tests (RILL_TF_PYTHON names another one) with the rill source tree off
its path, so that `import tensorflow` is TensorFlow's.

Under `make test` RILL_REQUIRE_TF=1: a missing TensorFlow fails the comparison tests instead of
skipping them, so a reference that quietly went away cannot pass for a comparison that held."""
import functools
import os
import subprocess
import sys

import pytest

TF_PY = os.environ.get("RILL_TF_PYTHON") or sys.executable


def env():
    e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    e["TF_CPP_MIN_LOG_LEVEL"] = "3"
    e["CUDA_VISIBLE_DEVICES"] = ""
    e.pop("LD_PRELOAD", None)  # the sanitizers are for rill, not for the reference
    return e


@functools.lru_cache(maxsize=None)
def available():
    r = subprocess.run([TF_PY, "-c", "import tensorflow"], env=env(), capture_output=True)
    return r.returncode == 0


def _required():
    return os.environ.get("RILL_REQUIRE_TF") == "1"


need_tf = pytest.mark.skipif(not _required() and not available(),
                             reason="TensorFlow is not installed in " + TF_PY)


def run(args, input=None, timeout=240):
    """Runs TF_PY with args (a list, e.g. ["-c", src]); returns its stdout, asserting success."""
    if not available():
        if _required():
            pytest.fail("RILL_REQUIRE_TF=1 but " + TF_PY + " cannot import tensorflow")
        pytest.skip("TensorFlow is not installed in " + TF_PY)
    r = subprocess.run([TF_PY] + list(args), input=input, env=env(), capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def skip(why):
    """Skips a comparison whose reference could not run, or fails it under RILL_REQUIRE_TF=1."""
    if _required():
        pytest.fail("RILL_REQUIRE_TF=1 and the TensorFlow reference could not run: " + why)
    pytest.skip(why)
