/* test_array_ops.c - forward values and shape inference of every op in src/graph/ops_array.c:
 * Const, Placeholder, Identity, Reshape (static sizes with -1, rill_reshape_to with constant,
 * computed and fed shapes), ExpandDims, Cast between every pair of numeric dtypes and bool,
 * Fill, ZerosLike, OnesLike and Shape; then their build-time and run-time errors.
 */
#include "op_check.h"

#include <string.h>

static const rill_dtype all_types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF,
                                       RILL_INT32, RILL_INT64,  RILL_BOOL};
#define NALL 6

static double values_for(rill_dtype t, int i)
{
    static const double fl[] = {-2.75, -1, 0, 1.5, 3.25, 100};
    static const double in[] = {-3, -1, 0, 1, 7, 100};
    static const double bo[] = {1, 0, 0, 1, 1, 0};
    return t == RILL_BOOL ? bo[i % 6] : oc_is_int(t) ? in[i % 6] : fl[i % 6];
}

/* --- Const, Placeholder, Identity --- */

static void test_const_identity(void)
{
    for (int ti = 0; ti < NALL; ti++) {
        rill_dtype t = all_types[ti];
        int64_t dims[] = {3, 2};
        double v[6];
        for (int i = 0; i < 6; i++) v[i] = values_for(t, i);
        rill_graph *g = rill_graph_new();
        rill_tensor *x = oc_tensor(t, dims, 2, v);
        rill_output c = rill_const(g, x, NULL);
        rill_output id = rill_identity(g, c, NULL);
        char label[64];
        snprintf(label, sizeof label, "Const/Identity %s", rill_dtype_name(t));
        if (CHECK(c.node && id.node)) {
            CHECK_EQ_STR(rill_node_name(c.node), "Const");
            CHECK_EQ_STR(rill_node_op_type(c.node), "Const");
            CHECK_EQ_STR(rill_node_name(id.node), "Identity");
            CHECK_EQ_INT(rill_output_dtype(id), t);
            rill_shape s = rill_output_shape(id), want = rill_shape_matrix(3, 2);
            CHECK(rill_shape_equal(&s, &want));
        }
        rill_session *sess = oc_session(g);
        rill_tensor *oc = oc_run(sess, c, NULL, NULL, 0), *oi = oc_run(sess, id, NULL, NULL, 0);
        oc_check_tensor(label, oc, t, dims, 2, v);
        oc_check_tensor(label, oi, t, dims, 2, v);
        rill_tensor_free(oc);
        rill_tensor_free(oi);
        rill_session_free(sess);
        rill_tensor_free(x);
        rill_graph_free(g);
    }

    /* Scalar constants of every dtype and rill_const_floats. */
    rill_graph *g = rill_graph_new();
    for (int ti = 0; ti < NALL; ti++) {
        rill_dtype t = all_types[ti];
        rill_output c = rill_const_scalar(g, t, t == RILL_BOOL ? 1 : -7, NULL);
        CHECK_EQ_INT(rill_output_dtype(c), t);
        CHECK_EQ_INT(rill_output_shape(c).rank, 0);
        rill_tensor *o = oc_eval(g, c);
        double want = t == RILL_BOOL ? 1 : -7;
        oc_check_tensor("const_scalar", o, t, NULL, 0, &want);
        rill_tensor_free(o);
    }
    rill_output cf = rill_const_float(g, 2.5f, "cf");
    rill_tensor *o = oc_eval(g, cf);
    double want = 2.5;
    oc_check_tensor("const_float", o, RILL_FLOAT, NULL, 0, &want);
    rill_tensor_free(o);
    float fv[] = {1, 2, 3, 4, 5, 6};
    rill_output cfs = rill_const_floats(g, fv, (int64_t[]){2, 3}, 2, "cfs");
    o = oc_eval(g, cfs);
    oc_check_tensor("const_floats", o, RILL_FLOAT, (int64_t[]){2, 3}, 2,
                    (double[]){1, 2, 3, 4, 5, 6});
    rill_tensor_free(o);
    CHECK(rill_graph_ok(g));

    /* A string constant passes through Identity. */
    rill_tensor *st = rill_tensor_scalar_string("hello");
    rill_output sc = rill_identity(g, rill_const(g, st, "str"), NULL);
    CHECK_EQ_INT(rill_output_dtype(sc), RILL_STRING);
    o = oc_eval(g, sc);
    if (CHECK(o != NULL)) {
        size_t len = 0;
        const char *p = rill_tensor_get_string(o, 0, &len);
        CHECK_EQ_INT(len, 5);
        CHECK(p && memcmp(p, "hello", 5) == 0);
    }
    rill_tensor_free(o);
    rill_tensor_free(st);
    rill_graph_free(g);
}

