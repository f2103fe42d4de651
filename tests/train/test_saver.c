/* test_saver.c - tf.train.Saver in local sessions (src/train/saver.c, src/kernels/cpu/cpu_io.c).
 *
 * Real files in a fresh mkdtemp directory:
 *   - a round trip of variables of every dtype rill keeps in variables (float, double, int32,
 *     int64, bool, half; scalars, vectors, matrices; a scoped name): the files are
 *     <prefix>.index and <prefix>.data-00000-of-00001, the `checkpoint` state file names the
 *     latest, and a fresh graph with the same names restores identical bytes, whether its
 *     variables were initialised (to other values) or not;
 *   - restore errors: a variable missing from the checkpoint (NOT_FOUND "Key <name> not found in
 *     checkpoint"), a dtype or shape mismatch (INVALID_ARGUMENT), a prefix with no checkpoint;
 *   - save errors: a missing parent directory, a save path named "checkpoint";
 *   - max_to_keep: older checkpoints' files are deleted and the state file lists the newest;
 *     rill_saver_recover_last_checkpoints hands a new saver the list, and its next save trims;
 *   - damage: a flipped byte in the data file makes restore fail with DATA_LOSS naming the file,
 *     and every variable keeps the value it had: a failed restore loses nothing;
 *   - non-finite values: after an all-finite checkpoint, max_to_keep + 1 checkpoints holding NaN
 *     or Inf never rotate the finite one out: it stays on disk, listed in the state file, and
 *     restores; a saver that took the list over from the state file (finiteness read back from
 *     the files) spares it too; a later finite checkpoint lets it go.
 */
#include "../test.h"

#include <rill/rill.h>

#include <ftw.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/rill_test_saver_XXXXXX";

/* --- helpers --- */

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool ckpt_files_exist(const char *prefix)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s.index", prefix);
    bool idx = file_exists(p);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    bool data = file_exists(p);
    if (idx != data) fprintf(stderr, "  %s: index %d, data %d\n", prefix, idx, data);
    return idx && data;
}

static bool ckpt_files_gone(const char *prefix)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s.index", prefix);
    bool idx = file_exists(p);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    return !idx && !file_exists(p);
}

static void make_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
    CHECK(mkdir(out, 0777) == 0);
}

static bool graph_ok(rill_graph *g)
{
    if (CHECK(rill_graph_ok(g))) return true;
    fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
    return false;
}

static bool run_ok(rill_code c, rill_status *s)
{
    if (CHECK_EQ_INT(c, RILL_OK)) return true;
    fprintf(stderr, "  failed: %s\n", rill_status_message(s));
    return false;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* --- the model: one variable per dtype --- */

enum { NVARS = 7 };
static const char *const var_names[NVARS] = {"f32", "f64", "i32", "i64", "flag", "h", "scope/deep"};

/* The value of variable i; variant 1 differs from variant 0 in every element. Caller frees. */
static rill_tensor *value_of(int i, int variant)
{
    switch (i) {
    case 0: {
        float v[6];
        for (int k = 0; k < 6; k++) v[k] = variant ? 100.0f + (float)k : (float)k * 0.5f - 1.0f;
        return rill_tensor_from_data(RILL_FLOAT, (int64_t[]){2, 3}, 2, v);
    }
    case 1: {
        double v = variant ? -2.0 : 3.141592653589793;
        return rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &v);
    }
    case 2: {
        int32_t v[4] = {-1, 0, 7, INT32_MAX};
        if (variant)
            for (int k = 0; k < 4; k++) v[k] = 11 + k;
        return rill_tensor_from_data(RILL_INT32, (int64_t[]){4}, 1, v);
    }
    case 3: {
        int64_t v[4] = {INT64_MIN, -1, (int64_t)1 << 40, INT64_MAX};
        if (variant)
            for (int k = 0; k < 4; k++) v[k] = 5 - k;
        return rill_tensor_from_data(RILL_INT64, (int64_t[]){2, 2}, 2, v);
    }
    case 4: {
        bool v[3] = {true, false, true};
        if (variant)
            for (int k = 0; k < 3; k++) v[k] = !v[k];
        return rill_tensor_from_data(RILL_BOOL, (int64_t[]){3}, 1, v);
    }
    case 5: {
        rill_half v[2] = {rill_half_from_float(variant ? 8.0f : 0.5f),
                          rill_half_from_float(variant ? 9.0f : -1.25f)};
        return rill_tensor_from_data(RILL_HALF, (int64_t[]){2}, 1, v);
    }
    default: {
        float v = variant ? 0.0f : 42.25f;
        return rill_tensor_from_data(RILL_FLOAT, NULL, 0, &v);
    }
    }
}

