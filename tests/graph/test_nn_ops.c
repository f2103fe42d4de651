/* test_nn_ops.c - the neural-network ops (BiasAdd, Relu, Sigmoid, Tanh, Softmax and the two
 * softmax cross-entropies, with their gradient ops) built into real graphs and run through a
 * session.
 *
 * Each case is an op applied to placeholders. Its forward result is compared, for float, double
 * and half, against a double-precision reference computed here on the same (rounded) inputs.
 * Its gradient from rill_gradients, seeded with random weights w (so that sum(w * y) has a
 * non-trivial gradient even for softmax), is compared in double against central finite
 * differences of sum(w * y). The gradient ops themselves are cases too: their builders take a
 * gradient, so second derivatives get the same check. Then: inferred shapes and default names;
 * tensors large enough to be sharded over the intra-op pool; the float path's own exp and tanh
 * swept against libm; infinities and NaN; empty batches; and every build-time error (shape and
 * dtype inference) and run-time error (shape checks with unknown build-time shapes, labels out
 * of range) provoked and its message checked. */
#include "../test.h"

#include <rill/ops.h>
#include <rill/session.h>
#include <rill/train.h>

#include "graph/graph_internal.h"

#include <stdint.h>
#include <stdlib.h>

/* --- small helpers --- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* v as dtype t would store it. */
static double round_to(rill_dtype t, double v)
{
    switch (t) {
    case RILL_FLOAT:
        return (float)v;
    case RILL_HALF:
        return rill_half_to_float(rill_half_from_float((float)v));
    case RILL_INT32:
    case RILL_INT64:
        return (double)(int64_t)v;
    default:
        return v;
    }
}

/* A tensor of dtype t and shape s holding v (converted). Caller frees. */
static rill_tensor *make(rill_dtype t, rill_shape s, const double *v)
{
    rill_tensor *x = rill_tensor_new_shape(t, &s);
    void *d = rill_tensor_data(x);
    int64_t n = rill_tensor_num_elements(x);
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case RILL_FLOAT:
            ((float *)d)[i] = (float)v[i];
            break;
        case RILL_DOUBLE:
            ((double *)d)[i] = v[i];
            break;
        case RILL_HALF:
            ((rill_half *)d)[i] = rill_half_from_float((float)v[i]);
            break;
        case RILL_INT32:
            ((int32_t *)d)[i] = (int32_t)v[i];
            break;
        case RILL_INT64:
            ((int64_t *)d)[i] = (int64_t)v[i];
            break;
        default:
            break;
        }
    }
    return x;
}

static int64_t numel(rill_shape s)
{
    return rill_shape_num_elements(&s);
}

/* Runs fetches with feeds; returns the code and copies the message into msg. */
static rill_code run(rill_session *sess, const rill_output *feeds, rill_tensor *const *vals,
                     int nfeeds, const rill_output *fetches, rill_tensor **out, int nfetches,
                     char *msg, size_t msglen)
{
    rill_status *s = rill_status_new();
    rill_code c = rill_session_run(sess, feeds, vals, nfeeds, fetches, out, nfetches, NULL, 0, s);
    if (msg) snprintf(msg, msglen, "%s", rill_status_message(s));
    if (c != RILL_OK && !msg) fprintf(stderr, "run failed: %s\n", rill_status_message(s));
    rill_status_free(s);
    return c;
}

/* --- the cases --- */

#define MAX_IN 2

typedef struct op_case op_case;
struct op_case {
    const char *name;
    int nin;
    rill_shape in_shape[MAX_IN];
    rill_dtype in_int[MAX_IN]; /* RILL_INT32/INT64 for label inputs; 0 for float inputs */
    double lo, hi;             /* value range of float inputs */
    bool away_from_zero;       /* keep |x| >= 0.1 (relu's kink) */
    rill_output (*build)(rill_graph *g, const rill_output *in);
    /* Reference output from double inputs; out has numel(out_shape) entries. */
    void (*ref)(const op_case *c, double *const *in, double *out);
    rill_shape out_shape;
    bool grad_in[MAX_IN];    /* check the gradient of each input */
    bool no_grad_in[MAX_IN]; /* input must get no gradient ({NULL, 0}) */
    double half_tol;
    /* filled by make_inputs */
    double *vals[MAX_IN];
};

static rill_output b_bias_add(rill_graph *g, const rill_output *in)
{
    return rill_bias_add(g, in[0], in[1], NULL);
}
static rill_output b_relu(rill_graph *g, const rill_output *in)
{
    return rill_relu(g, in[0], NULL);
}
static rill_output b_sigmoid(rill_graph *g, const rill_output *in)
{
    return rill_sigmoid(g, in[0], NULL);
}
static rill_output b_tanh(rill_graph *g, const rill_output *in)
{
    return rill_tanh(g, in[0], NULL);
}
static rill_output b_softmax(rill_graph *g, const rill_output *in)
{
    return rill_softmax(g, in[0], NULL);
}
static rill_output b_softmax_ce(rill_graph *g, const rill_output *in)
{
    return rill_softmax_cross_entropy_with_logits(g, in[0], in[1], NULL);
}
static rill_output b_sparse_ce(rill_graph *g, const rill_output *in)
{
    return rill_sparse_softmax_cross_entropy_with_logits(g, in[0], in[1], NULL);
}
/* The backprop output (1) of the cross-entropies. */
static rill_output b_softmax_ce_bp(rill_graph *g, const rill_output *in)
{
    rill_output l = rill_softmax_cross_entropy_with_logits(g, in[0], in[1], NULL);
    return rill_node_output(l.node, 1);
}
static rill_output b_sparse_ce_bp(rill_graph *g, const rill_output *in)
{
    rill_output l = rill_sparse_softmax_cross_entropy_with_logits(g, in[0], in[1], NULL);
    return rill_node_output(l.node, 1);
}

/* d/dx of sum(w * f(x)): the gradient op of f with in = {x, w}. */
static rill_output grad_of(rill_graph *g, rill_output y, const rill_output *in)
{
    rill_output dx = {NULL, 0};
    rill_gradients(g, &y, 1, &in[0], 1, &in[1], &dx);
    return dx;
}
static rill_output b_relu_grad(rill_graph *g, const rill_output *in)
{
    return grad_of(g, rill_relu(g, in[0], NULL), in);
}
static rill_output b_sigmoid_grad(rill_graph *g, const rill_output *in)
{
    return grad_of(g, rill_sigmoid(g, in[0], NULL), in);
}
static rill_output b_tanh_grad(rill_graph *g, const rill_output *in)
{
    return grad_of(g, rill_tanh(g, in[0], NULL), in);
}

static int64_t last_dim(rill_shape s)
{
    return s.dims[s.rank - 1];
}

