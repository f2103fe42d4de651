/* test_resolve.c - the launch resolvers of rill/cluster.h with real environment variables set
 * and unset in this process: the seed's flags with tf.train.Server's rules and error texts,
 * TF_CONFIG as Kubernetes/Kubeflow write it, Slurm (host-list and tasks-per-node expansion
 * tables, rank to node mapping under SLURM_DISTRIBUTION block, cyclic and plane, the check against
 * where Slurm says the task runs), Open MPI and MPICH ranks with RILL_HOSTS, the combined
 * resolver's order, and every malformed-value error naming its variable and value.
 */
#include "../test.h"

#include <rill/cluster.h>

#include <stdlib.h>

static const char *const launch_vars[] = {
    "TF_CONFIG",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_STEP_NODELIST",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_DISTRIBUTION",
    "SLURM_DIST_PLANESIZE",
    "SLURMD_NODENAME",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "RILL_HOSTS",
    "RILL_NUM_PS",
    "RILL_BASE_PORT",
};

static void clean_env(void)
{
    for (size_t i = 0; i < sizeof launch_vars / sizeof launch_vars[0]; i++)
        unsetenv(launch_vars[i]);
}

static const char *cluster_str(const rill_task_config *cfg)
{
    static char buf[1024];
    rill_cluster_spec_to_string(cfg->cluster, buf, sizeof buf);
    return buf;
}

