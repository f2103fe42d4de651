/* saver.c - tf.train.Saver over TensorFlow's V2 bundle (reference §9.1).
 *
 * The graph a saver adds, under the name scope "save": a string placeholder for the prefix;
 * per task that holds variables, a BundleSaveShard on that task's CPU reading its variables
 * and writing shard k of n; a BundleMergeIndex on the saving task writing the index from the
 * shards' entries; per task a BundleRestoreShard on its CPU that reads all of the task's
 * tensors or fails with none, and an Assign per variable (a failed read changes nothing). On a
 * cluster
 * each ps writes its own data file and the chief the index, as TF's sharded save does; on one
 * machine it is one shard, .data-00000-of-00001.
 *
 * After the files, save() keeps the newest max_to_keep checkpoints (deleting older ones unless
 * keep_checkpoint_every_n_hours spares them) and rewrites the `checkpoint` state file, last.
 *
 * Beyond TF: a checkpoint holding NaN or Inf never costs the last good one. The writers count
 * the non-finite elements of every float tensor as they write it (an exponent-bits test over
 * bytes the checksum has just read, format/bundle.c), and the merge names the tensors that had
 * any, so the saver knows each checkpoint it wrote is all-finite without reading anything back.
 * Saving one that is not logs a warning naming the tensors; rotation never deletes the newest
 * all-finite checkpoint: when max_to_keep newer ones are all non-finite, it stays listed (and
 * on disk) as one more, the oldest. For checkpoints a saver took over from a state file
 * (rill_saver_recover_last_checkpoints) finiteness is unknown; it is read from the files only
 * when rotation needs it (the newer ones all non-finite), and one that cannot be read counts
 * as not finite (it could not be restored either). */
#include <rill/checkpoint.h>
#include <rill/device_name.h>
#include <rill/train.h>

#include "../format/checkpoint.h"
#include "../graph/graph_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct rill_saver {
    rill_graph *g;
    rill_output filename;
    rill_output save_op; /* the prefix, once the index is written */
    rill_node *restore_op;
    int max_to_keep;
    double keep_every_s, next_keep;
    char **last;
    double *last_t;
    signed char *last_ok; /* 1: every value finite, 0: some NaN or Inf, -1: not known yet */
    int nlast;
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "/job:ps/replica:0/task:1/device:CPU:0" for a variable on "/job:ps/task:1/device:GPU:0": the
 * CPU of the variable's task, where its save and restore ops run. */
static void cpu_of(const rill_node *var, char *out, size_t n)
{
    rill_device_name d;
    if (!var->requested_device || !rill_device_name_parse(var->requested_device, &d, NULL))
        memset(&d, 0, sizeof d);
    d.has_type = d.has_id = true;
    snprintf(d.type, sizeof d.type, "CPU");
    d.id = 0;
    rill_device_name_str(&d, out, n);
}

/* A variable and the checkpoint key it is saved under. */
typedef struct keyed_var {
    rill_output v;
    const char *key;
} keyed_var;

static int by_key(const void *a, const void *b)
{
    return strcmp(((const keyed_var *)a)->key, ((const keyed_var *)b)->key);
}

rill_saver *rill_saver_new(rill_graph *g, const rill_output *var_list, int nvars, int max_to_keep,
                           double keep_checkpoint_every_n_hours, rill_status *s)
{
    return rill_saver_new_named(g, var_list, NULL, nvars, max_to_keep,
                                keep_checkpoint_every_n_hours, s);
}

