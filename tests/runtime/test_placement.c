/* test_placement.c - device scopes and the placer, checked through what users see: the requested
 * device strings on nodes, the graph's sticky status for malformed specs, the session's status
 * for placement errors (TensorFlow's texts, reference §2.3), and the log_device_placement lines
 * on stdout, which say where every node landed (reference §2.5). stdout is captured through a
 * temporary file put under the real file descriptor, as test_flags.c does for help text.
 *
 * PoCL's CPU device stands in for a GPU (RILL_OPENCL_CPU_AS_GPU=1, set first). Without any GPU
 * the GPU-only parts are skipped (a "SKIPPED: <part>: <reason>" line each, test.h) and the
 * CPU-only checks still run.
 *
 * GPU options are per process: the devices are enumerated by the first session and a failed
 * enumeration sticks. So every visible_device_list check runs in a forked child, forked before
 * this process touches OpenCL; children that need two GPUs ask PoCL for two devices
 * (POCL_DEVICES="pthread pthread") and are skipped when they do not get them. A child sends
 * its check counts back through a pipe. */
#include <rill/rill.h>

#include "device/device.h"
#include "graph/graph_internal.h"
#include "runtime/runtime.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"
#define GPU0 "/job:localhost/replica:0/task:0/device:GPU:0"
#define GPU1 "/job:localhost/replica:0/task:0/device:GPU:1"

static int ngpus; /* GPUs of this process (the parent), known once the children are done */
static bool have_gpu;

/* Where an unconstrained op with a GPU kernel lands. */
static const char *first_gpu(void)
{
    return have_gpu ? GPU0 : CPU0;
}

/* --- capturing stdout --- */

typedef struct capture {
    FILE *tmp;
    int saved_fd;
} capture;

static capture capture_begin(void)
{
    capture c = {tmpfile(), -1};
    if (!c.tmp) return c;
    fflush(stdout);
    c.saved_fd = dup(fileno(stdout));
    dup2(fileno(c.tmp), fileno(stdout));
    return c;
}

/* Restores stdout and returns what was written to it (caller frees; never NULL). */
static char *capture_end(capture c)
{
    if (!c.tmp) return strdup("");
    fflush(stdout);
    dup2(c.saved_fd, fileno(stdout));
    close(c.saved_fd);
    long n = ftell(c.tmp);
    char *text = malloc(n > 0 ? (size_t)n + 1 : 1);
    rewind(c.tmp);
    size_t got = n > 0 ? fread(text, 1, (size_t)n, c.tmp) : 0;
    text[got] = 0;
    fclose(c.tmp);
    return text;
}

/* The device the placement log gives node ("<node>: (<Op>): <device>"), or NULL when the log has
 * no line for it. Eight rotating buffers, so several calls fit in one CHECK. */
