/* cpu_dataset_io.c - tf.data's file readers (ops in graph/ops_dataset2.c, registered with
 * cpu_dataset2.c's kernels): TextLineDataset, FixedLengthRecordDatasetV2 and TFRecordDataset,
 * each a dataset of string scalars read from its files in turn.
 *
 *   - compression_type "" reads the file as it is; "ZLIB" and "GZIP" inflate it (zlib's
 *     streams, as TF's ZlibInputStream), anything else is TF's InvalidArgument.
 *   - TextLine: the lines without their '\n' (and a '\r' before it), the last one also when it
 *     has no '\n'.
 *   - FixedLength: header_bytes skipped, footer_bytes left, the body in record_bytes records;
 *     a body that is not a multiple of them is TF's InvalidArgument.
 *   - TFRecord: TF's framing: uint64 length, its masked crc32c, the data, the data's masked
 *     crc32c (little endian); a short read is DATA_LOSS "truncated record at", a bad crc
 *     "corrupted record at", as TF's RecordReader says. */
#include "cpu_dataset.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

enum { TEXT, FIXED, TFRECORD };

typedef struct file_ds {
    dset base;
    int kind;
    char **files;
    int64_t nfiles;
    int comp; /* 0: none, 1: zlib, 2: gzip */
    int64_t header, record, footer;
} file_ds;

/* A file, inflated when compressed. */
typedef struct rdr {
    FILE *f;
    bool zip, zend;
    z_stream z;
    unsigned char *in;
} rdr;

enum { INBUF = 1 << 16 };

