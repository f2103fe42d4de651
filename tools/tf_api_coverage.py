#!/usr/bin/env python3
"""How much of TF 1.x's Python API rill.compat.v1 has: tools/tf_api_coverage.py [--missing]
[--module M] [--check].

Reads tools/tf_api_symbols.txt, the public symbols of TensorFlow 1.x's API as
tensorflow.compat.v1 of TensorFlow 2.15 has them (the last release that still carries all of TF
1.15's model-building API: tf.layers, tf.estimator; contrib, which TF 2.x dropped, is listed from
tf_slim, the maintained copy of TF 1.15's contrib.layers), one "module<TAB>name<TAB>kind" a line,
and prints, per module, how many of its functions, classes and constants exist in rill.compat.v1
(the same dotted path), with percentages. --missing lists the absent ones; --check exits 1 unless
the issue's floors hold (tf.* functions >= 60 %, tf.nn / tf.layers / tf.losses / the tf.train
optimizers and their helpers / tf.data.Dataset's methods >= 80 %).

Regenerate the list (once, with real TensorFlow): tools/tf_api_coverage.py --generate, run by an
interpreter that has tensorflow 2.15 and tf_slim (the project's .venv)."""
import argparse
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "tf_api_symbols.txt")
MODULES = ["", "nn", "layers", "losses", "metrics", "train", "data", "image", "math", "random",
           "summary", "io", "estimator", "errors", "initializers", "logging", "gfile", "app",
           "flags"]
# The tf.train names the issue counts as "optimizers and their helpers".
TRAIN_HELPERS = ("Optimizer", "_decay", "piecewise_constant", "global_step", "Saver",
                 "checkpoint", "Checkpoint", "ExponentialMovingAverage", "list_variables",
                 "load_variable", "summary_iterator", "Coordinator", "QueueRunner",
                 "start_queue_runners", "add_queue_runner", "Server", "ClusterSpec",
                 "replica_device_setter", "Supervisor", "input_producer", "batch")
FLOORS = {"functions of tf": 60, "nn": 80, "layers": 80, "losses": 80,
          "train (optimizers and helpers)": 80, "data.Dataset (methods)": 80}


def _kind(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "constant"


def generate(out):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf
    import tf_slim
    rows = []
    for m in MODULES:
        mod = tf if not m else getattr(tf, m, None)
        if mod is None:
            continue
        for n in sorted(dir(mod)):
            if n.startswith("_"):
                continue
            try:
                k = _kind(getattr(mod, n))
            except Exception:
                continue
            if m == "" and k == "module":
                continue
            rows.append((m or "tf", n, k))
    for n in sorted(dir(tf.data.Dataset)):
        if not n.startswith("_"):
            rows.append(("data.Dataset", n, "method"))
    for n in sorted(dir(tf_slim)):
        obj = getattr(tf_slim, n)
        if not n.startswith("_") and not inspect.ismodule(obj):
            rows.append(("contrib.layers", n, _kind(obj)))
    with open(out, "w") as f:
        f.write("# module\tname\tkind: TF 1.x's public API (tensorflow.compat.v1 of TensorFlow "
                f"{tf.__version__}; contrib.layers from tf_slim {tf_slim.__version__ if hasattr(tf_slim, '__version__') else ''})\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    print(f"{len(rows)} symbols written to {out}")


def _resolve(root, module, name):
    obj = root
    if module != "tf":
        for part in module.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return False
    return hasattr(obj, name)


def _test_words():
    """Every identifier the Python tests and test programs mention (a name no test mentions is
    certainly untested; one that is mentioned may still be, so this is a floor, not a proof)."""
    import re
    words = set()
    root = os.path.join(HERE, "..", "python", "tests")
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", open(os.path.join(d, f)).read()))
    return words


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generate", action="store_true")
    ap.add_argument("--missing", action="store_true")
    ap.add_argument("--module")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--markdown", action="store_true",
                    help="print the table as docs/PYTHON.md carries it")
    ap.add_argument("--untested", action="store_true",
                    help="list present names that no test under python/tests mentions")
    a = ap.parse_args()
    if a.generate:
        return generate(LIST)
    import rill.compat.v1 as rtf
    rows = [l.rstrip("\n").split("\t") for l in open(LIST) if l.strip() and not l.startswith("#")]
    groups = {}
    for m, n, k in rows:
        if a.module and m != a.module:
            continue
        key = "functions of tf" if m == "tf" and k == "function" else \
            f"{m} ({'classes' if k == 'class' else k + 's'})" if m == "tf" else m
        groups.setdefault(key, []).append((m, n))
        if m == "train" and any(h in n for h in TRAIN_HELPERS):
            groups.setdefault("train (optimizers and helpers)", []).append((m, n))
        if m == "data.Dataset":
            groups.setdefault("data.Dataset (methods)", []).append((m, n))
            groups.pop("data.Dataset", None)
    if a.markdown:
        print("| module | have | of | % | floor |")
        print("|---|---:|---:|---:|---:|")
    else:
        print(f"{'module':34s} {'have':>5s} {'of':>5s} {'%':>6s}")
    tested = _test_words() if a.untested else None
    failed = []
    for key in groups:
        syms = groups[key]
        have = [s for s in syms if _resolve(rtf, *s)]
        pct = 100.0 * len(have) / len(syms)
        floor = FLOORS.get(key)
        mark = "" if floor is None else ("  (floor %d %%)" % floor)
        if a.markdown:
            print(f"| {key} | {len(have)} | {len(syms)} | {pct:.1f} | "
                  f"{'' if floor is None else '%d %%' % floor} |")
        else:
            print(f"{key:34s} {len(have):5d} {len(syms):5d} {pct:6.1f}{mark}")
        if tested is not None:
            untested = sorted({n for m, n in have if n not in tested})
            if untested:
                print("    untested: " + ", ".join(untested))
        if floor is not None and pct < floor:
            failed.append(key)
        if a.missing:
            miss = [n for m, n in syms if (m, n) not in set(have)]
            if miss:
                print("    missing: " + ", ".join(miss))
    if a.check and failed:
        print("below the floor: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