static void r_bias_add(const op_case *c, double *const *in, double *out)
{
    int64_t n = numel(c->in_shape[0]), k = last_dim(c->in_shape[0]);
    for (int64_t i = 0; i < n; i++) out[i] = in[0][i] + in[1][i % k];
}
static double relu(double x)
{
    return x > 0 ? x : 0;
}
static double sigm(double x)
{
    return 1 / (1 + exp(-x));
}
static void r_relu(const op_case *c, double *const *in, double *out)
{
    for (int64_t i = 0; i < numel(c->in_shape[0]); i++) out[i] = relu(in[0][i]);
}
static void r_sigmoid(const op_case *c, double *const *in, double *out)
{
    for (int64_t i = 0; i < numel(c->in_shape[0]); i++) out[i] = sigm(in[0][i]);
}
static void r_tanh(const op_case *c, double *const *in, double *out)
{
    for (int64_t i = 0; i < numel(c->in_shape[0]); i++) out[i] = tanh(in[0][i]);
}
static void r_relu_grad(const op_case *c, double *const *in, double *out)
{
    for (int64_t i = 0; i < numel(c->in_shape[0]); i++) out[i] = in[0][i] > 0 ? in[1][i] : 0;
}
static void r_sigmoid_grad(const op_case *c, double *const *in, double *out)
{
    for (int64_t i = 0; i < numel(c->in_shape[0]); i++) {
        double s = sigm(in[0][i]);
        out[i] = in[1][i] * s * (1 - s);
    }
}
static void r_tanh_grad(const op_case *c, double *const *in, double *out)
{
    for (int64_t i = 0; i < numel(c->in_shape[0]); i++) {
        double t = tanh(in[0][i]);
        out[i] = in[1][i] * (1 - t * t);
    }
}
/* Softmax of each row of x [rows, k] into p; returns nothing. */
static void softmax_rows(const double *x, int64_t rows, int64_t k, double *p)
{
    for (int64_t r = 0; r < rows; r++) {
        double m = x[r * k], sum = 0;
        for (int64_t j = 1; j < k; j++) m = fmax(m, x[r * k + j]);
        for (int64_t j = 0; j < k; j++) sum += exp(x[r * k + j] - m);
        for (int64_t j = 0; j < k; j++) p[r * k + j] = exp(x[r * k + j] - m) / sum;
    }
}
static void r_softmax(const op_case *c, double *const *in, double *out)
{
    int64_t k = last_dim(c->in_shape[0]);
    softmax_rows(in[0], numel(c->in_shape[0]) / k, k, out);
}
/* in = {labels [rows, k], logits [rows, k]} -> loss [rows] (bp: the backprop instead) */
static void ce(const op_case *c, double *const *in, double *out, bool bp)
{
    int64_t k = last_dim(c->in_shape[1]), rows = numel(c->in_shape[1]) / k;
    double *p = malloc(sizeof(double) * (size_t)(rows * k));
    softmax_rows(in[1], rows, k, p);
    for (int64_t r = 0; r < rows; r++) {
        double loss = 0;
        for (int64_t j = 0; j < k; j++) {
            loss -= in[0][r * k + j] * log(p[r * k + j]);
            if (bp) out[r * k + j] = p[r * k + j] - in[0][r * k + j];
        }
        if (!bp) out[r] = loss;
    }
    free(p);
}
static void r_softmax_ce(const op_case *c, double *const *in, double *out)
{
    ce(c, in, out, false);
}
static void r_softmax_ce_bp(const op_case *c, double *const *in, double *out)
{
    ce(c, in, out, true);
}
/* in = {labels [rows], logits [rows, k]} */
static void sparse_ce(const op_case *c, double *const *in, double *out, bool bp)
{
    int64_t k = last_dim(c->in_shape[1]), rows = numel(c->in_shape[1]) / k;
    double *p = malloc(sizeof(double) * (size_t)(rows * k));
    softmax_rows(in[1], rows, k, p);
    for (int64_t r = 0; r < rows; r++) {
        int64_t l = (int64_t)in[0][r];
        if (bp)
            for (int64_t j = 0; j < k; j++) out[r * k + j] = p[r * k + j] - (j == l);
        else
            out[r] = -log(p[r * k + l]);
    }
    free(p);
}
static void r_sparse_ce(const op_case *c, double *const *in, double *out)
{
    sparse_ce(c, in, out, false);
}
static void r_sparse_ce_bp(const op_case *c, double *const *in, double *out)
{
    sparse_ce(c, in, out, true);
}

