/* test_checkpoint.c - V2 checkpoint bundles, the `checkpoint` state file and the reader.
 *
 * Real files in a fresh mkdtemp directory (the test works inside it, so relative paths are
 * relative to it):
 *   - crc32c (the fast path against a bitwise reference) and the mask;
 *   - every rill dtype, scalars, empty tensors, rank 4, strings (empty, long, every byte value)
 *     written and read back; two data shards under one index; 25,000 tensors, so the index has
 *     several data blocks, every one found again; a big-endian bundle read on this host;
 *   - the checkpoint TensorFlow wrote (tests/interop/data/tf_ckpt, made by
 *     tests/interop/make_tf_checkpoint.py): every value read, and the same tensors written by
 *     rill give byte-identical .index and .data files;
 *   - the state file: exact text for relative and absolute directories, escapes, timestamps,
 *     every text-format form the parser accepts, files it must ignore, latest_checkpoint;
 *   - damage: the index truncated at every length and with each byte flipped, the data file
 *     truncated and flipped, tables framed correctly around random and mutated contents, bad
 *     headers and entries. Each gives DATA_LOSS (or a clean error) naming the file, never a crash.
 */
#include "../test.h"

#include "core/core.h"
#include "core/pb.h"
#include "format/checkpoint.h"

#include <rill/checkpoint.h>

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RILL_SOURCE_DIR
#define RILL_SOURCE_DIR "."
#endif
#define GOLDEN_DIR RILL_SOURCE_DIR "/tests/interop/data/tf_ckpt"

static char tmpdir[] = "/tmp/rill_test_ckpt_XXXXXX";

/* --- helpers --- */

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)size + 1);
    *n = fread(p, 1, (size_t)size, f);
    p[*n] = 0;
    fclose(f);
    return p;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL)) return;
    if (n) CHECK_EQ_INT(fwrite(p, 1, n, f), n);
    fclose(f);
}

static bool tensors_equal(const rill_tensor *a, const rill_tensor *b)
{
    if (!a || !b || rill_tensor_dtype(a) != rill_tensor_dtype(b) ||
        !rill_shape_equal(rill_tensor_shape(a), rill_tensor_shape(b)))
        return false;
    if (rill_tensor_dtype(a) != RILL_STRING)
        return memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0;
    for (int64_t i = 0; i < rill_tensor_num_elements(a); i++) {
        size_t la, lb;
        const char *x = rill_tensor_get_string(a, i, &la), *y = rill_tensor_get_string(b, i, &lb);
        if (la != lb || memcmp(x, y, la) != 0) return false;
    }
    return true;
}

/* Saves vals as one shard with its index. */
static bool save(const char *prefix, const char *const *names, rill_tensor *const *vals, int n,
                 rill_status *s)
{
    rill__bundle_entry *e = calloc((size_t)n + 1, sizeof *e);
    bool ok = rill__bundle_write_data(prefix, 0, 1, names, vals, n, e, s) &&
              rill__bundle_write_index(prefix, 1, e, n, s);
    rill__bundle_entries_free(e, n);
    free(e);
    return ok;
}

/* Every tensor of the reader equals the one of the same name in vals. */
static void check_reads_back(rill_checkpoint_reader *r, const char *const *names,
                             rill_tensor *const *vals, int n, rill_status *s)
{
    CHECK_EQ_INT(rill_checkpoint_reader_num_tensors(r), n);
    for (int i = 0; i < n; i++) {
        int k = rill_checkpoint_reader_find(r, names[i]);
        if (!CHECK(k >= 0)) continue;
        CHECK_EQ_INT(rill_checkpoint_reader_dtype(r, k), rill_tensor_dtype(vals[i]));
        rill_shape sh = rill_checkpoint_reader_shape(r, k);
        CHECK(rill_shape_equal(&sh, rill_tensor_shape(vals[i])));
        rill_tensor *t = rill_checkpoint_reader_get_tensor(r, names[i], s);
        CHECK_EQ_STR(rill_status_message(s), "");
        if (!CHECK(tensors_equal(t, vals[i]))) fprintf(stderr, "  tensor %s differs\n", names[i]);
        rill_tensor_free(t);
    }
    for (int i = 1; i < n; i++)
        CHECK(strcmp(rill_checkpoint_reader_name(r, i - 1), rill_checkpoint_reader_name(r, i)) < 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* No "*.tempstate*" file is left in dir. */
static bool no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    bool clean = d != NULL;
    for (struct dirent *de; d && (de = readdir(d));)
        if (strstr(de->d_name, "tempstate")) clean = false;
    if (d) closedir(d);
    return clean;
}

/* --- crc32c --- */

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static void test_crc(void)
{
    CHECK_EQ_INT(rill__crc32c(0, "123456789", 9), 0xE3069283u);
    uint8_t buf[300];
    rill__rng g;
    rill__rng_seed(&g, 7);
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rill__rng_next(&g);
    int bad = 0;
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += 7)
            if (rill__crc32c(0, buf + off, n) != crc_bitwise(buf + off, n)) bad++;
    CHECK_EQ_INT(bad, 0);
    for (uint32_t c = 0; c < 1000000u; c += 9973)
        CHECK(rill__crc32c_unmask(rill__crc32c_mask(c)) == c);
    CHECK_EQ_INT(rill__crc32c_mask(0), 0xa282ead8u);
}

/* --- round trips --- */

static rill_tensor *string_tensor(const int64_t *dims, int rank, const char *const *strs,
                                  const size_t *lens)
{
    rill_tensor *t = rill_tensor_new(RILL_STRING, dims, rank);
    for (int64_t i = 0; i < rill_tensor_num_elements(t); i++)
        rill_tensor_set_string(t, i, strs[i], lens ? lens[i] : strlen(strs[i]));
    return t;
}

enum { NVALS = 14 };