static void test_placeholder(void)
{
    for (int ti = 0; ti < NALL; ti++) {
        rill_dtype t = all_types[ti];
        rill_graph *g = rill_graph_new();
        rill_output p = rill_placeholder(g, t, rill_shape_make(2, (int64_t[]){-1, 2}), NULL);
        rill_output u = rill_placeholder(g, t, rill_shape_unknown(), NULL);
        if (!CHECK(p.node && u.node)) {
            rill_graph_free(g);
            continue;
        }
        CHECK_EQ_STR(rill_node_name(p.node), "Placeholder");
        CHECK_EQ_STR(rill_node_name(u.node), "Placeholder_1");
        CHECK_EQ_INT(rill_output_dtype(p), t);
        rill_shape s = rill_output_shape(p), want = rill_shape_make(2, (int64_t[]){-1, 2});
        CHECK(rill_shape_equal(&s, &want));
        CHECK_EQ_INT(rill_output_shape(u).rank, -1);
        rill_output id = rill_identity(g, p, NULL);
        s = rill_output_shape(id);
        CHECK(rill_shape_equal(&s, &want));
        double v[6];
        for (int i = 0; i < 6; i++) v[i] = values_for(t, i + 1);
        int64_t dims[] = {3, 2};
        rill_tensor *x = oc_tensor(t, dims, 2, v);
        rill_session *sess = oc_session(g);
        rill_tensor *o = oc_run(sess, id, &p, &x, 1);
        oc_check_tensor("placeholder", o, t, dims, 2, v);
        rill_tensor_free(o);
        /* Fetching the fed placeholder itself gives the fed value. */
        o = oc_run(sess, u, &u, &x, 1);
        oc_check_tensor("placeholder fetch", o, t, dims, 2, v);
        rill_tensor_free(o);
        rill_session_free(sess);
        rill_tensor_free(x);
        rill_graph_free(g);
    }
}

/* --- Reshape --- */

