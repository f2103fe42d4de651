/* test_opencl_state.c - the variable, assignment, optimizer and random kernels on OpenCL.
 *
 * Assign, AssignAdd, AssignSub and the three optimizer updates run through the backend harness
 * (backend_ops.h) in float and double: the variables start from the same host values, live on
 * the device for the OpenCL run and are compared with the CPU's after the update. There is no
 * CPU kernel for half updates, so half runs on the device against the CPU's float update of the
 * same (half-rounded) values. Direct kernel calls check what the harness cannot see: the
 * in-place and copy-on-write paths, a variable whose value moves from host to device memory,
 * VariableV2 itself, and the int64 / int32 registrations (int64 in host memory, int32 none).
 *
 * The random ops are checked statistically (mean, standard deviation, the share within one
 * standard deviation, bounds, neighbour correlation), for reproducibility with a seed across
 * fresh states (sessions) and for a new sequence on each run of the same node. Without an OpenCL
 * device only the registrations are checked and the test reports itself skipped (exit 77). */
#include "backend_ops.h"

static const rill_dtype float_types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

/* NMSE bounds: the update arithmetic is the same on both backends (only fused multiply-adds
 * may differ); half is compared with a float update, so its bound covers half rounding. */
static double bound(rill_dtype t)
{
    return t == RILL_DOUBLE ? 1e-24 : t == RILL_FLOAT ? 1e-11 : 1e-5;
}

static rill_output var_node(rill_graph *g, const char *name, rill_dtype t, rill_shape s)
{
    rill__attr a[] = {RILL__A_TYPE("dtype", t), RILL__A_SHAPE("shape", s)};
    return (rill_output){rill__node_create(g, "VariableV2", name, NULL, 0, a, 2), 0};
}

static rill_output unknown(rill_graph *g, rill_dtype t)
{
    return rill_placeholder(g, t, rill_shape_unknown(), NULL);
}

