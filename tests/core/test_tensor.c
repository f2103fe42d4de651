/* test_tensor.c - the core layer: dtypes, shapes, tensors (ownership, strings, copies, numpy-style
 * printing), half-precision conversion, CRC32C, status objects and the allocation counter. */
#include <rill/rill.h>

#include "core/core.h"
#include "test.h"

#include <unistd.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_dtypes(void)
{
    /* TensorFlow's DataType numbers, so checkpoints carry them unchanged. */
    CHECK_EQ_INT(RILL_FLOAT, 1);
    CHECK_EQ_INT(RILL_DOUBLE, 2);
    CHECK_EQ_INT(RILL_INT32, 3);
    CHECK_EQ_INT(RILL_STRING, 7);
    CHECK_EQ_INT(RILL_INT64, 9);
    CHECK_EQ_INT(RILL_BOOL, 10);
    CHECK_EQ_INT(RILL_HALF, 19);

    CHECK_EQ_INT(rill_dtype_size(RILL_FLOAT), 4);
    CHECK_EQ_INT(rill_dtype_size(RILL_DOUBLE), 8);
    CHECK_EQ_INT(rill_dtype_size(RILL_INT32), 4);
    CHECK_EQ_INT(rill_dtype_size(RILL_INT64), 8);
    CHECK_EQ_INT(rill_dtype_size(RILL_BOOL), 1);
    CHECK_EQ_INT(rill_dtype_size(RILL_HALF), 2);
    CHECK_EQ_INT(rill_dtype_size(RILL_STRING), 0);
    CHECK_EQ_INT(rill_dtype_size(RILL_DT_INVALID), 0);
    CHECK_EQ_INT(rill_dtype_size((rill_dtype)42), 0);

    CHECK_EQ_STR(rill_dtype_name(RILL_FLOAT), "float");
    CHECK_EQ_STR(rill_dtype_name(RILL_DOUBLE), "double");
    CHECK_EQ_STR(rill_dtype_name(RILL_INT32), "int32");
    CHECK_EQ_STR(rill_dtype_name(RILL_INT64), "int64");
    CHECK_EQ_STR(rill_dtype_name(RILL_BOOL), "bool");
    CHECK_EQ_STR(rill_dtype_name(RILL_HALF), "half");
    CHECK_EQ_STR(rill_dtype_name(RILL_STRING), "string");
    CHECK(rill_dtype_name((rill_dtype)42) != NULL);

    CHECK(rill_dtype_is_valid(RILL_FLOAT));
    CHECK(rill_dtype_is_valid(RILL_STRING));
    CHECK(!rill_dtype_is_valid(RILL_DT_INVALID));
    CHECK(!rill_dtype_is_valid((rill_dtype)8)); /* DT_COMPLEX64: rill lacks it */
    CHECK(rill_dtype_is_float(RILL_FLOAT));
    CHECK(rill_dtype_is_float(RILL_DOUBLE));
    CHECK(rill_dtype_is_float(RILL_HALF));
    CHECK(!rill_dtype_is_float(RILL_INT32));
    CHECK(!rill_dtype_is_float(RILL_BOOL));
    CHECK(!rill_dtype_is_float(RILL_STRING));
}

