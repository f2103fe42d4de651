/* test_device_name.c - rill/device_name.h against the TF 1.x behaviour notes (section 1): every
 * example there, wildcards, legacy forms, parse -> str round trips, a table of malformed specs
 * with their exact error text, the scope and colocation merges with their error texts, matching,
 * and a fuzz loop. The fuzz loop checks each input against a second, independent parser written
 * here (split on '/', then match each piece whole), and checks that anything accepted prints to a
 * string that parses back to the same name. Fuzz inputs live in exactly sized heap blocks so
 * AddressSanitizer sees any read past the terminator.
 */
#include "../test.h"

#include <rill/device_name.h>

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

/* --- helpers --- */

/* Parses spec and returns its str form in a static buffer, or "<error>" when it fails. */
static const char *canon(const char *spec)
{
    static char buf[RILL_DEVICE_NAME_MAX];
    rill_device_name n;
    if (!rill_device_name_parse(spec, &n, NULL)) return "<error>";
    return rill_device_name_str(&n, buf, sizeof buf);
}

static rill_device_name parsed(const char *spec)
{
    rill_device_name n;
    memset(&n, 0, sizeof n);
    if (!rill_device_name_parse(spec, &n, NULL)) {
        fprintf(stderr, "helper: '%s' did not parse\n", spec);
        memset(&n, 0, sizeof n);
    }
    return n;
}

static bool same_name(const rill_device_name *a, const rill_device_name *b)
{
    /* Parsed names have every unset field zeroed, so bytes compare. */
    return memcmp(a, b, sizeof *a) == 0;
}

/* --- 1.1 full names and short forms --- */

static void test_full_and_short_forms(void)
{
    rill_device_name n;
    rill_status *s = rill_status_new();

    CHECK(rill_device_name_parse("/job:localhost/replica:0/task:0/device:CPU:0", &n, s));
    CHECK(rill_status_ok(s));
    CHECK(n.has_job && n.has_replica && n.has_task && n.has_type && n.has_id);
    CHECK_EQ_STR(n.job, "localhost");
    CHECK_EQ_INT(n.replica, 0);
    CHECK_EQ_INT(n.task, 0);
    CHECK_EQ_STR(n.type, "CPU");
    CHECK_EQ_INT(n.id, 0);
    CHECK(rill_device_name_is_fully_specified(&n));

    CHECK_EQ_STR(canon("/job:localhost/replica:0/task:0/device:GPU:0"),
                 "/job:localhost/replica:0/task:0/device:GPU:0");
    CHECK_EQ_STR(canon("/job:localhost/replica:0/task:0/device:CPU:0"),
                 "/job:localhost/replica:0/task:0/device:CPU:0");
    /* gRPC server prefix. */
    CHECK_EQ_STR(canon("/job:worker/replica:0/task:3/device:GPU:1"),
                 "/job:worker/replica:0/task:3/device:GPU:1");
    /* Legacy full form: lower-case type, no "device:". */
    CHECK_EQ_STR(canon("/job:localhost/replica:0/task:0/cpu:0"),
                 "/job:localhost/replica:0/task:0/device:CPU:0");
    CHECK_EQ_STR(canon("/job:localhost/replica:0/task:0/gpu:1"),
                 "/job:localhost/replica:0/task:0/device:GPU:1");
    /* Local names and short user forms. */
    CHECK_EQ_STR(canon("/device:CPU:0"), "/device:CPU:0");
    CHECK_EQ_STR(canon("/cpu:0"), "/device:CPU:0");
    CHECK_EQ_STR(canon("/gpu:1"), "/device:GPU:1");
    CHECK_EQ_STR(canon("/CPU:0"), "/device:CPU:0");
    CHECK_EQ_STR(canon("/GPU:1"), "/device:GPU:1");
    n = parsed("/gpu:1");
    CHECK_EQ_STR(n.type, "GPU");
    CHECK(!n.has_job && !n.has_replica && !n.has_task && n.has_type && n.has_id);

    /* The legacy local name "CPU:0" that the device manager also files devices under. */
    CHECK(rill_device_name_parse_local("CPU:0", &n, s));
    CHECK(n.has_type && n.has_id && !n.has_job && !n.has_replica && !n.has_task);
    CHECK_EQ_STR(n.type, "CPU");
    CHECK_EQ_INT(n.id, 0);
    CHECK(rill_device_name_parse_local("GPU:1", &n, s));
    CHECK_EQ_STR(n.type, "GPU");
    CHECK_EQ_INT(n.id, 1);
    CHECK(rill_device_name_parse_local("XLA_GPU:12", &n, s));
    CHECK_EQ_STR(n.type, "XLA_GPU");
    CHECK_EQ_INT(n.id, 12);

    char buf[RILL_DEVICE_NAME_MAX];
    CHECK_EQ_STR(rill_device_full_name("localhost", 0, 0, "CPU", 0, buf, sizeof buf),
                 "/job:localhost/replica:0/task:0/device:CPU:0");
    CHECK_EQ_STR(rill_device_full_name("ps", 0, 2, "GPU", 3, buf, sizeof buf),
                 "/job:ps/replica:0/task:2/device:GPU:3");
    n = parsed(buf);
    CHECK(rill_device_name_is_fully_specified(&n));
    CHECK_EQ_STR(n.job, "ps");
    CHECK_EQ_INT(n.task, 2);
    CHECK_EQ_INT(n.id, 3);
    rill_status_free(s);
}

