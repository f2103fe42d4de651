"""rill.compat.v1's clipping, masking, matrix and rearranging functions (_shape_ops.py:
tf.clip_by_norm, tf.boolean_mask, tf.einsum, tf.roll, tf.reverse_sequence, tf.div_no_nan,
tf.matrix_inverse, tf.space_to_batch_nd, tf.extract_image_patches, ...) against TensorFlow 2.15's
tf.compat.v1, run in a subprocess on the same cases: the values, the gradients of sum(y * y) with
respect to every input where TF has them, and the error classes of bad input."""
import os
import pickle
import subprocess
import tempfile

import numpy as np
import pytest
import tfref

import rill.compat.v1 as rtf

TF_PY = tfref.TF_PY

# Each case: (expression over tf, np and the named inputs, the inputs' names, take gradients).
# The inputs are tf.constant()s of the arrays of INPUTS.
RUNNER = r'''
import numpy as np

rs = np.random.RandomState(7)
INPUTS = {
    "X": rs.randn(2, 3, 4), "V": rs.randn(5), "W": rs.randn(4, 2), "M": rs.randn(3, 3),
    "B": rs.randn(2, 4, 3), "A3": rs.randn(4, 3), "C3": rs.randn(4, 3),
    "IMG": rs.randn(2, 5, 6, 3), "S4": rs.randn(1, 4, 6, 8), "SB": rs.randn(4, 2, 3, 2),
    "Y0": np.array([0.0, 2.0, -0.5, 0.0]), "XL": np.array([1e3, -3.0, 0.0, 40.0, -40.0]),
    "F": np.array([300.0, -5.0, 12.7, np.inf, -np.inf]),
    "Q": rs.randn(2, 3, 3) + 3 * np.eye(3), "R": rs.randn(2, 3, 2),
}
_m = rs.randn(2, 4, 4)
INPUTS["PD"] = _m @ np.swapaxes(_m, 1, 2) + 4 * np.eye(4)
CASES = {
    "clip_by_norm": ("tf.clip_by_norm(X, 2.0)", ["X"], True),
    "clip_by_norm_axes": ("tf.clip_by_norm(X, 1.5, axes=[2])", ["X"], True),
    "clip_by_norm_zero": ("tf.clip_by_norm(tf.zeros([3], tf.float64), 1.0)", [], False),
    "global_norm": ("tf.global_norm([X, V, None])", ["X", "V"], True),
    "clip_by_global_norm": ("tf.clip_by_global_norm([X, V], 1.0)[0]", ["X", "V"], True),
    "clip_by_global_norm_n": ("tf.clip_by_global_norm([X, V], 1.0)[1]", ["X", "V"], False),
    "clip_by_global_norm_use": ("tf.clip_by_global_norm([X], 1.0, use_norm=tf.constant(4.0, tf.float64))[0]", ["X"], True),
    "clip_by_average_norm": ("tf.clip_by_average_norm(tf.cast(X, tf.float32), 0.1)", [], False),
    "boolean_mask": ("tf.boolean_mask(X, np.array([True, False, True]), axis=1)", ["X"], True),
    "boolean_mask_2d": ("tf.boolean_mask(X, np.array([[True, False, True], [False, False, True]]))", ["X"], True),
    "sequence_mask": ("tf.sequence_mask([1, 3, 0], 4)", [], False),
    "sequence_mask_max": ("tf.sequence_mask(tf.constant([[1, 3], [2, 0]]), dtype=tf.float32)", [], False),
    "eye": ("tf.eye(3, 4, batch_shape=[2], dtype=tf.int32)", [], False),
    "linspace": ("tf.linspace(-1.0, 2.0, 7)", [], False),
    "lin_space": ("tf.lin_space(tf.constant(0.0, tf.float64), 1.0, 4)", [], False),
    "linspace_1": ("tf.linspace(3.0, 5.0, 1)", [], False),
    "meshgrid_xy": ("tf.meshgrid(V, W[:, 0], A3[0])", ["V", "W", "A3"], True),
    "meshgrid_ij": ("tf.meshgrid(V, W[:, 0], indexing='ij')", ["V", "W"], True),
    "tensordot_1": ("tf.tensordot(X, W, 1)", ["X", "W"], True),
    "tensordot_axes": ("tf.tensordot(X, B, [[0, 2], [0, 1]])", ["X", "B"], True),
    "tensordot_0": ("tf.tensordot(V, W, 0)", ["V", "W"], True),
    "einsum_matmul": ("tf.einsum('ij,jk->ik', M, A3[:3])", ["M", "A3"], True),
    "einsum_batch": ("tf.einsum('bij,bjk->bik', X, B)", ["X", "B"], True),
    "einsum_trans": ("tf.einsum('ijk->kji', X)", ["X"], True),
    "einsum_sum": ("tf.einsum('ijk->j', X)", ["X"], True),
    "einsum_outer": ("tf.einsum('i,j->ij', V, A3[0])", ["V", "A3"], True),
    "einsum_dot": ("tf.einsum('i,i', V, V)", ["V"], True),
    "einsum_implicit": ("tf.einsum('ij,jk', M, A3[:3])", ["M", "A3"], True),
    "einsum_three": ("tf.einsum('ij,jk,kl->il', M, A3[:3], W[:3])", ["M", "A3", "W"], True),
    "einsum_bilinear": ("tf.einsum('bi,ij,bj->b', A3, M, C3)", ["A3", "M", "C3"], True),
    "div_no_nan": ("tf.div_no_nan(X[0], Y0)", ["X"], True),
    "divide_no_nan": ("tf.math.divide_no_nan(tf.cast(X, tf.float32), tf.constant(0.0))", [], False),
    "log_sigmoid": ("tf.log_sigmoid(XL)", ["XL"], True),
    "math_log_sigmoid": ("tf.math.log_sigmoid(V)", ["V"], True),
    "scalar_mul": ("tf.scalar_mul(3.0, X)", ["X"], True),
    "shape_n": ("tf.shape_n([X, V], out_type=tf.int64)", [], False),
    "repeat_int": ("tf.repeat(X, 2, axis=1)", ["X"], True),
    "repeat_list": ("tf.repeat(X, [1, 0, 3], axis=-2)", ["X"], True),
    "repeat_flat": ("tf.repeat(M, 2)", ["M"], True),
    "roll": ("tf.roll(X, [1, -2], [0, 2])", ["X"], True),
    "roll_same_axis": ("tf.roll(X, [2, 3], [1, 1])", ["X"], True),
    "saturate_cast": ("tf.saturate_cast(F, tf.uint8)", [], False),
    "saturate_cast_i": ("tf.saturate_cast(tf.constant([70000, -70000, 5]), tf.int16)", [], False),
    "reverse_sequence": ("tf.reverse_sequence(X, [2, 3], seq_axis=1, batch_axis=0)", ["X"], True),
    "reverse_sequence_dim": ("tf.reverse_sequence(X, tf.constant([4, 1, 0], tf.int64), seq_dim=2, batch_dim=1)", ["X"], True),
    "band_part": ("tf.matrix_band_part(X, 1, 0)", ["X"], True),
    "band_part_upper": ("tf.matrix_band_part(X, -1, 2)", ["X"], True),
    "linalg_band_part": ("tf.linalg.band_part(M, 0, 0)", ["M"], True),
    "matrix_diag": ("tf.matrix_diag(A3)", ["A3"], True),
    "matrix_diag_part": ("tf.matrix_diag_part(X)", ["X"], True),
    "matrix_set_diag": ("tf.matrix_set_diag(X, A3[:2])", ["X", "A3"], True),
    "matrix_set_diag_sq": ("tf.linalg.set_diag(M, V[:3])", ["M", "V"], True),
    "diag": ("tf.diag(W)", ["W"], True),
    "diag_part": ("tf.diag_part(tf.diag(W) * 2.0)", ["W"], True),
    "trace": ("tf.trace(X)", ["X"], True),
    "linalg_trace": ("tf.linalg.trace(M)", ["M"], True),
    "matrix_transpose": ("tf.matrix_transpose(X)", ["X"], True),
    "linalg_transpose": ("tf.linalg.transpose(M)", ["M"], True),
    "cross": ("tf.cross(A3, C3)", ["A3", "C3"], True),
    "linalg_cross": ("tf.linalg.cross(A3[0], C3[1])", ["A3", "C3"], True),
    "accumulate_n": ("tf.accumulate_n([X, X * 2.0, X])", ["X"], True),
    "space_to_depth": ("tf.space_to_depth(S4, 2)", ["S4"], True),
    "depth_to_space": ("tf.depth_to_space(S4, 2)", ["S4"], True),
    "nn_space_to_depth": ("tf.nn.space_to_depth(S4, 2)", ["S4"], False),
    "space_to_batch_nd": ("tf.space_to_batch_nd(S4, [2, 3], [[1, 1], [0, 3]])", ["S4"], True),
    "space_to_batch": ("tf.space_to_batch(S4, [[0, 2], [1, 1]], 2)", ["S4"], True),
    "nn_space_to_batch": ("tf.nn.space_to_batch(S4, [[0, 2], [1, 1]], block_size=2)", ["S4"], False),
    "batch_to_space_nd": ("tf.batch_to_space_nd(SB, [2, 2], [[0, 1], [1, 0]])", ["SB"], True),
    "batch_to_space": ("tf.batch_to_space(SB, [[1, 0], [0, 1]], 2)", ["SB"], True),
    "required_paddings": ("list(tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [0, 2]]))", [], False),
    "broadcast_dynamic_shape": ("tf.broadcast_dynamic_shape(tf.constant([2, 1, 3]), tf.constant([4, 1]))", [], False),
    "parallel_stack": ("tf.parallel_stack([V, V * 2.0])", [], False),
    "to_bfloat16": ("tf.cast(tf.to_bfloat16(V), tf.float32)", [], False),
    "matrix_inverse": ("tf.matrix_inverse(Q)", ["Q"], True),
    "matrix_inverse_adj": ("tf.matrix_inverse(Q, adjoint=True)", ["Q"], True),
    "linalg_inv_f32": ("tf.linalg.inv(tf.cast(Q, tf.float32))", [], False),
    "matrix_determinant": ("tf.matrix_determinant(Q)", ["Q"], True),
    "linalg_det": ("tf.linalg.det(M)", ["M"], True),
    "matrix_solve": ("tf.matrix_solve(Q, R)", ["Q", "R"], True),
    "matrix_solve_adj": ("tf.linalg.solve(Q, R, adjoint=True)", ["Q", "R"], True),
    "cholesky": ("tf.cholesky(PD)", ["PD"], True),
    "linalg_cholesky": ("tf.linalg.cholesky(PD[0])", ["PD"], True),
    "triangular_solve": ("tf.matrix_triangular_solve(Q, R)", ["Q", "R"], True),
    "triangular_solve_upper_adj": ("tf.linalg.triangular_solve(Q, R, lower=False, adjoint=True)", ["Q", "R"], True),
    "logdet": ("tf.linalg.logdet(PD)", ["PD"], True),
    "linalg_adjoint": ("tf.linalg.adjoint(X)", ["X"], True),
    "linalg_matmul_batch": ("tf.linalg.matmul(X, B)", ["X", "B"], True),
    "linalg_matmul_adj": ("tf.linalg.matmul(Q, R, adjoint_a=True)", ["Q", "R"], True),
    "linalg_matmul_2d": ("tf.linalg.matmul(M, A3[:3], transpose_b=False)", ["M", "A3"], True),
    "eip_valid": ("tf.extract_image_patches(IMG, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 1, 1], 'VALID')", ["IMG"], True),
    "eip_same": ("tf.extract_image_patches(IMG, [1, 3, 2, 1], [1, 2, 3, 1], [1, 1, 2, 1], 'SAME')", ["IMG"], True),
    "eip_sizes": ("tf.extract_image_patches(IMG, sizes=[1, 2, 2, 1], strides=[1, 1, 1, 1], rates=[1, 2, 1, 1], padding='VALID')", ["IMG"], False),
}
# Bad input: only the error's class is compared (and that there is one).
ERRORS = {
    "boolean_mask_scalar": "tf.boolean_mask(X, True)",
    "boolean_mask_shape": "tf.boolean_mask(X, np.array([True, False]), axis=1)",
    "scalar_mul_vector": "tf.scalar_mul(tf.constant([1.0, 2.0], tf.float64), X)",
    "roll_sizes": "tf.roll(X, [1, 2], [0])",
    "reverse_sequence_rank": "tf.reverse_sequence(X, [1, 2], seq_axis=3, batch_axis=0)",
    "reverse_sequence_len": "tf.reverse_sequence(X, [1, 2, 3], seq_axis=1, batch_axis=0)",
    "div_no_nan_shapes": "tf.div_no_nan(X, V)",
    "tensordot_axes_big": "tf.tensordot(X, W, 5)",
    "tensordot_mismatch": "tf.tensordot(X, W, [[1], [0]])",
    "matrix_transpose_rank": "tf.matrix_transpose(V)",
    "space_to_depth_div": "tf.space_to_depth(IMG, 2)",
    "meshgrid_kw": "tf.meshgrid(V, V, bogus=1)",
    "meshgrid_indexing": "tf.meshgrid(V, V, indexing='xx')",
    "clip_by_global_norm_list": "tf.clip_by_global_norm(X, 1.0)",
    "inverse_square": "tf.matrix_inverse(X)",
    "inverse_singular": "tf.matrix_inverse(np.array([[1.0, 2.0], [2.0, 4.0]]))",
    "solve_rows": "tf.matrix_solve(Q, B)",
    "cholesky_int": "tf.cholesky(tf.constant([[1, 0], [0, 1]]))",
    "band_part_rows": "tf.matrix_band_part(M, 4, 0)",
    "broadcast_static": "tf.broadcast_static_shape(tf.TensorShape([2, 3]), tf.TensorShape([4]))",
}


def _run(tf, sess_fn):
    out = {}
    for name, (expr, names, grads) in CASES.items():
        g = tf.Graph()
        with g.as_default():
            try:
                consts = {n: tf.constant(INPUTS[n]) for n in INPUTS}
                env = dict(consts, tf=tf, np=np)
                y = eval(expr, env)
                ys = y if isinstance(y, list) else [y]
                fetch = list(ys)
                if grads:
                    loss = tf.add_n([tf.reduce_sum(v * v) for v in ys])
                    fetch += tf.gradients(loss, [consts[n] for n in names])
                with tf.Session() as s:
                    out[name] = ("ok", [np.asarray(v) for v in s.run(fetch)])
            except Exception as e:  # noqa: BLE001
                out[name] = ("error", type(e).__name__, str(e)[:300])
    for name, expr in ERRORS.items():
        g = tf.Graph()
        with g.as_default():
            try:
                env = dict({n: tf.constant(INPUTS[n]) for n in INPUTS}, tf=tf, np=np)
                y = eval(expr, env)
                with tf.Session() as s:
                    s.run(y)
                out[name] = ("ok",)
            except Exception as e:  # noqa: BLE001
                out[name] = ("error", type(e).__name__, str(e)[:300])
    return out
'''

