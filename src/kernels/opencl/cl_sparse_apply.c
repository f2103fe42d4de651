/* cl_sparse_apply.c - OpenCL kernels for the row-wise updates of variables on a GPU:
 * ScatterUpdate / ScatterAdd / ScatterSub (float, double, half) and SparseApplyMomentum,
 * SparseApplyAdagrad, _SparseApplyAdam (float, double), so that an embedding trained on /gpu:0
 * keeps its variables and their updates there (as TF's GPU kernels do).
 *
 * The indices live in host memory: they are checked there with the CPU kernels' texts
 * (cpu_index.c, cpu_sparse_apply.c) and grouped by distinct index in order of first appearance
 * (uniq; offs/rows: for distinct index r, the positions of its rows in updates or grad), which
 * are uploaded. One work item per (distinct row, column) sums its rows in order, as the CPU's
 * dedup does, and updates the variable element; ScatterUpdate keeps the last row (the CPU's
 * order). _SparseApplyAdam has one work item per element of var (every row decays), with a
 * per-row map to the distinct index (-1: untouched). The variables are made writable on the
 * device as cl_state.c's updates (copy-on-write). */
#include "../cpu/cpu_rows.h"
#include "cl_kernels.h"

#include <math.h>
#include <string.h>

const char rill__cl_source_sparse_apply[] =
    "ACC sp_sum(__global const T *g, __global const long *offs, __global const long *rows,\n"
    "           long r, long inner, long j, int scalar)\n"
    "{\n"
    "    ACC s = 0;\n"
    "    for (long k = offs[r]; k < offs[r + 1]; k++) s += LD(g, scalar ? 0 : rows[k] * inner + "
    "j);\n"
    "    return s;\n"
    "}\n"
    "__kernel void sp_scatter(__global T *w, __global const T *u, __global const long *uniq,\n"
    "                         __global const long *offs, __global const long *rows, int mode,\n"
    "                         int scalar, long inner, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long r = i / inner, j = i - r * inner, d = uniq[r] * inner + j;\n"
    "    if (mode == 0) {\n"
    "        ST(w, d, LD(u, scalar ? 0 : rows[offs[r + 1] - 1] * inner + j));\n"
    "        return;\n"
    "    }\n"
    "    ACC s = LD(w, d);\n"
    "    for (long k = offs[r]; k < offs[r + 1]; k++) {\n"
    "        ACC x = LD(u, scalar ? 0 : rows[k] * inner + j);\n"
    "        s = mode > 0 ? s + x : s - x;\n"
    "    }\n"
    "    ST(w, d, s);\n"
    "}\n"
    "__kernel void sp_momentum(__global T *w, __global T *a, __global const T *g,\n"
    "                          __global const long *uniq, __global const long *offs,\n"
    "                          __global const long *rows, ACC lr, ACC mom, int nesterov,\n"
    "                          long inner, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long r = i / inner, j = i - r * inner, d = uniq[r] * inner + j;\n"
    "    ACC gs = sp_sum(g, offs, rows, r, inner, j, 0);\n"
    "    ACC ac = LD(a, d) * mom + gs;\n"
    "    ST(a, d, ac);\n"
    "    ST(w, d, LD(w, d) - (nesterov ? gs * lr + ac * mom * lr : ac * lr));\n"
    "}\n"
    "__kernel void sp_adagrad(__global T *w, __global T *a, __global const T *g,\n"
    "                         __global const long *uniq, __global const long *offs,\n"
    "                         __global const long *rows, ACC lr, int update_slots, long inner,\n"
    "                         long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long r = i / inner, j = i - r * inner, d = uniq[r] * inner + j;\n"
    "    ACC gs = sp_sum(g, offs, rows, r, inner, j, 0), ac = LD(a, d);\n"
    "    if (update_slots) {\n"
    "        ac += gs * gs;\n"
    "        ST(a, d, ac);\n"
    "    }\n"
    "    ST(w, d, LD(w, d) - lr * gs / sqrt(ac));\n"
    "}\n"
    "__kernel void sp_adam(__global T *w, __global T *m, __global T *v, __global const T *g,\n"
    "                      __global const long *slot, __global const long *offs,\n"
    "                      __global const long *rows, ACC lr_t, ACC b1, ACC b2, ACC eps,\n"
    "                      long inner, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long row = i / inner, j = i - row * inner, r = slot[row];\n"
    "    ACC mi = LD(m, i) * b1, vi = LD(v, i) * b2;\n"
    "    if (r >= 0) {\n"
    "        ACC gs = sp_sum(g, offs, rows, r, inner, j, 0);\n"
    "        mi += gs * (1 - b1);\n"
    "        vi += gs * gs * (1 - b2);\n"
    "    }\n"
    "    ST(m, i, mi);\n"
    "    ST(v, i, vi);\n"
    "    ST(w, i, LD(w, i) - lr_t * mi / (sqrt(vi) + eps));\n"
    "}\n";

