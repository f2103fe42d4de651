/* make_corpus.c - writes the fuzz targets' seed corpora (fuzz/corpus/<target>/): small valid
 * inputs made by rill's own writers, in each target's input layout (see its top comment), so
 * that fuzzing starts from the formats as rill writes them.
 *
 *     build-fuzz/fuzz/make_corpus fuzz/corpus
 *
 * Every seed is deterministic (fixed seeds and clocks aside: event files and the checkpoint
 * state carry a wall time), so rerunning it changes only those. Built with the fuzz targets
 * (RILL_FUZZ=ON); the corpora it wrote are checked in. */
#include "core/core.h"
#include "distributed/graph_codec.h"
#include "distributed/rpc.h"
#include "distributed/wire.h"
#include "format/checkpoint.h"

#include <rill/rill.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *out_dir;

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "make_corpus: " __VA_ARGS__);                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)

static void check(rill_status *s, const char *what)
{
    if (!rill_status_ok(s)) DIE("%s: %s", what, rill_status_message(s));
}

static void seed(const char *target, const char *name, const void *p, size_t n)
{
    char dir[512], path[768];
    snprintf(dir, sizeof dir, "%s/%s", out_dir, target);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) DIE("mkdir %s: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) DIE("cannot write %s", path);
}

static void seed_str(const char *target, const char *name, const char *s, size_t n)
{
    seed(target, name, s, n);
}

#define SEED_LIT(target, name, lit) seed_str(target, name, lit, sizeof lit - 1)

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) DIE("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len + 1);
    if (fread(p, 1, (size_t)len, f) != (size_t)len) DIE("cannot read %s", path);
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* --- wire --- */

static void wire_seeds(void)
{
    uint8_t b[128];
    rill__frame_header h = {.version = RILL__WIRE_VERSION,
                            .type = RILL__MSG_REQUEST,
                            .request_id = 7,
                            .meta_len = 20,
                            .payload_len = 24};
    rill__frame_header_encode(&h, b);
    seed("wire", "header_request", b, RILL__WIRE_HEADER_SIZE);
    h.type = RILL__MSG_RESPONSE;
    h.payload_len = 0;
    rill__frame_header_encode(&h, b);
    seed("wire", "header_response", b, RILL__WIRE_HEADER_SIZE);
    rill__tensor_desc d = {.dtype = RILL_FLOAT, .rank = 2, .dims = {2, 3}};
    size_t n = rill__tensor_desc_encode(&d, b, sizeof b);
    seed("wire", "desc_float_2x3", b, n);
    d = (rill__tensor_desc){.dtype = RILL_INT64, .rank = 0};
    n = rill__tensor_desc_encode(&d, b, sizeof b);
    seed("wire", "desc_int64_scalar", b, n);
    n = rill__error_meta_encode(RILL_NOT_FOUND, "graph handle 9 is not registered", b, sizeof b);
    seed("wire", "error_meta", b, n);
}

/* --- graphs --- */

static rill_graph *rich_graph(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 42);
    rill_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 4), "x");
    rill_output w = rill_variable(g, RILL_FLOAT, rill_shape_matrix(3, 4),
                                  rill_random_normal_initializer(0, 0.1, 7), true, "w");
    rill_output b =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "b");
    rill_output y = rill_bias_add(g, rill_matmul(g, x, w, false, true, "mm"), b, "logits");
    rill_output sm = rill_softmax(g, y, "softmax");
    rill_argmax(g, sm, 1, "pred");
    rill_sum(g, y, (int[]){1}, 1, true, "rowsum");
    rill_reshape(g, y, (int64_t[]){-1}, 1, "flat");
    rill_cast(g, y, RILL_INT32, "as_int");
    rill_graph_pop_device(g);
    rill_output img = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "img");
    rill_output filt =
        rill_const_floats(g, (float[]){1, 0, 0, 1}, (int64_t[]){1, 1, 2, 2}, 4, "filter");
    rill_conv2d(g, img, filt, (int[]){1, 1, 1, 1}, "SAME", NULL, "conv");
    rill_tensor *t = rill_tensor_scalar_string("a string constant");
    rill_const(g, t, "str");
    rill_tensor_free(t);
    rill_node *deps[] = {rill_variable_initializer(w)};
    rill_graph_push_control_dependencies(g, deps, 1);
    rill_no_op(g, "after_init");
    rill_graph_pop_control_dependencies(g);
    if (!rill_graph_ok(g)) DIE("rich graph: %s", rill_status_message(rill_graph_status(g)));
    return g;
}

