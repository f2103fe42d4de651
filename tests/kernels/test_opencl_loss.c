/* test_opencl_loss.c - the OpenCL kernels of L2Loss, LogSoftmax and
 * SigmoidCrossEntropyWithLogits (src/kernels/opencl/cl_loss.c) against the CPU's, float, double
 * and half, over a few shapes, and the run-time shape error of the cross-entropy. */
#include "backend_ops.h"

static rill_node *op(rill_graph *g, const char *type, rill_tensor *const *in, int n)
{
    rill_output x[2];
    for (int i = 0; i < n; i++) x[i] = bo_placeholder(g, in[i]);
    return rill__node_create(g, type, NULL, x, n, NULL, 0);
}

int main(void)
{
    static const int64_t shapes[][3] = {{2, 3, 4}, {7, 1, 129}, {1, 1, 1}};
    static const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    for (int s = 0; s < 3; s++)
        for (int ti = 0; ti < 3; ti++) {
            rill_tensor *in[2] = {bo_random(types[ti], shapes[s], 3, -4, 4),
                                  bo_random(types[ti], shapes[s], 3, 0, 1)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, "L2Loss", in, 1), in, -1);
            bo_check(op(g, "LogSoftmax", in, 1), in, -1);
            bo_check(op(g, "SigmoidCrossEntropyWithLogits", in, 2), in, -1);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
    rill_tensor *in[2] = {bo_random(RILL_FLOAT, (int64_t[]){2, 3}, 2, -1, 1),
                          bo_random(RILL_FLOAT, (int64_t[]){3, 2}, 2, 0, 1)};
    rill_graph *g = rill_graph_new();
    rill_output x[2] = {bo_placeholder_any(g, RILL_FLOAT), bo_placeholder_any(g, RILL_FLOAT)};
    bo_check_error(rill__node_create(g, "SigmoidCrossEntropyWithLogits", NULL, x, 2, NULL, 0), in,
                   RILL_INVALID_ARGUMENT, "logits and labels must have the same shape");
    bo_free_all(in, 2);
    rill_graph_free(g);
    bo_skip_without_device();
    TEST_MAIN_END();
}
