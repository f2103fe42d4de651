/* bundle_reader.c - rill_checkpoint_reader: reading TensorFlow V2 checkpoints (rill/checkpoint.h,
 * reference §9.3; bundle.c describes the layout).
 *
 * Opening reads the whole index into memory and checks all of it before answering: the footer's
 * magic, every block's checksum and bounds, every entry's varints, keys strictly increasing, the
 * header (first key "") with its version and byte order, each BundleEntryProto, and that every
 * entry lies inside its data file with a size that fits its dtype and shape. Every data file is
 * opened once and kept open. After that a tensor read is one pread straight into the new
 * tensor's buffer and one crc32c pass over it (strings go through a scratch buffer, as their
 * layout has to be parsed).
 *
 * The files are untrusted: each length is checked against what is left before it is used and
 * sizes never grow past the files' real sizes, so no bytes can make the reader crash or allocate
 * more than the files hold. */
#include "checkpoint.h"

#include "../core/core.h"
#include "../core/pb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TABLE_MAGIC        0xdb4775248b80fb57ull
#define TABLE_FOOTER_SIZE  48
#define BLOCK_TRAILER_SIZE 5
#define BUNDLE_CONSUMER    1 /* the bundle format version this reader understands */
#define HOST_BIG           (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
/* An index this big would describe tens of millions of tensors; reading it whole into memory is
 * not something to attempt on a damaged file's word. */
#define MAX_INDEX_BYTES ((uint64_t)1 << 31)

typedef struct rentry {
    rill__bundle_entry e; /* e.dtype: TF's number, possibly one rill lacks */
    int rank;             /* as stored; above RILL_MAX_DIMS e.shape is unknown */
    bool sliced;          /* a partitioned variable's full-tensor entry (slices in field 7) */
} rentry;

struct rill_checkpoint_reader {
    char *prefix, *index_path;
    int nshards;
    int *fds;
    char **data_paths;
    int64_t *data_sizes;
    bool big; /* the bundle's numbers are big-endian */
    rentry *v;
    int n, cap;
};

static void data_loss(rill_status *s, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void data_loss(rill_status *s, const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rill_status_set(s, RILL_DATA_LOSS, "Checkpoint file %s is corrupt or truncated: %s", path,
                    what);
}

static uint32_t get_u32(const uint8_t *p, bool big)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[big ? 3 - i : i] << (8 * i);
    return v;
}

/* --- files --- */

static bool pread_all(int fd, void *buf, size_t n, int64_t off, size_t *got)
{
    uint8_t *p = buf;
    *got = 0;
    while (*got < n) {
        size_t chunk = n - *got < ((size_t)1 << 30) ? n - *got : (size_t)1 << 30;
        ssize_t r = pread(fd, p + *got, chunk, (off_t)(off + (int64_t)*got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) return true; /* end of file: *got < n tells */
        *got += (size_t)r;
    }
    return true;
}

/* Opens path for reading; a regular file, its size in *size. */
static int open_regular(const char *path, int64_t *size, rill_status *s, rill_code missing)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        rill_code code = err == ENOENT ? missing : rill__errno_code(err);
        rill_status_set(s, code, "Cannot open checkpoint file %s: %s", path, strerror(err));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rill_status_set(s, RILL_FAILED_PRECONDITION, "Checkpoint file %s is not a regular file",
                        path);
        close(fd);
        return -1;
    }
    *size = (int64_t)st.st_size;
    return fd;
}

static uint8_t *read_index_file(const char *path, size_t *n, rill_status *s)
{
    int64_t size;
    int fd = open_regular(path, &size, s, RILL_NOT_FOUND);
    if (fd < 0) return NULL;
    uint8_t *buf = NULL;
    if ((uint64_t)size > MAX_INDEX_BYTES) {
        data_loss(s, path, "%lld bytes is far beyond any checkpoint index", (long long)size);
        goto out;
    }
    buf = rill__malloc((size_t)size + 1);
    RILL_CHECK_ALLOC(buf);
    size_t got;
    if (!pread_all(fd, buf, (size_t)size, 0, &got)) {
        rill_status_set(s, rill__errno_code(errno), "Cannot read checkpoint file %s: %s", path,
                        strerror(errno));
        rill__free(buf);
        buf = NULL;
        goto out;
    }
    *n = got; /* a file that shrank since fstat is judged by what is there */
out:
    close(fd);
    return buf;
}

