"""TF's string ops (compat/v1/_string_ops.py over src/graph/ops_string.c and
src/kernels/cpu/cpu_string.c): every case's expression runs under rill and under TensorFlow
2.15's compat.v1 (a subprocess) and must give the same values; bad input gives TF's error class
and text."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

# (id, expression over `tf`): the same text under both
CASES = [
    ("join", 'tf.string_join([tf.constant([["a", "b"], ["c", "d"]]), "-", "x"], separator="|")'),
    ("join_strings", 'tf.strings.join(["ab", tf.constant(["1", "22"])])'),
    ("as_string_f", "tf.as_string(tf.constant([1.5, -2.0, 1e-7, 123456789.0]))"),
    ("as_string_d", "tf.as_string(tf.constant([1.5, 3.25], tf.float64), precision=3)"),
    ("as_string_sci", "tf.as_string(tf.constant([1234.5]), scientific=True, precision=2)"),
    ("as_string_short", "tf.as_string(tf.constant([0.1, 1e20, 3.0]), shortest=True)"),
    ("as_string_i", 'tf.as_string(tf.constant([3, -42]), width=5, fill="0")'),
    ("as_string_i64", "tf.as_string(tf.constant([2**40, -1], tf.int64), width=3)"),
    ("as_string_fill", 'tf.as_string(tf.constant([7]), width=4, fill="-")'),
    ("as_string_b", "tf.as_string(tf.constant([True, False]))"),
    ("to_number", 'tf.string_to_number(tf.constant(["1.5", " -2e3 ", "inf", "7"]))'),
    ("to_number_i", 'tf.string_to_number(tf.constant(["12", "-7"]), out_type=tf.int32)'),
    ("to_number_i64", 'tf.strings.to_number(tf.constant(["123456789012"]), out_type=tf.int64)'),
    ("to_number_d", 'tf.string_to_number(tf.constant(["0.1"]), out_type=tf.float64)'),
    ("substr", 'tf.substr(tf.constant(["hello", "world", "ab"]), 1, 3)'),
    ("substr_neg", 'tf.strings.substr(tf.constant(["hello"]), -3, 2)'),
    ("substr_vec", 'tf.substr(tf.constant(["hello", "world"]), [0, 2], [2, 10])'),
    ("strip", r'tf.string_strip(tf.constant(["  a b \n", "\tx", ""]))'),
    ("reduce_all", 'tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]))'),
    ("reduce_01", 'tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), axis=[0, 1])'),
    ("reduce_0", 'tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), 0, separator=",")'),
    ("reduce_keep", 'tf.strings.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), -1, '
                    'keep_dims=True, separator=" ")'),
    ("reduce_3d", 'tf.reduce_join(tf.reshape(tf.as_string(tf.range(12)), [2, 3, 2]), [2, 0])'),
    ("regex", r'tf.regex_replace(tf.constant(["aaa bab", "xyz", ""]), "a+", "<\\0>")'),
    ("regex_first", r'tf.regex_replace(tf.constant(["aaa bab"]), "a", "o", '
                    r'replace_global=False)'),
    ("regex_groups", r'tf.strings.regex_replace(tf.constant(["john smith", "ann lee"]), '
                     r'"([a-z]+) ([a-z]+)", r"\2, \1")'),
    ("regex_class", r'tf.regex_replace(tf.constant(["a1b22c333"]), "[0-9]+", "#")'),
    ("regex_anchor", r'tf.regex_replace(tf.constant(["xax", "ax"]), "^a", "A")'),
    ("b64", 'tf.encode_base64(tf.constant(["hello?>", "ab", "", "\\xff\\xfe"]))'),
    ("b64_pad", 'tf.encode_base64(tf.constant(["hello?>", "ab", "abc"]), pad=True)'),
    ("b64_round", 'tf.decode_base64(tf.encode_base64(tf.constant(["hi there?>", "a"]), pad=True))'),
    ("b64_nopad", 'tf.decode_base64(tf.constant(["aGVsbG8_Pg", "YWI", ""]))'),
    ("raw_i16", 'tf.decode_raw(tf.constant([b"\\x01\\x00\\x02\\x80", b"\\xff\\xff\\x00\\x01"]), '
                'tf.int16)'),
    ("raw_be", 'tf.io.decode_raw(tf.constant([b"\\x01\\x00\\x02\\x80"]), tf.int16, '
               'little_endian=False)'),
    ("raw_f32", 'tf.decode_raw(tf.constant(np.array([1.5, -2.25], np.float32).tobytes()), '
                'tf.float32)'),
    ("raw_u8", 'tf.decode_raw(tf.constant([[b"ab"], [b"cd"]]), tf.uint8)'),
]

# decode_csv: its columns, stacked by the harness below
CSV = '["1,2.5,x", "3,,\\"q,\\"\\"z\\"\\"\\"", ",4,"]'
CASES += [
    ("csv", "tf.stack([tf.as_string(c) if c.dtype != tf.string else c for c in tf.decode_csv("
            + CSV + ", [[7], [0.5], ['d']])])"),
    ("csv_num", "tf.decode_csv(tf.constant([['1;2'], ['3;4']]), [tf.constant([], tf.int64), "
                "[0.0]], field_delim=';')[0]"),
    ("csv_na", "tf.io.decode_csv(['NA,2', '5,NA'], [[-1.0], [-2.0]], na_value='NA')[1]"),
    ("csv_noquote", "tf.decode_csv(['a\"b,c'], [[''], ['']], use_quote_delim=False)[0]"),
    ("csv_f64", "tf.decode_csv(['0.1,12345678901'], [[0.0], tf.constant([0], tf.int64)])[0] * 1"),
]
ERRORS_CSV = [
    ("csv_count", "tf.decode_csv(['1,2,3'], [[1], [2]])", "InvalidArgumentError",
     "Expect 2 fields but have 3 in record 0"),
    ("csv_required", "tf.decode_csv(['1,'], [[1], tf.constant([], tf.int32)])",
     "InvalidArgumentError", "Field 1 is required but missing in record 0!"),
    ("csv_badint", "tf.decode_csv(['1,x'], [[1], [2]])", "InvalidArgumentError",
     "Field 1 in record 0 is not a valid int32: x"),
    ("csv_badfloat", "tf.decode_csv(['1.5.5'], [[1.0]])", "InvalidArgumentError",
     "Field 0 in record 0 is not a valid float: 1.5.5"),
    ("csv_quote", "tf.decode_csv(['\"ab\"c,d'], [[''], ['']])", "InvalidArgumentError",
     "Quote inside a string has to be escaped by another quote"),
    ("csv_unterminated", "tf.decode_csv(['a,\"bc'], [[''], ['']])", "InvalidArgumentError",
     "Quoted field has to end with quote followed by delim or end"),
    ("csv_unquoted", "tf.decode_csv(['a\"b,c'], [[''], ['']])", "InvalidArgumentError",
     "Unquoted fields cannot have quotes/CRLFs inside"),
]

# (id, expression, TF's error class name, a text TF's message contains)
ERRORS = [
    ("to_number_bad", 'tf.string_to_number(tf.constant(["1.5x"]))', "InvalidArgumentError",
     "StringToNumberOp could not correctly convert string: 1.5x"),
    ("to_number_i32_range", 'tf.string_to_number(tf.constant(["9999999999"]), out_type=tf.int32)',
     "InvalidArgumentError", "StringToNumberOp could not correctly convert string: 9999999999"),
    ("substr_range", 'tf.substr(tf.constant(["abc"]), 5, 1)', "InvalidArgumentError",
     "out of range for string"),
    ("b64_bad", 'tf.decode_base64(tf.constant(["ab+/"]))', "InvalidArgumentError",
     "Invalid character found in base64."),
    ("raw_len", 'tf.decode_raw(tf.constant([b"abc"]), tf.int16)', "InvalidArgumentError",
     "Input to DecodeRaw has length 3 that is not a multiple of 2"),
    ("raw_sizes", 'tf.decode_raw(tf.constant([b"ab", b"abcd"]), tf.int16)', "InvalidArgumentError",
     "DecodeRaw requires input strings to all be the same size, but element 1 has size 2 != 4"),
    ("as_string_both", "tf.as_string(tf.constant([1.0]), scientific=True, shortest=True)",
     "InvalidArgumentError", "Cannot select both scientific and shortest notation"),
    ("as_string_fill_long", 'tf.as_string(tf.constant([1]), fill="ab")', "InvalidArgumentError",
     "Fill string must be one or fewer characters"),
    ("as_string_fill_char", 'tf.as_string(tf.constant([1]), fill="x")', "InvalidArgumentError",
     'Fill argument not supported: "x"'),
    # a build error: TF's ValueError, rill's InvalidArgumentError (as all its shape errors)
    ("join_shapes", 'tf.string_join([tf.constant(["a", "b"]), tf.constant(["a", "b", "c"])])',
     "ValueError", "must be equal, but are 2 and 3"),
] + ERRORS_CSV

SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
cases, errors = json.loads(sys.argv[1])
out = {}
def enc(v):
    if isinstance(v, bytes) or getattr(v, "dtype", np.float32).kind in "SO":
        v = np.asarray(v, dtype=object)
    v = np.asarray(v)
    if v.dtype == object:
        return {"s": [x.decode("latin-1") for x in v.ravel()], "shape": list(v.shape)}
    return {"v": v.ravel().tolist(), "shape": list(v.shape), "dtype": v.dtype.name}
with tf.Session() as s:
    for k, e in cases:
        out[k] = enc(s.run(eval(e)))
    for k, e, _, _ in errors:
        try:
            s.run(eval(e))
            out[k] = None
        except Exception as ex:
            out[k] = [type(ex).__name__, getattr(ex, "message", str(ex))]
print(json.dumps(out))
"""


