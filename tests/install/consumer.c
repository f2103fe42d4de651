/* consumer.c - a program outside rill that uses the installed library the way a user's would:
 * it includes <rill/rill.h> only, trains the seed's model (y = 2x + 10, one sample a step, plain
 * gradient descent) and prints the library version and the trained weight and bias.
 * tests/install/test_install.sh builds it against the installed headers and libraries. */
#include <rill/rill.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, const rill_status *s)
{
    fprintf(stderr, "%s: %s: %s\n", what, rill_code_name(rill_status_code(s)),
            rill_status_message(s));
    return 1;
}

/* Deterministic data: x from a small linear congruential generator, y = 2x + 10. */
static double next_x(unsigned long long *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0 * 4 - 2;
}

int main(void)
{
    if (strcmp(rill_version(), RILL_VERSION_STRING) != 0) {
        fprintf(stderr, "compiled against rill %s but runs with %s\n", RILL_VERSION_STRING,
                rill_version());
        return 1;
    }
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 1);
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output y = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    rill_output w = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 0), true);
    rill_output b = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 0), true);
    rill_output pred = rill_add(g, rill_mul(g, x, w, NULL), b, NULL);
    rill_output loss = rill_square(g, rill_sub(g, y, pred, NULL), NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(0.01);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, (rill_output){0}, NULL);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_status *s = rill_status_new();
    int rc = 1;
    rill_session *sess = NULL;
    rill_tensor *xt = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *yt = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    if (!rill_graph_ok(g)) {
        rc = fail("building the graph", rill_graph_status(g));
        goto out;
    }
    sess = rill_session_new(g, NULL, s);
    if (!sess || rill_session_run_targets(sess, &init, 1, s) != RILL_OK) {
        rc = fail("initializing", s);
        goto out;
    }
    rill_output feeds[] = {x, y};
    rill_tensor *values[] = {xt, yt};
    unsigned long long state = 42;
    for (int step = 0; step < 3000; step++) {
        float xv = (float)next_x(&state);
        *(float *)rill_tensor_data(xt) = xv;
        *(float *)rill_tensor_data(yt) = 2 * xv + 10;
        if (rill_session_run(sess, feeds, values, 2, NULL, NULL, 0, &train, 1, s) != RILL_OK) {
            rc = fail("training step", s);
            goto out;
        }
    }
    rill_output wb[] = {w, b};
    rill_tensor *v[2];
    if (rill_session_run(sess, NULL, NULL, 0, wb, v, 2, NULL, 0, s) != RILL_OK) {
        rc = fail("reading the variables", s);
        goto out;
    }
    float wv = *(float *)rill_tensor_data(v[0]), bv = *(float *)rill_tensor_data(v[1]);
    printf("rill %s: weight: %f, biase: %f\n", rill_version(), wv, bv);
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    rc = fabsf(wv - 2) < 0.01f && fabsf(bv - 10) < 0.01f ? 0 : 1;
out:
    rill_tensor_free(xt);
    rill_tensor_free(yt);
    rill_session_free(sess);
    rill_status_free(s);
    rill_optimizer_free(opt);
    rill_graph_free(g);
    return rc;
}