static rill_graph *rpc_graph(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x");
    rill_add(g, x, x, "y");
    rill_output s = rill_placeholder(g, RILL_STRING, rill_shape_unknown(), "s");
    rill_identity(g, s, "t");
    rill_no_op(g, "n");
    return g;
}

static void encode(rill_graph *g, rill__mbuf *out)
{
    rill_status *s = rill_status_new();
    uint8_t *bytes;
    size_t len;
    if (!rill__graph_encode(g, &bytes, &len, s)) DIE("encode: %s", rill_status_message(s));
    rill__mbuf_put(out, bytes, len);
    rill__free(bytes);
    rill_status_free(s);
}

static void graph_seeds(void)
{
    rill_graph *g = rich_graph(), *r = rpc_graph();
    rill__mbuf a = {0}, b = {0};
    encode(g, &a);
    encode(r, &b);
    seed("graph_codec", "rich", a.p, a.n);
    seed("graph_codec", "feeds_and_fetches", b.p, b.n);
    rill__mbuf_free(&a);
    rill__mbuf_free(&b);
    rill_graph_free(g);
    rill_graph_free(r);
}

/* --- rpc: selector, u16 meta length, meta, payload --- */

static void rpc_seed(const char *name, int which, const rill__mbuf *meta, const void *payload,
                     size_t plen)
{
    rill__mbuf m = {0};
    uint8_t hdr[3] = {(uint8_t)which, (uint8_t)meta->n, (uint8_t)(meta->n >> 8)};
    rill__mbuf_put(&m, hdr, 3);
    rill__mbuf_put(&m, meta->p, meta->n);
    rill__mbuf_put(&m, payload, plen);
    seed("rpc", name, m.p, m.n);
    rill__mbuf_free(&m);
}

static void rpc_seeds(void)
{
    rill_status *s = rill_status_new();
    rill__mbuf m = {0};
    rpc_seed("get_devices", RILL__RPC_GET_DEVICES, &m, NULL, 0);

    /* RUN (the handle is put in front): owner, step, feeds, fetches, targets. */
    float xs[3] = {1, 2, 3};
    rill_tensor *x = rill_tensor_from_data(RILL_FLOAT, (int64_t[]){3}, 1, xs);
    rill__mbuf_u64(&m, 1);
    rill__mbuf_u64(&m, 1);
    rill__mbuf_u32(&m, 1);
    rill__mbuf_str(&m, "x");
    rill__mbuf_tensor(&m, x, s);
    rill__mbuf_u32(&m, 1);
    rill__mbuf_str(&m, "y:0");
    rill__mbuf_u32(&m, 0);
    rpc_seed("run_float", RILL__RPC_RUN, &m, xs, sizeof xs);
    m.n = 0;
    rill_tensor *str = rill_tensor_scalar_string("hello");
    rill__mbuf_u64(&m, 1);
    rill__mbuf_u64(&m, 2);
    rill__mbuf_u32(&m, 1);
    rill__mbuf_str(&m, "s");
    rill__mbuf_tensor(&m, str, s);
    rill__mbuf_u32(&m, 1);
    rill__mbuf_str(&m, "t");
    rill__mbuf_u32(&m, 1);
    rill__mbuf_str(&m, "n");
    rpc_seed("run_string", RILL__RPC_RUN, &m, NULL, 0);

    /* TENSOR: owner, step, n, {name, tensor}; the bytes in the payload. */
    m.n = 0;
    rill__mbuf_u64(&m, 3);
    rill__mbuf_u64(&m, 4);
    rill__mbuf_u32(&m, 2);
    rill__mbuf_str(&m, "edge_1_x:0;0:0");
    rill__mbuf_tensor(&m, str, s);
    rill__mbuf_str(&m, "edge_2_y:0;0:0");
    rill__mbuf_tensor(&m, x, s);
    rpc_seed("tensor", RILL__RPC_TENSOR, &m, xs, sizeof xs);
    m.n = 0;
    rill__mbuf_u64(&m, 3);
    rill__mbuf_u64(&m, 4);
    rpc_seed("abort", RILL__RPC_ABORT, &m, NULL, 0);
    m.n = 0;
    rill__mbuf_u64(&m, 3);
    rpc_seed("cancel", RILL__RPC_CANCEL, &m, NULL, 0);
    rpc_seed("deregister", RILL__RPC_DEREGISTER, &m, NULL, 0);

    /* REGISTER (the owner is put in front): the graph in the payload. */
    rill_graph *g = rpc_graph();
    rill__mbuf gb = {0};
    encode(g, &gb);
    m.n = 0;
    rpc_seed("register", RILL__RPC_REGISTER, &m, gb.p, gb.n);
    rill__mbuf_free(&gb);
    rill_graph_free(g);

    /* Raw: the op in the meta. */
    m.n = 0;
    rill__mbuf_u32(&m, RILL__RPC_CANCEL);
    rill__mbuf_u64(&m, 9);
    rpc_seed("raw_cancel", 0, &m, NULL, 0);

    /* Replies as a master reads them: the device list, RUN's fetches. */
    m.n = 0;
    rill__mbuf_u32(&m, 2);
    rill__mbuf_str(&m, "/job:worker/replica:0/task:0/device:CPU:0");
    rill__mbuf_str(&m, "CPU");
    rill__mbuf_str(&m, "CPU");
    rill__mbuf_str(&m, "/job:worker/replica:0/task:0/device:GPU:0");
    rill__mbuf_str(&m, "GPU");
    rill__mbuf_str(&m, "OPENCL");
    rpc_seed("reply_devices", 8, &m, NULL, 0);
    m.n = 0;
    rill_tensor *ts[] = {x, str, x};
    rill__mbuf_u32(&m, 3);
    for (int i = 0; i < 3; i++) rill__mbuf_tensor(&m, ts[i], s);
    struct iovec iov[8];
    rill__mbuf blob = {0};
    int niov = rill__payload_iovecs(ts, 3, iov, 8, &blob);
    rill__mbuf pay = {0};
    for (int i = 0; i < niov; i++) rill__mbuf_put(&pay, iov[i].iov_base, iov[i].iov_len);
    rpc_seed("reply_run", 9, &m, pay.p, pay.n);
    check(s, "rpc seeds");
    rill__mbuf_free(&pay);
    rill__mbuf_free(&blob);
    rill__mbuf_free(&m);
    rill_tensor_free(x);
    rill_tensor_free(str);
    rill_status_free(s);
}