rill_saver *rill_saver_new_named(rill_graph *g, const rill_output *var_list,
                                 const char *const *keys, int nvars, int max_to_keep,
                                 double keep_checkpoint_every_n_hours, rill_status *s)
{
    bool keyed = keys && var_list && nvars > 0;
    if (!rill_graph_ok(g)) {
        rill_status_copy(s, rill_graph_status(g));
        return NULL;
    }
    rill_output *vars = NULL;
    if (!var_list || nvars <= 0) {
        nvars = rill_graph_global_variables(g, NULL, 0);
        vars = rill__calloc((size_t)nvars + 1, sizeof *vars);
        RILL_CHECK_ALLOC(vars);
        rill_graph_global_variables(g, vars, nvars);
    } else {
        vars = rill__calloc((size_t)nvars + 1, sizeof *vars);
        RILL_CHECK_ALLOC(vars);
        memcpy(vars, var_list, (size_t)nvars * sizeof *vars);
    }
    if (nvars == 0) {
        rill__free(vars);
        rill_status_set(s, RILL_INVALID_ARGUMENT, "No variables to save");
        return NULL;
    }
    for (int i = 0; i < nvars; i++)
        if (!vars[i].node || strcmp(vars[i].node->op->name, "VariableV2") != 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Saver: var_list[%d] is not a variable", i);
            rill__free(vars);
            return NULL;
        }
    /* In key order, as TF's Saver: the data files then match TF's byte for byte. */
    keyed_var *kv = rill__calloc((size_t)nvars, sizeof *kv);
    RILL_CHECK_ALLOC(kv);
    for (int i = 0; i < nvars; i++)
        kv[i] = (keyed_var){vars[i], keyed && keys[i] ? keys[i] : vars[i].node->name};
    qsort(kv, (size_t)nvars, sizeof *kv, by_key);
    for (int i = 1; i < nvars; i++)
        if (strcmp(kv[i - 1].key, kv[i].key) == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "At least two variables have the same name: %s", kv[i].key);
            rill__free(kv);
            rill__free(vars);
            return NULL;
        }
    for (int i = 0; i < nvars; i++) vars[i] = kv[i].v;
    /* Shards: one per task holding variables, in order of first appearance. */
    char(*dev)[RILL_DEVICE_NAME_MAX] = rill__calloc((size_t)nvars, sizeof *dev);
    int *shard = rill__calloc((size_t)nvars, sizeof *shard);
    RILL_CHECK_ALLOC(dev);
    RILL_CHECK_ALLOC(shard);
    int nshards = 0;
    for (int i = 0; i < nvars; i++) {
        char d[RILL_DEVICE_NAME_MAX];
        cpu_of(vars[i].node, d, sizeof d);
        int k = 0;
        while (k < nshards && strcmp(dev[k], d) != 0) k++;
        if (k == nshards) memcpy(dev[nshards++], d, sizeof d);
        shard[i] = k;
    }
    rill_saver *sv = rill__calloc(1, sizeof *sv);
    RILL_CHECK_ALLOC(sv);
    sv->g = g;
    sv->max_to_keep = max_to_keep;
    sv->keep_every_s = keep_checkpoint_every_n_hours > 0 ? keep_checkpoint_every_n_hours * 3600 : 0;
    sv->next_keep = wall_now() + sv->keep_every_s;
    rill_graph_push_control_dependencies(g, NULL, 0);
    rill_graph_push_name_scope(g, "save");
    sv->filename = rill_placeholder(g, RILL_STRING, rill_shape_scalar(), "filename");
    rill_output *entries = rill__calloc((size_t)nshards + 1, sizeof *entries);
    rill_output *ins = rill__calloc((size_t)nvars + 2, sizeof *ins);
    rill_node **assigns = rill__calloc((size_t)nvars + 1, sizeof *assigns);
    RILL_CHECK_ALLOC(entries);
    RILL_CHECK_ALLOC(ins);
    RILL_CHECK_ALLOC(assigns);
    entries[0] = sv->filename;
    for (int k = 0; k < nshards; k++) {
        int n = 0;
        ins[n++] = sv->filename;
        for (int i = 0; i < nvars; i++)
            if (shard[i] == k) ins[n++] = vars[i];
        rill_tensor *names = rill_tensor_new(RILL_STRING, (int64_t[]){n - 1}, 1);
        RILL_CHECK_ALLOC(names);
        for (int i = 0, j = 0; i < nvars; i++)
            if (shard[i] == k) {
                rill_tensor_set_string(names, j, kv[i].key, strlen(kv[i].key));
                j++;
            }
        rill__attr a[] = {RILL__A_TENSOR("names", names), RILL__A_INT("shard", k),
                          RILL__A_INT("num_shards", nshards)};
        rill_graph_push_device(g, dev[k]);
        rill_node *sn = rill__node_create(g, "BundleSaveShard", "save_shard", ins, n, a, 3);
        rill_graph_pop_device(g);
        rill_tensor_free(names);
        entries[k + 1] = (rill_output){sn, 0};
    }
    rill__attr ma[] = {RILL__A_INT("num_shards", nshards)};
    rill_node *merge =
        rill__node_create(g, "BundleMergeIndex", "merge_index", entries, nshards + 1, ma, 1);
    sv->save_op = (rill_output){merge, 0};
    /* Per shard one BundleRestoreShard reading all of its tensors, as TF's one RestoreV2 per
     * device: a missing or damaged tensor fails the step before any variable has changed. */
    int64_t *dts = rill__calloc((size_t)nvars + 1, sizeof *dts);
    int64_t *shp = rill__calloc((size_t)nvars * (RILL_MAX_DIMS + 1) + 1, sizeof *shp);
    RILL_CHECK_ALLOC(dts);
    RILL_CHECK_ALLOC(shp);
    for (int k = 0; k < nshards; k++) {
        int n = 0, ns = 0;
        for (int i = 0; i < nvars; i++) {
            if (shard[i] != k) continue;
            rill_shape sh = vars[i].node->out_shapes[0];
            dts[n++] = vars[i].node->out_dtypes[0];
            shp[ns++] = sh.rank;
            for (int d = 0; d < sh.rank; d++) shp[ns++] = sh.dims[d];
        }
        rill_tensor *names = rill_tensor_new(RILL_STRING, (int64_t[]){n}, 1);
        RILL_CHECK_ALLOC(names);
        for (int i = 0, j = 0; i < nvars; i++)
            if (shard[i] == k) rill_tensor_set_string(names, j++, kv[i].key, strlen(kv[i].key));
        rill__attr ra[] = {RILL__A_TENSOR("names", names), RILL__A_INTS("dtypes", n, dts),
                           RILL__A_INTS("shapes", ns, shp), RILL__A_INT("num_outputs", n)};
        rill_graph_push_device(g, dev[k]);
        rill_node *r =
            rill__node_create(g, "BundleRestoreShard", "restore_shard", &sv->filename, 1, ra, 4);
        rill_graph_pop_device(g);
        rill_tensor_free(names);
        for (int i = 0, j = 0; r && i < nvars; i++)
            if (shard[i] == k)
                assigns[i] = rill_assign(g, vars[i], (rill_output){r, j++}, NULL).node;
    }
    rill__free(dts);
    rill__free(shp);
    sv->restore_op = rill_group(g, assigns, nvars, "restore_all");
    rill_graph_pop_name_scope(g);
    rill_graph_pop_control_dependencies(g);
    rill__free(entries);
    rill__free(ins);
    rill__free(assigns);
    rill__free(dev);
    rill__free(shard);
    rill__free(kv);
    rill__free(vars);
    if (!rill_graph_ok(g)) {
        rill_status_copy(s, rill_graph_status(g));
        rill_saver_free(sv);
        return NULL;
    }
    return sv;
}