typedef struct model {
    rill_graph *g;
    rill_output vars[NVARS];
    rill_output gs;
    rill_node *init;
} model;

/* The variables (initialised to variant's values) and a global step. */
static bool build_model(model *m, int variant)
{
    rill_graph *g = m->g = rill_graph_new();
    for (int i = 0; i < NVARS; i++) {
        rill_tensor *t = value_of(i, variant);
        rill_output c = rill_const(g, t, NULL);
        rill_tensor_free(t);
        const char *slash = strchr(var_names[i], '/');
        if (slash) {
            char scope[32];
            snprintf(scope, sizeof scope, "%.*s", (int)(slash - var_names[i]), var_names[i]);
            rill_graph_push_variable_scope(g, scope, false);
            m->vars[i] = rill_variable_from(g, c, i % 2 == 0, slash + 1);
            rill_graph_pop_variable_scope(g);
        } else {
            m->vars[i] = rill_variable_from(g, c, i % 2 == 0, var_names[i]);
        }
    }
    m->gs = rill_train_get_or_create_global_step(g);
    m->init = rill_global_variables_initializer(g, NULL);
    if (!graph_ok(g)) return false;
    for (int i = 0; i < NVARS; i++) CHECK_EQ_STR(rill_node_name(m->vars[i].node), var_names[i]);
    return true;
}

/* Every variable holds exactly variant's bytes. */
static void check_values(rill_session *sess, const model *m, int variant, const char *what)
{
    rill_status *s = rill_status_new();
    rill_tensor *out[NVARS] = {0};
    if (run_ok(rill_session_run(sess, NULL, NULL, 0, m->vars, out, NVARS, NULL, 0, s), s)) {
        for (int i = 0; i < NVARS; i++) {
            rill_tensor *want = value_of(i, variant);
            bool same = rill_tensor_dtype(out[i]) == rill_tensor_dtype(want) &&
                        rill_shape_equal(rill_tensor_shape(out[i]), rill_tensor_shape(want)) &&
                        rill_tensor_nbytes(out[i]) == rill_tensor_nbytes(want) &&
                        memcmp(rill_tensor_data(out[i]), rill_tensor_data(want),
                               rill_tensor_nbytes(want)) == 0;
            if (!CHECK(same))
                fprintf(stderr, "  %s: variable %s does not hold variant %d\n", what, var_names[i],
                        variant);
            rill_tensor_free(want);
            rill_tensor_free(out[i]);
        }
    }
    rill_status_free(s);
}

static void free_model(model *m)
{
    rill_graph_free(m->g);
}

/* --- tests --- */