/* --- the table --- */

typedef struct table {
    const uint8_t *p;
    size_t n;
    const char *path;
} table;

typedef struct handle {
    uint64_t off, size;
} handle;

static bool decode_handle(rill__pbr *r, handle *h)
{
    h->off = rill__pbr_varint_raw(r);
    h->size = rill__pbr_varint_raw(r);
    return !r->bad;
}

/* The contents of the block at h, after checking its bounds and trailer. */
static bool block_at(const table *t, handle h, const char *what, rill__pbr *out, rill_status *s)
{
    size_t body_end = t->n - TABLE_FOOTER_SIZE;
    if (h.off > body_end || h.size > body_end - h.off ||
        BLOCK_TRAILER_SIZE > body_end - h.off - h.size) {
        data_loss(s, t->path,
                  "the %s block (offset %llu, size %llu) lies outside the file "
                  "(%zu bytes)",
                  what, (unsigned long long)h.off, (unsigned long long)h.size, t->n);
        return false;
    }
    const uint8_t *b = t->p + h.off;
    uint32_t crc = rill__crc32c(0, b, (size_t)h.size + 1); /* the contents and the type byte */
    uint32_t stored = rill__crc32c_unmask(get_u32(b + h.size + 1, false));
    if (crc != stored) {
        data_loss(s, t->path, "block checksum mismatch in the %s block at offset %llu", what,
                  (unsigned long long)h.off);
        return false;
    }
    if (b[h.size] != 0) {
        data_loss(s, t->path,
                  "the %s block at offset %llu is compressed (type %d); "
                  "checkpoint indexes are not",
                  what, (unsigned long long)h.off, b[h.size]);
        return false;
    }
    *out = rill__pbr_make(b, (size_t)h.size);
    return true;
}

/* Walks a block's entries; keys are rebuilt from their shared prefixes into key. */
typedef bool (*entry_fn)(void *ctx, const rill__pbw *key, const uint8_t *val, size_t vlen,
                         rill_status *s);

static bool block_walk(const table *t, rill__pbr blk, const char *what, entry_fn fn, void *ctx,
                       rill_status *s)
{
    if (blk.n < 4) {
        data_loss(s, t->path, "a %s block of %zu bytes has no restart array", what, blk.n);
        return false;
    }
    uint32_t nrestarts = get_u32(blk.p + blk.n - 4, false);
    if (nrestarts == 0 || nrestarts > (blk.n - 4) / 4) {
        data_loss(s, t->path, "a %s block claims %u restart points in %zu bytes", what, nrestarts,
                  blk.n);
        return false;
    }
    size_t limit = blk.n - 4 - 4 * (size_t)nrestarts;
    for (uint32_t i = 0; i < nrestarts; i++)
        if (get_u32(blk.p + limit + 4 * i, false) > (limit ? limit - 1 : 0)) {
            data_loss(s, t->path, "a %s block has a restart point past its entries", what);
            return false;
        }
    rill__pbr r = rill__pbr_make(blk.p, limit);
    rill__pbw key = {0};
    bool ok = true;
    while (ok && r.pos < limit) {
        uint64_t shared = rill__pbr_varint_raw(&r), unshared = rill__pbr_varint_raw(&r);
        uint64_t vlen = rill__pbr_varint_raw(&r);
        size_t left = limit - r.pos;
        if (r.bad || shared > UINT32_MAX || unshared > UINT32_MAX || vlen > UINT32_MAX ||
            shared > key.n || unshared > left || vlen > left - unshared) {
            data_loss(s, t->path, "bad entry at byte %zu of a %s block", r.pos, what);
            ok = false;
            break;
        }
        key.n = (size_t)shared;
        rill__pbw_raw(&key, r.p + r.pos, (size_t)unshared);
        r.pos += (size_t)unshared;
        ok = fn(ctx, &key, r.p + r.pos, (size_t)vlen, s);
        r.pos += (size_t)vlen;
    }
    rill__pbw_free(&key);
    return ok;
}

typedef struct handles {
    handle *v;
    size_t n, cap;
    const char *path;
} handles;

