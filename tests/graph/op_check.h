/* tests/graph/op_check.h - shared helpers for the op tests in tests/graph/.
 *
 * Header-only, included by one test file per program (after ../test.h, which it includes
 * itself). It provides:
 *   - a deterministic random source (oc_uniform), so every run checks the same numbers;
 *   - tensors built from double values in any numeric dtype (oc_tensor, oc_random);
 *   - running one fetch in a session (oc_run) and comparing a result with a double-precision
 *     reference at a tolerance that suits the dtype (oc_check_tensor), or, for sums of many
 *     products, one relative to the largest reference magnitude (oc_check_close);
 *   - reference broadcasting (oc_bcast_index), the numpy rule the binary ops follow;
 *   - the gradient checker (oc_grad_check): y = f(x...) with the xs as double placeholders,
 *     L = sum(w * y) with a fixed random w, then dL/dx from rill_gradients against central finite
 *     differences of L, element by element, all in one session.
 * Every failed check prints the case label after the harness's own line, so a failure in a
 * loop over dtypes and shapes says which case it was.
 */
#ifndef RILL_TESTS_GRAPH_OP_CHECK_H
#define RILL_TESTS_GRAPH_OP_CHECK_H

#include "../test.h"

#include <rill/rill.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* --- deterministic random numbers (splitmix64) --- */

static uint64_t oc__state = 0x243F6A8885A308D3ull;

static inline void oc_seed(uint64_t s)
{
    oc__state = s;
}

static inline uint64_t oc_next(void)
{
    uint64_t z = (oc__state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline double oc_uniform(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(oc_next() >> 11) * (1.0 / 9007199254740992.0));
}

/* --- dtypes --- */

static const rill_dtype oc_numeric[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_INT32, RILL_INT64};
#define OC_NNUMERIC 5

static inline bool oc_is_int(rill_dtype t)
{
    return t == RILL_INT32 || t == RILL_INT64;
}

/* The value v becomes when stored in dtype t (what a reference must start from). */
static inline double oc_round_to(rill_dtype t, double v)
{
    switch (t) {
    case RILL_FLOAT:
        return (float)v;
    case RILL_HALF:
        return rill_half_to_float(rill_half_from_float((float)v));
    case RILL_INT32:
        return (double)(int32_t)v;
    case RILL_INT64:
        return (double)(int64_t)v;
    case RILL_BOOL:
        return v != 0;
    default:
        return v;
    }
}

/* Relative tolerance of a result computed in dtype t (integers: exact). */
static inline double oc_tol(rill_dtype t)
{
    switch (t) {
    case RILL_FLOAT:
        return 2e-6;
    case RILL_DOUBLE:
        return 1e-12;
    case RILL_HALF:
        return 1e-2;
    default:
        return 0;
    }
}

/* --- tensors --- */

/* A tensor of dtype t and shape dims whose elements are v[i] converted to t. Caller frees. */
/* noinline: GCC 12 at -O3 misreads compound-literal arguments as uninitialised once inlined. */
__attribute__((noinline, unused)) static rill_tensor *oc_tensor(rill_dtype t, const int64_t *dims,
                                                                int rank, const double *v)
{
    rill_tensor *x = rill_tensor_new(t, dims, rank);
    if (!x) return NULL;
    int64_t n = rill_tensor_num_elements(x);
    void *d = rill_tensor_data(x);
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
        case RILL_BOOL:
            ((uint8_t *)d)[i] = v[i] != 0;
            break;
        default:
            break;
        }
    }
    return x;
}

/* Shapes in these tests have at most OC_MAX_DIMS dimensions; arrays of dims are that long. */
#define OC_MAX_DIMS RILL_MAX_DIMS

static inline int64_t oc_numel(const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank && i < OC_MAX_DIMS; i++) n *= dims[i];
    return n;
}

/* Fills v[0..n) with uniform values in [lo, hi), rounded to dtype t (integers: whole numbers in
 * [lo, hi]). */
static inline void oc_fill_random(rill_dtype t, double *v, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) {
        if (oc_is_int(t))
            v[i] = floor(oc_uniform(lo, hi + 1));
        else
            v[i] = oc_round_to(t, oc_uniform(lo, hi));
    }
}

/* --- running --- */

static inline rill_session *oc_session(rill_graph *g)
{
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  graph status: %s\n", rill_status_message(rill_graph_status(g)));
        return NULL;
    }
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    if (!CHECK(sess != NULL)) fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return sess;
}

/* Runs one fetch; returns the value (caller frees) or NULL after a failed check. */
static inline rill_tensor *oc_run(rill_session *sess, rill_output fetch, const rill_output *feeds,
                                  rill_tensor *const *vals, int nfeeds)
{
    if (!sess) return NULL;
    rill_status *s = rill_status_new();
    rill_tensor *out = NULL;
    rill_code c = rill_session_run(sess, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0, s);
    if (!CHECK_EQ_INT(c, RILL_OK)) fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
    rill_status_free(s);
    return c == RILL_OK ? out : NULL;
}