/* A copy of x in dtype t (element values carried through double). */
static rill_tensor *twin(const rill_tensor *x, rill_dtype t)
{
    if (!x) return NULL;
    int64_t n = x->numel;
    double *v = calloc((size_t)(n + 1), sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rill_tensor_get_double(x, i);
    rill_tensor *y = bo_tensor(t, x->shape.dims, x->shape.rank, v);
    free(v);
    return y;
}

static rill_tensor *scalar(rill_dtype t, double v)
{
    return bo_tensor(t, NULL, 0, &v);
}

/* --- registrations --- */

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered (main skips the test) */
#endif
    static const char *const ops[] = {
        "VariableV2",    "Assign",    "AssignAdd",    "AssignSub",       "ApplyGradientDescent",
        "ApplyMomentum", "ApplyAdam", "ApplyAdagrad", "RandomNormal", "TruncatedNormal",
        "RandomUniform"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (int t = 0; t < 3; t++) {
            const rill__kernel_def *k = rill__kernel_lookup(ops[i], "OPENCL", float_types[t]);
            if (!CHECK(k != NULL)) {
                fprintf(stderr, "  no OPENCL kernel for %s %s\n", ops[i],
                        rill_dtype_name(float_types[t]));
                continue;
            }
            CHECK_EQ_INT(k->host_memory_outputs, 0);
        }
    /* Optimizer scalars are host memory inputs. */
    const rill__kernel_def *k = rill__kernel_lookup("ApplyGradientDescent", "OPENCL", RILL_FLOAT);
    if (k) CHECK_EQ_INT(k->host_memory_inputs, 1u << 1);
    k = rill__kernel_lookup("ApplyMomentum", "OPENCL", RILL_FLOAT);
    if (k) CHECK_EQ_INT(k->host_memory_inputs, (1u << 2) | (1u << 4));
    k = rill__kernel_lookup("ApplyAdagrad", "OPENCL", RILL_FLOAT);
    if (k) CHECK_EQ_INT(k->host_memory_inputs, 1u << 2);
    k = rill__kernel_lookup("ApplyAdam", "OPENCL", RILL_FLOAT);
    if (k) CHECK_EQ_INT(k->host_memory_inputs, 0x1F8u);
    /* int64 variables (the global step): the CPU kernels, everything in host memory. int32: no
     * GPU kernel, as in TensorFlow. */
    static const char *const int_ops[] = {"VariableV2", "Assign", "AssignAdd"};
    for (int i = 0; i < 3; i++) {
        k = rill__kernel_lookup(int_ops[i], "OPENCL", RILL_INT64);
        if (CHECK(k != NULL)) {
            CHECK_EQ_INT(k->host_memory_inputs, UINT32_MAX);
            CHECK_EQ_INT(k->host_memory_outputs, UINT32_MAX);
            CHECK(k->fn == rill__kernel_lookup(int_ops[i], "CPU", RILL_INT64)->fn);
        }
        CHECK(rill__kernel_lookup(int_ops[i], "OPENCL", RILL_INT32) == NULL);
    }
    CHECK(rill__kernel_lookup("ApplyGradientDescent", "OPENCL", RILL_INT64) == NULL);
}

/* --- assignments through the harness --- */

static void test_assign_ops(void)
{
    static const int64_t shapes[][2] = {{3, 4}, {130, 1}, {0, 0}};
    static const int ranks[] = {2, 1, 0};
    static const char *const ops[] = {"Assign", "AssignAdd", "AssignSub"};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 3; s++)
            for (int o = 0; o < 3; o++)
                for (int init = 0; init < 2; init++) {
                    if (!init && o > 0) continue; /* an error case, below */
                    rill_dtype ft = float_types[t];
                    rill_shape sh = rill_shape_make(ranks[s], shapes[s]);
                    rill_graph *g = rill_graph_new();
                    rill_tensor *in[2] = {init ? bo_random(ft, shapes[s], ranks[s], -2, 2) : NULL,
                                          bo_random(ft, shapes[s], ranks[s], -1, 1)};
                    rill_output v = var_node(g, "v", ft, sh);
                    rill_output in1[] = {v, bo_placeholder(g, in[1])};
                    rill_node *n = rill__node_create(g, ops[o], NULL, in1, 2, NULL, 0);
                    if (!bo_check(n, in, bound(ft)))
                        fprintf(stderr, "  case: %s shape #%d init %d\n", ops[o], s, init);
                    bo_free_all(in, 2);
                    rill_graph_free(g);
                }
    /* int64 (the global step): host memory on the OpenCL device, compared with the CPU. */
    for (int o = 0; o < 2; o++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {bo_random(RILL_INT64, NULL, 0, 0, 100),
                              bo_random(RILL_INT64, NULL, 0, 1, 5)};
        rill_output v = var_node(g, "global_step", RILL_INT64, rill_shape_scalar());
        rill_output in1[] = {v, bo_placeholder(g, in[1])};
        bo_check(rill__node_create(g, ops[o], NULL, in1, 2, NULL, 0), in, 0);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

static void test_assign_errors(void)
{
    for (int t = 0; t < 3; t++) {
        rill_dtype ft = float_types[t];
        int64_t a[2] = {3, 4}, b[2] = {4, 3};
        rill_graph *g = rill_graph_new();
        rill_output v = var_node(g, "v", ft, rill_shape_matrix(3, 4));
        rill_output x = unknown(g, ft);
        rill_tensor *in[2] = {bo_random(ft, a, 2, -1, 1), bo_random(ft, b, 2, -1, 1)};
        bo_check_error(rill_assign(g, v, x, NULL).node, in, RILL_INVALID_ARGUMENT,
                       "Assign requires shapes of both tensors to match. lhs shape= [3,4] rhs "
                       "shape= [4,3]");
        bo_check_error(rill_assign_add(g, v, x, NULL).node, in, RILL_INVALID_ARGUMENT,
                       "AssignAdd requires shapes of both tensors to match. lhs shape= [3,4] rhs "
                       "shape= [4,3]");
        rill_tensor *un[2] = {NULL, bo_random(ft, a, 2, -1, 1)};
        bo_check_error(rill_assign_sub(g, v, x, NULL).node, un, RILL_FAILED_PRECONDITION,
                       "Attempting to use uninitialized value v");
        bo_free_all(in, 2);
        bo_free_all(un, 2);
        rill_graph_free(g);
    }
}

/* --- optimizer updates --- */

/* ADAGRAD_FIXED: ApplyAdagrad with update_slots false (the accumulator left as it is). */
enum { GD, MOMENTUM, NESTEROV, ADAM, ADAGRAD, ADAGRAD_FIXED, NUM_UPDATES };

/* The inputs of an update of kind k on shape [rows, cols] in dtype t (host tensors; the
 * reference inputs are the variables' initial values). Returns the input count. */
static int update_inputs(int k, rill_dtype t, int64_t rows, int64_t cols, rill_tensor **in)
{
    int64_t d[2] = {rows, cols};
    in[0] = bo_random(t, d, 2, -1, 1);
    switch (k) {
    case GD:
        in[1] = scalar(t, 0.1);
        in[2] = bo_random(t, d, 2, -1, 1);
        return 3;
    case MOMENTUM:
    case NESTEROV:
        in[1] = bo_random(t, d, 2, -0.5, 0.5);
        in[2] = scalar(t, 0.05);
        in[3] = bo_random(t, d, 2, -1, 1);
        in[4] = scalar(t, 0.9);
        return 5;
    case ADAGRAD:
    case ADAGRAD_FIXED:
        in[1] = bo_random(t, d, 2, 0.1, 1); /* the accumulator stays positive */
        in[2] = scalar(t, 0.05);
        in[3] = bo_random(t, d, 2, -1, 1);
        return 4;
    default:
        in[1] = bo_random(t, d, 2, -0.1, 0.1);
        in[2] = bo_random(t, d, 2, 0.001, 0.01);
        in[3] = scalar(t, 0.9 * 0.9 * 0.9);
        in[4] = scalar(t, 0.999 * 0.999 * 0.999);
        in[5] = scalar(t, 0.01);
        in[6] = scalar(t, 0.9);
        in[7] = scalar(t, 0.999);
        in[8] = scalar(t, t == RILL_HALF ? 1e-3 : 1e-8); /* 1e-8 is 0 in half */
        in[9] = bo_random(t, d, 2, -1, 1);
        return 10;
    }
}

/* The update node of kind k over the given inputs (variables named var, slot_1, slot_2). */
static rill_node *update_node(rill_graph *g, int k, rill_tensor *const *in, int nin)
{
    static const char *const ops[] = {"ApplyGradientDescent", "ApplyMomentum", "ApplyMomentum",
                                      "ApplyAdam",            "ApplyAdagrad",  "ApplyAdagrad"};
    static const char *const names[] = {"var", "slot_1", "slot_2"};
    const rill__op_def *def = rill__op_lookup(ops[k]);
    rill_output x[10];
    for (int i = 0; i < nin; i++)
        x[i] = (def->ref_inputs & (1u << i)) ? var_node(g, names[i], in[i]->dtype, in[i]->shape)
                                             : bo_placeholder(g, in[i]);
    rill__attr a[] = {k == ADAGRAD || k == ADAGRAD_FIXED
                          ? RILL__A_BOOL("update_slots", k == ADAGRAD)
                          : RILL__A_BOOL("use_nesterov", k == NESTEROV)};
    return rill__node_create(g, ops[k], NULL, x, nin, a, k != GD && k != ADAM);
}

static void test_updates(void)
{
    static const char *const kinds[] = {"GradientDescent", "Momentum", "Nesterov",
                                        "Adam",            "Adagrad",  "Adagrad (update_slots false)"};
    static const int64_t shapes[][2] = {{5, 7}, {129, 3}, {1, 1}};
    for (int k = 0; k < NUM_UPDATES; k++)
        for (int s = 0; s < 3; s++) {
            /* float and double: CPU against OpenCL, variables compared after the update. */
            for (int t = 0; t < 2; t++) {
                rill_tensor *in[10] = {0};
                int nin = update_inputs(k, float_types[t], shapes[s][0], shapes[s][1], in);
                rill_graph *g = rill_graph_new();
                rill_node *n = update_node(g, k, in, nin);
                if (!bo_check(n, in, bound(float_types[t])))
                    fprintf(stderr, "  case: %s shape #%d\n", kinds[k], s);
                bo_free_all(in, nin);
                rill_graph_free(g);
            }
            /* half on OpenCL against the CPU's float update of the same values. */
            rill_tensor *hin[10] = {0}, *fin[10] = {0};
            int nin = update_inputs(k, RILL_HALF, shapes[s][0], shapes[s][1], hin);
            for (int i = 0; i < nin; i++) fin[i] = twin(hin[i], RILL_FLOAT);
            rill_graph *gh = rill_graph_new(), *gf = rill_graph_new();
            rill_node *nh = update_node(gh, k, hin, nin), *nf = update_node(gf, k, fin, nin);
            bo_result cpu, cl;
            bool ran = bo_run(nf, "CPU", rill__cpu_device(), fin, &cpu) &&
                       bo_run(nh, "OPENCL", bo_device(), hin, &cl);
            if (ran && CHECK_EQ_INT(cl.code, RILL_OK) && CHECK_EQ_INT(cpu.code, RILL_OK)) {
                CHECK(cl.out[0] != NULL && !cl.out_on_host[0]);
                for (int i = 0; i < 3; i++) {
                    if (!cpu.var_value[i]) continue;
                    double e = cl.var_value[i] ? bo_nmse(cpu.var_value[i], cl.var_value[i]) : 1;
                    if (!CHECK(e <= bound(RILL_HALF)))
                        fprintf(stderr, "  case: half %s shape #%d variable %d: NMSE %g\n",
                                kinds[k], s, i, e);
                }
            } else {
                fprintf(stderr, "  case: half %s shape #%d: %s\n", kinds[k], s, cl.msg);
            }
            bo_result_clear(&cpu);
            bo_result_clear(&cl);
            bo_free_all(hin, nin);
            bo_free_all(fin, nin);
            rill_graph_free(gh);
            rill_graph_free(gf);
        }
}

static void test_update_errors(void)
{
    for (int t = 0; t < 3; t++) {
        rill_tensor *in[10] = {0};
        int nin = update_inputs(ADAM, float_types[t], 2, 3, in);
        rill_graph *g = rill_graph_new();
        rill_node *n = update_node(g, ADAM, in, nin);
        rill_tensor_free(in[1]);
        in[1] = NULL; /* m uninitialised */
        /* No CPU kernel for half: check the OpenCL side alone. */
        if (float_types[t] != RILL_HALF) {
            bo_check_error(n, in, RILL_FAILED_PRECONDITION,
                           "Attempting to use uninitialized value slot_1");
        } else {
            bo_result cl;
            if (bo_run(n, "OPENCL", bo_device(), in, &cl)) {
                CHECK_EQ_INT(cl.code, RILL_FAILED_PRECONDITION);
                CHECK_STR_CONTAINS(cl.msg, "Attempting to use uninitialized value slot_1");
            }
            bo_result_clear(&cl);
        }
        bo_free_all(in, nin);
        rill_graph_free(g);
    }
}

/* --- direct kernel calls: in place, copy-on-write, VariableV2 --- */

/* Runs n's kernel for dev's kernel key with these inputs and variables, then waits for the
 * device. Returns the failure code (RILL_OK) and copies its message into msg. */
static rill_code run_direct(const rill_node *n, rill__device *dev, rill_tensor **in,
                            rill__var **vars, rill__var *var, rill_tensor **outs, void **state,
                            char *msg, size_t len)
{
    const rill__kernel_def *k =
        rill__kernel_lookup(n->op->name, dev->kernel_key, rill__node_kernel_dtype(n));
    if (!CHECK(k != NULL)) return RILL_NOT_FOUND;
    rill__kctx ctx = {
        .node = n,
        .inputs = in,
        .vars = vars,
        .var = var,
        .outputs = outs,
        .recycle = NULL,
        .state = state,
        .device = dev,
        .host_memory_outputs = k->host_memory_outputs,
    };
    k->fn(&ctx);
    rill_status *s = rill_status_new();
    CHECK(dev->ops->sync(dev, s));
    rill_status_free(s);
    rill_code code = ctx.status ? rill_status_code(ctx.status) : RILL_OK;
    snprintf(msg, len, "%s", ctx.status ? rill_status_message(ctx.status) : "");
    rill_status_free(ctx.status);
    return code;
}

/* Element i of a tensor anywhere. */
static double value_at(rill_tensor *t, int64_t i)
{
    rill_tensor *h = bo_to_host(t);
    double v = h ? rill_tensor_get_double(h, i) : NAN;
    rill_tensor_free(h);
    return v;
}

static void test_copy_on_write(void)
{
    rill__device *dev = bo_device();
    char msg[512];
    for (int t = 0; t < 3; t++) {
        rill_dtype ft = float_types[t];
        int64_t d[1] = {100};
        double ones[100], twos[100];
        for (int i = 0; i < 100; i++) ones[i] = 1, twos[i] = 2;
        rill_tensor *init = bo_tensor(ft, d, 1, ones), *delta = bo_tensor(ft, d, 1, twos);
        rill_shape sh = rill_shape_vector(100);
        rill_graph *g = rill_graph_new();
        rill_output v = var_node(g, "v", ft, sh);
        rill_output x = rill_placeholder(g, ft, sh, NULL);
        rill_node *add = rill_assign_add(g, v, x, NULL).node;
        rill_node *asg = rill_assign(g, v, x, NULL).node;
        rill_status *cs = rill_status_new();
        rill_tensor *dx = rill__tensor_copy_to(delta, dev, cs);
        rill_status_free(cs);
        if (!CHECK(dx != NULL)) return;
        rill_tensor *in[2] = {NULL, dx};
        rill_tensor *outs[1] = {NULL};
        void *state = NULL;

        /* Exclusive: updated in place, the same tensor and buffer. */
        rill__var *var = bo_var_new("v", ft, &sh, init, dev);
        rill__var *vars[2] = {var, NULL};
        rill_tensor *before = var->value;
        rill__buffer *buf = before->buf;
        CHECK_EQ_INT(run_direct(add, dev, in, vars, NULL, outs, &state, msg, sizeof msg), RILL_OK);
        CHECK(var->value == before && var->value->buf == buf);
        CHECK(outs[0] == var->value);
        rill_tensor_free(outs[0]);
        outs[0] = NULL;
        CHECK_NEAR(value_at(var->value, 7), 3, 0);
        CHECK_EQ_INT(run_direct(asg, dev, in, vars, NULL, outs, &state, msg, sizeof msg), RILL_OK);
        CHECK(var->value == before && var->value->buf == buf);
        CHECK_NEAR(value_at(var->value, 7), 2, 0);
        rill_tensor_free(outs[0]);
        outs[0] = NULL;

        /* Held by a reader: AssignAdd copies on the device first; the reader's value stays. */
        rill_tensor *held = rill_tensor_ref(var->value);
        CHECK_EQ_INT(run_direct(add, dev, in, vars, NULL, outs, &state, msg, sizeof msg), RILL_OK);
        CHECK(var->value != held && var->value->buf->dev == dev);
        CHECK_NEAR(value_at(held, 0), 2, 0);
        CHECK_NEAR(value_at(var->value, 0), 4, 0);
        rill_tensor_free(outs[0]);
        outs[0] = NULL;
        rill_tensor_free(held);
        /* ... and Assign makes a new device tensor. */
        held = rill_tensor_ref(var->value);
        CHECK_EQ_INT(run_direct(asg, dev, in, vars, NULL, outs, &state, msg, sizeof msg), RILL_OK);
        CHECK(var->value != held && var->value->buf->dev == dev);
        CHECK_NEAR(value_at(held, 0), 4, 0);
        CHECK_NEAR(value_at(var->value, 0), 2, 0);
        rill_tensor_free(outs[0]);
        outs[0] = NULL;
        rill_tensor_free(held);
        bo_var_free(var);

        /* A value in host memory moves to the device on the first update. */
        var = bo_var_new("v", ft, &sh, init, NULL);
        vars[0] = var;
        CHECK_EQ_INT(run_direct(add, dev, in, vars, NULL, outs, &state, msg, sizeof msg), RILL_OK);
        CHECK(var->value->buf->dev == dev);
        CHECK_NEAR(value_at(var->value, 99), 3, 0);
        rill_tensor_free(outs[0]);
        outs[0] = NULL;
        bo_var_free(var);

        /* VariableV2: the variable's tensor itself, moved to the device if it was not there;
         * nothing (and no error) when uninitialised. */
        rill__var *own = bo_var_new("v", ft, &sh, NULL, NULL);
        CHECK_EQ_INT(run_direct(v.node, dev, NULL, NULL, own, outs, &state, msg, sizeof msg),
                     RILL_OK);
        CHECK(outs[0] == NULL);
        bo_var_free(own);
        own = bo_var_new("v", ft, &sh, init, NULL);
        CHECK_EQ_INT(run_direct(v.node, dev, NULL, NULL, own, outs, &state, msg, sizeof msg),
                     RILL_OK);
        CHECK(outs[0] == own->value && own->value->buf->dev == dev);
        CHECK_NEAR(value_at(outs[0], 5), 1, 0);
        rill_tensor_free(outs[0]);
        outs[0] = NULL;
        bo_var_free(own);

        rill_tensor_free(dx);
        rill_tensor_free(init);
        rill_tensor_free(delta);
        rill_graph_free(g);
    }
}

/* --- random ops --- */

typedef struct stats {
    double mean, sd, within1; /* within1: share within one sd of the mean */
    double min, max, corr;    /* corr: correlation of neighbours */
} stats;

static stats stats_of(const rill_tensor *h)
{
    stats st = {.min = INFINITY, .max = -INFINITY};
    int64_t n = h->numel;
    double sum = 0, sq = 0, cross = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = rill_tensor_get_double(h, i);
        sum += x;
        st.min = x < st.min ? x : st.min;
        st.max = x > st.max ? x : st.max;
    }
    st.mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double x = rill_tensor_get_double(h, i) - st.mean;
        sq += x * x;
        if (i + 1 < n) cross += x * (rill_tensor_get_double(h, i + 1) - st.mean);
    }
    st.sd = sqrt(sq / (double)(n - 1));
    st.corr = cross / sq;
    int64_t in1 = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(rill_tensor_get_double(h, i) - st.mean) <= st.sd) in1++;
    st.within1 = (double)in1 / (double)n;
    return st;
}