static void test_shapes(void)
{
    char buf[64];
    rill_shape u = rill_shape_unknown();
    CHECK_EQ_INT(u.rank, -1);
    CHECK(!rill_shape_is_fully_defined(&u));
    CHECK_EQ_INT(rill_shape_num_elements(&u), -1);
    CHECK_EQ_STR(rill_shape_str(&u, buf, sizeof buf), "<unknown>");

    rill_shape sc = rill_shape_scalar();
    CHECK_EQ_INT(sc.rank, 0);
    CHECK(rill_shape_is_fully_defined(&sc));
    CHECK_EQ_INT(rill_shape_num_elements(&sc), 1);
    CHECK_EQ_STR(rill_shape_str(&sc, buf, sizeof buf), "[]");

    rill_shape v = rill_shape_vector(5);
    CHECK_EQ_INT(rill_shape_num_elements(&v), 5);
    CHECK_EQ_STR(rill_shape_str(&v, buf, sizeof buf), "[5]");

    rill_shape m = rill_shape_matrix(2, 3);
    CHECK_EQ_INT(m.rank, 2);
    CHECK_EQ_INT(rill_shape_num_elements(&m), 6);
    CHECK_EQ_STR(rill_shape_str(&m, buf, sizeof buf), "[2,3]");

    /* Unknown dims: any negative size is normalised to -1. */
    rill_shape p = rill_shape_make(2, (int64_t[]){-7, 3});
    CHECK_EQ_INT(p.dims[0], -1);
    CHECK(!rill_shape_is_fully_defined(&p));
    CHECK_EQ_INT(rill_shape_num_elements(&p), -1);
    CHECK_EQ_STR(rill_shape_str(&p, buf, sizeof buf), "[?,3]");
    rill_shape q = rill_shape_make(3, (int64_t[]){4, -1, -1});
    CHECK_EQ_STR(rill_shape_str(&q, buf, sizeof buf), "[4,?,?]");

    /* A zero dim: fully defined, no elements. */
    rill_shape z = rill_shape_make(2, (int64_t[]){0, 7});
    CHECK(rill_shape_is_fully_defined(&z));
    CHECK_EQ_INT(rill_shape_num_elements(&z), 0);

    /* More elements than an int64_t counts: -1, never a wrapped product (a Placeholder declared
     * [INT64_MAX, 3] arriving in a graph from the wire was a signed overflow in Reshape's shape
     * function, found by fuzz/fuzz_graph_codec.c), and no tensor of that shape. A zero dim
     * still makes it empty, wherever it is. */
    rill_shape huge = rill_shape_make(2, (int64_t[]){INT64_MAX, 3});
    CHECK_EQ_INT(rill_shape_num_elements(&huge), -1);
    rill_shape huge2 = rill_shape_make(3, (int64_t[]){1 << 22, 1 << 21, 1 << 21});
    CHECK_EQ_INT(rill_shape_num_elements(&huge2), -1);
    CHECK(rill_tensor_new(RILL_FLOAT, huge.dims, huge.rank) == NULL);
    CHECK(rill_tensor_new(RILL_FLOAT, huge2.dims, huge2.rank) == NULL);
    CHECK_EQ_INT(rill_shape_num_elements(&(rill_shape){.rank = 3, .dims = {INT64_MAX, 3, 0}}), 0);

    /* Rank above the limit (or negative) yields unknown rank. */
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_EQ_INT(rill_shape_make(9, nine).rank, -1);
    CHECK_EQ_INT(rill_shape_make(-3, NULL).rank, -1);
    CHECK_EQ_INT(rill_shape_make(8, nine).rank, 8);

    CHECK(rill_shape_equal(&m, &(rill_shape){.rank = 2, .dims = {2, 3}}));
    CHECK(!rill_shape_equal(&m, &v));
    CHECK(!rill_shape_equal(&m, &(rill_shape){.rank = 2, .dims = {3, 2}}));
    CHECK(rill_shape_equal(&u, &(rill_shape){.rank = -1}));

    /* A short buffer truncates but always terminates. */
    char small[4];
    memset(small, 'x', sizeof small);
    rill_shape big = rill_shape_make(3, (int64_t[]){1000, 2000, 3000});
    rill_shape_str(&big, small, sizeof small);
    CHECK_EQ_INT(strlen(small), 3);
    CHECK(strncmp(small, "[10", 3) == 0);
}

