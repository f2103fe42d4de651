/* test_sparse_apply.c - the optimizers' sparse updates (src/train/optimizers.c's apply_sparse;
 * kernels in src/kernels/cpu/cpu_sparse_apply.c): a loss through GatherV2 of a [5, 3] variable
 * gives an IndexedSlicesToDense gradient, so GradientDescent builds ScatterSub and Momentum,
 * Adagrad and Adam their sparse ops. Two steps with repeated indices (which must sum) and
 * different rows each step, against a double reference written here: GD, Momentum and Adagrad
 * update exactly the rows named (their slots too), leaving the others as they were; Adam, as
 * TF's _apply_sparse, decays m and v everywhere and updates every row of var, which equals the
 * dense Adam update with zero gradient rows.
 *
 * RMSProp (plain and centered), Adadelta, Ftrl (V1 and V2), ProximalAdagrad and
 * ProximalGradientDescent build their Sparse* twins; two steps over the same rows {1, 3}
 * (repeated indices) must give on those rows what the dense update gives (to ulps) for the summed
 * dense gradient, and leave rows 0, 2 and 4 as they were (the dense update moves them: slots
 * with zero gradients still decay or shrink). */
#include "../graph/op_check.h"

#include <rill/train.h>

#include <math.h>
#include <string.h>

enum { SGD, MOM, ADAGRAD, ADAM };
#define R 5
#define C 3
#define N 3

static const int64_t step_ids[2][N] = {{1, 3, 1}, {4, 1, 4}};
static const double lr = 0.1, mom = 0.9, b1 = 0.9, b2 = 0.999, eps = 1e-8, acc0 = 0.1;

/* weight of gathered element (i, j): loss = sum(w * gather(var, ids)) */
static double wgt(int i, int j)
{
    return 0.5 + i - 0.3 * j;
}

static void reference(int kind, double *var, int steps)
{
    double s1[R * C], s2[R * C];
    for (int i = 0; i < R * C; i++) s1[i] = kind == ADAGRAD ? acc0 : 0, s2[i] = 0;
    double p1 = 1, p2 = 1;
    for (int t = 0; t < steps; t++) {
        double g[R * C] = {0};
        bool touched[R] = {0};
        for (int i = 0; i < N; i++) {
            touched[step_ids[t][i]] = true;
            for (int j = 0; j < C; j++) g[step_ids[t][i] * C + j] += wgt(i, j);
        }
        /* the beta powers are float variables (TF's), as the kernel reads them */
        p1 = t == 0 ? (float)b1 : (float)((float)p1 * (float)b1);
        p2 = t == 0 ? (float)b2 : (float)((float)p2 * (float)b2);
        double lr_t = lr * sqrt(1 - p2) / (1 - p1);
        for (int r = 0; r < R; r++)
            for (int j = 0; j < C; j++) {
                int k = r * C + j;
                if (kind == ADAM) {
                    s1[k] = b1 * s1[k] + (1 - b1) * g[k];
                    s2[k] = b2 * s2[k] + (1 - b2) * g[k] * g[k];
                    var[k] -= lr_t * s1[k] / (sqrt(s2[k]) + eps);
                    continue;
                }
                if (!touched[r]) continue;
                if (kind == SGD) {
                    var[k] -= lr * g[k];
                } else if (kind == MOM) {
                    s1[k] = s1[k] * mom + g[k];
                    var[k] -= lr * s1[k];
                } else {
                    s1[k] += g[k] * g[k];
                    var[k] -= lr * g[k] / sqrt(s1[k]);
                }
            }
    }
}

