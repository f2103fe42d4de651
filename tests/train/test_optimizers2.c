/* test_optimizers2.c - the optimizers of src/graph/ops_apply.c through rill_optimizer: RMSProp
 * (plain and centered, with momentum), Adadelta, Ftrl (V1, V2 with l2 shrinkage, a
 * learning_rate_power other than -0.5, beta), ProximalAdagrad and ProximalGradientDescent (with
 * and without l1). Each trains w (3 elements) on loss = sum((w - c)^2) for 3 steps, float and
 * double, against TF's update rules stepped by hand in double; it checks the slot names and
 * initial values, and the constructors' refusals. */
#include "../graph/op_check.h"

#include <rill/train.h>

typedef enum {
    RMS,
    RMS_CENTERED,
    ADADELTA,
    FTRL,
    FTRL_V2,
    FTRL_POW,
    PROX_ADAGRAD,
    PROX_ADAGRAD_L1,
    PROX_GD,
    PROX_GD_L1,
    NKINDS
} kind;

static const char *const kind_names[] = {"RMSProp",         "RMSProp centered",
                                         "Adadelta",        "Ftrl",
                                         "FtrlV2",          "Ftrl lr_power -0.7 beta 0.5",
                                         "ProximalAdagrad", "ProximalAdagrad l1",
                                         "ProximalGD",      "ProximalGD l1"};

static rill_optimizer *make(kind k)
{
    switch (k) {
    case RMS:
        return rill_rmsprop_optimizer_new(0.05, 0.9, 0.5, 1e-10, false);
    case RMS_CENTERED:
        return rill_rmsprop_optimizer_new(0.05, 0.8, 0.3, 1e-6, true);
    case ADADELTA:
        return rill_adadelta_optimizer_new(1.0, 0.95, 1e-6);
    case FTRL:
        return rill_ftrl_optimizer_new(0.3, -0.5, 0.1, 0.01, 0.02, 0, 0);
    case FTRL_V2:
        return rill_ftrl_optimizer_new(0.3, -0.5, 0.1, 0.01, 0.02, 0.1, 0);
    case FTRL_POW:
        return rill_ftrl_optimizer_new(0.3, -0.7, 0.2, 0.05, 0.0, 0, 0.5);
    case PROX_ADAGRAD:
        return rill_proximal_adagrad_optimizer_new(0.3, 0.1, 0, 0.1);
    case PROX_ADAGRAD_L1:
        return rill_proximal_adagrad_optimizer_new(0.3, 0.1, 0.5, 0.1);
    case PROX_GD:
        return rill_proximal_gradient_descent_optimizer_new(0.1, 0, 0.2);
    default:
        return rill_proximal_gradient_descent_optimizer_new(0.1, 1.5, 0.2);
    }
}

static double sgn(double x)
{
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}