static int64_t count_equal(const rill_tensor *a, const rill_tensor *b)
{
    int64_t same = 0;
    for (int64_t i = 0; i < a->numel; i++)
        same += rill_tensor_get_double(a, i) == rill_tensor_get_double(b, i);
    return same;
}

/* One run of a random node with the given state; the output, copied to the host. */
static rill_tensor *draw(rill_node *n, void **state)
{
    rill__device *dev = bo_device();
    rill_tensor *outs[1] = {NULL};
    char msg[512];
    if (!CHECK_EQ_INT(run_direct(n, dev, NULL, NULL, NULL, outs, state, msg, sizeof msg), RILL_OK))
        fprintf(stderr, "  %s: %s\n", n->op->name, msg);
    if (!outs[0]) return NULL;
    CHECK(outs[0]->buf->dev == dev && outs[0]->dtype == n->out_dtypes[0]);
    rill_tensor *h = bo_to_host(outs[0]);
    rill_tensor_free(outs[0]);
    return h;
}

static void free_state(rill_node *n, void **state)
{
    const rill__kernel_def *k =
        rill__kernel_lookup(n->op->name, "OPENCL", rill__node_kernel_dtype(n));
    if (*state && k && k->state_free) k->state_free(*state);
    *state = NULL;
}

static void test_random(void)
{
    static const char *const ops[] = {"RandomNormal", "TruncatedNormal", "RandomUniform"};
    for (int t = 0; t < 3; t++)
        for (int o = 0; o < 3; o++) {
            rill_dtype ft = float_types[t];
            int64_t n = ft == RILL_HALF ? 60000 : 200000;
            double a = o == 2 ? -1 : 2, b = 3; /* mean and sd, or [min, max) */
            rill_graph *g = rill_graph_new();
            rill_output seeded =
                o == 0   ? rill_random_normal(g, ft, rill_shape_vector(n), a, b, 42, NULL)
                : o == 1 ? rill_truncated_normal(g, ft, rill_shape_vector(n), a, b, 42, NULL)
                         : rill_random_uniform(g, ft, rill_shape_vector(n), a, b, 42, NULL);
            rill_output unseeded =
                o == 0   ? rill_random_normal(g, ft, rill_shape_vector(64), a, b, 0, NULL)
                : o == 1 ? rill_truncated_normal(g, ft, rill_shape_vector(64), a, b, 0, NULL)
                         : rill_random_uniform(g, ft, rill_shape_vector(64), a, b, 0, NULL);
            if (!CHECK(seeded.node && unseeded.node)) {
                rill_graph_free(g);
                continue;
            }
            void *s1 = NULL, *s2 = NULL;
            rill_tensor *r1 = draw(seeded.node, &s1), *r2 = draw(seeded.node, &s1);
            rill_tensor *r3 = draw(seeded.node, &s2); /* a new session */
            if (CHECK(r1 && r2 && r3)) {
                /* Reproducible with a seed; a new sequence on every run. */
                CHECK_EQ_INT(count_equal(r1, r3), n);
                CHECK(count_equal(r1, r2) < n / 100);
                for (int r = 0; r < 2; r++) {
                    stats st = stats_of(r ? r2 : r1);
                    double sd = o == 0 ? b : o == 1 ? 0.87962566 * b : (b - a) / sqrt(12.0);
                    double mean = o == 2 ? (a + b) / 2 : a;
                    bool ok = CHECK_NEAR(st.mean, mean, 5 * sd / sqrt((double)n));
                    ok = CHECK_NEAR(st.sd / sd, 1, 0.015) && ok;
                    ok = CHECK_NEAR(st.corr, 0, 0.02) && ok;
                    if (o == 0) ok = CHECK_NEAR(st.within1, 0.6827, 0.01) && ok;
                    if (o == 1) ok = CHECK(st.min >= a - 2 * b && st.max <= a + 2 * b) && ok;
                    if (o == 2) ok = CHECK(st.min >= a && st.max < b) && ok;
                    if (o == 2) ok = CHECK(st.min < a + 0.01 && st.max > b - 0.01) && ok;
                    if (!ok)
                        fprintf(stderr,
                                "  case: %s %s run %d: mean %g sd %g within1 %g min %g max %g "
                                "corr %g\n",
                                ops[o], rill_dtype_name(ft), r, st.mean, st.sd, st.within1, st.min,
                                st.max, st.corr);
                }
            }
            rill_tensor_free(r1);
            rill_tensor_free(r2);
            rill_tensor_free(r3);
            free_state(seeded.node, &s1);
            free_state(seeded.node, &s2);
            /* Unseeded: two sessions differ. */
            rill_tensor *u1 = draw(unseeded.node, &s1), *u2 = draw(unseeded.node, &s2);
            if (CHECK(u1 && u2)) CHECK(count_equal(u1, u2) < 8);
            rill_tensor_free(u1);
            rill_tensor_free(u2);
            free_state(unseeded.node, &s1);
            free_state(unseeded.node, &s2);
            rill_graph_free(g);
        }
    /* Uniform stays below maxval after rounding to the dtype, even where maxval is not
     * representable (half rounds 0.1 up or down). */
    for (int t = 0; t < 3; t++) {
        rill_graph *g = rill_graph_new();
        rill_output u =
            rill_random_uniform(g, float_types[t], rill_shape_vector(100000), 0.05, 0.1, 7, NULL);
        void *st = NULL;
        rill_tensor *r = draw(u.node, &st);
        if (CHECK(r)) {
            stats s = stats_of(r);
            if (!CHECK(s.max < 0.1 && s.min >= 0.0499))
                fprintf(stderr, "  uniform [0.05, 0.1) %s: min %.9g max %.9g\n",
                        rill_dtype_name(float_types[t]), s.min, s.max);
        }
        rill_tensor_free(r);
        free_state(u.node, &st);
        rill_graph_free(g);
    }
}