#define SH(...)                                                                                    \
    rill_shape_make(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

static op_case cases[32];
static int ncases;

static void define_cases(void)
{
    op_case *c;
#define ADD_CASE() (c = &cases[ncases++], *c = (op_case){.lo = -2, .hi = 2, .half_tol = 1e-2})
    ADD_CASE();
    c->name = "BiasAdd [3,4] + [4]";
    c->nin = 2, c->in_shape[0] = SH(3, 4), c->in_shape[1] = SH(4);
    c->build = b_bias_add, c->ref = r_bias_add, c->out_shape = SH(3, 4);
    c->grad_in[0] = c->grad_in[1] = true;

    ADD_CASE();
    c->name = "BiasAdd [2,2,3] + [3]";
    c->nin = 2, c->in_shape[0] = SH(2, 2, 3), c->in_shape[1] = SH(3);
    c->build = b_bias_add, c->ref = r_bias_add, c->out_shape = SH(2, 2, 3);
    c->grad_in[0] = c->grad_in[1] = true;

    ADD_CASE();
    c->name = "Relu [2,5]";
    c->nin = 1, c->in_shape[0] = SH(2, 5), c->away_from_zero = true;
    c->build = b_relu, c->ref = r_relu, c->out_shape = SH(2, 5), c->grad_in[0] = true;

    ADD_CASE();
    c->name = "Sigmoid [2,5]";
    c->nin = 1, c->in_shape[0] = SH(2, 5), c->lo = -6, c->hi = 6;
    c->build = b_sigmoid, c->ref = r_sigmoid, c->out_shape = SH(2, 5), c->grad_in[0] = true;

    ADD_CASE();
    c->name = "Tanh [2,5]";
    c->nin = 1, c->in_shape[0] = SH(2, 5), c->lo = -3, c->hi = 3;
    c->build = b_tanh, c->ref = r_tanh, c->out_shape = SH(2, 5), c->grad_in[0] = true;

    ADD_CASE();
    c->name = "Softmax [3,4]";
    c->nin = 1, c->in_shape[0] = SH(3, 4), c->lo = -4, c->hi = 4;
    c->build = b_softmax, c->ref = r_softmax, c->out_shape = SH(3, 4), c->grad_in[0] = true;

    ADD_CASE();
    c->name = "Softmax [2,2,3]";
    c->nin = 1, c->in_shape[0] = SH(2, 2, 3);
    c->build = b_softmax, c->ref = r_softmax, c->out_shape = SH(2, 2, 3), c->grad_in[0] = true;

    ADD_CASE();
    c->name = "Softmax [5]";
    c->nin = 1, c->in_shape[0] = SH(5);
    c->build = b_softmax, c->ref = r_softmax, c->out_shape = SH(5), c->grad_in[0] = true;

    ADD_CASE();
    c->name = "Softmax [2,3] of large logits";
    c->nin = 1, c->in_shape[0] = SH(2, 3), c->lo = 1000, c->hi = 1010, c->half_tol = 0;
    c->build = b_softmax, c->ref = r_softmax, c->out_shape = SH(2, 3);

    ADD_CASE();
    c->name = "SoftmaxCrossEntropyWithLogits [3,5] loss";
    c->nin = 2, c->in_shape[0] = SH(3, 5), c->in_shape[1] = SH(3, 5), c->lo = -3, c->hi = 3;
    c->build = b_softmax_ce, c->ref = r_softmax_ce, c->out_shape = SH(3);
    c->grad_in[1] = true, c->no_grad_in[0] = true;

    ADD_CASE();
    c->name = "SoftmaxCrossEntropyWithLogits [3,5] backprop";
    c->nin = 2, c->in_shape[0] = SH(3, 5), c->in_shape[1] = SH(3, 5), c->lo = -3, c->hi = 3;
    c->build = b_softmax_ce_bp, c->ref = r_softmax_ce_bp, c->out_shape = SH(3, 5);

    ADD_CASE();
    c->name = "SparseSoftmaxCrossEntropyWithLogits int32 [4,5] loss";
    c->nin = 2, c->in_shape[0] = SH(4), c->in_shape[1] = SH(4, 5), c->in_int[0] = RILL_INT32;
    c->build = b_sparse_ce, c->ref = r_sparse_ce, c->out_shape = SH(4);
    c->grad_in[1] = true;

    ADD_CASE();
    c->name = "SparseSoftmaxCrossEntropyWithLogits int64 [6,3] loss";
    c->nin = 2, c->in_shape[0] = SH(6), c->in_shape[1] = SH(6, 3), c->in_int[0] = RILL_INT64;
    c->lo = -5, c->hi = 5;
    c->build = b_sparse_ce, c->ref = r_sparse_ce, c->out_shape = SH(6);
    c->grad_in[1] = true;

    ADD_CASE();
    c->name = "SparseSoftmaxCrossEntropyWithLogits int32 [4,5] backprop";
    c->nin = 2, c->in_shape[0] = SH(4), c->in_shape[1] = SH(4, 5), c->in_int[0] = RILL_INT32;
    c->build = b_sparse_ce_bp, c->ref = r_sparse_ce_bp, c->out_shape = SH(4, 5);

    ADD_CASE();
    c->name = "ReluGrad (gradient of Relu) [2,5]";
    c->nin = 2, c->in_shape[0] = SH(2, 5), c->in_shape[1] = SH(2, 5), c->away_from_zero = true;
    c->build = b_relu_grad, c->ref = r_relu_grad, c->out_shape = SH(2, 5);
    c->grad_in[0] = c->grad_in[1] = true;

    ADD_CASE();
    c->name = "SigmoidGrad (gradient of Sigmoid) [2,5]";
    c->nin = 2, c->in_shape[0] = SH(2, 5), c->in_shape[1] = SH(2, 5), c->lo = -3, c->hi = 3;
    c->build = b_sigmoid_grad, c->ref = r_sigmoid_grad, c->out_shape = SH(2, 5);
    c->grad_in[0] = c->grad_in[1] = true;

    ADD_CASE();
    c->name = "TanhGrad (gradient of Tanh) [2,5]";
    c->nin = 2, c->in_shape[0] = SH(2, 5), c->in_shape[1] = SH(2, 5);
    c->build = b_tanh_grad, c->ref = r_tanh_grad, c->out_shape = SH(2, 5);
    c->grad_in[0] = c->grad_in[1] = true;
#undef ADD_CASE
}

/* Random inputs: floats in [lo, hi] (labels of the dense cross-entropy are rows of
 * probabilities), class indices for int inputs. */
static void make_inputs(op_case *c)
{
    bool dense_labels = c->build == b_softmax_ce || c->build == b_softmax_ce_bp;
    for (int i = 0; i < c->nin; i++) {
        int64_t n = numel(c->in_shape[i]);
        c->vals[i] = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t k = 0; k < n; k++) {
            double v = urand(c->lo, c->hi);
            if (c->away_from_zero && fabs(v) < 0.1)
                v = v < 0 ? -0.1 - urand(0, 1) : 0.1 + urand(0, 1);
            c->vals[i][k] = v;
        }
        if (c->in_int[i]) {
            int64_t classes = last_dim(c->in_shape[1]);
            for (int64_t k = 0; k < n; k++)
                c->vals[i][k] = (double)(int64_t)urand(0, (double)classes);
        }
        if (dense_labels && i == 0) {
            int64_t k = last_dim(c->in_shape[0]);
            for (int64_t r = 0; r < n / k; r++) {
                double sum = 0;
                for (int64_t j = 0; j < k; j++) sum += (c->vals[i][r * k + j] = urand(0, 1));
                for (int64_t j = 0; j < k; j++) c->vals[i][r * k + j] /= sum;
            }
        }
    }
}

static rill_dtype in_dtype(const op_case *c, int i, rill_dtype t)
{
    return c->in_int[i] ? c->in_int[i] : t;
}

/* Forward result in dtype t against the reference on the same rounded inputs. */
static void check_forward(op_case *c, rill_dtype t)
{
    rill_graph *g = rill_graph_new();
    rill_output ph[MAX_IN];
    rill_tensor *feed[MAX_IN] = {0};
    double *rounded[MAX_IN];
    for (int i = 0; i < c->nin; i++) {
        rill_dtype it = in_dtype(c, i, t);
        ph[i] = rill_placeholder(g, it, c->in_shape[i], NULL);
        feed[i] = make(it, c->in_shape[i], c->vals[i]);
        int64_t n = numel(c->in_shape[i]);
        rounded[i] = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t k = 0; k < n; k++) rounded[i][k] = round_to(it, c->vals[i][k]);
    }
    rill_output y = c->build(g, ph);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s (%s): %s\n", c->name, rill_dtype_name(t),
                rill_status_message(rill_graph_status(g)));
        goto out;
    }
    CHECK_EQ_INT(rill_output_dtype(y), t);
    rill_shape ys = rill_output_shape(y);
    if (!CHECK(rill_shape_equal(&ys, &c->out_shape))) fprintf(stderr, "  %s\n", c->name);

    int64_t n = numel(c->out_shape);
    double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
    c->ref(c, rounded, want);
    rill_session *sess = rill_session_new(g, NULL, NULL);
    /* Twice: the second run recycles the first run's output buffers. */
    for (int rep = 0; rep < 2; rep++) {
        rill_tensor *got = NULL;
        if (!CHECK_EQ_INT(run(sess, ph, feed, c->nin, &y, &got, 1, NULL, 0), RILL_OK)) break;
        CHECK_EQ_INT(rill_tensor_dtype(got), t);
        CHECK(rill_shape_equal(rill_tensor_shape(got), &c->out_shape));
        double tol = t == RILL_DOUBLE ? 1e-12 : t == RILL_FLOAT ? 2e-6 : c->half_tol;
        int bad = 0;
        for (int64_t k = 0; k < n && bad < 3; k++) {
            double v = rill_tensor_get_double(got, k);
            if (!CHECK_NEAR(v, want[k], tol * (1 + fabs(want[k])))) {
                fprintf(stderr, "  %s (%s) element %lld\n", c->name, rill_dtype_name(t),
                        (long long)k);
                bad++;
            }
        }
        rill_tensor_free(got);
    }
    rill_session_free(sess);
    free(want);
