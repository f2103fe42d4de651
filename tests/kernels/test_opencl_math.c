/* test_opencl_math.c - the math and array kernels on OpenCL against the CPU (placeholder). */
#include "backend_ops.h"

static void test_add(void)
{
    rill_graph *g = rill_graph_new();
    int64_t d[2] = {2, 3};
    rill_tensor *in[2] = {bo_random(RILL_FLOAT, d, 2, -1, 1),
                          bo_random(RILL_FLOAT, d + 1, 1, -1, 1)};
    rill_output y = rill_add(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
    bo_check(y.node, in, -1);
    bo_free_all(in, 2);
    rill_graph_free(g);
}

int main(void)
{
    test_add();
    TEST_MAIN_END();
}