/* The indices grouped by distinct value, uploaded: uniq[nu], offs[nu + 1], rows[n], and, when
 * want_slot, slot[limit] (the distinct number of each row of the variable, -1 when absent). */
typedef struct groups {
    cl_long nu;
    cl_mem uniq, offs, rows, slot;
} groups;

static void groups_release(groups *gr)
{
    cl_mem *m[] = {&gr->uniq, &gr->offs, &gr->rows, &gr->slot};
    for (int i = 0; i < 4; i++)
        if (*m[i]) clReleaseMemObject(*m[i]);
}

static cl_mem upload(rill__kctx *ctx, const void *p, size_t n, bool *ok)
{
    if (!*ok) return NULL;
    cl_int err;
    cl_mem m = clCreateBuffer(rill__cl(ctx->device)->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              n ? n : sizeof(cl_long), (void *)p, &err);
    if (err == CL_SUCCESS) return m;
    rill_status *s = rill_status_new();
    rill__cl_check(err, "upload indices", s);
    rill__kctx_fail_with(ctx, s);
    *ok = false;
    return NULL;
}

/* sparse_apply: the sparse optimizers' text for a bad index, else the scatters'. */
static bool group(rill__kctx *ctx, const rill_tensor *ix, int64_t limit, bool sparse_apply,
                  bool want_slot, groups *gr)
{
    memset(gr, 0, sizeof *gr);
    if (!rill__tensor_on_host(ix)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: indices must be in host memory",
                        ctx->node->op->name);
        return false;
    }
    int64_t n = ix->numel;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = rill__index_at(ix, i);
        if (v >= 0 && v < limit) continue;
        if (sparse_apply) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Index %lld at offset %lld in indices is out of range", (long long)v,
                            (long long)i);
        } else {
            char pos[128];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices%s = %lld is not in [0, %lld)",
                            rill__index_pos(&ix->shape, i, pos, sizeof pos), (long long)v,
                            (long long)limit);
        }
        return false;
    }
    int64_t *slot = rill__malloc((size_t)(limit ? limit : 1) * sizeof *slot);
    cl_long *uniq = rill__malloc((size_t)(n ? n : 1) * sizeof *uniq);
    cl_long *offs = rill__calloc((size_t)n + 2, sizeof *offs);
    cl_long *rows = rill__malloc((size_t)(n ? n : 1) * sizeof *rows);
    cl_long *fill = rill__calloc((size_t)n + 1, sizeof *fill);
    RILL_CHECK_ALLOC(slot && uniq && offs && rows && fill);
    for (int64_t r = 0; r < limit; r++) slot[r] = -1;
    cl_long nu = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = rill__index_at(ix, i);
        if (slot[v] < 0) {
            slot[v] = nu;
            uniq[nu++] = v;
        }
        offs[slot[v] + 1]++;
    }
    for (cl_long r = 0; r < nu; r++) offs[r + 1] += offs[r];
    for (int64_t i = 0; i < n; i++) {
        int64_t s = slot[rill__index_at(ix, i)];
        rows[offs[s] + fill[s]++] = i;
    }
    bool ok = true;
    gr->nu = nu;
    gr->uniq = upload(ctx, uniq, (size_t)nu * sizeof *uniq, &ok);
    gr->offs = upload(ctx, offs, (size_t)(nu + 1) * sizeof *offs, &ok);
    gr->rows = upload(ctx, rows, (size_t)n * sizeof *rows, &ok);
    if (want_slot) {
        _Static_assert(sizeof(int64_t) == sizeof(cl_long), "cl_long is 64 bits");
        gr->slot = upload(ctx, slot, (size_t)limit * sizeof *slot, &ok);
    }
    rill__free(slot);
    rill__free(uniq);
    rill__free(offs);
    rill__free(rows);
    rill__free(fill);
    if (!ok) groups_release(gr);
    return ok;
}

typedef struct sp_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} sp_acc;

static sp_acc acc_of(rill_dtype t, double x)
{
    sp_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}
#define SP_ACC(a) ((rill__cl_arg){(a).size, &(a).v})