/* --- through a session: variables on /gpu:0 --- */

/* Trains a small softmax classifier (x [6,4], W [4,3], b [3], int32 labels) for 12 steps of
 * optimizer kind k (0 SGD, 1 Nesterov momentum, 2 Adam, 3 Adagrad) with every node under device spec dev.
 * Returns the trained W and b (host copies, caller frees) and the global step; false (a failed
 * check) when the session fails. */
static bool train_small(const char *dev, int k, rill_tensor **w_out, rill_tensor **b_out,
                        int64_t *step)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true); /* int32 labels stay on the CPU */
    rill_graph_push_device(g, dev);
    bo_seed(77);
    int64_t xd[2] = {6, 4}, wd[2] = {4, 3}, bd[1] = {3}, ld[1] = {6};
    double labels[6] = {0, 1, 2, 1, 0, 2};
    rill_tensor *xv = bo_random(RILL_FLOAT, xd, 2, -1, 1);
    rill_tensor *w0 = bo_random(RILL_FLOAT, wd, 2, -0.5, 0.5);
    rill_tensor *b0 = bo_random(RILL_FLOAT, bd, 1, -0.1, 0.1);
    rill_tensor *lv = bo_tensor(RILL_INT32, ld, 1, labels);
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output w = rill_variable_from(g, rill_const(g, w0, "w0"), true, "w");
    rill_output b = rill_variable_from(g, rill_const(g, b0, "b0"), true, "b");
    rill_output logits =
        rill_bias_add(g, rill_matmul(g, rill_const(g, xv, "x"), w, false, false, NULL), b, NULL);
    rill_output ce =
        rill_sparse_softmax_cross_entropy_with_logits(g, rill_const(g, lv, "labels"), logits, NULL);
    rill_output loss = rill_mean(g, ce, NULL, -1, false, "loss");
    rill_optimizer *opt = k == 0   ? rill_gradient_descent_optimizer_new(0.5)
                          : k == 1 ? rill_momentum_optimizer_new(0.2, 0.9, true)
                          : k == 2 ? rill_adam_optimizer_new(0.05, 0.9, 0.999, 1e-8)
                                   : rill_adagrad_optimizer_new(0.3, 0.1);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = rill_graph_ok(g) ? rill_session_new(g, o, s) : NULL;
    bool ok = CHECK(sess != NULL);
    if (!ok) fprintf(stderr, "  %s: %s\n", dev, rill_status_message(s));
    if (ok) ok = CHECK_EQ_INT(rill_session_run_targets(sess, &init, 1, s), RILL_OK);
    for (int i = 0; ok && i < 12; i++)
        ok = CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, NULL, NULL, 0, &train, 1, s),
                          RILL_OK);
    rill_output fetch[3] = {w, b, gs};
    rill_tensor *vals[3] = {NULL, NULL, NULL};
    if (ok)
        ok = CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, fetch, vals, 3, NULL, 0, s),
                          RILL_OK);
    if (!ok) fprintf(stderr, "  %s: %s\n", dev, rill_status_message(s));
    if (ok) {
        *w_out = vals[0];
        *b_out = vals[1];
        *step = (int64_t)rill_tensor_get_double(vals[2], 0);
        rill_tensor_free(vals[2]);
    }
    rill_session_free(sess);
    rill_optimizer_free(opt);
    rill_session_options_free(o);
    rill_status_free(s);
    rill_tensor_free(xv);
    rill_tensor_free(w0);
    rill_tensor_free(b0);
    rill_tensor_free(lv);
    rill_graph_free(g);
    return ok;
}