/* Runs targets; true on success. */
static inline bool oc_run_targets(rill_session *sess, rill_node *const *targets, int n)
{
    if (!sess) return false;
    rill_status *s = rill_status_new();
    rill_code c = rill_session_run_targets(sess, targets, n, s);
    if (!CHECK_EQ_INT(c, RILL_OK)) fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
    rill_status_free(s);
    return c == RILL_OK;
}

/* Builds a fresh session on g and evaluates out with no feeds (a one-shot evaluation). */
static inline rill_tensor *oc_eval(rill_graph *g, rill_output out)
{
    rill_session *sess = oc_session(g);
    rill_tensor *t = oc_run(sess, out, NULL, NULL, 0);
    rill_session_free(sess);
    return t;
}

/* Checks that t has dtype dt, shape dims and elements close to ref (relative tolerance of dt
 * plus a small absolute one; exact for integers). Frees nothing. */
static inline bool oc_check_tensor(const char *label, const rill_tensor *t, rill_dtype dt,
                                   const int64_t *dims, int rank, const double *ref)
{
    if (!CHECK(t != NULL)) {
        fprintf(stderr, "  case: %s\n", label);
        return false;
    }
    if (!CHECK_EQ_INT(rill_tensor_dtype(t), dt)) {
        fprintf(stderr, "  case: %s\n", label);
        return false;
    }
    bool shape_ok = CHECK_EQ_INT(rill_tensor_rank(t), rank);
    for (int i = 0; shape_ok && i < rank; i++)
        shape_ok = CHECK_EQ_INT(rill_tensor_dim(t, i), dims[i]);
    if (!shape_ok) {
        char b[96];
        fprintf(stderr, "  case: %s (got shape %s)\n", label,
                rill_shape_str(rill_tensor_shape(t), b, sizeof b));
        return false;
    }
    double rel = oc_tol(dt);
    double abs_tol = dt == RILL_HALF     ? 1e-3
                     : dt == RILL_FLOAT  ? 1e-6
                     : dt == RILL_DOUBLE ? 1e-12
                                         : 0;
    /* One check per tensor: the first mismatches are printed with their element index. */
    int64_t n = oc_numel(dims, rank);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double got = rill_tensor_get_double(t, i), tol = abs_tol + rel * fabs(ref[i]);
        if (got == ref[i] || fabs(got - ref[i]) <= tol) continue;
        if (bad++ < 3) {
            if (bad == 1) test__report(false, __FILE__, __LINE__, __func__);
            fprintf(stderr, "%s: element %lld: got %.9g, want %.9g (tol %g)\n", label, (long long)i,
                    got, ref[i], tol);
        }
    }
    if (bad == 0) return CHECK(bad == 0);
    fprintf(stderr, "  %d of %lld elements differ\n", bad, (long long)n);
    return false;
}

/* A new array of n uniform values in [lo, hi) rounded to dtype t; the caller frees it. */
static inline double *oc_randv(int64_t n, double lo, double hi, rill_dtype t)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = oc_round_to(t, oc_uniform(lo, hi));
    return v;
}

/* As oc_check_tensor, for float and double sums of many products (convolutions): the tolerance
 * is relative to the largest reference magnitude, since the sums cancel and an elementwise
 * relative bound would be meaningless near zero. */
static inline bool oc_check_close(const char *label, const rill_tensor *t, rill_dtype dt,
                                  const int64_t *dims, int rank, const double *ref)
{
    if (!CHECK(t != NULL) || !CHECK_EQ_INT(rill_tensor_dtype(t), dt) ||
        !CHECK_EQ_INT(rill_tensor_rank(t), rank)) {
        fprintf(stderr, "  case: %s\n", label);
        return false;
    }
    for (int i = 0; i < rank; i++)
        if (!CHECK_EQ_INT(rill_tensor_dim(t, i), dims[i])) {
            fprintf(stderr, "  case: %s (dim %d)\n", label, i);
            return false;
        }
    int64_t n = oc_numel(dims, rank);
    double scale = 1;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
    double tol = (dt == RILL_FLOAT ? 1e-5 : 1e-12) * scale;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double got = rill_tensor_get_double(t, i);
        if (fabs(got - ref[i]) <= tol) continue;
        if (bad++ < 3)
            fprintf(stderr, "%s: element %lld: got %.10g, want %.10g\n", label, (long long)i, got,
                    ref[i]);
    }
    if (!CHECK(bad == 0))
        fprintf(stderr, "  case: %s: %d of %lld differ\n", label, bad, (long long)n);
    return bad == 0;
}

