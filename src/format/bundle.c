/* bundle.c - writing TensorFlow V2 checkpoint bundles (reference §9.3).
 *
 * A bundle is "<prefix>.data-NNNNN-of-NNNNN" files holding tensors back to back and one
 * "<prefix>.index" describing them. The index is a LevelDB table exactly as TF's table builder
 * lays it out, so TF reads rill's checkpoints and a checkpoint rill writes from the same tensors
 * is byte for byte the one TF writes:
 *
 *   data block(s)   entries sorted bytewise; each key stored as (bytes shared with the previous
 *                   key, the rest); a restart point (a full key) every 16 entries; the restart
 *                   offsets and their count at the end. A block is closed once it reaches
 *                   262144 bytes.
 *   metaindex       an empty block (no filter).
 *   index block     one entry per data block: a key between that block's last key and the next
 *                   block's first, and the block's handle (varint64 offset, varint64 size).
 *   footer          the two handles padded to 40 bytes, then the magic number.
 *
 * Every block is followed by a type byte (0: uncompressed) and the masked crc32c of the block
 * and that byte. The table's first key is "" holding the BundleHeaderProto; every other key is
 * a tensor name holding its BundleEntryProto.
 *
 * The file helpers shared with the readers (errno codes, paths, atomic files) live here too. */
#include "checkpoint.h"

#include "../core/core.h"
#include "../core/pb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TABLE_BLOCK_SIZE       262144
#define TABLE_RESTART_INTERVAL 16
#define TABLE_MAGIC            0xdb4775248b80fb57ull
#define TABLE_FOOTER_SIZE      48
#define BUNDLE_VERSION         1 /* VersionDef.producer TF writes */
#define HOST_BIG               (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
/* Gathering writes in a buffer this big keeps small tensors from costing a syscall each. */
#define AFILE_BUF 65536

/* --- file helpers --- */


char *rill__path_join(const char *dir, const char *path)
{
    if (path[0] == '/' || dir[0] == '\0') return rill__strdup(path);
    size_t n = strlen(dir);
    return rill__asprintf("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", path);
}

char *rill__path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return rill__strdup(".");
    if (slash == path) return rill__strdup("/");
    return rill__strndup(path, (size_t)(slash - path));
}

bool rill__file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

char *rill__bundle_index_path(const char *prefix)
{
    return rill__asprintf("%s.index", prefix);
}

char *rill__bundle_data_path(const char *prefix, int shard, int nshards)
{
    return rill__asprintf("%s.data-%05d-of-%05d", prefix, shard, nshards);
}

