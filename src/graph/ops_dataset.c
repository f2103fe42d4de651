/* ops_dataset.c - tf.data's ops: datasets and the iterators over them, run by rill's runtime
 * (kernels in kernels/cpu/cpu_dataset.c; the design is written there and in
 * docs/ARCHITECTURE.md, "Input pipelines").
 *
 * A dataset op (TensorSliceDataset, RangeDataset, MapDataset, BatchDatasetV2, ...) outputs a
 * dataset handle: an int64 scalar standing for an immutable dataset object (TF's DT_VARIANT);
 * its inputs are the input datasets' handles and the op's scalar arguments (counts, sizes: int64
 * as TF's). Iterator ops hand out an iterator handle, a string scalar naming the iterator in the
 * session's resource manager. IteratorGetNext's outputs are the element's components, their
 * dtypes and shapes from its attributes (TF's output_types / output_shapes; here output_types is
 * an ints attribute of dtype numbers, output_shapes an int64 tensor of [rank, dims...] per
 * component, rank -1 for unknown; num_outputs their count).
 *
 * MapDataset and FilterDataset name their function: f_args (string tensor) the placeholders of
 * the body, f_outputs (string tensor) its "node:index" outputs. The body is a subgraph of the
 * same graph that no fetch of the outer program reaches (the graph is its function library). */
#include "ops_dataset.h"

#include <string.h>

bool rill__ds_check_scalar(rill_node *n, int i, rill_dtype want, const char *what, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t != want) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input '%s' of '%s' Op has type %s that does not match expected type of "
                        "%s.",
                        what, n->op->name, rill_dtype_name(t), rill_dtype_name(want));
        return false;
    }
    rill_shape sh = rill__in_shape(n, i);
    if (sh.rank > 0) {
        char b[64];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 0 but is rank %d for '{{node %s}} = %s' with input "
                        "shapes: %s.",
                        sh.rank, n->name, n->op->name, rill__input_shapes(n, b, sizeof b));
        return false;
    }
    return true;
}

void rill__ds_handle_out(rill_node *n)
{
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = rill_shape_scalar();
}

/* Input 0 a dataset, then the named int64 (or bool) scalars. */
static void unary_shape(rill_node *n, rill_status *s, const char *const *args,
                        const rill_dtype *types, int nargs)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s)) return;
    for (int i = 0; i < nargs; i++)
        if (!rill__ds_check_scalar(n, i + 1, types[i], args[i], s)) return;
    rill__ds_handle_out(n);
}

static void tensor_slice_shape(rill_node *n, rill_status *s)
{
    int64_t d0 = -1;
    for (int i = 0; i < n->ninputs; i++) {
        rill_shape sh = rill__in_shape(n, i);
        if (sh.rank == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shape must be at least rank 1 but is rank 0 for '{{node %s}} = "
                            "TensorSliceDataset'",
                            n->name);
            return;
        }
        if (sh.rank > 0 && sh.dims[0] >= 0) {
            if (d0 >= 0 && d0 != sh.dims[0]) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Dimensions %lld and %lld are not compatible: all components "
                                "of '%s' must have the same size in dimension 0",
                                (long long)d0, (long long)sh.dims[0], n->name);
                return;
            }
            d0 = sh.dims[0];
        }
    }
    rill__ds_handle_out(n);
}

static void tensor_ds_shape(rill_node *n, rill_status *s)
{
    (void)s;
    rill__ds_handle_out(n);
}

static void range_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "start", s) ||
        !rill__ds_check_scalar(n, 1, RILL_INT64, "stop", s) ||
        !rill__ds_check_scalar(n, 2, RILL_INT64, "step", s))
        return;
    rill__ds_handle_out(n);
}

static void zip_shape(rill_node *n, rill_status *s)
{
    for (int i = 0; i < n->ninputs; i++)
        if (!rill__ds_check_scalar(n, i, RILL_INT64, "input_datasets", s)) return;
    rill__ds_handle_out(n);
}

bool rill__ds_check_fn(rill_node *n, rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, "f_args"), *o = rill__node_attr(n, "f_outputs");
    if (!a || a->kind != RILL__ATTR_TENSOR || rill_tensor_dtype(a->v.tensor) != RILL_STRING || !o ||
        o->kind != RILL__ATTR_TENSOR || rill_tensor_dtype(o->v.tensor) != RILL_STRING) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s' needs its function: string tensor attrs f_args (the body's "
                        "placeholders) and f_outputs (its outputs)",
                        n->op->name, n->name);
        return false;
    }
    return true;
}

