/* test_norm_ops.c - L2Loss, LogSoftmax, SigmoidCrossEntropyWithLogits (ops_loss.c), LRN and
 * FusedBatchNormV3 (ops_norm.c): values against double references written here from TF's
 * definitions, gradients against finite differences (FusedBatchNorm in training mode, where the
 * batch statistics depend on x, and in inference mode), and the build-time errors. */
#include "op_check.h"

#include <rill/train.h>
#include <string.h>

static rill_output op_by_name(rill_graph *g, const char *op, const rill_output *in, int n,
                              void (*attrs)(rill_op_builder *, void *), void *ctx, int out)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    if (attrs) attrs(b, ctx);
    return rill_node_output(rill_op_builder_finish(b), out);
}

/* --- losses --- */

static rill_output build_l2(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    return op_by_name(g, "L2Loss", xs, 1, NULL, NULL, 0);
}

static rill_output build_log_softmax(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    return op_by_name(g, "LogSoftmax", xs, 1, NULL, NULL, 0);
}

static rill_output build_sigmoid_ce(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    return op_by_name(g, "SigmoidCrossEntropyWithLogits", xs, 2, NULL, NULL, 0);
}

static void test_losses(void)
{
    const int64_t dims[] = {3, 4};
    double x[12], z[12];
    for (int i = 0; i < 12; i++) x[i] = oc_uniform(-4, 4), z[i] = oc_uniform(0, 1);
    rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    for (int ti = 0; ti < 3; ti++) {
        rill_dtype t = types[ti];
        double xr[12], zr[12], l2 = 0, ls[12], ce[12];
        for (int i = 0; i < 12; i++) xr[i] = oc_round_to(t, x[i]), zr[i] = oc_round_to(t, z[i]);
        for (int i = 0; i < 12; i++) l2 += xr[i] * xr[i] / 2;
        for (int r = 0; r < 3; r++) {
            double m = -INFINITY, s = 0;
            for (int k = 0; k < 4; k++) m = fmax(m, xr[r * 4 + k]);
            for (int k = 0; k < 4; k++) s += exp(xr[r * 4 + k] - m);
            for (int k = 0; k < 4; k++) ls[r * 4 + k] = xr[r * 4 + k] - m - log(s);
        }
        for (int i = 0; i < 12; i++)
            ce[i] = fmax(xr[i], 0) - xr[i] * zr[i] + log(1 + exp(-fabs(xr[i])));
        rill_graph *g = rill_graph_new();
        rill_tensor *xt = oc_tensor(t, dims, 2, x), *zt = oc_tensor(t, dims, 2, z);
        rill_output in[] = {rill_const(g, xt, "x"), rill_const(g, zt, "z")};
        rill_output o1 = build_l2(g, in, NULL), o2 = build_log_softmax(g, in, NULL),
                    o3 = build_sigmoid_ce(g, in, NULL);
        CHECK_EQ_INT(rill_output_shape(o1).rank, 0);
        CHECK_EQ_STR(o3.node ? rill_node_name(o3.node) : "", "logistic_loss");
        rill_tensor *v1 = oc_eval(g, o1), *v2 = oc_eval(g, o2), *v3 = oc_eval(g, o3);
        char lab[64];
        snprintf(lab, sizeof lab, "L2Loss %s", rill_dtype_name(t));
        oc_check_tensor(lab, v1, t, NULL, 0, &l2);
        snprintf(lab, sizeof lab, "LogSoftmax %s", rill_dtype_name(t));
        oc_check_tensor(lab, v2, t, dims, 2, ls);
        snprintf(lab, sizeof lab, "SigmoidCE %s", rill_dtype_name(t));
        oc_check_tensor(lab, v3, t, dims, 2, ce);
        rill_tensor_free(v1);
        rill_tensor_free(v2);
        rill_tensor_free(v3);
        rill_tensor_free(xt);
        rill_tensor_free(zt);
        rill_graph_free(g);
    }
    rill_tensor *xs[] = {oc_random(dims, 2, -3, 3), oc_random(dims, 2, 0, 1)};
    oc_grad_check("L2Loss", 1, xs, build_l2, NULL, (oc_grad_opts){0});
    oc_grad_check("LogSoftmax", 1, xs, build_log_softmax, NULL, (oc_grad_opts){0});
    oc_grad_check("SigmoidCE", 2, xs, build_sigmoid_ce, NULL, (oc_grad_opts){0});
    oc_grad_check("SigmoidCE unknown shapes", 2, xs, build_sigmoid_ce, NULL,
                  (oc_grad_opts){.unknown_shapes = true});
    rill_tensor_free(xs[0]);
    rill_tensor_free(xs[1]);

    /* errors */
    rill_graph *g = rill_graph_new();
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "a");
    rill_output b = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(3, 2), "b");
    rill_output in[] = {a, b};
    CHECK(build_sigmoid_ce(g, in, NULL).node == NULL);
    oc_check_build_error("sigmoid ce shapes", g, RILL_INVALID_ARGUMENT,
                         "logits and labels must have the same shape ([2,3] vs [3,2])");
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output i32 = rill_placeholder(g, RILL_INT32, rill_shape_vector(3), "i");
    CHECK(build_l2(g, &i32, NULL).node == NULL);
    oc_check_build_error("l2 int", g, RILL_INVALID_ARGUMENT, "int32");
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output sc = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "s");
    CHECK(build_log_softmax(g, &sc, NULL).node == NULL);
    oc_check_build_error("log softmax scalar", g, RILL_INVALID_ARGUMENT, "rank");
    rill_graph_free(g);
}

