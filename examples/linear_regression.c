/* linear_regression.c - the seed's model in one process.
 *
 *   pred = input * weight + biase,  loss = square(label - pred)
 *   data: y = 2x + 10 + 0.33 * noise, one sample per step, plain gradient descent.
 *
 * The graph is built once and run train_steps times; every steps_to_validate steps it prints
 * "step: %d, weight: %f, biase: %f, loss: %f" as the seed's program does. */
#include <rill/rill.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Standard normal deviates for the synthetic data (Box-Muller on rand48). */
static double randn(void)
{
    double u1 = drand48(), u2 = drand48();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static int fail(const char *what, const rill_status *s)
{
    fprintf(stderr, "%s: %s: %s\n", what, rill_code_name(rill_status_code(s)),
            rill_status_message(s));
    return 1;
}

int main(int argc, char **argv)
{
    double learning_rate;
    int64_t steps_to_validate, train_steps, seed;
    rill_flags *flags = rill_flags_new(argv[0], "The seed's linear regression, in one process.");
    rill_flags_define_float(flags, "learning_rate", &learning_rate, 0.00003,
                            "Initial learning rate.");
    rill_flags_define_int(flags, "steps_to_validate", &steps_to_validate, 1000,
                          "Steps to validate and print loss");
    rill_flags_define_int(flags, "train_steps", &train_steps, 100000, "Training steps to run.");
    rill_flags_define_int(flags, "seed", &seed, 0, "Random seed (0: from the clock).");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    if (rc >= 0) {
        rill_flags_free(flags);
        return rc;
    }
    if (steps_to_validate <= 0) steps_to_validate = 1;
    srand48(seed ? (long)seed : (long)time(NULL));

    rill_graph *g = rill_graph_new();
    if (seed) rill_graph_set_seed(g, seed);
    rill_output global_step = rill_train_get_or_create_global_step(g);
    rill_output input = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output label = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    rill_output weight = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                           rill_random_normal_initializer(0, 1, 0), true);
    rill_output biase = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                          rill_random_normal_initializer(0, 1, 0), true);
    rill_output pred = rill_add(g, rill_mul(g, input, weight, NULL), biase, NULL);
    rill_output loss = rill_square(g, rill_sub(g, label, pred, NULL), NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(learning_rate);
    rill_node *train_op = rill_optimizer_minimize(opt, g, loss, global_step, NULL);
    rill_node *init_op = rill_global_variables_initializer(g, NULL);
    rill_status *s = rill_status_new();
    if (!rill_graph_ok(g)) {
        rc = fail("building the graph", rill_graph_status(g));
        goto out;
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    if (!sess || rill_session_run_targets(sess, &init_op, 1, s) != RILL_OK) {
        rc = fail("initializing", s);
        rill_session_free(sess);
        goto out;
    }

    rill_tensor *x = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *y = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    float *xp = rill_tensor_data(x), *yp = rill_tensor_data(y);
    rill_output feeds[] = {input, label};
    rill_tensor *feed_values[] = {x, y};
    rill_output fetches[] = {loss, rill_node_output(train_op, 0)};
    rill_tensor *out[2];
    rc = 0;
    for (int64_t step = 1; step <= train_steps; step++) {
        xp[0] = (float)randn();
        yp[0] = (float)(2 * xp[0] + randn() * 0.33 + 10);
        if (rill_session_run(sess, feeds, feed_values, 2, fetches, out, 2, NULL, 0, s) != RILL_OK) {
            rc = fail("training step", s);
            break;
        }
        int64_t gstep = *(int64_t *)rill_tensor_data(out[1]);
        float loss_v = *(float *)rill_tensor_data(out[0]);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
        if (gstep % steps_to_validate == 0) {
            rill_output wb[] = {weight, biase};
            rill_tensor *v[2];
            if (rill_session_run(sess, NULL, NULL, 0, wb, v, 2, NULL, 0, s) != RILL_OK) {
                rc = fail("reading the variables", s);
                break;
            }
            printf("step: %lld, weight: %f, biase: %f, loss: %f\n", (long long)gstep,
                   *(float *)rill_tensor_data(v[0]), *(float *)rill_tensor_data(v[1]), loss_v);
            rill_tensor_free(v[0]);
            rill_tensor_free(v[1]);
        }
    }
    rill_tensor_free(x);
    rill_tensor_free(y);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_optimizer_free(opt);
    rill_graph_free(g);
    rill_flags_free(flags);
    return rc;
}
