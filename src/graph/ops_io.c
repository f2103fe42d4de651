/* ops_io.c - the ops a Saver is made of (reference §9).
 *
 * TF saves with one SaveV2 per device into a temporary bundle and merges them with
 * MergeV2Checkpoints. rill writes the final files at once, which a crash cannot break either
 * (the state file is written last): each ps task's BundleSaveShard writes its own data file
 * <prefix>.data-<shard>-of-<n> and returns the entries it wrote (offsets, checksums, shapes);
 * BundleMergeIndex, on the chief, writes <prefix>.index from them and returns the prefix and a
 * string naming the tensors that hold NaN or Inf ("" when none: the writers counted them).
 * BundleRestoreShard reads a task's tensors of a bundle at once (one open of the index, the
 * reads in parallel), checks each against its variable's dtype and shape, and outputs them all
 * or fails with none: an Assign per variable takes them, so a bad checkpoint changes nothing. */
#include "graph_internal.h"

#include <string.h>

static bool is_string_scalar(rill_node *n, int i, const char *what, rill_status *s)
{
    rill_shape sh = rill__in_shape(n, i);
    if (rill__in_dtype(n, i) == RILL_STRING && (sh.rank <= 0)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT, "'%s' (op: '%s'): %s must be a string scalar",
                    n->name, n->op->name, what);
    return false;
}

static void save_shard_shape(rill_node *n, rill_status *s)
{
    if (!is_string_scalar(n, 0, "prefix", s)) return;
    const rill__attr *names = rill__node_attr(n, "names");
    if (!names || names->kind != RILL__ATTR_TENSOR || !names->v.tensor ||
        rill_tensor_dtype(names->v.tensor) != RILL_STRING ||
        rill_tensor_num_elements(names->v.tensor) != n->ninputs - 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "'%s' (op: '%s'): attribute 'names' must name each of the %d tensors",
                        n->name, n->op->name, n->ninputs - 1);
        return;
    }
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = rill_shape_scalar();
}

static void merge_index_shape(rill_node *n, rill_status *s)
{
    for (int i = 0; i < n->ninputs; i++)
        if (!is_string_scalar(n, i, i ? "entries" : "prefix", s)) return;
    for (int i = 0; i < 2; i++) {
        n->out_dtypes[i] = RILL_STRING;
        n->out_shapes[i] = rill_shape_scalar();
    }
}

/* names (string tensor), dtypes (ints) and shapes (ints: rank, then dims, per tensor) describe
 * the num_outputs tensors. */
static void restore_shape(rill_node *n, rill_status *s)
{
    if (!is_string_scalar(n, 0, "prefix", s)) return;
    const rill__attr *names = rill__node_attr(n, "names"), *dt = rill__node_attr(n, "dtypes"),
                     *sh = rill__node_attr(n, "shapes");
    bool ok = names && names->kind == RILL__ATTR_TENSOR && names->v.tensor &&
              rill_tensor_dtype(names->v.tensor) == RILL_STRING &&
              rill_tensor_num_elements(names->v.tensor) == n->noutputs && dt &&
              dt->kind == RILL__ATTR_INTS && dt->v.ints.n == n->noutputs && sh &&
              sh->kind == RILL__ATTR_INTS;
    int at = 0;
    for (int i = 0; ok && i < n->noutputs; i++) {
        int64_t rank = at < sh->v.ints.n ? sh->v.ints.v[at++] : -1;
        ok = rank >= 0 && rank <= RILL_MAX_DIMS && at + rank <= sh->v.ints.n &&
             rill_dtype_is_valid((rill_dtype)dt->v.ints.v[i]);
        if (!ok) break;
        n->out_dtypes[i] = (rill_dtype)dt->v.ints.v[i];
        n->out_shapes[i] = rill_shape_make((int)rank, sh->v.ints.v + at);
        at += (int)rank;
    }
    if (!ok)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "'%s' (op: '%s'): names, dtypes and shapes must describe %d tensors",
                        n->name, n->op->name, n->noutputs);
}

const rill__op_def rill__ops_io[] = {
    {.name = "BundleSaveShard",
     .default_name = "save_shard",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .stateful = true,
     .shape = save_shard_shape,
     .type_attr = "dtype"},
    {.name = "BundleMergeIndex",
     .default_name = "merge_index",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 2,
     .stateful = true,
     .shape = merge_index_shape,
     .type_attr = "dtype"},
    {.name = "BundleRestoreShard",
     .default_name = "restore_shard",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = -1,
     .stateful = true,
     .shape = restore_shape,
     .type_attr = "dtype"},
    {0},
};