/* v's value on this device, writable (cl_state.c's rule). Lock held. */
static rill_tensor *writable(rill__kctx *ctx, rill__var *v)
{
    if (!v->value) {
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                        v->name);
        return NULL;
    }
    if (v->value->buf->dev != ctx->device || !rill__tensor_exclusive(v->value)) {
        rill_status *s = rill_status_new();
        rill_tensor *c = rill__tensor_copy_to(v->value, ctx->device, s);
        if (!c) {
            rill__kctx_fail_with(ctx, s);
            return NULL;
        }
        rill_status_free(s);
        rill_tensor_free(v->value);
        v->value = c;
    }
    return v->value;
}

static bool device_input(rill__kctx *ctx, int i)
{
    if (ctx->inputs[i]->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device->name);
    return false;
}

static int64_t inner_of(const rill_shape *s)
{
    int64_t p = 1;
    for (int d = 1; d < s->rank; d++) p *= s->dims[d];
    return p;
}

static void scatter_kernel(rill__kctx *ctx, cl_int mode)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *ix = ctx->inputs[1], *u = ctx->inputs[2];
    if (v->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: the variable must be at least a vector",
                        ctx->node->op->name);
        return;
    }
    cl_long inner = inner_of(&v->shape);
    cl_int scalar = u->shape.rank == 0;
    if (!scalar && u->numel != ix->numel * inner) {
        char a[96], b[96], c[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Must have updates.shape = indices.shape + params.shape[1:] or "
                        "updates.shape = [], got updates.shape %s, indices.shape %s, "
                        "params.shape %s",
                        rill_shape_str(&u->shape, a, sizeof a),
                        rill_shape_str(&ix->shape, b, sizeof b),
                        rill_shape_str(&v->shape, c, sizeof c));
        return;
    }
    groups gr;
    if (!device_input(ctx, 2) || !group(ctx, ix, v->shape.dims[0], false, false, &gr)) return;
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = writable(ctx, v);
    if (t) {
        cl_mem wm = rill__cl_mem(t), um = rill__cl_mem(u);
        cl_long total = gr.nu * inner;
        rill__cl_arg args[] = {RILL__CL_ARG(wm),      RILL__CL_ARG(um),      RILL__CL_ARG(gr.uniq),
                               RILL__CL_ARG(gr.offs), RILL__CL_ARG(gr.rows), RILL__CL_ARG(mode),
                               RILL__CL_ARG(scalar),  RILL__CL_ARG(inner),   RILL__CL_ARG(total)};
        if (total == 0 || rill__cl_launch(ctx, "sp_scatter", t->dtype, args, 9, total))
            rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
    groups_release(&gr);
}

static void scatter_update_kernel(rill__kctx *ctx)
{
    scatter_kernel(ctx, 0);
}

static void scatter_add_kernel(rill__kctx *ctx)
{
    scatter_kernel(ctx, 1);
}

static void scatter_sub_kernel(rill__kctx *ctx)
{
    scatter_kernel(ctx, -1);
}

#define LOCK_ALL(n)                                                                                \
    for (int li = 0; li < (n); li++) pthread_mutex_lock(&ctx->vars[li]->mu)
#define UNLOCK_ALL(n)                                                                              \
    for (int li = (n)-1; li >= 0; li--) pthread_mutex_unlock(&ctx->vars[li]->mu)

static double host_scalar(const rill_tensor *t)
{
    return rill_tensor_get_double(t, 0);
}

/* grad [N, var.shape[1:]] for indices [N] (the CPU's text). */
static bool grad_fits(rill__kctx *ctx, const rill_tensor *var, int gi, int ii)
{
    if (ctx->inputs[gi]->numel == ctx->inputs[ii]->numel * inner_of(&var->shape))
        return device_input(ctx, gi);
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "grad must be the same size as indices in the first dimension.");
    return false;
}

/* Momentum (adagrad false) or Adagrad: var, accum, lr (host), grad, indices (host)
 * [, momentum (host)]. */
