/* test_adagrad_da.c - ApplyAdagradDA and SparseApplyAdagradDA (src/graph/ops_adagrad_da.c,
 * src/kernels/cpu/cpu_adagrad_da.c) against a double reference written here from TF's
 * training_ops.cc functors: two dense steps at global steps 1 and 2, with and without l1; a
 * sparse step with a repeated index (accumulated twice, in order, as TF's kernel) leaving the
 * other rows as they were; TF's NaN of the sparse form at global step 0; float; TF's build
 * errors (shapes, dtypes, ranks) and the out-of-range index at run time. */
#include "../graph/op_check.h"

#include <math.h>
#include <string.h>

#define R  4
#define C  2
#define NE (R * C)

static rill_output var_of(rill_graph *g, rill_dtype t, const double *v, const char *name)
{
    rill_tensor *it = oc_tensor(t, (int64_t[]){R, C}, 2, v);
    rill_output c = rill_const(g, it, NULL);
    rill_tensor_free(it);
    return rill_variable_from(g, c, false, name);
}

static rill_output scalar(rill_graph *g, rill_dtype t, double x)
{
    rill_tensor *s = oc_tensor(t, NULL, 0, &x);
    rill_output c = rill_const(g, s, NULL);
    rill_tensor_free(s);
    return c;
}

static rill_node *build(rill_graph *g, const char *op, const rill_output *in, int n)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    return rill_op_builder_finish(b);
}

static const double lr = 0.3, l2 = 0.02;

static void dense_ref(double *w, double *ga, double *gg, const double *grad, double l1, double T)
{
    for (int i = 0; i < NE; i++) {
        ga[i] += grad[i];
        gg[i] += grad[i] * grad[i];
        double den = l2 * T * lr + sqrt(gg[i]);
        if (l1 > 0) {
            double m = fabs(ga[i]) - l1 * T;
            w[i] = -lr * (ga[i] > 0 ? 1 : ga[i] < 0 ? -1 : 0) * (m > 0 ? m : 0) / den;
        } else {
            w[i] = -lr * ga[i] / den;
        }
    }
}

static void init_values(double *w, double *ga, double *gg)
{
    for (int i = 0; i < NE; i++) {
        w[i] = 0.5 - 0.1 * i;
        ga[i] = 0.05 * i - 0.2;
        gg[i] = 0.1 + 0.01 * i;
    }
}

static void dense(rill_dtype t, double l1)
{
    double w[NE], ga[NE], gg[NE];
    init_values(w, ga, gg);
    rill_graph *g = rill_graph_new();
    rill_output in[8];
    in[0] = var_of(g, t, w, "v");
    in[1] = var_of(g, t, ga, "ga");
    in[2] = var_of(g, t, gg, "gg");
    in[3] = rill_placeholder(g, t, rill_shape_matrix(R, C), "grad");
    in[4] = scalar(g, t, lr);
    in[5] = scalar(g, t, l1);
    in[6] = scalar(g, t, l2);
    in[7] = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "step");
    rill_output up = {build(g, "ApplyAdagradDA", in, 8), 0};
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *s = oc_session(g);
    oc_run_targets(s, &init, 1);
    for (int step = 1; step <= 2; step++) {
        double grad[NE];
        for (int i = 0; i < NE; i++) grad[i] = (i % 3 - 1) * 0.4 + 0.1 * step;
        dense_ref(w, ga, gg, grad, l1, step);
        rill_tensor *gt = oc_tensor(t, (int64_t[]){R, C}, 2, grad);
        int64_t st = step;
        rill_tensor *stt = rill_tensor_from_data(RILL_INT64, NULL, 0, &st);
        rill_output feeds[] = {in[3], in[7]};
        rill_tensor *vals[] = {gt, stt};
        rill_tensor *got = oc_run(s, up, feeds, vals, 2);
        oc_check_tensor(t == RILL_FLOAT ? "dense float" : "dense double", got, t, (int64_t[]){R, C},
                        2, w);
        rill_tensor_free(got);
        rill_tensor_free(gt);
        rill_tensor_free(stt);
    }
    rill_tensor *a = oc_run(s, in[1], NULL, NULL, 0), *q = oc_run(s, in[2], NULL, NULL, 0);
    oc_check_tensor("accumulator", a, t, (int64_t[]){R, C}, 2, ga);
    oc_check_tensor("squared accumulator", q, t, (int64_t[]){R, C}, 2, gg);
    rill_tensor_free(a);
    rill_tensor_free(q);
    rill_session_free(s);
    rill_graph_free(g);
}

