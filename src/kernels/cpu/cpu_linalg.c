/* cpu_linalg.c - CPU kernels of the batched matrix ops (src/graph/ops_linalg.c) for half, float
 * and double. Each inner matrix is read into a double work buffer, computed there and stored back
 * in the input's dtype, so every dtype gets double precision arithmetic:
 *   BatchMatMul      the plain triple loop per batch entry (adjoints read transposed)
 *   MatrixBandPart   a copy with the entries outside the band zeroed
 *   MatrixInverse, MatrixSolve, MatrixDeterminant
 *                    LU with partial pivoting (an exactly zero pivot: TF's "not invertible";
 *                    the determinant is then 0)
 *   Cholesky         the column-by-column algorithm, reading A's lower triangle; a matrix that
 *                    is not positive definite gives NaN where the square root fails, as TF's
 *   MatrixTriangularSolve  substitution over the matrix's lower (or upper) triangle
 *   CholeskyGrad     TF's formula: Phi(L^T dL), where Phi halves the diagonal and keeps the
 *                    lower triangle, then L^-T . L^-1 around it, symmetrised.
 * The shapes are the graph layer's rules; the kernels check the real ones again (a shape learnt
 * at run time) with the same texts. */
#include "cpu_kernels.h"
#include "cpu_linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mat_dims {
    int64_t batch, r, c; /* batch entries of r x c matrices */
} mat_dims;

static bool dims_of(rill__kctx *ctx, const rill_tensor *x, bool square, mat_dims *d)
{
    const char *op = ctx->node->op->name;
    int k = x->shape.rank;
    if (k < 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: input must be at least rank 2, got %d", op,
                        k);
        return false;
    }
    d->r = x->shape.dims[k - 2];
    d->c = x->shape.dims[k - 1];
    if (square && d->r != d->c) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: Input matrix must be square, got [%lld,%lld]", op, (long long)d->r,
                        (long long)d->c);
        return false;
    }
    d->batch = d->r * d->c != 0 ? x->numel / (d->r * d->c) : 0;
    return true;
}

static bool same_batch(rill__kctx *ctx, const rill_tensor *a, const rill_tensor *b)
{
    bool ok = a->shape.rank == b->shape.rank;
    for (int i = 0; ok && i < a->shape.rank - 2; i++) ok = a->shape.dims[i] == b->shape.dims[i];
    if (!ok) {
        char x[96], y[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: the batch dims of %s and %s differ",
                        ctx->node->op->name, rill_shape_str(&a->shape, x, sizeof x),
                        rill_shape_str(&b->shape, y, sizeof y));
    }
    return ok;
}

/* Reads matrix i (r x c elements) of t into w / stores w as matrix i of t. */
static void load(const rill_tensor *t, int64_t i, int64_t size, double *w)
{
    size_t es = rill_dtype_size(t->dtype);
    rill__convert(RILL_DOUBLE, w, t->dtype, (const char *)t->buf->data + (size_t)(i * size) * es,
                  size);
}

static void store(rill_tensor *t, int64_t i, int64_t size, const double *w)
{
    size_t es = rill_dtype_size(t->dtype);
    rill__convert(t->dtype, (char *)t->buf->data + (size_t)(i * size) * es, RILL_DOUBLE, w, size);
}

static double *work(int64_t n)
{
    double *w = rill__malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    RILL_CHECK_ALLOC(w);
    return w;
}

/* --- BatchMatMul --- */

static void bmm_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    bool ax = rill__attr_bool(ctx->node, "adj_x", false),
         ay = rill__attr_bool(ctx->node, "adj_y", false);
    mat_dims dx, dy;
    if (!dims_of(ctx, x, false, &dx) || !dims_of(ctx, y, false, &dy) || !same_batch(ctx, x, y))
        return;
    int64_t m = ax ? dx.c : dx.r, k = ax ? dx.r : dx.c, kb = ay ? dy.c : dy.r, n = ay ? dy.r : dy.c;
    if (k != kb) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "In[0] mismatch In[1] shape: %lld vs. %lld: [%lld,%lld] [%lld,%lld] %d %d",
                        (long long)k, (long long)kb, (long long)dx.r, (long long)dx.c,
                        (long long)dy.r, (long long)dy.c, ax, ay);
        return;
    }
    rill_shape os = x->shape;
    os.dims[os.rank - 2] = m;
    os.dims[os.rank - 1] = n;
    rill_tensor *z = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!z) return;
    int64_t batch = m * n != 0 ? z->numel / (m * n) : 0;
    double *a = work(m * k), *b = work(k * n), *c = work(m * n);
    for (int64_t i = 0; i < batch; i++) {
        load(x, i, m * k, a);
        load(y, i, k * n, b);
        for (int64_t r = 0; r < m; r++)
            for (int64_t q = 0; q < n; q++) {
                double s = 0;
                for (int64_t j = 0; j < k; j++)
                    s += (ax ? a[j * m + r] : a[r * k + j]) * (ay ? b[q * k + j] : b[j * n + q]);
                c[r * n + q] = s;
            }
        store(z, i, m * n, c);
    }
    rill__free(a);
    rill__free(b);
    rill__free(c);
}

