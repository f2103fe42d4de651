/* optimizers.c - tf.train's GradientDescent, Momentum, Adam, Adagrad, RMSProp, Adadelta, Ftrl,
 * ProximalAdagrad and ProximalGradientDescent optimizers.
 *
 * compute_gradients differentiates the loss for the trainable variables; apply_gradients adds
 * one Apply* op per variable under the optimizer's name scope (slot variables such as
 * "<var>/Momentum" are created on first use, zero-initialised), and, when given a global step,
 * an AssignAdd of 1 that runs after every update: the op returned is the training step.
 * A gradient that IndexedSlicesToDense made (a gather's) updates only the rows it names
 * (apply_sparse), as TF's _apply_sparse. */
#include "../graph/graph_internal.h"

#include <string.h>

typedef enum {
    OPT_SGD,
    OPT_MOMENTUM,
    OPT_ADAM,
    OPT_ADAGRAD,
    OPT_RMSPROP,
    OPT_ADADELTA,
    OPT_FTRL,
    OPT_PROXIMAL_ADAGRAD,
    OPT_PROXIMAL_SGD,
    OPT_ADAGRAD_DA
} opt_kind;

struct rill_optimizer {
    opt_kind kind;
    double lr, momentum, beta1, beta2, epsilon, initial_accumulator;
    bool nesterov;
    rill_output lr_tensor; /* when set, the learning rate comes from this scalar */
    /* Adam's beta powers belong to this optimizer in the graph it last built into (TF keys its
     * non-slot variables by graph): a second Adam gets "beta1_power_1". Kept by name and looked
     * up again, so a freed graph is never touched. */
    const rill_graph *beta_graph;
    char *beta_names[2];
    /* RMSProp: decay (and nesterov holds centered); Adadelta: rho in decay; Ftrl: all but
     * decay; the proximal ones: l1 and l2. */
    double decay, l1, l2, l2_shrinkage, lr_power, beta;
    rill_output global_step; /* AdagradDA: the step its updates read (TF's global_step) */
};

static rill_optimizer *opt_new(opt_kind k)
{
    rill_optimizer *o = rill__calloc(1, sizeof *o);
    RILL_CHECK_ALLOC(o);
    o->kind = k;
    return o;
}

rill_optimizer *rill_gradient_descent_optimizer_new(double learning_rate)
{
    rill_optimizer *o = opt_new(OPT_SGD);
    o->lr = learning_rate;
    return o;
}

rill_optimizer *rill_momentum_optimizer_new(double learning_rate, double momentum,
                                            bool use_nesterov)
{
    rill_optimizer *o = opt_new(OPT_MOMENTUM);
    o->lr = learning_rate;
    o->momentum = momentum;
    o->nesterov = use_nesterov;
    return o;
}

rill_optimizer *rill_adam_optimizer_new(double learning_rate, double beta1, double beta2,
                                        double epsilon)
{
    rill_optimizer *o = opt_new(OPT_ADAM);
    o->lr = learning_rate;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->epsilon = epsilon;
    return o;
}

rill_optimizer *rill_adagrad_optimizer_new(double learning_rate, double initial_accumulator_value)
{
    if (!(initial_accumulator_value > 0)) return NULL;
    rill_optimizer *o = opt_new(OPT_ADAGRAD);
    o->lr = learning_rate;
    o->initial_accumulator = initial_accumulator_value;
    return o;
}

rill_optimizer *rill_rmsprop_optimizer_new(double learning_rate, double decay, double momentum,
                                           double epsilon, bool centered)
{
    rill_optimizer *o = opt_new(OPT_RMSPROP);
    o->lr = learning_rate;
    o->decay = decay;
    o->momentum = momentum;
    o->epsilon = epsilon;
    o->nesterov = centered;
    return o;
}

rill_optimizer *rill_adadelta_optimizer_new(double learning_rate, double rho, double epsilon)
{
    rill_optimizer *o = opt_new(OPT_ADADELTA);
    o->lr = learning_rate;
    o->decay = rho;
    o->epsilon = epsilon;
    return o;
}

