/* ops_dataset2.c - tf.data's later transformations (kernels in kernels/cpu/cpu_dataset2.c):
 * Concatenate, FlatMap / Interleave, Unbatch, Shard, TakeWhile, Unique, IgnoreErrors, Cache,
 * Scan, Window, PaddedBatch, DirectedInterleave (choose_from_datasets), and the ops that read a
 * dataset whole: ReduceDataset, DatasetToSingleElement, DatasetCardinality.
 *
 * Handles and functions are as in ops_dataset.c. A function's captured tensors (outer tensors
 * the body reads, TF's other_arguments) are the op's last inputs, as many as the names of its
 * f_captures attr (the tensors the body session is fed with their values). */
#include "ops_dataset.h"

static void handles_shape(rill_node *n, rill_status *s, int nds, const char *const *args,
                          const rill_dtype *types, int nargs)
{
    for (int i = 0; i < nds; i++)
        if (!rill__ds_check_scalar(n, i, RILL_INT64, i ? "another_dataset" : "input_dataset", s))
            return;
    for (int i = 0; i < nargs; i++)
        if (!rill__ds_check_scalar(n, nds + i, types[i], args[i], s)) return;
    rill__ds_handle_out(n);
}

static void unary_shape(rill_node *n, rill_status *s)
{
    handles_shape(n, s, 1, NULL, NULL, 0);
}

static void concat_shape(rill_node *n, rill_status *s)
{
    handles_shape(n, s, 2, NULL, NULL, 0);
}

static void fn_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s) || !rill__ds_check_fn(n, s))
        return;
    rill__ds_handle_out(n);
}

static void interleave_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 1, RILL_INT64, "cycle_length", s) ||
        !rill__ds_check_scalar(n, 2, RILL_INT64, "block_length", s))
        return;
    fn_shape(n, s);
}

static void shard_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"num_shards", "index"};
    static const rill_dtype types[] = {RILL_INT64, RILL_INT64};
    handles_shape(n, s, 1, args, types, 2);
}

static void cache_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"filename"};
    static const rill_dtype types[] = {RILL_STRING};
    handles_shape(n, s, 1, args, types, 1);
}

static void window_shape(rill_node *n, rill_status *s)
{
    static const char *const args[] = {"size", "shift", "stride", "drop_remainder"};
    static const rill_dtype types[] = {RILL_INT64, RILL_INT64, RILL_INT64, RILL_BOOL};
    handles_shape(n, s, 1, args, types, 4);
}

/* input_dataset, batch_size, padded_shapes[N] (int64 vectors), padding_values[N] (scalars),
 * drop_remainder */
static void padded_batch_shape(rill_node *n, rill_status *s)
{
    int64_t k = rill__attr_int(n, "N", -1);
    if (k < 1 || n->ninputs != 3 + 2 * k) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "PaddedBatchDatasetV2 '%s' has %d inputs: it takes input_dataset, "
                        "batch_size, N (%lld) padded_shapes, N padding_values and drop_remainder",
                        n->name, n->ninputs, (long long)k);
        return;
    }
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s) ||
        !rill__ds_check_scalar(n, 1, RILL_INT64, "batch_size", s) ||
        !rill__ds_check_scalar(n, n->ninputs - 1, RILL_BOOL, "drop_remainder", s))
        return;
    for (int i = 0; i < k; i++) {
        rill_shape sh = rill__in_shape(n, 2 + i);
        if (rill__in_dtype(n, 2 + i) != RILL_INT64 || sh.rank > 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "padded_shapes[%d] of '%s' must be an int64 vector", i, n->name);
            return;
        }
        sh = rill__in_shape(n, 2 + (int)k + i);
        if (sh.rank > 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shape must be rank 0 but is rank %d for padding_values[%d] of '%s'",
                            sh.rank, i, n->name);
            return;
        }
    }
    rill__ds_handle_out(n);
}

static void directed_shape(rill_node *n, rill_status *s)
{
    for (int i = 0; i < n->ninputs; i++)
        if (!rill__ds_check_scalar(n, i, RILL_INT64,
                                   i ? "data_input_datasets" : "selector_input_dataset", s))
            return;
    rill__ds_handle_out(n);
}

static void reduce_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s) || !rill__ds_check_fn(n, s))
        return;
    rill__ds_element_outputs(n, s);
}

static void single_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "dataset", s)) return;
    rill__ds_element_outputs(n, s);
}

static void cardinality_shape(rill_node *n, rill_status *s)
{
    if (!rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s)) return;
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = rill_shape_scalar();
}

/* input 0 a dataset, the rest captured tensors */
static void unary_first_shape(rill_node *n, rill_status *s)
{
    if (rill__ds_check_scalar(n, 0, RILL_INT64, "input_dataset", s)) rill__ds_handle_out(n);
}