static void sync_dir_of(const char *path)
{
    /* Makes the rename durable. Some file systems cannot sync a directory (EINVAL); the file
     * itself is already synced and in place, so a failure here is not worth failing the save. */
    char *dir = rill__path_dirname(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    rill__free(dir);
}

static void afile_release(rill__afile *f)
{
    rill__free(f->path);
    rill__free(f->tmp);
    rill__free(f->buf);
    *f = (rill__afile){.fd = -1};
}

bool rill__afile_open(rill__afile *f, const char *path, const char *label, rill_status *s)
{
    *f = (rill__afile){.fd = -1};
    char *tmp =
        rill__asprintf("%s.tempstate%016llx", path, (unsigned long long)rill__random_seed());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        int err = errno;
        char *dir = rill__path_dirname(path);
        struct stat st;
        if ((err == ENOENT || err == ENOTDIR) && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
            rill_status_set(s, RILL_NOT_FOUND, "Parent directory of %s doesn't exist, can't save.",
                            label);
        else
            rill_status_set(s, rill__errno_code(err), "Cannot create %s (as %s): %s", path, tmp,
                            strerror(err));
        rill__free(dir);
        rill__free(tmp);
        return false;
    }
    f->fd = fd;
    f->tmp = tmp;
    f->path = rill__strdup(path);
    f->buf = rill__malloc(AFILE_BUF);
    RILL_CHECK_ALLOC(f->buf);
    return true;
}

static bool write_all(rill__afile *f, const void *p, size_t n, rill_status *s)
{
    const uint8_t *b = p;
    while (n > 0) {
        size_t chunk = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        ssize_t w = write(f->fd, b, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int err = w < 0 ? errno : EIO;
            rill_status_set(s, rill__errno_code(err), "Cannot write %s: %s", f->path,
                            strerror(err));
            return false;
        }
        b += w;
        n -= (size_t)w;
    }
    return true;
}

static bool afile_flush(rill__afile *f, rill_status *s)
{
    bool ok = write_all(f, f->buf, f->nbuf, s);
    f->nbuf = 0;
    return ok;
}

bool rill__afile_write(rill__afile *f, const void *p, size_t n, rill_status *s)
{
    if (f->nbuf + n <= AFILE_BUF) {
        if (n) memcpy(f->buf + f->nbuf, p, n);
        f->nbuf += n;
        return true;
    }
    if (!afile_flush(f, s)) return false;
    if (n >= AFILE_BUF) return write_all(f, p, n, s);
    memcpy(f->buf, p, n);
    f->nbuf = n;
    return true;
}

bool rill__afile_commit(rill__afile *f, rill_status *s)
{
    bool ok = afile_flush(f, s);
    if (ok && fsync(f->fd) != 0) {
        rill_status_set(s, rill__errno_code(errno), "Cannot sync %s: %s", f->tmp, strerror(errno));
        ok = false;
    }
    if (close(f->fd) != 0 && ok) {
        rill_status_set(s, rill__errno_code(errno), "Cannot close %s: %s", f->tmp, strerror(errno));
        ok = false;
    }
    f->fd = -1;
    if (ok && rename(f->tmp, f->path) != 0) {
        rill_status_set(s, rill__errno_code(errno), "Cannot rename %s to %s: %s", f->tmp, f->path,
                        strerror(errno));
        ok = false;
    }
    if (ok)
        sync_dir_of(f->path);
    else
        unlink(f->tmp);
    afile_release(f);
    return ok;
}

void rill__afile_abort(rill__afile *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->tmp);
    }
    afile_release(f);
}

/* --- data files --- */