static bool collect_handle(void *ctx, const rill__pbw *key, const uint8_t *val, size_t vlen,
                           rill_status *s)
{
    (void)key;
    handles *hs = ctx;
    rill__pbr r = rill__pbr_make(val, vlen);
    handle h;
    if (!decode_handle(&r, &h) || r.pos != vlen) {
        data_loss(s, hs->path, "bad block handle in the index block");
        return false;
    }
    if (hs->n == hs->cap) {
        hs->cap = hs->cap ? hs->cap * 2 : 16;
        hs->v = rill__realloc(hs->v, hs->cap * sizeof *hs->v);
        RILL_CHECK_ALLOC(hs->v);
    }
    hs->v[hs->n++] = h;
    return true;
}

/* Checks the footer, the metaindex block (ignored otherwise) and the index block, and returns
 * the data blocks' handles in order. */
static bool table_open(const table *t, handles *hs, rill_status *s)
{
    if (t->n < TABLE_FOOTER_SIZE) {
        data_loss(s, t->path, "%zu bytes is too short for an sstable (the footer alone is %d)",
                  t->n, TABLE_FOOTER_SIZE);
        return false;
    }
    const uint8_t *foot = t->p + t->n - TABLE_FOOTER_SIZE;
    uint64_t magic = get_u32(foot + 40, false) | (uint64_t)get_u32(foot + 44, false) << 32;
    if (magic != TABLE_MAGIC) {
        data_loss(s, t->path, "not an sstable (bad magic number)");
        return false;
    }
    rill__pbr r = rill__pbr_make(foot, 40);
    handle meta, index;
    if (!decode_handle(&r, &meta) || !decode_handle(&r, &index)) {
        data_loss(s, t->path, "bad block handles in the footer");
        return false;
    }
    rill__pbr blk;
    if (!block_at(t, meta, "metaindex", &blk, s)) return false;
    if (!block_at(t, index, "index", &blk, s)) return false;
    hs->path = t->path;
    return block_walk(t, blk, "index", collect_handle, hs, s);
}

/* --- the header and entries --- */

static size_t tf_dtype_size(int dtype)
{
    /* TF's DataType numbers (reference §9.3): element sizes of the fixed-width types. */
    static const unsigned char size[] = {0, 4, 8, 4, 1, 2, 1,  0, 8, 8, 1, 1,
                                         1, 4, 2, 2, 2, 2, 16, 2, 0, 0, 4, 8};
    return dtype > 0 && dtype < (int)sizeof size ? size[dtype] : 0;
}

/* A field's value read as the wire type wanted; a field of another wire type clears *ok. */
static uint64_t want_wire(const rill__pbfield *f, int wire, bool *ok)
{
    if (f->wire != wire) *ok = false;
    return f->u;
}

static bool parse_bad_consumers(const rill__pbfield *f, bool *bad_for_us)
{
    if (f->wire == RILL__PB_VARINT) {
        *bad_for_us |= (int32_t)f->u == BUNDLE_CONSUMER;
        return true;
    }
    if (f->wire != RILL__PB_BYTES) return false;
    rill__pbr r = rill__pbr_make(f->b, f->blen);
    while (r.pos < r.n) *bad_for_us |= (int32_t)rill__pbr_varint_raw(&r) == BUNDLE_CONSUMER;
    return !r.bad;
}

/* VersionDef, checked as TF checks a bundle's: producer >= 0, min_consumer <= 1, 1 not among the
 * bad consumers. */
static bool check_version(const char *path, const uint8_t *p, size_t n, rill_status *s)
{
    int64_t producer = 0, min_consumer = 0;
    bool bad_for_us = false, ok = true;
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    while (ok && rill__pbr_next(&r, &f)) {
        if (f.field == 1) producer = (int32_t)want_wire(&f, RILL__PB_VARINT, &ok);
        if (f.field == 2) min_consumer = (int32_t)want_wire(&f, RILL__PB_VARINT, &ok);
        if (f.field == 3) ok = parse_bad_consumers(&f, &bad_for_us);
    }
    if (!ok || r.bad) {
        data_loss(s, path, "bad VersionDef in the bundle header");
        return false;
    }
    if (producer < 0)
        data_loss(s, path,
                  "Checkpoint producer version %lld below min producer 0 supported by "
                  "this reader. Please regenerate your checkpoint.",
                  (long long)producer);
    else if (min_consumer > BUNDLE_CONSUMER)
        data_loss(s, path,
                  "Checkpoint min consumer version %lld above current version %d for "
                  "this reader. Please upgrade.",
                  (long long)min_consumer, BUNDLE_CONSUMER);
    else if (bad_for_us)
        data_loss(s, path, "Checkpoint disallows consumer version %d.", BUNDLE_CONSUMER);
    else
        return true;
    return false;
}