static void test_round_trip(void)
{
    rill_status *s = rill_status_new();
    char dir[256], save_path[PATH_MAX], prefix[PATH_MAX] = "", want[PATH_MAX * 2];
    make_dir(dir, sizeof dir, "rt");
    snprintf(save_path, sizeof save_path, "%s/model.ckpt", dir);
    model a = {0}, b = {0}, c = {0};
    rill_saver *sa = NULL, *sb = NULL, *sc = NULL;
    rill_session *sess = NULL, *sess_b = NULL, *sess_c = NULL;
    if (!build_model(&a, 0)) goto out;
    sa = rill_saver_new(a.g, NULL, 0, 5, 0, s);
    if (!CHECK(sa != NULL)) goto out;
    CHECK_EQ_STR(rill_node_name(rill_saver_filename_tensor(sa).node), "save/filename");
    sess = rill_session_new(a.g, NULL, s);
    if (!CHECK(sess != NULL) || !run_ok(rill_session_run_targets(sess, &a.init, 1, s), s)) goto out;
    check_values(sess, &a, 0, "initialised");

    if (!run_ok(rill_saver_save(sa, sess, save_path, 7, prefix, sizeof prefix, s), s)) goto out;
    snprintf(want, sizeof want, "%s-7", save_path);
    CHECK_EQ_STR(prefix, want);
    CHECK(ckpt_files_exist(prefix));
    char latest[PATH_MAX];
    if (CHECK(rill_latest_checkpoint(dir, latest, sizeof latest))) CHECK_EQ_STR(latest, prefix);
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, prefix);
        if (CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 1))
            CHECK_EQ_STR(st->all_model_checkpoint_paths[0], prefix);
    }
    rill_checkpoint_state_free(st);

    /* What the files hold, read independently of the restore op. */
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(prefix, s);
    if (CHECK(r != NULL)) {
        CHECK_EQ_INT(rill_checkpoint_reader_num_tensors(r), NVARS + 1);
        CHECK(rill_checkpoint_reader_find(r, "global_step") >= 0);
        for (int i = 0; i < NVARS; i++) {
            rill_tensor *t = rill_checkpoint_reader_get_tensor(r, var_names[i], s);
            rill_tensor *w = value_of(i, 0);
            if (CHECK(t != NULL)) {
                CHECK_EQ_INT(rill_tensor_dtype(t), rill_tensor_dtype(w));
                CHECK(rill_tensor_nbytes(t) == rill_tensor_nbytes(w) &&
                      memcmp(rill_tensor_data(t), rill_tensor_data(w), rill_tensor_nbytes(w)) == 0);
            }
            rill_tensor_free(t);
            rill_tensor_free(w);
        }
    }
    rill_checkpoint_reader_free(r);

    /* A fresh graph with the same names, initialised to other values, restores the saved ones. */
    if (!build_model(&b, 1)) goto out;
    sb = rill_saver_new(b.g, NULL, 0, 5, 0, s);
    sess_b = rill_session_new(b.g, NULL, s);
    if (!CHECK(sb && sess_b) || !run_ok(rill_session_run_targets(sess_b, &b.init, 1, s), s))
        goto out;
    check_values(sess_b, &b, 1, "before restore");
    if (run_ok(rill_saver_restore(sb, sess_b, prefix, s), s))
        check_values(sess_b, &b, 0, "restored over other values");
    /* ... and a fresh session whose variables were never initialised. */
    if (!build_model(&c, 1)) goto out;
    sc = rill_saver_new(c.g, NULL, 0, 5, 0, s);
    sess_c = rill_session_new(c.g, NULL, s);
    if (!CHECK(sc && sess_c)) goto out;
    if (run_ok(rill_saver_restore(sc, sess_c, prefix, s), s))
        check_values(sess_c, &c, 0, "restored into uninitialised variables");

    /* No checkpoint at the prefix. */
    char nothing[PATH_MAX + 16];
    snprintf(nothing, sizeof nothing, "%s-99", save_path);
    CHECK_EQ_INT(rill_saver_restore(sc, sess_c, nothing, s), RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), nothing);
    check_values(sess_c, &c, 0, "after a restore of nothing");

    /* A save without a step writes exactly save_path; a save path named "checkpoint" would
     * clobber the state file. */
    char plain[PATH_MAX + 16];
    snprintf(plain, sizeof plain, "%s/plain", dir);
    if (run_ok(rill_saver_save(sa, sess, plain, -1, prefix, sizeof prefix, s), s)) {
        CHECK_EQ_STR(prefix, plain);
        CHECK(ckpt_files_exist(plain));
        if (CHECK(rill_latest_checkpoint(dir, latest, sizeof latest))) CHECK_EQ_STR(latest, plain);
    }
    char clash[PATH_MAX + 16];
    snprintf(clash, sizeof clash, "%s/checkpoint", dir);
    CHECK_EQ_INT(rill_saver_save(sa, sess, clash, -1, NULL, 0, s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "collides with 'save_path'");
    if (CHECK(rill_latest_checkpoint(dir, latest, sizeof latest))) CHECK_EQ_STR(latest, plain);
out:
    rill_session_free(sess);
    rill_session_free(sess_b);
    rill_session_free(sess_c);
    rill_saver_free(sa);
    rill_saver_free(sb);
    rill_saver_free(sc);
    free_model(&a);
    free_model(&b);
    free_model(&c);
    rill_status_free(s);
}