out:
    for (int i = 0; i < c->nin; i++) {
        rill_tensor_free(feed[i]);
        free(rounded[i]);
    }
    rill_graph_free(g);
}

/* sum(w * y) for the given double inputs. */
static double weighted_sum(rill_session *sess, const op_case *c, const rill_output *ph,
                           rill_tensor *const *feed, rill_output y, const double *w)
{
    rill_tensor *got = NULL;
    if (run(sess, ph, feed, c->nin, &y, &got, 1, NULL, 0) != RILL_OK) return NAN;
    double s = 0;
    for (int64_t k = 0; k < numel(c->out_shape); k++) s += w[k] * rill_tensor_get_double(got, k);
    rill_tensor_free(got);
    return s;
}

/* rill_gradients of sum(w * y) against central differences, in double. */
static void check_gradients(op_case *c)
{
    const double eps = 1e-6;
    rill_graph *g = rill_graph_new();
    rill_output ph[MAX_IN], dx[MAX_IN];
    rill_tensor *feed[MAX_IN] = {0};
    for (int i = 0; i < c->nin; i++) {
        rill_dtype it = in_dtype(c, i, RILL_DOUBLE);
        ph[i] = rill_placeholder(g, it, c->in_shape[i], NULL);
        feed[i] = make(it, c->in_shape[i], c->vals[i]);
    }
    rill_output y = c->build(g, ph);
    int64_t n = numel(c->out_shape);
    double *w = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t k = 0; k < n; k++) w[k] = urand(-1, 1);
    rill_tensor *wt = make(RILL_DOUBLE, c->out_shape, w);
    rill_output wo = rill_const(g, wt, "w");
    rill_tensor_free(wt);
    rill_gradients(g, &y, 1, ph, c->nin, &wo, dx);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s: %s\n", c->name, rill_status_message(rill_graph_status(g)));
        goto out;
    }
    rill_session *sess = rill_session_new(g, NULL, NULL);
    for (int i = 0; i < c->nin; i++) {
        if (c->no_grad_in[i] && !CHECK(dx[i].node == NULL))
            fprintf(stderr, "  %s: input %d should get no gradient\n", c->name, i);
        if (!c->grad_in[i]) continue;
        int64_t m = numel(c->in_shape[i]);
        double *analytic = calloc((size_t)(m ? m : 1), sizeof(double));
        if (dx[i].node) {
            rill_tensor *got = NULL;
            if (!CHECK_EQ_INT(run(sess, ph, feed, c->nin, &dx[i], &got, 1, NULL, 0), RILL_OK))
                goto next;
            if (!CHECK(rill_shape_equal(rill_tensor_shape(got), &c->in_shape[i]))) goto next;
            for (int64_t k = 0; k < m; k++) analytic[k] = rill_tensor_get_double(got, k);
            rill_tensor_free(got);
        }
        double *x = rill_tensor_data(feed[i]);
        int bad = 0;
        for (int64_t k = 0; k < m && bad < 3; k++) {
            double x0 = x[k];
            x[k] = x0 + eps;
            double fp = weighted_sum(sess, c, ph, feed, y, w);
            x[k] = x0 - eps;
            double fm = weighted_sum(sess, c, ph, feed, y, w);
            x[k] = x0;
            double numeric = (fp - fm) / (2 * eps);
            if (!CHECK_NEAR(analytic[k], numeric, 1e-6 * (1 + fabs(numeric)))) {
                fprintf(stderr, "  %s: d/d input %d element %lld%s\n", c->name, i, (long long)k,
                        dx[i].node ? "" : " (no gradient built)");
                bad++;
            }
        }
    next:
        free(analytic);
    }
    rill_session_free(sess);
out:
    free(w);
    for (int i = 0; i < c->nin; i++) rill_tensor_free(feed[i]);
    rill_graph_free(g);
}

static void test_cases(void)
{
    define_cases();
    for (int i = 0; i < ncases; i++) {
        op_case *c = &cases[i];
        make_inputs(c);
        check_forward(c, RILL_FLOAT);
        check_forward(c, RILL_DOUBLE);
        if (c->half_tol > 0) check_forward(c, RILL_HALF);
        check_gradients(c);
        for (int k = 0; k < c->nin; k++) free(c->vals[k]);
    }
}

/* --- names, inferred shapes, large tensors --- */

static void test_names_and_shapes(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, SH(-1, -1), "x");
    rill_output b = rill_placeholder(g, RILL_FLOAT, SH(5), "b");
    rill_output ba = rill_bias_add(g, x, b, NULL);
    rill_output lbl = rill_placeholder(g, RILL_INT64, SH(-1), "labels");
    rill_output sce = rill_sparse_softmax_cross_entropy_with_logits(g, lbl, ba, NULL);
    rill_output p = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "p");
    rill_output relu = rill_relu(g, ba, NULL);
    rill_output ce = rill_softmax_cross_entropy_with_logits(g, p, relu, NULL);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        rill_graph_free(g);
        return;
    }
    CHECK_EQ_STR(rill_node_name(ba.node), "BiasAdd");
    CHECK_EQ_STR(rill_node_name(relu.node), "Relu");
    CHECK_EQ_STR(rill_node_name(rill_relu(g, x, NULL).node), "Relu_1");
    CHECK_EQ_STR(rill_node_name(rill_sigmoid(g, x, NULL).node), "Sigmoid");
    CHECK_EQ_STR(rill_node_name(rill_tanh(g, x, NULL).node), "Tanh");
    CHECK_EQ_STR(rill_node_name(rill_softmax(g, x, "probs").node), "probs");
    CHECK_EQ_STR(rill_node_name(sce.node), "SparseSoftmaxCrossEntropyWithLogits");
    CHECK_EQ_STR(rill_node_name(ce.node), "SoftmaxCrossEntropyWithLogits");
    CHECK_EQ_STR(rill_node_op_type(ce.node), "SoftmaxCrossEntropyWithLogits");
    /* TensorFlow's input order: features (logits) first. */
    CHECK(rill_node_input(ce.node, 0).node == relu.node);
    CHECK(rill_node_input(ce.node, 1).node == p.node);
    CHECK(rill_node_input(sce.node, 0).node == ba.node);
    CHECK(rill_node_input(sce.node, 1).node == lbl.node);
    CHECK_EQ_INT(rill_node_num_outputs(sce.node), 2);
    CHECK_EQ_INT(rill_node_num_outputs(ce.node), 2);

    char buf[64];
    rill_shape s = rill_output_shape(ba);
    CHECK_EQ_STR(rill_shape_str(&s, buf, sizeof buf), "[?,5]");
    s = rill_output_shape(sce);
    CHECK_EQ_STR(rill_shape_str(&s, buf, sizeof buf), "[?]");
    s = rill_node_output_shape(sce.node, 1);
    CHECK_EQ_STR(rill_shape_str(&s, buf, sizeof buf), "[?,5]");
    s = rill_node_output_shape(ce.node, 1);
    CHECK_EQ_STR(rill_shape_str(&s, buf, sizeof buf), "[?,5]");
    CHECK_EQ_INT(rill_node_output_dtype(ce.node, 1), RILL_FLOAT);
    rill_graph_free(g);

    /* A known batch flows from labels to the outputs. */
    g = rill_graph_new();
    rill_output lg = rill_placeholder(g, RILL_DOUBLE, SH(-1, 10), "logits");
    rill_output lb = rill_placeholder(g, RILL_INT32, SH(7), "labels");
    rill_output l = rill_sparse_softmax_cross_entropy_with_logits(g, lb, lg, NULL);
    s = rill_node_output_shape(l.node, 1);
    CHECK_EQ_STR(rill_shape_str(&s, buf, sizeof buf), "[7,10]");
    CHECK_EQ_INT(rill_output_dtype(l), RILL_DOUBLE);
    rill_graph_free(g);
}

