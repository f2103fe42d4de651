/* cpu_nn.c - CPU kernels for the neural-network ops: BiasAdd, BiasAddGrad, Relu, ReluGrad,
 * Sigmoid, SigmoidGrad, Tanh, TanhGrad, Softmax and the two softmax cross-entropies.
 *
 * Every kernel has the same three steps. It validates its inputs (build-time shapes may have
 * been unknown), allocates its outputs with rill__kctx_alloc_output (recycled across steps) and
 * runs its loop, written once per element type, float and double; "the loops" below says how
 * they are kept vectorised (these ops sit on the training fast path: BiasAdd, Relu and their
 * gradients run on every layer of every step). Half tensors are widened into float scratch,
 * computed as float and narrowed back. Tensors big enough to pay for the hand-off are split
 * into element, row or column ranges over the intra-op pool. */
#include "../kernel.h"

#include <math.h>
#include <string.h>

/* Elements per shard below which splitting across threads costs more than it saves. */
#define NN_GRAIN (1 << 16)

/* What a loop works on: raw element pointers of compute type t (float for half tensors). */
typedef struct nn_job {
    rill_dtype t; /* RILL_FLOAT or RILL_DOUBLE */
    const void *in[2];
    void *out[2];
    int64_t rows, cols; /* row-structured ops view their tensors as [rows, cols] */
    const void *labels; /* sparse cross-entropy: int32 or int64 class per row */
    bool labels64;
    /* Half: float scratch standing in for half tensors, and the half outputs to narrow into. */
    float *scratch[4];
    int nscratch;
    rill_tensor *half_out[2];
} nn_job;

static float *scratch_new(nn_job *j, int64_t n)
{
    float *f = rill__malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    RILL_CHECK_ALLOC(f);
    j->scratch[j->nscratch++] = f;
    return f;
}

/* Points j at the element data of ins and outs; half tensors go through float scratch. */
static void job_init(nn_job *j, const rill_tensor *const *ins, int nin, rill_tensor *const *outs,
                     int nout)
{
    j->t = ins[0]->dtype == RILL_DOUBLE ? RILL_DOUBLE : RILL_FLOAT;
    for (int i = 0; i < nin; i++) {
        if (ins[i]->dtype == RILL_HALF) {
            float *f = scratch_new(j, ins[i]->numel);
            rill__convert(RILL_FLOAT, f, RILL_HALF, ins[i]->buf->data, ins[i]->numel);
            j->in[i] = f;
        } else {
            j->in[i] = ins[i]->buf->data;
        }
    }
    for (int i = 0; i < nout; i++) {
        if (outs[i]->dtype == RILL_HALF) {
            j->out[i] = scratch_new(j, outs[i]->numel);
            j->half_out[i] = outs[i];
        } else {
            j->out[i] = outs[i]->buf->data;
        }
    }
}

/* Narrows half outputs and frees the scratch. */
static void job_finish(nn_job *j)
{
    for (int i = 0; i < 2; i++)
        if (j->half_out[i])
            rill__convert(RILL_HALF, j->half_out[i]->buf->data, RILL_FLOAT, j->out[i],
                          j->half_out[i]->numel);
    for (int i = 0; i < j->nscratch; i++) rill__free(j->scratch[i]);
    j->nscratch = 0;
}

/* Runs fn over items [0, n), each about cost elements of work, sharded over the intra-op pool
 * when there is enough of it. */
static void job_run(rill__kctx *ctx, nn_job *j, int64_t n, int64_t cost, rill__range_fn fn)
{
    int64_t min_per_shard = NN_GRAIN / (cost > 0 ? cost : 1);
    rill__parallel_for(ctx->pool, n, min_per_shard > 0 ? min_per_shard : 1, fn, j);
}

/* --- the loops ---
 *
 * GCC's -O2 (the Release build) vectorises only under its very-cheap cost model, which leaves
 * loops of unknown length scalar, and under -ftrapping-math it will not if-convert a select
 * that feeds arithmetic. So: the simple loops run in blocks of 8 (NN_EACH) over restrict
 * pointer parameters, which it does vectorise; reductions keep 8 partial results, one per lane
 * (float addition is not associative, so GCC may not reorder one running sum); and float exp,
 * sigmoid and tanh are written with GCC vector types, 8 lanes at a time, as polynomials rather
 * than libm calls. Each loop exists for float (suffix f32) and double (f64); double calls libm. */