static bool parse_header(rill_checkpoint_reader *rd, const uint8_t *p, size_t n, rill_status *s)
{
    int64_t nshards = 0, endian = 0;
    bool ok = true, have_version = false;
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    while (ok && rill__pbr_next(&r, &f)) {
        if (f.field == 1) nshards = (int32_t)want_wire(&f, RILL__PB_VARINT, &ok);
        if (f.field == 2) endian = (int64_t)want_wire(&f, RILL__PB_VARINT, &ok);
        if (f.field == 3 && (ok = f.wire == RILL__PB_BYTES)) {
            if (!check_version(rd->index_path, f.b, f.blen, s)) return false;
            have_version = true;
        }
    }
    if (!ok || r.bad) {
        data_loss(s, rd->index_path, "bad BundleHeaderProto");
        return false;
    }
    if (!have_version && !check_version(rd->index_path, NULL, 0, s)) return false;
    if (nshards < 1 || nshards > RILL__BUNDLE_MAX_SHARDS || (endian != 0 && endian != 1)) {
        data_loss(s, rd->index_path, "the bundle header says %lld shards, endianness %lld",
                  (long long)nshards, (long long)endian);
        return false;
    }
    rd->nshards = (int)nshards;
    rd->big = endian == 1;
    return true;
}

/* TensorShapeProto: dims must be known and >= 0; rank beyond RILL_MAX_DIMS is kept as a count. */
static bool parse_shape(rentry *e, const uint8_t *p, size_t n)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    e->rank = 0;
    e->e.shape.rank = 0;
    while (rill__pbr_next(&r, &f)) {
        if (f.field == 3 && (f.wire != RILL__PB_VARINT || f.u != 0)) return false;
        if (f.field != 2) continue;
        if (f.wire != RILL__PB_BYTES) return false;
        int64_t size = 0;
        rill__pbr d = rill__pbr_make(f.b, f.blen);
        rill__pbfield g;
        while (rill__pbr_next(&d, &g))
            if (g.field == 1) {
                if (g.wire != RILL__PB_VARINT) return false;
                size = (int64_t)g.u;
            }
        if (d.bad || size < 0) return false;
        if (e->rank < RILL_MAX_DIMS) e->e.shape.dims[e->rank] = size;
        e->rank++;
    }
    if (r.bad) return false;
    e->e.shape.rank = e->rank <= RILL_MAX_DIMS ? e->rank : -1;
    return true;
}

static bool parse_entry(rentry *e, const uint8_t *p, size_t n)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    bool ok = true;
    int64_t dtype = 0, shard = 0;
    while (ok && rill__pbr_next(&r, &f)) {
        switch (f.field) {
        case 1:
            dtype = (int64_t)want_wire(&f, RILL__PB_VARINT, &ok);
            break;
        case 2:
            ok = f.wire == RILL__PB_BYTES && parse_shape(e, f.b, f.blen);
            break;
        case 3:
            shard = (int32_t)want_wire(&f, RILL__PB_VARINT, &ok);
            break;
        case 4:
            e->e.offset = (int64_t)want_wire(&f, RILL__PB_VARINT, &ok);
            break;
        case 5:
            e->e.size = (int64_t)want_wire(&f, RILL__PB_VARINT, &ok);
            break;
        case 6:
            e->e.crc = (uint32_t)want_wire(&f, RILL__PB_FIXED32, &ok);
            break;
        case 7:
            e->sliced = true;
            ok = f.wire == RILL__PB_BYTES;
            break;
        default:
            break; /* fields of later versions */
        }
    }
    if (!ok || r.bad || dtype <= 0 || dtype > INT32_MAX || shard < 0 || e->e.offset < 0 ||
        e->e.size < 0)
        return false;
    e->e.dtype = (rill_dtype)dtype;
    e->e.shard = (int)shard;
    return true;
}