static void random_shape(rill_node *n, rill_status *s)
{
    (void)s;
    rill__ds_handle_out(n);
}

/* pattern: a string scalar or vector; the matching files, a string vector */
static void matching_files_shape(rill_node *n, rill_status *s)
{
    if (rill__in_dtype(n, 0) != RILL_STRING || rill__in_shape(n, 0).rank > 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input pattern tensor must be scalar or vector, but had shape: %s",
                        rill__in_shape(n, 0).rank > 1 ? "rank > 1" : "not a string");
        return;
    }
    int64_t unk = -1;
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = rill_shape_make(1, &unk);
}

/* filenames (a string scalar or vector), then the readers' scalars */
static void reader_shape(rill_node *n, rill_status *s)
{
    bool fixed = n->ninputs == 6;
    static const char *const tl[] = {"compression_type", "buffer_size"};
    static const rill_dtype tlt[] = {RILL_STRING, RILL_INT64};
    static const char *const fl[] = {"header_bytes", "record_bytes", "footer_bytes", "buffer_size",
                                     "compression_type"};
    static const rill_dtype flt[] = {RILL_INT64, RILL_INT64, RILL_INT64, RILL_INT64, RILL_STRING};
    if (rill__in_dtype(n, 0) != RILL_STRING || rill__in_shape(n, 0).rank > 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "`filenames` of '%s' must be a string scalar or vector", n->name);
        return;
    }
    for (int i = 1; i < n->ninputs; i++)
        if (!rill__ds_check_scalar(n, i, fixed ? flt[i - 1] : tlt[i - 1],
                                   fixed ? fl[i - 1] : tl[i - 1], s))
            return;
    rill__ds_handle_out(n);
}

/* logits [batch, classes], num_samples, seed [2]: int64 [batch, num_samples] */
static void stateless_multinomial_shape(rill_node *n, rill_status *s)
{
    rill_shape l = rill__in_shape(n, 0), sd = rill__in_shape(n, 2);
    if (l.rank >= 0 && l.rank != 2) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 2 but is rank %d for '{{node %s}} = "
                        "StatelessMultinomial'",
                        l.rank, n->name);
        return;
    }
    if (sd.rank >= 0 && (sd.rank != 1 || (sd.dims[0] >= 0 && sd.dims[0] != 2))) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "seed must have shape [2] for '%s'", n->name);
        return;
    }
    int64_t d[2] = {l.rank == 2 ? l.dims[0] : -1, -1};
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = rill_shape_make(2, d);
}

#define DATASET(nm, lo, hi, fn)                                                                    \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = lo, .max_inputs = hi, .noutputs = 1,         \
        .stateful = true, .shape = fn                                                              \
    }

const rill__op_def rill__ops_dataset2[] = {
    DATASET("ConcatenateDataset", 2, 2, concat_shape),
    DATASET("FlatMapDataset", 1, -1, fn_shape),
    DATASET("InterleaveDataset", 3, -1, interleave_shape),
    DATASET("UnbatchDataset", 1, 1, unary_shape),
    DATASET("ShardDataset", 3, 3, shard_shape),
    DATASET("TakeWhileDataset", 1, -1, fn_shape),
    DATASET("UniqueDataset", 1, 1, unary_shape),
    DATASET("IgnoreErrorsDataset", 1, 1, unary_shape),
    DATASET("CacheDataset", 2, 2, cache_shape),
    DATASET("ScanDataset", 1, -1, fn_shape),
    DATASET("WindowDataset", 5, 5, window_shape),
    DATASET("PaddedBatchDatasetV2", 5, -1, padded_batch_shape),
    DATASET("DirectedInterleaveDataset", 2, -1, directed_shape),
    {.name = "ReduceDataset",
     .default_name = "ReduceDataset",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = -1,
     .stateful = true,
     .shape = reduce_shape},
    {.name = "DatasetToSingleElement",
     .default_name = "DatasetToSingleElement",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = -1,
     .stateful = true,
     .shape = single_shape},
    {.name = "DatasetCardinality",
     .default_name = "DatasetCardinality",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .shape = cardinality_shape},
    DATASET("RandomDataset", 0, 0, random_shape),
    DATASET("GroupByWindowDataset", 1, -1, unary_first_shape),
    DATASET("TextLineDataset", 3, 3, reader_shape),
    DATASET("TFRecordDataset", 3, 3, reader_shape),
    DATASET("FixedLengthRecordDatasetV2", 6, 6, reader_shape),
    {.name = "StatelessMultinomial",
     .default_name = "StatelessMultinomial",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = stateless_multinomial_shape},
    {.name = "MatchingFiles",
     .default_name = "MatchingFiles",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .shape = matching_files_shape},
    {0},
};