/* for (i = B; i < E; i++) BODY, in blocks of 8. */
#define NN_EACH(B, E, BODY)                                                                        \
    do {                                                                                           \
        int64_t i_ = (B), e_ = (E);                                                                \
        for (; i_ + 8 <= e_; i_ += 8) {                                                            \
            _Pragma("GCC unroll 8") for (int64_t i = i_; i < i_ + 8; i++) BODY;                    \
        }                                                                                          \
        for (int64_t i = i_; i < e_; i++) BODY;                                                    \
    } while (0)

/* 8 floats (or int32s) as one value. They never cross a function boundary by value: that
 * would change the ABI of builds without AVX (GCC's -Wpsabi); helpers take arrays. */
typedef float nn_f8 __attribute__((vector_size(32)));
typedef int32_t nn_i8 __attribute__((vector_size(32)));
#define NN_F8(c) ((nn_f8){(c), (c), (c), (c), (c), (c), (c), (c)})
/* Lanes of a where mask m (a comparison's result) is set, of b elsewhere. */
#define NN_SELECT(m, a, b) ((nn_f8)(((nn_i8)(a) & (m)) | ((nn_i8)(b) & ~(m))))

/* y = e^x, 8 lanes (y may be x): Cephes' expf, about 1 ulp. x = n ln2 + r with |r| <= ln2/2,
 * e^r by a polynomial, 2^n built from exponent bits in two halves so that n = 128 still works.
 * Below -87.34 it gives 0, above 88.72 infinity; NaN stays NaN. */
static inline void nn_exp8(float *y, const float *x)
{
    const nn_f8 lo = NN_F8(-87.3365402f), hi = NN_F8(88.7228394f);
    nn_f8 v;
    memcpy(&v, x, sizeof v);
    nn_f8 xc = NN_SELECT(v > lo, v, lo); /* NaN becomes lo here and is put back at the end */
    xc = NN_SELECT(xc < hi, xc, hi);
    nn_f8 n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(x / ln2): 1.5 * 2^23 */
    nn_f8 r = xc - n * 0.693359375f + n * 2.12194440e-4f;     /* ln2 in two parts */
    nn_f8 p = NN_F8(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    nn_f8 e = p * r * r + r + 1.0f;
    nn_i8 ni = __builtin_convertvector(n, nn_i8), n1 = ni >> 1, n2 = ni - n1;
    e = e * (nn_f8)((n1 + 127) << 23) * (nn_f8)((n2 + 127) << 23);
    e = NN_SELECT(v < lo, NN_F8(0.0f), e);
    e = NN_SELECT(v > hi, NN_F8(INFINITY), e);
    e = NN_SELECT(v == v, e, v);
    memcpy(y, &e, sizeof e);
}

/* y = 1 / (1 + e^-x), 8 lanes. */
static inline void nn_sigmoid8(float *y, const float *x)
{
    nn_f8 v;
    float t[8];
    memcpy(&v, x, sizeof v);
    v = -v;
    memcpy(t, &v, sizeof v);
    nn_exp8(t, t);
    memcpy(&v, t, sizeof v);
    v = 1.0f / (1.0f + v);
    memcpy(y, &v, sizeof v);
}

/* y = tanh x, 8 lanes: Cephes' tanhf. An odd polynomial below |x| = 0.625 (where
 * 1 - 2/(e^2|x| + 1) would cancel), that formula above; both computed, one selected. */
static inline void nn_tanh8(float *y, const float *x)
{
    nn_f8 v, e;
    float t[8];
    memcpy(&v, x, sizeof v);
    nn_i8 neg = v < 0.0f;
    nn_f8 ax = NN_SELECT(neg, -v, v), z = v * v;
    nn_f8 small = -5.70498872745e-3f * z + 2.06390887954e-2f;
    small = small * z - 5.37397155531e-2f;
    small = small * z + 1.33314422036e-1f;
    small = small * z - 3.33332819422e-1f;
    small = small * z * v + v;
    e = 2.0f * ax;
    memcpy(t, &e, sizeof e);
    nn_exp8(t, t);
    memcpy(&e, t, sizeof e);
    nn_f8 big = 1.0f - 2.0f / (e + 1.0f);
    big = NN_SELECT(neg, -big, big);
    v = NN_SELECT(ax < 0.625f, small, big);
    memcpy(y, &v, sizeof v);
}

/* y[i] = f(x[i]) for i < n with an 8-lane f; the last partial block goes through a buffer. */
static inline void nn_map8(void (*f)(float *, const float *), float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) f(y + i, x + i);
    if (i < n) {
        /* Element loops, not memcpy: a call per row is the whole cost on rows of 10. */
        float buf[8] = {0};
        int rest = (int)(n - i);
        for (int l = 0; l < rest; l++) buf[l] = x[i + l];
        f(buf, buf);
        for (int l = 0; l < rest; l++) y[i + l] = buf[l];
    }
}