void rill_saver_free(rill_saver *sv)
{
    if (!sv) return;
    for (int i = 0; i < sv->nlast; i++) rill__free(sv->last[i]);
    rill__free(sv->last);
    rill__free(sv->last_t);
    rill__free(sv->last_ok);
    rill__free(sv);
}

static rill_code run_with_prefix(rill_saver *sv, rill_session *sess, const char *prefix,
                                 const rill_output *fetch, rill_node *target, rill_status *s)
{
    rill_tensor *p = rill_tensor_scalar_string(prefix);
    RILL_CHECK_ALLOC(p);
    rill_tensor *out = NULL;
    rill_code c = rill_session_run(sess, &sv->filename, &p, 1, fetch, &out, fetch ? 1 : 0,
                                   target ? &target : NULL, target ? 1 : 0, s);
    rill_tensor_free(out);
    rill_tensor_free(p);
    return c;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return rill__strdup(".");
    if (slash == path) return rill__strdup("/");
    return rill__strndup(path, (size_t)(slash - path));
}

/* Whether every float value of the checkpoint at prefix is finite, read from its files (for
 * checkpoints this saver did not write). Unreadable: not finite, it could not be restored. */
static bool finite_on_disk(const char *prefix)
{
    rill_status *s = rill_status_new();
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(prefix, s);
    bool ok = r != NULL;
    for (int i = 0; ok && i < rill_checkpoint_reader_num_tensors(r); i++) {
        rill_dtype t = rill_checkpoint_reader_dtype(r, i);
        if (!rill_dtype_is_float(t)) continue;
        rill_tensor *v = rill_checkpoint_reader_get_tensor(r, rill_checkpoint_reader_name(r, i), s);
        ok = v && rill__count_nonfinite(t, rill_tensor_data(v), rill_tensor_num_elements(v)) == 0;
        rill_tensor_free(v);
    }
    if (!rill_status_ok(s))
        rill__log(RILL_LOG_WARNING,
                  "checkpoint %s cannot be read back (so it is not one to keep "
                  "for its finite values): %s",
                  prefix, rill_status_message(s));
    else if (!ok)
        rill__log(RILL_LOG_INFO, "checkpoint %s holds NaN or Inf (read back from its files)",
                  prefix);
    rill_checkpoint_reader_free(r);
    rill_status_free(s);
    return ok;
}