static void put_u32(uint8_t *p, uint32_t v, bool big)
{
    for (int i = 0; i < 4; i++) p[big ? 3 - i : i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v, bool big)
{
    for (int i = 0; i < 8; i++) p[big ? 7 - i : i] = (uint8_t)(v >> (8 * i));
}

void rill__swap_elements(uint8_t *p, size_t nbytes, size_t width)
{
    for (size_t off = 0; off + width <= nbytes; off += width)
        for (size_t i = 0; i < width / 2; i++) {
            uint8_t t = p[off + i];
            p[off + i] = p[off + width - 1 - i];
            p[off + width - 1 - i] = t;
        }
}

/* Raw element bytes, swapped in chunks when the bundle's byte order is not the host's. */
/* Whether any of n words has all the exponent bits of mask set (NaN or Inf): one pass of 32- or
 * 16-bit compares and ORs that SSE2 vectorises, so the common all-finite case costs little
 * beside the checksum; the elements are counted only when there are some. */
#define NONFINITE_COUNT(type, mask)                                                                \
    do {                                                                                           \
        const type *w = p;                                                                         \
        type any = 0;                                                                              \
        for (int64_t i = 0; i < n; i++) any |= (type)((w[i] & (mask)) == (mask));                  \
        if (!any) return 0;                                                                        \
        int64_t bad = 0;                                                                           \
        for (int64_t i = 0; i < n; i++) bad += (w[i] & (mask)) == (mask);                          \
        return bad;                                                                                \
    } while (0)

int64_t rill__count_nonfinite(rill_dtype t, const void *p, int64_t n)
{
    switch (t) {
    case RILL_FLOAT: NONFINITE_COUNT(uint32_t, UINT32_C(0x7f800000));
    case RILL_DOUBLE: NONFINITE_COUNT(uint64_t, UINT64_C(0x7ff0000000000000));
    case RILL_HALF: NONFINITE_COUNT(uint16_t, (uint16_t)0x7c00);
    case RILL_BFLOAT16: NONFINITE_COUNT(uint16_t, (uint16_t)0x7f80);
    default: return 0;
    }
}

/* The tensor's bytes in the bundle's byte order, with their crc and, for floating-point
 * dtypes, the count of non-finite elements. Both passes run over one 64 KiB chunk at a time,
 * so the count reads bytes the checksum has just brought into cache: the check costs a
 * fraction of the write it rides on. */
static bool write_numeric(rill__afile *f, const rill_tensor *t, bool big, int64_t *size,
                          uint32_t *crc, int64_t *nonfinite, rill_status *s)
{
    const uint8_t *p = rill_tensor_data(t);
    rill_dtype dt = rill_tensor_dtype(t);
    size_t n = rill_tensor_nbytes(t), width = rill_dtype_size(dt);
    *size = (int64_t)n;
    *crc = 0;
    *nonfinite = 0;
    if (big == HOST_BIG || width == 1) {
        const size_t step = (size_t)64 << 10; /* a multiple of every element width */
        for (size_t off = 0; off < n; off += step) {
            size_t k = n - off < step ? n - off : step;
            *crc = rill__crc32c(*crc, p + off, k);
            *nonfinite += rill__count_nonfinite(dt, p + off, (int64_t)(k / width));
        }
        return rill__afile_write(f, p, n, s);
    }
    uint8_t chunk[8192];
    for (size_t off = 0; off < n; off += sizeof chunk) {
        size_t k = n - off < sizeof chunk ? n - off : sizeof chunk;
        memcpy(chunk, p + off, k);
        *nonfinite += rill__count_nonfinite(dt, chunk, (int64_t)(k / width));
        rill__swap_elements(chunk, k, width);
        *crc = rill__crc32c(*crc, chunk, k);
        if (!rill__afile_write(f, chunk, k, s)) return false;
    }
    return true;
}

/* TF's string layout: every length as a varint64, a masked crc32c of the lengths (each taken as
 * a uint32, or a uint64 past 2^32-1, in the bundle's byte order), then the bytes. The entry's crc
 * runs over those length words (not the varints), the 4 checksum bytes and the bytes. */
static bool write_strings(rill__afile *f, const rill_tensor *t, bool big, int64_t *size,
                          uint32_t *crc, rill_status *s)
{
    int64_t n = rill_tensor_num_elements(t);
    rill__pbw varints = {0}, words = {0};
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        rill_tensor_get_string(t, i, &len);
        rill__pbw_varint_raw(&varints, len);
        uint8_t w[8];
        bool wide = (uint64_t)len > UINT32_MAX;
        if (wide)
            put_u64(w, len, big);
        else
            put_u32(w, (uint32_t)len, big);
        rill__pbw_raw(&words, w, wide ? 8 : 4);
    }
    uint32_t c = rill__crc32c(0, words.p, words.n);
    uint8_t check[4];
    put_u32(check, rill__crc32c_mask(c), big);
    c = rill__crc32c(c, check, 4);
    bool ok = rill__afile_write(f, varints.p, varints.n, s) && rill__afile_write(f, check, 4, s);
    int64_t total = (int64_t)varints.n + 4;
    for (int64_t i = 0; ok && i < n; i++) {
        size_t len;
        const char *str = rill_tensor_get_string(t, i, &len);
        c = rill__crc32c(c, str, len);
        ok = rill__afile_write(f, str, len, s);
        total += (int64_t)len;
    }
    rill__pbw_free(&varints);
    rill__pbw_free(&words);
    *size = total;
    *crc = c;
    return ok;
}