/* --- LRN --- */

typedef struct lrn_params {
    int64_t r;
    double bias, alpha, beta;
} lrn_params;

static void lrn_attrs(rill_op_builder *b, void *ctx)
{
    const lrn_params *p = ctx;
    rill_op_builder_set_int(b, "depth_radius", p->r);
    rill_op_builder_set_float(b, "bias", p->bias);
    rill_op_builder_set_float(b, "alpha", p->alpha);
    rill_op_builder_set_float(b, "beta", p->beta);
}

static rill_output build_lrn(rill_graph *g, const rill_output *xs, void *ctx)
{
    return op_by_name(g, "LRN", xs, 1, lrn_attrs, ctx, 0);
}

static void test_lrn(void)
{
    const int64_t dims[] = {2, 2, 3, 7};
    lrn_params ps[] = {{2, 1.0, 0.5, 0.75}, {1, 2.0, 0.1, 0.5}, {5, 1, 1, 0.5}};
    for (int pi = 0; pi < 3; pi++) {
        rill_tensor *x = oc_random(dims, 4, -2, 2);
        const double *xv = rill_tensor_data(x);
        double ref[84];
        lrn_params p = ps[pi];
        for (int px = 0; px < 12; px++)
            for (int k = 0; k < 7; k++) {
                double s = 0;
                for (int q = k - (int)p.r; q <= k + (int)p.r; q++)
                    if (q >= 0 && q < 7) s += xv[px * 7 + q] * xv[px * 7 + q];
                ref[px * 7 + k] = xv[px * 7 + k] / pow(p.bias + p.alpha * s, p.beta);
            }
        rill_graph *g = rill_graph_new();
        rill_output c = rill_const(g, x, "x");
        rill_tensor *v = oc_eval(g, build_lrn(g, &c, &p));
        oc_check_tensor("LRN", v, RILL_DOUBLE, dims, 4, ref);
        rill_tensor_free(v);
        rill_graph_free(g);
        oc_grad_check("LRN", 1, &x, build_lrn, &p, (oc_grad_opts){.rtol = 1e-5, .atol = 1e-7});
        rill_tensor_free(x);
    }
    /* float */
    rill_graph *g = rill_graph_new();
    rill_tensor *x = oc_tensor(RILL_FLOAT, (int64_t[]){1, 1, 1, 3}, 4, (double[]){1, 2, 3});
    rill_output c = rill_const(g, x, "x");
    lrn_params p = {1, 1, 1, 0.5};
    rill_tensor *v = oc_eval(g, build_lrn(g, &c, &p));
    oc_check_tensor("LRN float", v, RILL_FLOAT, (int64_t[]){1, 1, 1, 3}, 4,
                    (double[]){1 / sqrt(6.0), 2 / sqrt(15.0), 3 / sqrt(14.0)});
    rill_tensor_free(v);
    rill_tensor_free(x);
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output m = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "m");
    CHECK(build_lrn(g, &m, &p).node == NULL);
    oc_check_build_error("LRN rank", g, RILL_INVALID_ARGUMENT, "rank");
    rill_graph_free(g);
}

/* --- FusedBatchNormV3 --- */

typedef struct bn_params {
    bool training;
    double eps, factor;
    int out;
} bn_params;

static void bn_attrs(rill_op_builder *b, void *ctx)
{
    const bn_params *p = ctx;
    rill_op_builder_set_bool(b, "is_training", p->training);
    rill_op_builder_set_float(b, "epsilon", p->eps);
    rill_op_builder_set_float(b, "exponential_avg_factor", p->factor);
    rill_op_builder_set_string(b, "data_format", "NHWC");
}

/* xs: x, scale, offset (mean and variance: constants of the context). */
static rill_tensor *bn_mean, *bn_var;
static rill_output build_bn(rill_graph *g, const rill_output *xs, void *ctx)
{
    const bn_params *p = ctx;
    rill_output in[] = {xs[0], xs[1], xs[2], rill_const(g, bn_mean, "mean"),
                        rill_const(g, bn_var, "variance")};
    return op_by_name(g, "FusedBatchNormV3", in, 5, bn_attrs, ctx, p->out);
}

