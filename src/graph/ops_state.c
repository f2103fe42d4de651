/* ops_state.c - variables and everything that updates them: VariableV2 with its initializers,
 * Assign, AssignAdd, AssignSub, the optimizer updates (ApplyGradientDescent, ApplyMomentum,
 * ApplyAdam, ApplyAdagrad), the builders of the random ops that initializers use (their op
 * definitions are in ops_random.c), get_variable and the global step.
 *
 * A variable's value lives in the session's resource manager under the node's name; reference
 * inputs (bit set in ref_inputs) reach it directly so updates happen in place. */
#include "graph_internal.h"

#include <string.h>

static void variable_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__attr_type(n, "dtype", RILL_DT_INVALID);
    const rill__attr *sh = rill__node_attr(n, "shape");
    if (!rill_dtype_is_valid(t) || t == RILL_STRING) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Variable '%s': invalid dtype", n->name);
        return;
    }
    if (!sh || !rill_shape_is_fully_defined(&sh->v.shape)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Variable '%s' must have a fully defined shape",
                        n->name);
        return;
    }
    n->out_dtypes[0] = t;
    n->out_shapes[0] = sh->v.shape;
}

/* Checks that input i has the variable's dtype and a shape compatible with it. */
static bool check_like_var(rill_node *n, int i, const char *what, rill_status *s)
{
    rill_dtype vt = rill__in_dtype(n, 0), t = rill__in_dtype(n, i);
    rill_shape vs = rill__in_shape(n, 0), xs = rill__in_shape(n, i);
    if (t != vt) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input '%s' of '%s' Op has type %s that does not match type %s of "
                        "argument 'ref'.",
                        what, n->op->name, rill_dtype_name(t), rill_dtype_name(vt));
        return false;
    }
    if (xs.rank >= 0 && vs.rank >= 0) {
        bool ok = xs.rank == vs.rank;
        for (int d = 0; ok && d < vs.rank; d++)
            if (xs.dims[d] >= 0 && xs.dims[d] != vs.dims[d]) ok = false;
        if (!ok) {
            char a[96], b[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, and dimensions must match for '%s' (op: "
                            "'%s') with input shapes: %s, %s.",
                            n->name, n->op->name, rill_shape_str(&vs, a, sizeof a),
                            rill_shape_str(&xs, b, sizeof b));
            return false;
        }
    }
    return true;
}