static bool check_data_args(const char *prefix, int shard, int nshards, const char *const *names,
                            rill_tensor *const *vals, int n, rill__bundle_entry *entries,
                            rill_status *s)
{
    if (!prefix || !prefix[0] || nshards < 1 || nshards > RILL__BUNDLE_MAX_SHARDS || shard < 0 ||
        shard >= nshards || n < 0 || (n > 0 && (!names || !vals || !entries))) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Bad arguments to write a checkpoint data file "
                        "(prefix %s, shard %d of %d, %d tensors)",
                        prefix ? prefix : "(null)", shard, nshards, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        const rill_tensor *t = vals[i];
        if (!names[i] || !names[i][0]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Tensor %d to save in %s has no name (the empty key is the header)", i,
                            prefix);
            return false;
        }
        if (!t || t->buf->dev != NULL || !rill_dtype_is_valid(t->dtype)) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Cannot save tensor '%s' in %s: %s", names[i],
                            prefix,
                            !t ? "no tensor given" : "it is not a host tensor of a known dtype");
            return false;
        }
    }
    return true;
}

bool rill__bundle_write_data_order(const char *prefix, int shard, int nshards,
                                   const char *const *names, rill_tensor *const *vals, int n,
                                   rill__bundle_entry *entries, bool big_endian, rill_status *s)
{
    for (int i = 0; entries && i < n; i++) entries[i] = (rill__bundle_entry){0};
    if (!check_data_args(prefix, shard, nshards, names, vals, n, entries, s)) return false;
    char *path = rill__bundle_data_path(prefix, shard, nshards);
    rill__afile f;
    bool ok = rill__afile_open(&f, path, prefix, s);
    int64_t offset = 0;
    for (int i = 0; ok && i < n; i++) {
        const rill_tensor *t = vals[i];
        rill__bundle_entry *e = &entries[i];
        e->name = rill__strdup(names[i]);
        e->dtype = t->dtype;
        e->shape = t->shape;
        e->shard = shard;
        e->offset = offset;
        uint32_t crc;
        ok = t->dtype == RILL_STRING
                 ? write_strings(&f, t, big_endian, &e->size, &crc, s)
                 : write_numeric(&f, t, big_endian, &e->size, &crc, &e->nonfinite, s);
        e->crc = rill__crc32c_mask(crc);
        offset += e->size;
    }
    if (ok)
        ok = rill__afile_commit(&f, s);
    else if (f.fd >= 0)
        rill__afile_abort(&f);
    rill__free(path);
    return ok;
}

bool rill__bundle_write_data(const char *prefix, int shard, int nshards, const char *const *names,
                             rill_tensor *const *vals, int n, rill__bundle_entry *entries,
                             rill_status *s)
{
    return rill__bundle_write_data_order(prefix, shard, nshards, names, vals, n, entries, HOST_BIG,
                                         s);
}

void rill__bundle_entries_free(rill__bundle_entry *e, int n)
{
    for (int i = 0; e && i < n; i++) {
        rill__free(e[i].name);
        e[i].name = NULL;
    }
}

/* --- the index table --- */

typedef struct block_builder {
    rill__pbw buf;
    uint32_t *restarts;
    int nrestarts, cap;
    int counter, interval;
    rill__pbw last; /* the previous key */
} block_builder;

static void block_init(block_builder *b, int interval)
{
    *b = (block_builder){.interval = interval};
    b->cap = 16;
    b->restarts = rill__malloc((size_t)b->cap * sizeof *b->restarts);
    RILL_CHECK_ALLOC(b->restarts);
    b->restarts[0] = 0;
    b->nrestarts = 1;
}

static void block_reset(block_builder *b)
{
    b->buf.n = 0;
    b->last.n = 0;
    b->restarts[0] = 0;
    b->nrestarts = 1;
    b->counter = 0;
}

static void block_free(block_builder *b)
{
    rill__pbw_free(&b->buf);
    rill__pbw_free(&b->last);
    rill__free(b->restarts);
}

static bool block_empty(const block_builder *b)
{
    return b->buf.n == 0;
}

static size_t block_size_estimate(const block_builder *b)
{
    return b->buf.n + (size_t)b->nrestarts * 4 + 4;
}

