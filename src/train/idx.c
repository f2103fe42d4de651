/* idx.c - reading the IDX files of MNIST and Fashion-MNIST (rill/data.h).
 *
 * An IDX file is a big-endian magic number (0x00000803: uint8, 3 dims; 0x00000801: uint8, 1 dim),
 * one big-endian uint32 per dimension, then the bytes. zlib's gzread reads gzipped and plain
 * files alike, so one path serves both.
 *
 * The file is untrusted: every way it can be wrong (short header, wrong magic, absurd dimensions,
 * missing or extra data, damaged gzip stream or checksum) is a DATA_LOSS that names the file and
 * what was wrong, never a crash. The header's size is not believed until the bytes arrive: the
 * payload is read into a buffer that grows as data comes in, so a 20-byte file claiming a
 * gigabyte allocates nothing large. Only when all bytes are in is the tensor allocated and
 * filled. Reading one byte past the payload makes zlib check the gzip trailer (CRC and length)
 * and shows whether the file holds more than its header says.
 */
#include "../core/core.h"

#include <rill/data.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
/* No IDX file rill reads comes near this (Fashion-MNIST's training images are 47 MB); a header
 * above it is damage, not data. */
#define IDX_MAX_BYTES ((uint64_t)1 << 31)
/* The payload buffer starts at this size (or the expected size, if smaller) and doubles. */
#define IDX_FIRST_CHUNK ((uint64_t)1 << 20)
/* gzread takes an unsigned count and returns an int. */
#define IDX_MAX_READ (1u << 30)

typedef struct idx_kind {
    bool images;
    uint32_t magic;
    int ndims;
    const char *what; /* for messages */
} idx_kind;

static const idx_kind kind_images = {true, IDX_MAGIC_IMAGES, 3, "uint8 images [n, rows, cols]"};
static const idx_kind kind_labels = {false, IDX_MAGIC_LABELS, 1, "uint8 labels [n]"};

static void data_loss(rill_status *s, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void data_loss(rill_status *s, const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rill_status_set(s, RILL_DATA_LOSS, "IDX file '%s': %s", path, what);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static gzFile open_idx(const char *path, rill_status *s)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        rill_code code = RILL_UNKNOWN;
        if (err == ENOENT || err == ENOTDIR) code = RILL_NOT_FOUND;
        if (err == EACCES || err == EPERM) code = RILL_PERMISSION_DENIED;
        rill_status_set(s, code, "Cannot open IDX file '%s': %s", path, strerror(err));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        rill_status_set(s, RILL_FAILED_PRECONDITION, "Cannot read IDX file '%s': it is a directory",
                        path);
        return NULL;
    }
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) { /* only when zlib cannot allocate its state */
        close(fd);
        rill_status_set(s, RILL_RESOURCE_EXHAUSTED,
                        "Cannot read IDX file '%s': zlib is out of memory", path);
        return NULL;
    }
    gzbuffer(gz, 1u << 17);
    return gz;
}

/* Sets s when zlib reports a damaged stream or a read error and returns true. A gzip stream that
 * merely ends early (Z_BUF_ERROR) is left to the caller, which knows how much was missing, and
 * reported through *cut_short. */
static bool gz_failed(gzFile gz, const char *path, bool *cut_short, rill_status *s)
{
    int errnum = Z_OK;
    const char *msg = gzerror(gz, &errnum);
    *cut_short = errnum == Z_BUF_ERROR;
    if (errnum == Z_OK || errnum == Z_BUF_ERROR) return false;
    /* zlib's text is "<fd:N>: reason"; the path in our message says more than the descriptor. */
    const char *colon = strncmp(msg, "<fd:", 4) == 0 ? strstr(msg, ": ") : NULL;
    if (colon) msg = colon + 2;
    if (errnum == Z_MEM_ERROR) {
        rill_status_set(s, RILL_RESOURCE_EXHAUSTED,
                        "Cannot read IDX file '%s': zlib is out of memory", path);
    } else if (errnum == Z_ERRNO) {
        data_loss(s, path, "read error: %s", msg);
    } else {
        data_loss(s, path, "the gzip data is corrupt (zlib: %s)", msg);
    }
    return true;
}

/* Reads up to n bytes into buf. Returns the count (less than n at end of data), or -1 with s set
 * when the stream is damaged. */
static int64_t read_up_to(gzFile gz, const char *path, void *buf, uint64_t n, bool *cut_short,
                          rill_status *s)
{
    uint64_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > IDX_MAX_READ ? IDX_MAX_READ : (unsigned)(n - got);
        int r = gzread(gz, (unsigned char *)buf + got, chunk);
        if (r <= 0) break;
        got += (uint64_t)r;
    }
    if (gz_failed(gz, path, cut_short, s)) return -1;
    return (int64_t)got;
}

static const char *ends_early_note(bool cut_short)
{
    return cut_short ? " (the gzip stream ends early)" : "";
}