static void test_reshape(void)
{
    for (int ti = 0; ti < NALL; ti++) {
        rill_dtype t = all_types[ti];
        double v[24];
        for (int i = 0; i < 24; i++)
            v[i] = t == RILL_BOOL ? i % 3 == 0 : oc_is_int(t) ? i - 5 : (i - 5) * 0.5;
        int64_t dims[] = {2, 3, 4};
        rill_graph *g = rill_graph_new();
        rill_tensor *x = oc_tensor(t, dims, 3, v);
        rill_output c = rill_const(g, x, "x");
        struct {
            int rank;
            int64_t spec[4], want[4];
        } cases[] = {
            {2, {4, -1}, {4, 6}},
            {1, {-1}, {24}},
            {2, {2, 12}, {2, 12}},
            {3, {-1, 2, 3}, {4, 2, 3}},
            {4, {1, 24, 1, 1}, {1, 24, 1, 1}},
            {3, {2, 3, 4}, {2, 3, 4}},
        };
        rill_session *sess = NULL;
        for (int k = 0; k < 6; k++) {
            rill_output r = rill_reshape(g, c, cases[k].spec, cases[k].rank, NULL);
            char label[64];
            snprintf(label, sizeof label, "Reshape %s case %d", rill_dtype_name(t), k);
            if (!CHECK(r.node != NULL)) {
                fprintf(stderr, "  case: %s: %s\n", label,
                        rill_status_message(rill_graph_status(g)));
                break;
            }
            CHECK_EQ_STR(rill_node_op_type(r.node), "Reshape");
            rill_shape s = rill_output_shape(r),
                       want = rill_shape_make(cases[k].rank, cases[k].want);
            if (!CHECK(rill_shape_equal(&s, &want))) fprintf(stderr, "  case: %s\n", label);
            rill_tensor *o = oc_eval(g, r);
            oc_check_tensor(label, o, t, cases[k].want, cases[k].rank, v);
            rill_tensor_free(o);
        }
        /* Reshape to the shape held by an int32 constant, by Shape of another tensor, and by a
         * fed int64 vector. */
        rill_tensor *s32 = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, (double[]){3, 8});
        rill_output r1 = rill_reshape_to(g, c, rill_const(g, s32, NULL), "r1");
        rill_shape s = rill_output_shape(r1), want = rill_shape_matrix(3, 8);
        CHECK(rill_shape_equal(&s, &want));
        rill_output other = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(6, 4), "other");
        rill_output r2 = rill_reshape_to(g, c, rill_shape_of(g, other, NULL), "r2");
        s = rill_output_shape(r2);
        want = rill_shape_matrix(6, 4);
        CHECK(rill_shape_equal(&s, &want));
        rill_output sp = rill_placeholder(g, RILL_INT64, rill_shape_vector(3), "sp");
        rill_output r3 = rill_reshape_to(g, c, sp, "r3");
        s = rill_output_shape(r3);
        want = rill_shape_make(3, (int64_t[]){-1, -1, -1});
        CHECK(rill_shape_equal(&s, &want));
        rill_output spu = rill_placeholder(g, RILL_INT32, rill_shape_unknown(), "spu");
        rill_output r4 = rill_reshape_to(g, c, spu, "r4");
        CHECK_EQ_INT(rill_output_shape(r4).rank, -1);
        sess = oc_session(g);
        rill_tensor *o = oc_run(sess, r1, NULL, NULL, 0);
        oc_check_tensor("reshape_to const", o, t, (int64_t[]){3, 8}, 2, v);
        rill_tensor_free(o);
        rill_tensor *ov = rill_tensor_new(RILL_FLOAT, (int64_t[]){6, 4}, 2);
        o = oc_run(sess, r2, &other, &ov, 1);
        oc_check_tensor("reshape_to Shape", o, t, (int64_t[]){6, 4}, 2, v);
        rill_tensor_free(o);
        rill_tensor *fs = oc_tensor(RILL_INT64, (int64_t[]){3}, 1, (double[]){4, -1, 2});
        o = oc_run(sess, r3, &sp, &fs, 1);
        oc_check_tensor("reshape_to fed", o, t, (int64_t[]){4, 3, 2}, 3, v);
        rill_tensor_free(o);
        rill_tensor *fs32 = oc_tensor(RILL_INT32, (int64_t[]){1}, 1, (double[]){-1});
        o = oc_run(sess, r4, &spu, &fs32, 1);
        oc_check_tensor("reshape_to fed -1", o, t, (int64_t[]){24}, 1, v);
        rill_tensor_free(o);
        /* Running the same plan twice (the view header is recycled) still gives the values. */
        o = oc_run(sess, r3, &sp, &fs, 1);
        oc_check_tensor("reshape_to fed, again", o, t, (int64_t[]){4, 3, 2}, 3, v);
        rill_tensor_free(o);
        rill_tensor_free(fs32);
        rill_tensor_free(fs);
        rill_tensor_free(ov);
        rill_tensor_free(s32);
        rill_session_free(sess);
        rill_tensor_free(x);
        rill_graph_free(g);
    }
    /* [1] to a scalar and back. */
    rill_graph *g = rill_graph_new();
    rill_tensor *one = oc_tensor(RILL_FLOAT, (int64_t[]){1}, 1, (double[]){4.5});
    rill_output sc = rill_reshape(g, rill_const(g, one, NULL), NULL, 0, NULL);
    CHECK_EQ_INT(rill_output_shape(sc).rank, 0);
    rill_output back = rill_reshape(g, sc, (int64_t[]){-1}, 1, NULL);
    rill_shape s = rill_output_shape(back), want = rill_shape_vector(1);
    CHECK(rill_shape_equal(&s, &want));
    rill_tensor *o = oc_eval(g, sc);
    oc_check_tensor("reshape to scalar", o, RILL_FLOAT, NULL, 0, (double[]){4.5});
    rill_tensor_free(o);
    o = oc_eval(g, back);
    oc_check_tensor("reshape scalar back", o, RILL_FLOAT, (int64_t[]){1}, 1, (double[]){4.5});
    rill_tensor_free(o);
    rill_tensor_free(one);
    rill_graph_free(g);
}