/* --- checkpoints: flags (1: repair checksums), u32 index length, index, data --- */

static void checkpoint_seed(const char *name, const char *prefix)
{
    char *index = rill__bundle_index_path(prefix), *data = rill__bundle_data_path(prefix, 0, 1);
    size_t ni, nd;
    uint8_t *pi = read_file(index, &ni), *pd = read_file(data, &nd);
    rill__mbuf m = {0};
    uint8_t hdr[5] = {1, (uint8_t)ni, (uint8_t)(ni >> 8), (uint8_t)(ni >> 16), (uint8_t)(ni >> 24)};
    rill__mbuf_put(&m, hdr, 5);
    rill__mbuf_put(&m, pi, ni);
    rill__mbuf_put(&m, pd, nd);
    seed("checkpoint", name, m.p, m.n);
    rill__mbuf_free(&m);
    free(pi);
    free(pd);
    rill__free(index);
    rill__free(data);
}

/* A real Saver's checkpoint of a small model, and its `checkpoint` state file. */
static void saver_seeds(const char *tmp)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_variable(g, RILL_FLOAT, rill_shape_matrix(2, 3), rill_random_normal_initializer(0, 1, 3),
                  true, "hidden/weights");
    rill_variable(g, RILL_DOUBLE, rill_shape_vector(2), rill_constant_initializer(0.5), true,
                  "hidden/biases");
    rill_variable(g, RILL_INT64, rill_shape_scalar(), rill_zeros_initializer(), false,
                  "global_step");
    rill_node *init = rill_global_variables_initializer(g, "init");
    rill_saver *sv = rill_saver_new(g, NULL, 0, 5, 0, s);
    check(s, "saver");
    rill_session *sess = rill_session_new(g, NULL, s);
    check(s, "session");
    rill_session_run(sess, NULL, NULL, 0, NULL, NULL, 0, &init, 1, s);
    check(s, "init");
    char path[512], prefix[600];
    snprintf(path, sizeof path, "%s/model.ckpt", tmp);
    for (int step = 100; step <= 200; step += 100) {
        rill_saver_save(sv, sess, path, step, prefix, sizeof prefix, s);
        check(s, "save");
    }
    checkpoint_seed("saver", prefix);
    size_t n;
    char state[600];
    snprintf(state, sizeof state, "%s/checkpoint", tmp);
    uint8_t *text = read_file(state, &n);
    seed("checkpoint_state", "saver", text, n);
    free(text);
    rill_session_free(sess);
    rill_saver_free(sv);
    rill_graph_free(g);
    rill_status_free(s);
}