static void block_add(block_builder *b, const uint8_t *key, size_t klen, const uint8_t *val,
                      size_t vlen)
{
    size_t shared = 0;
    if (b->counter < b->interval) {
        size_t min = b->last.n < klen ? b->last.n : klen;
        while (shared < min && b->last.p[shared] == key[shared]) shared++;
    } else {
        if (b->nrestarts == b->cap) {
            b->cap *= 2;
            b->restarts = rill__realloc(b->restarts, (size_t)b->cap * sizeof *b->restarts);
            RILL_CHECK_ALLOC(b->restarts);
        }
        b->restarts[b->nrestarts++] = (uint32_t)b->buf.n;
        b->counter = 0;
    }
    rill__pbw_varint_raw(&b->buf, shared);
    rill__pbw_varint_raw(&b->buf, klen - shared);
    rill__pbw_varint_raw(&b->buf, vlen);
    rill__pbw_raw(&b->buf, key + shared, klen - shared);
    rill__pbw_raw(&b->buf, val, vlen);
    b->last.n = shared;
    rill__pbw_raw(&b->last, key + shared, klen - shared);
    b->counter++;
}

/* Appends the restart array; the block's bytes are then b->buf. */
static void block_finish(block_builder *b)
{
    uint8_t w[4];
    for (int i = 0; i < b->nrestarts; i++) {
        put_u32(w, b->restarts[i], false);
        rill__pbw_raw(&b->buf, w, 4);
    }
    put_u32(w, (uint32_t)b->nrestarts, false);
    rill__pbw_raw(&b->buf, w, 4);
}

typedef struct table_writer {
    rill__afile *f;
    uint64_t offset;
    block_builder data, index;
    rill__pbw last_key;
    bool pending; /* a data block was written; its index entry waits for the next key */
    uint64_t pending_off, pending_size;
} table_writer;

/* Shortens start to a key k with start <= k < limit (LevelDB's bytewise separator). */
static void shortest_separator(rill__pbw *start, const uint8_t *limit, size_t limit_len)
{
    size_t min = start->n < limit_len ? start->n : limit_len, i = 0;
    while (i < min && start->p[i] == limit[i]) i++;
    if (i >= min) return; /* one is a prefix of the other */
    uint8_t byte = start->p[i];
    if (byte < 0xff && byte + 1 < limit[i]) {
        start->p[i]++;
        start->n = i + 1;
    }
}

/* Shortens key to a short k >= key. */
static void short_successor(rill__pbw *key)
{
    for (size_t i = 0; i < key->n; i++)
        if (key->p[i] != 0xff) {
            key->p[i]++;
            key->n = i + 1;
            return;
        }
}

static void encode_handle(rill__pbw *w, uint64_t off, uint64_t size)
{
    rill__pbw_varint_raw(w, off);
    rill__pbw_varint_raw(w, size);
}

static bool table_write_block(table_writer *t, block_builder *b, uint64_t *off, uint64_t *size,
                              rill_status *s)
{
    block_finish(b);
    uint8_t trailer[5] = {0};
    uint32_t crc = rill__crc32c(rill__crc32c(0, b->buf.p, b->buf.n), trailer, 1);
    put_u32(trailer + 1, rill__crc32c_mask(crc), false);
    *off = t->offset;
    *size = b->buf.n;
    bool ok =
        rill__afile_write(t->f, b->buf.p, b->buf.n, s) && rill__afile_write(t->f, trailer, 5, s);
    t->offset += b->buf.n + 5;
    block_reset(b);
    return ok;
}

static void table_add_pending_index(table_writer *t, const uint8_t *next, size_t next_len,
                                    bool last)
{
    if (!t->pending) return;
    if (last)
        short_successor(&t->last_key);
    else
        shortest_separator(&t->last_key, next, next_len);
    rill__pbw h = {0};
    encode_handle(&h, t->pending_off, t->pending_size);
    block_add(&t->index, t->last_key.p, t->last_key.n, h.p, h.n);
    rill__pbw_free(&h);
    t->pending = false;
}

static bool table_add(table_writer *t, const void *key, size_t klen, const rill__pbw *val,
                      rill_status *s)
{
    table_add_pending_index(t, key, klen, false);
    t->last_key.n = 0;
    rill__pbw_raw(&t->last_key, key, klen);
    block_add(&t->data, key, klen, val->p, val->n);
    if (block_size_estimate(&t->data) < TABLE_BLOCK_SIZE) return true;
    t->pending = true;
    return table_write_block(t, &t->data, &t->pending_off, &t->pending_size, s);
}

