/* test_fed_control.c - a fed Placeholder as a control input or a target: it never runs (its
 * value is there when the step starts), so the step neither clones it beside its feed
 * ("Duplicate node name") nor asks for its value ("You must feed a value"). */
#include "../test.h"

#include <rill/rill.h>

int main(void)
{
    rill_graph *g = rill_graph_new();
    rill_output ph = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "ph");
    rill_output x = rill_const_float(g, 3.0f, "x");
    rill_graph_push_control_dependencies(g, &ph.node, 1);
    rill_output y = rill_identity(g, x, "y");
    rill_graph_pop_control_dependencies(g);
    CHECK(rill_graph_ok(g));
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK(sess != NULL);
    rill_tensor *fed = rill_tensor_scalar_float(2.0f), *out[2] = {NULL, NULL};
    rill_output fetches[2] = {y, ph};
    /* y with ph fed; y and ph; ph's node as a target */
    for (int round = 0; round < 2; round++) {
        rill_code c = rill_session_run(sess, &ph, &fed, 1, fetches, out, round + 1, NULL, 0, s);
        if (!CHECK_EQ_INT(c, RILL_OK)) fprintf(stderr, "  %s\n", rill_status_message(s));
        if (out[0]) CHECK_NEAR(*(float *)rill_tensor_data(out[0]), 3.0, 0);
        if (round == 1 && out[1]) CHECK_NEAR(*(float *)rill_tensor_data(out[1]), 2.0, 0);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
        out[0] = out[1] = NULL;
    }
    rill_code c = rill_session_run(sess, &ph, &fed, 1, NULL, NULL, 0, &ph.node, 1, s);
    if (!CHECK_EQ_INT(c, RILL_OK)) fprintf(stderr, "  %s\n", rill_status_message(s));
    /* unfed, the control input still has to be fed */
    c = rill_session_run(sess, NULL, NULL, 0, &y, out, 1, NULL, 0, s);
    CHECK_EQ_INT(c, RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "You must feed a value for placeholder tensor 'ph'");
    rill_tensor_free(out[0]);
    rill_tensor_free(fed);
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
    TEST_MAIN_END();
}