/* One of everything; names[i] for vals[i]. */
static void make_values(const char **names, rill_tensor **vals)
{
    static char longstr[100000];
    for (size_t i = 0; i < sizeof longstr; i++) longstr[i] = (char)(i * 7 + 3);
    int64_t d3[] = {3}, d23[] = {2, 3}, d4r[] = {2, 1, 3, 2}, d0[] = {0}, d302[] = {3, 0, 2},
            d5[] = {5}, d2[] = {2};
    double dv[] = {0.1, -2.0, 1e300};
    int32_t iv[] = {1, -2, INT32_MAX, INT32_MIN, 0, 7};
    int64_t lv[] = {INT64_MAX, INT64_MIN, 0, 1234};
    uint8_t bv[] = {1, 0, 1};
    float fv[12];
    for (int i = 0; i < 12; i++) fv[i] = (float)i * 0.5f - 2.0f;
    rill_half hv[6];
    for (int i = 0; i < 6; i++) hv[i] = rill_half_from_float((float)i - 2.5f);
    static const char with_nul[] = "quote\"back\\slash\n\0nul";
    const char *strs[] = {"a", "", "hello", "", with_nul};
    size_t lens[] = {1, 0, 5, 0, sizeof with_nul - 1};
    const char *longs[] = {longstr, "x"};
    size_t longlens[] = {sizeof longstr, 1};
    int64_t d4[] = {4};
    int k = 0;
    names[k] = "weight", vals[k++] = rill_tensor_scalar_float(2.5f);
    names[k] = "d", vals[k++] = rill_tensor_from_data(RILL_DOUBLE, d3, 1, dv);
    names[k] = "layer/w", vals[k++] = rill_tensor_from_data(RILL_INT32, d23, 2, iv);
    names[k] = "global_step", vals[k++] = rill_tensor_from_data(RILL_INT64, d4, 1, lv);
    names[k] = "b", vals[k++] = rill_tensor_from_data(RILL_BOOL, d3, 1, bv);
    names[k] = "h", vals[k++] = rill_tensor_from_data(RILL_HALF, d23, 2, hv);
    names[k] = "rank4", vals[k++] = rill_tensor_from_data(RILL_FLOAT, d4r, 4, fv);
    names[k] = "empty", vals[k++] = rill_tensor_new(RILL_FLOAT, d0, 1);
    names[k] = "empty302", vals[k++] = rill_tensor_new(RILL_INT64, d302, 3);
    names[k] = "s", vals[k++] = string_tensor(d5, 1, strs, lens);
    names[k] = "s_long", vals[k++] = string_tensor(d2, 1, longs, longlens);
    names[k] = "s_scalar", vals[k++] = rill_tensor_scalar_string("scalar");
    names[k] = "s_empty", vals[k++] = rill_tensor_new(RILL_STRING, d0, 1);
    names[k] = "z/\xc3\xa9t\xc3\xa9", vals[k++] = rill_tensor_scalar_double(-0.0);
}

static void free_values(rill_tensor **vals, int n)
{
    for (int i = 0; i < n; i++) rill_tensor_free(vals[i]);
}

