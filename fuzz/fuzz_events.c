/* fuzz_events.c - the event-file reader (train/events.c, rill_event_reader): TFRecord framing
 * and the Event, Summary, HistogramProto and SessionLog protos inside it.
 *
 * Input: a flags byte, a u16 cut, then the file. The first `cut` bytes are written and read to
 * their end; then the rest is appended and the same reader goes on, as it follows a file that
 * is being written. With bit 0 of the flags set, the harness first writes the right checksums
 * into every record it can frame (a mutated file almost never keeps them), so the protos
 * behind them are reached; without it the checksum checks themselves are fuzzed. Every event
 * read must have its strings terminated within their arrays and its counts within bounds; after
 * an error, every later call repeats it. */
#include "fuzz.h"

#include "core/core.h"

#include <rill/rill.h>

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t masked_crc(const uint8_t *p, size_t n)
{
    return rill__crc32c_mask(rill__crc32c(0, p, n));
}

/* Record: u64 length, masked crc of the length, data, masked crc of the data. */
static void repair_checksums(uint8_t *p, size_t n)
{
    size_t off = 0;
    while (n - off >= 12) {
        put_le32(p + off + 8, masked_crc(p + off, 8));
        uint64_t len = get_le64(p + off);
        if (n - off - 12 < 4 || len > n - off - 16) return;
        put_le32(p + off + 12 + len, masked_crc(p + off + 12, (size_t)len));
        off += 16 + (size_t)len;
    }
}

static void check_event(const rill_event *ev)
{
    FUZZ_ASSERT(ev->kind >= RILL_EVENT_FILE_VERSION && ev->kind <= RILL_EVENT_OTHER);
    FUZZ_ASSERT(strnlen(ev->file_version, sizeof ev->file_version) < sizeof ev->file_version);
    FUZZ_ASSERT(strnlen(ev->checkpoint_path, sizeof ev->checkpoint_path) <
                sizeof ev->checkpoint_path);
    FUZZ_ASSERT(strnlen(ev->session_log_msg, sizeof ev->session_log_msg) <
                sizeof ev->session_log_msg);
    FUZZ_ASSERT(ev->nvalues >= 0 && ev->nvalues <= RILL_EVENT_MAX_VALUES);
    FUZZ_ASSERT(ev->nvalues_omitted >= 0);
    for (int i = 0; i < ev->nvalues; i++) {
        const rill_event_value *v = &ev->values[i];
        FUZZ_ASSERT(strnlen(v->tag, sizeof v->tag) < sizeof v->tag);
        FUZZ_ASSERT(v->kind >= RILL_VALUE_SIMPLE && v->kind <= RILL_VALUE_OTHER);
        FUZZ_ASSERT(v->histo_nbuckets >= 0);
    }
}

/* Reads until the end or an error; returns the last result. */
static int read_all(rill_event_reader *r, rill_status *s)
{
    rill_event ev;
    int got;
    /* A record takes at least 16 bytes: the input bounds the count. */
    for (int i = 0; (got = rill_event_reader_next(r, &ev, s)) == 1 && i < 1 << 16; i++)
        check_event(&ev);
    if (got < 0) FUZZ_ASSERT(rill_status_code(s) != RILL_OK);
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[96];
    if (!path[0]) {
        fuzz_quiet();
        snprintf(path, sizeof path, "%s/events.out.tfevents", fuzz_dir());
    }
    fuzz_in in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    size_t cut = fuzz_u16(&in), n;
    const uint8_t *file = fuzz_bytes(&in, in.n, &n);
    uint8_t *p = malloc(n ? n : 1);
    if (!p) abort();
    memcpy(p, file, n);
    if (flags & 1) repair_checksums(p, n);
    if (cut > n) cut = n;

    fuzz_write_file(path, p, cut);
    rill_status *s = rill_status_new();
    rill_event_reader *r = rill_event_reader_new(path, s);
    FUZZ_ASSERT(r != NULL);
    int got = read_all(r, s);
    if (cut < n) {
        FILE *f = fopen(path, "ab");
        FUZZ_ASSERT(f && fwrite(p + cut, 1, n - cut, f) == n - cut && fclose(f) == 0);
        int again = read_all(r, s);
        if (got < 0) FUZZ_ASSERT(again < 0);
    }
    rill_event_reader_free(r);
    rill_status_free(s);
    free(p);
    return 0;
}