static void test_tensor_basics(void)
{
    int64_t dims[] = {2, 3};
    rill_tensor *t = rill_tensor_new(RILL_FLOAT, dims, 2);
    if (!CHECK(t != NULL)) return;
    CHECK_EQ_INT(rill_tensor_dtype(t), RILL_FLOAT);
    CHECK_EQ_INT(rill_tensor_rank(t), 2);
    CHECK_EQ_INT(rill_tensor_dim(t, 0), 2);
    CHECK_EQ_INT(rill_tensor_dim(t, 1), 3);
    CHECK_EQ_INT(rill_tensor_dim(t, 2), -1);
    CHECK_EQ_INT(rill_tensor_dim(t, -1), -1);
    CHECK_EQ_INT(rill_tensor_num_elements(t), 6);
    CHECK_EQ_INT(rill_tensor_nbytes(t), 24);
    CHECK(rill_shape_equal(rill_tensor_shape(t), &(rill_shape){.rank = 2, .dims = {2, 3}}));
    CHECK(((uintptr_t)rill_tensor_data(t) & 63) == 0); /* 64-byte aligned for vector loops */
    float *d = rill_tensor_data(t);
    for (int i = 0; i < 6; i++) d[i] = (float)i;

    /* ref adds a holder: the data survives the first free. */
    CHECK(rill_tensor_ref(t) == t);
    rill_tensor_free(t);
    CHECK_NEAR(((float *)rill_tensor_data(t))[5], 5.0, 0);
    rill_tensor_free(t);
    rill_tensor_free(NULL);

    /* Invalid requests give NULL. */
    CHECK(rill_tensor_new(RILL_DT_INVALID, dims, 2) == NULL);
    CHECK(rill_tensor_new((rill_dtype)42, dims, 2) == NULL);
    CHECK(rill_tensor_new(RILL_FLOAT, (int64_t[]){2, -1}, 2) == NULL);
    CHECK(rill_tensor_new(RILL_FLOAT, (int64_t[9]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 9) == NULL);
    CHECK(rill_tensor_new(RILL_FLOAT, NULL, 2) == NULL);
    CHECK(rill_tensor_new(RILL_FLOAT, dims, -1) == NULL);
    rill_shape part = rill_shape_make(2, (int64_t[]){-1, 3});
    CHECK(rill_tensor_new_shape(RILL_FLOAT, &part) == NULL);
    rill_shape unk = rill_shape_unknown();
    CHECK(rill_tensor_new_shape(RILL_FLOAT, &unk) == NULL);

    rill_shape s = rill_shape_matrix(4, 5);
    rill_tensor *ts = rill_tensor_new_shape(RILL_INT64, &s);
    if (CHECK(ts != NULL)) {
        CHECK_EQ_INT(rill_tensor_num_elements(ts), 20);
        CHECK_EQ_INT(rill_tensor_nbytes(ts), 160);
    }
    rill_tensor_free(ts);

    /* Scalars and empty tensors. */
    rill_tensor *sc = rill_tensor_new(RILL_DOUBLE, NULL, 0);
    if (CHECK(sc != NULL)) {
        CHECK_EQ_INT(rill_tensor_rank(sc), 0);
        CHECK_EQ_INT(rill_tensor_num_elements(sc), 1);
        CHECK_EQ_INT(rill_tensor_nbytes(sc), 8);
    }
    rill_tensor_free(sc);
    rill_tensor *empty = rill_tensor_new(RILL_FLOAT, (int64_t[]){0, 3}, 2);
    if (CHECK(empty != NULL)) {
        CHECK_EQ_INT(rill_tensor_num_elements(empty), 0);
        CHECK_EQ_INT(rill_tensor_nbytes(empty), 0);
        rill_tensor *ec = rill_tensor_copy(empty);
        CHECK(ec != NULL && rill_tensor_num_elements(ec) == 0);
        rill_tensor_free(ec);
    }
    rill_tensor_free(empty);
}

/* rill_tensor_new_borrowed: the caller's memory without a copy, released once at the last
 * reference; never exclusive (nothing writes it in place); refused for strings, bad shapes and
 * misaligned data. Through a session: a fetch of the fed tensor is not exclusive, a computed
 * fetch is (the recycle cache's reference does not count), a variable's value is not, and a
 * variable assigned from a borrowed tensor of 256 KiB (which rill would otherwise adopt without
 * a copy) holds a copy: the caller's later writes do not reach it. */
static int releases;
static void count_release(void *ctx)
{
    CHECK(ctx == &releases);
    releases++;
}

static void test_borrowed(void)
{
    enum { N = 65536 };
    float *mem = rill__aligned_alloc(N * sizeof(float));
    for (int i = 0; i < N; i++) mem[i] = (float)i;
    releases = 0;
    rill_tensor *t =
        rill_tensor_new_borrowed(RILL_FLOAT, (int64_t[]){N}, 1, mem, count_release, &releases);
    if (!CHECK(t != NULL)) return;
    CHECK(rill_tensor_data(t) == mem);
    CHECK(!rill_tensor_is_exclusive(t));
    CHECK_EQ_INT(rill_tensor_num_elements(t), N);
    rill_tensor *c = rill_tensor_copy(t);
    CHECK(c && rill_tensor_data(c) != mem && rill_tensor_is_exclusive(c));
    rill_tensor_free(c);
    CHECK(rill_tensor_new_borrowed(RILL_STRING, NULL, 0, mem, NULL, NULL) == NULL);
    CHECK(rill_tensor_new_borrowed(RILL_FLOAT, (int64_t[]){-1}, 1, mem, NULL, NULL) == NULL);
    CHECK(rill_tensor_new_borrowed(RILL_FLOAT, (int64_t[]){2}, 1, (char *)mem + 1, NULL, NULL) ==
          NULL);
    CHECK(rill_tensor_new_borrowed(RILL_FLOAT, (int64_t[]){2}, 1, NULL, NULL, NULL) == NULL);
    rill_tensor *empty = rill_tensor_new_borrowed(RILL_FLOAT, (int64_t[]){0}, 1, NULL, NULL, NULL);
    CHECK(empty != NULL);
    rill_tensor_free(empty);

    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_graph_push_device(g, "/cpu:0"); /* host memory throughout, GPU or not */
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(N), "x");
    rill_output id = rill_identity(g, x, "id");
    rill_output twice = rill_add(g, x, x, "twice");
    rill_output v = rill_variable(g, RILL_FLOAT, rill_shape_vector(N), rill_zeros_initializer(),
                                  false, "v");
    rill_output assign = rill_assign(g, v, x, NULL);
    rill_graph_pop_device(g);
    rill_session *sess = rill_session_new(g, NULL, s);
    if (CHECK(sess != NULL)) {
        rill_output fetches[] = {id, twice, assign};
        rill_tensor *out[3] = {NULL, NULL, NULL};
        CHECK_EQ_INT(rill_session_run(sess, &x, &t, 1, fetches, out, 3, NULL, 0, s), RILL_OK);
        if (CHECK(out[0] && out[1] && out[2])) {
            CHECK(rill_tensor_data(out[0]) == mem && !rill_tensor_is_exclusive(out[0]));
            CHECK(rill_tensor_is_exclusive(out[1]));
            CHECK_NEAR(rill_tensor_get_double(out[1], 7), 14, 0);
            CHECK(rill_tensor_data(out[2]) != mem && !rill_tensor_is_exclusive(out[2]));
        }
        for (int i = 0; i < 3; i++) rill_tensor_free(out[i]);
        mem[5] = -1; /* the caller's write after the step */
        rill_tensor *vv = NULL;
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &v, &vv, 1, NULL, 0, s), RILL_OK);
        if (CHECK(vv != NULL)) {
            CHECK_NEAR(rill_tensor_get_double(vv, 5), 5, 0);
            CHECK(!rill_tensor_is_exclusive(vv)); /* the variable still holds it */
        }
        rill_tensor_free(vv);
    }
    CHECK_EQ_INT(releases, 0); /* the caller still holds t */
    rill_tensor_free(t);
    rill_session_free(sess);
    CHECK_EQ_INT(releases, 1);
    rill_graph_free(g);
    rill_status_free(s);
    rill__aligned_free(mem, N * sizeof(float));
    CHECK(!rill_tensor_is_exclusive(NULL));
}

