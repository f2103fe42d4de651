/* test_opencl_reduce_shape.c - the OpenCL kernels of cl_reduce.c (Max, Min, Prod, ArgMin,
 * Cumsum, Cumprod) and cl_shape.c (Transpose, Tile, Pad, MirrorPad, ReverseV2, BroadcastTo,
 * ConcatV2, Pack, Split, SplitV, Unpack, ConcatGrad, OneHot) against the CPU's, float, double and
 * half, over several shapes (odd sizes, size-1 and empty dims, NaN for Max / Min / ArgMin); the
 * int32 entries (host memory); the run-time errors; and the gradients of a graph of them placed
 * on /gpu:0 against /cpu:0. */
#include "backend_ops.h"

#include <rill/train.h>

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

static rill_node *op(rill_graph *g, const char *type, rill_tensor *const *in, int n,
                     const rill__attr *a, int na)
{
    rill_output x[8];
    for (int i = 0; i < n; i++) x[i] = bo_placeholder(g, in[i]);
    rill_node *nd = rill__node_create(g, type, NULL, x, n, a, na);
    if (!nd) fprintf(stderr, "  %s: %s\n", type, rill_status_message(rill_graph_status(g)));
    return nd;
}

static void sprinkle_nan(rill_tensor *t, int every)
{
    for (int64_t i = 3; i < rill_tensor_num_elements(t); i += every) bo__set(t, i, NAN);
}

static const int64_t shp[][4] = {{2, 3, 4, 0}, {7, 1, 129, 0}, {1, 5, 1, 0}, {3, 0, 2, 0}};

static void test_reduce(void)
{
    static const char *const ops[] = {"Max", "Min", "Prod"};
    static const int64_t axes[][2] = {{0, 0}, {1, 0}, {2, 0}, {0, 2}, {-1, 0}};
    static const int naxes[] = {1, 1, 1, 2, 1};
    for (int o = 0; o < 3; o++)
        for (int s = 0; s < 4; s++)
            for (int ti = 0; ti < 3; ti++)
                for (int a = 0; a <= 5; a++)
                    for (int keep = 0; keep < 2; keep++) {
                        rill_tensor *in[1] = {
                            bo_random(flt[ti], shp[s], 3, o == 2 ? 0.5 : -4, o == 2 ? 1.5 : 4)};
                        if (o < 2 && s == 1) sprinkle_nan(in[0], 97);
                        rill__attr at[2] = {RILL__A_BOOL("keep_dims", keep != 0)};
                        int na = 1;
                        if (a < 5) at[na++] = RILL__A_INTS("axes", naxes[a], axes[a]);
                        rill_graph *g = rill_graph_new();
                        bo_check(op(g, ops[o], in, 1, at, na), in,
                                 flt[ti] == RILL_HALF ? 1e-5 : 1e-9);
                        bo_free_all(in, 1);
                        rill_graph_free(g);
                    }
}