static void sigmoid_f32(float *y, const float *x, int64_t b, int64_t e)
{
    if (e > b) nn_map8(nn_sigmoid8, y + b, x + b, e - b);
}

static void tanh_f32(float *y, const float *x, int64_t b, int64_t e)
{
    if (e > b) nn_map8(nn_tanh8, y + b, x + b, e - b);
}

static void exp_inplace_f32(float *y, int64_t n)
{
    nn_map8(nn_exp8, y, y, n);
}

static void sigmoid_f64(double *restrict y, const double *restrict x, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++) y[i] = 1 / (1 + exp(-x[i]));
}

static void tanh_f64(double *restrict y, const double *restrict x, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++) y[i] = tanh(x[i]);
}

static void exp_inplace_f64(double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = exp(y[i]);
}

#define NN_DEFINE_LOOPS(T, S)                                                                      \
    static void relu_##S(T *restrict y, const T *restrict x, int64_t b, int64_t e)                 \
    {                                                                                              \
        NN_EACH(b, e, y[i] = x[i] > 0 ? x[i] : (T)0);                                              \
    }                                                                                              \
    /* f: the features, or Relu's output (positive at the same places). g[i] is loaded before      \
     * the select: a load on one branch only keeps GCC from vectorising. */                        \
    static void relu_grad_##S(T *restrict d, const T *restrict g, const T *restrict f, int64_t b,  \
                              int64_t e)                                                           \
    {                                                                                              \
        NN_EACH(b, e, {                                                                            \
            T gi = g[i];                                                                           \
            d[i] = f[i] > 0 ? gi : (T)0;                                                           \
        });                                                                                        \
    }                                                                                              \
    static void sigmoid_grad_##S(T *restrict d, const T *restrict y, const T *restrict dy,         \
                                 int64_t b, int64_t e)                                             \
    {                                                                                              \
        NN_EACH(b, e, d[i] = dy[i] * y[i] * ((T)1 - y[i]));                                        \
    }                                                                                              \
    static void tanh_grad_##S(T *restrict d, const T *restrict y, const T *restrict dy, int64_t b, \
                              int64_t e)                                                           \
    {                                                                                              \
        NN_EACH(b, e, d[i] = dy[i] * ((T)1 - y[i] * y[i]));                                        \
    }                                                                                              \
    static void add_##S(T *restrict y, const T *restrict x, const T *restrict v, int64_t n)        \
    {                                                                                              \
        NN_EACH(0, n, y[i] = x[i] + v[i]);                                                         \
    }                                                                                              \
    static void accumulate_##S(T *restrict acc, const T *restrict x, int64_t n)                    \
    {                                                                                              \
        NN_EACH(0, n, acc[i] += x[i]);                                                             \
    }                                                                                              \
    static void scale_##S(T *restrict y, T s, int64_t n)                                           \
    {                                                                                              \
        NN_EACH(0, n, y[i] *= s);                                                                  \
    }                                                                                              \
    static void shift_##S(T *restrict y, const T *restrict x, T s, int64_t n)                      \
    {                                                                                              \
        NN_EACH(0, n, y[i] = x[i] - s);                                                            \
    }                                                                                              \
    /* The largest of x[0..n), n >= 1 (NaN is skipped unless first; then e^(x - max) is NaN        \
     * anyway, so NaN logits still give NaN). */                                                   \
    static T row_max_##S(const T *restrict x, int64_t n)                                           \
    {                                                                                              \
        T lane[8], m = x[0];                                                                       \
        int64_t i = 0;                                                                             \
        for (int l = 0; l < 8; l++) lane[l] = x[0];                                                \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int l = 0; l < 8; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];         \
        for (; i < n; i++) m = x[i] > m ? x[i] : m;                                                \
        for (int l = 0; l < 8; l++) m = lane[l] > m ? lane[l] : m;                                 \
        return m;                                                                                  \
    }                                                                                              \
    static T row_sum_##S(const T *restrict x, int64_t n)                                           \
    {                                                                                              \
        T lane[8] = {0}, sum = 0;                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int l = 0; l < 8; l++) lane[l] += x[i + l];                                       \
        for (; i < n; i++) sum += x[i];                                                            \
        for (int l = 0; l < 8; l++) sum += lane[l];                                                \
        return sum;                                                                                \
    }                                                                                              \
    /* For each of rows <= NN_ROW_CHUNK rows of n >= 1: y = e^(x - m) with m the row's largest,    \
     * max[r] = m, sum[r] = the row's sum of y. No term exceeds 1, so nothing overflows. The       \
     * exp runs once over the whole block, so short rows (10 classes) still fill the lanes. */     \
    static void exp_shifted_rows_##S(T *restrict y, const T *restrict x, int64_t rows, int64_t n,  \
                                     T *restrict max, T *restrict sum)                             \
    {                                                                                              \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            max[r] = row_max_##S(x + r * n, n);                                                    \
            shift_##S(y + r * n, x + r * n, max[r], n);                                            \
        }                                                                                          \
        const int64_t total = rows * n;                                                            \
        exp_inplace_##S(y, total);                                                                 \
        for (int64_t r = 0; r < rows; r++) sum[r] = row_sum_##S(y + r * n, n);                     \
    }