/* Reads exactly total bytes into a new buffer (caller frees) or returns NULL with s set. */
static uint8_t *read_payload(gzFile gz, const char *path, uint64_t total, const char *described,
                             rill_status *s)
{
    uint64_t cap = total < IDX_FIRST_CHUNK ? total : IDX_FIRST_CHUNK;
    uint64_t got = 0;
    uint8_t *buf = rill__malloc((size_t)cap);
    RILL_CHECK_ALLOC(buf);
    for (;;) {
        bool cut_short = false;
        int64_t r = read_up_to(gz, path, buf + got, cap - got, &cut_short, s);
        if (r < 0) goto fail;
        got += (uint64_t)r;
        if (got == total) return buf;
        if (got < cap) {
            data_loss(s, path,
                      "truncated: the header describes %s (%llu bytes of data) but only %llu "
                      "bytes follow it%s",
                      described, (unsigned long long)total, (unsigned long long)got,
                      ends_early_note(cut_short));
            goto fail;
        }
        cap = cap * 2 < total ? cap * 2 : total;
        uint8_t *grown = rill__realloc(buf, (size_t)cap);
        RILL_CHECK_ALLOC(grown);
        buf = grown;
    }
fail:
    rill__free(buf);
    return NULL;
}

static rill_tensor *read_idx(const char *path, const idx_kind *kind, rill_status *s)
{
    rill_tensor *result = NULL;
    uint8_t *bytes = NULL;
    gzFile gz = NULL;
    unsigned char header[4 + 4 * 3];
    uint64_t dims[3] = {0, 1, 1};
    size_t header_len = 4 + 4 * (size_t)kind->ndims;
    uint32_t magic;
    uint64_t per_item, total;
    char described[128];
    bool cut_short = false;
    int64_t got;
    unsigned char extra;
    int r;

    if (!path) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_idx_read_%s: the path is NULL",
                        kind->images ? "images" : "labels");
        goto cleanup;
    }
    gz = open_idx(path, s);
    if (!gz) goto cleanup;

    /* The header: magic, then one size per dimension. */
    got = read_up_to(gz, path, header, 4, &cut_short, s);
    if (got < 0) goto cleanup;
    if (got < 4) {
        data_loss(s, path, "too short for an IDX header: %lld bytes%s", (long long)got,
                  ends_early_note(cut_short));
        goto cleanup;
    }
    magic = be32(header);
    if (magic != kind->magic) {
        const char *hint = "";
        if (magic == IDX_MAGIC_IMAGES) hint = "; this is an image file, not a label file";
        if (magic == IDX_MAGIC_LABELS) hint = "; this is a label file, not an image file";
        data_loss(s, path, "bad magic number 0x%08x, expected 0x%08x for %s%s", magic, kind->magic,
                  kind->what, hint);
        goto cleanup;
    }
    got = read_up_to(gz, path, header + 4, header_len - 4, &cut_short, s);
    if (got < 0) goto cleanup;
    if ((size_t)got < header_len - 4) {
        data_loss(s, path, "truncated header: %lld of the %zu bytes of dimension sizes%s",
                  (long long)got, header_len - 4, ends_early_note(cut_short));
        goto cleanup;
    }
    for (int i = 0; i < kind->ndims; i++) dims[i] = be32(header + 4 + 4 * i);

    /* Bound the size before anything is allocated for it. rows*cols fits in 64 bits since each
     * is below 2^32. */
    per_item = dims[1] * dims[2];
    if (kind->images) {
        snprintf(described, sizeof described, "%llu images of %llux%llu",
                 (unsigned long long)dims[0], (unsigned long long)dims[1],
                 (unsigned long long)dims[2]);
        if (per_item == 0) {
            data_loss(s, path, "the header describes %s, and an image cannot be empty", described);
            goto cleanup;
        }
    } else {
        snprintf(described, sizeof described, "%llu labels", (unsigned long long)dims[0]);
    }
    if (per_item > IDX_MAX_BYTES || dims[0] > IDX_MAX_BYTES / per_item) {
        data_loss(s, path, "the header describes %s, more than the %llu-byte limit", described,
                  (unsigned long long)IDX_MAX_BYTES);
        goto cleanup;
    }
    total = dims[0] * per_item;

    bytes = read_payload(gz, path, total, described, s);
    if (!bytes) goto cleanup;

    /* One byte more: a clean end of file, and for gzip a good checksum, or else damage. */
    r = gzread(gz, &extra, 1);
    if (gz_failed(gz, path, &cut_short, s)) goto cleanup;
    if (cut_short) {
        data_loss(s, path, "the gzip stream ends before its trailer (the file is truncated)");
        goto cleanup;
    }
    if (r > 0) {
        data_loss(s, path, "more bytes follow the %llu bytes of data for %s",
                  (unsigned long long)total, described);
        goto cleanup;
    }

    if (kind->images) {
        int64_t shape[2] = {(int64_t)dims[0], (int64_t)per_item};
        result = rill_tensor_new(RILL_FLOAT, shape, 2);
        RILL_CHECK_ALLOC(result);
        float scale[256]; /* exactly v / 255, rounded once */
        for (int v = 0; v < 256; v++) scale[v] = (float)v / 255.0f;
        float *out = rill_tensor_data(result);
        for (uint64_t i = 0; i < total; i++) out[i] = scale[bytes[i]];
    } else {
        int64_t shape[1] = {(int64_t)dims[0]};
        result = rill_tensor_new(RILL_INT32, shape, 1);
        RILL_CHECK_ALLOC(result);
        int32_t *out = rill_tensor_data(result);
        for (uint64_t i = 0; i < total; i++) out[i] = bytes[i];
    }
    rill_status_clear(s);

cleanup:
    rill__free(bytes);
    if (gz) gzclose(gz);
    return result;
}

rill_tensor *rill_idx_read_images(const char *path, rill_status *s)
{
    return read_idx(path, &kind_images, s);
}

rill_tensor *rill_idx_read_labels(const char *path, rill_status *s)
{
    return read_idx(path, &kind_labels, s);
}