static void test_argmin_scan(void)
{
    for (int s = 0; s < 3; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int ax = -1; ax < 3; ax++) {
                rill_tensor *in[1] = {bo_random(flt[ti], shp[s], 3, -4, 4)};
                if (s == 1) sprinkle_nan(in[0], 61);
                for (int ot = 0; ot < 2; ot++) {
                    rill__attr at[] = {RILL__A_INT("axis", ax),
                                       RILL__A_TYPE("output_type", ot ? RILL_INT64 : RILL_INT32)};
                    rill_graph *g = rill_graph_new();
                    if (shp[s][ax < 0 ? 2 : ax] > 0) bo_check(op(g, "ArgMin", in, 1, at, 2), in, 0);
                    rill_graph_free(g);
                }
                bo_free_all(in, 1);
                if (s == 1) continue;
                for (int k = 0; k < 8; k++) {
                    rill_tensor *x[1] = {
                        bo_random(flt[ti], shp[s], 3, k & 1 ? 0.7 : -2, k & 1 ? 1.3 : 2)};
                    rill__attr at[] = {RILL__A_INT("axis", ax), RILL__A_BOOL("exclusive", k & 2),
                                       RILL__A_BOOL("reverse", k & 4)};
                    rill_graph *g = rill_graph_new();
                    bo_check(op(g, k & 1 ? "Cumprod" : "Cumsum", x, 1, at, 3), x,
                             flt[ti] == RILL_HALF ? 1e-5 : 1e-9);
                    bo_free_all(x, 1);
                    rill_graph_free(g);
                }
            }
    /* a 1000-long scan and a 4097-long ArgMin row */
    rill_tensor *in[1] = {bo_random(RILL_FLOAT, (int64_t[]){3, 1000}, 2, -1, 1)};
    rill__attr at[] = {RILL__A_INT("axis", 1)};
    rill_graph *g = rill_graph_new();
    bo_check(op(g, "Cumsum", in, 1, at, 1), in, 1e-9);
    bo_check(op(g, "ArgMin", in, 1, at, 1), in, 0);
    bo_free_all(in, 1);
    rill_graph_free(g);
}

static void test_maps(void)
{
    for (int s = 0; s < 4; s++)
        for (int ti = 0; ti < 3; ti++) {
            const int64_t *d = shp[s];
            rill_tensor *in[1] = {bo_random(flt[ti], d, 3, -4, 4)};
            rill_graph *g = rill_graph_new();
            static const int64_t perms[][3] = {{2, 0, 1}, {1, 0, 2}, {0, 1, 2}};
            for (int p = 0; p < 3; p++) {
                rill__attr at[] = {RILL__A_INTS("perm", 3, perms[p])};
                bo_check(op(g, "Transpose", in, 1, at, 1), in, 0);
            }
            bo_check(op(g, "Transpose", in, 1, NULL, 0), in, 0);
            static const int64_t mult[] = {2, 1, 3};
            rill__attr tm[] = {RILL__A_INTS("multiples", 3, mult)};
            bo_check(op(g, "Tile", in, 1, tm, 1), in, 0);
            static const int64_t pads[] = {1, 0, 0, 2, 2, 1};
            rill__attr pa[] = {RILL__A_INTS("paddings", 6, pads),
                               RILL__A_FLOAT("constant_values", 1.25)};
            bo_check(op(g, "Pad", in, 1, pa, 2), in, 0);
            bo_check(op(g, "Pad", in, 1, pa, 1), in, 0);
            if (d[0] > 1 && d[1] > 2 && d[2] > 2) {
                static const int64_t mp[] = {1, 1, 0, 2, 2, 1};
                rill__attr mr[] = {RILL__A_INTS("paddings", 6, mp),
                                   RILL__A_STRING("mode", "REFLECT")};
                bo_check(op(g, "MirrorPad", in, 1, mr, 2), in, 0);
                rill__attr ms[] = {RILL__A_INTS("paddings", 6, mp),
                                   RILL__A_STRING("mode", "SYMMETRIC")};
                bo_check(op(g, "MirrorPad", in, 1, ms, 2), in, 0);
            }
            static const int64_t ax1[] = {1}, ax2[] = {0, -1};
            rill__attr r1[] = {RILL__A_INTS("axis", 1, ax1)}, r2[] = {RILL__A_INTS("axis", 2, ax2)};
            bo_check(op(g, "ReverseV2", in, 1, r1, 1), in, 0);
            bo_check(op(g, "ReverseV2", in, 1, r2, 1), in, 0);
            rill_graph_free(g);
            bo_free_all(in, 1);
        }
    /* BroadcastTo from a few shapes */
    static const struct {
        int r;
        int64_t in[3];
        rill_shape to;
    } bt[] = {{1, {5}, {.rank = 3, .dims = {2, 3, 5}}},
              {2, {3, 1}, {.rank = 3, .dims = {4, 3, 7}}},
              {0, {0}, {.rank = 2, .dims = {3, 3}}}};
    for (int k = 0; k < 3; k++)
        for (int ti = 0; ti < 3; ti++) {
            rill_tensor *in[1] = {bo_random(flt[ti], bt[k].in, bt[k].r, -4, 4)};
            rill__attr at[] = {{.name = "shape", .kind = RILL__ATTR_SHAPE, .v.shape = bt[k].to}};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, "BroadcastTo", in, 1, at, 1), in, 0);
            rill_graph_free(g);
            bo_free_all(in, 1);
        }
}