static void run(int kind)
{
    static const char *const names[] = {"GradientDescent", "Momentum", "Adagrad", "Adam"};
    static const char *const ops[] = {
        "GradientDescent/update_v/ScatterSub", "Momentum/update_v/SparseApplyMomentum",
        "Adagrad/update_v/SparseApplyAdagrad", "Adam/update_v/SparseApplyAdam"};
    double init[R * C];
    for (int i = 0; i < R * C; i++) init[i] = 0.1 * i - 0.7;
    rill_graph *g = rill_graph_new();
    rill_tensor *it = oc_tensor(RILL_DOUBLE, (int64_t[]){R, C}, 2, init);
    rill_output v = rill_variable_from(g, rill_const(g, it, "init"), true, "v");
    rill_tensor_free(it);
    rill_output ids = rill_placeholder(g, RILL_INT64, rill_shape_vector(N), "ids");
    rill_op_builder *b = rill_op_builder_new(g, "GatherV2", NULL);
    rill_op_builder_add_input(b, v);
    rill_op_builder_add_input(b, ids);
    rill_output e = {rill_op_builder_finish(b), 0};
    double wv[N * C];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < C; j++) wv[i * C + j] = wgt(i, j);
    rill_tensor *wt = oc_tensor(RILL_DOUBLE, (int64_t[]){N, C}, 2, wv);
    rill_output loss =
        rill_sum(g, rill_mul(g, rill_const(g, wt, "w"), e, NULL), NULL, -1, false, "loss");
    rill_tensor_free(wt);
    rill_optimizer *o = kind == SGD       ? rill_gradient_descent_optimizer_new(lr)
                        : kind == MOM     ? rill_momentum_optimizer_new(lr, mom, false)
                        : kind == ADAGRAD ? rill_adagrad_optimizer_new(lr, acc0)
                                          : rill_adam_optimizer_new(lr, b1, b2, eps);
    rill_node *train = rill_optimizer_minimize(o, g, loss, (rill_output){NULL, 0}, NULL);
    rill_node *init_op = rill_global_variables_initializer(g, NULL);
    if (!CHECK(train && init_op)) {
        fprintf(stderr, "  %s: %s\n", names[kind], rill_status_message(rill_graph_status(g)));
        goto done;
    }
    if (!CHECK(rill_graph_find_node(g, ops[kind]) != NULL))
        fprintf(stderr, "  %s: no sparse update %s\n", names[kind], ops[kind]);
    rill_session *s = oc_session(g);
    oc_run_targets(s, &init_op, 1);
    for (int t = 0; t < 2; t++) {
        rill_tensor *idt = rill_tensor_from_data(RILL_INT64, (int64_t[]){N}, 1, step_ids[t]);
        rill_status *st = rill_status_new();
        CHECK_EQ_INT(rill_session_run(s, &ids, &idt, 1, NULL, NULL, 0, &train, 1, st), RILL_OK);
        rill_status_free(st);
        rill_tensor_free(idt);
    }
    rill_tensor *got = oc_run(s, v, NULL, NULL, 0);
    double ref[R * C];
    memcpy(ref, init, sizeof ref);
    reference(kind, ref, 2);
    oc_check_tensor(names[kind], got, RILL_DOUBLE, (int64_t[]){R, C}, 2, ref);
    if (kind != ADAM) /* rows 0 and 2 were never looked up: untouched */
        for (int j = 0; got && j < C; j++)
            CHECK(rill_tensor_get_double(got, j) == init[j] &&
                  rill_tensor_get_double(got, 2 * C + j) == init[2 * C + j]);
    rill_tensor_free(got);
    rill_session_free(s);
done:
    rill_optimizer_free(o);
    rill_graph_free(g);
}

enum { RMS, CRMS, ADADELTA, FTRL, FTRL2, PADAGRAD, PGD, NMORE };

static rill_optimizer *more_optimizer(int kind)
{
    switch (kind) {
    case RMS:
        return rill_rmsprop_optimizer_new(lr, 0.9, 0.5, 1e-10, false);
    case CRMS:
        return rill_rmsprop_optimizer_new(lr, 0.9, 0.5, 1e-10, true);
    case ADADELTA:
        return rill_adadelta_optimizer_new(1.0, 0.95, 1e-6);
    case FTRL:
        return rill_ftrl_optimizer_new(lr, -0.5, 0.1, 0.01, 0.02, 0, 0);
    case FTRL2:
        return rill_ftrl_optimizer_new(lr, -0.6, 0.1, 0.01, 0.02, 0.03, 0);
    case PADAGRAD:
        return rill_proximal_adagrad_optimizer_new(lr, 0.1, 0.01, 0.02);
    default:
        return rill_proximal_gradient_descent_optimizer_new(lr, 0.01, 0.02);
    }
}

static const int64_t more_ids[2][N] = {{1, 3, 1}, {3, 1, 3}};

/* v after two steps; sparse: through GatherV2 (the Sparse* op, which must be in the graph),
 * else the dense update of the same loss written as sum(W * v). */