/* --- 1.2 parser rules --- */

static void test_parser_rules(void)
{
    rill_device_name n;
    rill_status *s = rill_status_new();

    /* "" and "/" are valid and empty; NULL means "". */
    CHECK(rill_device_name_parse("", &n, s));
    CHECK(!n.has_job && !n.has_replica && !n.has_task && !n.has_type && !n.has_id);
    CHECK(rill_device_name_parse("/", &n, s));
    CHECK(!n.has_job && !n.has_replica && !n.has_task && !n.has_type && !n.has_id);
    CHECK(rill_device_name_parse(NULL, &n, s));
    CHECK(!n.has_job && !n.has_type);
    CHECK_EQ_STR(canon(""), "");
    CHECK_EQ_STR(canon("/"), "");
    CHECK(rill_status_ok(s));

    /* Any order; printed in the fixed order. */
    CHECK_EQ_STR(canon("/device:GPU:0/task:1/job:w"), "/job:w/task:1/device:GPU:0");
    CHECK_EQ_STR(canon("/task:2/replica:1/job:ps"), "/job:ps/replica:1/task:2");
    CHECK_EQ_STR(canon("/gpu:0/job:ps"), "/job:ps/device:GPU:0");
    /* A repeated component overwrites, a wildcard included. */
    CHECK_EQ_STR(canon("/job:a/job:b"), "/job:b");
    CHECK_EQ_STR(canon("/task:1/task:7"), "/task:7");
    CHECK_EQ_STR(canon("/task:1/task:*"), "");
    CHECK_EQ_STR(canon("/job:ps/job:*"), "");
    CHECK_EQ_STR(canon("/device:GPU:1/device:CPU:0"), "/device:CPU:0");
    CHECK_EQ_STR(canon("/device:GPU:1/device:CPU"), "/device:CPU:*"); /* whole component */
    CHECK_EQ_STR(canon("/device:GPU:1/cpu:2"), "/device:CPU:2");
    CHECK_EQ_STR(canon("/cpu:0/device:XLA_CPU:1"), "/device:XLA_CPU:1");

    /* Wildcards leave fields unset. */
    n = parsed("/job:*");
    CHECK(!n.has_job);
    CHECK_EQ_STR(n.job, "");
    n = parsed("/replica:*/task:*");
    CHECK(!n.has_replica && !n.has_task);
    n = parsed("/device:GPU:*");
    CHECK(n.has_type && !n.has_id);
    CHECK_EQ_STR(n.type, "GPU");
    CHECK_EQ_STR(canon("/device:GPU:*"), "/device:GPU:*");
    n = parsed("/device:*:1");
    CHECK(!n.has_type && n.has_id);
    CHECK_EQ_INT(n.id, 1);
    CHECK_EQ_STR(canon("/device:*:1"), "/device:*:1");
    CHECK_EQ_STR(canon("/device:*"), "");
    CHECK_EQ_STR(canon("/device:*:*"), "");
    CHECK_EQ_STR(canon("/cpu:*"), "/device:CPU:*");
    CHECK_EQ_STR(canon("/GPU:*"), "/device:GPU:*");
    CHECK_EQ_STR(canon("/job:*/replica:*/task:*/device:*:*"), "");

    /* No id: type set, id unset, printed as "*". */
    n = parsed("/device:GPU");
    CHECK(n.has_type && !n.has_id);
    CHECK_EQ_STR(canon("/device:GPU"), "/device:GPU:*");
    CHECK_EQ_STR(canon("/job:ps/device:GPU"), "/job:ps/device:GPU:*");
    CHECK_EQ_STR(canon("/job:ps/device:GPU:*"), "/job:ps/device:GPU:*");

    /* Job and type names. */
    CHECK_EQ_STR(canon("/job:ps/task:0"), "/job:ps/task:0");
    CHECK_EQ_STR(canon("/job:w_1/task:0"), "/job:w_1/task:0");
    CHECK_EQ_STR(canon("/job:Worker2"), "/job:Worker2");
    CHECK_EQ_STR(canon("/device:XLA_GPU:0"), "/device:XLA_GPU:0");
    /* Case of the type is kept ... */
    n = parsed("/device:gpu:0");
    CHECK_EQ_STR(n.type, "gpu");
    CHECK_EQ_STR(canon("/device:gpu:0"), "/device:gpu:0");
    /* ... and type comparison is case-sensitive. */
    rill_device_name lower = parsed("/device:gpu:0"), upper = parsed("/device:GPU:0");
    CHECK(!rill_device_name_is_specification(&lower, &upper));
    CHECK(!rill_device_name_is_specification(&upper, &lower));

    /* Numbers: leading zeros are read as decimal; the full int range. */
    CHECK_EQ_STR(canon("/task:007"), "/task:7");
    CHECK_EQ_STR(canon("/replica:2147483647"), "/replica:2147483647");
    CHECK_EQ_STR(canon("/device:GPU:2147483647"), "/device:GPU:2147483647");
    CHECK_EQ_STR(canon("/task:0000000000000000000001"), "/task:1");

    /* Name length limits: 63 characters for a job, 31 for a type. */
    char name[64], spec[128], want[200];
    memset(name, 'j', 63);
    name[63] = '\0';
    snprintf(spec, sizeof spec, "/job:%s", name);
    n = parsed(spec);
    CHECK(n.has_job);
    CHECK_EQ_INT(strlen(n.job), 63);
    CHECK_EQ_STR(canon(spec), spec);
    snprintf(spec, sizeof spec, "/job:%sj", name);
    CHECK(!rill_device_name_parse(spec, &n, NULL));
    memset(name, 'T', 31);
    name[31] = '\0';
    snprintf(spec, sizeof spec, "/device:%s:0", name);
    CHECK_EQ_STR(canon(spec), spec);
    snprintf(spec, sizeof spec, "/device:%sT:0", name);
    CHECK(!rill_device_name_parse(spec, &n, NULL));

    /* ParseLocalName. */
    CHECK(rill_device_name_parse_local("GPU:0", &n, s));
    CHECK_EQ_STR(n.type, "GPU");
    CHECK(rill_device_name_parse_local("gpu:3", &n, s));
    CHECK_EQ_STR(n.type, "gpu");
    CHECK_EQ_INT(n.id, 3);
    CHECK(rill_device_name_parse_local("CPU:1", NULL, s));
    CHECK(rill_status_ok(s));
    const char *bad_local[] = {
        "",       "GPU",    "GPU:",   "GPU:*",        ":0",      "/GPU:0", "GPU:0/",
        "GPU:-1", "GPU:0x", "1GPU:0", "device:GPU:0", "GPU:0:0", "GP-U:0", "GPU:2147483648"};
    for (size_t i = 0; i < sizeof bad_local / sizeof bad_local[0]; i++) {
        rill_device_name keep = parsed("/job:keep/device:CPU:9");
        n = keep;
        rill_status_clear(s);
        if (!CHECK(!rill_device_name_parse_local(bad_local[i], &n, s)))
            fprintf(stderr, "  local spec '%s' was accepted\n", bad_local[i]);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        snprintf(want, sizeof want, "Malformed device specification '%s'", bad_local[i]);
        CHECK_EQ_STR(rill_status_message(s), want);
        CHECK(same_name(&n, &keep));
    }
    CHECK(!rill_device_name_parse_local(NULL, &n, s));
    CHECK_EQ_STR(rill_status_message(s), "Malformed device specification ''");
    rill_status_free(s);
}