static const char *dev(const char *log, const char *node)
{
    static char bufs[8][256];
    static int next;
    size_t len = strlen(node);
    for (const char *p = log; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t linelen = eol ? (size_t)(eol - p) : strlen(p);
        if (linelen > len + 3 && strncmp(p, node, len) == 0 && strncmp(p + len, ": (", 3) == 0) {
            const char *d = strstr(p + len, "): ");
            if (d && d < p + linelen) {
                d += 3;
                char *b = bufs[next++ % 8];
                snprintf(b, sizeof bufs[0], "%.*s", (int)(p + linelen - d), d);
                return b;
            }
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* How many lines of log start with prefix. */
static int count_lines(const char *log, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = log; p && *p;) {
        if (strncmp(p, prefix, len) == 0) n++;
        const char *eol = strchr(p, '\n');
        p = eol ? eol + 1 : NULL;
    }
    return n;
}

/* --- sessions --- */

static rill_session_options *options(bool soft, bool log)
{
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, soft);
    rill_session_options_set_log_device_placement(o, log);
    return o;
}

/* A session with log_device_placement (and soft placement as asked); the mapping it prints goes
 * to *log when log is not NULL. */
static rill_session *open_logged(rill_graph *g, bool soft, char **log, rill_status *s)
{
    if (!CHECK(rill_graph_ok(g)))
        fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
    rill_session_options *o = options(soft, true);
    capture c = capture_begin();
    rill_session *sess = rill_session_new(g, o, s);
    char *text = capture_end(c);
    rill_session_options_free(o);
    if (!CHECK(sess != NULL)) fprintf(stderr, "  session: %s\n", rill_status_message(s));
    if (log)
        *log = text;
    else
        free(text);
    return sess;
}

/* One run with stdout captured; returns what was printed (caller frees). */
static char *run_logged(rill_session *sess, const rill_output *fetches, rill_tensor **out, int nf,
                        rill_node *const *targets, int nt, rill_status *s)
{
    capture c = capture_begin();
    if (sess) rill_session_run(sess, NULL, NULL, 0, fetches, out, nf, targets, nt, s);
    return capture_end(c);
}

/* Places g in a fresh logged session by fetching `fetch` (and running target when not NULL);
 * returns the whole log (mapping and node lines), the run's status in s and, when out is not
 * NULL, the fetched value. */
static char *place(rill_graph *g, bool soft, rill_output fetch, rill_node *target,
                   rill_tensor **out, rill_status *s)
{
    char *mapping = NULL;
    rill_session *sess = open_logged(g, soft, &mapping, s);
    rill_tensor *val = NULL;
    char *lines = run_logged(sess, fetch.node ? &fetch : NULL, fetch.node ? &val : NULL,
                             fetch.node ? 1 : 0, target ? &target : NULL, target ? 1 : 0, s);
    rill_session_free(sess);
    if (out)
        *out = val;
    else
        rill_tensor_free(val);
    size_t n = strlen(mapping) + strlen(lines) + 1;
    char *all = malloc(n);
    snprintf(all, n, "%s%s", mapping, lines);
    free(mapping);
    free(lines);
    return all;
}

static bool run_ok(rill_code c, const rill_status *s)
{
    if (CHECK_EQ_INT(c, RILL_OK)) return true;
    fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
    return false;
}

static float fetch_float(rill_session *sess, rill_output o, int64_t i, rill_status *s)
{
    rill_tensor *t = NULL;
    if (!run_ok(rill_session_run(sess, NULL, NULL, 0, &o, &t, 1, NULL, 0, s), s)) return -12345;
    float v = (float)rill_tensor_get_double(t, i);
    rill_tensor_free(t);
    return v;
}

static rill_output vec3(rill_graph *g, float a, float b, float c, const char *name)
{
    const float v[] = {a, b, c};
    const int64_t shape[] = {3};
    return rill_const_floats(g, v, shape, 1, name);
}

static rill_output const_string(rill_graph *g, const char *v, const char *name)
{
    rill_tensor *t = rill_tensor_scalar_string(v);
    rill_output o = rill_const(g, t, name);
    rill_tensor_free(t);
    return o;
}

/* ------------------------------------------------------------------------------------------ */
/* Device scopes on the graph (no session)                                                     */
/* ------------------------------------------------------------------------------------------ */

static const char *req(rill_output o)
{
    return o.node ? rill_node_requested_device(o.node) : "(no node)";
}

static void test_nested_scopes_merge(void)
{
    rill_graph *g = rill_graph_new();
    /* The reference's example (§1.4): inner fields win, outer ones fill. */
    rill_graph_push_device(g, "/device:GPU:0");
    rill_output a = rill_const_float(g, 1, "a");
    rill_graph_push_device(g, "/job:worker");
    rill_output b = rill_const_float(g, 1, "b");
    rill_graph_push_device(g, "/device:CPU:0");
    rill_output c = rill_const_float(g, 1, "c");
    rill_graph_push_device(g, "/job:ps");
    rill_output d = rill_const_float(g, 1, "d");
    rill_graph_pop_device(g);
    rill_output c2 = rill_const_float(g, 1, "c2");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    rill_output a2 = rill_const_float(g, 1, "a2");
    rill_graph_pop_device(g);
    rill_output none = rill_const_float(g, 1, "none");
    CHECK_EQ_STR(req(a), "/device:GPU:0");
    CHECK_EQ_STR(req(b), "/job:worker/device:GPU:0");
    CHECK_EQ_STR(req(c), "/job:worker/device:CPU:0");
    CHECK_EQ_STR(req(d), "/job:ps/device:CPU:0");
    CHECK_EQ_STR(req(c2), "/job:worker/device:CPU:0");
    CHECK_EQ_STR(req(a2), "/device:GPU:0");
    CHECK_EQ_STR(req(none), "");

    /* Short forms are stored canonical; fields come out in the fixed order. */
    static const struct {
        const char *spec, *want;
    } forms[] = {
        {"/cpu:0", "/device:CPU:0"},
        {"/CPU:0", "/device:CPU:0"},
        {"/gpu:1", "/device:GPU:1"},
        {"/GPU:1", "/device:GPU:1"},
        {"/device:GPU:*", "/device:GPU:*"},
        {"/device:GPU", "/device:GPU:*"},
        {"/gpu:*", "/device:GPU:*"},
        {"/job:ps/task:0", "/job:ps/task:0"},
        {"/task:2/job:worker", "/job:worker/task:2"},
        {"/job:worker/replica:0/task:1/gpu:0", "/job:worker/replica:0/task:1/device:GPU:0"},
        {"/job:*/device:CPU:0", "/device:CPU:0"},
        {"/job:a/job:b", "/job:b"},
        {"", ""},
        {"/", ""},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        rill_graph_push_device(g, forms[i].spec);
        rill_output o = rill_const_float(g, 1, NULL);
        rill_graph_pop_device(g);
        if (!CHECK_EQ_STR(req(o), forms[i].want)) fprintf(stderr, "  spec '%s'\n", forms[i].spec);
    }

    /* Partial inner specs fill from several outer levels at once. */
    rill_graph_push_device(g, "/job:worker/task:3");
    rill_graph_push_device(g, "/replica:0");
    rill_graph_push_device(g, "/gpu:1");
    rill_output e = rill_const_float(g, 1, "e");
    rill_graph_push_device(g, "/task:4/device:CPU:*");
    rill_output f = rill_const_float(g, 1, "f");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    CHECK_EQ_STR(req(e), "/job:worker/replica:0/task:3/device:GPU:1");
    /* "CPU:*" sets the type and leaves the id to the outer scope's 1. */
    CHECK_EQ_STR(req(f), "/job:worker/replica:0/task:4/device:CPU:1");
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

static void test_barrier(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:worker/gpu:0");
    rill_graph_push_device(g, NULL);
    rill_output cut = rill_const_float(g, 1, "cut");
    rill_graph_push_device(g, "/cpu:0");
    rill_output inner = rill_const_float(g, 1, "inner");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    rill_output back = rill_const_float(g, 1, "back");
    /* A NULL device function is a barrier too. */
    rill_graph_push_device_fn(g, NULL, NULL);
    rill_output cut2 = rill_const_float(g, 1, "cut2");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    CHECK_EQ_STR(req(cut), "");
    CHECK_EQ_STR(req(inner), "/device:CPU:0"); /* no job: the barrier cut it off */
    CHECK_EQ_STR(req(back), "/job:worker/device:GPU:0");
    CHECK_EQ_STR(req(cut2), "");
    /* Popping more than was pushed is harmless. */
    rill_graph_pop_device(g);
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

/* A device function in the style of replica_device_setter: variables on the CPU, everything
 * else on the GPU, Placeholders left alone ("no opinion"). It records the nodes it saw. */
typedef struct fn_log {
    int calls;
    char seen[64][64];
} fn_log;

static const char *by_op_type(void *arg, const rill_node *n)
{
    fn_log *l = arg;
    if (l->calls < 64)
        snprintf(l->seen[l->calls], sizeof l->seen[0], "%s=%s", rill_node_name(n),
                 rill_node_op_type(n));
    l->calls++;
    const char *op = rill_node_op_type(n);
    if (strcmp(op, "VariableV2") == 0) return "/cpu:0";
    if (strcmp(op, "Placeholder") == 0) return NULL;
    return "/gpu:0";
}

static bool saw(const fn_log *l, const char *entry)
{
    for (int i = 0; i < l->calls && i < 64; i++)
        if (strcmp(l->seen[i], entry) == 0) return true;
    return false;
}

static const char *malformed_fn(void *arg, const rill_node *n)
{
    (void)arg;
    (void)n;
    return "/gpu:zero";
}

static void test_device_function(void)
{
    rill_graph *g = rill_graph_new();
    fn_log l = {0};
    rill_graph_push_device(g, "/job:worker/task:1");
    rill_graph_push_device_fn(g, by_op_type, &l);
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "v");
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "x");
    rill_output y = rill_add(g, x, v, "y");
    rill_graph_push_device(g, "/gpu:1");
    rill_output z = rill_mul(g, y, y, "z"); /* inner scope beats the function */
    rill_graph_push_device(g, "/job:ps");
    rill_output w = rill_mul(g, z, y, "w");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    rill_output after = rill_neg(g, y, "after");
    rill_graph_pop_device(g);
    CHECK_EQ_STR(req(v), "/job:worker/task:1/device:CPU:0");
    CHECK_EQ_STR(req(rill_node_output(rill_variable_initializer(v), 0)),
                 "/job:worker/task:1/device:GPU:0");
    CHECK_EQ_STR(req(x), "/job:worker/task:1");
    CHECK_EQ_STR(req(y), "/job:worker/task:1/device:GPU:0");
    CHECK_EQ_STR(req(z), "/job:worker/task:1/device:GPU:1");
    CHECK_EQ_STR(req(w), "/job:ps/task:1/device:GPU:1");
    CHECK_EQ_STR(req(after), "/job:worker/task:1");
    /* The function sees each node with its final name and op type. */
    CHECK(saw(&l, "v=VariableV2"));
    CHECK(saw(&l, "v/Assign=Assign"));
    CHECK(saw(&l, "x=Placeholder"));
    CHECK(saw(&l, "y=Add"));
    CHECK(saw(&l, "z=Mul"));
    CHECK(!saw(&l, "after=Neg"));
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);

    /* A function returning a malformed spec fails the build with the parser's text. */
    g = rill_graph_new();
    rill_graph_push_device_fn(g, malformed_fn, NULL);
    rill_output bad = rill_const_float(g, 1, "bad");
    rill_graph_pop_device(g);
    CHECK(bad.node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)),
                 "Malformed device specification '/gpu:zero'");
    CHECK(rill_graph_find_node(g, "bad") == NULL);
    rill_graph_free(g);
}

static void test_colocate_with_scope(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_ones_initializer(), true, "v");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:worker/gpu:0");
    rill_graph_push_colocate_with(g, v.node);
    /* Device scopes are ignored inside colocate_with, even ones pushed inside it. */
    rill_output a = rill_identity(g, v, "a");
    rill_graph_push_device(g, "/gpu:1");
    rill_output b = rill_neg(g, v, "b");
    rill_graph_pop_device(g);
    rill_graph_pop_colocate_with(g);
    rill_output c = rill_identity(g, v, "c");
    rill_graph_pop_device(g);
    CHECK_EQ_STR(req(a), "/device:CPU:0");
    CHECK(rill_node_colocation(a.node) == v.node);
    CHECK_EQ_STR(req(b), "/device:CPU:0");
    CHECK(rill_node_colocation(b.node) == v.node);
    CHECK_EQ_STR(req(c), "/job:worker/device:GPU:0");
    CHECK(rill_node_colocation(c.node) == NULL);
    /* Colocating with a member joins the member's group (its root). */
    rill_graph_push_colocate_with(g, a.node);
    rill_output d = rill_identity(g, a, "d");
    rill_graph_pop_colocate_with(g);
    CHECK(rill_node_colocation(d.node) == v.node);
    CHECK_EQ_STR(req(d), "/device:CPU:0");
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

static void test_malformed_specs(void)
{
    static const char *bad[] = {
        "/gpu:x",   "gpu:0",   "/device:GPU:0/foo", "/job:a-b",
        "/task:1x", "/job:",   "/device:1:0",       "/replica:-1",
        "/cpu:0x",  "//cpu:0", "/job:9a",           "/device:GPU:0:1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rill_graph *g = rill_graph_new();
        rill_output before = rill_const_float(g, 1, "before");
        rill_graph_push_device(g, bad[i]);
        rill_output inside = rill_const_float(g, 1, "inside");
        rill_graph_pop_device(g);
        char want[128];
        snprintf(want, sizeof want, "Malformed device specification '%s'", bad[i]);
        if (!CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT))
            fprintf(stderr, "  spec '%s' was accepted\n", bad[i]);
        CHECK_EQ_STR(rill_status_message(rill_graph_status(g)), want);
        CHECK(before.node != NULL);
        CHECK(inside.node == NULL); /* sticky: later builders are no-ops */
        /* Clearing the status lets building go on; the scope stack stayed balanced. */
        rill_graph_clear_status(g);
        rill_output later = rill_const_float(g, 1, "later");
        CHECK(later.node != NULL);
        CHECK_EQ_STR(req(later), "");
        rill_graph_free(g);
    }
    /* The first error is the one kept. */
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/gpu:first");
    rill_graph_push_device(g, "/gpu:second");
    rill_graph_pop_device(g);
    rill_graph_pop_device(g);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)),
                 "Malformed device specification '/gpu:first'");
    rill_graph_free(g);
}