/* --- ExpandDims --- */

static void test_expand_dims(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_INT32, RILL_INT64};
    struct {
        int axis, rank;
        int64_t want[3];
    } cases[] = {{0, 3, {1, 2, 3}},  {1, 3, {2, 1, 3}},  {2, 3, {2, 3, 1}},
                 {-1, 3, {2, 3, 1}}, {-2, 3, {2, 1, 3}}, {-3, 3, {1, 2, 3}}};
    for (int ti = 0; ti < 5; ti++) {
        rill_dtype t = types[ti];
        double v[6] = {1, -2, 3, -4, 5, 6};
        rill_graph *g = rill_graph_new();
        rill_tensor *x = oc_tensor(t, (int64_t[]){2, 3}, 2, v);
        rill_output c = rill_const(g, x, NULL);
        rill_output u = rill_placeholder(g, t, rill_shape_unknown(), "u");
        rill_session *sess = NULL;
        for (int k = 0; k < 6; k++) {
            rill_output r = rill_expand_dims(g, c, cases[k].axis, NULL);
            rill_output ru = rill_expand_dims(g, u, cases[k].axis, NULL);
            char label[64];
            snprintf(label, sizeof label, "ExpandDims %s axis %d", rill_dtype_name(t),
                     cases[k].axis);
            if (!CHECK(r.node && ru.node)) break;
            rill_shape s = rill_output_shape(r), want = rill_shape_make(3, cases[k].want);
            if (!CHECK(rill_shape_equal(&s, &want))) fprintf(stderr, "  case: %s\n", label);
            CHECK_EQ_INT(rill_output_shape(ru).rank, -1);
            sess = oc_session(g);
            rill_tensor *o = oc_run(sess, r, NULL, NULL, 0);
            oc_check_tensor(label, o, t, cases[k].want, 3, v);
            rill_tensor_free(o);
            o = oc_run(sess, ru, &u, &x, 1);
            oc_check_tensor(label, o, t, cases[k].want, 3, v);
            rill_tensor_free(o);
            rill_session_free(sess);
        }
        rill_tensor_free(x);
        rill_graph_free(g);
    }
    rill_graph *g = rill_graph_new();
    rill_output e = rill_expand_dims(g, rill_const_float(g, 3, NULL), 0, "e");
    if (CHECK(e.node != NULL)) {
        CHECK_EQ_STR(rill_node_name(e.node), "e");
        rill_shape s = rill_output_shape(e), want = rill_shape_vector(1);
        CHECK(rill_shape_equal(&s, &want));
    }
    rill_tensor *o = oc_eval(g, e);
    oc_check_tensor("expand scalar", o, RILL_FLOAT, (int64_t[]){1}, 1, (double[]){3});
    rill_tensor_free(o);
    rill_graph_free(g);
}

/* --- Cast --- */

static double cast_ref(rill_dtype to, double v)
{
    if (to == RILL_BOOL) return v != 0;
    if (oc_is_int(to)) return trunc(v);
    return oc_round_to(to, v);
}

