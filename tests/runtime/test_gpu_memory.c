/* test_gpu_memory.c - per_process_gpu_memory_fraction caps what the process allocates on a GPU
 * (an allocation past the cap is RESOURCE_EXHAUSTED naming the device, and the session keeps
 * working for what fits), and an out-of-range fraction is refused. GPU options are per process,
 * so each case runs in its own child process. Without a GPU the cap is skipped (SKIPPED line) and
 * the refused fractions are still checked. */
#include <rill/rill.h>

#include "test.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static bool have_gpu(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/gpu:0");
    rill_output c = rill_add(g, rill_const_float(g, 1, NULL), rill_const_float(g, 2, NULL), NULL);
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *t = NULL;
    bool ok = sess && rill_session_run(sess, NULL, NULL, 0, &c, &t, 1, NULL, 0, s) == RILL_OK;
    rill_tensor_free(t);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
    return ok;
}

/* Runs y = x + x on GPU:0 for an n-element x with the given fraction; returns the code. */
static rill_code run_add(double fraction, int64_t n, char *msg, size_t len)
{
    rill_graph *g = rill_graph_new();
    float *data = calloc((size_t)n, sizeof *data);
    rill_graph_push_device(g, "/gpu:0");
    rill_output x = rill_const_floats(g, data, &n, 1, "x");
    rill_output y = rill_add(g, x, x, "y");
    rill_graph_pop_device(g);
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_gpu_memory_fraction(o, fraction);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, o, s);
    rill_tensor *t = NULL;
    if (sess) rill_session_run(sess, NULL, NULL, 0, &y, &t, 1, NULL, 0, s);
    rill_code code = rill_status_code(s);
    snprintf(msg, len, "%s", rill_status_message(s));
    rill_tensor_free(t);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    rill_graph_free(g);
    free(data);
    return code;
}

static void child_cap(void)
{
    char msg[1024];
    /* A cap of a few KiB (PoCL reports GiBs of memory): a 4 MiB tensor cannot fit. */
    rill_code c = run_add(1e-6, 1 << 20, msg, sizeof msg);
    CHECK_EQ_INT(c, RILL_RESOURCE_EXHAUSTED);
    CHECK_STR_CONTAINS(msg, "OOM when allocating");
    CHECK_STR_CONTAINS(msg, "device:GPU:0");
    /* Something small still fits under the same cap. */
    c = run_add(1e-6, 16, msg, sizeof msg);
    CHECK_EQ_INT(c, RILL_OK);
}

static void child_bad_fraction(void)
{
    char msg[1024];
    rill_code c = run_add(1.5, 4, msg, sizeof msg);
    CHECK_EQ_INT(c, RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(msg, "per_process_gpu_memory_fraction must be in [0, 1], got 1.5");
}

static void in_child(void (*fn)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        fn();
        _exit(test__failed ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    setenv("RILL_OPENCL_CPU_AS_GPU", "1", 0);
    in_child(child_bad_fraction);
    pid_t pid = fork();
    if (pid == 0) _exit(have_gpu() ? 0 : 3);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
        TEST_SKIP_PART("the memory cap",
                       "no GPU device (not even PoCL with RILL_OPENCL_CPU_AS_GPU=1)");
    } else {
        in_child(child_cap);
    }
    TEST_MAIN_END();
}