static void test_fused_batch_norm(void)
{
    const int64_t dims[] = {2, 3, 2, 3}, cdim[] = {3};
    const int rows = 12, c = 3;
    rill_tensor *x = oc_random(dims, 4, -2, 2), *scale = oc_random(cdim, 1, 0.5, 1.5),
                *offset = oc_random(cdim, 1, -1, 1);
    bn_mean = oc_random(cdim, 1, -0.5, 0.5);
    bn_var = oc_random(cdim, 1, 0.5, 2);
    const double *xv = rill_tensor_data(x), *sv = rill_tensor_data(scale),
                 *ov = rill_tensor_data(offset), *mv = rill_tensor_data(bn_mean),
                 *vv = rill_tensor_data(bn_var);
    for (int mode = 0; mode < 3; mode++) {
        bn_params p = {.training = mode != 2, .eps = 1e-3, .factor = mode == 1 ? 0.3 : 1.0};
        double y[36], bm[3], bv[3], r1[3], r2[3];
        for (int k = 0; k < c; k++) {
            double m = 0, v = 0;
            for (int r = 0; r < rows; r++) m += xv[r * c + k] / rows;
            for (int r = 0; r < rows; r++) v += (xv[r * c + k] - m) * (xv[r * c + k] - m) / rows;
            if (!p.training) m = mv[k], v = vv[k];
            r1[k] = m, r2[k] = v;
            double corr = p.training ? v * rows / (rows - 1) : v;
            bm[k] = p.factor == 1 ? m : (1 - p.factor) * mv[k] + p.factor * m;
            bv[k] = p.factor == 1 ? corr : (1 - p.factor) * vv[k] + p.factor * corr;
            for (int r = 0; r < rows; r++)
                y[r * c + k] = (xv[r * c + k] - m) / sqrt(v + p.eps) * sv[k] + ov[k];
        }
        rill_graph *g = rill_graph_new();
        rill_output in[] = {rill_const(g, x, "x"), rill_const(g, scale, "scale"),
                            rill_const(g, offset, "offset")};
        rill_output yo = build_bn(g, in, &p);
        const double *refs[] = {y, bm, bv, r1, r2};
        for (int o = 0; o < 5; o++) {
            rill_tensor *v = oc_eval(g, rill_node_output(yo.node, o));
            char lab[64];
            snprintf(lab, sizeof lab, "FusedBatchNormV3 mode %d output %d", mode, o);
            oc_check_tensor(lab, v, RILL_DOUBLE, o == 0 ? dims : cdim, o == 0 ? 4 : 1, refs[o]);
            rill_tensor_free(v);
        }
        rill_tensor *r3 = oc_eval(g, rill_node_output(yo.node, 5));
        CHECK(r3 && rill_tensor_num_elements(r3) == 0);
        rill_tensor_free(r3);
        rill_graph_free(g);
        /* gradients in x, scale and offset (of y) */
        rill_tensor *xs[] = {x, scale, offset};
        char lab[64];
        snprintf(lab, sizeof lab, "FusedBatchNormV3 grad mode %d", mode);
        oc_grad_check(lab, 3, xs, build_bn, &p, (oc_grad_opts){.rtol = 1e-5, .atol = 1e-7});
    }
    /* training with empty mean and variance (what tf.nn.fused_batch_norm passes) */
    rill_tensor *empty = oc_tensor(RILL_DOUBLE, (int64_t[]){0}, 1, NULL);
    rill_tensor *sm = bn_mean, *svr = bn_var;
    bn_mean = bn_var = empty;
    bn_params p = {.training = true, .eps = 1e-3, .factor = 1};
    rill_tensor *xs[] = {x, scale, offset};
    oc_grad_check("FusedBatchNormV3 empty stats", 3, xs, build_bn, &p,
                  (oc_grad_opts){.rtol = 1e-5});
    /* ... but not in inference */
    p.training = false;
    rill_graph *g = rill_graph_new();
    rill_output in[] = {rill_const(g, x, "x"), rill_const(g, scale, "scale"),
                        rill_const(g, offset, "offset")};
    CHECK(build_bn(g, in, &p).node == NULL);
    oc_check_build_error("bn empty inference", g, RILL_INVALID_ARGUMENT,
                         "mean must have the same number of elements as the channels of x");
    rill_graph_free(g);
    bn_mean = sm, bn_var = svr;
    rill_tensor_free(empty);
    /* float x with double scale: TF's U must be float */
    g = rill_graph_new();
    rill_output xf = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, dims), "xf");
    rill_output in2[] = {xf, rill_const(g, scale, "scale"), rill_const(g, offset, "offset")};
    p.training = true;
    CHECK(build_bn(g, in2, &p).node == NULL);
    oc_check_build_error("bn dtype", g, RILL_INVALID_ARGUMENT,
                         "Input 'scale' of 'FusedBatchNormV3'");
    rill_graph_free(g);
    rill_tensor_free(x);
    rill_tensor_free(scale);
    rill_tensor_free(offset);
    rill_tensor_free(bn_mean);
    rill_tensor_free(bn_var);
}

int main(void)
{
    test_losses();
    test_lrn();
    test_fused_batch_norm();
    TEST_MAIN_END();
}