/* Sizes of the MLP benchmark and above (sharded over the intra-op pool): BiasAdd, Relu and
 * their gradients against plain loops, in float. */
static void test_large(void)
{
    const int64_t rows = 600, cols = 300;
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, SH(rows, cols), "x");
    rill_output b = rill_placeholder(g, RILL_FLOAT, SH(cols), "b");
    rill_output w = rill_placeholder(g, RILL_FLOAT, SH(rows, cols), "w");
    rill_output y = rill_relu(g, rill_bias_add(g, x, b, NULL), NULL);
    rill_output xs[] = {x, b}, dx[2];
    rill_gradients(g, &y, 1, xs, 2, &w, dx);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        rill_graph_free(g);
        return;
    }
    double *xv = malloc(sizeof(double) * (size_t)(rows * cols));
    double *wv = malloc(sizeof(double) * (size_t)(rows * cols));
    double bv[300];
    for (int64_t i = 0; i < rows * cols; i++) xv[i] = urand(-1, 1), wv[i] = urand(-1, 1);
    for (int64_t i = 0; i < cols; i++) bv[i] = urand(-0.5, 0.5);
    rill_tensor *feed[] = {make(RILL_FLOAT, SH(rows, cols), xv), make(RILL_FLOAT, SH(cols), bv),
                           make(RILL_FLOAT, SH(rows, cols), wv)};
    rill_output ph[] = {x, b, w}, fetch[] = {y, dx[0], dx[1]};
    rill_tensor *got[3] = {0};
    rill_session *sess = rill_session_new(g, NULL, NULL);
    for (int rep = 0; rep < 3; rep++) {
        if (!CHECK_EQ_INT(run(sess, ph, feed, 3, fetch, got, 3, NULL, 0), RILL_OK)) break;
        /* One check per output: the largest deviation from the plain loop. */
        double *db = calloc((size_t)cols, sizeof(double));
        double err_y = 0, err_dx = 0, err_db = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < cols; k++) {
                int64_t i = r * cols + k;
                double pre = (double)(float)xv[i] + (double)(float)bv[k];
                double dpre = pre > 0 ? (double)(float)wv[i] : 0;
                db[k] += dpre;
                err_y = fmax(err_y, fabs(rill_tensor_get_double(got[0], i) - relu(pre)));
                err_dx = fmax(err_dx, fabs(rill_tensor_get_double(got[1], i) - dpre));
            }
        for (int64_t k = 0; k < cols; k++)
            err_db = fmax(err_db, fabs(rill_tensor_get_double(got[2], k) - db[k]));
        CHECK_NEAR(err_y, 0, 1e-6);
        CHECK_NEAR(err_dx, 0, 1e-6);
        CHECK_NEAR(err_db, 0, 1e-3);
        free(db);
        for (int k = 0; k < 3; k++) rill_tensor_free(got[k]), got[k] = NULL;
    }
    rill_session_free(sess);
    for (int k = 0; k < 3; k++) rill_tensor_free(feed[k]);
    free(xv);
    free(wv);
    rill_graph_free(g);
}

/* Runs a float op over values (shape [rows, n / rows]) and returns the output (caller frees). */
static rill_tensor *run_float(rill_output (*build)(rill_graph *, const rill_output *),
                              const float *v, int64_t rows, int64_t n)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x");
    rill_output y = build(g, &x);
    int64_t dims[] = {rows, n / rows};
    rill_tensor *in = rill_tensor_from_data(RILL_FLOAT, dims, 2, v), *out = NULL;
    rill_session *sess = rill_session_new(g, NULL, NULL);
    CHECK_EQ_INT(run(sess, &x, &in, 1, &y, &out, 1, NULL, 0), RILL_OK);
    rill_session_free(sess);
    rill_tensor_free(in);
    rill_graph_free(g);
    return out;
}

/* The float path computes exp and tanh with its own polynomials: sweep them against libm in
 * double, checking the largest relative error (tiny results: absolute). */
static void test_float_precision(void)
{
    enum { N = 18001 };
    float *v = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) v[i] = -90.0f + 0.01f * (float)i;
    rill_tensor *y = run_float(b_sigmoid, v, 1, N);
    double worst = 0;
    for (int i = 0; y && i < N; i++) {
        double want = 1 / (1 + exp(-(double)v[i])), got = rill_tensor_get_double(y, i);
        worst = fmax(worst, want > 1e-30 ? fabs(got - want) / want : fabs(got - want) * 1e30);
    }
    CHECK_NEAR(worst, 0, 5e-7); /* about 4 ulp */
    rill_tensor_free(y);

    for (int i = 0; i < N; i++) v[i] = -9.0f + 0.001f * (float)i;
    y = run_float(b_tanh, v, 1, N);
    worst = 0;
    for (int i = 0; y && i < N; i++) {
        double want = tanh((double)v[i]), got = rill_tensor_get_double(y, i);
        if (want != 0) worst = fmax(worst, fabs(got - want) / fabs(want));
    }
    CHECK_NEAR(worst, 0, 5e-7); /* about 4 ulp */
    rill_tensor_free(y);

    /* Softmax of rows {0, t}: e^-|t| down to where it underflows. */
    for (int i = 0; i < N - 1; i++) v[i] = (i % 2) ? -0.01f * (float)i : 0.0f;
    y = run_float(b_softmax, v, (N - 1) / 2, N - 1);
    worst = 0;
    for (int i = 0; y && i < N - 1; i += 2) {
        double t = (double)v[i + 1], want = exp(t) / (1 + exp(t)),
               got = rill_tensor_get_double(y, i + 1);
        worst = fmax(worst, want > 1e-30 ? fabs(got - want) / want : fabs(got - want) * 1e30);
    }
    CHECK_NEAR(worst, 0, 5e-7); /* about 4 ulp */
    rill_tensor_free(y);
    free(v);
}

