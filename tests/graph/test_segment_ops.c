/* test_segment_ops.c - the ops of src/graph/ops_segment.c and ops_search.c: segment mean / max /
 * min / prod (sorted, and unsorted with negative and 2-D ids) and TensorScatter* against
 * references computed here in double, every gradient against finite differences
 * (oc_grad_check), DynamicPartition / DynamicStitch with theirs, ListDiff, Lower/UpperBound,
 * Bincount, InvertPermutation and UnravelIndex values, and TF's texts for bad indices. */
#include "op_check.h"

#include <float.h>
#include <string.h>

static rill_output int_const(rill_graph *g, rill_dtype t, const int64_t *dims, int rank,
                             const int64_t *v)
{
    int64_t n = oc_numel(dims, rank);
    double d[64];
    for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
    rill_tensor *x = oc_tensor(t, dims, rank, d);
    rill_output c = rill_const(g, x, "c");
    rill_tensor_free(x);
    return c;
}

static rill_node *op_node(rill_graph *g, const char *type, const rill_output *in, int n,
                          const char *iattr, int64_t iv)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    if (iattr) rill_op_builder_set_int(b, iattr, iv);
    if (iattr && strcmp(iattr, "num_partitions") == 0)
        rill_op_builder_set_int(b, "num_outputs", iv);
    return rill_op_builder_finish(b);
}

static rill_output op(rill_graph *g, const char *type, const rill_output *in, int n)
{
    return (rill_output){op_node(g, type, in, n, NULL, 0), 0};
}

/* Runs y and checks the run fails with InvalidArgument and text. */
static void check_run_error(const char *label, rill_graph *g, rill_output y, const char *text)
{
    rill_session *s = oc_session(g);
    rill_status *st = rill_status_new();
    rill_tensor *out = NULL;
    if (s) {
        CHECK_EQ_INT(rill_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, st),
                     RILL_INVALID_ARGUMENT);
        if (!CHECK_STR_CONTAINS(rill_status_message(st), text))
            fprintf(stderr, "  case: %s\n", label);
    }
    rill_tensor_free(out);
    rill_status_free(st);
    rill_session_free(s);
}

/* --- segment reductions --- */

static const char *const seg_ops[] = {"SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"};
static const char *const useg_ops[] = {"UnsortedSegmentMax", "UnsortedSegmentMin",
                                       "UnsortedSegmentProd"};

typedef struct seg_case {
    const char *op;
    bool unsorted;
} seg_case;

static const int64_t sorted_ids[6] = {0, 0, 1, 3, 3, 3};
static const int64_t unsorted_ids[6] = {2, -1, 0, 1, 0, 2}; /* as [3, 2] */

static rill_output build_seg(rill_graph *g, const rill_output *xs, void *ctx)
{
    const seg_case *c = ctx;
    if (!c->unsorted) {
        rill_output in[] = {xs[0], int_const(g, RILL_INT32, (int64_t[]){6}, 1, sorted_ids)};
        return op(g, c->op, in, 2);
    }
    rill_output in[] = {xs[0], int_const(g, RILL_INT64, (int64_t[]){3, 2}, 2, unsorted_ids),
                        int_const(g, RILL_INT32, NULL, 0, (int64_t[]){3})};
    return op(g, c->op, in, 3);
}

static double seg_ref(const char *op, const double *v, int n, bool unsorted)
{
    bool mx = strstr(op, "Max"), mn = strstr(op, "Min"), pr = strstr(op, "Prod");
    if (n == 0) {
        if (pr) return 1;
        return !unsorted ? 0 : mx ? -DBL_MAX : mn ? DBL_MAX : 1;
    }
    double a = v[0];
    for (int i = 1; i < n; i++)
        a = mx ? fmax(a, v[i]) : mn ? fmin(a, v[i]) : pr ? a * v[i] : a + v[i];
    return (mx || mn || pr) ? a : a / n;
}