static void test_flags(void)
{
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    CHECK(!rill_task_config_from_flags("", "", "worker", 0, &cfg, s));
    CHECK(!rill_task_config_from_flags(NULL, NULL, NULL, -1, &cfg, s));
    CHECK(rill_status_ok(s) && cfg.cluster == NULL);

    CHECK(rill_task_config_from_flags("p:2222", "w0:2222,w1:2222", "worker", 1, &cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_STR(cfg.job_name, "worker");
        CHECK_EQ_INT(cfg.task_index, 1);
        CHECK_EQ_STR(cfg.source, "flags");
        CHECK_EQ_STR(cluster_str(&cfg), "{\"ps\": [\"p:2222\"], \"worker\": [\"w0:2222\", "
                                        "\"w1:2222\"]}");
    }
    /* A second resolve replaces the first (its cluster is freed, not leaked). */
    CHECK(rill_task_config_from_flags("", "only:1", NULL, -1, &cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_STR(cfg.job_name, "worker");
        CHECK_EQ_INT(cfg.task_index, 0);
    }
    static const struct {
        const char *ps, *workers, *job;
        int index;
        const char *error;
    } errors[] = {
        {"p:1", "w:1", NULL, 0, "Must specify an explicit `job_name`."},
        {"p:1", "w:1", "", 0, "Must specify an explicit `job_name`."},
        {"p:1", "w:1,w:2", "worker", -1, "Must specify an explicit `task_index`."},
        {"p:1", "w:1", "chief", 0, "Job \"chief\" was not defined in cluster"},
        {"p:1", "w:1", "worker", 1, "Task 1 was not defined in job \"worker\""},
        {"", "w:1", "ps", 0, "Job \"ps\" was not defined in cluster"},
        {"p", "w:1", "ps", 0, "Invalid --ps_hosts \"p\": entry 0: Could not parse port"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        rill_status_clear(s);
        CHECK(rill_task_config_from_flags(errors[i].ps, errors[i].workers, errors[i].job,
                                          errors[i].index, &cfg, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), errors[i].error);
        CHECK_EQ_STR(cfg.job_name, "worker"); /* unchanged */
    }
    rill_task_config_clear(&cfg);
    CHECK(cfg.cluster == NULL);
    rill_task_config_clear(NULL);
    rill_status_free(s);
}

static void test_tf_config(void)
{
    clean_env();
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    CHECK(!rill_task_config_from_tf_config(&cfg, s));
    setenv("TF_CONFIG", "  ", 1);
    CHECK(!rill_task_config_from_tf_config(&cfg, s));
    setenv("TF_CONFIG", "{}", 1);
    CHECK(!rill_task_config_from_tf_config(&cfg, s));
    setenv("TF_CONFIG", "{\"cluster\": {}, \"task\": {\"type\": \"worker\"}}", 1);
    CHECK(!rill_task_config_from_tf_config(&cfg, s));
    CHECK(rill_status_ok(s));

    /* What Kubeflow's TFJob operator writes. */
    setenv("TF_CONFIG",
           "{\"cluster\":{\"chief\":[\"mnist-chief-0.ns.svc:2222\"],\"ps\":[\"mnist-ps-0.ns.svc:"
           "2222\"],\"worker\":[\"mnist-worker-0.ns.svc:2222\",\"mnist-worker-1.ns.svc:2222\"],"
           "\"evaluator\":[\"mnist-evaluator-0.ns.svc:2222\"]},\"task\":{\"type\":\"worker\","
           "\"index\":1},\"environment\":\"cloud\"}",
           1);
    CHECK(rill_task_config_from_tf_config(&cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_STR(cfg.source, "TF_CONFIG");
        CHECK_EQ_STR(cfg.job_name, "worker");
        CHECK_EQ_INT(cfg.task_index, 1);
        CHECK_EQ_INT(rill_cluster_spec_num_jobs(cfg.cluster), 4);
        CHECK_EQ_STR(rill_cluster_spec_task_address(cfg.cluster, "evaluator", 0, s),
                     "mnist-evaluator-0.ns.svc:2222");
    }
    /* Index as a string, sparse dict form, unknown keys ignored. */
    setenv("TF_CONFIG",
           "{\"cluster\": {\"worker\": {\"3\": \"h3:1\", \"0\": \"h0:1\"}}, \"task\": {\"type\": "
           "\"worker\", \"index\": \"3\"}, \"rpc_layer\": \"grpc\"}",
           1);
    CHECK(rill_task_config_from_tf_config(&cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_INT(cfg.task_index, 3);
        CHECK_EQ_STR(cluster_str(&cfg), "{\"worker\": {\"0\": \"h0:1\", \"3\": \"h3:1\"}}");
    }
    /* No task: the one job with the one task. Type without index: index 0. */
    setenv("TF_CONFIG", "{\"cluster\": {\"chief\": [\"c:1\"]}}", 1);
    CHECK(rill_task_config_from_tf_config(&cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.job_name, "chief");
    setenv("TF_CONFIG",
           "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, \"task\": "
           "{\"type\": \"ps\"}}",
           1);
    CHECK(rill_task_config_from_tf_config(&cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.job_name, "ps");
    CHECK_EQ_INT(cfg.task_index, 0);

    static const struct {
        const char *json, *error;
    } errors[] = {
        {"{\"cluster\": ", "Invalid JSON at byte 12: expected a value"},
        {"[1]", "expected a JSON object, got a array"},
        {"{\"cluster\": [\"h:1\"]}", "\"cluster\" is a array, expected an object"},
        {"{\"cluster\": {\"ps\": \"h:1\"}}", "cluster.ps is a string, expected a list"},
        {"{\"cluster\": {\"ps\": [1]}}", "cluster.ps[0] is a number, expected a \"host:port\""},
        {"{\"cluster\": {\"ps\": {\"x\": \"h:1\"}}}", "cluster.ps has task index \"x\""},
        {"{\"cluster\": {\"ps\": [\"h\"]}}", "Invalid address for task 0 of job \"ps\""},
        {"{\"cluster\": {\"p s\": [\"h:1\"]}}", "Invalid job name \"p s\""},
        {"{\"cluster\": {\"ps\": [\"h:1\"], \"worker\": [\"w:1\"]}}",
         "Must specify an explicit `job_name`."},
        {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
         "Job \"worker\" was not defined in cluster"},
        {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 4}}",
         "Task 4 was not defined in job \"ps\""},
        {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"ps\", \"index\": -1}}",
         "task.index must be an integer"},
        {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 0.5}}",
         "task.index must be an integer"},
        {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": 3}}",
         "task.type is a number, expected a string"},
        {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": []}", "\"task\" is a array"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        rill_status_clear(s);
        setenv("TF_CONFIG", errors[i].json, 1);
        CHECK(rill_task_config_from_tf_config(&cfg, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Invalid TF_CONFIG '");
        CHECK_STR_CONTAINS(rill_status_message(s), errors[i].json); /* names the value */
        CHECK_STR_CONTAINS(rill_status_message(s), errors[i].error);
    }
    CHECK_EQ_STR(cfg.job_name, "ps"); /* unchanged by the failures */
    rill_task_config_clear(&cfg);
    clean_env();
    rill_status_free(s);
}

static void test_hostlists(void)
{
    static const struct {
        const char *list, *hosts; /* hosts joined by ' '; NULL: rejected */
    } cases[] = {
        {"node01", "node01"},
        {"a,b,c", "a b c"},
        {"node[01-03,07],gpu-a[1-2]", "node01 node02 node03 node07 gpu-a1 gpu-a2"},
        {"n[8-11]", "n8 n9 n10 n11"},
        {"n[008-010]", "n008 n009 n010"},
        {"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"},
        {"x[3]-ib", "x3-ib"},
        {"a,n[1-2],b", "a n1 n2 b"},
        {"", NULL},
        {"a,,b", NULL},
        {"n[1-", NULL},
        {"n[3-1]", NULL},
        {"n[]", NULL},
        {"n[a-b]", NULL},
        {"n]1[", NULL},
        {"n[[1]]", NULL},
        {"n[1-99999]x[1-9]", NULL}, /* past 65536 hosts */
    };
    rill_status *s = rill_status_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char **hosts = NULL;
        int n = 0;
        rill_status_clear(s);
        bool ok = rill_slurm_hostlist_expand(cases[i].list, &hosts, &n, s);
        if (!CHECK(ok == (cases[i].hosts != NULL))) {
            fprintf(stderr, "  list \"%s\": %s\n", cases[i].list, rill_status_message(s));
            rill_string_array_free(hosts, n);
            continue;
        }
        if (ok) {
            char joined[256] = "";
            for (int h = 0; h < n; h++) {
                if (h) strcat(joined, " ");
                strcat(joined, hosts[h]);
            }
            CHECK_EQ_STR(joined, cases[i].hosts);
            rill_string_array_free(hosts, n);
        } else {
            CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
            CHECK_STR_CONTAINS(rill_status_message(s), "Invalid Slurm host list \"");
            CHECK_STR_CONTAINS(rill_status_message(s), cases[i].list);
        }
    }
    static const struct {
        const char *spec;
        int n, counts[8]; /* n < 0: rejected */
    } tpn[] = {
        {"2(x3),1", 4, {2, 2, 2, 1}},
        {"4", 1, {4}},
        {"1,2,3", 3, {1, 2, 3}},
        {"2(x1)", 1, {2}},
        {"", -1, {0}},
        {"0", -1, {0}},
        {"2(x0)", -1, {0}},
        {"2(3)", -1, {0}},
        {"2(x3", -1, {0}},
        {"2,", -1, {0}},
        {"x", -1, {0}},
        {"1(x70000)", -1, {0}},
    };
    for (size_t i = 0; i < sizeof tpn / sizeof tpn[0]; i++) {
        int *counts = NULL, n = 0;
        bool ok = rill_slurm_tasks_per_node_expand(tpn[i].spec, &counts, &n, s);
        if (!CHECK(ok == (tpn[i].n >= 0))) {
            fprintf(stderr, "  tasks per node \"%s\"\n", tpn[i].spec);
        } else if (ok && CHECK_EQ_INT(n, tpn[i].n)) {
            for (int k = 0; k < n; k++) CHECK_EQ_INT(counts[k], tpn[i].counts[k]);
        } else if (!ok) {
            CHECK_STR_CONTAINS(rill_status_message(s), "Invalid Slurm tasks per node");
        }
        free(counts);
    }
    rill_status_free(s);
}

static void test_slurm(void)
{
    clean_env();
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    CHECK(!rill_task_config_from_slurm(-1, 0, &cfg, s));

    /* 7 tasks: 2 on each of node01..03, 1 on gpu-a1; rank 5 is node03's second task. */
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_NTASKS", "7", 1);
    setenv("SLURM_JOB_NODELIST", "node[01-03],gpu-a1", 1);
    setenv("SLURM_TASKS_PER_NODE", "2(x3),1", 1);
    CHECK(rill_task_config_from_slurm(-1, 0, &cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_STR(cfg.source, "slurm");
        CHECK_EQ_STR(cfg.job_name, "worker");
        CHECK_EQ_INT(cfg.task_index, 4);
        CHECK_EQ_STR(cluster_str(&cfg),
                     "{\"ps\": [\"node01:2222\"], \"worker\": [\"node01:2223\", \"node02:2222\", "
                     "\"node02:2223\", \"node03:2222\", \"node03:2223\", \"gpu-a1:2222\"]}");
    }
    /* The step's list wins over the job's; RILL_NUM_PS and RILL_BASE_PORT apply. */
    setenv("SLURM_STEP_NODELIST", "a,b", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "4,3", 1);
    setenv("RILL_NUM_PS", "2", 1);
    setenv("RILL_BASE_PORT", "5000", 1);
    setenv("SLURM_PROCID", "1", 1);
    CHECK(rill_task_config_from_slurm(-1, 0, &cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_STR(cfg.job_name, "ps");
        CHECK_EQ_INT(cfg.task_index, 1);
        CHECK_EQ_STR(cluster_str(&cfg), "{\"ps\": [\"a:5000\", \"a:5001\"], \"worker\": "
                                        "[\"a:5002\", \"a:5003\", \"b:5000\", \"b:5001\", "
                                        "\"b:5002\"]}");
    }
    /* Parameters beat the environment. */
    CHECK(rill_task_config_from_slurm(0, 6000, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.job_name, "worker");
    CHECK_EQ_STR(rill_cluster_spec_task_address(cfg.cluster, "worker", 0, s), "a:6000");
    CHECK(!rill_cluster_spec_has_job(cfg.cluster, "ps"));
    /* No tasks-per-node: spread evenly, first nodes one more (7 over 2: 4 then 3). */
    unsetenv("SLURM_STEP_TASKS_PER_NODE");
    unsetenv("SLURM_TASKS_PER_NODE");
    setenv("SLURM_PROCID", "4", 1);
    CHECK(rill_task_config_from_slurm(1, 0, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(rill_cluster_spec_task_address(cfg.cluster, "worker", 3, s), "b:5000");

    static const struct {
        const char *var, *value, *error;
    } errors[] = {
        {"SLURM_PROCID", "x", "Invalid value for environment variable SLURM_PROCID: \"x\""},
        {"SLURM_PROCID", "-1", "SLURM_PROCID: \"-1\""},
        {"SLURM_PROCID", "7", "SLURM_PROCID: \"7\" is not below SLURM_NTASKS=7"},
        {"SLURM_NTASKS", "0", "SLURM_NTASKS: \"0\""},
        {"SLURM_NTASKS", NULL, "SLURM_PROCID is set (\"4\") but SLURM_NTASKS is not"},
        {"SLURM_STEP_NODELIST", "n[1-",
         "Invalid value for environment variable "
         "SLURM_STEP_NODELIST: Invalid Slurm host list \"n[1-\""},
        {"SLURM_STEP_TASKS_PER_NODE", "2(x", "SLURM_STEP_TASKS_PER_NODE: Invalid Slurm tasks"},
        {"SLURM_STEP_TASKS_PER_NODE", "3,3",
         "SLURM_STEP_TASKS_PER_NODE=\"3,3\" gives 2 nodes "
         "and 6 tasks, but SLURM_STEP_NODELIST=\"a,b\" has 2 "
         "nodes and SLURM_NTASKS=7 tasks"},
        {"SLURM_STEP_TASKS_PER_NODE", "7", "gives 1 nodes"},
        {"RILL_NUM_PS", "7", "7 parameter-server ranks (RILL_NUM_PS) leave no worker"},
        {"RILL_NUM_PS", "one", "Invalid value for environment variable RILL_NUM_PS: \"one\""},
        {"RILL_BASE_PORT", "70000", "RILL_BASE_PORT: \"70000\" (expected an integer in 1..65535)"},
        {"RILL_BASE_PORT", "65534", "Rank 2 would listen on port 65536"},
        {"SLURM_STEP_NODELIST", "a_b,c",
         "Invalid host \"a_b\" for rank 0 from "
         "SLURM_STEP_NODELIST"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        setenv("SLURM_PROCID", "4", 1);
        setenv("SLURM_NTASKS", "7", 1);
        setenv("SLURM_STEP_NODELIST", "a,b", 1);
        unsetenv("SLURM_STEP_TASKS_PER_NODE");
        unsetenv("RILL_NUM_PS");
        unsetenv("RILL_BASE_PORT");
        if (errors[i].value)
            setenv(errors[i].var, errors[i].value, 1);
        else
            unsetenv(errors[i].var);
        rill_status_clear(s);
        CHECK(rill_task_config_from_slurm(-1, 0, &cfg, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), errors[i].error);
    }
    unsetenv("SLURM_STEP_NODELIST");
    unsetenv("SLURM_JOB_NODELIST");
    CHECK(rill_task_config_from_slurm(-1, 0, &cfg, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "none of SLURM_STEP_NODELIST");
    rill_task_config_clear(&cfg);
    clean_env();
    rill_status_free(s);
}

/* The cluster rank `rank` of a Slurm step resolves to, with SLURM_DISTRIBUTION=dist (NULL: unset)
 * over nodes/tasks_per_node; NULL with s set on an error. */
static const char *slurm_cluster(const char *nodes, const char *tasks_per_node, int ntasks,
                                 int rank, const char *dist, rill_task_config *cfg, rill_status *s)
{
    char v[16];
    snprintf(v, sizeof v, "%d", rank);
    setenv("SLURM_PROCID", v, 1);
    snprintf(v, sizeof v, "%d", ntasks);
    setenv("SLURM_NTASKS", v, 1);
    setenv("SLURM_STEP_NODELIST", nodes, 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", tasks_per_node, 1);
    if (dist)
        setenv("SLURM_DISTRIBUTION", dist, 1);
    else
        unsetenv("SLURM_DISTRIBUTION");
    rill_status_clear(s);
    if (!CHECK(rill_task_config_from_slurm(-1, 0, cfg, s))) return NULL;
    return rill_status_ok(s) ? cluster_str(cfg) : NULL;
}

static void test_slurm_distribution(void)
{
    clean_env();
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    /* 7 tasks, 2 on each of node01..03 and 1 on gpu-a1. block (unset, "block", "*", with socket
     * and core methods): the nodes fill in order. */
    static const char block[] =
        "{\"ps\": [\"node01:2222\"], \"worker\": [\"node01:2223\", \"node02:2222\", "
        "\"node02:2223\", \"node03:2222\", \"node03:2223\", \"gpu-a1:2222\"]}";
    const char *nodes = "node[01-03],gpu-a1", *tpn = "2(x3),1";
    const char *blocks[] = {NULL, "", "block", "*", "block:cyclic", "block:block:fcyclic,Pack"};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        const char *got = slurm_cluster(nodes, tpn, 7, 5, blocks[i], &cfg, s);
        if (!CHECK(got != NULL))
            fprintf(stderr, "  %s: %s\n", blocks[i] ? blocks[i] : "(unset)",
                    rill_status_message(s));
        else
            CHECK_EQ_STR(got, block);
    }
    /* cyclic: rank i on node i mod 4 while nodes have room (Slurm's example in srun(1): the
     * consecutive ranks over consecutive nodes): 0 1 2 3 on node01 node02 node03 gpu-a1, then
     * 4 5 6 on node01..03, each node's second task on port 2223. */
    static const char cyclic[] =
        "{\"ps\": [\"node01:2222\"], \"worker\": [\"node02:2222\", \"node03:2222\", "
        "\"gpu-a1:2222\", \"node01:2223\", \"node02:2223\", \"node03:2223\"]}";
    const char *cyclics[] = {"cyclic", "cyclic:cyclic", "cyclic:block,NoPack", "CYCLIC"};
    for (size_t i = 0; i < sizeof cyclics / sizeof cyclics[0]; i++) {
        const char *got = slurm_cluster(nodes, tpn, 7, 5, cyclics[i], &cfg, s);
        if (!CHECK(got != NULL))
            fprintf(stderr, "  %s: %s\n", cyclics[i], rill_status_message(s));
        else
            CHECK_EQ_STR(got, cyclic);
    }
    /* Rank 5 is node02's second task: worker 4 on node02:2223. */
    if (CHECK(slurm_cluster(nodes, tpn, 7, 5, "cyclic", &cfg, s) != NULL)) {
        CHECK_EQ_STR(cfg.job_name, "worker");
        CHECK_EQ_INT(cfg.task_index, 4);
        CHECK_EQ_STR(rill_cluster_spec_task_address(cfg.cluster, "worker", 4, s), "node02:2223");
    }
    /* Uneven counts: the nodes with room go on (3,1,2 over a,b,c: a b c a c a). */
    const char *got = slurm_cluster("a,b,c", "3,1,2", 6, 0, "cyclic", &cfg, s);
    CHECK_EQ_STR(got ? got : rill_status_message(s),
                 "{\"ps\": [\"a:2222\"], \"worker\": [\"b:2222\", \"c:2222\", \"a:2223\", "
                 "\"c:2223\", \"a:2224\"]}");
    /* plane=2, Slurm's own example (slurm_step_layout.c): 6 tasks over 3 nodes holding 4, 1, 1:
     * node 0 gets 0 1 and then 4 5, node 1 gets 2, node 2 gets 3. The size comes with the value
     * (-m plane=2) or in SLURM_DIST_PLANESIZE (what srun hands its tasks). */
    static const char plane[] =
        "{\"ps\": [\"n0:2222\"], \"worker\": [\"n0:2223\", \"n1:2222\", \"n2:2222\", "
        "\"n0:2224\", \"n0:2225\"]}";
    got = slurm_cluster("n[0-2]", "4,1,1", 6, 3, "plane=2", &cfg, s);
    CHECK_EQ_STR(got ? got : rill_status_message(s), plane);
    setenv("SLURM_DIST_PLANESIZE", "2", 1);
    got = slurm_cluster("n[0-2]", "4,1,1", 6, 3, "plane", &cfg, s);
    CHECK_EQ_STR(got ? got : rill_status_message(s), plane);
    /* plane=1 is cyclic; a plane as large as any node's share is block. */
    got = slurm_cluster(nodes, tpn, 7, 5, "plane=1", &cfg, s);
    CHECK_EQ_STR(got ? got : rill_status_message(s), cyclic);
    got = slurm_cluster(nodes, tpn, 7, 5, "plane=2", &cfg, s);
    CHECK_EQ_STR(got ? got : rill_status_message(s), block);

    /* Where Slurm says this task runs must agree with the layout, else an error, never wrong
     * hosts: rank 5 under cyclic is node02's local task 1. */
    setenv("SLURMD_NODENAME", "node02", 1);
    setenv("SLURM_LOCALID", "1", 1);
    CHECK(slurm_cluster(nodes, tpn, 7, 5, "cyclic", &cfg, s) != NULL);
    static const struct {
        const char *node, *localid, *dist, *error;
    } wrong[] = {
        /* a layout rill got wrong (here: block, where Slurm put rank 5 on node02) */
        {"node02", "1", "block",
         "Slurm started this task (SLURM_PROCID=5) on \"node02\" (SLURMD_NODENAME) as its "
         "local task 1 (SLURM_LOCALID), but SLURM_DISTRIBUTION=\"block\" with "
         "SLURM_STEP_TASKS_PER_NODE=\"2(x3),1\" over SLURM_STEP_NODELIST=\"node[01-03],gpu-a1\" "
         "puts rank 5 on \"node03\" as local task 1"},
        {"node03", "1", "cyclic", "puts rank 5 on \"node02\" as local task 1"},
        {"node02", "0", "cyclic", "as its local task 0 (SLURM_LOCALID)"},
        {"node02", "x", "cyclic", "Invalid value for environment variable SLURM_LOCALID: \"x\""},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        setenv("SLURMD_NODENAME", wrong[i].node, 1);
        setenv("SLURM_LOCALID", wrong[i].localid, 1);
        CHECK(slurm_cluster(nodes, tpn, 7, 5, wrong[i].dist, &cfg, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), wrong[i].error);
    }
    unsetenv("SLURMD_NODENAME");
    unsetenv("SLURM_LOCALID");

    /* What rill cannot lay out is an error naming SLURM_DISTRIBUTION, never block's hosts. */
    unsetenv("SLURM_DIST_PLANESIZE");
    static const struct {
        const char *dist, *error;
    } errors[] = {
        {"arbitrary", "SLURM_DISTRIBUTION=\"arbitrary\" is not supported: which node each task "
                      "runs on comes from SLURM_HOSTFILE"},
        {"zigzag", "Invalid value for environment variable SLURM_DISTRIBUTION: \"zigzag\" (rill "
                   "lays out block, cyclic and plane=<size>"},
        {"cyclicx", "SLURM_DISTRIBUTION: \"cyclicx\""},
        {"plane", "SLURM_DISTRIBUTION=\"plane\" has no plane size: SLURM_DIST_PLANESIZE is unset"},
        {"plane=0", "SLURM_DISTRIBUTION: \"plane=0\" (the plane size is not a positive integer)"},
        {"plane=x", "SLURM_DISTRIBUTION: \"plane=x\""},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        CHECK(slurm_cluster(nodes, tpn, 7, 5, errors[i].dist, &cfg, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), errors[i].error);
    }
    rill_task_config_clear(&cfg);
    clean_env();
    rill_status_free(s);
}

static void test_mpi(void)
{
    clean_env();
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    CHECK(!rill_task_config_from_mpi(-1, 0, &cfg, s));

    /* Open MPI on one node: every rank on 127.0.0.1, ports base + rank. */
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
    CHECK(rill_task_config_from_mpi(-1, 0, &cfg, s));
    if (CHECK(rill_status_ok(s))) {
        CHECK_EQ_STR(cfg.source, "mpi");
        CHECK_EQ_STR(cfg.job_name, "worker");
        CHECK_EQ_INT(cfg.task_index, 1);
        CHECK_EQ_STR(cluster_str(&cfg), "{\"ps\": [\"127.0.0.1:2222\"], \"worker\": "
                                        "[\"127.0.0.1:2223\", \"127.0.0.1:2224\"]}");
    }
    /* host:slots and IPv6 entries. */
    setenv("RILL_HOSTS", "a:2,[::1]", 1);
    CHECK(rill_task_config_from_mpi(-1, 0, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cluster_str(&cfg), "{\"ps\": [\"a:2222\"], \"worker\": [\"a:2223\", "
                                    "\"[::1]:2224\"]}");
    setenv("RILL_HOSTS", "a,b,c", 1);
    CHECK(rill_task_config_from_mpi(0, 7000, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cluster_str(&cfg), "{\"worker\": [\"a:7000\", \"b:7001\", \"c:7002\"]}");
    CHECK_EQ_INT(cfg.task_index, 2);

    /* MPICH / PMI. */
    clean_env();
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "2", 1);
    setenv("MPI_LOCALRANKID", "0", 1);
    CHECK(rill_task_config_from_mpi(-1, 0, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.job_name, "ps");
    CHECK_EQ_INT(cfg.task_index, 0);

    static const struct {
        const char *var, *value, *error;
    } errors[] = {
        {"PMI_RANK", "2", "PMI_RANK: \"2\" is not below PMI_SIZE=2"},
        {"PMI_RANK", "1x", "Invalid value for environment variable PMI_RANK: \"1x\""},
        {"PMI_SIZE", NULL, "PMI_RANK is set (\"0\") but PMI_SIZE is not"},
        {"PMI_SIZE", "", "Invalid value for environment variable PMI_SIZE: \"\""},
        {"MPI_LOCALRANKID", "5", "MPI_LOCALRANKID: \"5\" (expected an integer in 0..1)"},
        {"RILL_HOSTS", "a", "RILL_HOSTS: \"a\" (PMI_SIZE=2): it lists fewer ranks"},
        {"RILL_HOSTS", "a:3", "it lists more ranks than the world size"},
        {"RILL_HOSTS", "a:0,b", "slot count is not a positive number"},
        {"RILL_HOSTS", "a:x,b", "slot count is not a positive number"},
        {"RILL_HOSTS", "a,,b", "an entry is empty"},
        {"RILL_HOSTS", "[::1,b", "no ']'"},
        {"RILL_HOSTS", "a!,b", "Invalid host \"a!\" for rank 0 from RILL_HOSTS"},
        {"RILL_NUM_PS", "2", "2 parameter-server ranks (RILL_NUM_PS) leave no worker among the 2"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        setenv("PMI_RANK", "0", 1);
        setenv("PMI_SIZE", "2", 1);
        setenv("MPI_LOCALRANKID", "0", 1);
        unsetenv("RILL_HOSTS");
        unsetenv("RILL_NUM_PS");
        if (errors[i].value)
            setenv(errors[i].var, errors[i].value, 1);
        else
            unsetenv(errors[i].var);
        rill_status_clear(s);
        CHECK(rill_task_config_from_mpi(-1, 0, &cfg, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), errors[i].error);
    }
    rill_task_config_clear(&cfg);
    clean_env();
    rill_status_free(s);
}

static void test_resolve_order(void)
{
    clean_env();
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    rill_launch_options opts = RILL_LAUNCH_OPTIONS_INIT;
    CHECK(!rill_task_config_resolve(&opts, &cfg, s));
    CHECK(!rill_task_config_resolve(NULL, &cfg, s));
    CHECK(rill_status_ok(s) && cfg.cluster == NULL);

    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "2", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.source, "mpi");
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "2", 1);
    setenv("SLURM_JOB_NODELIST", "n[1-2]", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.source, "slurm");
    CHECK_EQ_STR(cfg.job_name, "ps");
    /* mpirun in an sbatch script: the inherited SLURM_PROCID=0 does not make this rank ps 0
     * (Open MPI's variables, or Hydra's MPI_LOCALRANKID, say mpirun started it). */
    setenv("MPI_LOCALRANKID", "1", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.source, "mpi");
    CHECK_EQ_STR(cfg.job_name, "worker");
    unsetenv("MPI_LOCALRANKID");
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.source, "mpi");
    CHECK_EQ_INT(cfg.task_index, 1);
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    setenv("TF_CONFIG", "{\"cluster\": {\"worker\": [\"w:1\"]}}", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.source, "TF_CONFIG");
    opts.worker_hosts = "f:1,f:2";
    opts.job_name = "worker";
    opts.task_index = 1;
    CHECK(rill_task_config_resolve(&opts, &cfg, s) && rill_status_ok(s));
    CHECK_EQ_STR(cfg.source, "flags");
    CHECK_EQ_INT(cfg.task_index, 1);
    /* A malformed source present is final: no falling through to the next one. */
    opts.worker_hosts = NULL;
    setenv("TF_CONFIG", "{\"cluster\": ", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "Invalid TF_CONFIG");
    CHECK_EQ_STR(cfg.source, "flags"); /* unchanged */
    unsetenv("TF_CONFIG");
    setenv("SLURM_NTASKS", "x", 1);
    CHECK(rill_task_config_resolve(&opts, &cfg, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "SLURM_NTASKS: \"x\"");
    rill_task_config_clear(&cfg);
    clean_env();
    rill_status_free(s);
}

int main(void)
{
    test_flags();
    test_tf_config();
    test_hostlists();
    test_slurm();
    test_slurm_distribution();
    test_mpi();
    test_resolve_order();
    TEST_MAIN_END();
}