/* Infinities and NaN in float and double: saturate where the math does, NaN stays NaN. */
static void test_special_values(void)
{
    const float inf = INFINITY, nan = NAN;
    const float in[8] = {-inf, -200, -88, 1e-6f, 89, 200, inf, nan};
    rill_tensor *y = run_float(b_sigmoid, in, 1, 8);
    const double sig[8] = {0, 0, 1 / (1 + exp(88.0)), 0.5 + 0.25e-6, 1, 1, 1, NAN};
    for (int i = 0; y && i < 7; i++)
        CHECK_NEAR(rill_tensor_get_double(y, i), sig[i], 1e-7 * sig[i] + 1e-44);
    if (y) CHECK(isnan(rill_tensor_get_double(y, 7)));
    rill_tensor_free(y);

    y = run_float(b_tanh, in, 1, 8);
    const double th[8] = {-1, -1, -1, 1e-6, 1, 1, 1, NAN};
    for (int i = 0; y && i < 7; i++)
        CHECK_NEAR(rill_tensor_get_double(y, i), th[i], 1e-12 + 1e-7 * fabs(th[i]));
    if (y) CHECK(isnan(rill_tensor_get_double(y, 7)));
    rill_tensor_free(y);

    /* Softmax: a -inf logit gets 0; a +inf logit or a NaN makes its row NaN (as TensorFlow). */
    const float rows[3][4] = {{1, -inf, 2, -inf}, {0, 1, nan, 2}, {0, inf, 1, 2}};
    y = run_float(b_softmax, &rows[0][0], 3, 12);
    if (y) {
        double e1 = exp(-1.0);
        CHECK_NEAR(rill_tensor_get_double(y, 0), e1 / (1 + e1), 1e-7);
        CHECK_NEAR(rill_tensor_get_double(y, 1), 0, 0);
        CHECK_NEAR(rill_tensor_get_double(y, 2), 1 / (1 + e1), 1e-7);
        CHECK_NEAR(rill_tensor_get_double(y, 3), 0, 0);
        for (int i = 4; i < 12; i++) CHECK(isnan(rill_tensor_get_double(y, i)));
    }
    rill_tensor_free(y);

    /* A NaN logit gives a NaN loss, so training notices. */
    rill_graph *g = rill_graph_new();
    rill_output lg = rill_placeholder(g, RILL_DOUBLE, SH(2, 3), "logits");
    rill_output lb = rill_placeholder(g, RILL_INT32, SH(2), "labels");
    rill_output loss = rill_sparse_softmax_cross_entropy_with_logits(g, lb, lg, NULL);
    rill_tensor *feed[] = {make(RILL_DOUBLE, SH(2, 3), (double[]){0, NAN, 1, 1e300, -1e300, 0}),
                           make(RILL_INT32, SH(2), (double[]){0, 1})};
    rill_output phs[] = {lg, lb};
    rill_tensor *got = NULL;
    rill_session *sess = rill_session_new(g, NULL, NULL);
    if (CHECK_EQ_INT(run(sess, phs, feed, 2, &loss, &got, 1, NULL, 0), RILL_OK)) {
        CHECK(isnan(rill_tensor_get_double(got, 0)));
        CHECK_NEAR(rill_tensor_get_double(got, 1), 2e300, 1e286); /* no overflow to inf */
    }
    rill_tensor_free(got);
    for (int k = 0; k < 2; k++) rill_tensor_free(feed[k]);
    rill_session_free(sess);
    rill_graph_free(g);
}

/* --- build-time errors --- */

/* Builds with fn on a fresh graph and checks the recorded error contains want. */
static void expect_build_error(const char *what, void (*fn)(rill_graph *g), const char *want)
{
    rill_graph *g = rill_graph_new();
    fn(g);
    const rill_status *s = rill_graph_status(g);
    if (!CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT) ||
        !CHECK_STR_CONTAINS(rill_status_message(s), want))
        fprintf(stderr, "  case: %s\n", what);
    rill_graph_free(g);
}

static rill_output ph(rill_graph *g, rill_dtype t, rill_shape s)
{
    return rill_placeholder(g, t, s, NULL);
}