static void map_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s) || !rill__ds_check_fn(n, s))
        return;
    rill__ds_handle_out(n);
}

static void batch_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"batch_size", "drop_remainder"};
    static const rill_dtype types[] = {RILL_INT64, RILL_BOOL};
    unary_shape(n, s, args, types, 2);
}

static void shuffle_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"buffer_size"};
    static const rill_dtype types[] = {RILL_INT64};
    unary_shape(n, s, args, types, 1);
}

static void count_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"count"};
    static const rill_dtype types[] = {RILL_INT64};
    unary_shape(n, s, args, types, 1);
}

static void prefetch_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"buffer_size"};
    static const rill_dtype types[] = {RILL_INT64};
    unary_shape(n, s, args, types, 1);
}

static void iterator_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = rill_shape_scalar();
}

static void one_shot_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "dataset", s)) return;
    iterator_shape(n, s);
}

static void make_iterator_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "dataset", s)) return;
    rill__ds_check_scalar(n, 1, RILL_STRING, "iterator", s);
}

/* The element's components from output_types and output_shapes (see the file comment). */
static void get_next_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_STRING, "iterator", s)) return;
    rill__ds_element_outputs(n, s);
}

void rill__ds_element_outputs(rill_node *n, rill_status *s)
{
    const rill__attr *t = rill__node_attr(n, "output_types");
    const rill__attr *sh = rill__node_attr(n, "output_shapes");
    int k = t && t->kind == RILL__ATTR_INTS ? t->v.ints.n : -1;
    if (k <= 0 || k != n->noutputs) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s' needs output_types (%d) with one dtype per output "
                        "(num_outputs %d), at least one",
                        n->op->name, n->name, k, n->noutputs);
        return;
    }
    const rill_tensor *st = sh && sh->kind == RILL__ATTR_TENSOR ? sh->v.tensor : NULL;
    const int64_t *sv = st && rill_tensor_dtype(st) == RILL_INT64 ? rill_tensor_data(st) : NULL;
    int64_t sn = sv ? rill_tensor_num_elements(st) : 0, at = 0;
    for (int i = 0; i < k; i++) {
        rill_dtype dt = (rill_dtype)t->v.ints.v[i];
        if (!rill_dtype_is_valid(dt)) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': bad dtype %d", n->op->name, n->name,
                            (int)dt);
            return;
        }
        n->out_dtypes[i] = dt;
        n->out_shapes[i] = rill_shape_unknown();
        if (!sv) continue;
        if (at >= sn || sv[at] > RILL_MAX_DIMS || sv[at] < -1 ||
            at + 1 + (sv[at] > 0 ? sv[at] : 0) > sn) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "%s '%s': output_shapes does not describe %d shapes", n->op->name,
                            n->name, k);
            return;
        }
        int r = (int)sv[at++];
        if (r >= 0) n->out_shapes[i] = rill_shape_make(r, sv + at);
        at += r > 0 ? r : 0;
    }
}

#define DATASET(nm, lo, hi, fn)                                                                    \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = lo, .max_inputs = hi, .noutputs = 1,         \
        .stateful = true, .shape = fn                                                              \
    }

const rill__op_def rill__ops_dataset[] = {
    DATASET("TensorSliceDataset", 1, -1, tensor_slice_shape),
    DATASET("TensorDataset", 1, -1, tensor_ds_shape),
    DATASET("RangeDataset", 3, 3, range_shape),
    DATASET("ZipDataset", 1, -1, zip_shape),
    DATASET("MapDataset", 1, -1, map_shape),
    DATASET("FilterDataset", 1, -1, map_shape),
    DATASET("BatchDatasetV2", 3, 3, batch_shape),
    DATASET("ShuffleDataset", 2, 2, shuffle_shape),
    DATASET("RepeatDataset", 2, 2, count_shape),
    DATASET("TakeDataset", 2, 2, count_shape),
    DATASET("SkipDataset", 2, 2, count_shape),
    DATASET("PrefetchDataset", 2, 2, prefetch_shape),
    {.name = "IteratorV2",
     .default_name = "Iterator",
     .noutputs = 1,
     .stateful = true,
     .shape = iterator_shape},
    {.name = "OneShotIterator",
     .default_name = "OneShotIterator",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .shape = one_shot_shape},
    {.name = "MakeIterator",
     .default_name = "MakeIterator",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 0,
     .stateful = true,
     .shape = make_iterator_shape},
    {.name = "IteratorGetNext",
     .default_name = "IteratorGetNext",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = -1,
     .stateful = true,
     .blocking = true,
     .shape = get_next_shape},
    {0},
};