static void test_blocks(void)
{
    for (int ti = 0; ti < 4; ti++) {
        rill_dtype t = ti < 3 ? flt[ti] : RILL_INT32; /* int32: host memory */
        for (int ax = -3; ax < 3; ax++) {
            int a = ax < 0 ? ax + 3 : ax;
            int64_t d0[3] = {2, 3, 5}, d1[3] = {2, 3, 5}, d2[3] = {2, 3, 5};
            d1[a] = 1;
            d2[a] = 0;
            rill_tensor *in[3] = {bo_random(t, d0, 3, -4, 4), bo_random(t, d1, 3, -4, 4),
                                  bo_random(t, d2, 3, -4, 4)};
            rill__attr ca[] = {RILL__A_INT("axis", ax)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, "ConcatV2", in, 3, ca, 1), in, 0);
            rill_tensor *same[3] = {in[0], in[0], in[0]};
            bo_check(op(g, "Pack", same, 3, ca, 1), same, 0);
            rill__attr pa[] = {RILL__A_INT("axis", ax - (ax < 0))};
            bo_check(op(g, "Pack", same, 2, pa, 1), same, 0);
            int64_t parts = d0[a];
            rill__attr sa[] = {RILL__A_INT("axis", ax), RILL__A_INT("num_split", parts),
                               RILL__A_INT("num_outputs", parts)};
            bo_check(op(g, "Split", in, 1, sa, 3), in, 0);
            rill__attr ua[] = {RILL__A_INT("axis", ax), RILL__A_INT("num", parts),
                               RILL__A_INT("num_outputs", parts)};
            bo_check(op(g, "Unpack", in, 1, ua, 3), in, 0);
            int64_t sizes[3] = {d0[a] - 1, 0, 1};
            rill__attr va[] = {RILL__A_INT("axis", ax), RILL__A_INTS("size_splits", 3, sizes),
                               RILL__A_INT("num_outputs", 3)};
            bo_check(op(g, "SplitV", in, 1, va, 3), in, 0);
            int64_t whole[3] = {2, 3, 5};
            whole[a] = d0[a] + d1[a] + d2[a];
            rill_tensor *cg[4] = {bo_random(t, whole, 3, -4, 4), in[0], in[1], in[2]};
            rill__attr ga[] = {RILL__A_INT("axis", ax), RILL__A_INT("num_outputs", 3)};
            bo_check(op(g, "ConcatGrad", cg, 4, ga, 2), cg, 0);
            rill_tensor_free(cg[0]);
            rill_graph_free(g);
            bo_free_all(in, 3);
        }
    }
}

static void test_one_hot(void)
{
    for (int ti = 0; ti < 4; ti++)
        for (int it = 0; it < 2; it++)
            for (int ax = -1; ax < 2; ax++) {
                rill_dtype t = ti < 3 ? flt[ti] : RILL_INT32;
                rill_tensor *in[1] = {
                    bo_random(it ? RILL_INT64 : RILL_INT32, (int64_t[]){3, 7}, 2, -1, 5)};
                rill__attr at[] = {RILL__A_INT("depth", 5), RILL__A_INT("axis", ax),
                                   RILL__A_TYPE("T", t), RILL__A_FLOAT("on_value", 2.5),
                                   RILL__A_FLOAT("off_value", -1)};
                rill_graph *g = rill_graph_new();
                bo_check(op(g, "OneHot", in, 1, at, 5), in, 0);
                rill_graph_free(g);
                bo_free_all(in, 1);
            }
}