static void be_bias_dims(rill_graph *g)
{
    rill_bias_add(g, ph(g, RILL_FLOAT, SH(2, 3)), ph(g, RILL_FLOAT, SH(4)), "ba");
}
static void be_bias_dtype(rill_graph *g)
{
    rill_bias_add(g, ph(g, RILL_FLOAT, SH(2, 3)), ph(g, RILL_DOUBLE, SH(3)), NULL);
}
static void be_bias_rank(rill_graph *g)
{
    rill_bias_add(g, ph(g, RILL_FLOAT, SH(3)), ph(g, RILL_FLOAT, SH(3)), NULL);
}
static void be_bias_rank_b(rill_graph *g)
{
    rill_bias_add(g, ph(g, RILL_FLOAT, SH(2, 3)), ph(g, RILL_FLOAT, SH(1, 3)), NULL);
}
static void be_bias_int(rill_graph *g)
{
    rill_bias_add(g, ph(g, RILL_INT32, SH(2, 3)), ph(g, RILL_INT32, SH(3)), NULL);
}
static void be_relu_int(rill_graph *g)
{
    rill_relu(g, ph(g, RILL_INT32, SH(2)), NULL);
}
static void be_sigmoid_bool(rill_graph *g)
{
    rill_sigmoid(g, ph(g, RILL_BOOL, SH(2)), NULL);
}
static void be_tanh_int64(rill_graph *g)
{
    rill_tanh(g, ph(g, RILL_INT64, SH(2)), NULL);
}
static void be_softmax_scalar(rill_graph *g)
{
    rill_softmax(g, ph(g, RILL_FLOAT, rill_shape_scalar()), "sm");
}
static void be_ce_dims(rill_graph *g)
{
    rill_softmax_cross_entropy_with_logits(g, ph(g, RILL_FLOAT, SH(2, 4)),
                                           ph(g, RILL_FLOAT, SH(2, 3)), "xent");
}
static void be_ce_dtype(rill_graph *g)
{
    rill_softmax_cross_entropy_with_logits(g, ph(g, RILL_DOUBLE, SH(2, 3)),
                                           ph(g, RILL_FLOAT, SH(2, 3)), NULL);
}
static void be_ce_rank(rill_graph *g)
{
    rill_softmax_cross_entropy_with_logits(g, ph(g, RILL_FLOAT, SH(3)), ph(g, RILL_FLOAT, SH(3)),
                                           NULL);
}
static void be_sparse_batch(rill_graph *g)
{
    rill_sparse_softmax_cross_entropy_with_logits(g, ph(g, RILL_INT32, SH(3)),
                                                  ph(g, RILL_FLOAT, SH(4, 10)), "loss");
}
static void be_sparse_label_dtype(rill_graph *g)
{
    rill_sparse_softmax_cross_entropy_with_logits(g, ph(g, RILL_FLOAT, SH(4)),
                                                  ph(g, RILL_FLOAT, SH(4, 10)), NULL);
}
static void be_sparse_label_rank(rill_graph *g)
{
    rill_sparse_softmax_cross_entropy_with_logits(g, ph(g, RILL_INT64, SH(4, 1)),
                                                  ph(g, RILL_FLOAT, SH(4, 10)), NULL);
}
static void be_sparse_logits_rank(rill_graph *g)
{
    rill_sparse_softmax_cross_entropy_with_logits(g, ph(g, RILL_INT64, SH(4)),
                                                  ph(g, RILL_FLOAT, SH(4, 10, 2)), NULL);
}
static void be_sparse_logits_int(rill_graph *g)
{
    rill_sparse_softmax_cross_entropy_with_logits(g, ph(g, RILL_INT64, SH(4)),
                                                  ph(g, RILL_INT32, SH(4, 10)), NULL);
}
static rill_output raw2(rill_graph *g, const char *op, rill_output a, rill_output b)
{
    rill_output in[] = {a, b};
    return rill_node_output(rill__node_create(g, op, NULL, in, 2, NULL, 0), 0);
}
static void be_relu_grad_dims(rill_graph *g)
{
    raw2(g, "ReluGrad", ph(g, RILL_FLOAT, SH(2, 3)), ph(g, RILL_FLOAT, SH(2, 4)));
}
static void be_sigmoid_grad_rank(rill_graph *g)
{
    raw2(g, "SigmoidGrad", ph(g, RILL_FLOAT, SH(2, 3)), ph(g, RILL_FLOAT, SH(6)));
}
static void be_tanh_grad_dtype(rill_graph *g)
{
    raw2(g, "TanhGrad", ph(g, RILL_DOUBLE, SH(2)), ph(g, RILL_FLOAT, SH(2)));
}
static void be_bias_add_grad_rank(rill_graph *g)
{
    rill_output x = ph(g, RILL_FLOAT, SH(3));
    rill__node_create(g, "BiasAddGrad", NULL, &x, 1, NULL, 0);
}

static void test_build_errors(void)
{
    expect_build_error("BiasAdd dims", be_bias_dims,
                       "Dimensions must be equal, but are 3 and 4 for 'ba' (op: 'BiasAdd') with "
                       "input shapes: [2,3], [4].");
    expect_build_error("BiasAdd dtype", be_bias_dtype,
                       "Input 'bias' of 'BiasAdd' Op has type double that does not match type "
                       "float of argument 'value'.");
    expect_build_error("BiasAdd value rank", be_bias_rank,
                       "Shape must be at least rank 2 but is rank 1 for 'BiasAdd' (op: "
                       "'BiasAdd') with input shapes: [3], [3].");
    expect_build_error("BiasAdd bias rank", be_bias_rank_b,
                       "Shape must be rank 1 but is rank 2 for 'BiasAdd' (op: 'BiasAdd') with "
                       "input shapes: [2,3], [1,3].");
    expect_build_error("BiasAdd int", be_bias_int,
                       "Value passed to parameter 'value' has DataType int32 not in list of "
                       "allowed values: half, float, double");
    expect_build_error("Relu int", be_relu_int,
                       "Value passed to parameter 'features' has DataType int32 not in list");
    expect_build_error("Sigmoid bool", be_sigmoid_bool,
                       "Value passed to parameter 'x' has DataType bool");
    expect_build_error("Tanh int64", be_tanh_int64,
                       "Value passed to parameter 'x' has DataType int64");
    expect_build_error("Softmax scalar", be_softmax_scalar,
                       "Shape must be at least rank 1 but is rank 0 for 'sm' (op: 'Softmax') "
                       "with input shapes: [].");
    expect_build_error("CE dims", be_ce_dims,
                       "Dimensions must be equal, but are 3 and 4 for 'xent' (op: "
                       "'SoftmaxCrossEntropyWithLogits') with input shapes: [2,3], [2,4].");
    expect_build_error("CE dtype", be_ce_dtype,
                       "Input 'labels' of 'SoftmaxCrossEntropyWithLogits' Op has type double "
                       "that does not match type float of argument 'features'.");
    expect_build_error("CE rank", be_ce_rank, "Shape must be rank 2 but is rank 1");
    expect_build_error("Sparse batch", be_sparse_batch,
                       "Dimensions must be equal, but are 4 and 3 for 'loss' (op: "
                       "'SparseSoftmaxCrossEntropyWithLogits') with input shapes: [4,10], [3].");
    expect_build_error("Sparse label dtype", be_sparse_label_dtype,
                       "Value passed to parameter 'labels' has DataType float not in list of "
                       "allowed values: int32, int64");
    expect_build_error(
        "Sparse label rank", be_sparse_label_rank,
        "Shape must be rank 1 but is rank 2 for 'SparseSoftmaxCrossEntropyWithLogits'");
    expect_build_error("Sparse logits rank", be_sparse_logits_rank,
                       "Shape must be rank 2 but is rank 3");
    expect_build_error("Sparse logits int", be_sparse_logits_int,
                       "Value passed to parameter 'features' has DataType int32");
    expect_build_error("ReluGrad dims", be_relu_grad_dims,
                       "Dimensions must be equal, but are 3 and 4 for 'ReluGrad' (op: "
                       "'ReluGrad') with input shapes: [2,3], [2,4].");
    expect_build_error("SigmoidGrad rank", be_sigmoid_grad_rank,
                       "Shapes must be equal rank, but are 2 and 1 for 'SigmoidGrad'");
    expect_build_error("TanhGrad dtype", be_tanh_grad_dtype,
                       "Input 'dy' of 'TanhGrad' Op has type float that does not match type "
                       "double of argument 'y'.");
    expect_build_error("BiasAddGrad rank", be_bias_add_grad_rank,
                       "Shape must be at least rank 2 but is rank 1");

    /* The error is sticky: later builders return empty outputs without touching the graph. */
    rill_graph *g = rill_graph_new();
    be_bias_dims(g);
    int nodes = rill_graph_num_nodes(g);
    rill_output r = rill_relu(g, ph(g, RILL_FLOAT, SH(2)), NULL);
    CHECK(r.node == NULL);
    CHECK_EQ_INT(rill_graph_num_nodes(g), nodes);
    rill_graph_free(g);
}

/* --- run-time errors (shapes unknown at build time) --- */

/* Runs op (made with rill__node_create, named "op") on placeholders of unknown shape fed
 * tensors of shapes s0 and s1 (t1 == 0: one input) holding v0/v1 (NULL: zeros), and checks it
 * fails with INVALID_ARGUMENT, the message holding want and naming the node. */