TF_MAIN = r'''
import os, pickle, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
tf.logging.set_verbosity(tf.logging.ERROR)
exec(open(sys.argv[1]).read())
with open(sys.argv[2], "wb") as f:
    pickle.dump(_run(tf, None), f)
'''


@pytest.fixture(scope="module")
def results():
    if not os.path.exists(TF_PY):
        tfref.skip("TensorFlow is not installed")
    with tempfile.TemporaryDirectory() as d:
        runner, main, out = (os.path.join(d, n) for n in ("runner.py", "main.py", "out.pkl"))
        with open(runner, "w") as f:
            f.write(RUNNER)
        with open(main, "w") as f:
            f.write(TF_MAIN)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        env["CUDA_VISIBLE_DEVICES"] = ""
        p = subprocess.run([TF_PY, main, runner, out], env=env, capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            pytest.fail(f"TF reference run failed:\n{p.stderr[-3000:]}")
        with open(out, "rb") as f:
            ref = pickle.load(f)
    ns = {}
    exec(RUNNER, ns)
    mine = ns["_run"](rtf, None)
    return ns, ref, mine


def _names():
    ns = {}
    exec(RUNNER, ns)
    return list(ns["CASES"]), list(ns["ERRORS"])


CASE_NAMES, ERROR_NAMES = _names()


@pytest.mark.parametrize("name", CASE_NAMES)
def test_matches_tensorflow(results, name):
    _, ref, mine = results
    r, m = ref[name], mine[name]
    assert r[0] == "ok", f"TF failed on {name}: {r}"
    assert m[0] == "ok", f"rill failed on {name}: {m}"
    assert len(r[1]) == len(m[1])
    for i, (a, b) in enumerate(zip(r[1], m[1])):
        assert a.shape == b.shape, f"{name}[{i}]: shape {b.shape}, TF {a.shape}"
        if a.dtype.kind in "biu":
            assert a.dtype == b.dtype, f"{name}[{i}]: dtype {b.dtype}, TF {a.dtype}"
            np.testing.assert_array_equal(b, a, err_msg=f"{name}[{i}]")
        else:
            assert a.dtype == b.dtype, f"{name}[{i}]: dtype {b.dtype}, TF {a.dtype}"
            np.testing.assert_allclose(b, a, rtol=1e-5 if a.dtype == np.float32 else 1e-9,
                                       atol=1e-6 if a.dtype == np.float32 else 1e-12,
                                       err_msg=f"{name}[{i}]")


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_errors_match_tensorflow(results, name):
    _, ref, mine = results
    r, m = ref[name], mine[name]
    assert r[0] == "error", f"TF accepted {name}"
    assert m[0] == "error", f"rill accepted {name}"
    # a shape function's error at build time is an InvalidArgumentError with TF's text in rill
    # (docs/PYTHON.md), TF's Python makes it a ValueError
    same = m[1] == r[1] or (r[1] == "ValueError" and m[1] == "InvalidArgumentError" and
                            m[2].split(" for ")[0] == r[2].split(" for ")[0])
    assert same, f"{name}: rill raised {m[1]}: {m[2]}; TF {r[1]}: {r[2]}"


def test_einsum_unsupported_is_clear():
    with rtf.Graph().as_default():
        x = rtf.constant(np.ones((3, 3)))
        with pytest.raises(ValueError, match="diagonal"):
            rtf.einsum("ii->i", x)
        with pytest.raises(ValueError, match="ellipses"):
            rtf.einsum("...ij->...ji", x)


def test_names_and_namespaces():
    for n in ("clip_by_norm", "boolean_mask", "einsum", "roll", "lin_space", "div_no_nan",
              "extract_image_patches", "required_space_to_batch_paddings", "to_bfloat16"):
        assert callable(getattr(rtf, n))
    for n in ("band_part", "diag", "diag_part", "set_diag", "trace", "transpose", "cross",
              "tensordot", "einsum", "eye", "matmul", "global_norm", "tensor_diag"):
        assert callable(getattr(rtf.linalg, n)), n
    for n in ("divide_no_nan", "log_sigmoid", "scalar_mul", "accumulate_n"):
        assert callable(getattr(rtf.math, n)), n
    with rtf.Graph().as_default():
        assert rtf.div_no_nan(1.0, 2.0).op.type == "DivNoNan"
        assert rtf.roll([1, 2], 1, 0).op.type == "Roll"
        assert rtf.reverse_sequence([[1, 2]], [1], 1).op.type == "ReverseSequence"