static void test_int_and_errors(void)
{
    rill_tensor *in[1] = {bo_random(RILL_INT32, (int64_t[]){4, 5}, 2, -9, 9)};
    static const int64_t ax[] = {1}, perm[] = {1, 0};
    rill__attr ra[] = {RILL__A_INTS("axes", 1, ax)}, ta[] = {RILL__A_INTS("perm", 2, perm)};
    rill__attr sa[] = {RILL__A_INT("axis", 1)};
    rill_graph *g = rill_graph_new();
    bo_check(op(g, "Max", in, 1, ra, 1), in, 0);
    bo_check(op(g, "Prod", in, 1, ra, 1), in, 0);
    bo_check(op(g, "Cumsum", in, 1, sa, 1), in, 0);
    bo_check(op(g, "Transpose", in, 1, ta, 1), in, 0);
    rill_graph_free(g);
    bo_free_all(in, 1);
    /* run-time errors with the CPU's texts */
    rill_tensor *x[2] = {bo_random(RILL_FLOAT, (int64_t[]){2, 3}, 2, -1, 1),
                         bo_random(RILL_FLOAT, (int64_t[]){3, 3}, 2, -1, 1)};
    g = rill_graph_new();
    rill_output p[2] = {bo_placeholder_any(g, RILL_FLOAT), bo_placeholder_any(g, RILL_FLOAT)};
    static const int64_t bad[] = {5};
    rill__attr ba[] = {RILL__A_INTS("axes", 1, bad)};
    bo_check_error(rill__node_create(g, "Max", NULL, p, 1, ba, 1), x, RILL_INVALID_ARGUMENT,
                   "Invalid reduction dimension");
    rill__attr sc[] = {RILL__A_INT("axis", 4)};
    bo_check_error(rill__node_create(g, "Cumsum", NULL, p, 1, sc, 1), x, RILL_INVALID_ARGUMENT,
                   "Expected scan axis in the range");
    rill__attr cc[] = {RILL__A_INT("axis", 1)};
    bo_check_error(rill__node_create(g, "ConcatV2", NULL, p, 2, cc, 1), x, RILL_INVALID_ARGUMENT,
                   NULL);
    bo_check_error(rill__node_create(g, "Pack", NULL, p, 2, cc, 1), x, RILL_INVALID_ARGUMENT,
                   "Shapes of all inputs must match");
    rill__attr sp[] = {RILL__A_INT("axis", 1), RILL__A_INT("num_split", 2),
                       RILL__A_INT("num_outputs", 2)};
    bo_check_error(rill__node_create(g, "Split", NULL, p, 1, sp, 3), x, RILL_INVALID_ARGUMENT,
                   NULL);
    rill_graph_free(g);
    bo_free_all(x, 2);
}

/* --- gradients through a graph on /gpu:0 --- */

enum { G_FETCHES = 3 };

static rill_output node1(rill_graph *g, const char *type, rill_output *in, int n,
                         const rill__attr *a, int na, int idx)
{
    return (rill_output){rill__node_create(g, type, NULL, in, n, a, na), idx};
}