static void test_segments(void)
{
    rill_tensor *x = oc_random((int64_t[]){6, 2}, 2, -2, 2);
    const double *xv = rill_tensor_data(x);
    for (int k = 0; k < 4; k++) {
        seg_case c = {seg_ops[k], false};
        rill_graph *g = rill_graph_new();
        rill_tensor *t = oc_eval(g, build_seg(g, (rill_output[]){rill_const(g, x, "x")}, &c));
        double ref[8];
        for (int s = 0; s < 4; s++)
            for (int j = 0; j < 2; j++) {
                double v[6];
                int n = 0;
                for (int i = 0; i < 6; i++)
                    if (sorted_ids[i] == s) v[n++] = xv[i * 2 + j];
                ref[s * 2 + j] = seg_ref(c.op, v, n, false);
            }
        oc_check_tensor(c.op, t, RILL_DOUBLE, (int64_t[]){4, 2}, 2, ref);
        rill_tensor_free(t);
        rill_graph_free(g);
        oc_grad_check(c.op, 1, &x, build_seg, &c, (oc_grad_opts){0});
        oc_grad_check(c.op, 1, &x, build_seg, &c, (oc_grad_opts){.unknown_shapes = true});
    }
    /* unsorted: data [3, 2, 2] with ids [3, 2] */
    rill_tensor *u = oc_random((int64_t[]){3, 2, 2}, 3, -2, 2);
    const double *uv = rill_tensor_data(u);
    for (int k = 0; k < 3; k++) {
        seg_case c = {useg_ops[k], true};
        rill_graph *g = rill_graph_new();
        rill_tensor *t = oc_eval(g, build_seg(g, (rill_output[]){rill_const(g, u, "u")}, &c));
        double ref[8];
        for (int s = 0; s < 3; s++)
            for (int j = 0; j < 2; j++) {
                double v[6];
                int n = 0;
                for (int i = 0; i < 6; i++)
                    if (unsorted_ids[i] == s) v[n++] = uv[i * 2 + j];
                ref[s * 2 + j] = seg_ref(c.op, v, n, true);
            }
        oc_check_tensor(c.op, t, RILL_DOUBLE, (int64_t[]){3, 2}, 2, ref);
        rill_tensor_free(t);
        rill_graph_free(g);
        oc_grad_check(c.op, 1, &u, build_seg, &c, (oc_grad_opts){0});
    }
    /* a product with zeros: one zero in a segment, then two */
    double zv[12] = {0, 1.5, 2, -1, 0.5, 0, 0, 3, 1.25, 0, 2, 0.75};
    rill_tensor *z = oc_tensor(RILL_DOUBLE, (int64_t[]){6, 2}, 2, zv);
    seg_case pc = {"SegmentProd", false};
    oc_grad_check("SegmentProd with zeros", 1, &z, build_seg, &pc, (oc_grad_opts){0});
    rill_tensor_free(z);
    /* integers: a max over int32, and empty segments' defaults */
    rill_graph *g = rill_graph_new();
    rill_output in[] = {int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){4, -7, 9}),
                        int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){0, -1, 2}),
                        int_const(g, RILL_INT32, NULL, 0, (int64_t[]){4})};
    rill_tensor *t = oc_eval(g, op(g, "UnsortedSegmentMin", in, 3));
    oc_check_tensor("UnsortedSegmentMin int32", t, RILL_INT32, (int64_t[]){4}, 1,
                    (double[]){4, INT32_MAX, 9, INT32_MAX});
    rill_tensor_free(t);
    rill_output sin[] = {in[0], int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){0, 0, 3})};
    t = oc_eval(g, op(g, "SegmentMax", sin, 2));
    oc_check_tensor("SegmentMax int32, empty segments", t, RILL_INT32, (int64_t[]){4}, 1,
                    (double[]){4, 0, 0, 9});
    rill_tensor_free(t);
    /* TF's texts */
    rill_output bad[] = {in[0], int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){0, 7, 1}),
                         in[2]};
    check_run_error("unsorted out of range", g, op(g, "UnsortedSegmentMax", bad, 3),
                    "segment_ids[1] = 7 is out of range [0, 4)");
    rill_output dec[] = {in[0], int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){0, 2, 1})};
    check_run_error("not increasing", g, op(g, "SegmentMin", dec, 2),
                    "segment ids are not increasing");
    rill_output neg[] = {in[0], int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){-1, 0, 1})};
    check_run_error("negative sorted id", g, op(g, "SegmentProd", neg, 2),
                    "Segment id -1 out of range [0, 2), possibly because 'segment_ids' input is "
                    "not sorted.");
    rill_graph_free(g);
    rill_tensor_free(x);
    rill_tensor_free(u);
}

/* --- TensorScatter* --- */

static const char *const ts_ops[] = {"TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub",
                                     "TensorScatterMax", "TensorScatterMin"};
static const int64_t ts_ix[3] = {3, 0, 2}; /* [3, 1] into [4, 2] */

static rill_output build_ts(rill_graph *g, const rill_output *xs, void *ctx)
{
    rill_output in[] = {xs[0], int_const(g, RILL_INT32, (int64_t[]){3, 1}, 2, ts_ix), xs[1]};
    return op(g, ctx, in, 3);
}