/* --- MatrixBandPart --- */

bool rill__band_part_check(rill__kctx *ctx, const rill_tensor *x, int64_t *rows, int64_t *cols,
                           int64_t *lo, int64_t *up)
{
    mat_dims d;
    if (!dims_of(ctx, x, false, &d)) return false;
    *rows = d.r;
    *cols = d.c;
    *lo = rill__attr_int(ctx->node, "num_lower", -1);
    *up = rill__attr_int(ctx->node, "num_upper", -1);
    if (*lo > d.r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "num_lower must be negative or less or equal to number of rows (%lld) "
                        "got: %lld",
                        (long long)d.r, (long long)*lo);
        return false;
    }
    if (*up > d.c) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "num_upper must be negative or less or equal to number of columns (%lld) "
                        "got: %lld",
                        (long long)d.c, (long long)*up);
        return false;
    }
    return true;
}

static void band_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    mat_dims d;
    int64_t lo, up;
    if (!rill__band_part_check(ctx, x, &d.r, &d.c, &lo, &up)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = i % d.c, r = (i / d.c) % d.r;
        bool keep = (lo < 0 || r - q <= lo) && (up < 0 || q - r <= up);
        char *dst = (char *)y->buf->data + (size_t)i * es;
        if (keep)
            memcpy(dst, (const char *)x->buf->data + (size_t)i * es, es);
        else
            memset(dst, 0, es);
    }
}

/* --- LU with partial pivoting --- */

/* Factors the n x n matrix a in place (unit-lower L below the diagonal, U on and above), perm
 * the row order; returns the permutation's sign, 0 when a pivot is exactly zero. */
static int lu(double *a, int64_t n, int64_t *perm)
{
    int sign = 1;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
        if (a[p * n + k] == 0 || isnan(a[p * n + k])) return 0;
        if (p != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            int64_t t = perm[k];
            perm[k] = perm[p];
            perm[p] = t;
            sign = -sign;
        }
        for (int64_t i = k + 1; i < n; i++) {
            double f = a[i * n + k] /= a[k * n + k];
            for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= f * a[k * n + j];
        }
    }
    return sign;
}

/* Solves (LU) x = b[perm] for the k columns of b (n x k), into x. */
static void lu_solve(const double *a, int64_t n, const int64_t *perm, const double *b, int64_t k,
                     double *x)
{
    for (int64_t q = 0; q < k; q++) {
        for (int64_t i = 0; i < n; i++) {
            double s = b[perm[i] * k + q];
            for (int64_t j = 0; j < i; j++) s -= a[i * n + j] * x[j * k + q];
            x[i * k + q] = s;
        }
        for (int64_t i = n - 1; i >= 0; i--) {
            double s = x[i * k + q];
            for (int64_t j = i + 1; j < n; j++) s -= a[i * n + j] * x[j * k + q];
            x[i * k + q] = s / a[i * n + i];
        }
    }
}

static void transpose_sq(double *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) {
            double t = a[i * n + j];
            a[i * n + j] = a[j * n + i];
            a[j * n + i] = t;
        }
}

static void inverse_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    mat_dims d;
    if (!dims_of(ctx, x, true, &d)) return;
    bool adj = rill__attr_bool(ctx->node, "adjoint", false);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    int64_t n = d.r;
    double *a = work(n * n), *eye = work(n * n), *inv = work(n * n);
    int64_t *perm = rill__malloc((size_t)(n ? n : 1) * sizeof *perm);
    RILL_CHECK_ALLOC(perm);
    for (int64_t i = 0; i < n * n; i++) eye[i] = i % (n + 1) == 0;
    for (int64_t i = 0; i < d.batch; i++) {
        load(x, i, n * n, a);
        if (adj) transpose_sq(a, n);
        if (!lu(a, n, perm)) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input is not invertible.");
            break;
        }
        lu_solve(a, n, perm, eye, n, inv);
        store(y, i, n * n, inv);
    }
    rill__free(perm);
    rill__free(a);
    rill__free(eye);
    rill__free(inv);
}