static bool table_finish(table_writer *t, rill_status *s)
{
    if (!block_empty(&t->data)) {
        if (!table_write_block(t, &t->data, &t->pending_off, &t->pending_size, s)) return false;
        t->pending = true;
    }
    block_builder meta;
    block_init(&meta, TABLE_RESTART_INTERVAL);
    uint64_t meta_off, meta_size, index_off, index_size;
    bool ok = table_write_block(t, &meta, &meta_off, &meta_size, s);
    block_free(&meta);
    table_add_pending_index(t, NULL, 0, true);
    ok = ok && table_write_block(t, &t->index, &index_off, &index_size, s);
    if (!ok) return false;
    rill__pbw footer = {0};
    encode_handle(&footer, meta_off, meta_size);
    encode_handle(&footer, index_off, index_size);
    uint8_t pad[TABLE_FOOTER_SIZE] = {0};
    rill__pbw_raw(&footer, pad, TABLE_FOOTER_SIZE - 8 - footer.n);
    put_u32(pad, (uint32_t)TABLE_MAGIC, false);
    put_u32(pad + 4, (uint32_t)(TABLE_MAGIC >> 32), false);
    rill__pbw_raw(&footer, pad, 8);
    ok = rill__afile_write(t->f, footer.p, footer.n, s);
    rill__pbw_free(&footer);
    return ok;
}

/* BundleEntryProto, with proto3's rule that zero scalars are left out. The shape is always
 * present (TF sets it even for a scalar, whose TensorShapeProto is empty). */
static void encode_entry(rill__pbw *w, const rill__bundle_entry *e)
{
    rill__pbw shape = {0}, dim = {0};
    for (int d = 0; d < e->shape.rank; d++) {
        dim.n = 0;
        if (e->shape.dims[d]) rill__pbw_sint(&dim, 1, e->shape.dims[d]);
        rill__pbw_message(&shape, 2, &dim);
    }
    rill__pbw_varint(w, 1, (uint64_t)e->dtype);
    rill__pbw_message(w, 2, &shape);
    if (e->shard) rill__pbw_sint(w, 3, e->shard);
    if (e->offset) rill__pbw_sint(w, 4, e->offset);
    if (e->size) rill__pbw_sint(w, 5, e->size);
    if (e->crc) rill__pbw_fixed32(w, 6, e->crc);
    rill__pbw_free(&shape);
    rill__pbw_free(&dim);
}

/* BundleHeaderProto: num_shards, endianness (LITTLE = 0 is left out), version {producer 1}. */
static void encode_header(rill__pbw *w, int nshards, bool big)
{
    rill__pbw version = {0};
    rill__pbw_sint(&version, 1, BUNDLE_VERSION);
    rill__pbw_sint(w, 1, nshards);
    if (big) rill__pbw_varint(w, 2, 1);
    rill__pbw_message(w, 3, &version);
    rill__pbw_free(&version);
}

static int cmp_entry_names(const void *a, const void *b)
{
    const rill__bundle_entry *x = *(const rill__bundle_entry *const *)a;
    const rill__bundle_entry *y = *(const rill__bundle_entry *const *)b;
    return strcmp(x->name, y->name);
}

static bool check_entry(const char *prefix, int nshards, const rill__bundle_entry *e,
                        rill_status *s)
{
    if (!e->name || !e->name[0]) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "A tensor in the index of %s has no name (the empty key is the header)",
                        prefix);
        return false;
    }
    if (e->shard < 0 || e->shard >= nshards || e->offset < 0 || e->size < 0 || e->dtype <= 0 ||
        !rill_shape_is_fully_defined(&e->shape)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Bad index entry for tensor '%s' in %s "
                        "(dtype %d, shard %d of %d, offset %lld, size %lld)",
                        e->name, prefix, (int)e->dtype, e->shard, nshards, (long long)e->offset,
                        (long long)e->size);
        return false;
    }
    return true;
}