static void test_tensor_scatter(void)
{
    rill_tensor *x = oc_random((int64_t[]){4, 2}, 2, -2, 2);
    rill_tensor *u = oc_random((int64_t[]){3, 2}, 2, -2, 2);
    const double *xv = rill_tensor_data(x), *uv = rill_tensor_data(u);
    for (int k = 0; k < 5; k++) {
        rill_graph *g = rill_graph_new();
        rill_output xs[] = {rill_const(g, x, "x"), rill_const(g, u, "u")};
        rill_tensor *t = oc_eval(g, build_ts(g, xs, (void *)ts_ops[k]));
        double ref[8];
        memcpy(ref, xv, sizeof ref);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                double *r = &ref[ts_ix[i] * 2 + j], v = uv[i * 2 + j];
                *r = k == 0   ? v
                     : k == 1 ? *r + v
                     : k == 2 ? *r - v
                     : k == 3 ? fmax(*r, v)
                              : fmin(*r, v);
            }
        oc_check_tensor(ts_ops[k], t, RILL_DOUBLE, (int64_t[]){4, 2}, 2, ref);
        rill_tensor_free(t);
        rill_graph_free(g);
        rill_tensor *vals[] = {x, u};
        oc_grad_check(ts_ops[k], 2, vals, build_ts, (void *)ts_ops[k], (oc_grad_opts){0});
    }
    rill_graph *g = rill_graph_new();
    rill_tensor *u2 = oc_random((int64_t[]){2}, 1, 0, 1);
    rill_output in[] = {rill_const(g, x, "x"),
                        int_const(g, RILL_INT32, (int64_t[]){2, 2}, 2, (int64_t[]){1, 0, 2, 7}),
                        rill_const(g, u2, "u2")};
    rill_tensor_free(u2);
    check_run_error("TensorScatterAdd out of range", g, op(g, "TensorScatterAdd", in, 3),
                    "indices[1] = [2, 7] does not index into shape [4,2]");
    rill_graph_free(g);
    rill_tensor_free(x);
    rill_tensor_free(u);
}

/* --- DynamicPartition, DynamicStitch --- */

static rill_output build_partition(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {xs[0],
                        int_const(g, RILL_INT32, (int64_t[]){5}, 1, (int64_t[]){1, 0, 2, 1, 1})};
    rill_node *n = op_node(g, "DynamicPartition", in, 2, "num_partitions", 3);
    /* partition 2 unused: its gradient is zeros */
    return rill_add(g, rill_sum(g, (rill_output){n, 0}, (int[]){0}, 1, false, NULL),
                    rill_mul(g, rill_const_scalar(g, RILL_DOUBLE, 3, "k"),
                             rill_sum(g, (rill_output){n, 1}, (int[]){0}, 1, false, NULL), NULL),
                    NULL);
}

static rill_output build_stitch(rill_graph *g, const rill_output *xs, void *ctx)
{
    /* ctx non-NULL: index 3 in both inputs (no finite-difference check then: TF's gradient
     * gathers for the overwritten rows too) */
    rill_output in[] = {int_const(g, RILL_INT32, (int64_t[]){2}, 1, (int64_t[]){0, ctx ? 3 : 4}),
                        int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){1, 2, 3}), xs[0],
                        xs[1]};
    return (rill_output){op_node(g, "DynamicStitch", in, 4, "N", 2), 0};
}

static void test_partition_stitch(void)
{
    rill_tensor *x = oc_random((int64_t[]){5, 2}, 2, -2, 2);
    const double *xv = rill_tensor_data(x);
    rill_graph *g = rill_graph_new();
    rill_output in[] = {rill_const(g, x, "x"),
                        int_const(g, RILL_INT32, (int64_t[]){5}, 1, (int64_t[]){1, 0, 2, 1, 1})};
    rill_node *n = op_node(g, "DynamicPartition", in, 2, "num_partitions", 3);
    rill_tensor *p1 = oc_eval(g, (rill_output){n, 1});
    double r1[6] = {xv[0], xv[1], xv[6], xv[7], xv[8], xv[9]};
    oc_check_tensor("DynamicPartition part 1", p1, RILL_DOUBLE, (int64_t[]){3, 2}, 2, r1);
    rill_tensor_free(p1);
    rill_output bad[] = {in[0],
                         int_const(g, RILL_INT32, (int64_t[]){5}, 1, (int64_t[]){1, 3, 2, 1, 1})};
    check_run_error("DynamicPartition", g,
                    (rill_output){op_node(g, "DynamicPartition", bad, 2, "num_partitions", 3), 0},
                    "partitions[1] = 3 is not in [0, 3)");
    rill_graph_free(g);
    oc_grad_check("DynamicPartition", 1, &x, build_partition, NULL, (oc_grad_opts){0});
    rill_tensor *a = oc_random((int64_t[]){2, 2}, 2, -1, 1),
                *b = oc_random((int64_t[]){3, 2}, 2, -1, 1);
    rill_tensor *vals[] = {a, b};
    const double *av = rill_tensor_data(a), *bv = rill_tensor_data(b);
    g = rill_graph_new();
    rill_tensor *t = oc_eval(
        g, build_stitch(g, (rill_output[]){rill_const(g, a, "a"), rill_const(g, b, "b")}, "dup"));
    /* index 3 is in both: the later input wins */
    double ref[8] = {av[0], av[1], bv[0], bv[1], bv[2], bv[3], bv[4], bv[5]};
    oc_check_tensor("DynamicStitch", t, RILL_DOUBLE, (int64_t[]){4, 2}, 2, ref);
    rill_tensor_free(t);
    rill_graph_free(g);
    oc_grad_check("DynamicStitch", 2, vals, build_stitch, NULL, (oc_grad_opts){0});
    rill_tensor_free(a);
    rill_tensor_free(b);
    rill_tensor_free(x);
}

