/* rill/graph.h - building a dataflow graph.
 *
 * A graph owns its nodes. Building is dozens of calls, so the graph keeps a sticky status: the
 * first error is recorded on the graph, every later builder call returns an empty output
 * ({NULL, 0}) without touching it, and the caller checks rill_graph_status once at the end.
 * Builders accept {NULL, 0} inputs (the result of an earlier failed call) and just return empty.
 *
 * Names: a NULL name gives the op's default name ("add", "MatMul", ...), made unique with "_1",
 * "_2" suffixes as TensorFlow does, inside the current name scope ("layer1/add").
 */
#ifndef RILL_GRAPH_H
#define RILL_GRAPH_H

#include <rill/status.h>
#include <rill/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rill_graph rill_graph;
typedef struct rill_node rill_node;

/* One output of a node: an edge's source. {NULL, 0} is "no value". */
typedef struct rill_output {
    rill_node *node;
    int index;
} rill_output;

rill_graph *rill_graph_new(void);
/* Frees the graph and all its nodes. NULL is a no-op. Sessions on it must be freed first. */
void rill_graph_free(rill_graph *g);

/* The sticky build status (borrowed). */
const rill_status *rill_graph_status(const rill_graph *g);
bool rill_graph_ok(const rill_graph *g);
/* Forgets a recorded error so building can go on (the failed node was never added). */
void rill_graph_clear_status(rill_graph *g);

/* Graph-level random seed, as tf.set_random_seed: a random op made later with op seed 0 (none)
 * gets (seed, k) for the k-th such op from 0, and one with op seed s gets (seed, s), as TF 2.x's
 * compat.v1 get_seed derives them; without a graph seed, op seed s gives (87654321, s) and none
 * a seed from the OS. The count goes on across calls, as TF's does. */
void rill_graph_set_seed(rill_graph *g, int64_t seed);

/* Name scopes nest: push "layer1" then "dense" puts nodes under "layer1/dense/". */
void rill_graph_push_name_scope(rill_graph *g, const char *scope);
void rill_graph_pop_name_scope(rill_graph *g);
/* The current name scope as a prefix ("" at the root, else "a/b/"); borrowed, valid until the
 * scope is popped. */
const char *rill_graph_name_scope(const rill_graph *g);

/* Nodes created inside get control inputs on every node in deps (borrowed). Scopes nest and add
 * up; push with n == 0 clears the outer ones, as tf.control_dependencies(None). */
void rill_graph_push_control_dependencies(rill_graph *g, rill_node *const *deps, int n);
void rill_graph_pop_control_dependencies(rill_graph *g);

/* Device scopes, as nested tf.device: every node created inside gets the scope's spec merged
 * into its requested device, inner scopes winning and outer ones filling fields still unset.
 * spec is parsed at once ("/cpu:0", "/gpu:1", "/job:ps/task:0", "/device:GPU:*"); a malformed
 * one records INVALID_ARGUMENT "Malformed device specification '<spec>'" on the graph. A NULL
 * spec is a barrier: the scopes outside it no longer apply (tf.device(None)). */
void rill_graph_push_device(rill_graph *g, const char *spec);
/* A device function: called for each new node (with its name, op, inputs and attributes set)
 * and returning a spec (borrowed until the call returns) or NULL for "no opinion". This is the
 * hook replica_device_setter uses. A NULL fn is a barrier. */
typedef const char *(*rill_device_fn)(void *arg, const rill_node *n);
void rill_graph_push_device_fn(rill_graph *g, rill_device_fn fn, void *arg);
/* Pops the innermost device scope or device function. */
void rill_graph_pop_device(rill_graph *g);
/* Nodes created inside are colocated with op (borrowed): same requested device, same placement
 * group; device scopes are ignored meanwhile (tf.colocate_with). */
void rill_graph_push_colocate_with(rill_graph *g, rill_node *op);
void rill_graph_pop_colocate_with(rill_graph *g);

/* Lookup. rill_graph_find_node returns NULL when absent. rill_graph_find_output parses
 * "name" or "name:index" and fails with NOT_FOUND, in TensorFlow's words, when absent. */
rill_node *rill_graph_find_node(const rill_graph *g, const char *name);
rill_output rill_graph_find_output(const rill_graph *g, const char *name, rill_status *s);
int rill_graph_num_nodes(const rill_graph *g);
rill_node *rill_graph_node(const rill_graph *g, int i);

