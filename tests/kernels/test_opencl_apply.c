/* test_opencl_apply.c - the OpenCL kernels of the dense optimizer updates (src/kernels/opencl/
 * cl_apply.c) against the CPU's (cpu_apply.c): every op, float and double, a few shapes, the
 * variable and every slot compared after the update; half on OpenCL against the CPU's float
 * update of the same values; the run-time shape error. */
#include "backend_ops.h"

static double bound(rill_dtype t)
{
    return t == RILL_DOUBLE ? 1e-24 : t == RILL_FLOAT ? 1e-11 : 1e-5;
}

static rill_output var_node(rill_graph *g, const char *name, rill_dtype t, rill_shape s)
{
    rill__attr a[] = {RILL__A_TYPE("dtype", t), RILL__A_SHAPE("shape", s)};
    return (rill_output){rill__node_create(g, "VariableV2", name, NULL, 0, a, 2), 0};
}

static rill_tensor *twin(const rill_tensor *x, rill_dtype t)
{
    int64_t n = x->numel;
    double *v = calloc((size_t)(n + 1), sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rill_tensor_get_double(x, i);
    rill_tensor *y = bo_tensor(t, x->shape.dims, x->shape.rank, v);
    free(v);
    return y;
}

typedef struct op_spec {
    const char *op;
    int n;
    uint32_t refs;
    /* per input: 's' scalar (value), 'v' like var in [lo, hi) */
    const char *kinds;
    double lo[9], hi[9];
} op_spec;

static const op_spec specs[] = {
    /* var, ms, mom, lr, rho, momentum, epsilon, grad */
    {"ApplyRMSProp",
     8,
     0x7,
     "vvvssssv",
     {-1, 0.5, -0.1, 0.05, 0.9, 0.5, 1e-6, -1},
     {1, 2, 0.1, 0, 0, 0, 0, 1}},
    /* var, mg, ms, mom, lr, rho, momentum, epsilon, grad */
    {"ApplyCenteredRMSProp",
     9,
     0xF,
     "vvvvssssv",
     {-1, -0.5, 1, -0.1, 0.05, 0.9, 0.3, 1e-6, -1},
     {1, 0.5, 2, 0.1, 0, 0, 0, 0, 1}},
    /* var, accum, accum_update, lr, rho, epsilon, grad */
    {"ApplyAdadelta", 7, 0x7, "vvvsssv", {-1, 0, 0, 1, 0.95, 1e-6, -1}, {1, 1, 1, 0, 0, 0, 1}},
    /* var, accum, linear, grad, lr, l1, l2, lr_power */
    {"ApplyFtrl",
     8,
     0x7,
     "vvvvssss",
     {-1, 0.1, -1, -1, 0.3, 0.01, 0.02, -0.5},
     {1, 1, 1, 1, 0, 0, 0, 0}},
    {"ApplyFtrl",
     8,
     0x7,
     "vvvvssss",
     {-1, 0.1, -1, -1, 0.3, 0.01, 0.02, -0.7},
     {1, 1, 1, 1, 0, 0, 0, 0}},
    /* var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power */
    {"ApplyFtrlV2",
     9,
     0x7,
     "vvvvsssss",
     {-1, 0.1, -1, -1, 0.3, 0.01, 0.02, 0.1, -0.5},
     {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    /* var, accum, lr, l1, l2, grad */
    {"ApplyProximalAdagrad", 6, 0x3, "vvsssv", {-1, 0.1, 0.3, 0.2, 0.1, -1}, {1, 1, 0, 0, 0, 1}},
    {"ApplyProximalAdagrad", 6, 0x3, "vvsssv", {-1, 0.1, 0.3, 0, 0.1, -1}, {1, 1, 0, 0, 0, 1}},
    /* var, alpha, l1, l2, delta */
    {"ApplyProximalGradientDescent", 5, 0x1, "vsssv", {-1, 0.1, 0.3, 0.2, -1}, {1, 0, 0, 0, 1}},
    {"ApplyProximalGradientDescent", 5, 0x1, "vsssv", {-1, 0.1, 0, 0.2, -1}, {1, 0, 0, 0, 1}},
};

static int make_inputs(const op_spec *sp, rill_dtype t, int64_t r, int64_t c, rill_tensor **in)
{
    int64_t d[2] = {r, c};
    for (int i = 0; i < sp->n; i++)
        in[i] = sp->kinds[i] == 's' ? bo_tensor(t, NULL, 0, &sp->lo[i])
                                    : bo_random(t, d, 2, sp->lo[i], sp->hi[i]);
    return sp->n;
}

static rill_node *node_of(rill_graph *g, const op_spec *sp, rill_tensor *const *in)
{
    rill_output x[9];
    for (int i = 0; i < sp->n; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "v%d", i);
        x[i] = sp->refs >> i & 1 ? var_node(g, nm, in[i]->dtype, in[i]->shape)
                                 : bo_placeholder(g, in[i]);
    }
    return rill__node_create(g, sp->op, NULL, x, sp->n, NULL, 0);
}

static void test_updates(void)
{
    static const int64_t shapes[][2] = {{5, 7}, {129, 3}, {1, 1}};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
        for (int s = 0; s < 3; s++) {
            for (int ti = 0; ti < 2; ti++) {
                rill_dtype t = ti ? RILL_DOUBLE : RILL_FLOAT;
                rill_tensor *in[9] = {0};
                int n = make_inputs(&specs[k], t, shapes[s][0], shapes[s][1], in);
                rill_graph *g = rill_graph_new();
                if (!bo_check(node_of(g, &specs[k], in), in, bound(t)))
                    fprintf(stderr, "  case: %s #%zu shape #%d\n", specs[k].op, k, s);
                bo_free_all(in, n);
                rill_graph_free(g);
            }
            /* half on OpenCL against the CPU's float */
            rill_tensor *hin[9] = {0}, *fin[9] = {0};
            int n = make_inputs(&specs[k], RILL_HALF, shapes[s][0], shapes[s][1], hin);
            for (int i = 0; i < n; i++) fin[i] = twin(hin[i], RILL_FLOAT);
            rill_graph *gh = rill_graph_new(), *gf = rill_graph_new();
            rill_node *nh = node_of(gh, &specs[k], hin), *nf = node_of(gf, &specs[k], fin);
            if (bo_device()) {
                bo_result cpu, cl;
                bool ran = bo_run(nf, "CPU", rill__cpu_device(), fin, &cpu) &&
                           bo_run(nh, "OPENCL", bo_device(), hin, &cl);
                if (ran && CHECK_EQ_INT(cl.code, RILL_OK) && CHECK_EQ_INT(cpu.code, RILL_OK)) {
                    for (int i = 0; i < n; i++) {
                        if (!cpu.var_value[i]) continue;
                        double e = cl.var_value[i] ? bo_nmse(cpu.var_value[i], cl.var_value[i]) : 1;
                        if (!CHECK(e <= bound(RILL_HALF)))
                            fprintf(stderr, "  case: half %s shape #%d variable %d: NMSE %g\n",
                                    specs[k].op, s, i, e);
                    }
                }
                bo_result_clear(&cpu);
                bo_result_clear(&cl);
            }
            bo_free_all(hin, n);
            bo_free_all(fin, n);
            rill_graph_free(gh);
            rill_graph_free(gf);
        }
}

/* A gradient of another shape, fed through a placeholder of unknown shape. */
static void test_errors(void)
{
    rill_tensor *in[5] = {bo_random(RILL_FLOAT, (int64_t[]){3}, 1, -1, 1),
                          bo_tensor(RILL_FLOAT, NULL, 0, (double[]){0.1}),
                          bo_tensor(RILL_FLOAT, NULL, 0, (double[]){0}),
                          bo_tensor(RILL_FLOAT, NULL, 0, (double[]){0}),
                          bo_random(RILL_FLOAT, (int64_t[]){4}, 1, -1, 1)};
    rill_graph *g = rill_graph_new();
    rill_output x[5] = {var_node(g, "v", RILL_FLOAT, rill_shape_vector(3)),
                        bo_placeholder(g, in[1]), bo_placeholder(g, in[2]),
                        bo_placeholder(g, in[3]), bo_placeholder_any(g, RILL_FLOAT)};
    rill_node *n = rill__node_create(g, "ApplyProximalGradientDescent", NULL, x, 5, NULL, 0);
    bo_check_error(n, in, RILL_INVALID_ARGUMENT, "var and delta do not have the same shape");
    bo_free_all(in, 5);
    rill_graph_free(g);
}

int main(void)
{
    test_updates();
    test_errors();
    bo_skip_without_device();
    TEST_MAIN_END();
}