NN_DEFINE_LOOPS(float, f32)
NN_DEFINE_LOOPS(double, f64)

#define LOG_T(x) _Generic((x), float : logf, default : log)(x)

/* The f32 or f64 instance of loop F, chosen by the type of pointer p. */
#define NN_T(F, p) _Generic((p), float * : F##_f32, double * : F##_f64)

/* Defines NAME(void *job, int64_t b, int64_t e), a range function for rill__parallel_for, that
 * runs BODY over [b, e) with T the job's element type and j the job. */
#define NN_RANGE(NAME, ...)                                                                        \
    static void NAME##_f32(const nn_job *j, int64_t b, int64_t e)                                  \
    {                                                                                              \
        typedef float T;                                                                           \
        __VA_ARGS__                                                                                \
    }                                                                                              \
    static void NAME##_f64(const nn_job *j, int64_t b, int64_t e)                                  \
    {                                                                                              \
        typedef double T;                                                                          \
        __VA_ARGS__                                                                                \
    }                                                                                              \
    static void NAME(void *arg, int64_t b, int64_t e)                                              \
    {                                                                                              \
        const nn_job *j = arg;                                                                     \
        if (j->t == RILL_FLOAT)                                                                    \
            NAME##_f32(j, b, e);                                                                   \
        else                                                                                       \
            NAME##_f64(j, b, e);                                                                   \
    }

/* Elementwise: out[0] = F(in[0]) or F(in[0], in[1]), over elements. */
#define NN_UNARY_RANGE(F)                                                                          \
    NN_RANGE(F##_range, {                                                                          \
        T *y = j->out[0];                                                                          \
        NN_T(F, y)(y, j->in[0], b, e);                                                             \
    })
#define NN_BINARY_RANGE(F)                                                                         \
    NN_RANGE(F##_range, {                                                                          \
        T *y = j->out[0];                                                                          \
        NN_T(F, y)(y, j->in[0], j->in[1], b, e);                                                   \
    })
NN_UNARY_RANGE(relu)
NN_BINARY_RANGE(relu_grad) /* in[0] = gradients, in[1] = features */
NN_UNARY_RANGE(sigmoid)
NN_BINARY_RANGE(sigmoid_grad) /* in[0] = y, in[1] = dy */
NN_UNARY_RANGE(tanh)
NN_BINARY_RANGE(tanh_grad)

/* Over rows: in[0] = value [rows, cols], in[1] = bias [cols]. */
NN_RANGE(bias_add_range, {
    const int64_t c = j->cols;
    for (int64_t r = b; r < e; r++) {
        T *y = (T *)j->out[0] + r * c;
        NN_T(add, y)(y, (const T *)j->in[0] + r * c, j->in[1], c);
    }
})