static rill_tensor *more_run(int kind, bool sparse, const double *init)
{
    static const char *const ops[] = {"SparseApplyRMSProp",
                                      "SparseApplyCenteredRMSProp",
                                      "SparseApplyAdadelta",
                                      "SparseApplyFtrl",
                                      "SparseApplyFtrlV2",
                                      "SparseApplyProximalAdagrad",
                                      "SparseApplyProximalGradientDescent"};
    rill_graph *g = rill_graph_new();
    rill_tensor *it = oc_tensor(RILL_DOUBLE, (int64_t[]){R, C}, 2, init);
    rill_output v = rill_variable_from(g, rill_const(g, it, "init"), true, "v");
    rill_tensor_free(it);
    rill_output ids = rill_placeholder(g, RILL_INT64, rill_shape_vector(N), "ids");
    rill_output wfull = rill_placeholder(g, RILL_DOUBLE, rill_shape_matrix(R, C), "wfull");
    rill_output loss;
    if (sparse) {
        rill_op_builder *b = rill_op_builder_new(g, "GatherV2", NULL);
        rill_op_builder_add_input(b, v);
        rill_op_builder_add_input(b, ids);
        rill_output e = {rill_op_builder_finish(b), 0};
        double wv[N * C];
        for (int i = 0; i < N; i++)
            for (int j = 0; j < C; j++) wv[i * C + j] = wgt(i, j);
        rill_tensor *wt = oc_tensor(RILL_DOUBLE, (int64_t[]){N, C}, 2, wv);
        loss = rill_sum(g, rill_mul(g, rill_const(g, wt, "w"), e, NULL), NULL, -1, false, "loss");
        rill_tensor_free(wt);
    } else {
        loss = rill_sum(g, rill_mul(g, wfull, v, NULL), NULL, -1, false, "loss");
    }
    rill_optimizer *o = more_optimizer(kind);
    rill_node *train = rill_optimizer_minimize(o, g, loss, (rill_output){NULL, 0}, NULL);
    rill_node *init_op = rill_global_variables_initializer(g, NULL);
    rill_tensor *got = NULL;
    if (!CHECK(train && init_op)) {
        fprintf(stderr, "  %s: %s\n", ops[kind], rill_status_message(rill_graph_status(g)));
        goto done;
    }
    char full[96];
    snprintf(full, sizeof full, "%s/update_v/%s", rill_optimizer_name(o), ops[kind]);
    if (sparse && !CHECK(rill_graph_find_node(g, full) != NULL))
        fprintf(stderr, "  no sparse update %s\n", full);
    rill_session *s = oc_session(g);
    oc_run_targets(s, &init_op, 1);
    for (int t = 0; t < 2; t++) {
        double w[R * C] = {0};
        for (int i = 0; i < N; i++)
            for (int j = 0; j < C; j++) w[more_ids[t][i] * C + j] += wgt(i, j);
        rill_tensor *feed[2] = {rill_tensor_from_data(RILL_INT64, (int64_t[]){N}, 1, more_ids[t]),
                                oc_tensor(RILL_DOUBLE, (int64_t[]){R, C}, 2, w)};
        rill_output fo[2] = {ids, wfull};
        rill_status *st = rill_status_new();
        CHECK_EQ_INT(rill_session_run(s, fo, feed, 2, NULL, NULL, 0, &train, 1, st), RILL_OK);
        if (rill_status_code(st) != RILL_OK) fprintf(stderr, "  %s\n", rill_status_message(st));
        rill_status_free(st);
        rill_tensor_free(feed[0]);
        rill_tensor_free(feed[1]);
    }
    got = oc_run(s, v, NULL, NULL, 0);
    rill_session_free(s);
done:
    rill_optimizer_free(o);
    rill_graph_free(g);
    return got;
}

static void run_more(int kind)
{
    double init[R * C];
    for (int i = 0; i < R * C; i++) init[i] = 0.1 * i - 0.7;
    rill_tensor *sp = more_run(kind, true, init), *de = more_run(kind, false, init);
    if (CHECK(sp && de)) {
        bool moved = false;
        for (int r = 0; r < R; r++)
            for (int j = 0; j < C; j++) {
                int k = r * C + j;
                double a = rill_tensor_get_double(sp, k), b = rill_tensor_get_double(de, k);
                if (r == 1 || r == 3) {
                    /* the same element code on the same numbers; the dense loop, vectorised
                     * over 15 elements rather than 3, may round a few ulps apart */
                    if (!CHECK(fabs(a - b) <= 1e-14 * fmax(fabs(b), 1e-3)))
                        fprintf(stderr, "  kind %d [%d,%d]: sparse %.17g dense %.17g\n", kind, r, j,
                                a, b);
                    moved |= a != init[k];
                } else if (!CHECK(a == init[k])) {
                    fprintf(stderr, "  kind %d [%d,%d]: untouched row moved to %.17g\n", kind, r, j,
                            a);
                }
            }
        CHECK(moved);
    }
    rill_tensor_free(sp);
    rill_tensor_free(de);
}

int main(void)
{
    for (int k = SGD; k <= ADAM; k++) run(k);
    for (int k = RMS; k < NMORE; k++) run_more(k);
    TEST_MAIN_END();
}