/* --- malformed specs --- */

static void test_malformed_table(void)
{
    static const char *const bad[] = {
        "/job:ps-1",               /* '-' in a job name */
        "/job:my-job/task:0",      /* same, with more after it */
        "/task:1x",                /* trailing junk after a number */
        "/device:GPU:0x",          /* same, on the id */
        "/replica:0a/task:0",      /* same, mid-string */
        "/foo:1",                  /* unknown component */
        "/job:ps/foo:1",           /* unknown component after a good one */
        "/task:-1",                /* negative */
        "/replica:-0",             /* negative zero is still a sign */
        "/device:GPU:-1",          /* negative id */
        "/cpu:-1",                 /* negative legacy id */
        "/task:+1",                /* explicit sign */
        "/task:2147483648",        /* INT_MAX + 1 */
        "/replica:99999999999999", /* far past INT_MAX */
        "/device:GPU:4294967296",  /* wraps a 32-bit unsigned */
        "/job:",                   /* empty job */
        "/task:",                  /* empty number */
        "/device:",                /* empty type */
        "/device:GPU:",            /* empty id */
        "/cpu:",                   /* empty legacy id */
        "/job:1ps",                /* job must start with a letter */
        "/job:_ps",                /* '_' is not a letter */
        "/device:1GPU:0",          /* type must start with a letter */
        "/device:G-PU:0",          /* '-' in a type */
        "/job:ps/",                /* trailing '/' */
        "//job:ps",                /* empty component */
        "//",                      /* only empty components */
        "job:ps",                  /* no leading '/' */
        "cpu:0",                   /* local form is not a full name */
        "/cpu",                    /* legacy form needs ":N" */
        "/gpu",                    /* same */
        "/Cpu:0",                  /* legacy form only in all lower or all upper case */
        "/Job:ps",                 /* prefixes are case-sensitive */
        "/DEVICE:GPU:0",           /* same */
        "/job :ps",                /* space */
        " /job:ps",                /* leading space */
        "/job:ps ",                /* trailing space */
        "/job:ps:1",               /* a job ends at '/' */
        "/device:GPU:0:1",         /* extra id */
        "/device:GPU::0",          /* doubled ':' */
        "/job:**",                 /* wildcard then junk */
        "/task:*1",                /* same */
        "/device:GPU*",            /* '*' glued to a type */
        "/job:p*s",                /* '*' inside a name */
        "/task:1.0",               /* not an integer */
        "/task:0x1",               /* hex */
        "/job:ps\t",               /* control character */
        "/job:\xc3\xa9t\xc3\xa9",  /* non-ASCII letters */
        "/device:GPU:\xd9\xa1",    /* a non-ASCII digit */
        "\x80",                    /* a lone high byte */
        "/job:ps/task:0/device:CPU:0/",
        "/job:localhost/replica:0/task:0/device:CPU:0 ",
        "/job:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 64 chars */
        "/device:TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT:0",                            /* 32 chars */
        "/device:GPU:0/",
        "/replica",
        "/replica0",
        "/",
    };
    rill_status *s = rill_status_new();
    char want[512];
    int rejected = 0;
    /* The last entry "/" is valid; it guards the loop against a table that only holds errors. */
    size_t count = sizeof bad / sizeof bad[0] - 1;
    CHECK(count >= 30);
    for (size_t i = 0; i < count; i++) {
        rill_device_name n = parsed("/job:keep/replica:1/task:2/device:TPU:3"), keep = n;
        rill_status_clear(s);
        bool ok = rill_device_name_parse(bad[i], &n, s);
        if (!CHECK(!ok)) {
            fprintf(stderr, "  spec '%s' was accepted\n", bad[i]);
            continue;
        }
        rejected++;
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        snprintf(want, sizeof want, "Malformed device specification '%s'", bad[i]);
        CHECK_EQ_STR(rill_status_message(s), want);
        CHECK(same_name(&n, &keep));                        /* a failed parse leaves *out alone */
        CHECK(!rill_device_name_parse(bad[i], NULL, NULL)); /* NULL out and status are fine */
    }
    CHECK_EQ_INT(rejected, (int)count);
    CHECK(rill_device_name_parse(bad[count], NULL, s));
    rill_status_free(s);
}