/* Over columns [b, e): out[k] = the sum over rows of in[0][r, k], adding one row at a time (a
 * vectorised pass over the column range each). */
NN_RANGE(bias_add_grad_range, {
    const int64_t c = j->cols;
    T *out = (T *)j->out[0] + b;
    if (e <= b) return;
    memset(out, 0, (size_t)(e - b) * sizeof(T));
    for (int64_t r = 0; r < j->rows; r++)
        NN_T(accumulate, out)(out, (const T *)j->in[0] + r * c + b, e - b);
})

/* Rows of softmax-like ops are taken NN_ROW_CHUNK at a time (their maxima and sums live on
 * the stack). */
#define NN_ROW_CHUNK 64

/* Over rows: softmax of each. */
NN_RANGE(softmax_range, {
    const int64_t c = j->cols;
    T max[NN_ROW_CHUNK], sum[NN_ROW_CHUNK];
    for (int64_t r0 = b; r0 < e; r0 += NN_ROW_CHUNK) {
        int64_t nr = e - r0 < NN_ROW_CHUNK ? e - r0 : NN_ROW_CHUNK;
        T *y = (T *)j->out[0] + r0 * c;
        NN_T(exp_shifted_rows, y)(y, (const T *)j->in[0] + r0 * c, nr, c, max, sum);
        for (int64_t r = 0; r < nr; r++) NN_T(scale, y)(y + r * c, (T)1 / sum[r], c);
    }
})

/* Over rows: in[0] = logits, in[1] = labels (probabilities); out[0] = loss [rows],
 * out[1] = backprop. loss = sum_k labels_k * (logsumexp - x_k), backprop = softmax - labels. */
NN_RANGE(softmax_ce_range, {
    const int64_t c = j->cols;
    T max[NN_ROW_CHUNK], sum[NN_ROW_CHUNK];
    for (int64_t r0 = b; r0 < e; r0 += NN_ROW_CHUNK) {
        int64_t nr = e - r0 < NN_ROW_CHUNK ? e - r0 : NN_ROW_CHUNK;
        T *bp0 = (T *)j->out[1] + r0 * c;
        NN_T(exp_shifted_rows, bp0)(bp0, (const T *)j->in[0] + r0 * c, nr, c, max, sum);
        for (int64_t r = 0; r < nr; r++) {
            const T *x = (const T *)j->in[0] + (r0 + r) * c,
                    *p = (const T *)j->in[1] + (r0 + r) * c;
            T *bp = bp0 + r * c, log_sum = LOG_T(sum[r]), inv = (T)1 / sum[r], loss = 0;
            for (int64_t k = 0; k < c; k++) {
                loss += p[k] * (log_sum - (x[k] - max[r]));
                bp[k] = bp[k] * inv - p[k];
            }
            ((T *)j->out[0])[r0 + r] = loss;
        }
    }
})

/* Over rows: in[0] = logits, labels checked to lie in [0, cols). loss = logsumexp - x_label,
 * backprop = softmax - onehot(label). */
NN_RANGE(sparse_softmax_ce_range, {
    const int64_t c = j->cols;
    T max[NN_ROW_CHUNK], sum[NN_ROW_CHUNK];
    for (int64_t r0 = b; r0 < e; r0 += NN_ROW_CHUNK) {
        int64_t nr = e - r0 < NN_ROW_CHUNK ? e - r0 : NN_ROW_CHUNK;
        T *bp0 = (T *)j->out[1] + r0 * c;
        NN_T(exp_shifted_rows, bp0)(bp0, (const T *)j->in[0] + r0 * c, nr, c, max, sum);
        for (int64_t r = 0; r < nr; r++) {
            const T *x = (const T *)j->in[0] + (r0 + r) * c;
            T *bp = bp0 + r * c;
            int64_t label = j->labels64 ? ((const int64_t *)j->labels)[r0 + r]
                                        : ((const int32_t *)j->labels)[r0 + r];
            NN_T(scale, bp)(bp, (T)1 / sum[r], c);
            bp[label] -= 1;
            ((T *)j->out[0])[r0 + r] = LOG_T(sum[r]) - (x[label] - max[r]);
        }
    }
})

/* --- kernels --- */

static bool is_float_dtype(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF;
}