rill_optimizer *rill_ftrl_optimizer_new(double learning_rate, double learning_rate_power,
                                        double initial_accumulator_value, double l1, double l2,
                                        double l2_shrinkage, double beta)
{
    if (!(learning_rate_power <= 0) || !(initial_accumulator_value >= 0) || !(l1 >= 0) ||
        !(l2 >= 0) || !(l2_shrinkage >= 0))
        return NULL;
    rill_optimizer *o = opt_new(OPT_FTRL);
    o->lr = learning_rate;
    o->lr_power = learning_rate_power;
    o->initial_accumulator = initial_accumulator_value;
    o->l1 = l1;
    o->l2 = l2;
    o->l2_shrinkage = l2_shrinkage;
    o->beta = beta;
    return o;
}

rill_optimizer *rill_proximal_adagrad_optimizer_new(double learning_rate,
                                                    double initial_accumulator_value, double l1,
                                                    double l2)
{
    if (!(initial_accumulator_value > 0)) return NULL;
    rill_optimizer *o = opt_new(OPT_PROXIMAL_ADAGRAD);
    o->lr = learning_rate;
    o->initial_accumulator = initial_accumulator_value;
    o->l1 = l1;
    o->l2 = l2;
    return o;
}

rill_optimizer *rill_proximal_gradient_descent_optimizer_new(double learning_rate, double l1,
                                                             double l2)
{
    rill_optimizer *o = opt_new(OPT_PROXIMAL_SGD);
    o->lr = learning_rate;
    o->l1 = l1;
    o->l2 = l2;
    return o;
}

rill_optimizer *rill_adagrad_da_optimizer_new(double learning_rate, rill_output global_step,
                                              double initial_gradient_squared_accumulator_value,
                                              double l1, double l2)
{
    if (!global_step.node) return NULL;
    rill_optimizer *o = opt_new(OPT_ADAGRAD_DA);
    o->lr = learning_rate;
    o->global_step = global_step;
    o->initial_accumulator = initial_gradient_squared_accumulator_value;
    o->l1 = l1;
    o->l2 = l2;
    return o;
}

void rill_optimizer_set_learning_rate_tensor(rill_optimizer *o, rill_output lr)
{
    o->lr_tensor = lr;
}

void rill_optimizer_free(rill_optimizer *o)
{
    if (!o) return;
    rill__free(o->beta_names[0]);
    rill__free(o->beta_names[1]);
    rill__free(o);
}

const char *rill_optimizer_name(const rill_optimizer *o)
{
    switch (o->kind) {
    case OPT_SGD:
        return "GradientDescent";
    case OPT_MOMENTUM:
        return "Momentum";
    case OPT_ADAGRAD:
        return "Adagrad";
    case OPT_RMSPROP:
        return "RMSProp";
    case OPT_ADADELTA:
        return "Adadelta";
    case OPT_FTRL:
        return "Ftrl";
    case OPT_PROXIMAL_ADAGRAD:
        return "ProximalAdagrad";
    case OPT_PROXIMAL_SGD:
        return "ProximalGradientDescent";
    case OPT_ADAGRAD_DA:
        return "AdagradDA";
    default:
        return "Adam";
    }
}

int rill_optimizer_compute_gradients(rill_optimizer *o, rill_graph *g, rill_output loss,
                                     const rill_output *var_list, int nvars, rill_grad_and_var *out,
                                     int cap)
{
    (void)o;
    if (!rill_graph_ok(g)) return -1;
    rill_output *vars = NULL;
    if (!var_list || nvars <= 0) {
        nvars = rill_graph_trainable_variables(g, NULL, 0);
        vars = rill__malloc((size_t)(nvars ? nvars : 1) * sizeof *vars);
        RILL_CHECK_ALLOC(vars);
        rill_graph_trainable_variables(g, vars, nvars);
        var_list = vars;
    }
    if (nvars == 0) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "No variables to optimize.");
        rill__free(vars);
        return -1;
    }
    rill_output *dx = rill__malloc((size_t)nvars * sizeof *dx);
    RILL_CHECK_ALLOC(dx);
    /* Gated as TF's default GATE_OP: an update may start only once every gradient of the op
     * that produced its gradient exists, so none of them reads the variable after the update
     * (variables are read when their consumer runs): the same bits whatever the schedule. */
    bool ok = rill__gradients(g, &loss, 1, var_list, nvars, NULL, dx, true);
    for (int i = 0; ok && i < nvars && i < cap; i++)
        out[i] = (rill_grad_and_var){dx[i], var_list[i]};
    rill__free(dx);
    rill__free(vars);
    return ok ? nvars : -1;
}