/* The index in the kept list of the newest all-finite checkpoint, or -1. */
static int newest_finite(rill_saver *sv)
{
    for (int i = sv->nlast - 1; i >= 0; i--) {
        if (sv->last_ok[i] < 0) sv->last_ok[i] = finite_on_disk(sv->last[i]);
        if (sv->last_ok[i]) return i;
    }
    return -1;
}

static void drop_entry(rill_saver *sv, int i)
{
    int after = sv->nlast - i - 1;
    memmove(sv->last + i, sv->last + i + 1, (size_t)after * sizeof *sv->last);
    memmove(sv->last_t + i, sv->last_t + i + 1, (size_t)after * sizeof *sv->last_t);
    memmove(sv->last_ok + i, sv->last_ok + i + 1, (size_t)after * sizeof *sv->last_ok);
    sv->nlast--;
}

/* Appends prefix (finite: 1, 0 or -1 as last_ok) to the kept list (moving it to the end if
 * there) and drops the oldest beyond max_to_keep, sparing the newest all-finite one; those whose
 * files go (not kept by the every-N-hours rule) are returned in *doomed (n of them; the caller
 * deletes them once the state file no longer names them, and frees the list). */
static char **remember(rill_saver *sv, const char *prefix, int finite, int *ndoomed)
{
    char **doomed = NULL;
    *ndoomed = 0;
    for (int i = 0; i < sv->nlast; i++)
        if (strcmp(sv->last[i], prefix) == 0) {
            rill__free(sv->last[i]);
            drop_entry(sv, i);
            break;
        }
    sv->last = rill__realloc(sv->last, (size_t)(sv->nlast + 1) * sizeof *sv->last);
    sv->last_t = rill__realloc(sv->last_t, (size_t)(sv->nlast + 1) * sizeof *sv->last_t);
    sv->last_ok = rill__realloc(sv->last_ok, (size_t)(sv->nlast + 1) * sizeof *sv->last_ok);
    RILL_CHECK_ALLOC(sv->last);
    RILL_CHECK_ALLOC(sv->last_t);
    RILL_CHECK_ALLOC(sv->last_ok);
    sv->last[sv->nlast] = rill__strdup(prefix);
    sv->last_ok[sv->nlast] = (signed char)finite;
    sv->last_t[sv->nlast++] = wall_now();
    if (sv->max_to_keep <= 0 || sv->nlast <= sv->max_to_keep) return NULL;
    /* The newest all-finite checkpoint stays, as one more than max_to_keep when every newer
     * one is not finite (only then is the list read back for finiteness). */
    int keep = newest_finite(sv);
    bool extra = keep >= 0 && keep < sv->nlast - sv->max_to_keep;
    if (extra)
        rill__log(RILL_LOG_WARNING,
                  "keeping checkpoint %s beyond max_to_keep=%d: it is the newest whose values are "
                  "all finite (the %d newer ones hold NaN or Inf)",
                  sv->last[keep], sv->max_to_keep, sv->nlast - 1 - keep);
    while (sv->nlast > sv->max_to_keep + (extra ? 1 : 0)) {
        int v = keep == 0 && extra ? 1 : 0; /* the oldest that is not the one spared */
        char *old = sv->last[v];
        double t = sv->last_t[v];
        if (sv->keep_every_s > 0 && t > sv->next_keep) {
            sv->next_keep += sv->keep_every_s;
            rill__free(old);
        } else {
            doomed = rill__realloc(doomed, (size_t)(*ndoomed + 1) * sizeof *doomed);
            RILL_CHECK_ALLOC(doomed);
            doomed[(*ndoomed)++] = old;
        }
        drop_entry(sv, v);
        if (v < keep) keep--;
    }
    return doomed;
}