/* A one-variable graph named name of dtype t and shape sh; restores prefix into it. */
static rill_code restore_one(const char *prefix, const char *name, rill_dtype t, rill_shape sh,
                             bool with_extra, rill_status *s)
{
    rill_graph *g = rill_graph_new();
    rill_output v = rill_variable(g, t, sh, rill_constant_initializer(5), true, name);
    rill_output extra = {NULL, 0};
    if (with_extra)
        extra = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), true,
                              "extra");
    rill_code c = RILL_INTERNAL;
    rill_saver *sv = rill_saver_new(g, NULL, 0, 5, 0, s);
    rill_session *sess = sv ? rill_session_new(g, NULL, s) : NULL;
    if (CHECK(sess != NULL)) {
        rill_node *init = rill_global_variables_initializer(g, NULL);
        if (run_ok(rill_session_run_targets(sess, &init, 1, s), s)) {
            c = rill_saver_restore(sv, sess, prefix, s);
            /* On failure the variable keeps its initial value. */
            if (c != RILL_OK) {
                rill_status *s2 = rill_status_new();
                rill_tensor *out = NULL;
                if (run_ok(rill_session_run(sess, NULL, NULL, 0, &v, &out, 1, NULL, 0, s2), s2))
                    CHECK(rill_tensor_get_double(out, 0) == 5);
                rill_tensor_free(out);
                rill_status_free(s2);
            }
        }
    }
    (void)extra;
    rill_session_free(sess);
    rill_saver_free(sv);
    rill_graph_free(g);
    return c;
}