/* One step of TF's rule for optimizer k on element w with gradient g; s[] its slots. */
static void step(kind k, double *w, double *s, double g)
{
    switch (k) {
    case RMS: /* s: ms, mom */
        s[0] += (g * g - s[0]) * (1 - 0.9);
        s[1] = s[1] * 0.5 + g * 0.05 / sqrt(s[0] + 1e-10);
        *w -= s[1];
        break;
    case RMS_CENTERED: /* s: ms, mg, mom */
        s[0] += (g * g - s[0]) * (1 - 0.8);
        s[1] += (g - s[1]) * (1 - 0.8);
        s[2] = s[2] * 0.3 + g * 0.05 / sqrt(s[0] - s[1] * s[1] + 1e-6);
        *w -= s[2];
        break;
    case ADADELTA: { /* s: accum, accum_update */
        s[0] = s[0] * 0.95 + g * g * 0.05;
        double u = sqrt(s[1] + 1e-6) / sqrt(s[0] + 1e-6) * g;
        *w -= u * 1.0;
        s[1] = s[1] * 0.95 + u * u * 0.05;
        break;
    }
    case FTRL:
    case FTRL_V2:
    case FTRL_POW: { /* s: accum, linear */
        double lr = 0.3, l1 = k == FTRL_POW ? 0.05 : 0.01;
        double l2 = k == FTRL_POW ? 0.5 / (2 * 0.3) : 0.02, p = k == FTRL_POW ? -0.7 : -0.5;
        double gs = k == FTRL_V2 ? g + 2 * 0.1 * *w : g;
        double na = s[0] + g * g;
        s[1] += gs - (pow(na, -p) - pow(s[0], -p)) / lr * *w;
        double x = l1 * sgn(s[1]) - s[1], y = pow(na, -p) / lr + 2 * l2;
        *w = fabs(s[1]) > l1 ? x / y : 0;
        s[0] = na;
        break;
    }
    case PROX_ADAGRAD:
    case PROX_ADAGRAD_L1: { /* s: accum */
        double l1 = k == PROX_ADAGRAD_L1 ? 0.5 : 0, l2 = 0.1;
        s[0] += g * g;
        double rate = 0.3 / sqrt(s[0]), prox = *w - g * rate;
        *w = l1 > 0 ? sgn(prox) * fmax(fabs(prox) - rate * l1, 0) / (1 + l2 * rate)
                    : prox / (1 + l2 * rate);
        break;
    }
    default: {
        double a = 0.1, l1 = k == PROX_GD_L1 ? 1.5 : 0, l2 = 0.2, prox = *w - g * a;
        *w = l1 > 0 ? sgn(prox) * fmax(fabs(prox) - a * l1, 0) / (1 + a * l2) : prox / (1 + a * l2);
        break;
    }
    }
}

/* The slots' names and initial values, in TF's creation order. */
static int slots_of(kind k, const char **names, double *init)
{
    switch (k) {
    case RMS:
        names[0] = "w/RMSProp", init[0] = 1, names[1] = "w/RMSProp_1", init[1] = 0;
        return 2;
    case RMS_CENTERED: /* rms, mg, momentum; step()'s order is ms, mg, mom */
        names[0] = "w/RMSProp", init[0] = 1, names[1] = "w/RMSProp_1", init[1] = 0;
        names[2] = "w/RMSProp_2", init[2] = 0;
        return 3;
    case ADADELTA:
        names[0] = "w/Adadelta", init[0] = 0, names[1] = "w/Adadelta_1", init[1] = 0;
        return 2;
    case FTRL:
    case FTRL_V2:
    case FTRL_POW:
        names[0] = "w/Ftrl", init[0] = k == FTRL_POW ? 0.2 : 0.1, names[1] = "w/Ftrl_1",
        init[1] = 0;
        return 2;
    case PROX_ADAGRAD:
    case PROX_ADAGRAD_L1:
        names[0] = "w/ProximalAdagrad", init[0] = 0.1;
        return 1;
    default:
        return 0;
    }
}