static void test_cast(void)
{
    for (int fi = 0; fi < NALL; fi++) {
        rill_dtype from = all_types[fi];
        double v[6], ref[6];
        for (int i = 0; i < 6; i++) v[i] = values_for(from, i);
        rill_graph *g = rill_graph_new();
        rill_tensor *x = oc_tensor(from, (int64_t[]){2, 3}, 2, v);
        rill_output c = rill_const(g, x, NULL);
        rill_output outs[NALL];
        for (int ti = 0; ti < NALL; ti++) outs[ti] = rill_cast(g, c, all_types[ti], NULL);
        rill_session *sess = oc_session(g);
        for (int ti = 0; ti < NALL; ti++) {
            rill_dtype to = all_types[ti];
            char label[64];
            snprintf(label, sizeof label, "Cast %s -> %s", rill_dtype_name(from),
                     rill_dtype_name(to));
            if (!CHECK(outs[ti].node != NULL)) continue;
            CHECK_EQ_INT(rill_output_dtype(outs[ti]), to);
            rill_shape s = rill_output_shape(outs[ti]), want = rill_shape_matrix(2, 3);
            CHECK(rill_shape_equal(&s, &want));
            for (int i = 0; i < 6; i++) ref[i] = cast_ref(to, v[i]);
            rill_tensor *o = oc_run(sess, outs[ti], NULL, NULL, 0);
            oc_check_tensor(label, o, to, (int64_t[]){2, 3}, 2, ref);
            rill_tensor_free(o);
        }
        CHECK_EQ_STR(rill_node_name(outs[0].node), "Cast");
        CHECK_EQ_STR(rill_node_name(outs[1].node), "Cast_1");
        rill_session_free(sess);
        rill_tensor_free(x);
        rill_graph_free(g);
    }
    /* Exactness: int64 beyond 2^53 survives a cast to int64, float keeps its bits in double. */
    rill_graph *g = rill_graph_new();
    int64_t big = ((int64_t)1 << 53) + 1;
    rill_tensor *tb = rill_tensor_scalar_int64(big);
    rill_tensor *o = oc_eval(g, rill_cast(g, rill_const(g, tb, NULL), RILL_INT64, NULL));
    if (CHECK(o != NULL)) CHECK_EQ_INT(*(int64_t *)rill_tensor_data(o), big);
    rill_tensor_free(o);
    rill_tensor *i32 = rill_tensor_scalar_int32(-2147483647 - 1);
    o = oc_eval(g, rill_cast(g, rill_const(g, i32, NULL), RILL_INT64, NULL));
    if (CHECK(o != NULL)) CHECK_EQ_INT(*(int64_t *)rill_tensor_data(o), -2147483647LL - 1);
    rill_tensor_free(o);
    rill_tensor *tf = rill_tensor_scalar_float(0.1f);
    o = oc_eval(g, rill_cast(g, rill_const(g, tf, NULL), RILL_DOUBLE, NULL));
    if (CHECK(o != NULL)) CHECK(*(double *)rill_tensor_data(o) == (double)0.1f);
    rill_tensor_free(o);
    rill_tensor_free(tf);
    rill_tensor_free(i32);
    rill_tensor_free(tb);
    rill_graph_free(g);
}

/* --- Fill, ZerosLike, OnesLike, Shape --- */