static void test_restore_errors(void)
{
    rill_status *s = rill_status_new();
    char dir[256], save_path[PATH_MAX], prefix[PATH_MAX] = "";
    make_dir(dir, sizeof dir, "errors");
    snprintf(save_path, sizeof save_path, "%s/model.ckpt", dir);
    model a = {0};
    rill_saver *sa = NULL;
    rill_session *sess = NULL;
    if (!build_model(&a, 0)) goto out;
    sa = rill_saver_new(a.g, NULL, 0, 5, 0, s);
    sess = rill_session_new(a.g, NULL, s);
    if (!CHECK(sa && sess) || !run_ok(rill_session_run_targets(sess, &a.init, 1, s), s)) goto out;
    if (!run_ok(rill_saver_save(sa, sess, save_path, 0, prefix, sizeof prefix, s), s)) goto out;

    /* The matching variable alone restores. */
    CHECK_EQ_INT(restore_one(prefix, "f32", RILL_FLOAT, rill_shape_matrix(2, 3), false, s),
                 RILL_OK);
    /* A variable the checkpoint lacks. */
    CHECK_EQ_INT(restore_one(prefix, "f32", RILL_FLOAT, rill_shape_matrix(2, 3), true, s),
                 RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), "Key extra not found in checkpoint");
    CHECK_EQ_INT(restore_one(prefix, "missing", RILL_INT32, rill_shape_scalar(), false, s),
                 RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), "Key missing not found in checkpoint");
    /* Another dtype, another shape (same element count), another rank. */
    CHECK_EQ_INT(restore_one(prefix, "f32", RILL_DOUBLE, rill_shape_matrix(2, 3), false, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "f32");
    CHECK_EQ_INT(restore_one(prefix, "f32", RILL_FLOAT, rill_shape_matrix(3, 2), false, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "f32");
    CHECK_EQ_INT(restore_one(prefix, "f64", RILL_DOUBLE, rill_shape_vector(1), false, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_EQ_INT(restore_one(prefix, "i64", RILL_INT32, rill_shape_matrix(2, 2), false, s),
                 RILL_INVALID_ARGUMENT);

    /* Saving under a directory that does not exist. */
    char bad[PATH_MAX + 32], msg[PATH_MAX * 2];
    snprintf(bad, sizeof bad, "%s/nope/model.ckpt", dir);
    rill_code c = rill_saver_save(sa, sess, bad, 3, NULL, 0, s);
    CHECK(c != RILL_OK);
    CHECK_EQ_INT(rill_status_code(s), c);
    snprintf(msg, sizeof msg, "Parent directory of %s doesn't exist, can't save.", bad);
    CHECK_STR_CONTAINS(rill_status_message(s), msg);
    snprintf(msg, sizeof msg, "%s/nope", dir);
    CHECK(!file_exists(msg));
    /* The state file still names the good checkpoint. */
    char latest[PATH_MAX];
    if (CHECK(rill_latest_checkpoint(dir, latest, sizeof latest))) CHECK_EQ_STR(latest, prefix);
out:
    rill_session_free(sess);
    rill_saver_free(sa);
    free_model(&a);
    rill_status_free(s);
}

static void test_max_to_keep(void)
{
    rill_status *s = rill_status_new();
    char dir[256], save_path[PATH_MAX], p[6][PATH_MAX + 16];
    make_dir(dir, sizeof dir, "keep");
    snprintf(save_path, sizeof save_path, "%s/model.ckpt", dir);
    for (int i = 1; i <= 5; i++) snprintf(p[i], sizeof p[i], "%s-%d", save_path, i);
    model a = {0};
    rill_saver *sa = NULL, *sb = NULL;
    rill_session *sess = NULL;
    if (!build_model(&a, 0)) goto out;
    sa = rill_saver_new(a.g, NULL, 0, 2, 0, s);
    sess = rill_session_new(a.g, NULL, s);
    if (!CHECK(sa && sess) || !run_ok(rill_session_run_targets(sess, &a.init, 1, s), s)) goto out;

    for (int i = 1; i <= 3; i++)
        if (!run_ok(rill_saver_save(sa, sess, save_path, i, NULL, 0, s), s)) goto out;
    CHECK(ckpt_files_gone(p[1]));
    CHECK(ckpt_files_exist(p[2]));
    CHECK(ckpt_files_exist(p[3]));
    const char *kept[8];
    if (CHECK_EQ_INT(rill_saver_last_checkpoints(sa, kept, 8), 2)) {
        CHECK_EQ_STR(kept[0], p[2]);
        CHECK_EQ_STR(kept[1], p[3]);
    }
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, p[3]);
        if (CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 2)) {
            CHECK_EQ_STR(st->all_model_checkpoint_paths[0], p[2]);
            CHECK_EQ_STR(st->all_model_checkpoint_paths[1], p[3]);
        }
    }
    rill_checkpoint_state_free(st);
    /* Saving the newest step again moves nothing out. */
    if (run_ok(rill_saver_save(sa, sess, save_path, 3, NULL, 0, s), s)) {
        CHECK(ckpt_files_exist(p[2]));
        CHECK_EQ_INT(rill_saver_last_checkpoints(sa, kept, 8), 2);
    }

    /* As after a restart: a new saver told what the state file lists trims on its next save. */
    sb = rill_saver_new(a.g, NULL, 0, 2, 0, s);
    if (!CHECK(sb != NULL)) goto out;
    CHECK_EQ_INT(rill_saver_last_checkpoints(sb, kept, 8), 0);
    st = rill_get_checkpoint_state(dir, s);
    if (CHECK(st != NULL))
        rill_saver_recover_last_checkpoints(sb, (const char *const *)st->all_model_checkpoint_paths,
                                            st->num_all_model_checkpoint_paths);
    rill_checkpoint_state_free(st);
    if (CHECK_EQ_INT(rill_saver_last_checkpoints(sb, kept, 8), 2)) {
        CHECK_EQ_STR(kept[0], p[2]);
        CHECK_EQ_STR(kept[1], p[3]);
    }
    if (run_ok(rill_saver_save(sb, sess, save_path, 4, NULL, 0, s), s)) {
        CHECK(ckpt_files_gone(p[2]));
        CHECK(ckpt_files_exist(p[3]));
        CHECK(ckpt_files_exist(p[4]));
        st = rill_get_checkpoint_state(dir, s);
        if (CHECK(st != NULL)) {
            CHECK_EQ_STR(st->model_checkpoint_path, p[4]);
            if (CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 2)) {
                CHECK_EQ_STR(st->all_model_checkpoint_paths[0], p[3]);
                CHECK_EQ_STR(st->all_model_checkpoint_paths[1], p[4]);
            }
        }
        rill_checkpoint_state_free(st);
    }
    /* The state file is written before old checkpoints go: when it cannot be written (here
     * `checkpoint` is a directory, so the rename onto it fails), the save fails and deletes
     * nothing, so whatever a state file lists still exists. */
    {
        char state[PATH_MAX + 16];
        snprintf(state, sizeof state, "%s/checkpoint", dir);
        CHECK(unlink(state) == 0 && mkdir(state, 0700) == 0);
        CHECK(rill_saver_save(sb, sess, save_path, 5, NULL, 0, s) != RILL_OK);
        rill_status_clear(s);
        CHECK(ckpt_files_exist(p[3])); /* beyond max_to_keep now, but not deleted */
        CHECK(ckpt_files_exist(p[4]));
        CHECK(rmdir(state) == 0);
    }
    /* max_to_keep <= 0 keeps everything. */
    rill_saver *all = rill_saver_new(a.g, NULL, 0, 0, 0, s);
    if (CHECK(all != NULL)) {
        rill_saver_recover_last_checkpoints(all, (const char *const[]){p[3], p[4]}, 2);
        if (run_ok(rill_saver_save(all, sess, save_path, 5, NULL, 0, s), s)) {
            CHECK(ckpt_files_exist(p[3]));
            CHECK(ckpt_files_exist(p[4]));
            CHECK(ckpt_files_exist(p[5]));
            CHECK_EQ_INT(rill_saver_last_checkpoints(all, kept, 8), 3);
        }
    }
    rill_saver_free(all);