/* numel * width, or -1 when it overflows. */
static int64_t expected_bytes(const rentry *e, size_t width)
{
    int64_t total = (int64_t)width;
    for (int d = 0; d < e->e.shape.rank; d++) {
        int64_t k = e->e.shape.dims[d];
        if (k != 0 && total > INT64_MAX / k) return -1;
        total *= k;
    }
    return total;
}

/* The entry's size must fit its dtype and shape (strings: at least a byte per length and the
 * 4-byte checksum) and its bytes must lie inside its data file. */
static bool check_entry_bounds(const rill_checkpoint_reader *rd, const rentry *e, rill_status *s)
{
    if (e->sliced) return true; /* fields 3-6 mean nothing for a sliced tensor */
    const char *name = e->e.name;
    if (e->e.shard >= rd->nshards) {
        data_loss(s, rd->index_path, "tensor '%s' is in shard %d of %d", name, e->e.shard,
                  rd->nshards);
        return false;
    }
    int64_t file = rd->data_sizes[e->e.shard];
    if (e->e.offset > file || e->e.size > file - e->e.offset) {
        data_loss(s, rd->index_path,
                  "tensor '%s' (%lld bytes at offset %lld) lies outside %s (%lld bytes)", name,
                  (long long)e->e.size, (long long)e->e.offset, rd->data_paths[e->e.shard],
                  (long long)file);
        return false;
    }
    if (e->e.shape.rank < 0) return true;
    size_t width = tf_dtype_size(e->e.dtype);
    int64_t want = expected_bytes(e, width ? width : 1);
    bool fits = want >= 0 &&
                (width ? e->e.size == want : e->e.dtype != RILL_STRING || e->e.size - 4 >= want);
    if (!fits) {
        data_loss(s, rd->index_path,
                  "tensor '%s' has %lld bytes, which do not fit dtype %d and its shape", name,
                  (long long)e->e.size, (int)e->e.dtype);
        return false;
    }
    return true;
}

typedef struct load_ctx {
    rill_checkpoint_reader *rd;
    rill__pbw prev; /* the previous key, to check the order */
    bool have_prev;
} load_ctx;