static void test_round_trip(rill_status *s)
{
    const char *names[NVALS];
    rill_tensor *vals[NVALS];
    make_values(names, vals);
    rill__bundle_entry e[NVALS];
    CHECK(rill__bundle_write_data("rt/model.ckpt-1", 0, 1, names, vals, NVALS, e, s) == false);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Parent directory of rt/model.ckpt-1 doesn't exist, can't save.");
    rill__bundle_entries_free(e, NVALS);
    mkdir("rt", 0755);
    if (!CHECK(save("rt/model.ckpt-1", names, vals, NVALS, s)))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    CHECK(no_temp_files("rt"));
    rill_checkpoint_reader *r = rill_checkpoint_reader_new("rt/model.ckpt-1", s);
    if (CHECK(r != NULL)) {
        CHECK_EQ_STR(rill_checkpoint_reader_prefix(r), "rt/model.ckpt-1");
        check_reads_back(r, names, vals, NVALS, s);
        CHECK_EQ_INT(rill_checkpoint_reader_find(r, "nope"), -1);
        CHECK(rill_checkpoint_reader_get_tensor(r, "nope", s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
        CHECK_EQ_STR(rill_status_message(s), "Key nope not found in checkpoint");
        CHECK(rill_checkpoint_reader_name(r, NVALS) == NULL);
        CHECK_EQ_INT(rill_checkpoint_reader_shape(r, -1).rank, -1);
    }
    rill_checkpoint_reader_free(r);
    /* Any file of the checkpoint names it too. */
    r = rill_checkpoint_reader_new("rt/model.ckpt-1.index", s);
    CHECK(r && strcmp(rill_checkpoint_reader_prefix(r), "rt/model.ckpt-1") == 0);
    rill_checkpoint_reader_free(r);
    r = rill_checkpoint_reader_new("rt/model.ckpt-1.data-00000-of-00001", s);
    CHECK(r != NULL);
    rill_checkpoint_reader_free(r);

    /* Numbers are stored as raw little-endian bytes, back to back in the order given. */
    size_t n;
    uint8_t *data = read_file("rt/model.ckpt-1.data-00000-of-00001", &n);
    static const uint8_t weight[] = {0x00, 0x00, 0x20, 0x40}; /* 2.5f */
    CHECK(data && n > 4 && memcmp(data, weight, 4) == 0);
    free(data);

    /* A foreign byte order is swapped on read (strings' length checksum included). */
    mkdir("be", 0755);
    rill__bundle_entry be[NVALS];
    bool ok = rill__bundle_write_data_order("be/m", 0, 1, names, vals, NVALS, be, true, s) &&
              rill__bundle_write_index_order("be/m", 1, be, NVALS, true, s);
    rill__bundle_entries_free(be, NVALS);
    CHECK(ok);
    data = read_file("be/m.data-00000-of-00001", &n);
    static const uint8_t weight_be[] = {0x40, 0x20, 0x00, 0x00};
    CHECK(data && n > 4 && memcmp(data, weight_be, 4) == 0);
    free(data);
    r = rill_checkpoint_reader_new("be/m", s);
    if (CHECK(r != NULL)) check_reads_back(r, names, vals, NVALS, s);
    rill_checkpoint_reader_free(r);
    free_values(vals, NVALS);
}

/* Two data files, each written alone, under one index. */
static void test_shards(rill_status *s)
{
    const char *names[NVALS];
    rill_tensor *vals[NVALS];
    make_values(names, vals);
    mkdir("sh", 0755);
    int half = NVALS / 2;
    rill__bundle_entry e[NVALS];
    bool ok = rill__bundle_write_data("sh/m", 0, 2, names, vals, half, e, s) &&
              rill__bundle_write_data("sh/m", 1, 2, names + half, vals + half, NVALS - half,
                                      e + half, s) &&
              rill__bundle_write_index("sh/m", 2, e, NVALS, s);
    CHECK(ok);
    CHECK_EQ_INT(e[half].shard, 1);
    CHECK_EQ_INT(e[half].offset, 0);
    rill_checkpoint_reader *r = rill_checkpoint_reader_new("sh/m", s);
    if (CHECK(r != NULL)) check_reads_back(r, names, vals, NVALS, s);
    rill_checkpoint_reader_free(r);

    /* Index errors. */
    e[1].shard = 2;
    CHECK(!rill__bundle_write_index("sh/m", 2, e, NVALS, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    e[1].shard = 0;
    char *keep = e[3].name;
    e[3].name = e[5].name;
    CHECK(!rill__bundle_write_index("sh/m", 2, e, NVALS, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "Duplicate tensor name");
    e[3].name = keep;

    /* A missing data file. */
    unlink("sh/m.data-00001-of-00002");
    r = rill_checkpoint_reader_new("sh/m", s);
    CHECK(r == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DATA_LOSS);
    CHECK_STR_CONTAINS(rill_status_message(s), "sh/m.data-00001-of-00002");
    rill__bundle_entries_free(e, NVALS);

    /* Bad arguments. */
    CHECK(!rill__bundle_write_data("sh/x", 1, 1, names, vals, 1, e, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    const char *empty[] = {""};
    CHECK(!rill__bundle_write_data("sh/x", 0, 1, empty, vals, 1, e, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    rill__bundle_entries_free(e, 1);
    /* A tensor in device memory cannot be saved directly. */
    vals[0]->buf->dev = (struct rill__device *)vals[0];
    CHECK(!rill__bundle_write_data("sh/x", 0, 1, names, vals, 1, e, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "not a host tensor");
    vals[0]->buf->dev = NULL;
    rill__bundle_entries_free(e, 1);
    free_values(vals, NVALS);
}

static void *read_all_thread(void *arg)
{
    rill_checkpoint_reader *r = arg;
    rill_status *s = rill_status_new();
    intptr_t bad = 0;
    for (int i = 0; i < rill_checkpoint_reader_num_tensors(r); i += 3) {
        rill_tensor *t = rill_checkpoint_reader_get_tensor(r, rill_checkpoint_reader_name(r, i), s);
        if (!t || *(int32_t *)rill_tensor_data(t) != i) bad++;
        rill_tensor_free(t);
    }
    rill_status_free(s);
    return (void *)bad;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Enough entries for several 256 KiB data blocks; names sharing long prefixes, names that are
 * prefixes of others and names of 0xff bytes test the separators between blocks. */
static void test_many_blocks(rill_status *s)
{
    enum { N = 25000 };
    char **names = malloc(N * sizeof *names);
    rill_tensor **vals = malloc(N * sizeof *vals);
    for (int i = 0; i < N; i++) {
        char buf[200];
        if (i % 1000 == 999)
            snprintf(buf, sizeof buf, "\xff\xff\xff%d\xff", i);
        else if (i % 2)
            snprintf(buf, sizeof buf,
                     "model/block_%03d/a_rather_long_layer_name_that_repeats/"
                     "kernel%s/%d",
                     i / 37, i % 4 == 1 ? "/Adam" : "", i);
        else /* little shared with its neighbours */
            snprintf(buf, sizeof buf, "%08x/layer_%d/weights", (unsigned)(i * 2654435761u), i);
        names[i] = strdup(buf);
    }
    /* Sorted, so that value i belongs to the i-th name the reader lists. */
    qsort(names, N, sizeof *names, cmp_names);
    for (int i = 0; i < N; i++) vals[i] = rill_tensor_scalar_int32(i);
    mkdir("many", 0755);
    CHECK(save("many/m", (const char *const *)names, vals, N, s));
    struct stat st;
    CHECK(stat("many/m.index", &st) == 0 && st.st_size > 3 * 262144);  /* 4+ data blocks */
    rill_checkpoint_reader *r = rill_checkpoint_reader_new("many", s); /* no state file */
    CHECK(r == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    r = rill_checkpoint_reader_new("many/m", s);
    if (CHECK(r != NULL)) {
        CHECK_EQ_INT(rill_checkpoint_reader_num_tensors(r), N);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            if (rill_checkpoint_reader_find(r, names[i]) != i) bad++;
            if (strcmp(rill_checkpoint_reader_name(r, i), names[i]) != 0) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        pthread_t th[4];
        for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, read_all_thread, r);
        for (int i = 0; i < 4; i++) {
            void *res;
            pthread_join(th[i], &res);
            CHECK_EQ_INT((intptr_t)res, 0);
        }
    }
    rill_checkpoint_reader_free(r);
    for (int i = 0; i < N; i++) {
        free(names[i]);
        rill_tensor_free(vals[i]);
    }
    free(names);
    free(vals);
}

/* --- TensorFlow's own checkpoint --- */

static rill_tensor *get(rill_checkpoint_reader *r, const char *name, rill_dtype dt, int rank,
                        rill_status *s)
{
    rill_tensor *t = rill_checkpoint_reader_get_tensor(r, name, s);
    if (!CHECK(t != NULL)) {
        fprintf(stderr, "  %s: %s\n", name, rill_status_message(s));
        return NULL;
    }
    CHECK_EQ_INT(rill_tensor_dtype(t), dt);
    CHECK_EQ_INT(rill_tensor_rank(t), rank);
    return t;
}

static void check_golden_values(rill_checkpoint_reader *r, int64_t step, rill_status *s)
{
    static const char *const listed[] = {"b", "biase",   "d",     "empty", "global_step", "h",
                                         "i", "layer/w", "rank4", "s",     "weight"};
    CHECK_EQ_INT(rill_checkpoint_reader_num_tensors(r), 11);
    for (int i = 0; i < 11; i++) CHECK_EQ_STR(rill_checkpoint_reader_name(r, i), listed[i]);
    rill_tensor *t;
    if ((t = get(r, "weight", RILL_FLOAT, 0, s))) CHECK_NEAR(rill_tensor_get_double(t, 0), 2.5, 0);
    rill_tensor_free(t);
    if ((t = get(r, "biase", RILL_FLOAT, 0, s))) CHECK_NEAR(rill_tensor_get_double(t, 0), 10, 0);
    rill_tensor_free(t);
    if ((t = get(r, "global_step", RILL_INT64, 0, s)))
        CHECK_EQ_INT(*(int64_t *)rill_tensor_data(t), step);
    rill_tensor_free(t);
    if ((t = get(r, "layer/w", RILL_FLOAT, 2, s))) {
        const float want[] = {1, 2, 3, 4, 5, 6.5f};
        CHECK(rill_tensor_dim(t, 0) == 2 && rill_tensor_dim(t, 1) == 3);
        CHECK(memcmp(rill_tensor_data(t), want, sizeof want) == 0);
    }
    rill_tensor_free(t);
    if ((t = get(r, "d", RILL_DOUBLE, 1, s))) {
        const double want[] = {0.1, -2.0, 1e300};
        CHECK(memcmp(rill_tensor_data(t), want, sizeof want) == 0);
    }
    rill_tensor_free(t);
    if ((t = get(r, "i", RILL_INT32, 1, s))) {
        const int32_t want[] = {1, -2, INT32_MAX, INT32_MIN};
        CHECK(memcmp(rill_tensor_data(t), want, sizeof want) == 0);
    }
    rill_tensor_free(t);
    if ((t = get(r, "h", RILL_HALF, 1, s))) {
        CHECK_NEAR(rill_tensor_get_double(t, 0), 1.5, 0);
        CHECK_NEAR(rill_tensor_get_double(t, 1), -0.25, 0);
    }
    rill_tensor_free(t);
    if ((t = get(r, "b", RILL_BOOL, 1, s))) {
        const uint8_t want[] = {1, 0, 1};
        CHECK(memcmp(rill_tensor_data(t), want, 3) == 0);
    }
    rill_tensor_free(t);
    if ((t = get(r, "s", RILL_STRING, 1, s))) {
        const char *want[] = {"a", "", "hello"};
        for (int i = 0; i < 3; i++) {
            size_t len;
            const char *x = rill_tensor_get_string(t, i, &len);
            CHECK(len == strlen(want[i]) && memcmp(x, want[i], len) == 0);
        }
    }
    rill_tensor_free(t);
    if ((t = get(r, "empty", RILL_FLOAT, 1, s))) CHECK_EQ_INT(rill_tensor_num_elements(t), 0);
    rill_tensor_free(t);
    if ((t = get(r, "rank4", RILL_FLOAT, 4, s))) {
        CHECK_EQ_INT(rill_tensor_num_elements(t), 24);
        for (int i = 0; i < 24; i++) CHECK_NEAR(rill_tensor_get_double(t, i), i, 0);
    }
    rill_tensor_free(t);
}

/* The same tensors written by rill, in TF's order (sorted names), are the same bytes. */
static void check_same_bytes(rill_checkpoint_reader *r, const char *golden, rill_status *s)
{
    int n = rill_checkpoint_reader_num_tensors(r);
    const char **names = calloc((size_t)n, sizeof *names);
    rill_tensor **vals = calloc((size_t)n, sizeof *vals);
    for (int i = 0; i < n; i++) {
        names[i] = rill_checkpoint_reader_name(r, i);
        vals[i] = rill_checkpoint_reader_get_tensor(r, names[i], s);
    }
    mkdir("again", 0755);
    CHECK(save("again/model.ckpt-100", names, vals, n, s));
    const char *suffix[] = {".index", ".data-00000-of-00001"};
    for (int k = 0; k < 2; k++) {
        char a[PATH_MAX], b[PATH_MAX];
        snprintf(a, sizeof a, "%s%s", golden, suffix[k]);
        snprintf(b, sizeof b, "again/model.ckpt-100%s", suffix[k]);
        size_t na = 0, nb = 0;
        uint8_t *pa = read_file(a, &na), *pb = read_file(b, &nb);
        if (!CHECK(pa && pb && na == nb && memcmp(pa, pb, na) == 0))
            fprintf(stderr, "  %s and %s differ (%zu vs %zu bytes)\n", a, b, na, nb);
        free(pa);
        free(pb);
    }
    free_values(vals, n);
    free(names);
    free(vals);
}

static void test_tensorflow_checkpoint(rill_status *s)
{
    const char *golden = GOLDEN_DIR "/model.ckpt-100";
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(golden, s);
    if (!CHECK(r != NULL)) {
        fprintf(stderr, "  %s\n", rill_status_message(s));
        return;
    }
    check_golden_values(r, 1234, s);
    rill_shape sh = rill_checkpoint_reader_shape(r, rill_checkpoint_reader_find(r, "rank4"));
    char buf[64];
    CHECK_EQ_STR(rill_shape_str(&sh, buf, sizeof buf), "[1,2,3,4]");
    check_same_bytes(r, golden, s);
    rill_checkpoint_reader_free(r);

    /* The directory opens its latest checkpoint. */
    r = rill_checkpoint_reader_new(GOLDEN_DIR, s);
    if (CHECK(r != NULL)) CHECK_EQ_STR(rill_checkpoint_reader_prefix(r), golden);
    rill_checkpoint_reader_free(r);
    r = rill_checkpoint_reader_new(GOLDEN_DIR "/model.ckpt-50", s);
    if (CHECK(r != NULL)) check_golden_values(r, 1200, s);
    rill_checkpoint_reader_free(r);

    rill_checkpoint_state *st = rill_get_checkpoint_state(GOLDEN_DIR, s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, golden);
        CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 2);
        if (st->num_all_model_checkpoint_paths == 2) {
            CHECK_EQ_STR(st->all_model_checkpoint_paths[0], GOLDEN_DIR "/model.ckpt-50");
            CHECK_EQ_STR(st->all_model_checkpoint_paths[1], golden);
        }
        CHECK_EQ_INT(st->num_timestamps, 0);
    }
    rill_checkpoint_state_free(st);
    char latest[PATH_MAX];
    CHECK(rill_latest_checkpoint(GOLDEN_DIR, latest, sizeof latest));
    CHECK_EQ_STR(latest, golden);
    CHECK(rill_checkpoint_exists(golden));
    CHECK(!rill_checkpoint_exists(GOLDEN_DIR "/model.ckpt-7"));
}

/* --- the state file --- */

static void check_text(const char *path, const char *want)
{
    size_t n;
    char *text = (char *)read_file(path, &n);
    if (!CHECK_EQ_STR(text, want)) fprintf(stderr, "  in %s\n", path);
    free(text);
}

static void test_state_write(rill_status *s)
{
    mkdir("run", 0755);
    const char *paths[] = {"run/model.ckpt-1", "other/x-2", "/abs/y-3", "run/model.ckpt-4"};
    const double ts[] = {1700000000.0, 1.5, 1e-7, 1700000000.123456};
    CHECK(rill__checkpoint_state_write("run", "run/model.ckpt-4", paths, ts, 4, 1e16, s));
    CHECK(no_temp_files("run"));
    check_text("run/checkpoint", "model_checkpoint_path: \"model.ckpt-4\"\n"
                                 "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
                                 "all_model_checkpoint_paths: \"../other/x-2\"\n"
                                 "all_model_checkpoint_paths: \"/abs/y-3\"\n"
                                 "all_model_checkpoint_paths: \"model.ckpt-4\"\n"
                                 "all_model_checkpoint_timestamps: 1700000000.0\n"
                                 "all_model_checkpoint_timestamps: 1.5\n"
                                 "all_model_checkpoint_timestamps: 1e-07\n"
                                 "all_model_checkpoint_timestamps: 1700000000.123456\n"
                                 "last_preserved_timestamp: 1e+16\n");
    rill_checkpoint_state *st = rill_get_checkpoint_state("run", s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, "run/model.ckpt-4");
        CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 4);
        if (st->num_all_model_checkpoint_paths == 4) {
            CHECK_EQ_STR(st->all_model_checkpoint_paths[0], "run/model.ckpt-1");
            CHECK_EQ_STR(st->all_model_checkpoint_paths[1], "run/../other/x-2");
            CHECK_EQ_STR(st->all_model_checkpoint_paths[2], "/abs/y-3");
        }
        CHECK_EQ_INT(st->num_timestamps, 4);
        for (int i = 0; i < 4 && i < st->num_timestamps; i++)
            CHECK(st->all_model_checkpoint_timestamps[i] == ts[i]);
        CHECK(st->last_preserved_timestamp == 1e16);
    }
    rill_checkpoint_state_free(st);

    /* An absolute directory keeps the paths as given. */
    char abs[PATH_MAX + 16];
    snprintf(abs, sizeof abs, "%s/run", tmpdir);
    char p1[PATH_MAX + 32];
    snprintf(p1, sizeof p1, "%s/model.ckpt-4", abs);
    const char *one[] = {p1};
    CHECK(rill__checkpoint_state_write(abs, p1, one, NULL, 1, 0, s));
    char want[3 * PATH_MAX];
    snprintf(want, sizeof want,
             "model_checkpoint_path: \"%s\"\nall_model_checkpoint_paths: \"%s\"\n", p1, p1);
    check_text("run/checkpoint", want);

    /* Escapes. */
    const char *odd = "run/we\"ird\\na\nme\t\x01\xc3\xa9-1";
    CHECK(rill__checkpoint_state_write("run", odd, &odd, NULL, 1, 0, s));
    check_text("run/checkpoint",
               "model_checkpoint_path: \"we\\\"ird\\\\na\\nme\\t\\001\\303\\251-1\"\n"
               "all_model_checkpoint_paths: \"we\\\"ird\\\\na\\nme\\t\\001\\303\\251-1\"\n");
    st = rill_get_checkpoint_state("run", s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, odd);
        CHECK(st->num_all_model_checkpoint_paths == 1 &&
              strcmp(st->all_model_checkpoint_paths[0], odd) == 0);
    }
    rill_checkpoint_state_free(st);

    CHECK(!rill__checkpoint_state_write("run", "run/checkpoint", NULL, NULL, 0, 0, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "conflicts with path used for checkpoint state");
    CHECK(!rill__checkpoint_state_write("nodir/sub", "nodir/sub/m", NULL, NULL, 0, 0, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
}

static rill_checkpoint_state *state_of(const char *text, rill_status *s)
{
    mkdir("parse", 0755);
    write_file("parse/checkpoint", text, strlen(text));
    return rill_get_checkpoint_state("parse", s);
}

static void test_state_parse(rill_status *s)
{
    rill_checkpoint_state *st =
        state_of("# a comment\n  model_checkpoint_path :'m' \"odel\\x2e\\143kpt\"  # the latest\n"
                 "all_model_checkpoint_paths: [\"a\", 'b'] all_model_checkpoint_paths \"/c\";"
                 "all_model_checkpoint_timestamps: [1.5, -2e3f, inf]\n"
                 "last_preserved_timestamp: 17\n",
                 s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, "parse/model.ckpt");
        CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 3);
        if (st->num_all_model_checkpoint_paths == 3) {
            CHECK_EQ_STR(st->all_model_checkpoint_paths[0], "parse/a");
            CHECK_EQ_STR(st->all_model_checkpoint_paths[2], "/c");
        }
        CHECK_EQ_INT(st->num_timestamps, 3);
        if (st->num_timestamps == 3) {
            CHECK(st->all_model_checkpoint_timestamps[1] == -2000.0);
            CHECK(isinf(st->all_model_checkpoint_timestamps[2]));
        }
        CHECK(st->last_preserved_timestamp == 17.0);
    }
    rill_checkpoint_state_free(st);

    /* Ignored: not text format, or fields CheckpointState does not have. */
    const char *ignored[] = {"model_checkpoint_path: \"unterminated\n",
                             "model_checkpoint_path: unquoted\n",
                             "no_such_field: \"x\"\n",
                             "model_checkpoint_path: \"a\\q\"\n",
                             "model_checkpoint_path: \"nul\\000\"\n",
                             "model_checkpoint_path: [\"a\"]\n",
                             "all_model_checkpoint_timestamps: [1, 2\n",
                             "last_preserved_timestamp: \"x\"\n",
                             "\x01\x02\xff"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        st = state_of(ignored[i], s);
        if (!CHECK(st == NULL && rill_status_ok(s))) fprintf(stderr, "  for %s\n", ignored[i]);
        rill_checkpoint_state_free(st);
    }
    /* Parsed, but naming no checkpoint. */
    const char *invalid[] = {"", "model_checkpoint_path: \"\"\n",
                             "all_model_checkpoint_paths: 'a'"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        st = state_of(invalid[i], s);
        CHECK(st == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_EQ_STR(rill_status_message(s), "Invalid checkpoint state loaded from parse");
    }
    /* Missing: NULL and OK, quietly. */
    CHECK(rill_get_checkpoint_state("no/such/dir", s) == NULL && rill_status_ok(s));
    unlink("parse/checkpoint");
    mkdir("parse/checkpoint", 0755); /* a directory where the file should be */
    CHECK(rill_get_checkpoint_state("parse", s) == NULL && rill_status_ok(s));
    rmdir("parse/checkpoint");
}

static void test_latest(rill_status *s)
{
    mkdir("lat", 0755);
    char buf[PATH_MAX];
    CHECK(!rill_latest_checkpoint("lat", buf, sizeof buf)); /* no state file */
    const char *paths[] = {"lat/model.ckpt-5"};
    CHECK(rill__checkpoint_state_write("lat", paths[0], paths, NULL, 1, 0, s));
    CHECK(!rill_latest_checkpoint("lat", buf, sizeof buf)); /* no lat/model.ckpt-5.index */
    CHECK(!rill_checkpoint_exists("lat/model.ckpt-5"));
    rill_tensor *v = rill_tensor_scalar_float(1);
    const char *name = "v";
    CHECK(save("lat/model.ckpt-5", &name, &v, 1, s));
    rill_tensor_free(v);
    CHECK(rill_checkpoint_exists("lat/model.ckpt-5"));
    CHECK(rill_latest_checkpoint("lat", buf, sizeof buf));
    CHECK_EQ_STR(buf, "lat/model.ckpt-5");
    CHECK(!rill_latest_checkpoint("lat", buf, 5)); /* too small a buffer */

    /* Deleting a checkpoint leaves the others, even one whose name starts the same. */
    v = rill_tensor_scalar_float(2);
    CHECK(save("lat/model.ckpt-50", &name, &v, 1, s));
    rill_tensor_free(v);
    write_file("lat/model.ckpt-5.meta", "m", 1);
    write_file("lat/model.ckpt-5.data-00001-of-00002", "d", 1);
    rill__checkpoint_delete("lat/model.ckpt-5");
    CHECK(!rill_checkpoint_exists("lat/model.ckpt-5"));
    CHECK(access("lat/model.ckpt-5.meta", F_OK) != 0);
    CHECK(access("lat/model.ckpt-5.data-00000-of-00001", F_OK) != 0);
    CHECK(access("lat/model.ckpt-5.data-00001-of-00002", F_OK) != 0);
    CHECK(access("lat/model.ckpt-50.data-00000-of-00001", F_OK) == 0);
    CHECK(rill_checkpoint_exists("lat/model.ckpt-50"));
    rill__checkpoint_delete("lat/never-saved");

    /* Not there at all; a V1 file. */
    rill_checkpoint_reader *r = rill_checkpoint_reader_new("lat/model.ckpt-5", s);
    CHECK(r == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Failed to find any matching files for lat/model.ckpt-5");
    write_file("lat/v1", "not a bundle", 12);
    CHECK(rill_checkpoint_reader_new("lat/v1", s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNIMPLEMENTED);
}

/* --- damage --- */

static bool same_checkpoint(rill_checkpoint_reader *r, rill_checkpoint_reader *good, rill_status *s)
{
    int n = rill_checkpoint_reader_num_tensors(good);
    if (rill_checkpoint_reader_num_tensors(r) != n) return false;
    bool same = true;
    for (int i = 0; i < n; i++) {
        const char *name = rill_checkpoint_reader_name(good, i);
        rill_tensor *a = rill_checkpoint_reader_get_tensor(r, name, s);
        rill_tensor *b = rill_checkpoint_reader_get_tensor(good, name, s);
        same = same && tensors_equal(a, b);
        rill_tensor_free(a);
        rill_tensor_free(b);
    }
    return same;
}

static void test_index_damage(rill_status *s)
{
    const char *names[NVALS];
    rill_tensor *vals[NVALS];
    make_values(names, vals);
    mkdir("dmg", 0755);
    CHECK(save("dmg/m", names, vals, NVALS, s));
    free_values(vals, NVALS);
    rill_checkpoint_reader *good = rill_checkpoint_reader_new("dmg/m", s);
    size_t n;
    uint8_t *idx = read_file("dmg/m.index", &n);
    if (!CHECK(good && idx && n > 48)) return;
    uint8_t *copy = malloc(n);
    int not_loss = 0, wrong_msg = 0, footer_ok = 0;
    for (size_t len = 0; len < n; len++) {
        write_file("dmg/m.index", idx, len);
        rill_checkpoint_reader *r = rill_checkpoint_reader_new("dmg/m", s);
        if (r || rill_status_code(s) != RILL_DATA_LOSS) not_loss++;
        if (!strstr(rill_status_message(s), "dmg/m.index")) wrong_msg++;
        rill_checkpoint_reader_free(r);
    }
    CHECK_EQ_INT(not_loss, 0);
    CHECK_EQ_INT(wrong_msg, 0);
    const uint8_t masks[] = {0x01, 0x80, 0x5a};
    for (size_t pos = 0; pos < n; pos++)
        for (size_t m = 0; m < sizeof masks; m++) {
            memcpy(copy, idx, n);
            copy[pos] ^= masks[m];
            write_file("dmg/m.index", copy, n);
            rill_checkpoint_reader *r = rill_checkpoint_reader_new("dmg/m", s);
            if (r) {
                /* Only the footer's padding and varint spellings are not checksummed. */
                if (pos < n - 48 || !same_checkpoint(r, good, s)) not_loss++;
                footer_ok++;
            } else if (rill_status_code(s) != RILL_DATA_LOSS) {
                not_loss++;
            } else if (!strstr(rill_status_message(s), "dmg/m.index")) {
                wrong_msg++;
            }
            rill_checkpoint_reader_free(r);
        }
    CHECK_EQ_INT(not_loss, 0);
    CHECK_EQ_INT(wrong_msg, 0);
    CHECK(footer_ok > 0 && footer_ok < 48 * 3);
    write_file("dmg/m.index", idx, n);
    rill_checkpoint_reader_free(good);
    free(copy);
    free(idx);
}

static void test_data_damage(rill_status *s)
{
    const char *data_path = "dmg/m.data-00000-of-00001";
    size_t n;
    uint8_t *data = read_file(data_path, &n);
    rill_checkpoint_reader *good = rill_checkpoint_reader_new("dmg/m", s);
    if (!CHECK(data && good)) return;
    int not_loss = 0, wrong_msg = 0;
    for (size_t len = 0; len < n; len += len < 300 ? 1 : 997) {
        write_file(data_path, data, len);
        rill_checkpoint_reader *r = rill_checkpoint_reader_new("dmg/m", s);
        if (r || rill_status_code(s) != RILL_DATA_LOSS) not_loss++;
        if (!strstr(rill_status_message(s), data_path)) wrong_msg++;
        rill_checkpoint_reader_free(r);
    }
    CHECK_EQ_INT(not_loss, 0);
    CHECK_EQ_INT(wrong_msg, 0);
    /* A flipped byte: the tensor holding it fails with DATA_LOSS naming the data file, the
     * others still read. */
    int undetected = 0, collateral = 0;
    for (size_t pos = 0; pos < n; pos += pos < 400 ? 1 : 1009) {
        data[pos] ^= 0x10;
        write_file(data_path, data, n);
        data[pos] ^= 0x10;
        rill_checkpoint_reader *r = rill_checkpoint_reader_new("dmg/m", s);
        if (!CHECK(r != NULL)) break;
        int losses = 0;
        for (int i = 0; i < rill_checkpoint_reader_num_tensors(r); i++) {
            rill_tensor *t =
                rill_checkpoint_reader_get_tensor(r, rill_checkpoint_reader_name(r, i), s);
            if (!t) {
                losses++;
                if (rill_status_code(s) != RILL_DATA_LOSS ||
                    !strstr(rill_status_message(s), data_path))
                    wrong_msg++;
            }
            rill_tensor_free(t);
        }
        if (losses == 0) undetected++;
        if (losses > 1) collateral++;
        rill_checkpoint_reader_free(r);
    }
    CHECK_EQ_INT(undetected, 0);
    CHECK_EQ_INT(collateral, 0);
    CHECK_EQ_INT(wrong_msg, 0);
    write_file(data_path, data, n);
    rill_checkpoint_reader_free(good);
    free(data);
}

/* A table framed correctly (valid checksums, handles and footer) around one data block. */
static size_t frame_table(const uint8_t *block, size_t bn, uint8_t *out)
{
    size_t o = 0;
    uint8_t zero = 0;
    memcpy(out, block, bn);
    o = bn;
    uint32_t c = rill__crc32c_mask(rill__crc32c(rill__crc32c(0, block, bn), &zero, 1));
    out[o++] = 0;
    memcpy(out + o, &c, 4);
    o += 4;
    size_t meta_off = o;
    static const uint8_t meta[] = {0, 0, 0, 0, 1, 0, 0, 0};
    memcpy(out + o, meta, 8);
    o += 8;
    c = rill__crc32c_mask(rill__crc32c(rill__crc32c(0, meta, 8), &zero, 1));
    out[o++] = 0;
    memcpy(out + o, &c, 4);
    o += 4;
    size_t index_off = o;
    rill__pbw ix = {0}, h = {0};
    rill__pbw_varint_raw(&h, 0);
    rill__pbw_varint_raw(&h, bn);
    uint8_t hdr[3] = {0, 1, (uint8_t)h.n};
    rill__pbw_raw(&ix, hdr, 3);
    rill__pbw_raw(&ix, "\xff", 1);
    rill__pbw_raw(&ix, h.p, h.n);
    rill__pbw_raw(&ix, meta, 8);
    memcpy(out + o, ix.p, ix.n);
    o += ix.n;
    c = rill__crc32c_mask(rill__crc32c(rill__crc32c(0, ix.p, ix.n), &zero, 1));
    out[o++] = 0;
    memcpy(out + o, &c, 4);
    o += 4;
    rill__pbw f = {0};
    rill__pbw_varint_raw(&f, meta_off);
    rill__pbw_varint_raw(&f, 8);
    rill__pbw_varint_raw(&f, index_off);
    rill__pbw_varint_raw(&f, ix.n);
    memset(out + o, 0, 48);
    memcpy(out + o, f.p, f.n);
    static const uint8_t magic[] = {0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb};
    memcpy(out + o + 40, magic, 8);
    o += 48;
    rill__pbw_free(&ix);
    rill__pbw_free(&h);
    rill__pbw_free(&f);
    return o;
}

/* A data block of (key, value) pairs, every key in full (one restart point). */
static size_t make_block(const char *const *keys, const rill__pbw *vals, int n, uint8_t *out)
{
    rill__pbw b = {0};
    for (int i = 0; i < n; i++) {
        size_t kl = strlen(keys[i]);
        rill__pbw_varint_raw(&b, 0);
        rill__pbw_varint_raw(&b, kl);
        rill__pbw_varint_raw(&b, vals[i].n);
        rill__pbw_raw(&b, keys[i], kl);
        rill__pbw_raw(&b, vals[i].p, vals[i].n);
    }
    static const uint8_t restarts[] = {0, 0, 0, 0, 1, 0, 0, 0};
    rill__pbw_raw(&b, restarts, 8);
    size_t n_out = b.n;
    memcpy(out, b.p, b.n);
    rill__pbw_free(&b);
    return n_out;
}

/* Opens a table with a header and one entry "v" (float [2] in dmg/m's data file). */
static rill_checkpoint_reader *open_crafted(const rill__pbw *header, const rill__pbw *entry,
                                            rill_status *s)
{
    static uint8_t block[4096], file[8192];
    const char *keys[] = {"", "v"};
    rill__pbw vals[2] = {*header, entry ? *entry : *header};
    size_t bn = make_block(keys, vals, entry ? 2 : 1, block);
    size_t fn = frame_table(block, bn, file);
    write_file("dmg/c.index", file, fn);
    return rill_checkpoint_reader_new("dmg/c", s);
}

static void make_header(rill__pbw *h, int64_t shards, int endian, int64_t producer,
                        int64_t min_consumer, int bad_consumer)
{
    rill__pbw v = {0};
    rill__pbw_sint(&v, 1, producer);
    if (min_consumer) rill__pbw_sint(&v, 2, min_consumer);
    if (bad_consumer) rill__pbw_sint(&v, 3, bad_consumer);
    h->n = 0;
    rill__pbw_sint(h, 1, shards);
    if (endian) rill__pbw_varint(h, 2, (uint64_t)endian);
    rill__pbw_message(h, 3, &v);
    rill__pbw_free(&v);
}

static void make_entry(rill__pbw *e, int dtype, int64_t dim, int64_t offset, int64_t size,
                       bool sliced)
{
    rill__pbw shape = {0}, d = {0};
    rill__pbw_sint(&d, 1, dim);
    rill__pbw_message(&shape, 2, &d);
    e->n = 0;
    rill__pbw_varint(e, 1, (uint64_t)dtype);
    rill__pbw_message(e, 2, &shape);
    rill__pbw_sint(e, 4, offset);
    rill__pbw_sint(e, 5, size);
    rill__pbw_fixed32(e, 6, 0x12345678);
    if (sliced) rill__pbw_bytes(e, 7, "", 0);
    rill__pbw_free(&shape);
    rill__pbw_free(&d);
}

static void expect_loss(rill_checkpoint_reader *r, rill_status *s, const char *what)
{
    CHECK(r == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DATA_LOSS);
    CHECK_STR_CONTAINS(rill_status_message(s), what);
    rill_checkpoint_reader_free(r);
}

static void test_crafted_tables(rill_status *s)
{
    if (!CHECK(rename("dmg/m.data-00000-of-00001", "dmg/c.data-00000-of-00001") == 0)) return;
    rill__pbw h = {0}, e = {0};
    make_header(&h, 1, 0, 1, 0, 0);
    make_entry(&e, RILL_FLOAT, 2, 0, 8, false);
    rill_checkpoint_reader *r = open_crafted(&h, &e, s);
    CHECK(r != NULL); /* the frame itself is right */
    rill_checkpoint_reader_free(r);

    make_header(&h, 1, 0, 1, 2, 0);
    expect_loss(open_crafted(&h, &e, s), s, "min consumer version 2");
    make_header(&h, 1, 0, 1, 0, 1);
    expect_loss(open_crafted(&h, &e, s), s, "disallows consumer version 1");
    make_header(&h, 1, 0, -1, 0, 0);
    expect_loss(open_crafted(&h, &e, s), s, "producer version -1");
    make_header(&h, 1, 2, 1, 0, 0);
    expect_loss(open_crafted(&h, &e, s), s, "endianness 2");
    make_header(&h, 0, 0, 1, 0, 0);
    expect_loss(open_crafted(&h, &e, s), s, "0 shards");
    make_header(&h, 2, 0, 1, 0, 0);
    expect_loss(open_crafted(&h, &e, s), s, "dmg/c.data-00000-of-00002 is missing");

    make_header(&h, 1, 0, 1, 0, 0);
    make_entry(&e, RILL_FLOAT, 2, 0, 4, false);
    expect_loss(open_crafted(&h, &e, s), s, "do not fit");
    make_entry(&e, RILL_FLOAT, 2, 1 << 30, 8, false);
    expect_loss(open_crafted(&h, &e, s), s, "lies outside dmg/c.data-00000-of-00001");
    make_entry(&e, RILL_FLOAT, -1, 0, 8, false);
    expect_loss(open_crafted(&h, &e, s), s, "bad BundleEntryProto for tensor 'v'");
    make_entry(&e, RILL_STRING, 1LL << 40, 0, 8, false);
    expect_loss(open_crafted(&h, &e, s), s, "do not fit");
    make_entry(&e, RILL_FLOAT, 1LL << 62, 0, 8, false);
    expect_loss(open_crafted(&h, &e, s), s, "do not fit");
    expect_loss(open_crafted(&e, &e, s), s, "bad BundleHeaderProto");

    /* dtypes rill lacks are listed but not read; so are partitioned variables. */
    make_entry(&e, 11 /* DT_QINT8 */, 2, 0, 2, false);
    r = open_crafted(&h, &e, s);
    if (CHECK(r != NULL)) {
        CHECK_EQ_INT(rill_checkpoint_reader_dtype(r, 0), 11);
        CHECK(rill_checkpoint_reader_get_tensor(r, "v", s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_UNIMPLEMENTED);
        CHECK_STR_CONTAINS(rill_status_message(s), "dtype 11");
    }
    rill_checkpoint_reader_free(r);
    make_entry(&e, RILL_FLOAT, 2, 0, 0, true);
    r = open_crafted(&h, &e, s);
    if (CHECK(r != NULL)) {
        CHECK(rill_checkpoint_reader_get_tensor(r, "v", s) == NULL);
        CHECK_STR_CONTAINS(rill_status_message(s), "partitioned variable");
    }
    rill_checkpoint_reader_free(r);
    /* A wrong stored crc. */
    make_entry(&e, RILL_FLOAT, 2, 0, 8, false);
    r = open_crafted(&h, &e, s);
    if (CHECK(r != NULL)) {
        CHECK(rill_checkpoint_reader_get_tensor(r, "v", s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_DATA_LOSS);
        CHECK_STR_CONTAINS(rill_status_message(s), "checksum does not match");
    }
    rill_checkpoint_reader_free(r);
    expect_loss(open_crafted(&e, NULL, s), s, "bad BundleHeaderProto");
    rill__pbw_free(&h);
    rill__pbw_free(&e);
}

/* Random and mutated contents inside correct framing reach the block and proto parsers. */
static void test_fuzz(rill_status *s)
{
    rill__rng g;
    rill__rng_seed(&g, 42);
    static uint8_t block[4096], file[8192];
    rill__pbw h = {0}, e = {0};
    make_header(&h, 1, 0, 1, 0, 0);
    int opened = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t bn;
        if (iter % 3 == 0) {
            bn = rill__rng_next(&g) % 200;
            for (size_t i = 0; i < bn; i++) block[i] = (uint8_t)rill__rng_next(&g);
        } else {
            make_entry(&e, (int)(rill__rng_next(&g) % 25), (int64_t)(rill__rng_next(&g) % 5), 0,
                       (int64_t)(rill__rng_next(&g) % 300), rill__rng_next(&g) % 8 == 0);
            const char *keys[] = {"", "v"};
            rill__pbw vals[2] = {h, e};
            bn = make_block(keys, vals, 2, block);
            int flips = 1 + (int)(rill__rng_next(&g) % 3);
            for (int k = 0; k < flips; k++)
                block[rill__rng_next(&g) % bn] ^= (uint8_t)(1u << (rill__rng_next(&g) % 8));
        }
        size_t fn = frame_table(block, bn, file);
        write_file("dmg/c.index", file, fn);
        rill_checkpoint_reader *r = rill_checkpoint_reader_new("dmg/c", s);
        if (r) {
            opened++;
            for (int i = 0; i < rill_checkpoint_reader_num_tensors(r); i++)
                rill_tensor_free(
                    rill_checkpoint_reader_get_tensor(r, rill_checkpoint_reader_name(r, i), s));
        } else if (rill_status_code(s) == RILL_OK) {
            CHECK(!"a failed open must say why");
        }
        rill_checkpoint_reader_free(r);
        /* Pure garbage, framed by nothing. */
        size_t gn = rill__rng_next(&g) % 600;
        for (size_t i = 0; i < gn; i++) file[i] = (uint8_t)rill__rng_next(&g);
        if (iter % 2 && gn >= 8) memcpy(file + gn - 8, "\x57\xfb\x80\x8b\x24\x75\x47\xdb", 8);
        write_file("dmg/c.index", file, gn);
        r = rill_checkpoint_reader_new("dmg/c", s);
        CHECK(r == NULL && rill_status_code(s) == RILL_DATA_LOSS);
        rill_checkpoint_reader_free(r);
    }
    CHECK(opened > 0);
    rill__pbw_free(&h);
    rill__pbw_free(&e);
}

int main(void)
{
    if (!mkdtemp(tmpdir) || chdir(tmpdir) != 0) {
        perror(tmpdir);
        return 1;
    }
    rill_status *s = rill_status_new();
    test_crc();
    test_round_trip(s);
    test_shards(s);
    test_many_blocks(s);
    test_tensorflow_checkpoint(s);
    test_state_write(s);
    test_state_parse(s);
    test_latest(s);
    test_index_damage(s);
    test_data_damage(s);
    test_crafted_tables(s);
    test_fuzz(s);
    rill_status_free(s);
    if (chdir("/") == 0) nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    TEST_MAIN_END();
}