out:
    rill_session_free(sess);
    rill_saver_free(sa);
    rill_saver_free(sb);
    free_model(&a);
    rill_status_free(s);
}

/* A float variable w [3] and a double d [] that a feed can set to anything (NaN included). */
typedef struct nan_model {
    rill_graph *g;
    rill_output w, d, wv, dv;
    rill_node *set, *init;
} nan_model;

static bool build_nan_model(nan_model *m)
{
    rill_graph *g = m->g = rill_graph_new();
    m->w = rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "w");
    m->d = rill_variable(g, RILL_DOUBLE, rill_shape_scalar(), rill_zeros_initializer(), true, "d");
    m->wv = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "wv");
    m->dv = rill_placeholder(g, RILL_DOUBLE, rill_shape_scalar(), "dv");
    rill_node *both[2] = {rill_assign(g, m->w, m->wv, NULL).node,
                          rill_assign(g, m->d, m->dv, NULL).node};
    m->set = rill_group(g, both, 2, "set");
    m->init = rill_global_variables_initializer(g, NULL);
    return graph_ok(g);
}

static bool set_values(rill_session *sess, nan_model *m, float w0, double d)
{
    rill_status *s = rill_status_new();
    float w[3] = {w0, 1.5f, -2.0f};
    rill_tensor *fv[2] = {rill_tensor_from_data(RILL_FLOAT, (int64_t[]){3}, 1, w),
                          rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &d)};
    rill_output feeds[2] = {m->wv, m->dv};
    bool ok = run_ok(rill_session_run(sess, feeds, fv, 2, NULL, NULL, 0, &m->set, 1, s), s);
    rill_tensor_free(fv[0]);
    rill_tensor_free(fv[1]);
    rill_status_free(s);
    return ok;
}

