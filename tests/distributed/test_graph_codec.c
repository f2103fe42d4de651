/* test_graph_codec.c - execution graphs survive encoding: the decoded graph has the same nodes,
 * edges, attributes and seeds, and computes the same values in a session; hostile bytes
 * (truncations, flipped bytes, random garbage, attributes of the wrong kind) are errors, never
 * crashes. */
#include <rill/rill.h>

#include "distributed/graph_codec.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static rill_graph *build(rill_output *fetch, rill_node **train)
{
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 5);
    float xs[6] = {1, 2, 3, 4, 5, 6};
    int64_t d2[2] = {2, 3};
    rill_output x = rill_const_floats(g, xs, d2, 2, "x");
    rill_output w = rill_variable(g, RILL_FLOAT, rill_shape_matrix(3, 2),
                                  rill_truncated_normal_initializer(0, 0.5, 7), true, "w");
    rill_output b = rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_constant_initializer(0.25), true, "b");
    rill_output h = rill_sigmoid(g, rill_bias_add(g, rill_matmul(g, x, w, false, false, NULL), b, NULL), NULL);
    int axes[] = {-1};
    rill_output s = rill_sum(g, rill_square(g, h, NULL), axes, 1, true, "s");
    rill_output loss = rill_mean(g, rill_reshape(g, s, (int64_t[]){-1}, 1, NULL), NULL, -1, false, "loss");
    rill_tensor *str = rill_tensor_scalar_string("hello, wire");
    rill_const(g, str, "greeting");
    rill_tensor_free(str);
    rill_optimizer *o = rill_adam_optimizer_new(0.01, 0.9, 0.999, 1e-8);
    *train = rill_optimizer_minimize(o, g, loss, rill_train_get_or_create_global_step(g), "train");
    rill_optimizer_free(o);
    *fetch = loss;
    return g;
}

static void check_same_structure(const rill_graph *a, const rill_graph *b)
{
    CHECK_EQ_INT(rill_graph_num_nodes(a), rill_graph_num_nodes(b));
    for (int i = 0; i < rill_graph_num_nodes(a) && i < rill_graph_num_nodes(b); i++) {
        rill_node *x = rill_graph_node(a, i), *y = rill_graph_node(b, i);
        if (!CHECK_EQ_STR(rill_node_name(x), rill_node_name(y))) continue;
        CHECK_EQ_STR(rill_node_op_type(x), rill_node_op_type(y));
        CHECK_EQ_INT(rill_node_num_inputs(x), rill_node_num_inputs(y));
        CHECK_EQ_INT(rill_node_num_control_inputs(x), rill_node_num_control_inputs(y));
        for (int k = 0; k < rill_node_num_inputs(x); k++) {
            CHECK_EQ_STR(rill_node_name(rill_node_input(x, k).node), rill_node_name(rill_node_input(y, k).node));
            CHECK_EQ_INT(rill_node_input(x, k).index, rill_node_input(y, k).index);
        }
        CHECK_EQ_INT(x->nattrs, y->nattrs);
        CHECK_EQ_INT(x->seed, y->seed);
        CHECK_EQ_INT(x->seed2, y->seed2);
        for (int o = 0; o < rill_node_num_outputs(x); o++) {
            CHECK_EQ_INT(rill_node_output_dtype(x, o), rill_node_output_dtype(y, o));
            rill_shape sx = rill_node_output_shape(x, o), sy = rill_node_output_shape(y, o);
            CHECK(rill_shape_equal(&sx, &sy));
        }
    }
}

