/* cpu_dataset.h - tf.data's objects shared by the dataset kernels (cpu_dataset.c: the design,
 * the sources and the first transformations, the iterators; cpu_dataset2.c: the later
 * transformations). The names are rill__ds_*; the types are the files' own short ones. */
#ifndef RILL_KERNELS_CPU_DATASET_H
#define RILL_KERNELS_CPU_DATASET_H

#include "cpu_kernels.h"

#include <stdatomic.h>

typedef struct dctx {
    rill_status *s;  /* errors go here */
    double deadline; /* 0: none */
    int64_t timeout_ms;
    const atomic_uint *cancel;
    unsigned cancel_gen;
    const char *iterator; /* for messages */
} dctx;

typedef struct dset dset;
typedef struct dit dit;

typedef struct dset_vt {
    dit *(*make)(dset *d, dctx *c); /* NULL with c->s set on failure */
    void (*free)(dset *d);          /* the kind's own fields */
    int64_t (*card)(dset *d);       /* the cardinality (NULL: unknown) */
} dset_vt;

#define RILL_DS_INFINITE (-1) /* TF's INFINITE_CARDINALITY */
#define RILL_DS_UNKNOWN  (-2) /* TF's UNKNOWN_CARDINALITY */

struct dset {
    atomic_int refs;
    const dset_vt *vt;
    int64_t handle;    /* what the handle tensor points at */
    dset *prev, *next; /* the registry of live datasets */
};

typedef struct dit_vt {
    /* Fills out[] with the next element (new references) or sets *end. False: error in c->s. */
    bool (*next)(dit *it, dctx *c, rill_tensor **out, bool *end);
    void (*free)(dit *it);
} dit_vt;

struct dit {
    const dit_vt *vt;
    int ncomp;
};

/* The kinds over input datasets share one shape: their inputs and their scalars. */
typedef struct fn_obj fn_obj;

typedef struct over_ds {
    dset base;
    dset **in;
    int nin;
    int64_t a, b;        /* batch: size, drop; shuffle: buffer; repeat/take/skip: count */
    int64_t seed, seed2; /* shuffle */
    bool reshuffle;
    atomic_llong epoch; /* shuffle: iterators made so far */
    fn_obj *fn;         /* map, filter */
    rill_tensor **cap;  /* the function's captured values (fn->ncaps) */
    int ncap;
    const char *name; /* the node's name (its graph's string), for messages */
} over_ds;

/* An iterator over one or more inputs' iterators. */
typedef struct over_it {
    dit base;
    over_ds *d;
    dit **in;
    int nin;
    int64_t count; /* take/skip/repeat: done so far */
    bool started;  /* skip: skipped; repeat: this epoch gave an element */
    bool done;
    /* shuffle */
    rill__rng rng;
    rill_tensor **buf; /* shuffle: cap * ncomp; batch: a batch's elements (scratch) */
    int64_t nbuf, cap, alloc;
    bool in_end;
} over_it;

/* A function of MapDataset or FilterDataset: its body's placeholders and outputs in the user's
 * graph, and the session that runs it (made on first call; its plan cached there). */
struct fn_obj {
    atomic_int refs;
    pthread_mutex_t mu; /* making sess */
    rill_graph *g;
    rill_output *args, *outs;
    int nargs, nouts;
    int ncaps;    /* captured tensors: args[nargs..nargs+ncaps) */
    void *runner; /* the runtime's handle (rill__function_runner) */
    rill__resource_mgr *rm;
    char *op; /* "map" or "filter" and the node: "MapDataset 'map/MapDataset'" */
};

/* the registry of live datasets and the handle tensors */
void rill__ds_dset_unref(dset *d);
void rill__ds_dset_register(dset *d, const dset_vt *vt); /* one reference, the caller's */
void rill__ds_set_handle(rill__kctx *ctx, dset *d);      /* output 0: d's handle (takes the ref) */
rill_tensor *rill__ds_handle_tensor(dset *d);            /* a handle tensor (takes the ref) */
dset *rill__ds_input_dset(rill__kctx *ctx, int i);       /* a new reference, or NULL: ctx failed */
dset *rill__ds_lookup(const rill_tensor *t);             /* a new reference, or NULL */
int64_t rill__ds_in_i64(const rill__kctx *ctx, int i);
void rill__ds_free_elems(rill_tensor **e, int n);
void rill__ds_dctx_of(rill__kctx *ctx, dctx *c, rill_status *s, const char *iterator);
rill_tensor *rill__ds_slice_row(const rill_tensor *t, int64_t i);
dit *rill__ds_dset_make(dset *d, dctx *c);
int64_t rill__ds_card(dset *d);
int64_t rill__ds_card_in0(dset *b);   /* over_ds: its input's */
int64_t rill__ds_batch_card(dset *b); /* over_ds: a = batch size, b = drop_remainder */
void rill__ds_dit_free(dit *it);
void rill__ds_plain_it_free(dit *b);
void rill__ds_plain_ds_free(dset *b);

/* datasets over input datasets (inputs 0..nin-1 of the node) and their iterators; size: the
 * iterator's struct when it embeds over_it first (0: over_it) */
void rill__ds_over_free(dset *b);
over_ds *rill__ds_over_new(rill__kctx *ctx, int nin);
over_ds *rill__ds_over_new_sized(rill__kctx *ctx, int nin, size_t size); /* embeds over_ds first */
void rill__ds_over_it_free(dit *b);
over_it *rill__ds_over_it_new(over_ds *d, const dit_vt *vt, dctx *c, size_t size);
bool rill__ds_in_next(over_it *it, int i, dctx *c, rill_tensor **out, bool *end);

/* functions */
void rill__ds_fn_unref(fn_obj *f);
void rill__ds_fn_state_free(void *p);
const rill_node *rill__ds_user_node(const rill__kctx *ctx);
fn_obj *rill__ds_node_fn(rill__kctx *ctx);                    /* f_*, cached in the node's state */
fn_obj *rill__ds_fn_new(rill__kctx *ctx, const char *prefix); /* <prefix>_args, ... */
void rill__ds_take_captures(rill__kctx *ctx, over_ds *d, const fn_obj *f);
bool rill__ds_fn_call(fn_obj *f, dctx *c, rill_tensor *const *cap, rill_tensor *const *in, int nin,
                      rill_tensor **out);

/* cpu_dataset_io.c: TextLineDataset, FixedLengthRecordDatasetV2, TFRecordDataset */
void rill__ds_reader_kernel(rill__kctx *ctx);

#endif
