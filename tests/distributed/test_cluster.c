/* test_cluster.c - cluster specs and task addresses (rill/cluster.h): address validation tables
 * with their error texts, building clusters densely, sparsely and from the seed's flags, the
 * lookups and their NOT_FOUND texts, copies, and the JSON form.
 */
#include "../test.h"

#include <rill/cluster.h>

#include <stdlib.h>

static void test_addresses(void)
{
    static const struct {
        const char *addr;
        bool port0;
        const char *host; /* NULL: rejected */
        int port;
        const char *error;
    } cases[] = {
        {"localhost:2222", false, "localhost", 2222, NULL},
        {"122.225.220.136:2222", false, "122.225.220.136", 2222, NULL},
        {"a-b.c-d.example:1", false, "a-b.c-d.example", 1, NULL},
        {"h:65535", false, "h", 65535, NULL},
        {"[::1]:2222", false, "::1", 2222, NULL},
        {"[fe80::1:2]:80", false, "fe80::1:2", 80, NULL},
        {"localhost:0", true, "localhost", 0, NULL},
        {"localhost:0", false, NULL, 0, "Could not parse port from \"localhost:0\""},
        {"localhost:x", true, NULL, 0,
         "Could not parse port for local server from \"localhost:x\""},
        {"h:65536", false, NULL, 0, "Could not parse port from \"h:65536\""},
        {"h:", false, NULL, 0, "Could not parse port from \"h:\""},
        {"h", false, NULL, 0, "Could not parse port from \"h\""},
        {"h:+22", false, NULL, 0, "Could not parse port from"},
        {"h:022222", false, NULL, 0, "Could not parse port from"},
        {"h: 22", false, NULL, 0, "Could not parse port from"},
        {":22", false, NULL, 0, "Could not parse host from \":22\": the host is empty"},
        {"-h:22", false, NULL, 0, "starts with '-'"},
        {"h-:22", false, NULL, 0, "ends with '-'"},
        {"a..b:22", false, NULL, 0, "is empty"},
        {"h_x:22", false, NULL, 0, "only letters, digits, '-' and '.'"},
        {"h x:22", false, NULL, 0, "only letters"},
        {"::1:22", false, NULL, 0, "must be in brackets"},
        {"[::1]", false, NULL, 0, "written \"[addr]:port\""},
        {"[zz]:22", false, NULL, 0, "not an IPv6 address"},
        {"[]:22", false, NULL, 0, "not an IPv6 address"},
        {"", false, NULL, 0, "Could not parse port from \"\""},
    };
    rill_status *s = rill_status_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char host[RILL_HOST_MAX] = "";
        int port = -1;
        rill_status_clear(s);
        bool ok = rill_address_parse(cases[i].addr, cases[i].port0, host, sizeof host, &port, s);
        if (!CHECK(ok == (cases[i].host != NULL))) {
            fprintf(stderr, "  address \"%s\": %s\n", cases[i].addr, rill_status_message(s));
            continue;
        }
        if (ok) {
            CHECK_EQ_STR(host, cases[i].host);
            CHECK_EQ_INT(port, cases[i].port);
        } else {
            CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
            CHECK_STR_CONTAINS(rill_status_message(s), cases[i].error);
        }
    }
    /* 63-character labels pass, 64 do not; 253 characters in all pass, 254 do not. */
    char addr[400];
    memset(addr, 'a', 63);
    strcpy(addr + 63, ":1");
    CHECK(rill_address_parse(addr, false, NULL, 0, NULL, s));
    memset(addr, 'a', 64);
    strcpy(addr + 64, ":1");
    CHECK(!rill_address_parse(addr, false, NULL, 0, NULL, s));
    for (int i = 0; i < 254; i++) addr[i] = (i % 2) ? '.' : 'a';
    strcpy(addr + 253, ":1");
    CHECK(rill_address_parse(addr, false, NULL, 0, NULL, s));
    addr[253] = 'a';
    strcpy(addr + 254, ":1");
    CHECK(!rill_address_parse(addr, false, NULL, 0, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "longer than 253");
    rill_status_free(s);
}