static void test_from_data_and_copy(void)
{
    float src[] = {1, 2, 3, 4};
    rill_tensor *t = rill_tensor_from_data(RILL_FLOAT, (int64_t[]){2, 2}, 2, src);
    if (!CHECK(t != NULL)) return;
    src[0] = 99; /* copied, not borrowed */
    CHECK_NEAR(((float *)rill_tensor_data(t))[0], 1, 0);
    CHECK_NEAR(rill_tensor_get_double(t, 3), 4, 0);
    CHECK(rill_tensor_from_data(RILL_STRING, NULL, 0, "x") == NULL);

    rill_tensor *c = rill_tensor_copy(t);
    if (CHECK(c != NULL)) {
        CHECK(rill_tensor_data(c) != rill_tensor_data(t));
        CHECK(rill_shape_equal(rill_tensor_shape(c), rill_tensor_shape(t)));
        ((float *)rill_tensor_data(c))[1] = -5;
        CHECK_NEAR(rill_tensor_get_double(t, 1), 2, 0);
        CHECK_NEAR(rill_tensor_get_double(c, 1), -5, 0);
    }
    rill_tensor_free(c);
    rill_tensor_free(t);

    /* get_double over every numeric dtype. */
    rill_tensor *a = rill_tensor_scalar_float(2.5f);
    rill_tensor *b = rill_tensor_scalar_double(-1e300);
    rill_tensor *i32 = rill_tensor_scalar_int32(-7);
    rill_tensor *i64 = rill_tensor_scalar_int64(INT64_C(1) << 40);
    uint8_t tv = 1;
    rill_tensor *bo = rill_tensor_from_data(RILL_BOOL, NULL, 0, &tv);
    rill_half hv = rill_half_from_float(0.75f);
    rill_tensor *h = rill_tensor_from_data(RILL_HALF, NULL, 0, &hv);
    CHECK_NEAR(rill_tensor_get_double(a, 0), 2.5, 0);
    CHECK_NEAR(rill_tensor_get_double(b, 0), -1e300, 0);
    CHECK_NEAR(rill_tensor_get_double(i32, 0), -7, 0);
    CHECK_NEAR(rill_tensor_get_double(i64, 0), 1099511627776.0, 0);
    CHECK_NEAR(rill_tensor_get_double(bo, 0), 1, 0);
    CHECK_NEAR(rill_tensor_get_double(h, 0), 0.75, 0);
    CHECK_EQ_INT(rill_tensor_dtype(i64), RILL_INT64);
    CHECK_EQ_INT(rill_tensor_rank(b), 0);
    rill_tensor_free(a);
    rill_tensor_free(b);
    rill_tensor_free(i32);
    rill_tensor_free(i64);
    rill_tensor_free(bo);
    rill_tensor_free(h);
}