/* Runs init, 5 training steps and fetches the loss; returns the last loss. */
static float train(rill_graph *g, rill_output loss, rill_node *step)
{
    rill_status *s = rill_status_new();
    /* Collections are not part of an encoded graph: find each variable's "<name>/Assign". */
    rill_node *inits[64];
    int ninit = 0;
    for (int i = 0; i < rill_graph_num_nodes(g) && ninit < 64; i++) {
        rill_node *n = rill_graph_node(g, i);
        if (strcmp(rill_node_op_type(n), "VariableV2") != 0) continue;
        char name[256];
        snprintf(name, sizeof name, "%s/Assign", rill_node_name(n));
        if (CHECK(rill_graph_find_node(g, name) != NULL)) inits[ninit++] = rill_graph_find_node(g, name);
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_session_run_targets(sess, inits, ninit, s);
    CHECK(rill_status_ok(s));
    float last = -1;
    for (int i = 0; i < 5; i++) {
        rill_tensor *t = NULL;
        rill_session_run(sess, NULL, NULL, 0, &loss, &t, 1, &step, 1, s);
        if (!CHECK(rill_status_ok(s))) {
            fprintf(stderr, "%s\n", rill_status_message(s));
            break;
        }
        last = *(float *)rill_tensor_data(t);
        rill_tensor_free(t);
    }
    rill_session_free(sess);
    rill_status_free(s);
    return last;
}

static void test_round_trip(uint8_t **enc, size_t *enc_len)
{
    rill_output loss;
    rill_node *step;
    rill_graph *g = build(&loss, &step);
    CHECK(rill_graph_ok(g));
    rill_status *s = rill_status_new();
    uint8_t *buf;
    size_t len;
    CHECK(rill__graph_encode(g, &buf, &len, s));
    char **devs = NULL;
    rill_graph *h = rill__graph_decode(buf, len, &devs, s);
    if (!CHECK(h != NULL)) {
        fprintf(stderr, "%s\n", rill_status_message(s));
        return;
    }
    check_same_structure(g, h);
    rill_node *greet = rill_graph_find_node(h, "greeting");
    if (CHECK(greet != NULL)) {
        size_t sl;
        const char *str = rill_tensor_get_string(rill__node_attr(greet, "value")->v.tensor, 0, &sl);
        CHECK(sl == 11 && memcmp(str, "hello, wire", 11) == 0);
    }
    float a = train(g, loss, step);
    float b = train(h, rill_node_output(rill_graph_find_node(h, rill_node_name(loss.node)), 0),
                    rill_graph_find_node(h, rill_node_name(step)));
    if (!CHECK(a > 0 && a == b)) fprintf(stderr, "losses %.9g vs %.9g\n", a, b);
    for (int i = 0; i < rill_graph_num_nodes(h); i++) rill__free(devs[i]);
    rill__free(devs);
    *enc = buf;
    *enc_len = len;
    rill_graph_free(h);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_hostile(const uint8_t *good, size_t len)
{
    rill_status *s = rill_status_new();
    int decoded = 0, refused = 0;
    /* Every truncation. */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 64) {
        rill_graph *g = rill__graph_decode(good, cut, NULL, s);
        if (g) decoded++, rill_graph_free(g);
        else refused++, CHECK(rill_status_code(s) == RILL_DATA_LOSS || rill_status_code(s) == RILL_INVALID_ARGUMENT);
    }
    CHECK_EQ_INT(decoded, 0);
    /* Flipped bytes and random garbage. */
    uint8_t *m = malloc(len);
    srand(11);
    for (int round = 0; round < 3000; round++) {
        memcpy(m, good, len);
        int flips = 1 + rand() % 4;
        for (int f = 0; f < flips; f++) m[(size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
        rill_graph *g = rill__graph_decode(m, len, NULL, s);
        if (g) decoded++, rill_graph_free(g);
        else refused++, CHECK(rill_status_code(s) == RILL_DATA_LOSS || rill_status_code(s) == RILL_INVALID_ARGUMENT);
    }
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)rand() % 256;
        for (size_t i = 0; i < n; i++) m[i] = (uint8_t)rand();
        if (n >= 4 && round % 2) memcpy(m, "RGPH\x02\x00\x00\x00", n >= 8 ? 8 : 4);
        rill_graph *g = rill__graph_decode(m, n, NULL, s);
        if (g) decoded++, rill_graph_free(g);
        else refused++;
    }
    printf("hostile inputs: %d refused, %d decoded (harmless mutations)\n", refused, decoded);
    CHECK(refused > 4000);
    free(m);
    rill_status_free(s);
}

/* Encodes g after giving node `node`'s attribute `attr` the kind INT (value v), as a hostile peer
 * would send it, and checks that the decoder refuses it as DATA_LOSS naming the attribute. */
static void check_refused_as_int(rill_graph *g, const char *node, const char *attr, int64_t v)
{
    rill_node *n = rill_graph_find_node(g, node);
    if (!CHECK(n != NULL)) return;
    int at = -1;
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, attr) == 0) at = i;
    bool added = at < 0;
    if (added) {
        /* The node lacks it: add it for the encoding only. */
        n->attrs = rill__realloc(n->attrs, (size_t)(n->nattrs + 1) * sizeof *n->attrs);
        at = n->nattrs++;
        n->attrs[at] = (rill__attr){.name = attr};
    }
    rill__attr saved = n->attrs[at];
    n->attrs[at].kind = RILL__ATTR_INT;
    n->attrs[at].v.i = v;
    rill_status *s = rill_status_new();
    uint8_t *buf;
    size_t len;
    CHECK(rill__graph_encode(g, &buf, &len, s));
    n->attrs[at] = saved;
    if (added) n->nattrs--;
    rill_graph *h = rill__graph_decode(buf, len, NULL, s);
    CHECK(h == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DATA_LOSS);
    char want[96];
    snprintf(want, sizeof want, "attribute '%s' of the wrong kind", attr);
    CHECK_STR_CONTAINS(rill_status_message(s), want);
    rill_graph_free(h);
    rill__free(buf);
    rill_status_free(s);
}

/* Attributes that ops read without checking their kind (a Variable's shape, the tensor name a
 * _RemoteSend pushes under) must come with the kind they are read as: a Variable whose shape
 * arrived as an int read the int's bytes as a rank of 9 (found by fuzz/fuzz_graph_codec.c:
 * UBSan, index 8 out of bounds in rill_shape_is_fully_defined). */
static void test_attr_kinds(void)
{
    rill_graph *g = rill_graph_new();
    rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_zeros_initializer(), true, "v");
    rill_no_op(g, "n");
    check_refused_as_int(g, "v", "shape", 9);
    check_refused_as_int(g, "n", "tensor_name", 1);
    rill_graph_free(g);
}

int main(void)
{
    uint8_t *enc = NULL;
    size_t len = 0;
    test_round_trip(&enc, &len);
    if (enc) test_hostile(enc, len);
    test_attr_kinds();
    rill__free(enc);
    TEST_MAIN_END();
}