/* The state file lists exactly want[0..n) (oldest first), the last as the latest. */
static void check_listed(const char *dir, const char *const *want, int n, const char *what)
{
    rill_status *s = rill_status_new();
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    if (CHECK(st != NULL) && CHECK_EQ_INT(st->num_all_model_checkpoint_paths, n)) {
        CHECK_EQ_STR(st->model_checkpoint_path, want[n - 1]);
        for (int i = 0; i < n; i++)
            if (!CHECK_EQ_STR(st->all_model_checkpoint_paths[i], want[i]))
                fprintf(stderr, "  (%s)\n", what);
    }
    rill_checkpoint_state_free(st);
    rill_status_free(s);
}

static void test_nonfinite_kept(void)
{
    rill_status *s = rill_status_new();
    char dir[256], save_path[PATH_MAX], p[8][PATH_MAX + 16];
    make_dir(dir, sizeof dir, "nonfinite");
    snprintf(save_path, sizeof save_path, "%s/model.ckpt", dir);
    for (int i = 1; i < 8; i++) snprintf(p[i], sizeof p[i], "%s-%d", save_path, i);
    nan_model m = {0};
    rill_saver *sa = NULL, *sb = NULL;
    rill_session *sess = NULL;
    if (!build_nan_model(&m)) goto out;
    sa = rill_saver_new(m.g, NULL, 0, 2, 0, s);
    sess = rill_session_new(m.g, NULL, s);
    if (!CHECK(sa && sess) || !run_ok(rill_session_run_targets(sess, &m.init, 1, s), s)) goto out;

    /* Step 1 finite; steps 2, 3, 4 (max_to_keep + 1 of them) each with a NaN or an Inf. */
    if (!set_values(sess, &m, 0.25f, 7.0) ||
        !run_ok(rill_saver_save(sa, sess, save_path, 1, NULL, 0, s), s))
        goto out;
    for (int i = 2; i <= 4; i++) {
        bool ok =
            i == 3 ? set_values(sess, &m, 1.0f, -(double)INFINITY) : set_values(sess, &m, NAN, 1.0);
        if (!ok || !run_ok(rill_saver_save(sa, sess, save_path, i, NULL, 0, s), s)) goto out;
    }
    CHECK(ckpt_files_exist(p[1]));
    CHECK(ckpt_files_gone(p[2])); /* rotated out as usual: not the newest finite one */
    CHECK(ckpt_files_exist(p[3]));
    CHECK(ckpt_files_exist(p[4]));
    const char *kept[8];
    if (CHECK_EQ_INT(rill_saver_last_checkpoints(sa, kept, 8), 3)) {
        CHECK_EQ_STR(kept[0], p[1]);
        CHECK_EQ_STR(kept[2], p[4]);
    }
    check_listed(dir, (const char *const[]){p[1], p[3], p[4]}, 3, "after the NaN checkpoints");
    /* It restores: the finite values come back. */
    if (set_values(sess, &m, NAN, (double)NAN) &&
        run_ok(rill_saver_restore(sa, sess, p[1], s), s)) {
        rill_tensor *out[2] = {NULL, NULL};
        rill_output vars[2] = {m.w, m.d};
        if (run_ok(rill_session_run(sess, NULL, NULL, 0, vars, out, 2, NULL, 0, s), s)) {
            CHECK_NEAR(((float *)rill_tensor_data(out[0]))[0], 0.25, 0);
            CHECK_NEAR(*(double *)rill_tensor_data(out[1]), 7.0, 0);
        }
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }

    /* After a restart the saver knows only the list: one more NaN checkpoint reads the listed
     * ones back (newest first) and still spares step 1. */
    sb = rill_saver_new(m.g, NULL, 0, 2, 0, s);
    if (!CHECK(sb != NULL)) goto out;
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    if (CHECK(st != NULL))
        rill_saver_recover_last_checkpoints(sb, (const char *const *)st->all_model_checkpoint_paths,
                                            st->num_all_model_checkpoint_paths);
    rill_checkpoint_state_free(st);
    CHECK_EQ_INT(rill_saver_last_checkpoints(sb, kept, 8), 3);
    CHECK(ckpt_files_exist(p[1]));
    if (set_values(sess, &m, NAN, 2.0) &&
        run_ok(rill_saver_save(sb, sess, save_path, 5, NULL, 0, s), s)) {
        CHECK(ckpt_files_exist(p[1]));
        CHECK(ckpt_files_gone(p[3]));
        check_listed(dir, (const char *const[]){p[1], p[4], p[5]}, 3, "after a restart");
    }
    /* A finite checkpoint again: rotation goes back to max_to_keep, step 1 goes. */
    if (set_values(sess, &m, 3.0f, 4.0) &&
        run_ok(rill_saver_save(sb, sess, save_path, 6, NULL, 0, s), s)) {
        CHECK(ckpt_files_gone(p[1]));
        CHECK(ckpt_files_gone(p[4]));
        check_listed(dir, (const char *const[]){p[5], p[6]}, 2, "after a finite one");
    }
out:
    rill_session_free(sess);
    rill_saver_free(sa);
    rill_saver_free(sb);
    rill_graph_free(m.g);
    rill_status_free(s);
}