/* Strings and both byte orders, through the bundle writer the Saver's kernels use. */
static void bundle_seeds(const char *tmp)
{
    rill_status *s = rill_status_new();
    const char *names[] = {"a/empty", "b/strings", "c/half", "d/int32"};
    rill_tensor *vals[4];
    vals[0] = rill_tensor_new(RILL_FLOAT, (int64_t[]){0, 3}, 2);
    vals[1] = rill_tensor_new(RILL_STRING, (int64_t[]){3}, 1);
    rill_tensor_set_string(vals[1], 0, "", 0);
    rill_tensor_set_string(vals[1], 1, "checkpoint", 10);
    rill_tensor_set_string(vals[1], 2, "a\0b", 3);
    vals[2] = rill_tensor_new(RILL_HALF, (int64_t[]){2}, 1);
    int32_t ints[4] = {-1, 0, 1, 1 << 30};
    vals[3] = rill_tensor_from_data(RILL_INT32, (int64_t[]){2, 2}, 2, ints);
    for (int big = 0; big < 2; big++) {
        char prefix[512];
        snprintf(prefix, sizeof prefix, "%s/bundle%d", tmp, big);
        rill__bundle_entry e[4];
        if (!rill__bundle_write_data_order(prefix, 0, 1, names, vals, 4, e, big, s) ||
            !rill__bundle_write_index_order(prefix, 1, e, 4, big, s))
            DIE("bundle: %s", rill_status_message(s));
        rill__bundle_entries_free(e, 4);
        checkpoint_seed(big ? "bundle_big_endian" : "bundle_little_endian", prefix);
    }
    for (int i = 0; i < 4; i++) rill_tensor_free(vals[i]);
    rill_status_free(s);
}

static void checkpoint_state_seeds(const char *tmp)
{
    rill_status *s = rill_status_new();
    const char *paths[] = {"model.ckpt-100", "model.ckpt-200"};
    double ts[] = {1700000000.5, 1700000100.25};
    char dir[512];
    snprintf(dir, sizeof dir, "%s/state", tmp);
    mkdir(dir, 0755);
    if (!rill__checkpoint_state_write(dir, "model.ckpt-200", paths, ts, 2, 1699990000.125, s))
        DIE("state: %s", rill_status_message(s));
    char file[600];
    snprintf(file, sizeof file, "%s/checkpoint", dir);
    size_t n;
    uint8_t *text = read_file(file, &n);
    seed("checkpoint_state", "written", text, n);
    free(text);
    SEED_LIT("checkpoint_state", "text_format",
             "# a comment\n"
             "model_checkpoint_path: 'dir/model.ckpt-3' \"\\303\\251t\\x65\"\n"
             "all_model_checkpoint_paths: [\"/abs/model.ckpt-1\", 'model.ckpt-2\\n']\n"
             "all_model_checkpoint_timestamps: [1e9, -0.0, inf]\n"
             "last_preserved_timestamp 12.5;\n");
    rill_status_free(s);
}

/* --- events: flags (1: repair checksums), u16 cut, the file --- */