static void test_strings(void)
{
    rill_tensor *t = rill_tensor_new(RILL_STRING, (int64_t[]){3}, 1);
    if (!CHECK(t != NULL)) return;
    size_t len = 99;
    /* New string elements are empty. */
    CHECK_EQ_STR(rill_tensor_get_string(t, 0, &len), "");
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(rill_tensor_set_string(t, 0, "hello", 5), 0);
    CHECK_EQ_INT(rill_tensor_set_string(t, 1, "a\0b", 3), 0); /* bytes, not C strings */
    CHECK_EQ_INT(rill_tensor_set_string(t, 2, "first", 5), 0);
    CHECK_EQ_INT(rill_tensor_set_string(t, 2, "second", 3), 0); /* replaces, copies len */
    CHECK_EQ_STR(rill_tensor_get_string(t, 0, &len), "hello");
    CHECK_EQ_INT(len, 5);
    const char *s1 = rill_tensor_get_string(t, 1, &len);
    CHECK_EQ_INT(len, 3);
    CHECK(s1 && memcmp(s1, "a\0b", 3) == 0);
    CHECK_EQ_STR(rill_tensor_get_string(t, 2, &len), "sec");
    CHECK_EQ_INT(len, 3);
    CHECK(rill_tensor_get_string(t, 2, NULL) != NULL);

    /* Out of range, and the wrong dtype. */
    CHECK_EQ_INT(rill_tensor_set_string(t, 3, "x", 1), -1);
    CHECK_EQ_INT(rill_tensor_set_string(t, -1, "x", 1), -1);
    CHECK(rill_tensor_get_string(t, 3, &len) == NULL);
    CHECK_EQ_INT(len, 0);
    rill_tensor *f = rill_tensor_scalar_float(1);
    CHECK_EQ_INT(rill_tensor_set_string(f, 0, "x", 1), -1);
    CHECK(rill_tensor_get_string(f, 0, NULL) == NULL);
    rill_tensor_free(f);

    /* A deep copy owns its strings. */
    rill_tensor *c = rill_tensor_copy(t);
    if (CHECK(c != NULL)) {
        rill_tensor_set_string(t, 0, "changed", 7);
        CHECK_EQ_STR(rill_tensor_get_string(c, 0, NULL), "hello");
        s1 = rill_tensor_get_string(c, 1, &len);
        CHECK(len == 3 && s1 && memcmp(s1, "a\0b", 3) == 0);
    }
    char buf[128];
    rill_tensor_set_string(c, 1, "x", 1);
    CHECK_EQ_STR(rill_tensor_str(c, buf, sizeof buf), "[b'hello' b'x' b'sec']");
    rill_tensor_free(c);
    rill_tensor_free(t);

    rill_tensor *sc = rill_tensor_scalar_string("abc");
    if (CHECK(sc != NULL)) {
        CHECK_EQ_INT(rill_tensor_dtype(sc), RILL_STRING);
        CHECK_EQ_INT(rill_tensor_rank(sc), 0);
        CHECK_EQ_STR(rill_tensor_get_string(sc, 0, &len), "abc");
        CHECK_EQ_STR(rill_tensor_str(sc, buf, sizeof buf), "b'abc'");
    }
    rill_tensor_free(sc);
    rill_tensor *es = rill_tensor_new(RILL_STRING, (int64_t[]){0}, 1);
    CHECK(es != NULL);
    rill_tensor_free(es);
}

/* Prints t into a static buffer. */
static const char *str_of(rill_tensor *t)
{
    static char buf[8192];
    rill_tensor_str(t, buf, sizeof buf);
    rill_tensor_free(t);
    return buf;
}

static rill_tensor *floats(const float *v, const int64_t *dims, int rank)
{
    return rill_tensor_from_data(RILL_FLOAT, dims, rank, v);
}