static void determinant_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    mat_dims d;
    if (!dims_of(ctx, x, true, &d)) return;
    rill_shape os = x->shape;
    os.rank -= 2;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y) return;
    int64_t n = d.r;
    double *a = work(n * n);
    int64_t *perm = rill__malloc((size_t)(n ? n : 1) * sizeof *perm);
    RILL_CHECK_ALLOC(perm);
    for (int64_t i = 0; i < y->numel; i++) {
        double det = 1;
        if (n) {
            load(x, i, n * n, a);
            int sign = lu(a, n, perm);
            det = sign;
            for (int64_t k = 0; sign && k < n; k++) det *= a[k * n + k];
        }
        store(y, i, 1, &det);
    }
    rill__free(perm);
    rill__free(a);
}

static void solve_kernel(rill__kctx *ctx)
{
    const rill_tensor *m = ctx->inputs[0], *b = ctx->inputs[1];
    mat_dims dm, db;
    if (!dims_of(ctx, m, true, &dm) || !dims_of(ctx, b, false, &db) || !same_batch(ctx, m, b))
        return;
    if (db.r != dm.r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Input matrix and right-hand side must have the same number of rows: %lld "
                        "vs. %lld",
                        (long long)dm.r, (long long)db.r);
        return;
    }
    bool adj = rill__attr_bool(ctx->node, "adjoint", false);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, m->dtype, &b->shape);
    if (!y) return;
    int64_t n = dm.r, k = db.c;
    double *a = work(n * n), *rhs = work(n * k), *x = work(n * k);
    int64_t *perm = rill__malloc((size_t)(n ? n : 1) * sizeof *perm);
    RILL_CHECK_ALLOC(perm);
    for (int64_t i = 0; i < dm.batch && n * k != 0; i++) {
        load(m, i, n * n, a);
        load(b, i, n * k, rhs);
        if (adj) transpose_sq(a, n);
        if (!lu(a, n, perm)) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input matrix is not invertible.");
            break;
        }
        lu_solve(a, n, perm, rhs, k, x);
        store(y, i, n * k, x);
    }
    rill__free(perm);
    rill__free(a);
    rill__free(rhs);
    rill__free(x);
}

/* --- Cholesky and the triangular solve --- */

static void cholesky(const double *a, int64_t n, double *l)
{
    memset(l, 0, (size_t)(n * n) * sizeof *l);
    for (int64_t j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int64_t k = 0; k < j; k++) s -= l[j * n + k] * l[j * n + k];
        l[j * n + j] = sqrt(s); /* NaN when not positive definite, as TF's */
        for (int64_t i = j + 1; i < n; i++) {
            double t = a[i * n + j];
            for (int64_t k = 0; k < j; k++) t -= l[i * n + k] * l[j * n + k];
            l[i * n + j] = t / l[j * n + j];
        }
    }
}

static void cholesky_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    mat_dims d;
    if (!dims_of(ctx, x, true, &d)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    int64_t n = d.r;
    double *a = work(n * n), *l = work(n * n);
    for (int64_t i = 0; i < d.batch; i++) {
        load(x, i, n * n, a);
        cholesky(a, n, l);
        store(y, i, n * n, l);
    }
    rill__free(a);
    rill__free(l);
}

/* Solves op(T) x = b over the k columns of b, T the lower (or upper) triangle of a, op(T) = T or
 * T^T; into x. */
static void tri_solve(const double *a, int64_t n, bool lower, bool adj, const double *b, int64_t k,
                      double *x)
{
    /* op(T) is lower triangular when lower != adj: forward substitution, else backward */
    bool fwd = lower != adj;
    for (int64_t q = 0; q < k; q++)
        for (int64_t s = 0; s < n; s++) {
            int64_t i = fwd ? s : n - 1 - s;
            double v = b[i * k + q];
            for (int64_t t = 0; t < s; t++) {
                int64_t j = fwd ? t : n - 1 - t;
                double e = adj ? a[j * n + i] : a[i * n + j];
                v -= e * x[j * k + q];
            }
            x[i * k + q] = v / a[i * n + i];
        }
}