/* ------------------------------------------------------------------------------------------ */
/* The placer, through sessions                                                                */
/* ------------------------------------------------------------------------------------------ */

static void test_default_placement(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output a = vec3(g, 1, 2, 3, "a");
    rill_output b = vec3(g, 1, 2, 3, "b");
    rill_output add = rill_add(g, a, b, "add"); /* a GPU kernel exists: GPU:0 */
    rill_graph_push_device(g, "/cpu:0");
    rill_output pinned = rill_mul(g, add, b, "pinned"); /* explicit /cpu:0 is respected */
    rill_graph_pop_device(g);
    rill_output str = const_string(g, "hello", "str");
    rill_output str_id = rill_identity(g, str, "str_id"); /* no GPU kernel for strings */
    rill_output ph = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "ph");
    rill_output ph_use = rill_add(g, ph, a, "ph_use");
    rill_output i32 = rill_add(g, rill_const_scalar(g, RILL_INT32, 5, "i5"),
                               rill_const_scalar(g, RILL_INT32, 7, "i7"), "i32");
    (void)str_id;
    (void)ph_use;
    (void)i32;
    rill_tensor *out = NULL;
    rill_node *t = pinned.node;
    char *log = place(g, false, add, t, &out, s);
    if (run_ok(rill_status_code(s), s)) {
        char buf[64];
        CHECK_EQ_STR(rill_tensor_str(out, buf, sizeof buf), "[2. 4. 6.]");
    }
    CHECK_EQ_STR(dev(log, "add"), first_gpu());
    CHECK_EQ_STR(dev(log, "pinned"), CPU0);
    CHECK_EQ_STR(dev(log, "str_id"), CPU0);
    CHECK_EQ_STR(dev(log, "str"), CPU0); /* a generator follows its consumer */
    CHECK_EQ_STR(dev(log, "ph"), CPU0);  /* Placeholder: CPU only */
    CHECK_EQ_STR(dev(log, "ph_use"), first_gpu());
    /* int32 has "GPU" kernels that keep their tensors in host memory, as TF's. */
    CHECK_EQ_STR(dev(log, "i32"), first_gpu());
    /* Every node of the graph is placed (and logged) at the first run, needed or not. */
    CHECK_EQ_INT(count_lines(log, "i5: (Const): "), 1);
    rill_tensor_free(out);
    free(log);

    /* The int32 "GPU" add computes on the host and comes back right. */
    log = place(g, false, i32, NULL, &out, s);
    if (run_ok(rill_status_code(s), s)) {
        CHECK_EQ_INT(rill_tensor_dtype(out), RILL_INT32);
        CHECK_EQ_INT(*(int32_t *)rill_tensor_data(out), 12);
    }
    rill_tensor_free(out);
    free(log);
    rill_status_free(s);
    rill_graph_free(g);
}

/* The seed's program: a, b on /cpu:0, c = a + b on `device`. */
static rill_graph *seed_graph(const char *device, rill_output *c)
{
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output a = vec3(g, 1, 2, 3, "a");
    rill_output b = vec3(g, 1, 2, 3, "b");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, device);
    *c = rill_add(g, a, b, NULL);
    rill_graph_pop_device(g);
    return g;
}

/* "[ CPU:0, GPU:0, ... ]" for this process's devices. */
static void device_list(char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "[ %s", CPU0);
    for (int i = 0; i < ngpus && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off,
                                ", /job:localhost/replica:0/task:0/device:GPU:%d", i);
    if (off < n) snprintf(buf + off, n - off, " ]");
}

static void test_missing_gpu_and_soft_placement(void)
{
    rill_status *s = rill_status_new();
    /* One past the last GPU: /gpu:1 on the usual one-GPU machine, as in the seed. */
    char spec[32], want_req[32];
    snprintf(spec, sizeof spec, "/gpu:%d", ngpus);
    snprintf(want_req, sizeof want_req, "/device:GPU:%d", ngpus);
    rill_output c;
    rill_graph *g = seed_graph(spec, &c);
    CHECK_EQ_STR(req(c), want_req);
    rill_tensor *out = (rill_tensor *)&out;
    char *log = place(g, false, c, NULL, &out, s);
    char list[512], want[1024];
    device_list(list, sizeof list);
    snprintf(want, sizeof want,
             "Cannot assign a device for operation 'add': Operation was explicitly assigned to "
             "%s but available devices are %s. Make sure the device specification refers to a "
             "valid device.",
             want_req, list);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(s), want);
    if (ngpus == 1)
        CHECK_EQ_STR(rill_status_message(s),
                     "Cannot assign a device for operation 'add': Operation was explicitly "
                     "assigned to /device:GPU:1 but available devices are [ "
                     "/job:localhost/replica:0/task:0/device:CPU:0, "
                     "/job:localhost/replica:0/task:0/device:GPU:0 ]. Make sure the device "
                     "specification refers to a valid device.");
    CHECK(out == NULL);
    /* A failed placement logs no node lines. */
    CHECK_EQ_INT(count_lines(log, "add: "), 0);
    free(log);

    /* Soft placement: a GPU kernel exists, so it falls back to GPU:0, not the CPU. */
    log = place(g, true, c, NULL, &out, s);
    if (run_ok(rill_status_code(s), s)) {
        char buf[64];
        CHECK_EQ_STR(rill_tensor_str(out, buf, sizeof buf), "[2. 4. 6.]");
    }
    CHECK_EQ_STR(dev(log, "add"), first_gpu());
    CHECK_EQ_STR(dev(log, "a"), CPU0);
    rill_tensor_free(out);
    free(log);
    rill_graph_free(g);

    /* Soft placement for ops without a kernel for the GPU: the CPU. */
    g = rill_graph_new();
    rill_graph_push_device(g, spec);
    rill_output str_id = rill_identity(g, const_string(g, "s", "str"), "str_id");
    rill_output v =
        rill_variable(g, RILL_INT32, rill_shape_scalar(), rill_constant_initializer(3), false, "v");
    rill_output f = rill_neg(g, vec3(g, 1, 2, 3, "f_in"), "f");
    rill_graph_pop_device(g);
    rill_node *init = rill_variable_initializer(v);
    log = place(g, true, str_id, init, &out, s);
    if (run_ok(rill_status_code(s), s)) {
        size_t len = 0;
        const char *p = rill_tensor_get_string(out, 0, &len);
        CHECK(len == 1 && p && p[0] == 's');
    }
    CHECK_EQ_STR(dev(log, "str_id"), CPU0);
    CHECK_EQ_STR(dev(log, "v"), CPU0);
    CHECK_EQ_STR(dev(log, "v/Assign"), CPU0);
    CHECK_EQ_STR(dev(log, "f"), first_gpu());
    (void)f;
    rill_tensor_free(out);
    free(log);
    /* Without soft placement the string op is the first to fail. */
    log = place(g, false, str_id, NULL, &out, s);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Cannot assign a device for operation 'str'");
    free(log);
    rill_graph_free(g);

    /* No device spec at all on a CPU-only op with an unknown dtype combination is still fine. */
    rill_status_free(s);
}