static void one_slot(rill__kctx *ctx, bool adagrad)
{
    double lr = host_scalar(ctx->inputs[2]);
    LOCK_ALL(2);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *acc = var ? writable(ctx, ctx->vars[1]) : NULL;
    groups gr = {0};
    if (acc && grad_fits(ctx, var, 3, 4) &&
        group(ctx, ctx->inputs[4], var->shape.dims[0], true, false, &gr)) {
        rill_dtype t = var->dtype;
        cl_mem wm = rill__cl_mem(var), am = rill__cl_mem(acc), gm = rill__cl_mem(ctx->inputs[3]);
        cl_long inner = inner_of(&var->shape), total = gr.nu * inner;
        sp_acc l = acc_of(t, lr);
        sp_acc mo = acc_of(t, adagrad ? 0 : host_scalar(ctx->inputs[5]));
        cl_int opt = adagrad ? rill__attr_bool(ctx->node, "update_slots", true)
                             : rill__attr_bool(ctx->node, "use_nesterov", false);
        rill__cl_arg args[11] = {
            RILL__CL_ARG(wm),      RILL__CL_ARG(am),      RILL__CL_ARG(gm), RILL__CL_ARG(gr.uniq),
            RILL__CL_ARG(gr.offs), RILL__CL_ARG(gr.rows), SP_ACC(l)};
        int na = 7;
        if (!adagrad) args[na++] = SP_ACC(mo);
        args[na++] = RILL__CL_ARG(opt);
        args[na++] = RILL__CL_ARG(inner);
        args[na++] = RILL__CL_ARG(total);
        if (total == 0 ||
            rill__cl_launch(ctx, adagrad ? "sp_adagrad" : "sp_momentum", t, args, na, total))
            rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    groups_release(&gr);
    UNLOCK_ALL(2);
}

static void sparse_momentum_kernel(rill__kctx *ctx)
{
    one_slot(ctx, false);
}

static void sparse_adagrad_kernel(rill__kctx *ctx)
{
    one_slot(ctx, true);
}

static void sparse_adam_kernel(rill__kctx *ctx)
{
    double b1p = host_scalar(ctx->inputs[3]), b2p = host_scalar(ctx->inputs[4]);
    double lr = host_scalar(ctx->inputs[5]), beta1 = host_scalar(ctx->inputs[6]);
    double beta2 = host_scalar(ctx->inputs[7]), eps = host_scalar(ctx->inputs[8]);
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    LOCK_ALL(3);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *m = var ? writable(ctx, ctx->vars[1]) : NULL;
    rill_tensor *v = m ? writable(ctx, ctx->vars[2]) : NULL;
    groups gr = {0};
    if (v && grad_fits(ctx, var, 9, 10) &&
        group(ctx, ctx->inputs[10], var->shape.dims[0], true, true, &gr)) {
        rill_dtype t = var->dtype;
        cl_mem wm = rill__cl_mem(var), mm = rill__cl_mem(m), vm = rill__cl_mem(v);
        cl_mem gm = rill__cl_mem(ctx->inputs[9]);
        cl_long inner = inner_of(&var->shape), n = var->numel;
        sp_acc l = acc_of(t, lr_t), b1 = acc_of(t, beta1), b2 = acc_of(t, beta2),
               e = acc_of(t, eps);
        rill__cl_arg args[] = {RILL__CL_ARG(wm),
                               RILL__CL_ARG(mm),
                               RILL__CL_ARG(vm),
                               RILL__CL_ARG(gm),
                               RILL__CL_ARG(gr.slot),
                               RILL__CL_ARG(gr.offs),
                               RILL__CL_ARG(gr.rows),
                               SP_ACC(l),
                               SP_ACC(b1),
                               SP_ACC(b2),
                               SP_ACC(e),
                               RILL__CL_ARG(inner),
                               RILL__CL_ARG(n)};
        if (n == 0 || rill__cl_launch(ctx, "sp_adam", t, args, 13, n))
            rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    groups_release(&gr);
    UNLOCK_ALL(3);
}

#define SP_K(OP, FN, T, HOST)                                                                      \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HOST        \
    }
#define SP_FD(OP, FN, HOST)  SP_K(OP, FN, RILL_FLOAT, HOST), SP_K(OP, FN, RILL_DOUBLE, HOST)
#define SP_FDH(OP, FN, HOST) SP_FD(OP, FN, HOST), SP_K(OP, FN, RILL_HALF, HOST)

const rill__kernel_def rill__opencl_kernels_sparse_apply[] = {
    /* ref, indices (host), updates */
    SP_FDH("ScatterUpdate", scatter_update_kernel, 1u << 1),
    SP_FDH("ScatterAdd", scatter_add_kernel, 1u << 1),
    SP_FDH("ScatterSub", scatter_sub_kernel, 1u << 1),
    /* var, accum, lr (host), grad, indices (host), momentum (host) */
    SP_FD("SparseApplyMomentum", sparse_momentum_kernel, 1u << 2 | 1u << 4 | 1u << 5),
    /* var, accum, lr (host), grad, indices (host) */
    SP_FD("SparseApplyAdagrad", sparse_adagrad_kernel, 1u << 2 | 1u << 4),
    /* var, m, v, beta1_power ... epsilon (host), grad, indices (host) */
    SP_FD("_SparseApplyAdam", sparse_adam_kernel, 0x3Fu << 3 | 1u << 10),
    {0},
};