static void test_fill(void)
{
    for (int ti = 0; ti < NALL; ti++) {
        rill_dtype t = all_types[ti];
        double val = t == RILL_BOOL ? 1 : oc_is_int(t) ? -42 : -1.25;
        rill_graph *g = rill_graph_new();
        rill_tensor *d32 = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, (double[]){2, 3});
        rill_tensor *d64 = oc_tensor(RILL_INT64, (int64_t[]){3}, 1, (double[]){1, 2, 2});
        rill_output v = rill_const_scalar(g, t, val, "v");
        rill_output f1 = rill_fill(g, rill_const(g, d32, NULL), v, NULL);
        rill_output f2 = rill_fill(g, rill_const(g, d64, NULL), v, NULL);
        rill_output other = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(4, 1), "other");
        rill_output f3 = rill_fill(g, rill_shape_of(g, other, NULL), v, NULL);
        rill_output dp = rill_placeholder(g, RILL_INT32, rill_shape_vector(2), "dp");
        rill_output f4 = rill_fill(g, dp, v, NULL);
        char label[64];
        snprintf(label, sizeof label, "Fill %s", rill_dtype_name(t));
        if (!CHECK(f1.node && f2.node && f3.node && f4.node)) {
            fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
            goto next;
        }
        CHECK_EQ_STR(rill_node_name(f1.node), "Fill");
        CHECK_EQ_INT(rill_output_dtype(f1), t);
        rill_shape s = rill_output_shape(f1), want = rill_shape_matrix(2, 3);
        CHECK(rill_shape_equal(&s, &want));
        s = rill_output_shape(f2);
        want = rill_shape_make(3, (int64_t[]){1, 2, 2});
        CHECK(rill_shape_equal(&s, &want));
        s = rill_output_shape(f3);
        want = rill_shape_matrix(4, 1);
        CHECK(rill_shape_equal(&s, &want));
        /* Dims from a tensor of known length: the rank is known; from tf.stack([n, 5]): the
         * constant dims are (TF's partial shape). */
        s = rill_output_shape(f4);
        CHECK(s.rank == 2 && s.dims[0] == -1 && s.dims[1] == -1);
        rill_output n = rill_placeholder(g, RILL_INT32, rill_shape_scalar(), "n");
        rill_op_builder *pb = rill_op_builder_new(g, "Pack", "dims");
        rill_op_builder_add_input(pb, n);
        rill_op_builder_add_input(pb, rill_const_scalar(g, RILL_INT32, 5, NULL));
        rill_op_builder_set_int(pb, "axis", 0);
        rill_node *pack = rill_op_builder_finish(pb);
        if (CHECK(pack != NULL)) {
            s = rill_output_shape(rill_fill(g, rill_node_output(pack, 0), v, NULL));
            CHECK(s.rank == 2 && s.dims[0] == -1 && s.dims[1] == 5);
        }
        double ref[12];
        for (int i = 0; i < 12; i++) ref[i] = val;
        rill_session *sess = oc_session(g);
        rill_tensor *o = oc_run(sess, f1, NULL, NULL, 0);
        oc_check_tensor(label, o, t, (int64_t[]){2, 3}, 2, ref);
        rill_tensor_free(o);
        o = oc_run(sess, f2, NULL, NULL, 0);
        oc_check_tensor(label, o, t, (int64_t[]){1, 2, 2}, 3, ref);
        rill_tensor_free(o);
        rill_tensor *ov = rill_tensor_new(RILL_FLOAT, (int64_t[]){4, 1}, 2);
        o = oc_run(sess, f3, &other, &ov, 1);
        oc_check_tensor(label, o, t, (int64_t[]){4, 1}, 2, ref);
        rill_tensor_free(o);
        rill_tensor *dv = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, (double[]){0, 5});
        o = oc_run(sess, f4, &dp, &dv, 1);
        oc_check_tensor(label, o, t, (int64_t[]){0, 5}, 2, ref);
        rill_tensor_free(o);
        rill_tensor_free(dv);
        rill_tensor_free(ov);
        rill_session_free(sess);
    next:
        rill_tensor_free(d32);
        rill_tensor_free(d64);
        rill_graph_free(g);
    }
}