/* Input i must be a float type equal to input 0's. */
static bool check_dtype(rill__kctx *ctx, int i)
{
    rill_dtype t0 = ctx->inputs[0]->dtype, t = ctx->inputs[i]->dtype;
    if (is_float_dtype(t0) && t == t0) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: input %d has type %s, expected %s",
                    ctx->node->op->name, i, rill_dtype_name(t),
                    rill_dtype_name(is_float_dtype(t0) ? t0 : RILL_FLOAT));
    return false;
}

/* The elements before the last axis. */
static int64_t outer_rows(const rill_tensor *t)
{
    int64_t c = t->shape.dims[t->shape.rank - 1];
    return c > 0 ? t->numel / c : 0;
}

static void unary(rill__kctx *ctx, rill__range_fn fn)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_dtype(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    nn_job j = {0};
    job_init(&j, &x, 1, &y, 1);
    job_run(ctx, &j, x->numel, 1, fn);
    job_finish(&j);
}

/* Two inputs of one shape (gradient ops). */
static void binary(rill__kctx *ctx, rill__range_fn fn)
{
    const rill_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (!check_dtype(ctx, 1)) return;
    if (!rill_shape_equal(&a->shape, &b->shape)) {
        char sa[96], sb[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Inputs to operation %s of type %s must have the same size and shape.  "
                        "Input 0: %s != input 1: %s",
                        ctx->node->name, ctx->node->op->name,
                        rill_shape_str(&a->shape, sa, sizeof sa),
                        rill_shape_str(&b->shape, sb, sizeof sb));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, a->dtype, &a->shape);
    const rill_tensor *ins[] = {a, b};
    nn_job j = {0};
    job_init(&j, ins, 2, &y, 1);
    job_run(ctx, &j, a->numel, 1, fn);
    job_finish(&j);
}

static void relu_kernel(rill__kctx *ctx)
{
    unary(ctx, relu_range);
}

static void relu_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, relu_grad_range);
}

static void sigmoid_kernel(rill__kctx *ctx)
{
    unary(ctx, sigmoid_range);
}

static void sigmoid_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, sigmoid_grad_range);
}

static void tanh_kernel(rill__kctx *ctx)
{
    unary(ctx, tanh_range);
}

static void tanh_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, tanh_grad_range);
}

static void bias_add_kernel(rill__kctx *ctx)
{
    const rill_tensor *v = ctx->inputs[0], *bias = ctx->inputs[1];
    char sv[96], sb[96];
    if (!check_dtype(ctx, 1)) return;
    if (v->shape.rank < 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                        rill_shape_str(&v->shape, sv, sizeof sv));
        return;
    }
    if (bias->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Biases must be 1D: %s",
                        rill_shape_str(&bias->shape, sb, sizeof sb));
        return;
    }
    int64_t c = v->shape.dims[v->shape.rank - 1];
    if (bias->shape.dims[0] != c) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Must provide as many biases as the last dimension of the input tensor: "
                        "%s vs. %s",
                        rill_shape_str(&bias->shape, sb, sizeof sb),
                        rill_shape_str(&v->shape, sv, sizeof sv));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, v->dtype, &v->shape);
    const rill_tensor *ins[] = {v, bias};
    nn_job j = {.rows = outer_rows(v), .cols = c};
    job_init(&j, ins, 2, &y, 1);
    job_run(ctx, &j, j.rows, c, bias_add_range);
    job_finish(&j);
}

static void bias_add_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *g = ctx->inputs[0];
    if (!check_dtype(ctx, 0)) return;
    if (g->shape.rank < 2) {
        char sg[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                        rill_shape_str(&g->shape, sg, sizeof sg));
        return;
    }
    int64_t c = g->shape.dims[g->shape.rank - 1];
    rill_shape os = rill_shape_vector(c);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, g->dtype, &os);
    nn_job j = {.rows = outer_rows(g), .cols = c};
    job_init(&j, &g, 1, &out, 1);
    /* Shards over columns; a shard should still hold a few cache lines of each row. */
    int64_t min_cols = NN_GRAIN / (j.rows > 0 ? j.rows : 1);
    rill__parallel_for(ctx->pool, c, min_cols > 64 ? min_cols : 64, bias_add_grad_range, &j);
    job_finish(&j);
}