static void test_steps(kind k, rill_dtype t)
{
    const double w0[] = {0.5, -1, 2}, c[] = {1, 2, -3};
    char label[96];
    snprintf(label, sizeof label, "%s %s", kind_names[k], rill_dtype_name(t));
    rill_graph *g = rill_graph_new();
    rill_tensor *wt = oc_tensor(t, (int64_t[]){3}, 1, w0), *ct = oc_tensor(t, (int64_t[]){3}, 1, c);
    rill_output w = rill_variable_from(g, rill_const(g, wt, NULL), true, "w");
    rill_output d = rill_sub(g, w, rill_const(g, ct, "c"), NULL);
    rill_output loss = rill_sum(g, rill_square(g, d, NULL), NULL, -1, false, "loss");
    rill_optimizer *opt = make(k);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, (rill_output){NULL, 0}, NULL);
    if (!CHECK(train != NULL)) {
        fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
        goto out;
    }
    const char *names[3];
    double init[3], S[3][3];
    int ns = slots_of(k, names, init);
    for (int i = 0; i < ns; i++) {
        if (!CHECK(rill_graph_find_node(g, names[i]) != NULL))
            fprintf(stderr, "  case: %s: no slot %s\n", label, names[i]);
        for (int e = 0; e < 3; e++) S[e][i] = init[i];
    }
    /* step() keeps RMSProp centered's slots as (ms, mg, mom): ms starts at 1. */
    rill_output trv[4];
    CHECK_EQ_INT(rill_graph_trainable_variables(g, trv, 4), 1);
    rill_session *sess = oc_session(g);
    if (!sess ||
        !oc_run_targets(sess, (rill_node *[]){rill_global_variables_initializer(g, NULL)}, 1)) {
        rill_session_free(sess);
        goto out;
    }
    for (int i = 0; i < ns; i++) {
        rill_tensor *sv =
            oc_run(sess, (rill_output){rill_graph_find_node(g, names[i]), 0}, NULL, NULL, 0);
        oc_check_tensor(names[i], sv, t, (int64_t[]){3}, 1, (double[]){init[i], init[i], init[i]});
        rill_tensor_free(sv);
    }
    double W[3];
    for (int e = 0; e < 3; e++) W[e] = oc_round_to(t, w0[e]);
    for (int st = 1; st <= 3; st++) {
        for (int e = 0; e < 3; e++) step(k, &W[e], S[e], 2 * (W[e] - c[e]));
        if (!oc_run_targets(sess, &train, 1)) break;
        rill_tensor *wv = oc_run(sess, w, NULL, NULL, 0);
        char l2[128];
        snprintf(l2, sizeof l2, "%s step %d", label, st);
        if (t == RILL_FLOAT) {
            /* float: TF's rules in float differ from the double reference by rounding only */
            for (int e = 0; e < 3; e++) {
                double got = wv ? rill_tensor_get_double(wv, e) : NAN;
                if (!CHECK(fabs(got - W[e]) <= 1e-5 + 1e-5 * fabs(W[e])))
                    fprintf(stderr, "  case: %s: element %d: got %.9g want %.9g\n", l2, e, got,
                            W[e]);
            }
        } else {
            oc_check_tensor(l2, wv, t, (int64_t[]){3}, 1, W);
        }
        rill_tensor_free(wv);
    }
    rill_session_free(sess);
out:
    rill_optimizer_free(opt);
    rill_tensor_free(wt);
    rill_tensor_free(ct);
    rill_graph_free(g);
}

/* A learning rate from a tensor (a placeholder fed each step) gives the constant's result. */
static void test_lr_tensor(void)
{
    rill_graph *g = rill_graph_new();
    rill_output w = rill_variable(g, RILL_DOUBLE, rill_shape_vector(2),
                                  rill_constant_initializer(1.5), true, "w");
    rill_output loss = rill_sum(g, rill_square(g, w, NULL), NULL, -1, false, "loss");
    rill_output lr = rill_placeholder(g, RILL_DOUBLE, rill_shape_scalar(), "lr");
    rill_optimizer *opt = rill_ftrl_optimizer_new(0, -0.5, 0.1, 0, 0, 0, 0.5);
    rill_optimizer_set_learning_rate_tensor(opt, lr);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, (rill_output){NULL, 0}, NULL);
    CHECK(train != NULL);
    rill_session *sess = oc_session(g);
    if (sess &&
        oc_run_targets(sess, (rill_node *[]){rill_global_variables_initializer(g, NULL)}, 1)) {
        rill_tensor *lv = oc_tensor(RILL_DOUBLE, NULL, 0, (double[]){0.3});
        rill_status *s = rill_status_new();
        CHECK_EQ_INT(rill_session_run(sess, &lr, &lv, 1, NULL, NULL, 0, &train, 1, s), RILL_OK);
        rill_status_free(s);
        double W = 1.5, S[2] = {0.1, 0};
        double na = S[0] + 9, l2 = 0.5 / (2 * 0.3);
        S[1] += 3 - (sqrt(na) - sqrt(S[0])) / 0.3 * W;
        W = fabs(S[1]) > 0 ? (0 - S[1]) / (sqrt(na) / 0.3 + 2 * l2) : 0;
        rill_tensor *wv = oc_run(sess, w, NULL, NULL, 0);
        oc_check_tensor("ftrl lr tensor", wv, RILL_DOUBLE, (int64_t[]){2}, 1, (double[]){W, W});
        rill_tensor_free(wv);
        rill_tensor_free(lv);
    }
    rill_session_free(sess);
    rill_optimizer_free(opt);
    rill_graph_free(g);
}