rill_code rill_saver_save(rill_saver *sv, rill_session *sess, const char *save_path,
                          int64_t global_step, char *prefix_out, size_t n, rill_status *s)
{
    if (!save_path || !*save_path) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "save_path is empty");
        return RILL_INVALID_ARGUMENT;
    }
    char *dir = dir_of(save_path);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        rill_status_set(s, RILL_NOT_FOUND, "Parent directory of %s doesn't exist, can't save.",
                        save_path);
        rill__free(dir);
        return RILL_NOT_FOUND;
    }
    char *prefix = global_step >= 0 ? rill__asprintf("%s-%lld", save_path, (long long)global_step)
                                    : rill__strdup(save_path);
    const char *base = strrchr(prefix, '/');
    rill_code c = RILL_OK;
    if (strcmp(base ? base + 1 : prefix, "checkpoint") == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "'latest_filename' collides with 'save_path': 'checkpoint' and '%s'",
                        save_path);
        c = RILL_INVALID_ARGUMENT;
    }
    rill_tensor *written[2] = {NULL, NULL}; /* the prefix, and the tensors holding NaN/Inf */
    if (c == RILL_OK) {
        rill_tensor *p = rill_tensor_scalar_string(prefix);
        RILL_CHECK_ALLOC(p);
        rill_output fetch[2] = {sv->save_op, {sv->save_op.node, 1}};
        c = rill_session_run(sess, &sv->filename, &p, 1, fetch, written, 2, NULL, 0, s);
        rill_tensor_free(p);
    }
    if (c == RILL_OK) {
        size_t blen = 0;
        const char *bad = rill_tensor_get_string(written[1], 0, &blen);
        if (bad && blen)
            rill__log(RILL_LOG_WARNING,
                      "checkpoint %s holds values that are not finite (NaN or Inf): %.*s; "
                      "the newest all-finite checkpoint is kept whatever max_to_keep says",
                      prefix, (int)blen, bad);
        /* The state file first, then the files it stopped naming (TF's order): a crash in
         * between leaves files nobody lists, never a list naming deleted files; if the state
         * file cannot be written, nothing is deleted. */
        int nd;
        char **doomed = remember(sv, prefix, !(bad && blen), &nd);
        if (!rill__checkpoint_state_write(dir, prefix, (const char *const *)sv->last, sv->last_t,
                                          sv->nlast, 0, s))
            c = rill_status_code(s);
        for (int i = 0; i < nd; i++) {
            if (c == RILL_OK) rill__checkpoint_delete(doomed[i]);
            rill__free(doomed[i]);
        }
        rill__free(doomed);
    }
    if (c == RILL_OK && prefix_out && n) snprintf(prefix_out, n, "%s", prefix);
    rill_tensor_free(written[0]);
    rill_tensor_free(written[1]);
    rill__free(prefix);
    rill__free(dir);
    return c;
}

rill_code rill_saver_restore(rill_saver *sv, rill_session *sess, const char *prefix, rill_status *s)
{
    if (!prefix || !rill_checkpoint_exists(prefix)) {
        rill_status_set(s, RILL_NOT_FOUND, "The passed save_path is not a valid checkpoint: %s",
                        prefix ? prefix : "(null)");
        return RILL_NOT_FOUND;
    }
    return run_with_prefix(sv, sess, prefix, NULL, sv->restore_op, s);
}

void rill_saver_recover_last_checkpoints(rill_saver *sv, const char *const *paths, int n)
{
    for (int i = 0; i < sv->nlast; i++) rill__free(sv->last[i]);
    sv->nlast = 0;
    for (int i = 0; i < n; i++) {
        int nd;
        char **doomed = remember(sv, paths[i], -1, &nd);
        for (int k = 0; k < nd; k++) {
            rill__checkpoint_delete(doomed[k]);
            rill__free(doomed[k]);
        }
        rill__free(doomed);
        struct stat st;
        char *idx = rill__bundle_index_path(paths[i]);
        if (stat(idx, &st) == 0) sv->last_t[sv->nlast - 1] = (double)st.st_mtime;
        rill__free(idx);
    }
}

int rill_saver_last_checkpoints(const rill_saver *sv, const char **out, int cap)
{
    for (int i = 0; i < sv->nlast && i < cap; i++) out[i] = sv->last[i];
    return sv->nlast;
}

rill_output rill_saver_filename_tensor(const rill_saver *sv)
{
    return sv->filename;
}