/* Named collections ("variables", "trainable_variables", ...). Nodes are borrowed. */
void rill_graph_add_to_collection(rill_graph *g, const char *key, rill_node *n);
/* Copies up to cap members into out; returns the member count. */
int rill_graph_get_collection(const rill_graph *g, const char *key, rill_node **out, int cap);
/* Empties a collection (tf.Graph.clear_collection; Python rebuilds one without a member this
 * way). Its nodes stay in the graph. */
void rill_graph_clear_collection(rill_graph *g, const char *key);

/* Node accessors. All returned strings are borrowed and live as long as the graph. */
const char *rill_node_name(const rill_node *n);
const char *rill_node_op_type(const rill_node *n);
/* The device requested at build time, canonical ("/device:GPU:1", "/job:ps/task:0"); "" when
 * none. */
const char *rill_node_requested_device(const rill_node *n);
int rill_node_num_inputs(const rill_node *n);
rill_output rill_node_input(const rill_node *n, int i);
int rill_node_num_control_inputs(const rill_node *n);
rill_node *rill_node_control_input(const rill_node *n, int i);
int rill_node_num_outputs(const rill_node *n);
rill_dtype rill_node_output_dtype(const rill_node *n, int i);
/* The build-time inferred shape of output i. */
rill_shape rill_node_output_shape(const rill_node *n, int i);
rill_graph *rill_node_graph(const rill_node *n);
/* The node n is colocated with (the root of its group), or NULL. */
rill_node *rill_node_colocation(const rill_node *n);
/* Puts n in other's colocation group after the fact. */
void rill_node_colocate_with(rill_node *n, rill_node *other);
/* Adds a control edge dep -> n after the fact (may create a cycle; sessions detect it). */
void rill_node_add_control_input(rill_node *n, rill_node *dep);
/* {n, i}; {NULL, 0} when n is NULL. */
rill_output rill_node_output(rill_node *n, int i);
/* Dtype and shape of an output; RILL_DT_INVALID / unknown for {NULL, 0}. */
rill_dtype rill_output_dtype(rill_output o);
rill_shape rill_output_shape(rill_output o);

/* --- any op by its type name (TF's TF_NewOperation ... TF_FinishOperation) ---
 * What language front ends build graphs with: the op's inputs in order and its attributes by
 * name, then one node made with the graph's scopes, device and control dependencies, its shapes
 * inferred and checked as the typed builders' are. Attribute names and kinds are TF's (strides:
 * ints, padding: string, T: type, ...); a known attribute of the wrong kind, an unknown op type
 * or bad inputs leave the error on the graph (TF's texts) and finish returns NULL. Strings,
 * lists and tensors are copied or referenced: nothing passed in need outlive the call. */
typedef struct rill_op_builder rill_op_builder;
rill_op_builder *rill_op_builder_new(rill_graph *g, const char *op_type, const char *name);
void rill_op_builder_add_input(rill_op_builder *b, rill_output in);
void rill_op_builder_set_int(rill_op_builder *b, const char *attr, int64_t v);
void rill_op_builder_set_float(rill_op_builder *b, const char *attr, double v);
void rill_op_builder_set_bool(rill_op_builder *b, const char *attr, bool v);
void rill_op_builder_set_type(rill_op_builder *b, const char *attr, rill_dtype v);
void rill_op_builder_set_string(rill_op_builder *b, const char *attr, const char *v);
void rill_op_builder_set_ints(rill_op_builder *b, const char *attr, const int64_t *v, int n);
void rill_op_builder_set_shape(rill_op_builder *b, const char *attr, rill_shape v);
void rill_op_builder_set_tensor(rill_op_builder *b, const char *attr, const rill_tensor *v);
/* Makes the node and frees b (also on error: then NULL, and the graph's status says why). */
rill_node *rill_op_builder_finish(rill_op_builder *b);
/* Whether an op type is registered. */
bool rill_op_exists(const char *op_type);

/* A gradient override (TF's RegisterGradient / gradient_override_map): consulted by every
 * gradient build on the graph (rill_gradients, the optimizers) for each node it differentiates,
 * before the op's own gradient function. It is first asked with dy and dx NULL whether it makes
 * n's gradient (true: yes); then, when it said yes, called with dy[i], the gradient of output i
 * ({NULL, 0}: none): on true it has written dx[i] for every input ({NULL, 0}: no gradient flows
 * there), building the nodes on g; false: the op's own gradient function is used. NULL fn
 * removes it. */
typedef bool (*rill_gradient_override_fn)(void *arg, rill_graph *g, rill_node *n,
                                          const rill_output *dy, rill_output *dx);
void rill_graph_set_gradient_override(rill_graph *g, rill_gradient_override_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