static void sparse(double l1, int64_t step)
{
    double w[NE], ga[NE], gg[NE], w0[NE];
    init_values(w, ga, gg);
    memcpy(w0, w, sizeof w);
    static const int64_t ids[3] = {2, 0, 2};
    double grad[3 * C] = {0.5, 0.1, 1.0, -2.0, 0.3, 0.3};
    rill_graph *g = rill_graph_new();
    rill_output in[9];
    in[0] = var_of(g, RILL_DOUBLE, w, "v");
    in[1] = var_of(g, RILL_DOUBLE, ga, "ga");
    in[2] = var_of(g, RILL_DOUBLE, gg, "gg");
    rill_tensor *gt = oc_tensor(RILL_DOUBLE, (int64_t[]){3, C}, 2, grad);
    in[3] = rill_const(g, gt, "grad");
    rill_tensor_free(gt);
    rill_tensor *it = rill_tensor_from_data(RILL_INT64, (int64_t[]){3}, 1, ids);
    in[4] = rill_const(g, it, "ids");
    rill_tensor_free(it);
    in[5] = scalar(g, RILL_DOUBLE, lr);
    in[6] = scalar(g, RILL_DOUBLE, l1);
    in[7] = scalar(g, RILL_DOUBLE, l2);
    in[8] = scalar(g, RILL_INT64, (double)step);
    rill_output up = {build(g, "SparseApplyAdagradDA", in, 9), 0};
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *s = oc_session(g);
    oc_run_targets(s, &init, 1);
    rill_tensor *got = oc_run(s, up, NULL, NULL, 0);
    double T = (double)step;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < C; j++) {
            int k = (int)ids[i] * C + j;
            ga[k] += grad[i * C + j];
            gg[k] += grad[i * C + j] * grad[i * C + j];
            double den = l2 + sqrt(gg[k]) / (T * lr);
            if (l1 > 0) {
                double m = fabs(ga[k]) / T - l1;
                w[k] = -(ga[k] > 0 ? 1 : ga[k] < 0 ? -1 : 0) * (m > 0 ? m : 0) / den;
            } else {
                w[k] = -(ga[k] / T) / den;
            }
        }
    if (CHECK(got != NULL)) {
        for (int k = 0; k < NE; k++) {
            double x = rill_tensor_get_double(got, k);
            bool touched = k / C == 0 || k / C == 2;
            if (step == 0 && touched) {
                if (!CHECK(isnan(x))) fprintf(stderr, "  [%d] %g, want NaN (step 0)\n", k, x);
            } else if (!touched) {
                if (!CHECK(x == w0[k])) fprintf(stderr, "  untouched [%d] moved to %g\n", k, x);
            } else if (!CHECK(fabs(x - w[k]) <= 1e-14 * fmax(fabs(w[k]), 1e-3))) {
                fprintf(stderr, "  [%d] got %.17g want %.17g\n", k, x, w[k]);
            }
        }
    }
    rill_tensor_free(got);
    if (step != 0) {
        rill_tensor *a = oc_run(s, in[1], NULL, NULL, 0), *q = oc_run(s, in[2], NULL, NULL, 0);
        oc_check_tensor("sparse accumulator", a, RILL_DOUBLE, (int64_t[]){R, C}, 2, ga);
        oc_check_tensor("sparse squared accumulator", q, RILL_DOUBLE, (int64_t[]){R, C}, 2, gg);
        rill_tensor_free(a);
        rill_tensor_free(q);
    }
    rill_session_free(s);
    rill_graph_free(g);
}

static void errors(void)
{
    double z[NE] = {0};
    rill_graph *g = rill_graph_new();
    rill_output v = var_of(g, RILL_FLOAT, z, "v"), a = var_of(g, RILL_FLOAT, z, "a"),
                q = var_of(g, RILL_FLOAT, z, "q");
    rill_output lrs = scalar(g, RILL_FLOAT, 0.1), step = scalar(g, RILL_INT64, 1);
    rill_output bad = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "bad");
    rill_output in[] = {v, a, q, bad, lrs, lrs, lrs, step};
    CHECK(build(g, "ApplyAdagradDA", in, 8) == NULL);
    oc_check_build_error("grad shape", g, RILL_INVALID_ARGUMENT,
                         "Shapes must be equal rank, and dimensions must match");
    rill_graph_clear_status(g);
    rill_output grad = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(R, C), "grad");
    rill_output in2[] = {v, a, q, grad, lrs, lrs, lrs, lrs};
    CHECK(build(g, "ApplyAdagradDA", in2, 8) == NULL);
    oc_check_build_error("step dtype", g, RILL_INVALID_ARGUMENT,
                         "Input 'global_step' of 'ApplyAdagradDA' Op has type float that does not "
                         "match expected type of int64.");
    rill_graph_clear_status(g);
    rill_output in3[] = {
        v,   a,   q,   grad, rill_placeholder(g, RILL_INT64, rill_shape_matrix(1, 4), "ix2"),
        lrs, lrs, lrs, step};
    CHECK(build(g, "SparseApplyAdagradDA", in3, 9) == NULL);
    oc_check_build_error("indices rank", g, RILL_INVALID_ARGUMENT, "Shape must be rank 1");
    rill_graph_clear_status(g);
    /* an index out of range fails the run and changes nothing */
    rill_output ix = rill_placeholder(g, RILL_INT64, rill_shape_vector(R), "ix");
    rill_output in4[] = {v, a, q, grad, ix, lrs, lrs, lrs, step};
    rill_output up = {build(g, "SparseApplyAdagradDA", in4, 9), 0};
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *s = oc_session(g);
    oc_run_targets(s, &init, 1);
    int64_t idv[R] = {0, 1, 7, 2};
    rill_tensor *it = rill_tensor_from_data(RILL_INT64, (int64_t[]){R}, 1, idv);
    rill_tensor *gt = oc_tensor(RILL_FLOAT, (int64_t[]){R, C}, 2, z);
    rill_output feeds[] = {ix, grad};
    rill_tensor *vals[] = {it, gt}, *out = NULL;
    rill_status *st = rill_status_new();
    CHECK_EQ_INT(rill_session_run(s, feeds, vals, 2, &up, &out, 1, NULL, 0, st),
                 RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(st), "Index 7 at offset 2 in indices is out of range");
    rill_status_free(st);
    rill_tensor_free(it);
    rill_tensor_free(gt);
    rill_session_free(s);
    rill_graph_free(g);
}

int main(void)
{
    dense(RILL_DOUBLE, 0.0);
    dense(RILL_DOUBLE, 0.05);
    dense(RILL_FLOAT, 0.05);
    sparse(0.0, 3);
    sparse(0.05, 3);
    sparse(0.0, 0);
    errors();
    TEST_MAIN_END();
}