/* --- printing --- */

static void test_str(void)
{
    rill_device_name n;
    memset(&n, 0, sizeof n);
    char buf[RILL_DEVICE_NAME_MAX];
    CHECK_EQ_STR(rill_device_name_str(&n, buf, sizeof buf), "");

    /* Hand-built: only the flags count, whatever the other fields hold. */
    n.replica = 5;
    strcpy(n.job, "ignored");
    n.has_task = true;
    n.task = 4;
    CHECK_EQ_STR(rill_device_name_str(&n, buf, sizeof buf), "/task:4");
    n.has_id = true;
    n.id = 2;
    CHECK_EQ_STR(rill_device_name_str(&n, buf, sizeof buf), "/task:4/device:*:2");

    /* The longest name fits RILL_DEVICE_NAME_MAX. */
    memset(&n, 0, sizeof n);
    n.has_job = n.has_replica = n.has_task = n.has_type = n.has_id = true;
    memset(n.job, 'j', sizeof n.job - 1);
    memset(n.type, 'T', sizeof n.type - 1);
    n.replica = n.task = n.id = INT_MIN; /* the widest %d */
    rill_device_name_str(&n, buf, sizeof buf);
    CHECK_EQ_INT(strlen(buf), 5 + 63 + 9 + 11 + 6 + 11 + 8 + 31 + 1 + 11);
    CHECK(strlen(buf) < RILL_DEVICE_NAME_MAX);

    /* Fields that fill their array with no NUL are read as the array less its last byte. */
    memset(n.job, 'k', sizeof n.job);
    memset(n.type, 'U', sizeof n.type);
    n.replica = n.task = n.id = 0;
    rill_device_name_str(&n, buf, sizeof buf);
    char want[RILL_DEVICE_NAME_MAX];
    snprintf(want, sizeof want, "/job:%.63s/replica:0/task:0/device:%.31s:0", n.job, n.type);
    CHECK_EQ_STR(buf, want);

    /* Small buffers are cut, always terminated; len 0 writes nothing. */
    n = parsed("/job:worker/task:1/device:GPU:0");
    char small[8];
    memset(small, 'x', sizeof small);
    CHECK_EQ_STR(rill_device_name_str(&n, small, sizeof small), "/job:wo");
    CHECK_EQ_STR(rill_device_name_str(&n, small, 1), "");
    small[0] = 'x';
    CHECK(rill_device_name_str(&n, small, 0) == small);
    CHECK_EQ_INT(small[0], 'x');
    CHECK_EQ_STR(rill_device_full_name("localhost", 0, 0, "CPU", 0, small, sizeof small),
                 "/job:lo");
    CHECK_EQ_STR(rill_device_full_name(NULL, 1, 2, NULL, 3, buf, sizeof buf),
                 "/job:/replica:1/task:2/device::3");

    /* Round trips: str of a parse parses to the same name and prints the same string. */
    static const char *const specs[] = {
        "",
        "/job:ps",
        "/job:worker/replica:0/task:1/device:CPU:0",
        "/job:ps/device:GPU:*",
        "/replica:3",
        "/task:9/device:*:4",
        "/cpu:7",
        "/GPU:*",
        "/device:TPU_SYSTEM:0",
        "/job:a_b/task:2147483647",
        "/device:gpu:1/job:x",
        "/job:*/device:CPU",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        rill_device_name a = parsed(specs[i]), b;
        rill_device_name_str(&a, buf, sizeof buf);
        if (!CHECK(rill_device_name_parse(buf, &b, NULL))) continue;
        CHECK(same_name(&a, &b));
        char again[RILL_DEVICE_NAME_MAX];
        CHECK_EQ_STR(rill_device_name_str(&b, again, sizeof again), buf);
    }
}

/* --- 1.4 nested scopes --- */

