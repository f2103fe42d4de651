/* test_linalg_ops.c - the batched matrix ops of src/graph/ops_linalg.c: BatchMatMul (the four
 * adjoint cases) and MatrixBandPart against references computed here, MatrixInverse,
 * MatrixSolve, MatrixTriangularSolve and Cholesky by what they solve (A * inv(A) = I, A X = B,
 * L L^T = A), MatrixDeterminant against the cofactor expansion; every gradient against finite
 * differences (Cholesky's of a symmetrised input, as TF's tests), and TF's texts for non-square
 * and singular input. */
#include "op_check.h"

#include <string.h>

typedef struct lop {
    const char *op;
    const char *b1, *b2; /* bool attrs set to v1, v2 (NULL: none) */
    bool v1, v2;
    int64_t lo, up; /* MatrixBandPart */
    bool sym;       /* input 0 symmetrised first: (x + x^T) / 2 */
} lop;

static rill_output build(rill_graph *g, const rill_output *xs, void *ctx)
{
    const lop *c = ctx;
    rill_output x0 = xs[0];
    if (c->sym) {
        int64_t perm[3] = {0, 2, 1};
        rill_op_builder *t = rill_op_builder_new(g, "Transpose", NULL);
        rill_op_builder_add_input(t, x0);
        rill_op_builder_set_ints(t, "perm", perm, 3);
        rill_output xt = {rill_op_builder_finish(t), 0};
        x0 = rill_mul(g, rill_add(g, x0, xt, NULL), rill_const_scalar(g, RILL_DOUBLE, 0.5, NULL),
                      NULL);
    }
    rill_op_builder *b = rill_op_builder_new(g, c->op, NULL);
    rill_op_builder_add_input(b, x0);
    bool two = strcmp(c->op, "BatchMatMul") == 0 || strstr(c->op, "Solve") != NULL;
    if (two) rill_op_builder_add_input(b, xs[1]);
    if (c->b1) rill_op_builder_set_bool(b, c->b1, c->v1);
    if (c->b2) rill_op_builder_set_bool(b, c->b2, c->v2);
    if (strcmp(c->op, "MatrixBandPart") == 0) {
        rill_op_builder_set_int(b, "num_lower", c->lo);
        rill_op_builder_set_int(b, "num_upper", c->up);
    }
    return (rill_output){rill_op_builder_finish(b), 0};
}

static rill_tensor *eval(const lop *c, rill_tensor *const *in, int n)
{
    rill_graph *g = rill_graph_new();
    rill_output xs[2];
    for (int i = 0; i < n; i++) xs[i] = rill_const(g, in[i], "x");
    rill_tensor *t = oc_eval(g, build(g, xs, (void *)c));
    rill_graph_free(g);
    return t;
}

/* A batch of 2 well-conditioned n x n matrices: random plus shift on the diagonal. */
static rill_tensor *conditioned(int64_t n, double shift)
{
    int64_t d[3] = {2, n, n};
    rill_tensor *t = oc_random(d, 3, -1, 1);
    double *v = rill_tensor_data(t);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < n; i++) v[(b * n + i) * n + i] += shift;
    return t;
}

static double at(const rill_tensor *t, int64_t b, int64_t i, int64_t j)
{
    const rill_shape *s = rill_tensor_shape(t);
    int64_t r = s->dims[s->rank - 2], c = s->dims[s->rank - 1];
    return ((const double *)rill_tensor_data(t))[(b * r + i) * c + j];
}