static bool run_grad_graph(const char *dev, rill_tensor **out)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(4, 6), "x");
    rill_output w = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(6, 4), "w");
    rill_graph_push_device(g, dev);
    static const int64_t perm[] = {1, 0}, mult[] = {1, 2}, pads[] = {1, 1, 0, 2}, rev[] = {0};
    static const int64_t axes[] = {1};
    rill__attr ta[] = {RILL__A_INTS("perm", 2, perm)}, tm[] = {RILL__A_INTS("multiples", 2, mult)};
    rill__attr pa[] = {RILL__A_INTS("paddings", 4, pads)}, ra[] = {RILL__A_INTS("axis", 1, rev)};
    rill__attr ca[] = {RILL__A_INT("axis", 1)}, ma[] = {RILL__A_INTS("axes", 1, axes)};
    rill__attr sa[] = {RILL__A_INT("axis", 1), RILL__A_INT("num_split", 2),
                       RILL__A_INT("num_outputs", 2)};
    rill_output t = node1(g, "Transpose", &x, 1, ta, 1, 0); /* [6,4] */
    rill_output tw[2] = {t, w};
    rill_output c = node1(g, "ConcatV2", tw, 2, ca, 1, 0); /* [6,8] */
    rill_output tl = node1(g, "Tile", &c, 1, tm, 1, 0);    /* [6,16] */
    rill_output pd = node1(g, "Pad", &tl, 1, pa, 1, 0);    /* [8,18] */
    rill_output rv = node1(g, "ReverseV2", &pd, 1, ra, 1, 0);
    rill_output s0 = node1(g, "Split", &rv, 1, sa, 3, 0), s1 = {s0.node, 1}; /* [8,9] x2 */
    rill_output pk[2] = {s0, s1};
    rill_output st = node1(g, "Pack", pk, 2, ca, 1, 0); /* [8,2,9] */
    rill_output cs = node1(g, "Cumsum", &st, 1, ca, 1, 0);
    rill_output mx = node1(g, "Max", &cs, 1, ma, 1, 0);  /* [8,9] */
    rill_output pr = node1(g, "Prod", &s1, 1, ma, 1, 0); /* [8] */
    rill_output l = rill_add(g, rill_sum(g, mx, NULL, -1, false, NULL),
                             rill_sum(g, pr, NULL, -1, false, NULL), "l");
    rill_output xs[2] = {x, w}, dx[2] = {{NULL, 0}, {NULL, 0}};
    CHECK(rill_gradients(g, &l, 1, xs, 2, NULL, dx));
    rill_graph_pop_device(g);
    bo_seed(11);
    rill_tensor *xv = bo_random(RILL_FLOAT, (int64_t[]){4, 6}, 2, 0.5, 1.5),
                *wv = bo_random(RILL_FLOAT, (int64_t[]){6, 4}, 2, 0.5, 1.5);
    rill_output feeds[2] = {x, w};
    rill_tensor *fv[2] = {xv, wv};
    rill_output fetches[G_FETCHES] = {l, dx[0], dx[1]};
    rill_status *s = rill_status_new();
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true);
    bool ok = CHECK(rill_graph_ok(g));
    if (!ok) fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
    rill_session *sess = ok ? rill_session_new(g, o, s) : NULL;
    ok = ok && sess &&
         rill_session_run(sess, feeds, fv, 2, fetches, out, G_FETCHES, NULL, 0, s) == RILL_OK;
    if (!CHECK(ok)) fprintf(stderr, "  %s: %s\n", dev, rill_status_message(s));
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    bo_free_all(fv, 2);
    rill_graph_free(g);
    return ok;
}

static void test_gradients(void)
{
    rill_tensor *cpu[G_FETCHES] = {0}, *gpu[G_FETCHES] = {0};
    if (run_grad_graph("/cpu:0", cpu) && run_grad_graph("/gpu:0", gpu))
        for (int f = 0; f < G_FETCHES; f++) {
            rill_tensor *h = bo_to_host(gpu[f]);
            bo__compare("gradient graph", "fetch", cpu[f], h, 1e-9);
            rill_tensor_free(h);
        }
    bo_free_all(cpu, G_FETCHES);
    bo_free_all(gpu, G_FETCHES);
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20240620);
    bo_device();
    test_reduce();
    test_argmin_scan();
    test_maps();
    test_blocks();
    test_one_hot();
    test_int_and_errors();
    bo_skip_without_device();
    test_gradients();
    TEST_MAIN_END();
}