static void test_scope_merge(void)
{
    char buf[RILL_DEVICE_NAME_MAX];
    rill_device_name none = parsed("");
    rill_device_name s1 = parsed("/device:GPU:0");
    rill_device_name s2 = parsed("/job:worker");
    rill_device_name s3 = parsed("/device:CPU:0");
    rill_device_name s4 = parsed("/job:ps");

    /* An op sees the scopes from the outside in: each level's fields win over the outer ones. */
    rill_device_name d = rill_device_name_merge_scope(&none, &s1);
    CHECK_EQ_STR(rill_device_name_str(&d, buf, sizeof buf), "/device:GPU:0");
    d = rill_device_name_merge_scope(&d, &s2);
    CHECK_EQ_STR(rill_device_name_str(&d, buf, sizeof buf), "/job:worker/device:GPU:0");
    d = rill_device_name_merge_scope(&d, &s3);
    CHECK_EQ_STR(rill_device_name_str(&d, buf, sizeof buf), "/job:worker/device:CPU:0");
    d = rill_device_name_merge_scope(&d, &s4);
    CHECK_EQ_STR(rill_device_name_str(&d, buf, sizeof buf), "/job:ps/device:CPU:0");

    /* The same, merged from the inside out as TF's device functions run: outer fills unset. */
    rill_device_name e = rill_device_name_merge_scope(&s3, &s4);
    e = rill_device_name_merge_scope(&s2, &e);
    e = rill_device_name_merge_scope(&s1, &e);
    CHECK(same_name(&d, &e));

    /* Field by field: an inner type without an id keeps the outer id. */
    rill_device_name outer = parsed("/job:w/task:1/device:GPU:1"), inner = parsed("/device:CPU");
    d = rill_device_name_merge_scope(&outer, &inner);
    CHECK_EQ_STR(rill_device_name_str(&d, buf, sizeof buf), "/job:w/task:1/device:CPU:1");
    /* An empty inner scope changes nothing; an empty outer one adds nothing. */
    d = rill_device_name_merge_scope(&outer, &none);
    CHECK(same_name(&d, &outer));
    d = rill_device_name_merge_scope(&none, &outer);
    CHECK(same_name(&d, &outer));
    /* Wildcards in the inner scope do not clear the outer fields. */
    inner = parsed("/job:*/device:GPU:*");
    d = rill_device_name_merge_scope(&outer, &inner);
    CHECK_EQ_STR(rill_device_name_str(&d, buf, sizeof buf), "/job:w/task:1/device:GPU:1");

    /* merge_override is the same operation in place. */
    rill_device_name t = parsed("/job:a/replica:0/device:CPU:0");
    rill_device_name o = parsed("/job:b/task:3/gpu:2");
    rill_device_name_merge_override(&t, &o);
    CHECK_EQ_STR(rill_device_name_str(&t, buf, sizeof buf), "/job:b/replica:0/task:3/device:GPU:2");
    rill_device_name_merge_override(&t, &t); /* aliasing is fine */
    CHECK_EQ_STR(rill_device_name_str(&t, buf, sizeof buf), "/job:b/replica:0/task:3/device:GPU:2");
}

/* --- 1.5 colocation merge --- */

static void expect_merge_error(const char *target, const char *other, bool soft,
                               const char *message)
{
    rill_status *s = rill_status_new();
    rill_device_name t = parsed(target), keep = t, o = parsed(other);
    if (CHECK(!rill_device_name_merge(&t, &o, soft, s))) {
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_EQ_STR(rill_status_message(s), message);
        CHECK(same_name(&t, &keep));
    }
    rill_status_free(s);
}

static void expect_merge(const char *target, const char *other, bool soft, const char *want)
{
    char buf[RILL_DEVICE_NAME_MAX];
    rill_status *s = rill_status_new();
    rill_device_name t = parsed(target), o = parsed(other);
    if (CHECK(rill_device_name_merge(&t, &o, soft, s))) {
        CHECK(rill_status_ok(s));
        if (!CHECK_EQ_STR(rill_device_name_str(&t, buf, sizeof buf), want))
            fprintf(stderr, "  merging '%s' into '%s' (soft %d)\n", other, target, soft);
    }
    rill_status_free(s);
}