static void events_seeds(const char *tmp)
{
    rill_status *s = rill_status_new();
    char logdir[512];
    snprintf(logdir, sizeof logdir, "%s/logs", tmp);
    rill_summary_writer *w = rill_summary_writer_new(logdir, ".seed", s);
    check(s, "summary writer");
    rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_START, NULL, 0, s);
    rill_summary_writer_add_scalar(w, "loss", 0.25, 1, s);
    rill_summary_writer_add_scalar(w, "accuracy", 0.875, 2, s);
    rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_CHECKPOINT, "logs/model.ckpt-2", 2, s);
    /* A histogram and a merged summary, made by the summary ops. */
    rill_graph *g = rill_graph_new();
    rill_output v = rill_const_floats(g, (float[]){-1, 0, 0.5, 2, 2, 3}, (int64_t[]){6}, 1, "v");
    rill_output h = rill_summary_histogram(g, "weights", v);
    rill_output sc = rill_summary_scalar(g, "mean", rill_mean(g, v, NULL, -1, false, "m"));
    rill_output merged = rill_summary_merge(g, (rill_output[]){h, sc}, 2, "merged");
    rill_session *sess = rill_session_new(g, NULL, s);
    check(s, "summary session");
    rill_tensor *out = NULL;
    rill_session_run(sess, NULL, NULL, 0, &merged, &out, 1, NULL, 0, s);
    check(s, "summary run");
    rill_summary_writer_add_summary(w, out, 3, s);
    rill_summary_writer_add_graph(w, g, s);
    rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_STOP, NULL, -1, s);
    check(s, "events");
    char *path = rill__strdup(rill_summary_writer_path(w));
    rill_summary_writer_free(w);
    size_t n;
    uint8_t *file = read_file(path, &n);
    rill__mbuf m = {0};
    uint8_t hdr[3] = {1, 0xff, 0xff}; /* repair; the cut past the end: all at once */
    rill__mbuf_put(&m, hdr, 3);
    rill__mbuf_put(&m, file, n);
    seed("events", "writer", m.p, m.n);
    /* The same file in two writes, cut inside the second record. */
    m.p[1] = 40, m.p[2] = 0;
    seed("events", "writer_growing", m.p, m.n);
    rill__mbuf_free(&m);
    free(file);
    rill__free(path);
    rill_tensor_free(out);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* --- text inputs --- */

static void text_seeds(void)
{
    SEED_LIT("device_name", "full_and_legacy", "/job:worker/replica:0/task:1/device:GPU:0\0/cpu:0");
    SEED_LIT("device_name", "partial", "/job:ps/task:0\0/device:CPU:*");
    SEED_LIT("device_name", "local", "GPU:1\0/job:*/replica:2/gpu:3");
    SEED_LIT("device_name", "empty", "\0/");

    SEED_LIT("flags", "seed_flags",
             "\0--learning_rate=0.5\0--train_steps\0"
             "200\0--issync\0--ps_hosts=h1:2222,h2:2222\0"
             "-job_name\0worker\0--task_index=0x1f");
    SEED_LIT("flags", "defined", "\x02lr2\0verbose.v\0--lr2=1e-3\0--noverbose.v\0--\0");
    SEED_LIT("flags", "help", "\0--issync=no\0--help");
    SEED_LIT("flags", "typo", "\0--learnig_rate=1\0--train_steps=-9223372036854775808");

    SEED_LIT("tf_config", "list",
             "{\"cluster\": {\"ps\": [\"ps0:2222\"], \"worker\": [\"w0:2222\", \"w1:2222\"]},"
             " \"task\": {\"type\": \"worker\", \"index\": 1}, \"environment\": \"cloud\"}");
    SEED_LIT("tf_config", "sparse",
             "{\"cluster\": {\"chief\": [\"[::1]:2222\"], \"worker\": {\"1\": \"10.0.0.2:2222\","
             " \"3\": \"node-3.example.com:2222\"}}, \"task\": {\"type\": \"worker\", \"index\": "
             "\"3\"}}");
    SEED_LIT("tf_config", "local", "{\"cluster\": {}, \"task\": {}}");
    SEED_LIT("tf_config", "json_values",
             "[null, true, false, -0.5e+3, 123456789012345678, \"\\u00e9\\ud83d\\ude00\\n\", {}]");

    SEED_LIT("slurm", "nodes",
             "node[01-04,07],gpu-a1\0"
             "2(x2),1,1,1\0"
             "3\0"
             "7\0"
             "1\0"
             "localhost:2222,[::1]:2223");
    SEED_LIT("slurm", "groups",
             "r[1-2]n[1-2]\0\0"
             "0\0"
             "4\0"
             "2\0"
             "ps0.example.com:1");
    SEED_LIT("slurm", "single",
             "localhost\0"
             "1\0"
             "0\0"
             "1\0"
             "0\0"
             "127.0.0.1:0");
}

int main(int argc, char **argv)
{
    if (argc != 2) DIE("usage: make_corpus OUT_DIR (fuzz/corpus)");
    out_dir = argv[1];
    setenv("RILL_LOG_LEVEL", "9", 1);
    char tmp[] = "/tmp/rill-make-corpus-XXXXXX";
    if (!mkdtemp(tmp)) DIE("mkdtemp: %s", strerror(errno));
    wire_seeds();
    graph_seeds();
    rpc_seeds();
    saver_seeds(tmp);
    bundle_seeds(tmp);
    checkpoint_state_seeds(tmp);
    events_seeds(tmp);
    text_seeds();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : 1;
}