static int key_cmp(const rill__pbw *a, const rill__pbw *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static bool add_entry(void *ctx, const rill__pbw *key, const uint8_t *val, size_t vlen,
                      rill_status *s)
{
    load_ctx *c = ctx;
    rill_checkpoint_reader *rd = c->rd;
    if (c->have_prev && key_cmp(&c->prev, key) >= 0) {
        data_loss(s, rd->index_path, "keys out of order");
        return false;
    }
    bool first = !c->have_prev;
    c->have_prev = true;
    c->prev.n = 0;
    rill__pbw_raw(&c->prev, key->p, key->n);
    if (first != (key->n == 0)) {
        data_loss(s, rd->index_path, "the first key is not the bundle header");
        return false;
    }
    if (first) return parse_header(rd, val, vlen, s);
    /* Keys with a NUL byte are a partitioned variable's slices (TF encodes them starting with
     * 0x00); tensor names never hold one. */
    if (memchr(key->p, 0, key->n)) return true;
    if (rd->n == rd->cap) {
        rd->cap = rd->cap ? rd->cap * 2 : 64;
        rd->v = rill__realloc(rd->v, (size_t)rd->cap * sizeof *rd->v);
        RILL_CHECK_ALLOC(rd->v);
    }
    rentry *e = &rd->v[rd->n];
    *e = (rentry){0};
    e->e.name = rill__strndup((const char *)key->p, key->n);
    rd->n++;
    if (!parse_entry(e, val, vlen)) {
        data_loss(s, rd->index_path, "bad BundleEntryProto for tensor '%s'", e->e.name);
        return false;
    }
    return true;
}

static bool load_index(rill_checkpoint_reader *rd, const table *t, rill_status *s)
{
    handles hs = {0};
    load_ctx c = {.rd = rd};
    bool ok = table_open(t, &hs, s);
    for (size_t i = 0; ok && i < hs.n; i++) {
        rill__pbr blk;
        ok = block_at(t, hs.v[i], "data", &blk, s) && block_walk(t, blk, "data", add_entry, &c, s);
    }
    if (ok && !c.have_prev) {
        data_loss(s, rd->index_path, "the table is empty (no bundle header)");
        ok = false;
    }
    rill__free(hs.v);
    rill__pbw_free(&c.prev);
    return ok;
}

static bool open_data_files(rill_checkpoint_reader *rd, rill_status *s)
{
    rd->fds = rill__malloc((size_t)rd->nshards * sizeof *rd->fds);
    rd->data_paths = rill__calloc((size_t)rd->nshards, sizeof *rd->data_paths);
    rd->data_sizes = rill__calloc((size_t)rd->nshards, sizeof *rd->data_sizes);
    RILL_CHECK_ALLOC(rd->fds);
    RILL_CHECK_ALLOC(rd->data_paths);
    RILL_CHECK_ALLOC(rd->data_sizes);
    for (int i = 0; i < rd->nshards; i++) rd->fds[i] = -1;
    for (int i = 0; i < rd->nshards; i++) {
        rd->data_paths[i] = rill__bundle_data_path(rd->prefix, i, rd->nshards);
        rd->fds[i] = open_regular(rd->data_paths[i], &rd->data_sizes[i], s, RILL_DATA_LOSS);
        if (rd->fds[i] < 0) {
            if (rill_status_code(s) == RILL_DATA_LOSS)
                rill_status_set(s, RILL_DATA_LOSS,
                                "Checkpoint data file %s is missing "
                                "(the index %s names %d shards)",
                                rd->data_paths[i], rd->index_path, rd->nshards);
            return false;
        }
    }
    return true;
}

/* --- finding the checkpoint --- */

static bool ends_with(const char *s, size_t n, const char *suffix, size_t *cut)
{
    size_t k = strlen(suffix);
    if (n < k || strcmp(s + n - k, suffix) != 0) return false;
    *cut = n - k;
    return true;
}

/* A file of a checkpoint given instead of its prefix ("x.index", "x.data-00000-of-00001",
 * "x.meta"): the prefix when its index exists. */
static char *prefix_of_file(const char *path)
{
    size_t n = strlen(path), cut = 0;
    const char *data = n >= 20 ? path + n - 20 : NULL;
    bool is_data = data && strncmp(data, ".data-", 6) == 0 && strncmp(data + 11, "-of-", 4) == 0;
    if (is_data)
        cut = n - 20;
    else if (!ends_with(path, n, ".index", &cut) && !ends_with(path, n, ".meta", &cut))
        return NULL;
    char *prefix = rill__strndup(path, cut);
    if (rill_checkpoint_exists(prefix)) return prefix;
    rill__free(prefix);
    return NULL;
}

static char *resolve_prefix(const char *x, rill_status *s)
{
    struct stat st;
    if (stat(x, &st) == 0 && S_ISDIR(st.st_mode)) {
        char *latest = rill__latest_checkpoint(x);
        if (!latest)
            rill_status_set(s, RILL_NOT_FOUND,
                            "Couldn't find 'checkpoint' file or checkpoints in given directory %s",
                            x);
        return latest;
    }
    char *index = rill__bundle_index_path(x);
    bool v2 = rill__file_exists(index);
    rill__free(index);
    if (v2) return rill__strdup(x);
    char *prefix = prefix_of_file(x);
    if (prefix) return prefix;
    if (rill__file_exists(x))
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "%s is not a V2 checkpoint (no %s.index); rill does not read the V1 "
                        "format: re-save it with TensorFlow's default (V2) Saver",
                        x, x);
    else
        rill_status_set(s, RILL_NOT_FOUND,
                        "Unsuccessful TensorSliceReader constructor: Failed to find any matching "
                        "files for %s",
                        x);
    return NULL;
}

/* --- the public reader --- */