/* An int32 Const vector of d[0..n): the size input of a backprop op. */
static inline rill_output oc_sizes_const(rill_graph *g, const int64_t *d, int n)
{
    int64_t len = n;
    rill_tensor *t = rill_tensor_new(RILL_INT32, &len, 1);
    for (int i = 0; i < n; i++) ((int32_t *)rill_tensor_data(t))[i] = (int32_t)d[i];
    rill_output o = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return o;
}

/* --- broadcasting reference --- */

/* numpy's broadcast of shapes a and b into out; false when incompatible. */
static inline bool oc_bcast_shape(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out,
                                  int *ro)
{
    int r = ra > rb ? ra : rb;
    if (r > OC_MAX_DIMS) return false;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out[i] = da == 1 ? db : da;
    }
    *ro = r;
    return true;
}

/* The flat index into an operand of shape (dims, rank) of output element `flat` of shape
 * (odims, orank), broadcast as numpy does. */
static inline int64_t oc_bcast_index(int64_t flat, const int64_t *odims, int orank,
                                     const int64_t *dims, int rank)
{
    int64_t idx = 0, stride = 1;
    for (int d = orank - 1; d >= 0; d--) {
        int64_t coord = flat % odims[d];
        flat /= odims[d];
        int k = d - (orank - rank);
        if (k >= 0) {
            if (dims[k] != 1) idx += coord * stride;
            stride *= dims[k];
        }
    }
    return idx;
}

/* --- gradient checking --- */

/* Builds y from the placeholders xs (double); returns {NULL, 0} on a build error. */
typedef rill_output (*oc_build_fn)(rill_graph *g, const rill_output *xs, void *ctx);

typedef struct oc_grad_opts {
    bool unknown_shapes; /* placeholders of unknown shape, fed at run time */
    double h;            /* finite-difference step (0: 1e-6) */
    double rtol, atol;   /* (0: 1e-6 and 1e-8) */
} oc_grad_opts;

/* Checks dL/dx_i for each of the nx inputs (values: double tensors, borrowed), where
 * L = sum(w * f(xs)) and w is a fixed random tensor of y's shape. Returns true when every
 * element matched. */