static bool rdr_open(rdr *r, const char *file, int comp, dctx *c)
{
    memset(r, 0, sizeof *r);
    r->f = fopen(file, "rb");
    if (!r->f) {
        rill_status_set(c->s, errno == ENOENT ? RILL_NOT_FOUND : RILL_PERMISSION_DENIED, "%s; %s",
                        file, strerror(errno));
        return false;
    }
    if (comp) {
        r->zip = true;
        r->in = rill__malloc(INBUF);
        RILL_CHECK_ALLOC(r->in);
        if (inflateInit2(&r->z, comp == 2 ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) {
            rill_status_set(c->s, RILL_INTERNAL, "could not start inflating %s", file);
            return false;
        }
    }
    return true;
}

static void rdr_close(rdr *r)
{
    if (r->zip) inflateEnd(&r->z);
    rill__free(r->in);
    if (r->f) fclose(r->f);
    memset(r, 0, sizeof *r);
}

/* Up to n bytes; fewer at the end. -1 on a read or inflate error (c->s set). */
static int64_t rdr_read(rdr *r, void *buf, size_t n, const char *file, dctx *c)
{
    if (!r->zip) {
        size_t k = fread(buf, 1, n, r->f);
        if (k < n && ferror(r->f)) {
            rill_status_set(c->s, RILL_DATA_LOSS, "%s: read error", file);
            return -1;
        }
        return (int64_t)k;
    }
    r->z.next_out = buf;
    r->z.avail_out = (uInt)n;
    while (r->z.avail_out > 0 && !r->zend) {
        if (r->z.avail_in == 0) {
            size_t k = fread(r->in, 1, INBUF, r->f);
            if (k == 0) break;
            r->z.next_in = r->in;
            r->z.avail_in = (uInt)k;
        }
        int rc = inflate(&r->z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            r->zend = true;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            rill_status_set(c->s, RILL_DATA_LOSS, "%s: inflate failed (%s)", file,
                            r->z.msg ? r->z.msg : "corrupt stream");
            return -1;
        }
    }
    return (int64_t)(n - r->z.avail_out);
}

typedef struct file_it {
    dit base;
    file_ds *d;
    int64_t fi; /* the file open (fi - 1 done) */
    bool open;
    rdr r;
    int64_t off;         /* bytes read from the (inflated) file */
    unsigned char *body; /* fixed length, compressed: the whole inflated file */
    int64_t nbody, at;
    char *line;
    size_t cap;
} file_it;

static void file_it_free(dit *b)
{
    file_it *it = (file_it *)b;
    rdr_close(&it->r);
    rill__free(it->body);
    rill__free(it->line);
    rill__ds_dset_unref(&it->d->base);
    rill__free(it);
}

static bool out_string(rill_tensor **out, const void *p, size_t n)
{
    out[0] = rill_tensor_new(RILL_STRING, NULL, 0);
    RILL_CHECK_ALLOC(out[0]);
    rill_tensor_set_string(out[0], 0, p, n);
    return true;
}

static bool grow(file_it *it, size_t n)
{
    if (n <= it->cap) return true;
    it->cap = n > 2 * it->cap ? n : 2 * it->cap;
    it->line = rill__realloc(it->line, it->cap);
    RILL_CHECK_ALLOC(it->line);
    return true;
}

/* The next line of the open file: 1, 0 at its end, -1 on an error. */
static int next_line(file_it *it, dctx *c, rill_tensor **out)
{
    const char *file = it->d->files[it->fi - 1];
    size_t n = 0;
    bool any = false;
    for (;;) {
        unsigned char ch;
        int64_t k = rdr_read(&it->r, &ch, 1, file, c);
        if (k < 0) return -1;
        if (k == 0) break;
        any = true;
        if (ch == '\n') break;
        grow(it, n + 1);
        it->line[n++] = (char)ch;
    }
    if (!any) return 0;
    if (n && it->line[n - 1] == '\r') n--;
    out_string(out, it->line, n);
    return 1;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int next_record(file_it *it, dctx *c, rill_tensor **out)
{
    const char *file = it->d->files[it->fi - 1];
    unsigned char h[12];
    int64_t at = it->off;
    int64_t k = rdr_read(&it->r, h, sizeof h, file, c);
    if (k < 0) return -1;
    if (k == 0) return 0;
    if (k < (int64_t)sizeof h) {
        rill_status_set(c->s, RILL_DATA_LOSS,
                        "truncated record at %lld' failed with Read less bytes than requested",
                        (long long)at);
        return -1;
    }
    uint64_t len = le64(h);
    if (rill__crc32c_mask(rill__crc32c(0, h, 8)) != le32(h + 8)) {
        rill_status_set(c->s, RILL_DATA_LOSS, "corrupted record at %lld", (long long)at);
        return -1;
    }
    if (len > ((uint64_t)1 << 40)) {
        rill_status_set(c->s, RILL_DATA_LOSS, "corrupted record at %lld", (long long)at);
        return -1;
    }
    grow(it, (size_t)len + 4);
    k = rdr_read(&it->r, it->line, (size_t)len + 4, file, c);
    if (k < 0) return -1;
    if (k < (int64_t)len + 4) {
        rill_status_set(c->s, RILL_DATA_LOSS,
                        "truncated record at %lld' failed with Read less bytes than requested",
                        (long long)at);
        return -1;
    }
    if (rill__crc32c_mask(rill__crc32c(0, it->line, (size_t)len)) !=
        le32((unsigned char *)it->line + len)) { /* TF names the data's offset */
        rill_status_set(c->s, RILL_DATA_LOSS, "corrupted record at %lld", (long long)(at + 12));
        return -1;
    }
    it->off += 12 + (int64_t)len + 4;
    out_string(out, it->line, (size_t)len);
    return 1;
}

static bool body_err(file_it *it, dctx *c, int64_t body)
{
    file_ds *d = it->d;
    rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                    "Excluding the header (%lld bytes) and footer (%lld bytes), input file \"%s\" "
                    "has body length %lld bytes, which is not an exact multiple of the record "
                    "length (%lld bytes).",
                    (long long)d->header, (long long)d->footer, d->files[it->fi - 1],
                    (long long)body, (long long)d->record);
    return false;
}

static bool set_err_io(dctx *c, const char *file)
{
    rill_status_set(c->s, RILL_DATA_LOSS, "%s: %s", file, strerror(errno));
    return false;
}

/* Opens file fi for fixed-length records: the body's bounds (the whole inflated file in body
 * when compressed, else the file's size). */
static bool fixed_open(file_it *it, dctx *c)
{
    file_ds *d = it->d;
    const char *file = d->files[it->fi - 1];
    int64_t size;
    if (it->r.zip) {
        int64_t cap = 1 << 16, n = 0;
        it->body = rill__malloc((size_t)cap);
        RILL_CHECK_ALLOC(it->body);
        for (;;) {
            if (n == cap) {
                cap *= 2;
                it->body = rill__realloc(it->body, (size_t)cap);
                RILL_CHECK_ALLOC(it->body);
            }
            int64_t k = rdr_read(&it->r, it->body + n, (size_t)(cap - n), file, c);
            if (k < 0) return false;
            if (k == 0) break;
            n += k;
        }
        size = n;
        it->nbody = n;
    } else {
        if (fseek(it->r.f, 0, SEEK_END) != 0) return set_err_io(c, file);
        size = ftell(it->r.f);
        fseek(it->r.f, 0, SEEK_SET);
    }
    int64_t body = size - d->header - d->footer;
    if (body < 0) body = 0;
    if (body % d->record != 0) return body_err(it, c, body);
    it->at = d->header;
    it->off = d->header + body; /* the body's end */
    if (!it->r.zip && d->header && fseek(it->r.f, (long)d->header, SEEK_SET) != 0)
        return set_err_io(c, file);
    return true;
}

static int next_fixed(file_it *it, dctx *c, rill_tensor **out)
{
    file_ds *d = it->d;
    if (it->at + d->record > it->off) return 0;
    if (it->body) {
        out_string(out, it->body + it->at, (size_t)d->record);
    } else {
        grow(it, (size_t)d->record);
        int64_t k = rdr_read(&it->r, it->line, (size_t)d->record, d->files[it->fi - 1], c);
        if (k < 0) return -1;
        if (k < d->record) {
            rill_status_set(c->s, RILL_DATA_LOSS, "%s: truncated record", d->files[it->fi - 1]);
            return -1;
        }
        out_string(out, it->line, (size_t)d->record);
    }
    it->at += d->record;
    return 1;
}

static bool file_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    file_it *it = (file_it *)b;
    file_ds *d = it->d;
    for (;;) {
        if (!it->open) {
            if (it->fi >= d->nfiles) {
                *end = true;
                return true;
            }
            it->fi++;
            it->off = 0;
            if (!rdr_open(&it->r, d->files[it->fi - 1], d->comp, c)) return false;
            it->open = true;
            if (d->kind == FIXED && !fixed_open(it, c)) return false;
        }
        int r = d->kind == TEXT    ? next_line(it, c, out)
                : d->kind == FIXED ? next_fixed(it, c, out)
                                   : next_record(it, c, out);
        if (r < 0) return false;
        if (r > 0) {
            *end = false;
            return true;
        }
        rdr_close(&it->r);
        rill__free(it->body);
        it->body = NULL;
        it->open = false;
    }
}