static void expect_run_error(const char *op, rill_dtype t0, rill_shape s0, const double *v0,
                             rill_dtype t1, rill_shape s1, const double *v1, const char *want)
{
    static const double zeros[64];
    const rill_dtype t[2] = {t0, t1};
    const rill_shape sh[2] = {s0, s1};
    const double *v[2] = {v0, v1};
    int nin = t1 ? 2 : 1;
    rill_graph *g = rill_graph_new();
    rill_output in[2];
    rill_tensor *feed[2] = {0};
    for (int i = 0; i < nin; i++) {
        in[i] = rill_placeholder(g, t[i], rill_shape_unknown(), NULL);
        feed[i] = make(t[i], sh[i], v[i] ? v[i] : zeros);
    }
    rill_output y = rill_node_output(rill__node_create(g, op, "op", in, nin, NULL, 0), 0);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s: %s\n", op, rill_status_message(rill_graph_status(g)));
        goto out;
    }
    rill_session *sess = rill_session_new(g, NULL, NULL);
    rill_tensor *got = NULL;
    char msg[1024];
    rill_code c = run(sess, in, feed, nin, &y, &got, 1, msg, sizeof msg);
    if (!CHECK_EQ_INT(c, RILL_INVALID_ARGUMENT) || !CHECK_STR_CONTAINS(msg, want) ||
        !CHECK_STR_CONTAINS(msg, "{{node op}}"))
        fprintf(stderr, "  op %s, expecting: %s\n", op, want);
    CHECK(got == NULL);
    rill_tensor_free(got);
    rill_session_free(sess);
out:
    for (int i = 0; i < nin; i++) rill_tensor_free(feed[i]);
    rill_graph_free(g);
}

static void test_run_errors(void)
{
    const rill_dtype F = RILL_FLOAT, D = RILL_DOUBLE, I32 = RILL_INT32, I64 = RILL_INT64;
    const rill_shape none = rill_shape_unknown();
    const char *sce = "SparseSoftmaxCrossEntropyWithLogits", *ce = "SoftmaxCrossEntropyWithLogits";

    expect_run_error("BiasAdd", F, SH(2, 3), NULL, F, SH(4), NULL,
                     "Must provide as many biases as the last dimension of the input tensor: [4] "
                     "vs. [2,3]");
    expect_run_error("BiasAdd", F, SH(3), NULL, F, SH(3), NULL,
                     "Input tensor must be at least 2D: [3]");
    expect_run_error("BiasAdd", D, SH(2, 3), NULL, D, SH(1, 3), NULL, "Biases must be 1D: [1,3]");
    expect_run_error("BiasAddGrad", F, SH(3), NULL, 0, none, NULL,
                     "Input tensor must be at least 2D: [3]");
    expect_run_error("ReluGrad", F, SH(2, 3), NULL, F, SH(3, 2), NULL,
                     "must have the same size and shape.  Input 0: [2,3] != input 1: [3,2]");
    expect_run_error("SigmoidGrad", D, SH(2), NULL, D, SH(3), NULL,
                     "must have the same size and shape");
    expect_run_error("TanhGrad", F, SH(2), NULL, F, SH(2, 1), NULL,
                     "must have the same size and shape");
    expect_run_error("Softmax", F, rill_shape_scalar(), NULL, 0, none, NULL,
                     "logits must have >= 1 dimension, got []");
    expect_run_error(ce, F, SH(2, 3), NULL, F, SH(2, 4), NULL,
                     "logits and labels must be same size: logits_size=[2,3] labels_size=[2,4]");
    expect_run_error(ce, F, SH(2, 3, 1), NULL, F, SH(2, 3, 1), NULL,
                     "logits must be 2-dimensional");
    expect_run_error(ce, F, SH(2, 0), NULL, F, SH(2, 0), NULL, "Must have at least one class");
    expect_run_error(sce, F, SH(4, 10), NULL, I32, SH(4), (double[]){1, 2, 12, 0},
                     "Received a label value of 12 which is outside the valid range of [0, 10).  "
                     "Label values: 1 2 12 0");
    expect_run_error(sce, D, SH(2, 3), NULL, I64, SH(2), (double[]){0, -1},
                     "Received a label value of -1 which is outside the valid range of [0, 3).");
    expect_run_error(sce, F, SH(4, 10), NULL, I32, SH(3), NULL,
                     "logits and labels must have the same first dimension, got logits shape "
                     "[4,10] and labels shape [3]");
    expect_run_error(sce, F, SH(4), NULL, I32, SH(4), NULL,
                     "logits must be 2-D, but got shape [4]");
    expect_run_error(sce, F, SH(4, 2), NULL, I32, SH(4, 1), NULL,
                     "labels must be 1-D, but got shape [4,1]");
    expect_run_error(sce, F, SH(2, 0), NULL, I32, SH(2), NULL,
                     "Must have at least one class, but got logits shape [2,0]");
}

/* Empty batches run and give empty results. */
static void test_empty(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, SH(-1, 4), "x");
    rill_output b = rill_placeholder(g, RILL_FLOAT, SH(4), "b");
    rill_output l = rill_placeholder(g, RILL_INT32, SH(-1), "l");
    rill_output ba = rill_bias_add(g, x, b, NULL);
    rill_output sm = rill_softmax(g, ba, NULL);
    rill_output loss = rill_sparse_softmax_cross_entropy_with_logits(g, l, sm, NULL);
    rill_output dba;
    rill_gradients(g, &loss, 1, &b, 1, NULL, &dba);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        rill_graph_free(g);
        return;
    }
    rill_tensor *feed[] = {make(RILL_FLOAT, SH(0, 4), NULL),
                           make(RILL_FLOAT, SH(4), (double[]){1, 2, 3, 4}),
                           make(RILL_INT32, SH(0), NULL)};
    rill_output phs[] = {x, b, l}, fetch[] = {loss, dba};
    rill_tensor *got[2] = {0};
    rill_session *sess = rill_session_new(g, NULL, NULL);
    if (CHECK_EQ_INT(run(sess, phs, feed, 3, fetch, got, 2, NULL, 0), RILL_OK)) {
        CHECK_EQ_INT(rill_tensor_num_elements(got[0]), 0);
        CHECK_EQ_INT(rill_tensor_num_elements(got[1]), 4);
        for (int k = 0; k < 4; k++) CHECK_NEAR(rill_tensor_get_double(got[1], k), 0, 0);
    }
    for (int k = 0; k < 2; k++) rill_tensor_free(got[k]);
    for (int k = 0; k < 3; k++) rill_tensor_free(feed[k]);
    rill_session_free(sess);
    rill_graph_free(g);
}

int main(void)
{
    test_cases();
    test_names_and_shapes();
    test_large();
    test_float_precision();
    test_special_values();
    test_build_errors();
    test_run_errors();
    test_empty();
    TEST_MAIN_END();
}