static void test_session(void)
{
    static const char *const kinds[] = {"SGD", "Nesterov momentum", "Adam", "Adagrad"};
    for (int k = 0; k < 4; k++) {
        rill_tensor *wc = NULL, *bc = NULL, *wg = NULL, *bg = NULL;
        int64_t sc = 0, sg = 0;
        if (train_small("/cpu:0", k, &wc, &bc, &sc) && train_small("/gpu:0", k, &wg, &bg, &sg)) {
            CHECK_EQ_INT(sc, 12);
            CHECK_EQ_INT(sg, 12);
            double ew = bo_nmse(wc, wg), eb = bo_nmse(bc, bg);
            if (!CHECK(ew <= 1e-10 && eb <= 1e-10))
                fprintf(stderr, "  %s: NMSE of W %g, of b %g between /cpu:0 and /gpu:0\n", kinds[k],
                        ew, eb);
        }
        rill_tensor_free(wc);
        rill_tensor_free(bc);
        rill_tensor_free(wg);
        rill_tensor_free(bg);
    }
    /* An int32 variable has no GPU kernel (TensorFlow's error, without soft placement). */
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_graph_push_device(g, "/gpu:0");
    rill_output v = rill_variable(g, RILL_INT32, rill_shape_vector(2), rill_zeros_initializer(),
                                  false, "counter");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_code code = sess ? rill_session_run_targets(sess, &init, 1, s) : rill_status_code(s);
    CHECK(v.node != NULL);
    CHECK_EQ_INT(code, RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Cannot assign a device for operation 'counter");
    CHECK_STR_CONTAINS(rill_status_message(s), "no supported kernel for GPU devices");
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20240612);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_assign_ops();
    test_assign_errors();
    test_updates();
    test_update_errors();
    test_copy_on_write();
    test_random();
    test_session();
    TEST_MAIN_END();
}