static void test_like_and_shape(void)
{
    for (int ti = 0; ti < NALL; ti++) {
        rill_dtype t = all_types[ti];
        double v[6], zeros[6] = {0}, ones[6] = {1, 1, 1, 1, 1, 1};
        for (int i = 0; i < 6; i++) v[i] = values_for(t, i);
        rill_graph *g = rill_graph_new();
        rill_tensor *x = oc_tensor(t, (int64_t[]){3, 1, 2}, 3, v);
        rill_output c = rill_const(g, x, NULL);
        rill_output z = rill_zeros_like(g, c, NULL), o1 = rill_ones_like(g, c, NULL);
        rill_output sh = rill_shape_of(g, c, NULL);
        rill_output u = rill_placeholder(g, t, rill_shape_unknown(), "u");
        rill_output shu = rill_shape_of(g, u, NULL), zu = rill_zeros_like(g, u, NULL);
        char label[64];
        snprintf(label, sizeof label, "like/shape %s", rill_dtype_name(t));
        if (!CHECK(z.node && o1.node && sh.node && shu.node && zu.node)) {
            rill_tensor_free(x);
            rill_graph_free(g);
            continue;
        }
        CHECK_EQ_STR(rill_node_name(z.node), "zeros_like");
        CHECK_EQ_STR(rill_node_name(o1.node), "ones_like");
        CHECK_EQ_STR(rill_node_name(sh.node), "Shape");
        CHECK_EQ_INT(rill_output_dtype(z), t);
        CHECK_EQ_INT(rill_output_dtype(sh), RILL_INT32);
        rill_shape s = rill_output_shape(z), want = rill_shape_make(3, (int64_t[]){3, 1, 2});
        CHECK(rill_shape_equal(&s, &want));
        s = rill_output_shape(sh);
        want = rill_shape_vector(3);
        CHECK(rill_shape_equal(&s, &want));
        s = rill_output_shape(shu);
        want = rill_shape_vector(-1);
        CHECK(rill_shape_equal(&s, &want));
        rill_session *sess = oc_session(g);
        int64_t dims[] = {3, 1, 2};
        rill_tensor *o = oc_run(sess, z, NULL, NULL, 0);
        oc_check_tensor(label, o, t, dims, 3, zeros);
        rill_tensor_free(o);
        o = oc_run(sess, o1, NULL, NULL, 0);
        oc_check_tensor(label, o, t, dims, 3, ones);
        rill_tensor_free(o);
        o = oc_run(sess, sh, NULL, NULL, 0);
        oc_check_tensor(label, o, RILL_INT32, (int64_t[]){3}, 1, (double[]){3, 1, 2});
        rill_tensor_free(o);
        rill_tensor *fed = oc_tensor(t, (int64_t[]){2, 1, 1, 3}, 4, v);
        o = oc_run(sess, shu, &u, &fed, 1);
        oc_check_tensor(label, o, RILL_INT32, (int64_t[]){4}, 1, (double[]){2, 1, 1, 3});
        rill_tensor_free(o);
        o = oc_run(sess, zu, &u, &fed, 1);
        oc_check_tensor(label, o, t, (int64_t[]){2, 1, 1, 3}, 4, zeros);
        rill_tensor_free(o);
        rill_tensor_free(fed);
        rill_session_free(sess);
        rill_tensor_free(x);
        rill_graph_free(g);
    }
    /* Shape of a scalar is an empty vector. */
    rill_graph *g = rill_graph_new();
    rill_output sh = rill_shape_of(g, rill_const_float(g, 1, NULL), NULL);
    rill_shape s = rill_output_shape(sh), want = rill_shape_vector(0);
    CHECK(rill_shape_equal(&s, &want));
    rill_tensor *o = oc_eval(g, sh);
    oc_check_tensor("shape of scalar", o, RILL_INT32, (int64_t[]){0}, 1, NULL);
    rill_tensor_free(o);
    rill_graph_free(g);
}

/* --- errors --- */