static void test_str(void)
{
    /* Expected strings are numpy 2's str() of the same arrays. */
    CHECK_EQ_STR(str_of(floats((float[]){2, 4, 6}, (int64_t[]){3}, 1)), "[2. 4. 6.]");
    CHECK_EQ_STR(str_of(floats((float[]){1, 2, 3, 4}, (int64_t[]){2, 2}, 2)),
                 "[[1. 2.]\n [3. 4.]]");
    CHECK_EQ_STR(str_of(floats((float[]){1, 2, 3, 4, 5, 6, 7, 8}, (int64_t[]){2, 2, 2}, 3)),
                 "[[[1. 2.]\n  [3. 4.]]\n\n [[5. 6.]\n  [7. 8.]]]");
    /* Aligned on the decimal point. */
    CHECK_EQ_STR(str_of(floats((float[]){1.5f, 2}, (int64_t[]){2}, 1)), "[1.5 2. ]");
    CHECK_EQ_STR(str_of(floats((float[]){-1, 10, 0.25f}, (int64_t[]){3}, 1)),
                 "[-1.   10.    0.25]");
    CHECK_EQ_STR(str_of(floats((float[]){0.1f, 1.0f / 3}, (int64_t[]){2}, 1)),
                 "[0.1        0.33333334]");
    /* Scientific when magnitudes are far apart. */
    CHECK_EQ_STR(str_of(floats((float[]){0.001f, 10}, (int64_t[]){2}, 1)), "[1.e-03 1.e+01]");
    CHECK_EQ_STR(str_of(floats((float[]){1.5e-5f, 1}, (int64_t[]){2}, 1)), "[1.5e-05 1.0e+00]");
    CHECK_EQ_STR(str_of(floats((float[]){NAN, -INFINITY, 1}, (int64_t[]){3}, 1)),
                 "[ nan -inf   1.]");
    /* Integers and bools right-aligned; int64 printed exactly. */
    CHECK_EQ_STR(str_of(rill_tensor_from_data(RILL_INT32, (int64_t[]){2, 2}, 2,
                                              (int32_t[]){1, -20, 300, 4})),
                 "[[  1 -20]\n [300   4]]");
    CHECK_EQ_STR(
        str_of(rill_tensor_from_data(RILL_INT64, (int64_t[]){2}, 1, (int64_t[]){INT64_MAX, 1})),
        "[9223372036854775807                   1]");
    CHECK_EQ_STR(str_of(rill_tensor_from_data(RILL_BOOL, (int64_t[]){3}, 1, (uint8_t[]){1, 0, 1})),
                 "[ True False  True]");
    double dv[] = {0.5, 123456.789};
    CHECK_EQ_STR(str_of(rill_tensor_from_data(RILL_DOUBLE, (int64_t[]){2}, 1, dv)),
                 "[5.00000000e-01 1.23456789e+05]");
    rill_half hv[] = {rill_half_from_float(0.5f), rill_half_from_float(1.25f)};
    CHECK_EQ_STR(str_of(rill_tensor_from_data(RILL_HALF, (int64_t[]){2}, 1, hv)), "[0.5  1.25]");

    /* Scalars print as numpy scalars do. */
    CHECK_EQ_STR(str_of(rill_tensor_scalar_float(2)), "2.0");
    CHECK_EQ_STR(str_of(rill_tensor_scalar_float(0.1f)), "0.1");
    CHECK_EQ_STR(str_of(rill_tensor_scalar_float(1e-5f)), "1e-05");
    CHECK_EQ_STR(str_of(rill_tensor_scalar_double(1.0 / 3)), "0.3333333333333333");
    CHECK_EQ_STR(str_of(rill_tensor_scalar_int32(-7)), "-7");
    CHECK_EQ_STR(str_of(rill_tensor_scalar_int64(INT64_MIN)), "-9223372036854775808");

    /* Empty arrays, long rows wrapped at 75 columns, big arrays summarised. */
    CHECK_EQ_STR(str_of(rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 0}, 2)), "[]");
    float r30[30];
    for (int i = 0; i < 30; i++) r30[i] = (float)i;
    CHECK_EQ_STR(str_of(floats(r30, (int64_t[]){30}, 1)),
                 "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
                 " 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]");
    rill_tensor *big = rill_tensor_new(RILL_INT32, (int64_t[]){2000}, 1);
    for (int i = 0; i < 2000; i++) ((int32_t *)rill_tensor_data(big))[i] = i;
    CHECK_EQ_STR(str_of(big), "[   0    1    2 ... 1997 1998 1999]");
    rill_tensor *big2 = rill_tensor_new(RILL_INT32, (int64_t[]){100, 20}, 2);
    for (int i = 0; i < 2000; i++) ((int32_t *)rill_tensor_data(big2))[i] = i;
    CHECK_EQ_STR(str_of(big2), "[[   0    1    2 ...   17   18   19]\n"
                               " [  20   21   22 ...   37   38   39]\n"
                               " [  40   41   42 ...   57   58   59]\n"
                               " ...\n"
                               " [1940 1941 1942 ... 1957 1958 1959]\n"
                               " [1960 1961 1962 ... 1977 1978 1979]\n"
                               " [1980 1981 1982 ... 1997 1998 1999]]");

    /* A short buffer truncates and terminates. */
    char small[6];
    rill_tensor *t = floats((float[]){1, 2, 3, 4}, (int64_t[]){4}, 1);
    CHECK_EQ_STR(rill_tensor_str(t, small, sizeof small), "[1. 2");
    rill_tensor_free(t);
}

