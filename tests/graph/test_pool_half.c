/* test_pool_half.c - AvgPool and its gradient on half tensors (cpu_pool_half.c) against the
 * float kernels on the same values, over SAME and VALID windows and strides; MaxPool still
 * refuses half at build time. */
#include "op_check.h"

#include <rill/train.h>

static void check_case(const int64_t *dims, const int ksize[4], const int strides[4],
                       const char *padding)
{
    int64_t n = oc_numel(dims, 4);
    double *v = malloc((size_t)n * sizeof *v);
    oc_fill_random(RILL_HALF, v, n, -2, 2);
    rill_tensor *results[2][2] = {{0}};
    const rill_dtype types[] = {RILL_HALF, RILL_FLOAT};
    for (int ti = 0; ti < 2; ti++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *xt = oc_tensor(types[ti], dims, 4, v);
        rill_output x = rill_placeholder(g, types[ti], *rill_tensor_shape(xt), "x");
        rill_output y = rill_avg_pool(g, x, ksize, strides, padding, NULL);
        rill_output loss = rill_sum(g, rill_mul(g, y, y, NULL), NULL, -1, false, NULL);
        rill_output dx;
        CHECK(rill_gradients(g, &loss, 1, &x, 1, NULL, &dx));
        rill_session *sess = oc_session(g);
        results[ti][0] = oc_run(sess, y, &x, &xt, 1);
        results[ti][1] = oc_run(sess, dx, &x, &xt, 1);
        rill_session_free(sess);
        rill_tensor_free(xt);
        rill_graph_free(g);
    }
    for (int o = 0; o < 2; o++) {
        rill_tensor *h = results[0][o], *f = results[1][o];
        if (!CHECK(h && f)) continue;
        CHECK_EQ_INT(rill_tensor_dtype(h), RILL_HALF);
        CHECK(rill_shape_equal(rill_tensor_shape(h), rill_tensor_shape(f)));
        int64_t m = rill_tensor_num_elements(f);
        double *ref = malloc((size_t)(m ? m : 1) * sizeof *ref);
        for (int64_t i = 0; i < m; i++) ref[i] = rill_tensor_get_double(f, i);
        const rill_shape *s = rill_tensor_shape(f);
        double tol_scale = o == 0 ? 1 : 4; /* the gradient also went through a half y */
        int bad = 0;
        for (int64_t i = 0; i < m; i++)
            if (fabs(rill_tensor_get_double(h, i) - ref[i]) > 4e-3 * tol_scale * (1 + fabs(ref[i])))
                bad++;
        if (!CHECK(bad == 0))
            fprintf(stderr, "  %s output %d: %d of %lld differ (rank %d)\n", padding, o, bad,
                    (long long)m, s->rank);
        free(ref);
    }
    for (int i = 0; i < 2; i++)
        for (int o = 0; o < 2; o++) rill_tensor_free(results[i][o]);
    free(v);
}

int main(void)
{
    check_case((int64_t[]){2, 5, 6, 3}, (int[]){1, 2, 2, 1}, (int[]){1, 2, 2, 1}, "SAME");
    check_case((int64_t[]){1, 7, 7, 2}, (int[]){1, 3, 3, 1}, (int[]){1, 2, 2, 1}, "VALID");
    check_case((int64_t[]){1, 4, 5, 1}, (int[]){1, 3, 2, 1}, (int[]){1, 1, 1, 1}, "SAME");
    rill_graph *g = rill_graph_new();
    rill_output x =
        rill_placeholder(g, RILL_HALF, rill_shape_make(4, (int64_t[]){1, 4, 4, 1}), "x");
    CHECK(rill_max_pool(g, x, (int[]){1, 2, 2, 1}, (int[]){1, 2, 2, 1}, "SAME", NULL).node == NULL);
    rill_graph_free(g);
    TEST_MAIN_END();
}