static void assign_shape(rill_node *n, rill_status *s)
{
    if (!check_like_var(n, 1, "value", s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static bool check_scalar(rill_node *n, int i, const char *what, rill_status *s)
{
    rill_shape sh = rill__in_shape(n, i);
    if (rill__in_dtype(n, i) != rill__in_dtype(n, 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input '%s' of '%s' Op has type %s that does not match type %s of "
                        "argument 'var'.",
                        what, n->op->name, rill_dtype_name(rill__in_dtype(n, i)),
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return false;
    }
    if (sh.rank > 0 && rill_shape_num_elements(&sh) != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s: '%s' must be a scalar for '%s'", n->op->name,
                        what, n->name);
        return false;
    }
    return true;
}

static void apply_gd_shape(rill_node *n, rill_status *s)
{
    if (!rill_dtype_is_float(rill__in_dtype(n, 0))) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': the variable must be a float type",
                        n->op->name, n->name);
        return;
    }
    if (!check_scalar(n, 1, "alpha", s) || !check_like_var(n, 2, "delta", s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void apply_momentum_shape(rill_node *n, rill_status *s)
{
    /* var, accum, lr, grad, momentum */
    if (!check_like_var(n, 1, "accum", s) || !check_scalar(n, 2, "lr", s) ||
        !check_like_var(n, 3, "grad", s) || !check_scalar(n, 4, "momentum", s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void apply_adagrad_shape(rill_node *n, rill_status *s)
{
    /* var, accum, lr, grad */
    if (!check_like_var(n, 1, "accum", s) || !check_scalar(n, 2, "lr", s) ||
        !check_like_var(n, 3, "grad", s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void apply_adam_shape(rill_node *n, rill_status *s)
{
    /* var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad */
    static const char *const names[] = {"var", "m",     "v",     "beta1_power", "beta2_power",
                                        "lr",  "beta1", "beta2", "epsilon",     "grad"};
    if (!check_like_var(n, 1, "m", s) || !check_like_var(n, 2, "v", s)) return;
    for (int i = 3; i <= 8; i++)
        if (!check_scalar(n, i, names[i], s)) return;
    if (!check_like_var(n, 9, "grad", s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* Dropout(x, keep_prob): TF's tf.nn.dropout in one op. Output 0 is x / keep_prob * floor(keep_prob
 * + u), u uniform in [0, 1) from the op's seeded generator (a new mask every step); output 1 is
 * the mask it used (1/keep_prob or 0), which its gradient multiplies by. */
static void dropout_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0), kt = rill__in_dtype(n, 1);
    rill_shape k = rill__in_shape(n, 1);
    if (!rill_dtype_is_float(t)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "x has to be a floating point tensor since it's going to be scaled. Got "
                        "a %s tensor instead.",
                        rill_dtype_name(t));
        return;
    }
    if (kt != t || (k.rank > 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "keep_prob must be a scalar tensor of the type of x (%s) for '%s'",
                        rill_dtype_name(t), n->name);
        return;
    }
    n->out_dtypes[0] = n->out_dtypes[1] = t;
    n->out_shapes[0] = n->out_shapes[1] = rill__in_shape(n, 0);
}

static void dropout_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_mul(g, dy[0], (rill_output){n, 1}, NULL);
    dx[1] = (rill_output){NULL, 0};
}

const rill__op_def rill__ops_state[] = {
    {.name = "Dropout",
     .default_name = "dropout",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 2,
     .stateful = true,
     .shape = dropout_shape,
     .grad = dropout_grad},
    {.name = "VariableV2",
     .default_name = "Variable",
     .noutputs = 1,
     .stateful = true,
     .shape = variable_shape,
     .type_attr = "dtype"},
    {.name = "Assign",
     .default_name = "Assign",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = assign_shape},
    {.name = "AssignAdd",
     .default_name = "AssignAdd",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = assign_shape},
    {.name = "AssignSub",
     .default_name = "AssignSub",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = assign_shape},
    {.name = "ApplyGradientDescent",
     .default_name = "ApplyGradientDescent",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = apply_gd_shape},
    {.name = "ApplyMomentum",
     .default_name = "ApplyMomentum",
     .min_inputs = 5,
     .max_inputs = 5,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 3,
     .shape = apply_momentum_shape},
    {.name = "ApplyAdagrad",
     .default_name = "ApplyAdagrad",
     .min_inputs = 4,
     .max_inputs = 4,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 3,
     .shape = apply_adagrad_shape},
    {.name = "ApplyAdam",
     .default_name = "ApplyAdam",
     .min_inputs = 10,
     .max_inputs = 10,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 7,
     .shape = apply_adam_shape},
    {0},
};

/* --- builders --- */

static rill_output out0(rill_node *n)
{
    return (rill_output){n, 0};
}

static rill_output random_op(rill_graph *g, const char *op, rill_dtype t, rill_shape shape,
                             double a, double b, int64_t seed, const char *name)
{
    rill__attr at[] = {RILL__A_TYPE("dtype", t), RILL__A_SHAPE("shape", shape),
                       RILL__A_FLOAT("a", a), RILL__A_FLOAT("b", b), RILL__A_INT("seed", seed)};
    return out0(rill__node_create(g, op, name, NULL, 0, at, 5));
}

rill_output rill_random_normal(rill_graph *g, rill_dtype t, rill_shape shape, double mean,
                               double stddev, int64_t seed, const char *name)
{
    return random_op(g, "RandomNormal", t, shape, mean, stddev, seed, name);
}

rill_output rill_truncated_normal(rill_graph *g, rill_dtype t, rill_shape shape, double mean,
                                  double stddev, int64_t seed, const char *name)
{
    return random_op(g, "TruncatedNormal", t, shape, mean, stddev, seed, name);
}

rill_output rill_random_uniform(rill_graph *g, rill_dtype t, rill_shape shape, double minval,
                                double maxval, int64_t seed, const char *name)
{
    return random_op(g, "RandomUniform", t, shape, minval, maxval, seed, name);
}

rill_output rill_dropout(rill_graph *g, rill_output x, rill_output keep_prob, int64_t seed,
                         const char *name)
{
    rill_output in[] = {x, keep_prob};
    rill__attr at[] = {RILL__A_INT("seed", seed)};
    return out0(rill__node_create(g, "Dropout", name, in, 2, at, 1));
}

rill_initializer rill_zeros_initializer(void)
{
    return (rill_initializer){.kind = RILL_INIT_ZEROS};
}

rill_initializer rill_ones_initializer(void)
{
    return (rill_initializer){.kind = RILL_INIT_ONES};
}

rill_initializer rill_constant_initializer(double value)
{
    return (rill_initializer){.kind = RILL_INIT_CONSTANT, .value = value};
}

rill_initializer rill_random_normal_initializer(double mean, double stddev, int64_t seed)
{
    return (rill_initializer){
        .kind = RILL_INIT_RANDOM_NORMAL, .mean = mean, .stddev = stddev, .seed = seed};
}

rill_initializer rill_truncated_normal_initializer(double mean, double stddev, int64_t seed)
{
    return (rill_initializer){
        .kind = RILL_INIT_TRUNCATED_NORMAL, .mean = mean, .stddev = stddev, .seed = seed};
}

rill_initializer rill_random_uniform_initializer(double minval, double maxval, int64_t seed)
{
    return (rill_initializer){
        .kind = RILL_INIT_RANDOM_UNIFORM, .minval = minval, .maxval = maxval, .seed = seed};
}

static rill_output init_value(rill_graph *g, rill_dtype t, rill_shape shape, rill_initializer in)
{
    switch (in.kind) {
    case RILL_INIT_ZEROS:
    case RILL_INIT_ONES:
    case RILL_INIT_CONSTANT: {
        double v = in.kind == RILL_INIT_ZEROS ? 0 : in.kind == RILL_INIT_ONES ? 1 : in.value;
        int64_t r = shape.rank;
        rill_tensor *dims = rill_tensor_from_data(RILL_INT64, &r, 1, shape.dims);
        rill_output d = rill_const(g, dims, "shape");
        rill_tensor_free(dims);
        return rill_fill(g, d, rill_const_scalar(g, t, v, "value"), NULL);
    }
    case RILL_INIT_RANDOM_NORMAL:
        return rill_random_normal(g, t, shape, in.mean, in.stddev, in.seed, NULL);
    case RILL_INIT_TRUNCATED_NORMAL:
        return rill_truncated_normal(g, t, shape, in.mean, in.stddev, in.seed, NULL);
    case RILL_INIT_RANDOM_UNIFORM:
        return rill_random_uniform(g, t, shape, in.minval, in.maxval, in.seed, NULL);
    }
    rill__graph_fail(g, RILL_INVALID_ARGUMENT, "unknown initializer kind %d", (int)in.kind);
    return (rill_output){NULL, 0};
}

/* Creates the VariableV2 node, then its initializer under "<name>/". */
static int vars_in(const rill_graph *g, const char *key, rill_output *out, int cap);

static rill_output make_variable(rill_graph *g, rill_dtype t, rill_shape shape,
                                 rill_initializer *init, rill_output init_val, bool trainable,
                                 const char *name, bool local)
{
    rill__attr a[] = {RILL__A_TYPE("dtype", t), RILL__A_SHAPE("shape", shape)};
    /* The variable and its initializer stand alone, as TF's init_scope: no control
     * dependencies from the surrounding scope (or every read would run them). */
    rill_graph_push_control_dependencies(g, NULL, 0);
    rill_node *v = rill__node_create(g, "VariableV2", name ? name : "Variable", NULL, 0, a, 2);
    if (!v) {
        rill_graph_pop_control_dependencies(g);
        return (rill_output){NULL, 0};
    }
    char *scope = rill__asprintf("%s/", v->name);
    rill_graph_push_name_scope(g, scope);
    rill__free(scope);
    if (init) {
        rill_graph_push_name_scope(g, "Initializer");
        init_val = init_value(g, t, shape, *init);
        rill_graph_pop_name_scope(g);
    }
    rill_output as = rill_assign(g, (rill_output){v, 0}, init_val, "Assign");
    rill_graph_pop_control_dependencies(g);
    rill_graph_pop_name_scope(g);
    if (!as.node) return (rill_output){NULL, 0};
    v->initializer = as.node;
    rill_graph_add_to_collection(g, local ? "local_variables" : "variables", v);
    if (trainable && !local) rill_graph_add_to_collection(g, "trainable_variables", v);
    return (rill_output){v, 0};
}

rill_output rill_local_variable(rill_graph *g, rill_dtype t, rill_shape shape,
                                rill_initializer init, const char *name)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    return make_variable(g, t, shape, &init, (rill_output){NULL, 0}, false, name, true);
}

int rill_graph_local_variables(const rill_graph *g, rill_output *out, int cap)
{
    return vars_in(g, "local_variables", out, cap);
}

rill_output rill_variable(rill_graph *g, rill_dtype t, rill_shape shape, rill_initializer init,
                          bool trainable, const char *name)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    return make_variable(g, t, shape, &init, (rill_output){NULL, 0}, trainable, name, false);
}

rill_output rill_variable_from(rill_graph *g, rill_output initial_value, bool trainable,
                               const char *name)
{
    if (!rill_graph_ok(g) || !initial_value.node) return (rill_output){NULL, 0};
    rill_shape s = rill_output_shape(initial_value);
    if (!rill_shape_is_fully_defined(&s)) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                         "initial_value of variable '%s' must have a fully defined shape",
                         name ? name : "Variable");
        return (rill_output){NULL, 0};
    }
    return make_variable(g, rill_output_dtype(initial_value), s, NULL, initial_value, trainable,
                         name, false);
}

rill_output rill_get_variable(rill_graph *g, const char *name, rill_dtype t, rill_shape shape,
                              rill_initializer init, bool trainable)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    bool reuse;
    const char *prefix = rill__graph_var_scope(g, &reuse);
    char *full = rill__asprintf("%s%s", prefix, name);
    rill_node *existing = rill_graph_find_node(g, full);
    rill_output result = {NULL, 0};
    if (existing && strcmp(existing->op->name, "VariableV2") == 0) {
        if (!reuse) {
            rill__graph_fail(g, RILL_ALREADY_EXISTS,
                             "Variable %s already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?",
                             full);
        } else if (existing->out_dtypes[0] != t ||
                   !rill_shape_equal(&existing->out_shapes[0], &shape)) {
            char a[96], b[96];
            rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                             "Trying to share variable %s, but specified shape %s and found "
                             "shape %s.",
                             full, rill_shape_str(&shape, a, sizeof a),
                             rill_shape_str(&existing->out_shapes[0], b, sizeof b));
        } else {
            result = (rill_output){existing, 0};
        }
    } else if (existing) {
        rill__graph_fail(g, RILL_ALREADY_EXISTS,
                         "Variable %s cannot be created: an operation of type %s has that name",
                         full, existing->op->name);
    } else if (reuse) {
        rill__graph_fail(g, RILL_NOT_FOUND,
                         "Variable %s does not exist, or was not created with tf.get_variable(). "
                         "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?",
                         full);
    } else {
        /* get_variable names ignore name scopes: build at the variable scope's prefix. */
        char *scope = rill__asprintf("%s", *prefix ? prefix : "/");
        rill_graph_push_name_scope(g, scope);
        rill__free(scope);
        result = rill_variable(g, t, shape, init, trainable, name);
        rill_graph_pop_name_scope(g);
    }
    rill__free(full);
    return result;
}

rill_node *rill_variable_initializer(rill_output var)
{
    return rill__is_variable(var) ? var.node->initializer : NULL;
}

bool rill_variable_set_initializer(rill_output var, rill_node *init)
{
    if (!rill__is_variable(var) || !init) return false;
    var.node->initializer = init;
    return true;
}

static rill_node *initializer_of(rill_graph *g, const char *key, const char *name)
{
    if (!rill_graph_ok(g)) return NULL;
    rill_node *vars[1];
    int n = rill_graph_get_collection(g, key, vars, 0);
    rill_node **all = rill__malloc((size_t)(n ? n : 1) * sizeof *all);
    RILL_CHECK_ALLOC(all);
    rill_graph_get_collection(g, key, all, n);
    for (int i = 0; i < n; i++) all[i] = all[i]->initializer;
    rill_node *grp = rill_group(g, all, n, name);
    rill__free(all);
    return grp;
}

rill_node *rill_global_variables_initializer(rill_graph *g, const char *name)
{
    return initializer_of(g, "variables", name ? name : "init");
}

rill_node *rill_local_variables_initializer(rill_graph *g, const char *name)
{
    return initializer_of(g, "local_variables", name ? name : "init_1");
}

static int vars_in(const rill_graph *g, const char *key, rill_output *out, int cap)
{
    int n = rill_graph_get_collection(g, key, NULL, 0);
    rill_node **all = rill__malloc((size_t)(n ? n : 1) * sizeof *all);
    RILL_CHECK_ALLOC(all);
    rill_graph_get_collection(g, key, all, n);
    for (int i = 0; i < n && i < cap; i++) out[i] = (rill_output){all[i], 0};
    rill__free(all);
    return n;
}

int rill_graph_global_variables(const rill_graph *g, rill_output *out, int cap)
{
    return vars_in(g, "variables", out, cap);
}

int rill_graph_trainable_variables(const rill_graph *g, rill_output *out, int cap)
{
    return vars_in(g, "trainable_variables", out, cap);
}

static rill_output update(rill_graph *g, const char *op, rill_output var, rill_output value,
                          const char *name)
{
    rill_output in[] = {var, value};
    return out0(rill__node_create(g, op, name, in, 2, NULL, 0));
}

rill_output rill_assign(rill_graph *g, rill_output var, rill_output value, const char *name)
{
    return update(g, "Assign", var, value, name);
}

rill_output rill_assign_add(rill_graph *g, rill_output var, rill_output value, const char *name)
{
    return update(g, "AssignAdd", var, value, name);
}

rill_output rill_assign_sub(rill_graph *g, rill_output var, rill_output value, const char *name)
{
    return update(g, "AssignSub", var, value, name);
}

rill_output rill_train_get_global_step(const rill_graph *g)
{
    rill_node *n[1];
    if (rill_graph_get_collection(g, "global_step", n, 1) > 0) return (rill_output){n[0], 0};
    return (rill_output){NULL, 0};
}

rill_output rill_train_get_or_create_global_step(rill_graph *g)
{
    rill_output gs = rill_train_get_global_step(g);
    if (gs.node || !rill_graph_ok(g)) return gs;
    rill_graph_push_name_scope(g, "/");
    rill_graph_push_control_dependencies(g, NULL, 0);
    gs = rill_variable(g, RILL_INT64, rill_shape_scalar(), rill_zeros_initializer(), false,
                       "global_step");
    rill_graph_pop_control_dependencies(g);
    rill_graph_pop_name_scope(g);
    if (gs.node) rill_graph_add_to_collection(g, "global_step", gs.node);
    return gs;
}