static void test_batch_matmul(void)
{
    for (int ax = 0; ax < 2; ax++)
        for (int ay = 0; ay < 2; ay++) {
            int64_t m = 3, k = 4, n = 2;
            int64_t dx[3] = {2, ax ? k : m, ax ? m : k}, dy[3] = {2, ay ? n : k, ay ? k : n};
            rill_tensor *in[2] = {oc_random(dx, 3, -1, 1), oc_random(dy, 3, -1, 1)};
            lop c = {"BatchMatMul", "adj_x", "adj_y", ax, ay, 0, 0, false};
            rill_tensor *z = eval(&c, in, 2);
            double ref[2 * 3 * 2];
            for (int64_t b = 0; b < 2; b++)
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double s = 0;
                        for (int64_t q = 0; q < k; q++)
                            s += (ax ? at(in[0], b, q, i) : at(in[0], b, i, q)) *
                                 (ay ? at(in[1], b, j, q) : at(in[1], b, q, j));
                        ref[(b * m + i) * n + j] = s;
                    }
            char lab[48];
            snprintf(lab, sizeof lab, "BatchMatMul adj %d %d", ax, ay);
            oc_check_tensor(lab, z, RILL_DOUBLE, (int64_t[]){2, m, n}, 3, ref);
            rill_tensor_free(z);
            oc_grad_check(lab, 2, in, build, &c, (oc_grad_opts){0});
            rill_tensor_free(in[0]);
            rill_tensor_free(in[1]);
        }
    /* float: the same values, rounded */
    int64_t d[3] = {1, 2, 2};
    rill_tensor *a = oc_tensor(RILL_FLOAT, d, 3, (double[]){1, 2, 3, 4});
    rill_tensor *in[2] = {a, a};
    lop c = {"BatchMatMul", NULL, NULL, 0, 0, 0, 0, false};
    rill_tensor *z = eval(&c, in, 2);
    oc_check_tensor("BatchMatMul float", z, RILL_FLOAT, d, 3, (double[]){7, 10, 15, 22});
    rill_tensor_free(z);
    rill_tensor_free(a);
}

static void test_band_part(void)
{
    int64_t d[3] = {2, 3, 4};
    rill_tensor *x = oc_random(d, 3, -1, 1);
    const int64_t bands[][2] = {{0, 0}, {1, 0}, {-1, 1}, {0, -1}, {-1, -1}};
    for (size_t i = 0; i < 5; i++) {
        lop c = {"MatrixBandPart", NULL, NULL, 0, 0, bands[i][0], bands[i][1], false};
        rill_tensor *y = eval(&c, &x, 1);
        double ref[24];
        for (int64_t b = 0; b < 2; b++)
            for (int64_t r = 0; r < 3; r++)
                for (int64_t q = 0; q < 4; q++) {
                    bool keep = (c.lo < 0 || r - q <= c.lo) && (c.up < 0 || q - r <= c.up);
                    ref[(b * 3 + r) * 4 + q] = keep ? at(x, b, r, q) : 0;
                }
        char lab[48];
        snprintf(lab, sizeof lab, "MatrixBandPart %lld %lld", (long long)c.lo, (long long)c.up);
        oc_check_tensor(lab, y, RILL_DOUBLE, d, 3, ref);
        rill_tensor_free(y);
        oc_grad_check(lab, 1, &x, build, &c, (oc_grad_opts){0});
    }
    rill_tensor_free(x);
}

/* Checks that prod(op(a), x) = rhs for each batch entry (a square, op: adjoint or not). */
static void check_solves(const char *lab, const rill_tensor *a, bool adj, const rill_tensor *x,
                         const rill_tensor *rhs, int64_t n, int64_t k)
{
    double got[64], want[64];
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < k; j++) {
                double s = 0;
                for (int64_t q = 0; q < n; q++)
                    s += (adj ? at(a, b, q, i) : at(a, b, i, q)) * at(x, b, q, j);
                got[(b * n + i) * k + j] = s;
                want[(b * n + i) * k + j] = rhs ? at(rhs, b, i, j) : (double)(i == j);
            }
    int64_t d[3] = {2, n, k};
    rill_tensor *t = oc_tensor(RILL_DOUBLE, d, 3, got);
    oc_check_tensor(lab, t, RILL_DOUBLE, d, 3, want);
    rill_tensor_free(t);
}