def _enc(v):
    if isinstance(v, bytes) or getattr(v, "dtype", np.float32).kind in "SO":
        v = np.asarray(v, dtype=object)
    v = np.asarray(v)
    if v.dtype == object:
        return {"s": [x.decode("latin-1") for x in v.ravel()], "shape": list(v.shape)}
    return {"v": v.ravel().tolist(), "shape": list(v.shape), "dtype": v.dtype.name}


@pytest.fixture(scope="module")
def ref():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    py = tfref.TF_PY
    if not os.path.exists(py):
        py = sys.executable
    try:
        r = subprocess.run([py, "-c", SCRIPT, json.dumps([CASES, ERRORS])], env=env,
                           capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        tfref.skip(f"no TensorFlow to compare with: {e}")
    if r.returncode != 0:
        if "No module named 'tensorflow'" in r.stderr:
            tfref.skip("no TensorFlow to compare with")
        raise AssertionError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


@pytest.mark.parametrize("name,expr", CASES, ids=[c[0] for c in CASES])
def test_same_as_tf(ref, name, expr):
    with tf.Session() as s:
        got = _enc(s.run(eval(expr)))
    want = ref[name]
    assert got.keys() == want.keys()
    assert got["shape"] == want["shape"]
    if "s" in got:
        assert got["s"] == want["s"]
    else:
        assert got["dtype"] == want["dtype"]
        np.testing.assert_allclose(got["v"], want["v"], rtol=1e-6)


@pytest.mark.parametrize("name,expr,cls,text", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_tf(ref, name, expr, cls, text):
    assert ref[name] is not None and ref[name][0] == cls and text in ref[name][1]
    expected = getattr(tf.errors, cls, None) or (ValueError, tf.errors.InvalidArgumentError)
    with pytest.raises(expected) as ei:
        with tf.Session() as s:
            s.run(eval(expr))
    assert text in str(ei.value)


def test_matching_files(tmp_path):
    for n in ("b.txt", "a.txt", "c.dat"):
        (tmp_path / n).write_text("x")
    m = tf.io.matching_files(str(tmp_path / "*.txt"))
    both = tf.matching_files([str(tmp_path / "c.*"), str(tmp_path / "a*")])
    none = tf.matching_files(str(tmp_path / "zz*"))
    with tf.Session() as s:
        got, b, z = s.run([m, both, none])
    assert [x.decode() for x in got] == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert [x.decode() for x in b] == [str(tmp_path / "a.txt"), str(tmp_path / "c.dat")]
    assert z.shape == (0,)


def test_static_shapes_and_build_errors():
    x = tf.constant([["a", "b"], ["c", "d"]])
    assert tf.reduce_join(x, 0, keep_dims=True).shape.as_list() == [1, 2]
    assert tf.reduce_join(x, [0, 1]).shape.as_list() == []
    assert tf.decode_raw(tf.constant(["ab"]), tf.uint8).shape.as_list() == [1, None]
    assert tf.string_to_number(x).dtype == tf.float32
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError),
                       match="Invalid reduction dimension 2"):
        tf.reduce_join(x, 2)
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError),
                       match="Value for attr 'T' of string is not in the list"):
        tf.as_string(x)
    with pytest.raises(TypeError):
        tf.string_join([x], sep=",")  # TF's keyword is separator