static void test_explicit_gpu0(void)
{
    if (!have_gpu) {
        TEST_SKIP_PART("the /gpu:0 placement checks", "no GPU device");
        return;
    }
    rill_status *s = rill_status_new();
    rill_output c;
    rill_graph *g = seed_graph("/gpu:0", &c);
    rill_tensor *out = NULL;
    char *log = place(g, false, c, NULL, &out, s);
    if (run_ok(rill_status_code(s), s)) {
        char buf[64];
        CHECK_EQ_STR(rill_tensor_str(out, buf, sizeof buf), "[2. 4. 6.]");
    }
    CHECK_EQ_STR(dev(log, "add"), GPU0);
    CHECK_EQ_STR(dev(log, "a"), CPU0);
    CHECK_EQ_STR(dev(log, "b"), CPU0);
    rill_tensor_free(out);
    free(log);
    rill_graph_free(g);

    /* "/device:GPU:*" picks the first GPU; "/job:localhost" alone the best device. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/device:GPU:*");
    rill_output any = rill_neg(g, vec3(g, 1, 2, 3, "k1"), "any");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:localhost/replica:0/task:0");
    rill_output local = rill_neg(g, any, "local");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:localhost/device:CPU:*");
    rill_output cpu_any = rill_neg(g, local, "cpu_any");
    rill_graph_pop_device(g);
    log = place(g, false, cpu_any, NULL, &out, s);
    if (run_ok(rill_status_code(s), s)) CHECK_NEAR(rill_tensor_get_double(out, 2), -3, 0);
    CHECK_EQ_STR(dev(log, "any"), GPU0);
    CHECK_EQ_STR(dev(log, "local"), GPU0);
    CHECK_EQ_STR(dev(log, "cpu_any"), CPU0);
    rill_tensor_free(out);
    free(log);
    rill_graph_free(g);

    /* Placeholder under /gpu:0: the feed still comes from the client on CPU:0. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/gpu:0");
    rill_output ph = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "ph");
    rill_output dbl = rill_add(g, ph, ph, "dbl");
    rill_graph_pop_device(g);
    rill_session *sess = open_logged(g, true, NULL, s);
    rill_tensor *x = rill_tensor_from_data(RILL_FLOAT, (int64_t[]){3}, 1, (float[]){1, 2, 3});
    capture cap = capture_begin();
    rill_code code =
        sess ? rill_session_run(sess, &ph, &x, 1, &dbl, &out, 1, NULL, 0, s) : RILL_INTERNAL;
    log = capture_end(cap);
    if (run_ok(code, s)) CHECK_NEAR(rill_tensor_get_double(out, 2), 6, 0);
    CHECK_EQ_STR(dev(log, "ph"), CPU0);
    CHECK_EQ_STR(dev(log, "dbl"), GPU0);
    rill_tensor_free(out);
    rill_tensor_free(x);
    free(log);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_int32_variable_on_gpu(void)
{
    if (!have_gpu) {
        TEST_SKIP_PART("the int32-variable-on-GPU checks", "no GPU device");
        return;
    }
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/gpu:0");
    rill_output v =
        rill_variable(g, RILL_INT32, rill_shape_scalar(), rill_constant_initializer(1), false, "v");
    rill_output bump = rill_assign_add(g, v, rill_const_scalar(g, RILL_INT32, 2, "two"), "bump");
    /* An int64 variable (why global_step is int64) and a float one stay on the GPU. */
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output fv = rill_variable(g, RILL_FLOAT, rill_shape_vector(2),
                                   rill_constant_initializer(0.5), true, "fv");
    rill_graph_pop_device(g);
    rill_node *init = rill_global_variables_initializer(g, "init");
    CHECK(rill_graph_ok(g));

    rill_tensor *out = NULL;
    char *log = place(g, false, (rill_output){NULL, 0}, init, NULL, s);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot assign a device for operation 'v': Could not satisfy explicit device "
                 "specification '/device:GPU:0' because no supported kernel for GPU devices is "
                 "available.");
    free(log);

    /* Soft placement moves the whole group (variable, initializer, update) to the CPU. */
    char *mapping = NULL;
    rill_session *sess = open_logged(g, true, &mapping, s);
    log = run_logged(sess, NULL, NULL, 0, &init, 1, s);
    run_ok(rill_status_code(s), s);
    CHECK_EQ_STR(dev(log, "v"), CPU0);
    CHECK_EQ_STR(dev(log, "v/Assign"), CPU0);
    CHECK_EQ_STR(dev(log, "bump"), CPU0);
    CHECK_EQ_STR(dev(log, "global_step"), GPU0);
    CHECK_EQ_STR(dev(log, "global_step/Assign"), GPU0);
    CHECK_EQ_STR(dev(log, "fv"), GPU0);
    CHECK_EQ_STR(dev(log, "fv/Assign"), GPU0);
    free(log);
    for (int i = 0; i < 3; i++) {
        log = run_logged(sess, &bump, &out, 1, NULL, 0, s);
        CHECK_EQ_STR(log, ""); /* already placed: nothing new to log */
        free(log);
        if (run_ok(rill_status_code(s), s))
            CHECK_EQ_INT(*(int32_t *)rill_tensor_data(out), 3 + 2 * i);
        rill_tensor_free(out);
        out = NULL;
    }
    if (run_ok(rill_session_run(sess, NULL, NULL, 0, &v, &out, 1, NULL, 0, s), s)) {
        CHECK_EQ_INT(rill_tensor_dtype(out), RILL_INT32);
        CHECK_EQ_INT(*(int32_t *)rill_tensor_data(out), 7);
    }
    rill_tensor_free(out);
    if (run_ok(rill_session_run(sess, NULL, NULL, 0, &gs, &out, 1, NULL, 0, s), s)) {
        CHECK_EQ_INT(rill_tensor_dtype(out), RILL_INT64);
        CHECK_EQ_INT(*(int64_t *)rill_tensor_data(out), 0);
    }
    rill_tensor_free(out);
    CHECK_NEAR(fetch_float(sess, fv, 1, s), 0.5, 0);
    free(mapping);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_colocation_conflicts(void)
{
    rill_status *s = rill_status_new();
    rill_tensor *out = NULL;

    /* A node colocated with a /cpu:0 variable while asking for /gpu:0 (TF's _class conflict). */
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_ones_initializer(), true, "v");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/gpu:0");
    rill_output x = rill_neg(g, v, "x");
    rill_graph_pop_device(g);
    rill_node_colocate_with(x.node, v.node);
    rill_node *init = rill_variable_initializer(v);
    CHECK(rill_graph_ok(g));
    char *log = place(g, false, x, init, &out, s);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Cannot colocate nodes ");
    /* TF names the later node first and the group's first node second (its missing quote
     * included), and merges the later node's spec with the group's. */
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot colocate nodes 'x' and 'v: Cannot merge devices with incompatible "
                 "types: '/device:GPU:0' and '/device:CPU:0'");
    CHECK(out == NULL);
    free(log);
    /* Soft placement drops the conflicting type: both land together and the run works. */
    rill_session *sess = open_logged(g, true, NULL, s);
    log = run_logged(sess, NULL, NULL, 0, &init, 1, s);
    run_ok(rill_status_code(s), s);
    if (sess) CHECK_NEAR(fetch_float(sess, x, 0, s), -1, 0);
    rill_session_free(sess);
    CHECK(dev(log, "v") && dev(log, "x") && strcmp(dev(log, "v"), dev(log, "x")) == 0);
    CHECK_EQ_STR(dev(log, "x"), first_gpu());
    rill_tensor_free(out);
    out = NULL;
    free(log);
    rill_graph_free(g);

    /* colocate_with puts a node where its group goes, whatever scope it was built in. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output cv =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_ones_initializer(), true, "cv");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/gpu:0");
    rill_graph_push_colocate_with(g, cv.node);
    rill_output near = rill_neg(g, cv, "near");
    rill_graph_pop_colocate_with(g);
    rill_output far = rill_neg(g, cv, "far");
    rill_graph_pop_device(g);
    rill_node *cinit = rill_variable_initializer(cv);
    sess = open_logged(g, true, NULL, s);
    log = run_logged(sess, NULL, NULL, 0, &cinit, 1, s);
    run_ok(rill_status_code(s), s);
    CHECK_EQ_STR(dev(log, "near"), CPU0);
    CHECK_EQ_STR(dev(log, "far"), first_gpu());
    free(log);
    if (sess) CHECK_NEAR(fetch_float(sess, near, 2, s), -1, 0);
    if (sess) CHECK_NEAR(fetch_float(sess, far, 2, s), -1, 0);
    rill_session_free(sess);
    rill_graph_free(g);

    /* Conflicting ids are an error too without soft placement. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/gpu:0");
    rill_output p = rill_neg(g, vec3(g, 1, 2, 3, "p_in"), "p");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/gpu:1");
    rill_output q = rill_neg(g, p, "q");
    rill_graph_pop_device(g);
    rill_node_colocate_with(q.node, p.node);
    log = place(g, false, q, NULL, &out, s);
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot colocate nodes 'q' and 'p: Cannot merge devices with incompatible ids: "
                 "'/device:GPU:1' and '/device:GPU:0'");
    free(log);
    log = place(g, true, q, NULL, &out, s);
    if (run_ok(rill_status_code(s), s)) CHECK_NEAR(rill_tensor_get_double(out, 1), 2, 0);
    CHECK_EQ_STR(dev(log, "p"), first_gpu());
    CHECK_EQ_STR(dev(log, "q"), first_gpu());
    rill_tensor_free(out);
    out = NULL;
    free(log);
    rill_graph_free(g);

    /* A job conflict is an error even with soft placement. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/job:a");
    rill_output ja = rill_neg(g, vec3(g, 1, 2, 3, "ja_in"), "ja");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:b");
    rill_output jb = rill_neg(g, ja, "jb");
    rill_graph_pop_device(g);
    rill_node_colocate_with(jb.node, ja.node);
    for (int soft = 0; soft < 2; soft++) {
        log = place(g, soft, jb, NULL, &out, s);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_EQ_STR(rill_status_message(s),
                     "Cannot colocate nodes 'jb' and 'ja: Cannot merge devices with incompatible "
                     "jobs: '/job:b' and '/job:a'");
        CHECK(out == NULL);
        free(log);
    }
    rill_graph_free(g);

    /* So are conflicting tasks. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/job:localhost/task:0");
    rill_output t0 = rill_neg(g, vec3(g, 1, 2, 3, "t0_in"), "t0");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:localhost/task:1");
    rill_output t1 = rill_neg(g, t0, "t1");
    rill_graph_pop_device(g);
    rill_node_colocate_with(t1.node, t0.node);
    log = place(g, true, t1, NULL, &out, s);
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot colocate nodes 't1' and 't0: Cannot merge devices with incompatible "
                 "tasks: '/job:localhost/task:1' and '/job:localhost/task:0'");
    free(log);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_job_never_relaxed(void)
{
    rill_status *s = rill_status_new();
    rill_tensor *out = NULL;
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:ps/task:3");
    rill_output p = rill_neg(g, vec3(g, 1, 2, 3, "p_in"), "p");
    rill_graph_pop_device(g);
    for (int soft = 0; soft < 2; soft++) {
        char *log = place(g, soft, p, NULL, &out, s);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        /* p_in (a generator with the same request) comes first in node order. TF's text,
         * then the devices there are. */
        const char *tf = "Cannot assign a device for operation 'p_in': Could not satisfy "
                         "explicit device specification '/job:ps/task:3'. The session's devices "
                         "are [ /job:localhost/replica:0/task:0/device:CPU:0";
        CHECK(strncmp(rill_status_message(s), tf, strlen(tf)) == 0);
        if (strncmp(rill_status_message(s), tf, strlen(tf)) != 0)
            fprintf(stderr, "  got: %s\n", rill_status_message(s));
        CHECK(out == NULL);
        free(log);
    }
    rill_graph_free(g);

    /* With a type as well: the device does not exist, whatever soft placement says. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/job:ps/task:3/cpu:0");
    rill_output q = rill_neg(g, vec3(g, 1, 2, 3, "q_in"), "q");
    rill_graph_pop_device(g);
    char list[512], want[1024];
    device_list(list, sizeof list);
    snprintf(want, sizeof want,
             "Cannot assign a device for operation 'q_in': Operation was explicitly assigned to "
             "/job:ps/task:3/device:CPU:0 but available devices are %s. Make sure the device "
             "specification refers to a valid device.",
             list);
    for (int soft = 0; soft < 2; soft++) {
        char *log = place(g, soft, q, NULL, &out, s);
        CHECK_EQ_STR(rill_status_message(s), want);
        free(log);
    }
    rill_graph_free(g);

    /* The local job's own name matches. */
    g = rill_graph_new();
    rill_graph_push_device(g, "/job:localhost/replica:0/task:0/cpu:0");
    rill_output r = rill_neg(g, vec3(g, 1, 2, 3, "r_in"), "r");
    rill_graph_pop_device(g);
    char *log = place(g, false, r, NULL, &out, s);
    if (run_ok(rill_status_code(s), s)) CHECK_NEAR(rill_tensor_get_double(out, 0), -1, 0);
    CHECK_EQ_STR(dev(log, "r"), CPU0);
    rill_tensor_free(out);
    free(log);
    rill_graph_free(g);
    rill_status_free(s);
}

