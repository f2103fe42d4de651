/* fuzz_device_name.c - TF's device-name parser (graph/device_name.c, rill/device_name.h) and the
 * merges and matches placement does with what it parses.
 *
 * The input is two specs separated by a NUL byte. Each is parsed as a full or partial name and
 * as a local "TYPE:id" name. A name the parser accepts must print within RILL_DEVICE_NAME_MAX,
 * parse back from its printed form to the same name, and survive every merge with the other
 * spec's name; a failed parse leaves its output untouched and says why. */
#include "fuzz.h"

#include <rill/device_name.h>
#include <rill/status.h>

static bool same_name(const rill_device_name *a, const rill_device_name *b)
{
    char x[RILL_DEVICE_NAME_MAX], y[RILL_DEVICE_NAME_MAX];
    return strcmp(rill_device_name_str(a, x, sizeof x), rill_device_name_str(b, y, sizeof y)) == 0;
}

/* Parses spec; true with *n set when it is a name. */
static bool parse(const char *spec, bool local, rill_device_name *n, rill_status *s)
{
    rill_device_name before;
    memset(&before, 0xa5, sizeof before);
    *n = before;
    bool ok = local ? rill_device_name_parse_local(spec, n, s) : rill_device_name_parse(spec, n, s);
    if (!ok) {
        FUZZ_ASSERT(memcmp(n, &before, sizeof before) == 0);
        FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT);
        FUZZ_ASSERT(strstr(rill_status_message(s), "Malformed device specification") != NULL);
        return false;
    }
    FUZZ_ASSERT((local ? rill_device_name_parse_local : rill_device_name_parse)(spec, NULL, s));
    FUZZ_ASSERT(strnlen(n->job, sizeof n->job) < sizeof n->job);
    FUZZ_ASSERT(strnlen(n->type, sizeof n->type) < sizeof n->type);
    FUZZ_ASSERT(!n->has_replica || n->replica >= 0);
    FUZZ_ASSERT(!n->has_task || n->task >= 0);
    FUZZ_ASSERT(!n->has_id || n->id >= 0);
    /* The printed form fits, and reads back as the same name. */
    char buf[RILL_DEVICE_NAME_MAX + 1];
    memset(buf, 0, sizeof buf);
    rill_device_name_str(n, buf, RILL_DEVICE_NAME_MAX);
    FUZZ_ASSERT(strlen(buf) < RILL_DEVICE_NAME_MAX);
    rill_device_name back;
    if (n->has_type || !n->has_id) {
        FUZZ_ASSERT(rill_device_name_parse(buf, &back, s));
        FUZZ_ASSERT(same_name(n, &back));
    }
    /* A short buffer cuts the text but still ends it. */
    char small[7];
    rill_device_name_str(n, small, sizeof small);
    FUZZ_ASSERT(strlen(small) < sizeof small);
    char full[RILL_DEVICE_NAME_MAX];
    rill_device_full_name(n->job, n->replica, n->task, n->type, n->id, full, sizeof full);
    return true;
}

static void combine(const rill_device_name *a, const rill_device_name *b, rill_status *s)
{
    rill_device_name scoped = rill_device_name_merge_scope(a, b);
    FUZZ_ASSERT(rill_device_name_is_specification(b, &scoped));
    for (int soft = 0; soft < 2; soft++) {
        rill_device_name t = *a;
        if (!rill_device_name_merge(&t, b, soft, s)) {
            FUZZ_ASSERT(memcmp(&t, a, sizeof t) == 0);
            FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT);
        }
    }
    rill_device_name o = *a;
    rill_device_name_merge_override(&o, b);
    FUZZ_ASSERT(rill_device_name_is_specification(b, &o));
    if (rill_device_name_matches(a, b)) {
        FUZZ_ASSERT(rill_device_name_is_fully_specified(b));
        FUZZ_ASSERT(rill_device_name_is_specification(a, b));
    }
    rill_device_name c = *a;
    rill_device_name_clear_type(&c);
    FUZZ_ASSERT(!c.has_type && !c.has_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    char *spec[2] = {fuzz_next_str(&in), fuzz_next_str(&in)};
    rill_status *s = rill_status_new();
    rill_device_name n[2];
    bool ok[2];
    for (int i = 0; i < 2; i++) {
        ok[i] = parse(spec[i], false, &n[i], s);
        rill_device_name local;
        parse(spec[i], true, &local, s);
    }
    if (ok[0] && ok[1]) {
        combine(&n[0], &n[1], s);
        combine(&n[1], &n[0], s);
    }
    rill_status_free(s);
    free(spec[0]);
    free(spec[1]);
    return 0;
}