/* Flips the byte at offset (from the end when negative) of path. */
static bool flip_byte(const char *path, long offset)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return false;
    if (offset < 0) {
        fseek(f, 0, SEEK_END);
        offset += ftell(f);
    }
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
    return c != EOF;
}

static void test_corrupt_data(void)
{
    rill_status *s = rill_status_new();
    char dir[256], save_path[PATH_MAX], prefix[PATH_MAX] = "", data[PATH_MAX + 32];
    make_dir(dir, sizeof dir, "corrupt");
    snprintf(save_path, sizeof save_path, "%s/model.ckpt", dir);
    model a = {0}, b = {0};
    rill_saver *sa = NULL, *sb = NULL;
    rill_session *sess = NULL, *sess_b = NULL;
    if (!build_model(&a, 0)) goto out;
    sa = rill_saver_new(a.g, NULL, 0, 5, 0, s);
    sess = rill_session_new(a.g, NULL, s);
    if (!CHECK(sa && sess) || !run_ok(rill_session_run_targets(sess, &a.init, 1, s), s)) goto out;
    if (!build_model(&b, 1)) goto out;
    sb = rill_saver_new(b.g, NULL, 0, 5, 0, s);
    sess_b = rill_session_new(b.g, NULL, s);
    if (!CHECK(sb && sess_b) || !run_ok(rill_session_run_targets(sess_b, &b.init, 1, s), s))
        goto out;

    /* Tensors lie in the data file in name order: the last byte belongs to the last name
     * ("scope/deep"), the first to the first ("f32"). */
    const long where[2] = {-1, 0};
    for (int k = 0; k < 2; k++) {
        if (!run_ok(rill_saver_save(sa, sess, save_path, k, prefix, sizeof prefix, s), s)) break;
        snprintf(data, sizeof data, "%s.data-00000-of-00001", prefix);
        if (!CHECK(flip_byte(data, where[k]))) continue;
        CHECK_EQ_INT(rill_saver_restore(sb, sess_b, prefix, s), RILL_DATA_LOSS);
        CHECK_STR_CONTAINS(rill_status_message(s), data);
        /* Nothing was restored: every variable holds what it held before. */
        check_values(sess_b, &b, 1, "after a failed restore");
        /* Undamaged again, the same checkpoint restores. */
        CHECK(flip_byte(data, where[k]));
        if (run_ok(rill_saver_restore(sb, sess_b, prefix, s), s))
            check_values(sess_b, &b, 0, "after the repaired restore");
        /* Back to variant 1 for the next round. */
        if (k == 0) {
            run_ok(rill_session_run_targets(sess_b, &b.init, 1, s), s);
            check_values(sess_b, &b, 1, "re-initialised");
        }
    }
out:
    rill_session_free(sess);
    rill_session_free(sess_b);
    rill_saver_free(sa);
    rill_saver_free(sb);
    free_model(&a);
    free_model(&b);
    rill_status_free(s);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_restore_errors();
    test_max_to_keep();
    test_corrupt_data();
    test_nonfinite_kept();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    TEST_MAIN_END();
}