/* A slot variable "<var>/<slot>" shaped like var, every element init (created once). */
static rill_output slot(rill_graph *g, rill_output var, const char *name, double init)
{
    char *full = rill__asprintf("%s/%s", var.node->name, name);
    rill_node *existing = rill_graph_find_node(g, full);
    rill_output v;
    if (existing) {
        v = (rill_output){existing, 0};
    } else {
        rill_graph_push_name_scope(g, "/");
        rill_graph_push_control_dependencies(g, NULL, 0);
        /* Slots live with their variable (TF creates them under colocate_with(var)). */
        rill_graph_push_colocate_with(g, var.node);
        v = rill_variable(g, rill_output_dtype(var), rill_output_shape(var),
                          init == 0 ? rill_zeros_initializer() : rill_constant_initializer(init),
                          false, full);
        rill_graph_pop_colocate_with(g);
        rill_graph_pop_control_dependencies(g);
        rill_graph_pop_name_scope(g);
    }
    rill__free(full);
    return v;
}

/* This optimizer's non-slot scalar variable i (Adam's beta powers) in g: created on first use
 * under the root scope, then found again by the name it got. */
static rill_output beta_power(rill_optimizer *o, rill_graph *g, int i, const char *name,
                              double init)
{
    if (o->beta_graph != g) {
        rill__free(o->beta_names[0]);
        rill__free(o->beta_names[1]);
        o->beta_names[0] = o->beta_names[1] = NULL;
        o->beta_graph = g;
    }
    if (o->beta_names[i]) {
        rill_node *existing = rill_graph_find_node(g, o->beta_names[i]);
        if (existing && rill__is_variable((rill_output){existing, 0}))
            return (rill_output){existing, 0};
    }
    rill_graph_push_name_scope(g, "/");
    rill_graph_push_control_dependencies(g, NULL, 0);
    rill_output v = rill_variable(g, RILL_FLOAT, rill_shape_scalar(),
                                  rill_constant_initializer(init), false, name);
    rill_graph_pop_control_dependencies(g);
    rill_graph_pop_name_scope(g);
    if (v.node) {
        rill__free(o->beta_names[i]);
        o->beta_names[i] = rill__strdup(v.node->name);
    }
    return v;
}

/* The updates of the optimizers TF 1.x adds beyond the four above (ops_apply.c), with TF's
 * slots in TF's creation order (the names get _1, _2 in that order). With indices set, grad is
 * an IndexedSlices' values and the update is the op's sparse twin (ops_sparse_apply.c: the
 * same inputs with indices right after grad), as TF's _apply_sparse. */