static void test_colocation_merge(void)
{
    /* Compatible names: each side fills what the other leaves unset. */
    for (int soft = 0; soft <= 1; soft++) {
        expect_merge("", "", soft, "");
        expect_merge("/job:ps", "/task:1", soft, "/job:ps/task:1");
        expect_merge("/device:GPU:*", "/device:*:1", soft, "/device:GPU:1");
        expect_merge("/job:w/replica:0/task:0", "/device:CPU:0", soft,
                     "/job:w/replica:0/task:0/device:CPU:0");
        expect_merge("/job:w/device:GPU:0", "/job:w/device:GPU:0", soft, "/job:w/device:GPU:0");
        expect_merge("/job:w/device:GPU:0", "", soft, "/job:w/device:GPU:0");
        expect_merge("", "/job:w/device:GPU:0", soft, "/job:w/device:GPU:0");
    }

    /* Job, replica and task conflicts are errors with or without soft placement. */
    for (int soft = 0; soft <= 1; soft++) {
        expect_merge_error("/job:ps", "/job:worker", soft,
                           "Cannot merge devices with incompatible jobs: '/job:ps' and "
                           "'/job:worker'");
        expect_merge_error("/replica:0", "/replica:1", soft,
                           "Cannot merge devices with incompatible replicas: '/replica:0' and "
                           "'/replica:1'");
        expect_merge_error("/task:0/device:GPU:0", "/task:1/device:GPU:0", soft,
                           "Cannot merge devices with incompatible tasks: '/task:0/device:GPU:0' "
                           "and '/task:1/device:GPU:0'");
        /* <a> is the target as merged up to the conflict (the job was taken first). */
        expect_merge_error("/replica:0", "/job:w/replica:1", soft,
                           "Cannot merge devices with incompatible replicas: '/job:w/replica:0' "
                           "and '/job:w/replica:1'");
        /* A job conflict is found before a type conflict. */
        expect_merge_error("/job:a/device:CPU:0", "/job:b/device:GPU:0", soft,
                           "Cannot merge devices with incompatible jobs: '/job:a/device:CPU:0' "
                           "and '/job:b/device:GPU:0'");
    }

    /* Type and id conflicts without soft placement. */
    expect_merge_error("/device:CPU:0", "/device:GPU:0", false,
                       "Cannot merge devices with incompatible types: '/device:CPU:0' and "
                       "'/device:GPU:0'");
    expect_merge_error("/device:GPU:0", "/device:GPU:1", false,
                       "Cannot merge devices with incompatible ids: '/device:GPU:0' and "
                       "'/device:GPU:1'");
    expect_merge_error("/device:gpu:0", "/device:GPU:0", false,
                       "Cannot merge devices with incompatible types: '/device:gpu:0' and "
                       "'/device:GPU:0'");
    expect_merge_error("/job:w/device:GPU:*", "/task:1/device:CPU:0", false,
                       "Cannot merge devices with incompatible types: '/job:w/task:1/device:GPU:*' "
                       "and '/task:1/device:CPU:0'");

    /* With soft placement: a type conflict clears type and id (other's id is not taken), an id
     * conflict clears the id; job/replica/task still merge. */
    expect_merge("/job:w/device:CPU:0", "/task:1/device:GPU:0", true, "/job:w/task:1");
    expect_merge("/device:CPU:*", "/device:GPU:3", true, "");
    expect_merge("/device:GPU:0", "/device:GPU:1", true, "/device:GPU:*");
    expect_merge("/job:w/device:GPU:0", "/task:2/device:*:1", true, "/job:w/task:2/device:GPU:*");
    expect_merge("/device:*:0", "/device:*:1", true, "");

    /* NULL status is allowed. */
    rill_device_name t = parsed("/job:a"), o = parsed("/job:b");
    CHECK(!rill_device_name_merge(&t, &o, true, NULL));
    CHECK_EQ_STR(t.job, "a");
}

/* --- matching --- */

static void test_matching(void)
{
    rill_device_name cpu0 = parsed("/job:localhost/replica:0/task:0/device:CPU:0");
    rill_device_name gpu0 = parsed("/job:localhost/replica:0/task:0/device:GPU:0");
    rill_device_name gpu1 = parsed("/job:localhost/replica:0/task:0/device:GPU:1");
    rill_device_name ps0 = parsed("/job:ps/replica:0/task:0/device:CPU:0");
    rill_device_name any = parsed("");
    rill_device_name gpu = parsed("/device:GPU:*");
    rill_device_name short_gpu1 = parsed("/gpu:1");
    rill_device_name job_ps = parsed("/job:ps");
    rill_device_name partial = parsed("/job:localhost/device:GPU");

    CHECK(rill_device_name_matches(&any, &cpu0));
    CHECK(rill_device_name_matches(&any, &ps0));
    CHECK(rill_device_name_matches(&gpu, &gpu0));
    CHECK(rill_device_name_matches(&gpu, &gpu1));
    CHECK(!rill_device_name_matches(&gpu, &cpu0));
    CHECK(rill_device_name_matches(&short_gpu1, &gpu1));
    CHECK(!rill_device_name_matches(&short_gpu1, &gpu0));
    CHECK(rill_device_name_matches(&job_ps, &ps0));
    CHECK(!rill_device_name_matches(&job_ps, &cpu0));
    CHECK(rill_device_name_matches(&partial, &gpu1));
    CHECK(!rill_device_name_matches(&partial, &cpu0));
    CHECK(rill_device_name_matches(&cpu0, &cpu0));
    /* The name must be fully specified, even against the empty pattern. */
    CHECK(!rill_device_name_matches(&any, &gpu));
    CHECK(!rill_device_name_matches(&gpu, &partial));
    rill_device_name no_id = cpu0;
    no_id.has_id = false;
    CHECK(!rill_device_name_matches(&any, &no_id));
    CHECK(!rill_device_name_is_fully_specified(&no_id));
    CHECK(rill_device_name_is_fully_specified(&cpu0));

    /* is_specification: a is the less specific name. */
    CHECK(rill_device_name_is_specification(&any, &any));
    CHECK(rill_device_name_is_specification(&any, &gpu));
    CHECK(rill_device_name_is_specification(&gpu, &partial));
    CHECK(!rill_device_name_is_specification(&partial, &gpu));
    CHECK(rill_device_name_is_specification(&gpu, &gpu1));
    CHECK(!rill_device_name_is_specification(&gpu1, &gpu));
    CHECK(rill_device_name_is_specification(&short_gpu1, &gpu1));
    CHECK(!rill_device_name_is_specification(&job_ps, &gpu));
    CHECK(rill_device_name_is_specification(&cpu0, &cpu0));
    CHECK(!rill_device_name_is_specification(&cpu0, &ps0));
    rill_device_name r1 = parsed("/replica:1"), t1 = parsed("/task:1");
    CHECK(!rill_device_name_is_specification(&r1, &cpu0));
    CHECK(!rill_device_name_is_specification(&t1, &cpu0));

    /* Soft placement's retry: same task, any device. */
    rill_device_name want = parsed("/job:localhost/replica:0/task:0/device:GPU:7");
    rill_device_name_clear_type(&want);
    CHECK(!want.has_type && !want.has_id && want.has_job && want.has_replica && want.has_task);
    char buf[RILL_DEVICE_NAME_MAX];
    CHECK_EQ_STR(rill_device_name_str(&want, buf, sizeof buf), "/job:localhost/replica:0/task:0");
    CHECK(rill_device_name_matches(&want, &cpu0));
    CHECK(rill_device_name_matches(&want, &gpu1));
    CHECK(!rill_device_name_matches(&want, &ps0));
}