rill_checkpoint_reader *rill_checkpoint_reader_new(const char *prefix_or_dir, rill_status *s)
{
    if (!prefix_or_dir || !prefix_or_dir[0]) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "No checkpoint prefix or directory given");
        return NULL;
    }
    char *prefix = resolve_prefix(prefix_or_dir, s);
    if (!prefix) return NULL;
    rill_checkpoint_reader *rd = rill__calloc(1, sizeof *rd);
    RILL_CHECK_ALLOC(rd);
    rd->prefix = prefix;
    rd->index_path = rill__bundle_index_path(prefix);
    size_t n = 0;
    uint8_t *bytes = read_index_file(rd->index_path, &n, s);
    table t = {bytes, n, rd->index_path};
    bool ok = bytes && load_index(rd, &t, s) && open_data_files(rd, s);
    for (int i = 0; ok && i < rd->n; i++) ok = check_entry_bounds(rd, &rd->v[i], s);
    rill__free(bytes);
    if (!ok) {
        rill_checkpoint_reader_free(rd);
        return NULL;
    }
    rill_status_clear(s);
    return rd;
}

void rill_checkpoint_reader_free(rill_checkpoint_reader *r)
{
    if (!r) return;
    for (int i = 0; r->fds && i < r->nshards; i++)
        if (r->fds[i] >= 0) close(r->fds[i]);
    for (int i = 0; r->data_paths && i < r->nshards; i++) rill__free(r->data_paths[i]);
    for (int i = 0; i < r->n; i++) rill__free(r->v[i].e.name);
    rill__free(r->fds);
    rill__free(r->data_paths);
    rill__free(r->data_sizes);
    rill__free(r->v);
    rill__free(r->prefix);
    rill__free(r->index_path);
    rill__free(r);
}

const char *rill_checkpoint_reader_prefix(const rill_checkpoint_reader *r)
{
    return r->prefix;
}

int rill_checkpoint_reader_num_tensors(const rill_checkpoint_reader *r)
{
    return r->n;
}

const char *rill_checkpoint_reader_name(const rill_checkpoint_reader *r, int i)
{
    return i >= 0 && i < r->n ? r->v[i].e.name : NULL;
}

rill_dtype rill_checkpoint_reader_dtype(const rill_checkpoint_reader *r, int i)
{
    return i >= 0 && i < r->n ? r->v[i].e.dtype : RILL_DT_INVALID;
}

rill_shape rill_checkpoint_reader_shape(const rill_checkpoint_reader *r, int i)
{
    return i >= 0 && i < r->n ? r->v[i].e.shape : rill_shape_unknown();
}