static rill_output apply_more(rill_optimizer *o, rill_graph *g, rill_output grad, rill_output var,
                              rill_output lr, rill_output indices)
{
    rill_dtype t = rill_output_dtype(var);
#define C(x) rill__scalar_like(g, t, (x))
    rill_output in[11];
    int n = 0, gi = 0;
    const char *op;
#define IN(...)                                                                                    \
    do {                                                                                           \
        rill_output xs_[] = {__VA_ARGS__};                                                         \
        for (size_t k_ = 0; k_ < sizeof xs_ / sizeof xs_[0]; k_++) in[n++] = xs_[k_];              \
    } while (0)
#define GRAD()                                                                                     \
    do {                                                                                           \
        gi = n;                                                                                    \
        in[n++] = grad;                                                                            \
    } while (0)
    switch (o->kind) {
    case OPT_RMSPROP: {
        rill_output rms = slot(g, var, "RMSProp", 1.0);
        if (o->nesterov) {
            rill_output mg = slot(g, var, "RMSProp_1", 0), mom = slot(g, var, "RMSProp_2", 0);
            op = "ApplyCenteredRMSProp";
            IN(var, mg, rms, mom, lr, C(o->decay), C(o->momentum), C(o->epsilon));
        } else {
            rill_output mom = slot(g, var, "RMSProp_1", 0);
            op = "ApplyRMSProp";
            IN(var, rms, mom, lr, C(o->decay), C(o->momentum), C(o->epsilon));
        }
        GRAD();
        break;
    }
    case OPT_ADADELTA: {
        rill_output acc = slot(g, var, "Adadelta", 0), upd = slot(g, var, "Adadelta_1", 0);
        op = "ApplyAdadelta";
        IN(var, acc, upd, lr, C(o->decay), C(o->epsilon));
        GRAD();
        break;
    }
    case OPT_FTRL: {
        rill_output acc = slot(g, var, "Ftrl", o->initial_accumulator);
        rill_output lin = slot(g, var, "Ftrl_1", 0);
        /* TF's adjusted l2: l2 + beta / (2 lr) */
        rill_output l2 =
            o->beta == 0 ? C(o->l2)
            : !o->lr_tensor.node
                ? C(o->l2 + o->beta / (2 * o->lr))
                : rill_add(g, C(o->l2), rill_div(g, C(o->beta), rill_mul(g, C(2), lr, NULL), NULL),
                           NULL);
        IN(var, acc, lin);
        GRAD();
        if (o->l2_shrinkage <= 0) {
            op = "ApplyFtrl";
            IN(lr, C(o->l1), l2, C(o->lr_power));
        } else {
            op = "ApplyFtrlV2";
            IN(lr, C(o->l1), l2, C(o->l2_shrinkage), C(o->lr_power));
        }
        break;
    }
    case OPT_PROXIMAL_ADAGRAD: {
        rill_output acc = slot(g, var, "ProximalAdagrad", o->initial_accumulator);
        op = "ApplyProximalAdagrad";
        IN(var, acc, lr, C(o->l1), C(o->l2));
        GRAD();
        break;
    }
    case OPT_ADAGRAD_DA: {
        /* TF's slots: "gradient_accumulator" (zeros) then "gradient_squared_accumulator" */
        rill_output ga = slot(g, var, "AdagradDA", 0);
        rill_output gg = slot(g, var, "AdagradDA_1", o->initial_accumulator);
        if (indices.node) {
            /* TF's _apply_sparse_duplicate_indices: the rows of a repeated index summed into
             * one (the op itself accumulates each occurrence) */
            rill__attr ua[] = {RILL__A_TYPE("out_idx", rill_output_dtype(indices))};
            rill_node *u = rill__node_create(g, "Unique", NULL, &indices, 1, ua, 1);
            rill_output ys = {u, 0}, pos = {u, 1};
            rill_output size = {rill__node_create(g, "Size", NULL, &ys, 1, NULL, 0), 0};
            rill_output sin[] = {grad, pos, size};
            grad = (rill_output){rill__node_create(g, "UnsortedSegmentSum", NULL, sin, 3, NULL, 0),
                                 0};
            indices = ys;
        }
        op = "ApplyAdagradDA";
        IN(var, ga, gg);
        GRAD();
        /* TF's _prepare: the step the update reads is global_step + 1 */
        rill_output step = rill_identity(g, o->global_step, NULL);
        step = rill_add(g, step, rill__scalar_like(g, rill_output_dtype(step), 1), NULL);
        IN(lr, C(o->l1), C(o->l2), step);
        break;
    }
    default:
        op = "ApplyProximalGradientDescent";
        IN(var, lr, C(o->l1), C(o->l2));
        GRAD();
        break;
    }
#undef GRAD
#undef IN
#undef C
    char *sparse_op = NULL;
    if (indices.node) {
        memmove(&in[gi + 2], &in[gi + 1], (size_t)(n - gi - 1) * sizeof in[0]);
        in[gi + 1] = indices;
        n++;
        op = sparse_op = rill__asprintf("Sparse%s", op);
    }
    rill_output r = {rill__node_create(g, op, NULL, in, n, NULL, 0), 0};
    rill__free(sparse_op);
    return r;
}

/* --- sparse gradients (TF's _apply_sparse) ---
 * A gradient made by IndexedSlicesToDense (the gradient of a gather, ops_index.c) along axis 0
 * into exactly var's shape names the rows it touches: its inputs 0 and 1 are TF's
 * IndexedSlices values and indices. Those updates touch only those rows (Adam: its m and v
 * decay everywhere, as TF's). */
static rill_node *sparse_gradient(rill_output grad, rill_output var)
{
    rill_node *n = grad.node;
    if (!n || strcmp(n->op->name, "IndexedSlicesToDense") != 0 ||
        rill__attr_int(n, "axis", 0) != 0 || rill__attr_bool(n, "drop_negatives", false))
        return NULL;
    rill_shape gs = rill_output_shape(grad), vs = rill_output_shape(var);
    if (!rill_shape_is_fully_defined(&gs) || !rill_shape_equal(&gs, &vs)) return NULL;
    rill_shape ix = rill_output_shape(n->inputs[1]), v = rill_output_shape(n->inputs[0]);
    /* the sparse ops take [N, ...] values for [N] indices, as the gather gradient builds them */
    if (ix.rank != 1 || v.rank != vs.rank) return NULL;
    return n;
}