/* --- ListDiff, bounds, Bincount, InvertPermutation, UnravelIndex --- */

static void test_search(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = int_const(g, RILL_INT32, (int64_t[]){6}, 1, (int64_t[]){1, 2, 3, 4, 5, 6});
    rill_output y = int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){1, 3, 5});
    rill_node *d = op_node(g, "ListDiff", (rill_output[]){x, y}, 2, NULL, 0);
    rill_tensor *o = oc_eval(g, (rill_output){d, 0}), *i = oc_eval(g, (rill_output){d, 1});
    oc_check_tensor("ListDiff out", o, RILL_INT32, (int64_t[]){3}, 1, (double[]){2, 4, 6});
    oc_check_tensor("ListDiff idx", i, RILL_INT32, (int64_t[]){3}, 1, (double[]){1, 3, 5});
    rill_tensor_free(o);
    rill_tensor_free(i);
    rill_tensor *sv = oc_tensor(RILL_FLOAT, (int64_t[]){1, 5}, 2, (double[]){0, 1, 1, 2, 4});
    rill_tensor *vv = oc_tensor(RILL_FLOAT, (int64_t[]){1, 4}, 2, (double[]){1, -1, 3, 9});
    rill_output bin[] = {rill_const(g, sv, "s"), rill_const(g, vv, "v")};
    rill_tensor_free(sv);
    rill_tensor_free(vv);
    o = oc_eval(g, op(g, "LowerBound", bin, 2));
    oc_check_tensor("LowerBound", o, RILL_INT32, (int64_t[]){1, 4}, 2, (double[]){1, 0, 4, 5});
    rill_tensor_free(o);
    o = oc_eval(g, op(g, "UpperBound", bin, 2));
    oc_check_tensor("UpperBound", o, RILL_INT32, (int64_t[]){1, 4}, 2, (double[]){3, 0, 4, 5});
    rill_tensor_free(o);
    rill_output arr = int_const(g, RILL_INT32, (int64_t[]){5}, 1, (int64_t[]){1, 1, 3, 0, 7});
    rill_tensor *w = oc_tensor(RILL_FLOAT, (int64_t[]){5}, 1, (double[]){0.5, 1, 2, 4, 8});
    rill_output bc[] = {arr, int_const(g, RILL_INT32, NULL, 0, (int64_t[]){5}),
                        rill_const(g, w, "w")};
    rill_tensor_free(w);
    o = oc_eval(g, op(g, "Bincount", bc, 3));
    oc_check_tensor("Bincount", o, RILL_FLOAT, (int64_t[]){5}, 1, (double[]){4, 1.5, 0, 2, 0});
    rill_tensor_free(o);
    o = oc_eval(
        g, op(g, "InvertPermutation",
              (rill_output[]){int_const(g, RILL_INT64, (int64_t[]){4}, 1, (int64_t[]){2, 0, 3, 1})},
              1));
    oc_check_tensor("InvertPermutation", o, RILL_INT64, (int64_t[]){4}, 1, (double[]){1, 3, 0, 2});
    rill_tensor_free(o);
    check_run_error(
        "InvertPermutation dup", g,
        op(g, "InvertPermutation",
           (rill_output[]){int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){0, 0, 1})}, 1),
        "0 is duplicated in the input.");
    rill_output ui[] = {int_const(g, RILL_INT32, (int64_t[]){3}, 1, (int64_t[]){1, 5, 11}),
                        int_const(g, RILL_INT32, (int64_t[]){2}, 1, (int64_t[]){3, 4})};
    o = oc_eval(g, op(g, "UnravelIndex", ui, 2));
    oc_check_tensor("UnravelIndex", o, RILL_INT32, (int64_t[]){2, 3}, 2,
                    (double[]){0, 1, 2, 1, 1, 3});
    rill_tensor_free(o);
    ui[0] = int_const(g, RILL_INT32, (int64_t[]){2}, 1, (int64_t[]){1, 30});
    check_run_error("UnravelIndex", g, op(g, "UnravelIndex", ui, 2),
                    "index is out of bound as with dims");
    rill_graph_free(g);
}

int main(void)
{
    oc_seed(1919);
    test_segments();
    test_tensor_scatter();
    test_partition_stitch();
    test_search();
    TEST_MAIN_END();
}
