/* fuzz_checkpoint.c - the V2 checkpoint reader (format/bundle_reader.c): the index (an SSTable
 * of BundleHeaderProto and BundleEntryProto records) and the data files behind it, through
 * rill_checkpoint_reader as a restore uses it.
 *
 * Input: a flags byte, a u32 index length, the index, then the data. The data is written as
 * the one shard of a 1-shard bundle and as both shards of a 2-shard one, so entries that point
 * into it are read whichever the header says. With bit 0 of the flags set, the harness first
 * writes the right checksum into every block of the index it can find (footer, metaindex and
 * index blocks, the data blocks the index names): a mutated index almost never keeps them, and
 * behind them lie the entries. Every tensor the reader lists is then read: a reader that opened
 * must answer for each of its names with a tensor of the dtype and shape it listed, or a status
 * saying why not. */
#include "fuzz.h"

#include "core/core.h"

#include <rill/rill.h>

#define FOOTER  48
#define TRAILER 5

static uint64_t varint(const uint8_t *p, size_t n, size_t *pos, bool *bad)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n) break;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    *bad = true;
    return 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The checksum of the block at (off, size) of the index's body, when it lies inside. */
static bool repair_block(uint8_t *p, size_t body, uint64_t off, uint64_t size)
{
    if (off > body || size > body - off || TRAILER > body - off - size) return false;
    uint32_t crc = rill__crc32c(0, p + off, (size_t)size + 1);
    put_le32(p + off + size + 1, rill__crc32c_mask(crc));
    return true;
}

/* An SSTable: the footer's two handles (metaindex, index), then the index block's entries,
 * each a handle of a data block. */
static void repair_index(uint8_t *p, size_t n)
{
    if (n < FOOTER) return;
    size_t body = n - FOOTER, pos = 0;
    bool bad = false;
    const uint8_t *foot = p + body;
    uint64_t moff = varint(foot, 40, &pos, &bad), msize = varint(foot, 40, &pos, &bad);
    uint64_t ioff = varint(foot, 40, &pos, &bad), isize = varint(foot, 40, &pos, &bad);
    if (bad) return;
    repair_block(p, body, moff, msize);
    if (!repair_block(p, body, ioff, isize) || isize < 4) return;
    const uint8_t *blk = p + ioff;
    size_t bn = (size_t)isize;
    uint32_t nrestarts = (uint32_t)blk[bn - 4] | (uint32_t)blk[bn - 3] << 8 |
                         (uint32_t)blk[bn - 2] << 16 | (uint32_t)blk[bn - 1] << 24;
    if (nrestarts > (bn - 4) / 4) return;
    size_t limit = bn - 4 - 4 * (size_t)nrestarts;
    pos = 0;
    for (int k = 0; pos < limit && k < 4096; k++) {
        varint(blk, limit, &pos, &bad); /* shared */
        uint64_t unshared = varint(blk, limit, &pos, &bad), vlen = varint(blk, limit, &pos, &bad);
        if (bad || unshared > limit - pos || vlen > limit - pos - unshared) return;
        pos += (size_t)unshared;
        size_t vpos = 0;
        uint64_t doff = varint(blk + pos, (size_t)vlen, &vpos, &bad);
        uint64_t dsize = varint(blk + pos, (size_t)vlen, &vpos, &bad);
        if (bad) return;
        /* A data block inside the index block would change it under us: only others. */
        if (doff + dsize + TRAILER <= ioff || doff >= ioff + isize + TRAILER)
            repair_block(p, body, doff, dsize);
        pos += (size_t)vlen;
    }
}

static void read_every_tensor(rill_checkpoint_reader *r, rill_status *s)
{
    int n = rill_checkpoint_reader_num_tensors(r);
    FUZZ_ASSERT(n >= 0);
    for (int i = 0; i < n; i++) {
        const char *name = rill_checkpoint_reader_name(r, i);
        FUZZ_ASSERT(name != NULL);
        FUZZ_ASSERT(rill_checkpoint_reader_find(r, name) == i);
        rill_dtype dt = rill_checkpoint_reader_dtype(r, i);
        rill_shape sh = rill_checkpoint_reader_shape(r, i);
        rill_tensor *t = rill_checkpoint_reader_get_tensor(r, name, s);
        if (!t) {
            FUZZ_ASSERT(rill_status_code(s) != RILL_OK);
            continue;
        }
        FUZZ_ASSERT(rill_tensor_dtype(t) == dt);
        FUZZ_ASSERT(sh.rank >= 0 && rill_tensor_rank(t) == sh.rank);
        for (int d = 0; d < sh.rank; d++) FUZZ_ASSERT(rill_tensor_dim(t, d) == sh.dims[d]);
        /* Touch every byte: ASan sees a tensor claiming more than it holds. */
        unsigned sum = 0;
        if (dt == RILL_STRING) {
            for (int64_t e = 0; e < rill_tensor_num_elements(t); e++) {
                size_t len;
                const char *b = rill_tensor_get_string(t, e, &len);
                for (size_t k = 0; k < len; k++) sum += (uint8_t)b[k];
            }
        } else {
            const uint8_t *b = rill_tensor_data(t);
            for (size_t k = 0; k < rill_tensor_nbytes(t); k++) sum += b[k];
        }
        (void)sum;
        rill_tensor_free(t);
    }
    FUZZ_ASSERT(rill_checkpoint_reader_get_tensor(r, "\x01no such tensor", s) == NULL);
    FUZZ_ASSERT(rill_status_code(s) == RILL_NOT_FOUND);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char prefix[96], index[128], shards[3][128];
    if (!prefix[0]) {
        fuzz_quiet();
        snprintf(prefix, sizeof prefix, "%s/model.ckpt", fuzz_dir());
        snprintf(index, sizeof index, "%s.index", prefix);
        snprintf(shards[0], sizeof shards[0], "%s.data-00000-of-00001", prefix);
        snprintf(shards[1], sizeof shards[1], "%s.data-00000-of-00002", prefix);
        snprintf(shards[2], sizeof shards[2], "%s.data-00001-of-00002", prefix);
    }
    fuzz_in in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    size_t ilen, dlen;
    const uint8_t *ip = fuzz_bytes(&in, fuzz_u32(&in), &ilen);
    const uint8_t *dp = fuzz_bytes(&in, in.n, &dlen);
    uint8_t *idx = malloc(ilen ? ilen : 1);
    if (!idx) abort();
    memcpy(idx, ip, ilen);
    if (flags & 1) repair_index(idx, ilen);
    fuzz_write_file(index, idx, ilen);
    for (int i = 0; i < 3; i++) fuzz_write_file(shards[i], dp, dlen);
    free(idx);

    rill_status *s = rill_status_new();
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(prefix, s);
    if (r) {
        FUZZ_ASSERT(rill_status_ok(s));
        FUZZ_ASSERT(strcmp(rill_checkpoint_reader_prefix(r), prefix) == 0);
        read_every_tensor(r, s);
        rill_checkpoint_reader_free(r);
    } else {
        FUZZ_ASSERT(rill_status_code(s) != RILL_OK);
    }
    rill_status_free(s);
    return 0;
}