static const dit_vt file_it_vt = {file_next, file_it_free};

static dit *file_make(dset *b, dctx *c)
{
    (void)c;
    file_it *it = rill__calloc(1, sizeof *it);
    RILL_CHECK_ALLOC(it);
    it->base = (dit){&file_it_vt, 1};
    it->d = (file_ds *)b;
    atomic_fetch_add(&b->refs, 1);
    return &it->base;
}

static void file_ds_free(dset *b)
{
    file_ds *d = (file_ds *)b;
    for (int64_t i = 0; i < d->nfiles; i++) rill__free(d->files[i]);
    rill__free(d->files);
    rill__free(d);
}

static const dset_vt file_vt = {file_make, file_ds_free, NULL};

/* Inputs: filenames, then (TextLine, TFRecord) compression_type, buffer_size; (FixedLength)
 * header_bytes, record_bytes, footer_bytes, buffer_size, compression_type. */
void rill__ds_reader_kernel(rill__kctx *ctx)
{
    const char *op = ctx->node->op->name;
    int kind = strcmp(op, "TextLineDataset") == 0   ? TEXT
               : strcmp(op, "TFRecordDataset") == 0 ? TFRECORD
                                                    : FIXED;
    const rill_tensor *fn = ctx->inputs[0];
    const rill_tensor *ct = ctx->inputs[kind == FIXED ? 5 : 1];
    if (fn->dtype != RILL_STRING || fn->shape.rank > 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "`filenames` must be a scalar or a vector, not rank %d", fn->shape.rank);
        return;
    }
    size_t cl;
    const char *cs = rill_tensor_get_string(ct, 0, &cl);
    int comp = 0;
    if (cl == 4 && memcmp(cs, "ZLIB", 4) == 0)
        comp = 1;
    else if (cl == 4 && memcmp(cs, "GZIP", 4) == 0)
        comp = 2;
    else if (cl != 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Unsupported compression_type: %.*s.", (int)cl,
                        cs);
        return;
    }
    int64_t header = 0, record = 0, footer = 0;
    if (kind == FIXED) {
        header = rill__ds_in_i64(ctx, 1);
        record = rill__ds_in_i64(ctx, 2);
        footer = rill__ds_in_i64(ctx, 3);
        if (header < 0 || footer < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "header_bytes and footer_bytes must be >= 0, got %lld and %lld",
                            (long long)header, (long long)footer);
            return;
        }
        if (record <= 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "record_bytes must be > 0 not %lld",
                            (long long)record);
            return;
        }
    }
    file_ds *d = rill__calloc(1, sizeof *d);
    RILL_CHECK_ALLOC(d);
    d->kind = kind;
    d->comp = comp;
    d->header = header;
    d->record = record;
    d->footer = footer;
    d->nfiles = fn->numel;
    d->files = rill__calloc((size_t)(d->nfiles ? d->nfiles : 1), sizeof *d->files);
    RILL_CHECK_ALLOC(d->files);
    for (int64_t i = 0; i < d->nfiles; i++) {
        size_t len;
        const char *s = rill_tensor_get_string(fn, i, &len);
        d->files[i] = rill__asprintf("%.*s", (int)len, s);
    }
    rill__ds_dset_register(&d->base, &file_vt);
    rill__ds_set_handle(ctx, &d->base);
}
