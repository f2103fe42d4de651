/* bench_seed_step.c - the per-step cost of session.run on the seed's graph against a hand-written
 * C loop doing the same arithmetic, in one run.
 *
 * The graph: pred = input*weight + biase, loss = square(label - pred), gradient descent on both
 * variables, global_step += 1; each step feeds one (x, y) and fetches the loss and the step, as
 * the seed's loop does. The baseline does exactly that arithmetic on two floats. Data is made
 * before timing so neither side pays for random numbers. */
#include <rill/rill.h>

#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N_DATA 4096

static float xs[N_DATA], ys[N_DATA];

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

/* The seed's step by hand; volatile sink keeps the compiler honest. */
static double hand_loop(long steps, float lr)
{
    float w = 0.3f, b = -0.2f;
    int64_t gstep = 0;
    volatile float sink = 0;
    double t0 = rill__now_seconds();
    for (long i = 0; i < steps; i++) {
        float x = xs[i % N_DATA], y = ys[i % N_DATA];
        float pred = x * w + b;
        float diff = y - pred;
        float loss = diff * diff;
        float g = -2.0f * diff;
        w -= lr * g * x;
        b -= lr * g;
        gstep++;
        sink = loss + (float)gstep;
    }
    (void)sink;
    return (rill__now_seconds() - t0) / (double)steps;
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 200000;
    int reps = 5;
    srand48(1);
    for (int i = 0; i < N_DATA; i++) {
        xs[i] = (float)(drand48() * 2 - 1);
        ys[i] = 2 * xs[i] + 10 + (float)(drand48() - 0.5) * 0.33f;
    }

    rill_graph *g = rill_graph_new();
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output input = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output label = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    rill_output w = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 1), true);
    rill_output b = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 2), true);
    rill_output pred = rill_add(g, rill_mul(g, input, w, NULL), b, NULL);
    rill_output loss = rill_square(g, rill_sub(g, label, pred, NULL), NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(0.01);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_status *s = rill_status_new();
    rill_session_options *o = rill_session_options_new();
    rill_session *sess = rill_graph_ok(g) ? rill_session_new(g, o, s) : NULL;
    if (!sess || rill_session_run_targets(sess, &init, 1, s) != RILL_OK) {
        fprintf(stderr, "setup failed: %s %s\n", rill_status_message(rill_graph_status(g)),
                rill_status_message(s));
        return 1;
    }
    rill_tensor *x = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *y = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    float *xp = rill_tensor_data(x), *yp = rill_tensor_data(y);
    rill_output feeds[] = {input, label};
    rill_tensor *fv[] = {x, y};
    rill_output fetches[] = {loss, rill_node_output(train, 0)};
    rill_tensor *out[2];

    double t_sess[8], t_hand[8];
    uint64_t allocs = 0;
    for (int r = 0; r < reps; r++) {
        for (long i = 0; i < 1000; i++) { /* warm-up: plan, recycled buffers */
            rill_session_run(sess, feeds, fv, 2, fetches, out, 2, NULL, 0, s);
            rill_tensor_free(out[0]);
            rill_tensor_free(out[1]);
        }
        uint64_t a0 = rill__alloc_count();
        double t0 = rill__now_seconds();
        for (long i = 0; i < steps; i++) {
            xp[0] = xs[i % N_DATA];
            yp[0] = ys[i % N_DATA];
            if (rill_session_run(sess, feeds, fv, 2, fetches, out, 2, NULL, 0, s) != RILL_OK) {
                fprintf(stderr, "step failed: %s\n", rill_status_message(s));
                return 1;
            }
            rill_tensor_free(out[0]);
            rill_tensor_free(out[1]);
        }
        t_sess[r] = (rill__now_seconds() - t0) / (double)steps;
        allocs = rill__alloc_count() - a0;
        t_hand[r] = hand_loop(steps * 10, 0.01f);
    }
    double ts = median(t_sess, reps), th = median(t_hand, reps);
    rill_output wb[] = {w, b};
    rill_tensor *v[2];
    rill_session_run(sess, NULL, NULL, 0, wb, v, 2, NULL, 0, s);
    printf("seed graph: %d nodes in the graph, %ld steps x %d runs\n", rill_graph_num_nodes(g),
           steps, reps);
    printf("session.run step        %8.3f us   (allocations in timed loop: %llu)\n", ts * 1e6,
           (unsigned long long)allocs);
    printf("hand-written C step     %8.4f us\n", th * 1e6);
    printf("ratio session/hand      %8.1f x\n", ts / th);
    printf("trained: weight %.4f biase %.4f\n", *(float *)rill_tensor_data(v[0]),
           *(float *)rill_tensor_data(v[1]));
    printf("RESULT seed_step_us=%.3f hand_step_us=%.4f\n", ts * 1e6, th * 1e6);
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    rill_tensor_free(x);
    rill_tensor_free(y);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    rill_optimizer_free(opt);
    rill_graph_free(g);
    return 0;
}