/* The sparse update of var by the slices (values, indices) of node sl, or {NULL} when this
 * optimizer has none (then the dense update applies). */
static rill_output apply_sparse(rill_optimizer *o, rill_graph *g, rill_node *sl, rill_output var,
                                rill_output lr, rill_output b1p, rill_output b2p)
{
    rill_dtype t = rill_output_dtype(var);
    rill_output values = sl->inputs[0], indices = sl->inputs[1];
    switch (o->kind) {
    case OPT_SGD: {
        /* TF's GradientDescentOptimizer._apply_sparse_duplicate_indices: var.scatter_sub of
         * lr * values (a scatter sums repeated indices by itself) */
        rill_output in[] = {var, indices, rill_mul(g, values, lr, NULL)};
        return (rill_output){rill__node_create(g, "ScatterSub", NULL, in, 3, NULL, 0), 0};
    }
    case OPT_MOMENTUM: {
        rill_output in[] = {var,     slot(g, var, "Momentum", 0),         lr, values,
                            indices, rill__scalar_like(g, t, o->momentum)};
        rill__attr a[] = {RILL__A_BOOL("use_nesterov", o->nesterov)};
        return (rill_output){rill__node_create(g, "SparseApplyMomentum", NULL, in, 6, a, 1), 0};
    }
    case OPT_ADAGRAD: {
        rill_output in[] = {var, slot(g, var, "Adagrad", o->initial_accumulator), lr, values,
                            indices};
        return (rill_output){rill__node_create(g, "SparseApplyAdagrad", NULL, in, 5, NULL, 0), 0};
    }
    case OPT_ADAM: {
        rill_output in[] = {var,
                            slot(g, var, "Adam", 0),
                            slot(g, var, "Adam_1", 0),
                            rill_cast(g, b1p, t, NULL),
                            rill_cast(g, b2p, t, NULL),
                            lr,
                            rill__scalar_like(g, t, o->beta1),
                            rill__scalar_like(g, t, o->beta2),
                            rill__scalar_like(g, t, o->epsilon),
                            values,
                            indices};
        return (rill_output){rill__node_create(g, "_SparseApplyAdam", NULL, in, 11, NULL, 0), 0};
    }
    default:
        return apply_more(o, g, values, var, lr, indices);
    }
}

static rill_output apply_one(rill_optimizer *o, rill_graph *g, rill_output grad, rill_output var,
                             rill_output b1p, rill_output b2p)
{
    rill_dtype t = rill_output_dtype(var);
    rill_output lr = !o->lr_tensor.node                     ? rill__scalar_like(g, t, o->lr)
                     : rill_output_dtype(o->lr_tensor) == t ? o->lr_tensor
                                                            : rill_cast(g, o->lr_tensor, t, NULL);
    rill_node *sl = sparse_gradient(grad, var);
    if (sl) {
        rill_output u = apply_sparse(o, g, sl, var, lr, b1p, b2p);
        if (u.node || !rill_graph_ok(g)) return u;
    }
    switch (o->kind) {
    case OPT_SGD: {
        rill_output in[] = {var, lr, grad};
        return (rill_output){rill__node_create(g, "ApplyGradientDescent", NULL, in, 3, NULL, 0), 0};
    }
    case OPT_MOMENTUM: {
        rill_output in[] = {var, slot(g, var, "Momentum", 0), lr, grad,
                            rill__scalar_like(g, t, o->momentum)};
        rill__attr a[] = {RILL__A_BOOL("use_nesterov", o->nesterov)};
        return (rill_output){rill__node_create(g, "ApplyMomentum", NULL, in, 5, a, 1), 0};
    }
    case OPT_ADAGRAD: {
        rill_output in[] = {var, slot(g, var, "Adagrad", o->initial_accumulator), lr, grad};
        return (rill_output){rill__node_create(g, "ApplyAdagrad", NULL, in, 4, NULL, 0), 0};
    }
    case OPT_RMSPROP:
    case OPT_ADADELTA:
    case OPT_FTRL:
    case OPT_PROXIMAL_ADAGRAD:
    case OPT_PROXIMAL_SGD:
    case OPT_ADAGRAD_DA:
        return apply_more(o, g, grad, var, lr, (rill_output){NULL, 0});
    default: {
        rill_output in[] = {var,
                            slot(g, var, "Adam", 0),
                            slot(g, var, "Adam_1", 0),
                            rill_cast(g, b1p, t, NULL),
                            rill_cast(g, b2p, t, NULL),
                            lr,
                            rill__scalar_like(g, t, o->beta1),
                            rill__scalar_like(g, t, o->beta2),
                            rill__scalar_like(g, t, o->epsilon),
                            grad};
        return (rill_output){rill__node_create(g, "ApplyAdam", NULL, in, 10, NULL, 0), 0};
    }
    }
}