static float bits_to_float(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* The value of a half bit pattern, computed independently of the library. */
static double half_value(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? INFINITY : ldexp(1024 + man, exp - 25);
    return sign ? -v : v;
}

static void test_half(void)
{
    int bad_value = 0, bad_trip = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        bool nan = ((h >> 10) & 0x1f) == 31 && (h & 0x3ff);
        float f = rill_half_to_float((rill_half)h);
        if (nan) {
            if (!isnan(f) || !isnan(rill_half_to_float(rill_half_from_float(f)))) bad_nan++;
            continue;
        }
        if ((double)f != half_value((uint16_t)h) || (signbit(f) != 0) != ((h >> 15) != 0))
            bad_value++;
        if (rill_half_from_float(f) != h) bad_trip++;
    }
    CHECK_EQ_INT(bad_value, 0);
    CHECK_EQ_INT(bad_trip, 0);
    CHECK_EQ_INT(bad_nan, 0);

    /* Round to nearest, ties to even: every midpoint between neighbouring finite halves goes to
     * the even one, and one float ulp either side goes to the nearer one. */
    int bad_round = 0;
    for (uint32_t h = 0; h < 0x7bff; h++) {
        float lo = rill_half_to_float((rill_half)h), hi = rill_half_to_float((rill_half)(h + 1));
        float mid = (lo + hi) / 2; /* exact: halves have 11 significant bits */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        if (rill_half_from_float(mid) != even) bad_round++;
        if (rill_half_from_float(nextafterf(mid, 0)) != h) bad_round++;
        if (rill_half_from_float(nextafterf(mid, INFINITY)) != h + 1) bad_round++;
        if (rill_half_from_float(-mid) != (even | 0x8000)) bad_round++;
    }
    CHECK_EQ_INT(bad_round, 0);

    CHECK_EQ_INT(rill_half_from_float(1.0f), 0x3c00);
    CHECK_EQ_INT(rill_half_from_float(-2.0f), 0xc000);
    CHECK_EQ_INT(rill_half_from_float(65504.0f), 0x7bff);
    CHECK_EQ_INT(rill_half_from_float(65519.0f), 0x7bff);
    CHECK_EQ_INT(rill_half_from_float(65520.0f), 0x7c00); /* the tie rounds to even: inf */
    CHECK_EQ_INT(rill_half_from_float(1e10f), 0x7c00);
    CHECK_EQ_INT(rill_half_from_float(-INFINITY), 0xfc00);
    CHECK_EQ_INT(rill_half_from_float(-0.0f), 0x8000);
    CHECK_EQ_INT(rill_half_from_float(bits_to_float(0x33000000)), 0); /* 2^-25: tie -> 0 */
    CHECK_EQ_INT(rill_half_from_float(bits_to_float(0x33000001)), 1); /* just above */
    CHECK_EQ_INT(rill_half_from_float(1e-10f), 0);
    CHECK_EQ_INT(rill_half_from_float(1.0f + 1.0f / 2048), 0x3c00); /* tie, even below */
    CHECK_EQ_INT(rill_half_from_float(1.0f + 3.0f / 2048), 0x3c02); /* tie, even above */
    rill_half qnan = rill_half_from_float(NAN);
    CHECK(((qnan >> 10) & 0x1f) == 31 && (qnan & 0x3ff) != 0);
}