int rill_checkpoint_reader_find(const rill_checkpoint_reader *r, const char *name)
{
    int lo = 0, hi = r->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(r->v[mid].e.name, name);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* --- reading values --- */

static bool read_bytes(const rill_checkpoint_reader *r, const rentry *e, void *buf, rill_status *s)
{
    size_t got;
    const char *path = r->data_paths[e->e.shard];
    if (!pread_all(r->fds[e->e.shard], buf, (size_t)e->e.size, e->e.offset, &got)) {
        rill_status_set(s, rill__errno_code(errno), "Cannot read %s: %s", path, strerror(errno));
        return false;
    }
    if (got < (size_t)e->e.size) {
        data_loss(s, path, "it ends before tensor '%s' (%lld bytes at offset %lld)", e->e.name,
                  (long long)e->e.size, (long long)e->e.offset);
        return false;
    }
    return true;
}

static bool check_crc(const rill_checkpoint_reader *r, const rentry *e, uint32_t crc,
                      rill_status *s)
{
    uint32_t stored = rill__crc32c_unmask(e->e.crc);
    if (crc == stored) return true;
    data_loss(s, r->data_paths[e->e.shard],
              "checksum does not match for tensor '%s': stored %08x vs. calculated on the "
              "restored bytes %08x",
              e->e.name, stored, crc);
    return false;
}


static bool read_numeric(const rill_checkpoint_reader *r, const rentry *e, rill_tensor *t,
                         rill_status *s)
{
    uint8_t *data = rill_tensor_data(t);
    if (!read_bytes(r, e, data, s)) return false;
    if (!check_crc(r, e, rill__crc32c(0, data, (size_t)e->e.size), s)) return false;
    size_t width = rill_dtype_size(e->e.dtype);
    if (r->big != HOST_BIG && width > 1) rill__swap_elements(data, (size_t)e->e.size, width);
    return true;
}

/* The length words the writer's crc covered: uint32 (uint64 past 2^32-1), in the bundle's
 * byte order. */
static uint32_t crc_length(uint32_t crc, uint64_t len, bool big)
{
    uint8_t w[8];
    int k = len > UINT32_MAX ? 8 : 4;
    for (int i = 0; i < k; i++) w[big ? k - 1 - i : i] = (uint8_t)(len >> (8 * i));
    return rill__crc32c(crc, w, (size_t)k);
}

/* Checks the layout of a string tensor's bytes (see bundle.c) and fills t. */
static bool parse_strings(const rill_checkpoint_reader *r, const rentry *e, const uint8_t *b,
                          rill_tensor *t, rill_status *s)
{
    const char *path = r->data_paths[e->e.shard];
    size_t size = (size_t)e->e.size, total = 0;
    int64_t n = rill_tensor_num_elements(t);
    rill__pbr lens = rill__pbr_make(b, size);
    uint32_t crc = 0;
    for (int64_t i = 0; i < n && !lens.bad; i++) {
        uint64_t len = rill__pbr_varint_raw(&lens);
        crc = crc_length(crc, len, r->big);
        if (len > size - total) lens.bad = true;
        total += (size_t)len;
    }
    if (lens.bad || size - lens.pos < 4 || size - lens.pos - 4 != total) {
        data_loss(s, path, "malformed string lengths in tensor '%s'", e->e.name);
        return false;
    }
    const uint8_t *check = b + lens.pos;
    if (get_u32(check, r->big) != rill__crc32c_mask(crc)) {
        data_loss(s, path, "the length checksum of string tensor '%s' does not match", e->e.name);
        return false;
    }
    crc = rill__crc32c(rill__crc32c(crc, check, 4), check + 4, total);
    if (!check_crc(r, e, crc, s)) return false;
    rill__pbr again = rill__pbr_make(b, size);
    const char *bytes = (const char *)check + 4;
    for (int64_t i = 0; i < n; i++) {
        size_t len = (size_t)rill__pbr_varint_raw(&again);
        rill_tensor_set_string(t, i, bytes, len);
        bytes += len;
    }
    return true;
}

static bool read_strings(const rill_checkpoint_reader *r, const rentry *e, rill_tensor *t,
                         rill_status *s)
{
    uint8_t *b = rill__malloc((size_t)e->e.size + 1);
    RILL_CHECK_ALLOC(b);
    bool ok = read_bytes(r, e, b, s) && parse_strings(r, e, b, t, s);
    rill__free(b);
    return ok;
}

static bool readable(const rill_checkpoint_reader *r, const rentry *e, rill_status *s)
{
    if (!e->sliced && rill_dtype_is_valid(e->e.dtype) && e->rank <= RILL_MAX_DIMS) return true;
    if (e->sliced)
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Tensor '%s' in %s is a partitioned variable saved in slices; rill does "
                        "not read sliced tensors",
                        e->e.name, r->index_path);
    else if (!rill_dtype_is_valid(e->e.dtype))
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Tensor '%s' in %s has dtype %d (TF DataType number), which rill does "
                        "not support",
                        e->e.name, r->index_path, (int)e->e.dtype);
    else if (e->rank > RILL_MAX_DIMS)
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Tensor '%s' in %s has rank %d, above rill's limit of %d", e->e.name,
                        r->index_path, e->rank, RILL_MAX_DIMS);
    return false;
}

rill_tensor *rill_checkpoint_reader_get_tensor(rill_checkpoint_reader *r, const char *name,
                                               rill_status *s)
{
    int i = name ? rill_checkpoint_reader_find(r, name) : -1;
    if (i < 0) {
        rill_status_set(s, RILL_NOT_FOUND, "Key %s not found in checkpoint",
                        name ? name : "(null)");
        return NULL;
    }
    const rentry *e = &r->v[i];
    if (!readable(r, e, s)) return NULL;
    rill_tensor *t = rill_tensor_new_shape(e->e.dtype, &e->e.shape);
    RILL_CHECK_ALLOC(t);
    bool ok = e->e.dtype == RILL_STRING ? read_strings(r, e, t, s) : read_numeric(r, e, t, s);
    if (!ok) {
        rill_tensor_free(t);
        return NULL;
    }
    rill_status_clear(s);
    return t;
}