static void test_build_and_lookup(void)
{
    rill_status *s = rill_status_new();
    rill_cluster_spec *c = rill_cluster_spec_new();
    const char *workers[] = {"w0:2222", "w1:2222"};
    const char *ps[] = {"p0:2222"};
    CHECK(rill_cluster_spec_add_job(c, "worker", workers, 2, s));
    CHECK(rill_cluster_spec_add_job(c, "ps", ps, 1, s));
    CHECK_EQ_INT(rill_cluster_spec_num_jobs(c), 2);
    CHECK_EQ_STR(rill_cluster_spec_job_name(c, 0), "ps"); /* name order */
    CHECK_EQ_STR(rill_cluster_spec_job_name(c, 1), "worker");
    CHECK(rill_cluster_spec_job_name(c, 2) == NULL);
    CHECK_EQ_INT(rill_cluster_spec_num_tasks(c, "worker", s), 2);
    CHECK_EQ_STR(rill_cluster_spec_task_address(c, "worker", 1, s), "w1:2222");
    CHECK(rill_cluster_spec_has_job(c, "ps") && !rill_cluster_spec_has_job(c, "chief"));

    CHECK(rill_cluster_spec_task_address(c, "worker", 2, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_EQ_STR(rill_status_message(s), "Task 2 was not defined in job \"worker\"");
    CHECK(rill_cluster_spec_task_address(c, "chief", 0, s) == NULL);
    CHECK_EQ_STR(rill_status_message(s), "Job \"chief\" was not defined in cluster");
    CHECK_EQ_INT(rill_cluster_spec_num_tasks(c, "chief", s), -1);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);

    /* Errors leave the cluster as it was. */
    CHECK(!rill_cluster_spec_add_job(c, "ps", ps, 1, s));
    CHECK_EQ_STR(rill_status_message(s), "Job \"ps\" is already defined in cluster");
    const char *bad[] = {"ok:1", "bad"};
    CHECK(!rill_cluster_spec_add_job(c, "eval", bad, 2, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "Invalid address for task 1 of job \"eval\"");
    CHECK(!rill_cluster_spec_has_job(c, "eval"));
    CHECK(!rill_cluster_spec_add_job(c, "9x", ps, 1, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "Invalid job name \"9x\"");
    CHECK(!rill_cluster_spec_add_job(c, "a-b", ps, 1, s));
    CHECK(!rill_cluster_spec_add_job(c, "", ps, 1, s));
    CHECK_EQ_INT(rill_cluster_spec_num_jobs(c), 2);

    /* Sparse tasks, TF's dict form. */
    CHECK(rill_cluster_spec_add_task(c, "chief", 3, "c3:1", s));
    CHECK(rill_cluster_spec_add_task(c, "chief", 1, "c1:1", s));
    CHECK(!rill_cluster_spec_add_task(c, "chief", 1, "c1:2", s));
    CHECK_EQ_STR(rill_status_message(s), "Task 1 is already defined in job \"chief\"");
    CHECK(!rill_cluster_spec_add_task(c, "chief", -1, "c1:2", s));
    CHECK_EQ_INT(rill_cluster_spec_num_tasks(c, "chief", s), 2);
    CHECK_EQ_INT(rill_cluster_spec_task_index(c, "chief", 0), 1);
    CHECK_EQ_INT(rill_cluster_spec_task_index(c, "chief", 1), 3);
    CHECK_EQ_INT(rill_cluster_spec_task_index(c, "chief", 2), -1);
    CHECK(rill_cluster_spec_task_address(c, "chief", 0, s) == NULL);
    CHECK_EQ_STR(rill_cluster_spec_task_address(c, "chief", 3, s), "c3:1");

    char buf[256];
    size_t n = rill_cluster_spec_to_string(c, buf, sizeof buf);
    const char *want = "{\"chief\": {\"1\": \"c1:1\", \"3\": \"c3:1\"}, \"ps\": [\"p0:2222\"], "
                       "\"worker\": [\"w0:2222\", \"w1:2222\"]}";
    CHECK_EQ_STR(buf, want);
    CHECK_EQ_INT(n, strlen(want));
    /* Cut to fit, snprintf-style. */
    char small[8];
    CHECK_EQ_INT(rill_cluster_spec_to_string(c, small, sizeof small), strlen(want));
    CHECK_EQ_STR(small, "{\"chief");
    CHECK_EQ_INT(rill_cluster_spec_to_string(c, NULL, 0), strlen(want));

    rill_cluster_spec *d = rill_cluster_spec_copy(c);
    rill_cluster_spec_free(c);
    rill_cluster_spec_to_string(d, buf, sizeof buf);
    CHECK_EQ_STR(buf, want);
    rill_cluster_spec_free(d);
    rill_cluster_spec_free(NULL);
    CHECK(rill_cluster_spec_copy(NULL) == NULL);

    rill_cluster_spec *e = rill_cluster_spec_new();
    CHECK(rill_cluster_spec_add_job(e, "empty", NULL, 0, s));
    rill_cluster_spec_to_string(e, buf, sizeof buf);
    CHECK_EQ_STR(buf, "{\"empty\": []}");
    rill_cluster_spec_free(e);

    rill_cluster_spec *l = rill_cluster_spec_local();
    CHECK_EQ_STR(rill_cluster_spec_task_address(l, "local", 0, s), "localhost:0");
    rill_cluster_spec_free(l);
    rill_status_free(s);
}

static void test_from_hosts(void)
{
    rill_status *s = rill_status_new();
    char buf[256];
    rill_cluster_spec *c =
        rill_cluster_spec_from_hosts("122.225.220.136:2222", "122.225.220.136:2223,[::1]:2224", s);
    if (CHECK(c)) {
        rill_cluster_spec_to_string(c, buf, sizeof buf);
        CHECK_EQ_STR(buf, "{\"ps\": [\"122.225.220.136:2222\"], \"worker\": "
                          "[\"122.225.220.136:2223\", \"[::1]:2224\"]}");
    }
    rill_cluster_spec_free(c);
    c = rill_cluster_spec_from_hosts("", "w:1", s);
    if (CHECK(c)) {
        CHECK_EQ_INT(rill_cluster_spec_num_jobs(c), 1);
        CHECK(!rill_cluster_spec_has_job(c, "ps"));
    }
    rill_cluster_spec_free(c);
    c = rill_cluster_spec_from_hosts(NULL, NULL, s);
    if (CHECK(c)) CHECK_EQ_INT(rill_cluster_spec_num_jobs(c), 0);
    rill_cluster_spec_free(c);
    CHECK(rill_cluster_spec_from_hosts("a:1,,b:2", "", s) == NULL);
    CHECK_EQ_STR(rill_status_message(s), "Invalid --ps_hosts \"a:1,,b:2\": entry 1 is empty");
    CHECK(rill_cluster_spec_from_hosts("a:1", "w:1,", s) == NULL);
    CHECK_EQ_STR(rill_status_message(s), "Invalid --worker_hosts \"w:1,\": entry 1 is empty");
    CHECK(rill_cluster_spec_from_hosts("a:1", "w:99999", s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Invalid --worker_hosts \"w:99999\": entry 0: Could not parse port from "
                       "\"w:99999\"");
    rill_status_free(s);
}

int main(void)
{
    test_addresses();
    test_build_and_lookup();
    test_from_hosts();
    TEST_MAIN_END();
}
