/* test_device_setter.c - replica_device_setter as the reference §6 describes it: variables
 * round-robin (or by bytes) over the ps tasks in creation order, everything else on the worker
 * device, inner device scopes winning; ps_tasks 0 gives no function (a barrier). */
#include <rill/rill.h>

#include "test.h"

static const char *dev(rill_output o)
{
    return o.node ? rill_node_requested_device(o.node) : "(failed)";
}

static void test_reference_example(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_replica_device_setter *r = rill_replica_device_setter_new(
        2, "/job:ps", "/job:worker/task:1", true, RILL_PS_ROUND_ROBIN, s);
    CHECK(r != NULL && rill_status_ok(s));
    rill_graph_push_device_fn(g, rill_replica_device_setter_fn, r);
    rill_output v1 = rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "v1");
    rill_output v2 = rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "v2");
    rill_output v3 = rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "v3");
    rill_output sum = rill_add(g, v1, v2, "sum");
    rill_graph_push_device(g, "/gpu:0");
    rill_output on_gpu = rill_mul(g, sum, v3, "on_gpu");
    rill_output v4 = rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "v4");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    CHECK(rill_graph_ok(g));
    CHECK_EQ_STR(dev(v1), "/job:ps/task:0");
    CHECK_EQ_STR(dev(v2), "/job:ps/task:1");
    CHECK_EQ_STR(dev(v3), "/job:ps/task:0");
    CHECK_EQ_STR(dev(sum), "/job:worker/task:1");
    CHECK_EQ_STR(dev(on_gpu), "/job:worker/task:1/device:GPU:0");
    CHECK_EQ_STR(dev(v4), "/job:ps/task:1/device:GPU:0");
    /* The initializer's Assign is not a ps op: it asks for the worker, and the placer then
     * follows the reference edge to the variable. */
    CHECK_EQ_STR(rill_node_requested_device(rill_variable_initializer(v1)), "/job:worker/task:1");
    rill_replica_device_setter_free(r);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_greedy_by_bytes(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_replica_device_setter *r =
        rill_replica_device_setter_new(2, NULL, NULL, true, RILL_PS_GREEDY_BY_BYTES, s);
    rill_graph_push_device_fn(g, rill_replica_device_setter_fn, r);
    /* One big embedding and three small variables: round-robin would put two small ones with
     * the big one; by bytes the big one gets a task to itself. */
    rill_output big = rill_variable(g, RILL_FLOAT, rill_shape_matrix(1000, 64), rill_zeros_initializer(), true, "embedding");
    rill_output a = rill_variable(g, RILL_FLOAT, rill_shape_vector(64), rill_zeros_initializer(), true, "a");
    rill_output b = rill_variable(g, RILL_FLOAT, rill_shape_vector(64), rill_zeros_initializer(), true, "b");
    rill_output c = rill_variable(g, RILL_DOUBLE, rill_shape_vector(64), rill_zeros_initializer(), true, "c");
    rill_output w = rill_mul(g, a, b, "w");
    rill_graph_pop_device(g);
    CHECK(rill_graph_ok(g));
    CHECK_EQ_STR(dev(big), "/job:ps/task:0");
    CHECK_EQ_STR(dev(a), "/job:ps/task:1");
    CHECK_EQ_STR(dev(b), "/job:ps/task:1");
    CHECK_EQ_STR(dev(c), "/job:ps/task:1");
    CHECK_EQ_STR(dev(w), "/job:worker");
    CHECK_EQ_INT(rill_replica_device_setter_task_bytes(r, 0), 1000 * 64 * 4);
    CHECK_EQ_INT(rill_replica_device_setter_task_bytes(r, 1), 64 * 4 + 64 * 4 + 64 * 8);
    CHECK_EQ_INT(rill_replica_device_setter_task_bytes(r, 2), -1);
    rill_replica_device_setter_free(r);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_no_ps_and_errors(void)
{
    rill_status *s = rill_status_new();
    CHECK(rill_replica_device_setter_new(0, NULL, NULL, true, RILL_PS_ROUND_ROBIN, s) == NULL);
    CHECK(rill_status_ok(s));
    CHECK(rill_replica_device_setter_new(2, "/job:p-s", NULL, true, RILL_PS_ROUND_ROBIN, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Malformed device specification '/job:p-s'");

    /* An explicit job on the variable that is not the ps job keeps it and takes no task. */
    rill_graph *g = rill_graph_new();
    rill_replica_device_setter *r = rill_replica_device_setter_new(3, NULL, "/job:worker/task:0", true, RILL_PS_ROUND_ROBIN, s);
    rill_graph_push_device_fn(g, rill_replica_device_setter_fn, r);
    rill_graph_push_device(g, "/job:local");
    rill_output local = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), true, "local");
    rill_graph_pop_device(g);
    rill_output first = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), true, "first");
    /* A barrier cuts the setter off: nodes inside get no device. */
    rill_graph_push_device(g, NULL);
    rill_output free_node = rill_const_float(g, 1, "free");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    CHECK_EQ_STR(dev(local), "/job:local");
    CHECK_EQ_STR(dev(first), "/job:ps/task:0");
    CHECK_EQ_STR(dev(free_node), "");
    rill_replica_device_setter_free(r);
    rill_graph_free(g);
    rill_status_free(s);
}

int main(void)
{
    test_reference_example();
    test_greedy_by_bytes();
    test_no_ps_and_errors();
    TEST_MAIN_END();
}