/* Builds op with inputs in[0..n) on a fresh graph; returns the graph's error text ("" if none). */
static void expect_error(const char *op, int nvar, int n, const rill_shape *shapes,
                         const rill_dtype *types, const char *want)
{
    rill_graph *g = rill_graph_new();
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "in%d", i);
        rill_output in =
            i < nvar ? rill_variable(g, types[i], shapes[i], rill_zeros_initializer(), false, nm)
                     : rill_placeholder(g, types[i], shapes[i], nm);
        rill_op_builder_add_input(b, in);
    }
    rill_node *node = rill_op_builder_finish(b);
    CHECK(node == NULL);
    const char *msg = rill_status_message(rill_graph_status(g));
    if (!CHECK(strstr(msg, want) != NULL)) fprintf(stderr, "  %s: got '%s'\n", op, msg);
    rill_graph_free(g);
}

static void test_bad_inputs(void)
{
    rill_shape v3 = rill_shape_vector(3), v2 = rill_shape_vector(2), sc = rill_shape_scalar();
    rill_dtype f = RILL_FLOAT, d = RILL_DOUBLE;
    /* ApplyProximalGradientDescent(var, alpha, l1, l2, delta) */
    expect_error("ApplyProximalGradientDescent", 1, 5, (rill_shape[]){v3, sc, sc, sc, v2},
                 (rill_dtype[]){f, f, f, f, f}, "Shapes must be equal rank");
    expect_error("ApplyProximalGradientDescent", 1, 5, (rill_shape[]){v3, sc, v2, sc, v3},
                 (rill_dtype[]){f, f, f, f, f}, "Shape must be rank 0 but is rank 1");
    expect_error("ApplyProximalGradientDescent", 1, 5, (rill_shape[]){v3, sc, sc, sc, v3},
                 (rill_dtype[]){f, d, f, f, f},
                 "Input 'alpha' of 'ApplyProximalGradientDescent' Op has type double that does "
                 "not match type float of argument 'var'.");
    /* ApplyRMSProp(var, ms, mom, lr, rho, momentum, epsilon, grad): ms of another shape */
    expect_error("ApplyRMSProp", 3, 8, (rill_shape[]){v3, v2, v3, sc, sc, sc, sc, v3},
                 (rill_dtype[]){f, f, f, f, f, f, f, f}, "input 'ms'");
    /* a non-variable slot */
    expect_error("ApplyAdadelta", 2, 7, (rill_shape[]){v3, v3, v3, sc, sc, sc, v3},
                 (rill_dtype[]){f, f, f, f, f, f, f}, "");
    /* an int variable */
    expect_error("ApplyProximalGradientDescent", 1, 5, (rill_shape[]){v3, sc, sc, sc, v3},
                 (rill_dtype[]){RILL_INT32, RILL_INT32, RILL_INT32, RILL_INT32, RILL_INT32},
                 "Value passed to parameter 'var' has DataType int32 not in list of allowed "
                 "values");
}

int main(void)
{
    for (int k = 0; k < NKINDS; k++) {
        test_steps((kind)k, RILL_DOUBLE);
        test_steps((kind)k, RILL_FLOAT);
    }
    test_lr_tensor();
    test_bad_inputs();
    CHECK(rill_ftrl_optimizer_new(0.1, 0.5, 0.1, 0, 0, 0, 0) == NULL);
    CHECK(rill_ftrl_optimizer_new(0.1, -0.5, -0.1, 0, 0, 0, 0) == NULL);
    CHECK(rill_ftrl_optimizer_new(0.1, -0.5, 0.1, -1, 0, 0, 0) == NULL);
    CHECK(rill_proximal_adagrad_optimizer_new(0.1, 0, 0, 0) == NULL);
    rill_optimizer *o = rill_rmsprop_optimizer_new(0.1, 0.9, 0, 1e-10, false);
    CHECK_EQ_STR(rill_optimizer_name(o), "RMSProp");
    rill_optimizer_free(o);
    TEST_MAIN_END();
}