/* --- fuzzing --- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    /* xorshift64*: deterministic, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng() % n);
}

/* The oracle: an independent reading of the grammar. Names and numbers never hold '/', so the
 * spec splits on '/' into pieces that must each be a whole component. */
static bool oracle_name(const char *p, size_t n, size_t cap)
{
    if (n == 0 || n >= cap) return false;
    if (!((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))) return false;
    for (size_t i = 1; i < n; i++) {
        char c = p[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

static bool oracle_number(const char *p, size_t n)
{
    if (n == 0) return false;
    size_t i = 0;
    while (i < n && p[i] == '0') i++; /* leading zeros do not count toward the size */
    if (n - i > 10) return false;
    long long v = 0;
    for (size_t k = 0; k < n; k++) {
        if (p[k] < '0' || p[k] > '9') return false;
        if (k >= i) v = v * 10 + (p[k] - '0');
    }
    return v <= INT_MAX;
}

static bool oracle_star_or_number(const char *p, size_t n)
{
    return (n == 1 && p[0] == '*') || oracle_number(p, n);
}

static bool starts(const char *p, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(p, prefix, k) == 0;
}

static bool oracle_piece(const char *p, size_t n)
{
    if (starts(p, n, "job:")) {
        p += 4, n -= 4;
        return (n == 1 && p[0] == '*') || oracle_name(p, n, 64);
    }
    if (starts(p, n, "replica:")) return oracle_star_or_number(p + 8, n - 8);
    if (starts(p, n, "task:")) return oracle_star_or_number(p + 5, n - 5);
    if (starts(p, n, "cpu:") || starts(p, n, "CPU:") || starts(p, n, "gpu:") ||
        starts(p, n, "GPU:"))
        return oracle_star_or_number(p + 4, n - 4);
    if (starts(p, n, "device:")) {
        p += 7, n -= 7;
        const char *colon = memchr(p, ':', n);
        size_t tn = colon ? (size_t)(colon - p) : n;
        bool type_ok = (tn == 1 && p[0] == '*') || oracle_name(p, tn, 32);
        if (!type_ok) return false;
        return !colon || oracle_star_or_number(colon + 1, n - tn - 1);
    }
    return false;
}

static bool oracle(const char *spec)
{
    if (spec[0] == '\0' || strcmp(spec, "/") == 0) return true;
    if (spec[0] != '/') return false;
    const char *p = spec + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (!oracle_piece(p, n)) return false;
        if (!slash) return true;
        p = slash + 1;
    }
}

typedef struct fuzz_stats {
    long inputs, accepted, rejected, oracle_mismatch, bad_error, touched_out, bad_round_trip;
    rill_status *s;
} fuzz_stats;

static void fuzz_one(fuzz_stats *st, const char *bytes, size_t n)
{
    /* An exactly sized copy, so reading one byte past the NUL trips AddressSanitizer. */
    char *spec = malloc(n + 1);
    if (!spec) abort();
    memcpy(spec, bytes, n);
    spec[n] = '\0';

    rill_device_name out, keep;
    memset(&out, 0xa5, sizeof out);
    keep = out;
    rill_status_clear(st->s);
    bool ok = rill_device_name_parse(spec, &out, st->s);
    st->inputs++;
    if (ok != oracle(spec)) {
        if (st->oracle_mismatch++ < 5)
            fprintf(stderr, "  fuzz: parser %s '%s', the oracle disagrees\n",
                    ok ? "accepted" : "rejected", spec);
    }
    if (ok) {
        st->accepted++;
        char buf[RILL_DEVICE_NAME_MAX], again[RILL_DEVICE_NAME_MAX];
        rill_device_name back;
        rill_device_name_str(&out, buf, sizeof buf);
        bool round = rill_status_ok(st->s) && rill_device_name_parse(buf, &back, NULL) &&
                     same_name(&out, &back) &&
                     strcmp(rill_device_name_str(&back, again, sizeof again), buf) == 0 &&
                     (!out.has_replica || out.replica >= 0) && (!out.has_task || out.task >= 0) &&
                     (!out.has_id || out.id >= 0);
        if (!round && st->bad_round_trip++ < 5)
            fprintf(stderr, "  fuzz: '%s' -> '%s' does not round-trip\n", spec, buf);
    } else {
        st->rejected++;
        const char *msg = rill_status_message(st->s);
        const char *head = "Malformed device specification '";
        size_t hn = strlen(head);
        bool good = rill_status_code(st->s) == RILL_INVALID_ARGUMENT && strlen(msg) == hn + n + 1 &&
                    memcmp(msg, head, hn) == 0 && memcmp(msg + hn, spec, n) == 0 &&
                    msg[hn + n] == '\'';
        if (!good && st->bad_error++ < 5) fprintf(stderr, "  fuzz: '%s' gave '%s'\n", spec, msg);
        if (!same_name(&out, &keep)) st->touched_out++;
    }

    /* The local parser and the merges must not crash on whatever came out either. */
    rill_device_name local;
    rill_device_name_parse_local(spec, &local, NULL);
    if (ok) {
        rill_device_name a = parsed("/job:w/replica:0/task:1/device:GPU:0");
        rill_device_name_merge(&a, &out, rng() & 1, NULL);
        a = rill_device_name_merge_scope(&a, &out);
        (void)rill_device_name_matches(&out, &a);
    }
    free(spec);
}

static void test_fuzz(void)
{
    static const char *const tokens[] = {
        "/job:",
        "/replica:",
        "/task:",
        "/device:",
        "/cpu:",
        "/CPU:",
        "/gpu:",
        "/GPU:",
        "/",
        ":",
        "*",
        "ps",
        "worker",
        "localhost",
        "GPU",
        "CPU",
        "XLA_GPU",
        "gpu",
        "0",
        "1",
        "17",
        "2147483647",
        "2147483648",
        "99999999999",
        "-",
        "-1",
        "x",
        "_",
        " ",
        "\xff",
        "job",
        "device",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 63 */
        "TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT",                                 /* 31 */
    };
    static const char *const valid[] = {
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:1/device:GPU:0",
        "/job:ps/task:0",
        "/device:GPU:*",
        "/cpu:0",
        "/GPU:1",
        "/job:*",
        "/device:GPU",
        "/job:localhost/replica:0/task:0/gpu:3",
    };
    const size_t ntok = sizeof tokens / sizeof tokens[0];
    const size_t nvalid = sizeof valid / sizeof valid[0];
    fuzz_stats st = {0};
    st.s = rill_status_new();
    char buf[512];

    for (int iter = 0; iter < 100000; iter++) {
        size_t n = 0;
        int kind = iter % 4;
        if (kind == 0) {
            /* Random bytes (never NUL: a C string ends there). */
            n = rng_below(48);
            for (size_t i = 0; i < n; i++) buf[i] = (char)(1 + rng_below(255));
        } else if (kind == 1) {
            /* Random tokens from the grammar's alphabet. */
            size_t k = rng_below(10);
            for (size_t t = 0; t < k; t++) {
                const char *tok = tokens[rng_below(ntok)];
                size_t tl = strlen(tok);
                if (n + tl >= sizeof buf) break;
                memcpy(buf + n, tok, tl);
                n += tl;
            }
        } else {
            /* A valid spec with a few byte mutations: replace, insert, delete, or duplicate. */
            const char *v = valid[rng_below(nvalid)];
            n = strlen(v);
            memcpy(buf, v, n);
            int edits = 1 + (int)rng_below(kind == 2 ? 2 : 5);
            for (int e = 0; e < edits; e++) {
                size_t at = n ? rng_below(n) : 0;
                char c = (char)(1 + rng_below(255));
                if (rng_below(3) == 0) c = "/:*0-9aZ_"[rng_below(9)];
                switch (rng_below(4)) {
                case 0:
                    if (n) buf[at] = c;
                    break;
                case 1:
                    if (n + 1 < sizeof buf) {
                        memmove(buf + at + 1, buf + at, n - at);
                        buf[at] = c;
                        n++;
                    }
                    break;
                case 2:
                    if (n) {
                        memmove(buf + at, buf + at + 1, n - at - 1);
                        n--;
                    }
                    break;
                default:
                    if (n && 2 * n < sizeof buf) {
                        memcpy(buf + n, buf, n);
                        n *= 2;
                    }
                    break;
                }
            }
        }
        fuzz_one(&st, buf, n);
    }

    fprintf(stderr, "fuzz: %ld inputs, %ld accepted, %ld rejected\n", st.inputs, st.accepted,
            st.rejected);
    CHECK_EQ_INT(st.inputs, 100000);
    CHECK_EQ_INT(st.oracle_mismatch, 0);
    CHECK_EQ_INT(st.bad_error, 0);
    CHECK_EQ_INT(st.touched_out, 0);
    CHECK_EQ_INT(st.bad_round_trip, 0);
    /* The generator must exercise both outcomes, or it proves little. */
    CHECK(st.accepted > 1000);
    CHECK(st.rejected > 1000);

    /* A very long spec: the error quotes it whole. */
    size_t big = 1 << 20;
    char *huge = malloc(big + 1);
    if (CHECK(huge != NULL)) {
        memset(huge, 'a', big);
        memcpy(huge, "/job:", 5);
        huge[big] = '\0';
        rill_status_clear(st.s);
        CHECK(!rill_device_name_parse(huge, NULL, st.s));
        CHECK_EQ_INT(strlen(rill_status_message(st.s)),
                     big + strlen("Malformed device specification ''"));
        /* Digits far past any int. */
        memcpy(huge, "/task:", 6);
        memset(huge + 6, '9', big - 6);
        CHECK(!rill_device_name_parse(huge, NULL, NULL));
        free(huge);
    }
    rill_status_free(st.s);
}

int main(void)
{
    test_full_and_short_forms();
    test_parser_rules();
    test_malformed_table();
    test_str();
    test_scope_merge();
    test_colocation_merge();
    test_matching();
    test_fuzz();
    TEST_MAIN_END();
}