static void softmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_dtype(ctx, 0)) return;
    if (x->shape.rank < 1) {
        char sx[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must have >= 1 dimension, got %s",
                        rill_shape_str(&x->shape, sx, sizeof sx));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    nn_job j = {.rows = outer_rows(x), .cols = x->shape.dims[x->shape.rank - 1]};
    job_init(&j, &x, 1, &y, 1);
    job_run(ctx, &j, j.rows, j.cols * 4, softmax_range);
    job_finish(&j);
}

/* Allocates the loss [rows] and backprop [rows, cols] outputs. */
static void alloc_ce_outputs(rill__kctx *ctx, const rill_tensor *logits, rill_tensor **outs)
{
    rill_shape ls = rill_shape_vector(logits->shape.dims[0]);
    outs[0] = rill__kctx_alloc_output(ctx, 0, logits->dtype, &ls);
    outs[1] = rill__kctx_alloc_output(ctx, 1, logits->dtype, &logits->shape);
}

static bool check_classes(rill__kctx *ctx, const rill_tensor *logits)
{
    if (logits->shape.dims[1] > 0 || logits->shape.dims[0] == 0) return true;
    char sl[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "Must have at least one class, but got logits shape %s",
                    rill_shape_str(&logits->shape, sl, sizeof sl));
    return false;
}

static void softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    char sl[96], sp[96];
    if (!check_dtype(ctx, 1)) return;
    if (logits->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must be 2-dimensional, got %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl));
        return;
    }
    if (!rill_shape_equal(&logits->shape, &labels->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "logits and labels must be same size: logits_size=%s labels_size=%s",
                        rill_shape_str(&logits->shape, sl, sizeof sl),
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return;
    }
    if (!check_classes(ctx, logits)) return;
    rill_tensor *outs[2];
    alloc_ce_outputs(ctx, logits, outs);
    const rill_tensor *ins[] = {logits, labels};
    nn_job j = {.rows = logits->shape.dims[0], .cols = logits->shape.dims[1]};
    job_init(&j, ins, 2, outs, 2);
    job_run(ctx, &j, j.rows, j.cols * 6, softmax_ce_range);
    job_finish(&j);
}

static void sparse_softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    if (!check_dtype(ctx, 0)) return;
    if (labels->dtype != RILL_INT32 && labels->dtype != RILL_INT64) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "labels must be int32 or int64, got %s",
                        rill_dtype_name(labels->dtype));
        return;
    }
    if (!rill__check_sparse_xent_shapes(ctx, logits, labels)) return;
    if (!check_classes(ctx, logits) || !rill__check_labels(ctx, labels, logits->shape.dims[1]))
        return;
    rill_tensor *outs[2];
    alloc_ce_outputs(ctx, logits, outs);
    nn_job j = {.rows = logits->shape.dims[0],
                .cols = logits->shape.dims[1],
                .labels = labels->buf->data,
                .labels64 = labels->dtype == RILL_INT64};
    job_init(&j, &logits, 1, outs, 2);
    job_run(ctx, &j, j.rows, j.cols * 4, sparse_softmax_ce_range);
    job_finish(&j);
}

/* Each op registered for float, double and half (half computes in float). */
#define NN_K(OP, FN, T)                                                                            \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = T, .fn = FN                                       \
    }
#define NN_KERNEL(OP, FN)                                                                          \
    NN_K(OP, FN, RILL_FLOAT), NN_K(OP, FN, RILL_DOUBLE), NN_K(OP, FN, RILL_HALF)

const rill__kernel_def rill__cpu_kernels_nn[] = {
    NN_KERNEL("BiasAdd", bias_add_kernel),
    NN_KERNEL("BiasAddGrad", bias_add_grad_kernel),
    NN_KERNEL("Relu", relu_kernel),
    NN_KERNEL("ReluGrad", relu_grad_kernel),
    NN_KERNEL("Sigmoid", sigmoid_kernel),
    NN_KERNEL("SigmoidGrad", sigmoid_grad_kernel),
    NN_KERNEL("Tanh", tanh_kernel),
    NN_KERNEL("TanhGrad", tanh_grad_kernel),
    NN_KERNEL("Softmax", softmax_kernel),
    NN_KERNEL("SoftmaxCrossEntropyWithLogits", softmax_ce_kernel),
    NN_KERNEL("SparseSoftmaxCrossEntropyWithLogits", sparse_softmax_ce_kernel),
    {0},
};