static void test_crc32c(void)
{
    CHECK_EQ_INT(rill__crc32c(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ_INT(rill__crc32c(0, "", 0), 0);
    CHECK_EQ_INT(rill__crc32c(0, "a", 1), 0xC1D04330u);
    /* RFC 3720 (iSCSI) B.4 test vectors. */
    uint8_t buf[32];
    memset(buf, 0, sizeof buf);
    CHECK_EQ_INT(rill__crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    CHECK_EQ_INT(rill__crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    CHECK_EQ_INT(rill__crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
    CHECK_EQ_INT(rill__crc32c(0, buf, 32), 0x113FDB5Cu);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    CHECK_EQ_INT(rill__crc32c(0, fox, strlen(fox)), 0x22620404u);

    /* Chaining: crc(a ++ b) == crc(crc(a), b) at every split, and unaligned starts agree. */
    uint8_t data[300];
    for (int i = 0; i < 300; i++) data[i] = (uint8_t)(i * 131 + 7);
    uint32_t whole = rill__crc32c(0, data, sizeof data);
    int bad = 0;
    for (size_t k = 0; k <= sizeof data; k++)
        if (rill__crc32c(rill__crc32c(0, data, k), data + k, sizeof data - k) != whole) bad++;
    CHECK_EQ_INT(bad, 0);
    /* Byte-at-a-time against the bulk path. */
    uint32_t c = 0;
    for (size_t k = 0; k < sizeof data; k++) c = rill__crc32c(c, data + k, 1);
    CHECK_EQ_INT(c, whole);
    /* Big buffers take the three-stream path (12 KiB and up): against the same bytes fed in
     * pieces too small for it, at several lengths and misalignments. */
    size_t big_n = 100000 + 13;
    uint8_t *big = malloc(big_n);
    uint64_t x = 0x12345;
    for (size_t i = 0; i < big_n; i++) big[i] = (uint8_t)((x = x * 6364136223846793005ull + 1) >> 56);
    size_t lens[] = {12288, 12289, 24575, 36864 + 5, 99999};
    bad = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (size_t off = 0; off < 9; off += 3) {
            uint32_t bulk = rill__crc32c(7, big + off, lens[l]), pieces = 7;
            for (size_t k = 0; k < lens[l]; k += 1000)
                pieces = rill__crc32c(pieces, big + off + k, lens[l] - k < 1000 ? lens[l] - k : 1000);
            if (bulk != pieces) bad++;
        }
    CHECK_EQ_INT(bad, 0);
    free(big);
}

static void test_status(void)
{
    rill_status *s = rill_status_new();
    CHECK(rill_status_ok(s));
    CHECK_EQ_INT(rill_status_code(s), RILL_OK);
    CHECK_EQ_STR(rill_status_message(s), "");
    rill_status_set(s, RILL_NOT_FOUND, "node '%s' has %d outputs", "add", 1);
    CHECK(!rill_status_ok(s));
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_EQ_STR(rill_status_message(s), "node 'add' has 1 outputs");
    rill_status *c = rill_status_new();
    rill_status_copy(c, s);
    CHECK_EQ_INT(rill_status_code(c), RILL_NOT_FOUND);
    CHECK_EQ_STR(rill_status_message(c), "node 'add' has 1 outputs");
    rill_status_clear(s);
    CHECK(rill_status_ok(s));
    CHECK_EQ_STR(rill_status_message(s), "");
    rill_status_set(c, RILL_OK, "ignored");
    CHECK_EQ_STR(rill_status_message(c), "");
    CHECK_EQ_INT(rill_status_code(NULL), RILL_OK);
    rill_status_free(c);
    rill_status_free(s);
    rill_status_free(NULL);

    CHECK_EQ_STR(rill_code_name(RILL_OK), "OK");
    CHECK_EQ_STR(rill_code_name(RILL_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    CHECK_EQ_STR(rill_code_name(RILL_FAILED_PRECONDITION), "FAILED_PRECONDITION");
    CHECK_EQ_STR(rill_code_name(RILL_UNAUTHENTICATED), "UNAUTHENTICATED");
    CHECK_EQ_STR(rill_code_name((rill_code)99), "UNKNOWN_CODE");
    CHECK_EQ_INT(RILL_DATA_LOSS, 15); /* TF's numbers */
}

static void sum_range(void *arg, int64_t begin, int64_t end)
{
    _Atomic int64_t *acc = arg;
    int64_t s = 0;
    for (int64_t i = begin; i < end; i++) s += i;
    atomic_fetch_add(acc, s);
}

static void test_alloc_and_pool(void)
{
    uint64_t a0 = rill__alloc_count();
    void *p = rill__malloc(10);
    CHECK(rill__alloc_count() > a0);
    rill__free(p);
    /* Tensors count too: a steady-state step can be checked for zero allocations. */
    uint64_t a1 = rill__alloc_count();
    rill_tensor_free(rill_tensor_scalar_float(1));
    CHECK(rill__alloc_count() > a1);

    /* The block cache keeps a freed big block for the next step of the same size, and gives
     * back those no allocation took for a while (a burst of pushed tensors left 599 MB of RSS
     * at a ps after its connection closed). */
    rill__aligned_trim();
    void *b = rill__aligned_alloc(3u << 20);
    rill__aligned_free(b, 3u << 20);
    CHECK(rill__aligned_release_idle(60) == 0); /* freed just now: kept */
    usleep(20000);
    CHECK(rill__aligned_release_idle(0.01) >= (3u << 20));
    CHECK(rill__aligned_release_idle(0) == 0); /* nothing left */

    rill__threadpool *pool = rill__threadpool_new(3);
    if (!CHECK(pool != NULL)) return;
    CHECK_EQ_INT(rill__threadpool_size(pool), 3);
    _Atomic int64_t acc = 0;
    rill__parallel_for(pool, 100000, 100, sum_range, (void *)&acc);
    CHECK_EQ_INT(atomic_load(&acc), (int64_t)100000 * 99999 / 2);
    atomic_store(&acc, 0);
    rill__parallel_for(NULL, 1000, 1, sum_range, (void *)&acc);
    CHECK_EQ_INT(atomic_load(&acc), 1000 * 999 / 2);
    rill__threadpool_free(pool);
    CHECK(rill__num_cores() >= 1);
}

int main(void)
{
    test_dtypes();
    test_shapes();
    test_tensor_basics();
    test_from_data_and_copy();
    test_borrowed();
    test_strings();
    test_str();
    test_half();
    test_crc32c();
    test_status();
    test_alloc_and_pool();
    TEST_MAIN_END();
}