static inline bool oc_grad_check(const char *label, int nx, rill_tensor *const *values,
                                 oc_build_fn f, void *ctx, oc_grad_opts o)
{
    double h = o.h > 0 ? o.h : 1e-6;
    double rtol = o.rtol > 0 ? o.rtol : 1e-6, atol = o.atol > 0 ? o.atol : 1e-8;
    bool ok = true;
    rill_graph *g = rill_graph_new();
    rill_output xs[8], dx[8];
    rill_tensor *fed[9] = {0}, *grads[8] = {0}, *y = NULL, *w = NULL;
    rill_session *sess = NULL;
    if (nx > 8) abort();
    for (int i = 0; i < nx; i++) {
        fed[i] = rill_tensor_copy(values[i]);
        rill_shape s = o.unknown_shapes ? rill_shape_unknown() : *rill_tensor_shape(values[i]);
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        xs[i] = rill_placeholder(g, RILL_DOUBLE, s, nm);
    }
    rill_output yo = f(g, xs, ctx);
    if (!CHECK(rill_graph_ok(g) && yo.node)) {
        fprintf(stderr, "  case: %s: build failed: %s\n", label,
                rill_status_message(rill_graph_status(g)));
        ok = false;
        goto done;
    }
    if (!CHECK_EQ_INT(rill_output_dtype(yo), RILL_DOUBLE)) {
        ok = false;
        goto done;
    }
    /* The weight: a placeholder of unknown shape when y's static shape is not known, so the
     * checker never needs y's shape at build time. */
    rill_shape ys = rill_output_shape(yo);
    bool w_fed = !rill_shape_is_fully_defined(&ys);
    rill_output wo = {NULL, 0};
    if (!w_fed) {
        int64_t n = rill_shape_num_elements(&ys);
        double *wv = malloc((size_t)(n ? n : 1) * sizeof *wv);
        for (int64_t i = 0; i < n; i++) wv[i] = oc_uniform(0.5, 1.5) * (oc_next() & 1 ? 1 : -1);
        w = oc_tensor(RILL_DOUBLE, ys.dims, ys.rank, wv);
        free(wv);
        wo = rill_const(g, w, "w");
    } else {
        wo = rill_placeholder(g, RILL_DOUBLE, rill_shape_unknown(), "w");
    }
    rill_output loss = rill_sum(g, rill_mul(g, wo, yo, NULL), NULL, -1, false, "loss");
    if (!rill_gradients(g, &loss, 1, xs, nx, NULL, dx)) {
        CHECK(false);
        fprintf(stderr, "  case: %s: gradients failed: %s\n", label,
                rill_status_message(rill_graph_status(g)));
        ok = false;
        goto done;
    }
    sess = oc_session(g);
    if (!sess) {
        ok = false;
        goto done;
    }
    int nfeed = nx;
    rill_output feeds[9];
    for (int i = 0; i < nx; i++) feeds[i] = xs[i];
    if (w_fed) {
        y = oc_run(sess, yo, feeds, fed, nx);
        if (!y) {
            ok = false;
            goto done;
        }
        const rill_shape *rs = rill_tensor_shape(y);
        int64_t n = rill_tensor_num_elements(y);
        double *wv = malloc((size_t)(n ? n : 1) * sizeof *wv);
        for (int64_t i = 0; i < n; i++) wv[i] = oc_uniform(0.5, 1.5) * (oc_next() & 1 ? 1 : -1);
        w = oc_tensor(RILL_DOUBLE, rs->dims, rs->rank, wv);
        free(wv);
        feeds[nfeed] = wo;
        fed[nfeed++] = w;
    }
    for (int i = 0; i < nx && ok; i++) {
        char lab[256];
        snprintf(lab, sizeof lab, "%s, d/dx%d", label, i);
        if (!CHECK(dx[i].node != NULL)) {
            fprintf(stderr, "  case: %s: no gradient\n", lab);
            ok = false;
            break;
        }
        grads[i] = oc_run(sess, dx[i], feeds, fed, nfeed);
        if (!grads[i]) {
            fprintf(stderr, "  case: %s\n", lab);
            ok = false;
            break;
        }
        const rill_shape *xsh = rill_tensor_shape(values[i]);
        if (!CHECK(rill_shape_equal(rill_tensor_shape(grads[i]), xsh))) {
            char a[96], b[96];
            fprintf(stderr, "  case: %s: gradient shape %s, x shape %s\n", lab,
                    rill_shape_str(rill_tensor_shape(grads[i]), a, sizeof a),
                    rill_shape_str(xsh, b, sizeof b));
            ok = false;
            break;
        }
        if (!CHECK_EQ_INT(rill_tensor_dtype(grads[i]), RILL_DOUBLE)) {
            ok = false;
            break;
        }
        double *xd = rill_tensor_data(fed[i]);
        int64_t n = rill_tensor_num_elements(fed[i]);
        int bad = 0;
        for (int64_t k = 0; k < n; k++) {
            double x0 = xd[k], lp, lm;
            xd[k] = x0 + h;
            rill_tensor *t = oc_run(sess, loss, feeds, fed, nfeed);
            lp = t ? rill_tensor_get_double(t, 0) : NAN;
            rill_tensor_free(t);
            xd[k] = x0 - h;
            t = oc_run(sess, loss, feeds, fed, nfeed);
            lm = t ? rill_tensor_get_double(t, 0) : NAN;
            rill_tensor_free(t);
            xd[k] = x0;
            double num = (lp - lm) / (2 * h);
            double sym = rill_tensor_get_double(grads[i], k), tol = atol + rtol * fabs(num);
            if (fabs(sym - num) <= tol) continue;
            if (bad++ < 3) {
                if (bad == 1) test__report(false, __FILE__, __LINE__, __func__);
                fprintf(stderr, "%s: element %lld: symbolic %.12g, numeric %.12g (tol %g)\n", lab,
                        (long long)k, sym, num, tol);
            }
        }
        /* One check per gradient tensor. */
        if (bad == 0) {
            CHECK(bad == 0);
        } else {
            fprintf(stderr, "  %d of %lld elements differ\n", bad, (long long)n);
            ok = false;
        }
    }
done:
    rill_session_free(sess);
    for (int i = 0; i < 8; i++) rill_tensor_free(grads[i]);
    for (int i = 0; i < nx; i++) rill_tensor_free(fed[i]);
    rill_tensor_free(w);
    rill_tensor_free(y);
    rill_graph_free(g);
    return ok;
}

/* A double tensor of the given shape with uniform values in [lo, hi). Caller frees. */
static inline rill_tensor *oc_random(const int64_t *dims, int rank, double lo, double hi)
{
    int64_t n = oc_numel(dims, rank);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = oc_uniform(lo, hi);
    rill_tensor *t = oc_tensor(RILL_DOUBLE, dims, rank, v);
    free(v);
    return t;
}

/* Checks that building went wrong with code and a message containing text. */
static inline bool oc_check_build_error(const char *label, rill_graph *g, rill_code code,
                                        const char *text)
{
    const rill_status *s = rill_graph_status(g);
    bool ok = CHECK_EQ_INT(rill_status_code(s), code);
    ok = CHECK_STR_CONTAINS(rill_status_message(s), text) && ok;
    if (!ok) fprintf(stderr, "  case: %s\n", label);
    return ok;
}

#endif