static void tri_solve_kernel(rill__kctx *ctx)
{
    const rill_tensor *m = ctx->inputs[0], *b = ctx->inputs[1];
    mat_dims dm, db;
    if (!dims_of(ctx, m, true, &dm) || !dims_of(ctx, b, false, &db) || !same_batch(ctx, m, b))
        return;
    if (db.r != dm.r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Input matrix and right-hand side must have the same number of rows: %lld "
                        "vs. %lld",
                        (long long)dm.r, (long long)db.r);
        return;
    }
    bool adj = rill__attr_bool(ctx->node, "adjoint", false),
         lower = rill__attr_bool(ctx->node, "lower", true);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, m->dtype, &b->shape);
    if (!y) return;
    int64_t n = dm.r, k = db.c;
    double *a = work(n * n), *rhs = work(n * k), *x = work(n * k);
    for (int64_t i = 0; i < dm.batch && n * k != 0; i++) {
        load(m, i, n * n, a);
        load(b, i, n * k, rhs);
        tri_solve(a, n, lower, adj, rhs, k, x);
        store(y, i, n * k, x);
    }
    rill__free(a);
    rill__free(rhs);
    rill__free(x);
}

static void cholesky_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *lt = ctx->inputs[0], *gt = ctx->inputs[1];
    mat_dims dl, dg;
    if (!dims_of(ctx, lt, true, &dl) || !dims_of(ctx, gt, true, &dg) || !same_batch(ctx, lt, gt))
        return;
    if (dl.r != dg.r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "CholeskyGrad: l and grad differ in size");
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, lt->dtype, &lt->shape);
    if (!y) return;
    int64_t n = dl.r, nn = n * n;
    double *l = work(nn), *g = work(nn), *eye = work(nn), *li = work(nn), *mid = work(nn),
           *t = work(nn), *r = work(nn);
    for (int64_t i = 0; i < nn; i++) eye[i] = i % (n + 1) == 0;
    for (int64_t b = 0; b < dl.batch; b++) {
        load(lt, b, nn, l);
        load(gt, b, nn, g);
        tri_solve(l, n, true, false, eye, n, li); /* L^-1 */
        for (int64_t i = 0; i < n; i++)           /* mid = Phi(L^T g) */
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                if (j <= i)
                    for (int64_t k = 0; k < n; k++) s += l[k * n + i] * g[k * n + j];
                mid[i * n + j] = i == j ? 0.5 * s : s;
            }
        for (int64_t i = 0; i < n; i++) /* t = L^-T mid */
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t k = 0; k < n; k++) s += li[k * n + i] * mid[k * n + j];
                t[i * n + j] = s;
            }
        for (int64_t i = 0; i < n; i++) /* r = t L^-1 */
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t k = 0; k < n; k++) s += t[i * n + k] * li[k * n + j];
                r[i * n + j] = s;
            }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) t[i * n + j] = 0.5 * (r[i * n + j] + r[j * n + i]);
        store(y, b, nn, t);
    }
    rill__free(l);
    rill__free(g);
    rill__free(eye);
    rill__free(li);
    rill__free(mid);
    rill__free(t);
    rill__free(r);
}

#define LK(op_, fn_, t_) {.op = op_, .device_type = "CPU", .dtype = t_, .fn = fn_},
#define LKS(op_, fn_)    LK(op_, fn_, RILL_FLOAT) LK(op_, fn_, RILL_DOUBLE) LK(op_, fn_, RILL_HALF)
#ifdef RILL_HAVE_OPENCL
/* host-only: on an OpenCL device the same kernels run with every tensor in host memory */
#define LKC(op_, fn_, t_)                                                                          \
    {.op = op_,                                                                                    \
     .device_type = "OPENCL",                                                                      \
     .dtype = t_,                                                                                  \
     .fn = fn_,                                                                                    \
     .host_memory_inputs = ~0u,                                                                    \
     .host_memory_outputs = ~0u},
#define LKALL(op_, fn_)                                                                            \
    LKS(op_, fn_) LKC(op_, fn_, RILL_FLOAT) LKC(op_, fn_, RILL_DOUBLE) LKC(op_, fn_, RILL_HALF)
#else
#define LKALL(op_, fn_) LKS(op_, fn_)
#endif
// clang-format off
const rill__kernel_def rill__cpu_kernels_linalg[] = {
    LKALL("BatchMatMul", bmm_kernel)
    LKS("MatrixBandPart", band_kernel) /* OpenCL: opencl/cl_permute.c */
    LKALL("MatrixInverse", inverse_kernel)
    LKALL("MatrixDeterminant", determinant_kernel)
    LKALL("MatrixSolve", solve_kernel)
    LKALL("Cholesky", cholesky_kernel)
    LKALL("MatrixTriangularSolve", tri_solve_kernel)
    LKALL("CholeskyGrad", cholesky_grad_kernel)
    {0},
};
// clang-format on