static void test_inverse_solve_det(void)
{
    rill_tensor *a = conditioned(3, 3);
    for (int adj = 0; adj < 2; adj++) {
        lop c = {"MatrixInverse", "adjoint", NULL, adj, 0, 0, 0, false};
        rill_tensor *y = eval(&c, &a, 1);
        check_solves(adj ? "MatrixInverse adjoint" : "MatrixInverse", a, adj, y, NULL, 3, 3);
        rill_tensor_free(y);
        oc_grad_check("MatrixInverse", 1, &a, build, &c, (oc_grad_opts){0});
    }
    int64_t bd[3] = {2, 3, 2};
    rill_tensor *in[2] = {a, oc_random(bd, 3, -1, 1)};
    for (int adj = 0; adj < 2; adj++) {
        lop c = {"MatrixSolve", "adjoint", NULL, adj, 0, 0, 0, false};
        rill_tensor *x = eval(&c, in, 2);
        check_solves("MatrixSolve", a, adj, x, in[1], 3, 2);
        rill_tensor_free(x);
        oc_grad_check("MatrixSolve", 2, in, build, &c, (oc_grad_opts){0});
    }
    for (int lower = 0; lower < 2; lower++)
        for (int adj = 0; adj < 2; adj++) {
            lop c = {"MatrixTriangularSolve", "lower", "adjoint", lower, adj, 0, 0, false};
            rill_tensor *x = eval(&c, in, 2);
            /* the triangle the op reads, as a full matrix */
            rill_tensor *tri = rill_tensor_copy(a);
            double *tv = rill_tensor_data(tri);
            for (int64_t b = 0; b < 2; b++)
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t j = 0; j < 3; j++)
                        if (lower ? j > i : j < i) tv[(b * 3 + i) * 3 + j] = 0;
            char lab[64];
            snprintf(lab, sizeof lab, "MatrixTriangularSolve lower %d adjoint %d", lower, adj);
            check_solves(lab, tri, adj, x, in[1], 3, 2);
            rill_tensor_free(tri);
            rill_tensor_free(x);
            oc_grad_check(lab, 2, in, build, &c, (oc_grad_opts){0});
        }
    lop c = {"MatrixDeterminant", NULL, NULL, 0, 0, 0, 0, false};
    rill_tensor *det = eval(&c, &a, 1);
    double ref[2];
    for (int64_t b = 0; b < 2; b++)
        ref[b] =
            at(a, b, 0, 0) * (at(a, b, 1, 1) * at(a, b, 2, 2) - at(a, b, 1, 2) * at(a, b, 2, 1)) -
            at(a, b, 0, 1) * (at(a, b, 1, 0) * at(a, b, 2, 2) - at(a, b, 1, 2) * at(a, b, 2, 0)) +
            at(a, b, 0, 2) * (at(a, b, 1, 0) * at(a, b, 2, 1) - at(a, b, 1, 1) * at(a, b, 2, 0));
    oc_check_tensor("MatrixDeterminant", det, RILL_DOUBLE, (int64_t[]){2}, 1, ref);
    rill_tensor_free(det);
    oc_grad_check("MatrixDeterminant", 1, &a, build, &c, (oc_grad_opts){0});
    rill_tensor_free(in[1]);
    rill_tensor_free(a);
}

static void test_cholesky(void)
{
    /* A = M M^T + n I: positive definite */
    int64_t n = 4, d[3] = {2, 4, 4};
    rill_tensor *m = oc_random(d, 3, -1, 1);
    double av[32];
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = i == j ? (double)n : 0;
                for (int64_t q = 0; q < n; q++) s += at(m, b, i, q) * at(m, b, j, q);
                av[(b * n + i) * n + j] = s;
            }
    rill_tensor *a = oc_tensor(RILL_DOUBLE, d, 3, av);
    lop c = {"Cholesky", NULL, NULL, 0, 0, 0, 0, false};
    rill_tensor *l = eval(&c, &a, 1);
    double llt[32], upper[32], zero[32] = {0};
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t q = 0; q < n; q++) s += at(l, b, i, q) * at(l, b, j, q);
                llt[(b * n + i) * n + j] = s;
                upper[(b * n + i) * n + j] = j > i ? at(l, b, i, j) : 0;
            }
    rill_tensor *t = oc_tensor(RILL_DOUBLE, d, 3, llt), *u = oc_tensor(RILL_DOUBLE, d, 3, upper);
    oc_check_tensor("Cholesky L L^T", t, RILL_DOUBLE, d, 3, av);
    oc_check_tensor("Cholesky lower", u, RILL_DOUBLE, d, 3, zero);
    rill_tensor_free(t);
    rill_tensor_free(u);
    rill_tensor_free(l);
    lop cs = {"Cholesky", NULL, NULL, 0, 0, 0, 0, true};
    oc_grad_check("Cholesky", 1, &a, build, &cs, (oc_grad_opts){0});
    rill_tensor_free(a);
    rill_tensor_free(m);
}