/* The entries sorted by name, checked; NULL (s set) on a bad or duplicate entry. */
static const rill__bundle_entry **sorted_entries(const char *prefix, int nshards,
                                                 const rill__bundle_entry *entries, int n,
                                                 rill_status *s)
{
    const rill__bundle_entry **v = rill__malloc((size_t)(n ? n : 1) * sizeof *v);
    RILL_CHECK_ALLOC(v);
    for (int i = 0; i < n; i++) {
        v[i] = &entries[i];
        if (!check_entry(prefix, nshards, v[i], s)) goto fail;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_entry_names);
    for (int i = 1; i < n; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Duplicate tensor name '%s' in the index of %s", v[i]->name, prefix);
            goto fail;
        }
    return v;
fail:
    rill__free(v);
    return NULL;
}

static bool write_table(rill__afile *f, int nshards, const rill__bundle_entry **v, int n, bool big,
                        rill_status *s)
{
    table_writer t = {.f = f};
    block_init(&t.data, TABLE_RESTART_INTERVAL);
    block_init(&t.index, 1);
    rill__pbw val = {0};
    encode_header(&val, nshards, big);
    bool ok = table_add(&t, "", 0, &val, s);
    for (int i = 0; ok && i < n; i++) {
        val.n = 0;
        encode_entry(&val, v[i]);
        ok = table_add(&t, v[i]->name, strlen(v[i]->name), &val, s);
    }
    ok = ok && table_finish(&t, s);
    rill__pbw_free(&val);
    rill__pbw_free(&t.last_key);
    block_free(&t.data);
    block_free(&t.index);
    return ok;
}

bool rill__bundle_write_index_order(const char *prefix, int nshards,
                                    const rill__bundle_entry *entries, int n, bool big_endian,
                                    rill_status *s)
{
    if (!prefix || !prefix[0] || nshards < 1 || nshards > RILL__BUNDLE_MAX_SHARDS || n < 0 ||
        (n > 0 && !entries)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Bad arguments to write a checkpoint index "
                        "(prefix %s, %d shards, %d entries)",
                        prefix ? prefix : "(null)", nshards, n);
        return false;
    }
    const rill__bundle_entry **v = sorted_entries(prefix, nshards, entries, n, s);
    if (!v) return false;
    char *path = rill__bundle_index_path(prefix);
    rill__afile f;
    bool ok = rill__afile_open(&f, path, prefix, s);
    if (ok) {
        ok = write_table(&f, nshards, v, n, big_endian, s);
        if (ok)
            ok = rill__afile_commit(&f, s);
        else
            rill__afile_abort(&f);
    }
    rill__free(path);
    rill__free(v);
    return ok;
}

bool rill__bundle_write_index(const char *prefix, int nshards, const rill__bundle_entry *entries,
                              int n, rill_status *s)
{
    return rill__bundle_write_index_order(prefix, nshards, entries, n, HOST_BIG, s);
}

/* --- deleting --- */

static bool all_digits(const char *p, int n)
{
    for (int i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9') return false;
    return true;
}

/* name is "<base>.data-DDDDD-of-DDDDD"? */
static bool is_data_file_of(const char *name, const char *base, size_t blen)
{
    if (strncmp(name, base, blen) != 0) return false;
    const char *r = name + blen;
    return strlen(r) == 20 && strncmp(r, ".data-", 6) == 0 && all_digits(r + 6, 5) &&
           strncmp(r + 11, "-of-", 4) == 0 && all_digits(r + 15, 5);
}

void rill__checkpoint_delete(const char *prefix)
{
    char *p = rill__asprintf("%s.index", prefix);
    unlink(p);
    rill__free(p);
    p = rill__asprintf("%s.meta", prefix);
    unlink(p);
    rill__free(p);
    char *dir = rill__path_dirname(prefix);
    const char *slash = strrchr(prefix, '/');
    const char *base = slash ? slash + 1 : prefix;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        if (!is_data_file_of(de->d_name, base, strlen(base))) continue;
        p = rill__path_join(dir, de->d_name);
        unlink(p);
        rill__free(p);
    }
    if (d) closedir(d);
    rill__free(dir);
}