/* A variable's update ops follow it across a reference edge even when they asked for another
 * device (TF: "Ignoring device specification ..."): the replica_device_setter pattern. */
static void test_reference_edges_follow_the_variable(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    fn_log l = {0};
    rill_graph_push_device_fn(g, by_op_type, &l);
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_constant_initializer(2), true, "v");
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "x");
    rill_output y = rill_mul(g, x, v, "y");
    rill_output upd = rill_assign_sub(
        g, v, rill_const_floats(g, (float[]){1, 1, 1}, (int64_t[]){3}, 1, "one"), "upd");
    rill_graph_pop_device(g);
    rill_node *init = rill_variable_initializer(v);
    CHECK_EQ_STR(req(v), "/device:CPU:0");
    CHECK_EQ_STR(req(rill_node_output(init, 0)), "/device:GPU:0");
    CHECK_EQ_STR(req(upd), "/device:GPU:0");
    /* Without a GPU the function's "/gpu:0" needs soft placement. */
    for (int soft = have_gpu ? 0 : 1; soft < 2; soft++) {
        char *mapping = NULL;
        rill_session *sess = open_logged(g, soft, &mapping, s);
        char *log = run_logged(sess, NULL, NULL, 0, &init, 1, s);
        run_ok(rill_status_code(s), s);
        CHECK_EQ_STR(dev(log, "v"), CPU0);
        CHECK_EQ_STR(dev(log, "v/Assign"), CPU0);
        CHECK_EQ_STR(dev(log, "upd"), CPU0);
        CHECK_EQ_STR(dev(log, "y"), first_gpu());
        free(log);
        rill_tensor *xv = rill_tensor_from_data(RILL_FLOAT, (int64_t[]){3}, 1, (float[]){1, 2, 3});
        rill_tensor *out = NULL;
        rill_output fetches[] = {upd};
        if (run_ok(rill_session_run(sess, NULL, NULL, 0, fetches, &out, 1, NULL, 0, s), s))
            CHECK_NEAR(rill_tensor_get_double(out, 0), 1, 0);
        rill_tensor_free(out);
        out = NULL;
        if (run_ok(rill_session_run(sess, &x, &xv, 1, &y, &out, 1, NULL, 0, s), s))
            CHECK_NEAR(rill_tensor_get_double(out, 2), 3, 0);
        rill_tensor_free(out);
        rill_tensor_free(xv);
        free(mapping);
        rill_session_free(sess);
    }
    rill_graph_free(g);

    /* A job conflict over a reference edge moves the update too (TF only logs it). */
    g = rill_graph_new();
    rill_graph_push_device(g, "/job:localhost/cpu:0");
    rill_output w =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), false, "w");
    rill_graph_pop_device(g);
    rill_output one = rill_const_float(g, 1, "one");
    rill_graph_push_device(g, "/job:worker/gpu:0");
    rill_output inc = rill_assign_add(g, w, one, "inc");
    rill_graph_pop_device(g);
    rill_node *winit = rill_variable_initializer(w);
    rill_session *sess = open_logged(g, false, NULL, s);
    char *log = run_logged(sess, NULL, NULL, 0, &winit, 1, s);
    run_ok(rill_status_code(s), s);
    CHECK_EQ_STR(dev(log, "inc"), CPU0);
    free(log);
    CHECK_NEAR(fetch_float(sess, inc, 0, s), 1, 0);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_shape_and_generators(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output on_cpu = rill_neg(g, vec3(g, -1, -2, -3, "cpu_in"), "on_cpu");
    rill_graph_pop_device(g);
    /* Shape has a GPU kernel but takes its input's device. (Not a generator's: generators are
     * placed last, so a Shape of one takes its own first candidate, in TF too.) */
    rill_output shape_cpu = rill_shape_of(g, on_cpu, "shape_cpu");
    rill_output on_gpu = rill_neg(g, vec3(g, 1, 2, 3, "gpu_in"), "on_gpu");
    rill_output shape_gpu = rill_shape_of(g, on_gpu, "shape_gpu");
    /* Generators (no inputs, one output) follow their consumers when those agree. */
    rill_output k_cpu = vec3(g, 1, 1, 1, "k_cpu");
    rill_graph_push_device(g, "/cpu:0");
    rill_output use_cpu = rill_add(g, k_cpu, on_cpu, "use_cpu");
    rill_graph_pop_device(g);
    rill_output k_gpu = vec3(g, 2, 2, 2, "k_gpu");
    rill_output use_gpu = rill_add(g, k_gpu, on_gpu, "use_gpu");
    rill_output k_both = vec3(g, 3, 3, 3, "k_both");
    rill_output both1 = rill_add(g, k_both, use_gpu, "both1");
    rill_graph_push_device(g, "/cpu:0");
    rill_output both2 = rill_add(g, k_both, use_cpu, "both2");
    rill_graph_pop_device(g);
    /* An explicit request on a generator wins over its consumer. */
    rill_graph_push_device(g, "/gpu:0");
    rill_output k_pinned = vec3(g, 4, 4, 4, "k_pinned");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/cpu:0");
    rill_output use_pinned = rill_add(g, k_pinned, on_cpu, "use_pinned");
    rill_graph_pop_device(g);
    rill_output k_alone = vec3(g, 5, 5, 5, "k_alone");
    rill_node *group = rill_group(g,
                                  (rill_node *[]){shape_cpu.node, shape_gpu.node, both1.node,
                                                  both2.node, use_pinned.node, k_alone.node},
                                  6, "all");
    char *log = place(g, true, both2, group, NULL, s);
    run_ok(rill_status_code(s), s);
    CHECK_EQ_STR(dev(log, "shape_cpu"), CPU0);
    CHECK_EQ_STR(dev(log, "on_gpu"), first_gpu());
    CHECK_EQ_STR(dev(log, "shape_gpu"), first_gpu());
    CHECK_EQ_STR(dev(log, "k_cpu"), CPU0);
    CHECK_EQ_STR(dev(log, "use_cpu"), CPU0);
    CHECK_EQ_STR(dev(log, "k_gpu"), first_gpu());
    CHECK_EQ_STR(dev(log, "gpu_in"), first_gpu());
    CHECK_EQ_STR(dev(log, "k_both"), first_gpu()); /* consumers disagree: first candidate */
    CHECK_EQ_STR(dev(log, "k_pinned"), first_gpu());
    CHECK_EQ_STR(dev(log, "use_pinned"), CPU0);
    CHECK_EQ_STR(dev(log, "k_alone"), first_gpu());
    free(log);

    /* And the values are right across the devices. */
    rill_session *sess = open_logged(g, true, NULL, s);
    rill_tensor *outs[2] = {NULL, NULL};
    rill_output f2[] = {shape_gpu, both2};
    log = run_logged(sess, f2, outs, 2, NULL, 0, s);
    if (run_ok(rill_status_code(s), s)) {
        CHECK_EQ_INT(rill_tensor_dtype(outs[0]), RILL_INT32);
        CHECK_EQ_INT(rill_tensor_get_double(outs[0], 0), 3);
        CHECK_NEAR(rill_tensor_get_double(outs[1], 2), 3 + 1 + 3, 0);
    }
    rill_tensor_free(outs[0]);
    rill_tensor_free(outs[1]);
    free(log);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_incremental_placement(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output a = vec3(g, 1, 2, 3, "a");
    rill_output k = vec3(g, 10, 20, 30, "k"); /* generator: follows add to the GPU */
    rill_output add = rill_add(g, a, k, "add");
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_ones_initializer(), true, "v");
    rill_node *init = rill_variable_initializer(v);
    char *mapping = NULL;
    rill_session *sess = open_logged(g, false, &mapping, s);
    rill_tensor *out = NULL;
    char *log = run_logged(sess, &add, &out, 1, NULL, 0, s);
    rill_tensor_free(out);
    out = NULL;
    free(log);
    /* The first run placed the whole graph; a second fetch logs nothing new. */
    log = run_logged(sess, NULL, NULL, 0, &init, 1, s);
    run_ok(rill_status_code(s), s);
    CHECK_EQ_STR(log, "");
    free(log);
    rill_session_free(sess);
    free(mapping);

    /* Fresh session: the first run logs every node once. */
    sess = open_logged(g, false, &mapping, s);
    log = run_logged(sess, &add, &out, 1, NULL, 0, s);
    if (run_ok(rill_status_code(s), s)) CHECK_NEAR(rill_tensor_get_double(out, 2), 33, 0);
    rill_tensor_free(out);
    out = NULL;
    CHECK_EQ_STR(dev(log, "k"), first_gpu());
    CHECK_EQ_STR(dev(log, "add"), first_gpu());
    CHECK_EQ_STR(dev(log, "v"), first_gpu());
    CHECK_EQ_INT(count_lines(log, "add: "), 1);
    free(log);
    run_ok(rill_session_run_targets(sess, &init, 1, s), s);

    /* Grow the graph: a CPU consumer of k (which would have drawn k to the CPU had it been
     * there at first), an update of the old variable and a new op. */
    rill_graph_push_device(g, "/cpu:0");
    rill_output k_cpu = rill_neg(g, k, "k_cpu");
    rill_graph_pop_device(g);
    rill_output bump = rill_assign_add(g, v, add, "bump");
    rill_output m = rill_mul(g, bump, k_cpu, "m");
    log = run_logged(sess, &m, &out, 1, NULL, 0, s);
    if (run_ok(rill_status_code(s), s))
        CHECK_NEAR(rill_tensor_get_double(out, 1), (1 + 22) * -20.0, 0);
    rill_tensor_free(out);
    out = NULL;
    /* Only the new nodes are logged; the old ones keep their devices. */
    CHECK(dev(log, "k") == NULL);
    CHECK(dev(log, "add") == NULL);
    CHECK(dev(log, "v") == NULL);
    CHECK_EQ_STR(dev(log, "k_cpu"), CPU0);
    CHECK_EQ_STR(dev(log, "bump"), first_gpu()); /* joins the variable where it already is */
    CHECK_EQ_STR(dev(log, "m"), first_gpu());
    CHECK_EQ_INT(count_lines(log, ""), 3);
    CHECK(strstr(log, "Device mapping") == NULL);
    free(log);
    /* The variable kept its value across the re-placement. */
    CHECK_NEAR(fetch_float(sess, v, 0, s), 1 + 11, 0);
    /* A fresh session places k on the GPU again, the first candidate now that its consumers
     * disagree. */
    free(mapping);
    rill_session_free(sess);
    char *all = place(g, false, k_cpu, NULL, NULL, s);
    CHECK_EQ_STR(dev(all, "k"), first_gpu());
    free(all);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_log_format(void)
{
    rill_status *s = rill_status_new();
    rill_output c;
    rill_graph *g = seed_graph(have_gpu ? "/gpu:0" : "/cpu:0", &c);
    char *log = place(g, false, c, NULL, NULL, s);
    run_ok(rill_status_code(s), s);
    char want_nodes[512];
    snprintf(want_nodes, sizeof want_nodes,
             "a: (Const): " CPU0 "\nb: (Const): " CPU0 "\nadd: (Add): %s\n", first_gpu());
    if (have_gpu) {
        /* "Device mapping:", one line per device with a description (GPUs: not CPU:0). */
        CHECK(strncmp(log, "Device mapping:\n", 16) == 0);
        CHECK_EQ_INT(count_lines(log, "Device mapping:"), 1);
        CHECK_EQ_INT(count_lines(log, GPU0 " -> device: 0, name: "), 1);
        CHECK_EQ_INT(count_lines(log, CPU0 " -> "), 0);
        CHECK_EQ_INT(count_lines(log, "/job:localhost/replica:0/task:0/device:GPU:"), ngpus);
        /* Then the node lines, in graph order, and nothing else. */
        const char *nodes = strstr(log, "a: (Const)");
        CHECK_EQ_STR(nodes, want_nodes);
        size_t maplen = nodes ? (size_t)(nodes - log) : 0;
        CHECK_EQ_INT(count_lines(log, "/job:"), ngpus);
        CHECK(maplen > 0 && log[maplen - 1] == '\n');
    } else {
        char want[1024];
        snprintf(want, sizeof want, "Device mapping: no known devices.\n%s", want_nodes);
        CHECK_EQ_STR(log, want);
    }
    free(log);

    /* Without log_device_placement nothing is printed. */
    rill_session_options *o = options(false, false);
    capture cap = capture_begin();
    rill_session *sess = rill_session_new(g, o, s);
    rill_tensor *out = NULL;
    if (sess) rill_session_run(sess, NULL, NULL, 0, &c, &out, 1, NULL, 0, s);
    log = capture_end(cap);
    CHECK_EQ_STR(log, "");
    rill_tensor_free(out);
    free(log);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_graph_free(g);
    rill_status_free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* Partitioning (reference §4.1), through the runtime's internals                              */
/* ------------------------------------------------------------------------------------------ */

static rill_node *xnode(const rill__xgraph *x, const char *name)
{
    return x->g ? rill_graph_find_node(x->g, name) : NULL;
}

static int count_op(const rill__xgraph *x, const char *op)
{
    int n = 0;
    for (int i = 0; x->g && i < rill_graph_num_nodes(x->g); i++)
        if (strcmp(rill_node_op_type(rill_graph_node(x->g, i)), op) == 0) n++;
    return n;
}

static const char *attr_str(const rill_node *n, const char *name)
{
    const rill__attr *a = n ? rill__node_attr(n, name) : NULL;
    return a && a->kind == RILL__ATTR_STRING ? a->v.s : NULL;
}

static const char *assigned(const rill_node *n)
{
    return n && n->assigned ? n->assigned->name : "(none)";
}

static void test_partition(void)
{
    if (!have_gpu) {
        TEST_SKIP_PART("the partition checks", "no GPU device");
        return;
    }
    rill_status *s = rill_status_new();
    rill__device *const *devs;
    int ndev = rill__devices(NULL, &devs, s);
    rill_output c;
    rill_graph *g = seed_graph("/gpu:0", &c);
    rill_output twice = rill_add(g, c, rill_node_input(c.node, 0), "twice"); /* a again */
    rill_output i32 = rill_add(g, rill_const_scalar(g, RILL_INT32, 5, "i5"),
                               rill_const_scalar(g, RILL_INT32, 7, "i7"), "i32");
    rill_output ph = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "ph");
    rill_output use_ph = rill_mul(g, ph, c, "use_ph");
    rill__placement pl = {0};
    CHECK(rill__place(g, &pl, devs, ndev, false, false, s));

    /* a and b cross CPU:0 -> GPU:0 once each, though a is used twice on the GPU; the fetch
     * comes back to the CPU. */
    rill__xgraph x;
    rill_output fetches[] = {twice};
    if (CHECK(rill__partition(g, &pl, NULL, NULL, 0, fetches, 1, NULL, 0, &x, s))) {
        CHECK_EQ_INT(count_op(&x, "_Send"), 3);
        CHECK_EQ_INT(count_op(&x, "_Recv"), 3);
        rill_node *send = xnode(&x, "a/_0"), *recv = xnode(&x, "a/_1");
        CHECK(send && strcmp(rill_node_op_type(send), "_Send") == 0);
        CHECK(recv && strcmp(rill_node_op_type(recv), "_Recv") == 0);
        CHECK_EQ_STR(assigned(send), CPU0);
        CHECK_EQ_STR(assigned(recv), GPU0);
        CHECK_EQ_STR(attr_str(send, "tensor_name"), "edge_0_a");
        CHECK_EQ_STR(attr_str(recv, "tensor_name"), "edge_0_a");
        CHECK_EQ_STR(attr_str(send, "send_device"), CPU0);
        CHECK_EQ_STR(attr_str(send, "recv_device"), GPU0);
        CHECK_EQ_STR(assigned(xnode(&x, "add")), GPU0);
        CHECK_EQ_STR(assigned(xnode(&x, "a")), CPU0);
        /* Nodes the fetch does not need are pruned. */
        CHECK(xnode(&x, "i32") == NULL);
        CHECK(xnode(&x, "use_ph") == NULL);
        /* The fetch is delivered by a _Recv on CPU:0 into host memory. */
        CHECK_EQ_INT(x.nfetches, 1);
        if (x.nfetches == 1) {
            CHECK_EQ_STR(rill_node_op_type(x.fetches[0].node), "_Recv");
            CHECK_EQ_STR(assigned(x.fetches[0].node), CPU0);
            CHECK(rill__attr_bool(x.fetches[0].node, "host_memory", false));
        }
        rill__xgraph_free(&x);
    }

    /* int32 "GPU" kernels keep their tensors in host memory: no transfers at all. */
    CHECK_EQ_STR(pl.assigned[i32.node->id]->name, GPU0);
    if (CHECK(rill__partition(g, &pl, NULL, NULL, 0, &i32, 1, NULL, 0, &x, s))) {
        CHECK_EQ_INT(count_op(&x, "_Send"), 0);
        CHECK_EQ_INT(count_op(&x, "_Recv"), 0);
        rill__xgraph_free(&x);
    }

    /* Feeds become host placeholders on CPU:0 named after what they replace; feeding the GPU
     * tensor c cuts a and b away. */
    rill_output feeds[] = {ph, c};
    if (CHECK(rill__partition(g, &pl, NULL, feeds, 2, &use_ph, 1, NULL, 0, &x, s))) {
        CHECK_EQ_INT(x.nfeeds, 2);
        if (x.nfeeds == 2) {
            CHECK_EQ_STR(rill_node_name(x.feeds[0].node), "ph");
            CHECK_EQ_STR(rill_node_name(x.feeds[1].node), "add/_feed_0");
            CHECK_EQ_STR(assigned(x.feeds[0].node), CPU0);
            CHECK_EQ_STR(assigned(x.feeds[1].node), CPU0);
        }
        CHECK(xnode(&x, "a") == NULL);
        CHECK(xnode(&x, "add") == NULL);
        CHECK_EQ_STR(assigned(xnode(&x, "use_ph")), GPU0);
        /* Two feeds up to the GPU and the result back down. */
        CHECK_EQ_INT(count_op(&x, "_Send"), 3);
        rill__xgraph_free(&x);
    }
    rill__placement_free(&pl);
    rill_graph_free(g);
    rill_status_free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* GPU options, each in a fresh child process                                                  */
/* ------------------------------------------------------------------------------------------ */

/* What a child reports: its check counts and one value. */
typedef struct child_report {
    int checks, failed;
    int value;
} child_report;

static int child_value;

/* Runs fn in a child process with env var name=value set (name may be NULL), adds the child's
 * check counts to ours and returns the value it set (-1 when it died). */
static int in_child(const char *what, void (*fn)(const void *), const void *arg,
                    const char *env_name, const char *env_value)
{
    int fds[2];
    if (!CHECK(pipe(fds) == 0)) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        test__checks = test__failed = 0;
        child_value = 0;
        if (env_name) setenv(env_name, env_value, 1);
        fn(arg);
        child_report r = {test__checks, test__failed, child_value};
        ssize_t w = write(fds[1], &r, sizeof r);
        fflush(stdout);
        fflush(stderr);
        /* _exit: the child shares the parent's atexit work (and PoCL's threads are its own). */
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
    }
    close(fds[1]);
    child_report r = {0, 0, -1};
    ssize_t got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!CHECK(got == (ssize_t)sizeof r && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        fprintf(stderr, "  child '%s' died (status %d)\n", what, st);
        return -1;
    }
    test__checks += r.checks;
    test__failed += r.failed;
    if (r.failed) fprintf(stderr, "  (%d failed in child '%s')\n", r.failed, what);
    return r.value;
}

static rill_session *session_with_list(rill_graph *g, const char *list, bool log, rill_status *s)
{
    rill_session_options *o = options(false, log);
    rill_session_options_set_gpu_visible_device_list(o, list);
    rill_session *sess = rill_session_new(g, o, s);
    rill_session_options_free(o);
    return sess;
}

static void child_count_gpus(const void *arg)
{
    (void)arg;
    rill_status *s = rill_status_new();
    rill__device *const *devs;
    int n = rill__devices(NULL, &devs, s);
    CHECK(n >= 1);
    for (int i = 0; i < n; i++)
        if (strcmp(devs[i]->type, "GPU") == 0) child_value++;
    rill_status_free(s);
}

/* One visible_device_list that must fail with exactly `want`. */
typedef struct bad_list {
    const char *list;
    const char *want;
} bad_list;

static void child_bad_list(const void *arg)
{
    const bad_list *b = arg;
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output c = rill_const_float(g, 1, "c");
    (void)c;
    rill_session *sess = session_with_list(g, b->list, false, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    if (!CHECK_EQ_STR(rill_status_message(s), b->want))
        fprintf(stderr, "  visible_device_list '%s'\n", b->list);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

static void child_same_list_again(const void *arg)
{
    (void)arg;
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output c = rill_neg(g, rill_const_float(g, 2, "two"), "c");
    rill_session *s1 = session_with_list(g, "0", false, s);
    if (!CHECK(s1 != NULL)) fprintf(stderr, "  %s\n", rill_status_message(s));
    /* The same list, no list, or no options at all: the devices made first are reused. */
    rill_session *s2 = session_with_list(g, "0", false, s);
    CHECK(s2 != NULL);
    rill_session *s3 = session_with_list(g, NULL, false, s);
    CHECK(s3 != NULL);
    rill_session *s4 = rill_session_new(g, NULL, s);
    CHECK(s4 != NULL);
    if (s4) CHECK_NEAR(fetch_float(s4, c, 0, s), -2, 0);
    rill_session_free(s1);
    rill_session_free(s2);
    rill_session_free(s3);
    rill_session_free(s4);
    rill_graph_free(g);
    rill_status_free(s);
}

/* Two PoCL devices: GPU:0 and GPU:1 swapped by "1,0"; another list later is ALREADY_EXISTS. */
static void child_two_gpus_reordered(const void *arg)
{
    (void)arg;
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output a = vec3(g, 1, 2, 3, "a");
    rill_output first = rill_mul(g, a, a, "first"); /* unconstrained: GPU:0 */
    rill_graph_push_device(g, "/gpu:1");
    rill_output second = rill_add(g, first, a, "second"); /* GPU:0 -> GPU:1 */
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/gpu:2");
    rill_output third = rill_neg(g, second, "third");
    rill_graph_pop_device(g);
    capture cap = capture_begin();
    rill_session *sess = session_with_list(g, "1,0", true, s);
    char *log = capture_end(cap);
    if (!CHECK(sess != NULL)) fprintf(stderr, "  %s\n", rill_status_message(s));
    /* The description keeps the physical (enumeration) ordinal, as TF's does. */
    CHECK_EQ_INT(count_lines(log, "Device mapping:"), 1);
    CHECK_EQ_INT(count_lines(log, GPU0 " -> device: 1, name: "), 1);
    CHECK_EQ_INT(count_lines(log, GPU1 " -> device: 0, name: "), 1);
    free(log);
    rill_tensor *out = NULL;
    cap = capture_begin();
    rill_code code =
        sess ? rill_session_run(sess, NULL, NULL, 0, &second, &out, 1, NULL, 0, s) : RILL_INTERNAL;
    log = capture_end(cap);
    CHECK_EQ_INT(code, RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot assign a device for operation 'third': Operation was explicitly "
                 "assigned to /device:GPU:2 but available devices are [ " CPU0 ", " GPU0 ", " GPU1
                 " ]. Make sure the device specification refers to a valid device.");
    free(log);
    rill_session_free(sess);

    rill_session_options *o = options(true, true);
    rill_session_options_set_gpu_visible_device_list(o, "1,0");
    cap = capture_begin();
    sess = rill_session_new(g, o, s);
    code =
        sess ? rill_session_run(sess, NULL, NULL, 0, &third, &out, 1, NULL, 0, s) : RILL_INTERNAL;
    log = capture_end(cap);
    if (run_ok(code, s)) CHECK_NEAR(rill_tensor_get_double(out, 2), -(9 + 3), 0);
    CHECK_EQ_STR(dev(log, "a"), GPU0);
    CHECK_EQ_STR(dev(log, "first"), GPU0);
    CHECK_EQ_STR(dev(log, "second"), GPU1);
    CHECK_EQ_STR(dev(log, "third"), GPU0); /* soft: the first GPU, not the CPU */
    rill_tensor_free(out);
    free(log);
    rill_session_free(sess);
    rill_session_options_free(o);

    /* GPU options are per process: another list now is ALREADY_EXISTS. */
    sess = session_with_list(g, "0,1", false, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_ALREADY_EXISTS);
    rill_session_free(sess);
    sess = session_with_list(g, "1,0", false, s);
    CHECK(sess != NULL);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* RILL_VISIBLE_GPUS=1 with two PoCL devices: one GPU, the second device. */
static void child_env_visible(const void *arg)
{
    (void)arg;
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output c = rill_neg(g, vec3(g, 1, 2, 3, "k"), "c");
    capture cap = capture_begin();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_session_options *o = options(false, true);
    rill_session *logged = rill_session_new(g, o, s);
    rill_tensor *out = NULL;
    if (logged) rill_session_run(logged, NULL, NULL, 0, &c, &out, 1, NULL, 0, s);
    char *log = capture_end(cap);
    CHECK(sess != NULL && logged != NULL);
    CHECK_EQ_INT(count_lines(log, GPU0 " -> device: 1, name: "), 1);
    CHECK_EQ_INT(count_lines(log, GPU1), 0);
    CHECK_EQ_STR(dev(log, "c"), GPU0);
    if (out) CHECK_NEAR(rill_tensor_get_double(out, 1), -2, 0);
    rill_tensor_free(out);
    free(log);
    rill_session_free(sess);
    rill_session_free(logged);
    rill_session_options_free(o);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_gpu_options(void)
{
    int n = in_child("count GPUs", child_count_gpus, NULL, NULL, NULL);
    char want[256], list[32];
    if (n < 0) return;

    bad_list parse = {"x", "Could not parse entry in 'visible_device_list': 'x'.  "
                           "visible_device_list = x"};
    in_child("parse error", child_bad_list, &parse, NULL, NULL);
    bad_list parse2 = {"0,1x", "Could not parse entry in 'visible_device_list': '1x'.  "
                               "visible_device_list = 0,1x"};
    if (n >= 1) in_child("parse error 2", child_bad_list, &parse2, NULL, NULL);
    snprintf(list, sizeof list, "%d", n);
    snprintf(want, sizeof want,
             "'visible_device_list' listed an invalid GPU id '%d' but visible device count is %d",
             n, n);
    bad_list invalid = {list, want};
    in_child("invalid id", child_bad_list, &invalid, NULL, NULL);
    char want_neg[256];
    snprintf(want_neg, sizeof want_neg,
             "'visible_device_list' listed an invalid GPU id '-1' but visible device count is %d",
             n);
    bad_list negative = {"-1", want_neg};
    in_child("negative id", child_bad_list, &negative, NULL, NULL);
    if (n >= 1) {
        bad_list dup = {"0,0", "visible_device_list contained a duplicate entry: 0,0"};
        in_child("duplicate", child_bad_list, &dup, NULL, NULL);
        in_child("same list again", child_same_list_again, NULL, NULL, NULL);
    } else {
        TEST_SKIP_PART("the visible_device_list checks that need a GPU (parse error 2, "
                       "duplicate, same list again)",
                       "no GPU device");
    }

    /* Two GPUs from PoCL (pthread devices), when it can make them. */
    int n2 = in_child("count GPUs (two PoCL devices)", child_count_gpus, NULL, "POCL_DEVICES",
                      "pthread pthread");
    if (n2 >= 2) {
        in_child("two GPUs reordered", child_two_gpus_reordered, NULL, "POCL_DEVICES",
                 "pthread pthread");
        setenv("RILL_VISIBLE_GPUS", "1", 1);
        in_child("RILL_VISIBLE_GPUS", child_env_visible, NULL, "POCL_DEVICES", "pthread pthread");
        unsetenv("RILL_VISIBLE_GPUS");
        bad_list dup2 = {"1,0,1", "visible_device_list contained a duplicate entry: 1,0,1"};
        in_child("duplicate of two", child_bad_list, &dup2, "POCL_DEVICES", "pthread pthread");
    } else {
        TEST_SKIP_PART("the two-GPU checks",
                       "PoCL gave %d GPU(s) with POCL_DEVICES='pthread pthread'", n2);
    }
}

int main(void)
{
    setenv("RILL_OPENCL_CPU_AS_GPU", "1", 1);
    /* Children first: nothing in this process may have touched OpenCL before a fork. */
    test_gpu_options();

    rill_status *s = rill_status_new();
    rill__device *const *devs;
    int ndev = rill__devices(NULL, &devs, s);
    if (!CHECK(ndev >= 1)) fprintf(stderr, "  devices: %s\n", rill_status_message(s));
    for (int i = 0; i < ndev; i++)
        if (strcmp(devs[i]->type, "GPU") == 0) ngpus++;
    have_gpu = ngpus > 0;
    rill_status_free(s);
    if (!have_gpu)
        fprintf(stderr, "note: no GPU device (no OpenCL device, even with "
                        "RILL_OPENCL_CPU_AS_GPU=1): the GPU-only parts are skipped\n");

    test_nested_scopes_merge();
    test_barrier();
    test_device_function();
    test_colocate_with_scope();
    test_malformed_specs();
    test_default_placement();
    test_missing_gpu_and_soft_placement();
    test_explicit_gpu0();
    test_int32_variable_on_gpu();
    test_colocation_conflicts();
    test_job_never_relaxed();
    test_reference_edges_follow_the_variable();
    test_shape_and_generators();
    test_incremental_placement();
    test_log_format();
    test_partition();
    TEST_MAIN_END();
}