static void test_errors(void)
{
    int64_t d[2] = {2, 3};
    rill_tensor *x = oc_random(d, 2, -1, 1);
    static const char *const sq[] = {"MatrixInverse", "MatrixDeterminant", "Cholesky"};
    for (int i = 0; i < 3; i++) {
        rill_graph *g = rill_graph_new();
        lop c = {sq[i], NULL, NULL, 0, 0, 0, 0, false};
        CHECK(build(g, (rill_output[]){rill_const(g, x, "x")}, &c).node == NULL);
        oc_check_build_error(sq[i], g, RILL_INVALID_ARGUMENT,
                             "Dimensions must be equal, but are 2 and 3");
        rill_graph_free(g);
    }
    rill_graph *g = rill_graph_new();
    rill_tensor *v = oc_random((int64_t[]){3}, 1, -1, 1);
    lop c = {"MatrixInverse", NULL, NULL, 0, 0, 0, 0, false};
    CHECK(build(g, (rill_output[]){rill_const(g, v, "v")}, &c).node == NULL);
    oc_check_build_error("rank 1", g, RILL_INVALID_ARGUMENT,
                         "Shape must be at least rank 2 but is rank 1");
    rill_graph_free(g);
    rill_tensor_free(v);
    /* singular: TF's run-time texts */
    int64_t d2[3] = {1, 2, 2};
    rill_tensor *s = oc_tensor(RILL_DOUBLE, d2, 3, (double[]){1, 2, 2, 4});
    const struct {
        const char *op, *text;
    } sing[] = {{"MatrixInverse", "Input is not invertible."},
                {"MatrixSolve", "Input matrix is not invertible."}};
    for (int i = 0; i < 2; i++) {
        g = rill_graph_new();
        lop c2 = {sing[i].op, NULL, NULL, 0, 0, 0, 0, false};
        rill_output xs[2] = {rill_const(g, s, "s"), rill_const(g, s, "b")};
        rill_output y = build(g, xs, &c2);
        rill_session *sess = oc_session(g);
        rill_tensor *out = NULL;
        rill_status *st = rill_status_new();
        rill_session_run(sess, NULL, NULL, 0, &y, &out, 1, NULL, 0, st);
        CHECK_EQ_INT(rill_status_code(st), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(st), sing[i].text);
        rill_tensor_free(out);
        rill_status_free(st);
        rill_session_free(sess);
        rill_graph_free(g);
    }
    lop cd = {"MatrixDeterminant", NULL, NULL, 0, 0, 0, 0, false};
    rill_tensor *det = eval(&cd, &s, 1);
    oc_check_tensor("singular determinant", det, RILL_DOUBLE, (int64_t[]){1}, 1, (double[]){0});
    rill_tensor_free(det);
    rill_tensor_free(s);
    rill_tensor_free(x);
    /* int32 is not among the dtypes */
    g = rill_graph_new();
    rill_tensor *ti = oc_tensor(RILL_INT32, d2, 3, (double[]){1, 0, 0, 1});
    CHECK(build(g, (rill_output[]){rill_const(g, ti, "i")}, &c).node == NULL);
    oc_check_build_error("int32", g, RILL_INVALID_ARGUMENT, "DataType int32 not in list");
    rill_tensor_free(ti);
    rill_graph_free(g);
}

int main(void)
{
    oc_seed(29);
    test_batch_matmul();
    test_band_part();
    test_inverse_solve_det();
    test_cholesky();
    test_errors();
    TEST_MAIN_END();
}