rill_node *rill_optimizer_apply_gradients(rill_optimizer *o, rill_graph *g,
                                          const rill_grad_and_var *gv, int n,
                                          rill_output global_step, const char *name)
{
    if (!rill_graph_ok(g)) return NULL;
    rill_output b1p = {NULL, 0}, b2p = {NULL, 0};
    if (o->kind == OPT_ADAM) {
        b1p = beta_power(o, g, 0, "beta1_power", o->beta1);
        b2p = beta_power(o, g, 1, "beta2_power", o->beta2);
    }
    rill_graph_push_name_scope(g, name ? name : rill_optimizer_name(o));
    /* The step op takes the scope's own name ("train"), as TF's apply_gradients does. */
    char *scope = rill__strdup(rill__graph_scope_prefix(g));
    rill_node **updates = rill__malloc((size_t)(n + 2) * sizeof *updates);
    RILL_CHECK_ALLOC(updates);
    int nu = 0;
    for (int i = 0; i < n; i++) {
        if (!gv[i].grad.node) continue;
        if (!rill__is_variable(gv[i].var)) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT, "apply_gradients: '%s' is not a variable",
                             gv[i].var.node ? gv[i].var.node->name : "(empty)");
            break;
        }
        char *sc = rill__asprintf("update_%s", gv[i].var.node->name);
        for (char *p = sc; *p; p++)
            if (*p == '/') *p = '_';
        rill_graph_push_name_scope(g, sc);
        rill__free(sc);
        updates[nu++] = apply_one(o, g, gv[i].grad, gv[i].var, b1p, b2p).node;
        rill_graph_pop_name_scope(g);
    }
    if (nu == 0 && rill_graph_ok(g)) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "No gradients provided for any variable.");
    }
    rill_node *result = NULL;
    if (rill_graph_ok(g) && o->kind == OPT_ADAM) {
        /* beta powers advance after every update of this step */
        rill_graph_push_control_dependencies(g, updates, nu);
        rill_output u1 = rill_assign(
            g, b1p, rill_mul(g, b1p, rill__scalar_like(g, RILL_FLOAT, o->beta1), NULL), NULL);
        rill_output u2 = rill_assign(
            g, b2p, rill_mul(g, b2p, rill__scalar_like(g, RILL_FLOAT, o->beta2), NULL), NULL);
        rill_graph_pop_control_dependencies(g);
        updates[nu++] = u1.node;
        updates[nu++] = u2.node;
    }
    rill_graph_pop_name_scope(g);
    if (rill_graph_ok(g)) {
        if (global_step.node) {
            rill_graph_push_control_dependencies(g, updates, nu);
            rill_output one = rill__scalar_like(g, rill_output_dtype(global_step), 1);
            result = rill_assign_add(g, global_step, one, scope).node;
            rill_graph_pop_control_dependencies(g);
        } else {
            result = rill_group(g, updates, nu, scope);
        }
    }
    rill__free(updates);
    rill__free(scope);
    return rill_graph_ok(g) ? result : NULL;
}

rill_node *rill_optimizer_minimize(rill_optimizer *o, rill_graph *g, rill_output loss,
                                   rill_output global_step, const char *name)
{
    int nv = rill_graph_trainable_variables(g, NULL, 0);
    rill_grad_and_var *gv = rill__malloc((size_t)(nv ? nv : 1) * sizeof *gv);
    RILL_CHECK_ALLOC(gv);
    int n = rill_optimizer_compute_gradients(o, g, loss, NULL, 0, gv, nv);
    rill_node *r = n < 0 ? NULL : rill_optimizer_apply_gradients(o, g, gv, n, global_step, name);
    rill__free(gv);
    return r;
}