static void test_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "x");
    int nodes = rill_graph_num_nodes(g);
    CHECK(rill_reshape(g, x, (int64_t[]){4}, 1, "r").node == NULL);
    oc_check_build_error("reshape 6 to 4", g, RILL_INVALID_ARGUMENT,
                         "Cannot reshape a tensor with 6 elements to shape [4] (4 elements) for "
                         "'r' (op: 'Reshape') with input shapes: [2,3]");
    /* Sticky: nothing more is built and the message stays. */
    char before[512];
    snprintf(before, sizeof before, "%s", rill_status_message(rill_graph_status(g)));
    CHECK(rill_identity(g, x, NULL).node == NULL);
    CHECK(rill_cast(g, x, RILL_DOUBLE, NULL).node == NULL);
    CHECK(rill_expand_dims(g, x, 0, NULL).node == NULL);
    CHECK(rill_zeros_like(g, x, NULL).node == NULL);
    CHECK(rill_shape_of(g, x, NULL).node == NULL);
    CHECK(rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), NULL).node == NULL);
    CHECK(rill_reshape(g, x, (int64_t[]){6}, 1, NULL).node == NULL);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)), before);
    /* The failed reshape may leave its shape constant behind, but no Reshape node. */
    CHECK(rill_graph_find_node(g, "r") == NULL);
    CHECK(rill_graph_num_nodes(g) <= nodes + 1);
    rill_graph_clear_status(g);

    CHECK(rill_reshape(g, x, (int64_t[]){-1, -1}, 2, NULL).node == NULL);
    oc_check_build_error("reshape two -1", g, RILL_INVALID_ARGUMENT,
                         "only one input size may be -1");
    rill_graph_clear_status(g);
    CHECK(rill_reshape(g, x, (int64_t[]){4, -1}, 2, NULL).node == NULL);
    oc_check_build_error("reshape 6 to [4,-1]", g, RILL_INVALID_ARGUMENT,
                         "a tensor with 6 elements to shape [4,");
    rill_graph_clear_status(g);
    CHECK(rill_reshape_to(g, x, rill_const_float(g, 6, NULL), NULL).node == NULL);
    oc_check_build_error("reshape float shape", g, RILL_INVALID_ARGUMENT,
                         "the shape input must be int32 or int64, got float");
    rill_graph_clear_status(g);
    CHECK(rill_expand_dims(g, x, 3, NULL).node == NULL);
    oc_check_build_error("expand axis 3", g, RILL_INVALID_ARGUMENT,
                         "axis 3 is out of range for rank 2");
    rill_graph_clear_status(g);
    CHECK(rill_expand_dims(g, x, -4, NULL).node == NULL);
    oc_check_build_error("expand axis -4", g, RILL_INVALID_ARGUMENT,
                         "axis -4 is out of range for rank 2");
    rill_graph_clear_status(g);
    CHECK(rill_cast(g, x, RILL_STRING, NULL).node == NULL);
    oc_check_build_error("cast to string", g, RILL_UNIMPLEMENTED,
                         "cast float to string is not supported");
    rill_graph_clear_status(g);
    CHECK(rill_fill(g, rill_const_float(g, 2, NULL), rill_const_float(g, 1, NULL), NULL).node ==
          NULL);
    oc_check_build_error("fill float dims", g, RILL_INVALID_ARGUMENT,
                         "dims must be int32 or int64, got float");
    rill_graph_clear_status(g);
    rill_tensor *d = oc_tensor(RILL_INT32, (int64_t[]){1}, 1, (double[]){2});
    CHECK(rill_fill(g, rill_const(g, d, NULL), x, NULL).node == NULL);
    oc_check_build_error("fill non-scalar", g, RILL_INVALID_ARGUMENT, "value must be a scalar");
    rill_graph_clear_status(g);
    CHECK(rill_const(g, NULL, NULL).node == NULL);
    oc_check_build_error("const NULL", g, RILL_INVALID_ARGUMENT, "value is NULL");
    rill_graph_clear_status(g);
    CHECK(rill_placeholder(g, RILL_DT_INVALID, rill_shape_scalar(), "bad").node == NULL);
    oc_check_build_error("placeholder invalid", g, RILL_INVALID_ARGUMENT, "invalid dtype");
    rill_graph_clear_status(g);
    CHECK(rill_identity(g, x, "not a name!").node == NULL);
    oc_check_build_error("bad name", g, RILL_INVALID_ARGUMENT, "is not a valid node name");
    rill_graph_clear_status(g);

    /* Run-time errors: a fed shape that does not fit. */
    rill_output sp = rill_placeholder(g, RILL_INT32, rill_shape_vector(-1), "sp");
    rill_output r = rill_reshape_to(g, x, sp, NULL);
    rill_session *sess = oc_session(g);
    rill_status *s = rill_status_new();
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 3}, 2);
    memset(rill_tensor_data(xv), 0, rill_tensor_nbytes(xv));
    rill_tensor *bad = oc_tensor(RILL_INT32, (int64_t[]){1}, 1, (double[]){4});
    rill_tensor *bad2 = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, (double[]){4, -1});
    rill_tensor *out = NULL;
    if (sess) {
        CHECK_EQ_INT(rill_session_run(sess, (rill_output[]){x, sp}, (rill_tensor *[]){xv, bad}, 2,
                                      &r, &out, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(
            rill_status_message(s),
            "Input to reshape is a tensor with 6 values, but the requested shape [4] has 4");
        CHECK_EQ_INT(rill_session_run(sess, (rill_output[]){x, sp}, (rill_tensor *[]){xv, bad2}, 2,
                                      &r, &out, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Input to reshape is a tensor with 6 values");
        CHECK(out == NULL);
    }
    rill_tensor_free(out);
    rill_tensor_free(bad);
    rill_tensor_free(bad2);
    rill_tensor_free(xv);
    rill_status_free(s);
    rill_session_free(sess);
    rill_tensor_free(d);
    rill_graph_free(g);
}

int main(void)
{
    test_const_identity();
    test_placeholder();
    test_reshape();
    test_expand_dims();
    test_cast();
    test_fill();
    test_like_and_shape();
    test_errors();
    TEST_MAIN_END();
}
