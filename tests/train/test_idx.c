/* test_idx.c - rill_idx_read_images / rill_idx_read_labels on real files.
 *
 * Small IDX files are written, plain and gzipped, into a fresh mkdtemp directory and read back.
 * Then every kind of damage: missing file, directory, empty file, wrong magic, short header,
 * absurd dimensions, truncated data (at every length), extra data, and a gzip file with each of
 * its bytes flipped in turn. Each must give the right code and a message naming the file, never a
 * crash or a leak (run under ASan). When Debian's dataset-fashion-mnist package is installed, the
 * real test set is read too; without it that part is skipped, or fails where
 * test_required("RILL_REQUIRE_DATA") (CI=true, or RILL_REQUIRE_DATA=1).
 */
#include "../test.h"

#include <rill/data.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[] = "/tmp/rill_test_idx_XXXXXX";

/* Paths of files written, removed at the end. */
static char *written[128];
static int nwritten;

static char *path_in_tmp(const char *name)
{
    char *p = malloc(strlen(tmpdir) + strlen(name) + 2);
    sprintf(p, "%s/%s", tmpdir, name);
    return p;
}

/* Writes bytes to tmpdir/name, gzipped when gz; returns the path (owned by the test). */
static const char *write_file(const char *name, const void *bytes, size_t n, bool gz)
{
    char *path = path_in_tmp(name);
    if (!CHECK(nwritten < (int)(sizeof written / sizeof written[0]))) abort();
    written[nwritten++] = path;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        CHECK(f != NULL);
        if (!f) return path;
        if (n) CHECK_EQ_INT(gzwrite(f, bytes, (unsigned)n), n);
        CHECK_EQ_INT(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (!f) return path;
        if (n) CHECK_EQ_INT(fwrite(bytes, 1, n, f), n);
        CHECK_EQ_INT(fclose(f), 0);
    }
    return path;
}

/* Removes the file written last, for loops that write many. */
static void discard_last(void)
{
    if (nwritten == 0) return;
    nwritten--;
    unlink(written[nwritten]);
    free(written[nwritten]);
}

/* Reads a whole (plain) file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(buf, 1, (size_t)(len > 0 ? len : 0), f);
    fclose(f);
    return buf;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* An IDX image file in memory: header then pixels i*37+11 (mod 256), or pseudo-random ones. */
static unsigned char *make_images(uint32_t n, uint32_t rows, uint32_t cols, bool random,
                                  size_t *len)
{
    size_t data = (size_t)n * rows * cols;
    unsigned char *b = malloc(16 + data);
    put_be32(b, 0x00000803);
    put_be32(b + 4, n);
    put_be32(b + 8, rows);
    put_be32(b + 12, cols);
    uint32_t x = 12345;
    for (size_t i = 0; i < data; i++) {
        x = x * 1103515245u + 12345u;
        b[16 + i] = random ? (unsigned char)(x >> 16) : (unsigned char)(i * 37 + 11);
    }
    *len = 16 + data;
    return b;
}

static unsigned char *make_labels(uint32_t n, size_t *len)
{
    unsigned char *b = malloc(8 + n);
    put_be32(b, 0x00000801);
    put_be32(b + 4, n);
    for (uint32_t i = 0; i < n; i++) b[8 + i] = (unsigned char)(i % 10);
    *len = 8 + n;
    return b;
}

static bool check_images(const rill_tensor *t, const unsigned char *file, uint32_t n, uint32_t px)
{
    if (!CHECK(t != NULL)) return false;
    CHECK_EQ_INT(rill_tensor_dtype(t), RILL_FLOAT);
    CHECK_EQ_INT(rill_tensor_rank(t), 2);
    CHECK_EQ_INT(rill_tensor_dim(t, 0), n);
    CHECK_EQ_INT(rill_tensor_dim(t, 1), px);
    const float *v = rill_tensor_data(t);
    int bad = 0;
    for (size_t i = 0; i < (size_t)n * px; i++)
        if (v[i] != (float)file[16 + i] / 255.0f) bad++;
    return CHECK_EQ_INT(bad, 0);
}

/* The read fails with code, and the message names the file and contains needle. */
static void check_fails(rill_tensor *t, rill_status *s, rill_code code, const char *path,
                        const char *needle)
{
    CHECK(t == NULL);
    rill_tensor_free(t);
    CHECK_EQ_INT(rill_status_code(s), code);
    CHECK_STR_CONTAINS(rill_status_message(s), path);
    CHECK_STR_CONTAINS(rill_status_message(s), needle);
}

static void test_read_back(void)
{
    rill_status *s = rill_status_new();
    size_t len;
    unsigned char *img = make_images(3, 2, 4, false, &len);
    for (int gz = 0; gz < 2; gz++) {
        const char *p = write_file(gz ? "img.gz" : "img", img, len, gz);
        rill_tensor *t = rill_idx_read_images(p, s);
        CHECK_EQ_INT(rill_status_code(s), RILL_OK);
        check_images(t, img, 3, 8);
        if (t) {
            const float *v = rill_tensor_data(t);
            CHECK_NEAR(v[0], 11.0 / 255, 1e-7);
            CHECK_NEAR(v[1], 48.0 / 255, 1e-7);
        }
        rill_tensor_free(t);
    }
    free(img);

    /* A byte of every value, so 0 maps to 0.0 and 255 to exactly 1.0. */
    unsigned char all[16 + 256];
    put_be32(all, 0x803);
    put_be32(all + 4, 1);
    put_be32(all + 8, 16);
    put_be32(all + 12, 16);
    for (int i = 0; i < 256; i++) all[16 + i] = (unsigned char)i;
    rill_tensor *t = rill_idx_read_images(write_file("all.gz", all, sizeof all, true), s);
    if (check_images(t, all, 1, 256)) {
        const float *v = rill_tensor_data(t);
        CHECK(v[0] == 0.0f);
        CHECK(v[255] == 1.0f);
        CHECK_NEAR(v[128], 128.0 / 255, 1e-7);
    }
    rill_tensor_free(t);

    unsigned char *lab = make_labels(25, &len);
    for (int gz = 0; gz < 2; gz++) {
        t = rill_idx_read_labels(write_file(gz ? "lab.gz" : "lab", lab, len, gz), s);
        CHECK_EQ_INT(rill_status_code(s), RILL_OK);
        if (CHECK(t != NULL)) {
            CHECK_EQ_INT(rill_tensor_dtype(t), RILL_INT32);
            CHECK_EQ_INT(rill_tensor_rank(t), 1);
            CHECK_EQ_INT(rill_tensor_dim(t, 0), 25);
            const int32_t *v = rill_tensor_data(t);
            CHECK_EQ_INT(v[0], 0);
            CHECK_EQ_INT(v[13], 3);
            CHECK_EQ_INT(v[24], 4);
        }
        rill_tensor_free(t);
    }
    free(lab);

    /* Empty data sets are well formed. */
    img = make_images(0, 28, 28, false, &len);
    t = rill_idx_read_images(write_file("empty_img", img, len, false), s);
    if (CHECK(t != NULL)) {
        CHECK_EQ_INT(rill_tensor_dim(t, 0), 0);
        CHECK_EQ_INT(rill_tensor_dim(t, 1), 784);
    }
    rill_tensor_free(t);
    free(img);
    lab = make_labels(0, &len);
    t = rill_idx_read_labels(write_file("empty_lab.gz", lab, len, true), s);
    if (CHECK(t != NULL)) CHECK_EQ_INT(rill_tensor_num_elements(t), 0);
    rill_tensor_free(t);
    free(lab);
    rill_status_free(s);
}

static void test_open_errors(void)
{
    rill_status *s = rill_status_new();
    char *missing = path_in_tmp("no_such_file.gz");
    check_fails(rill_idx_read_images(missing, s), s, RILL_NOT_FOUND, missing, strerror(ENOENT));
    check_fails(rill_idx_read_labels(missing, s), s, RILL_NOT_FOUND, missing, strerror(ENOENT));
    free(missing);
    check_fails(rill_idx_read_labels(tmpdir, s), s, RILL_FAILED_PRECONDITION, tmpdir, "directory");
    CHECK(rill_idx_read_images(NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    /* A NULL status is allowed: NULL alone says it failed. */
    CHECK(rill_idx_read_images("/nonexistent/x", NULL) == NULL);
    rill_status_free(s);
}

static void test_bad_headers(void)
{
    rill_status *s = rill_status_new();
    size_t len;
    const char *p;

    p = write_file("empty", "", 0, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "too short for an IDX header");
    p = write_file("empty.gz", "", 0, true);
    check_fails(rill_idx_read_labels(p, s), s, RILL_DATA_LOSS, p, "too short for an IDX header");

    /* Labels read as images and the other way round, and plain nonsense. */
    unsigned char *lab = make_labels(4, &len);
    p = write_file("lab4.gz", lab, len, true);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p,
                "bad magic number 0x00000801, expected 0x00000803");
    CHECK_STR_CONTAINS(rill_status_message(s), "label file");
    free(lab);
    unsigned char *img = make_images(2, 3, 3, false, &len);
    p = write_file("img2", img, len, false);
    check_fails(rill_idx_read_labels(p, s), s, RILL_DATA_LOSS, p, "bad magic number 0x00000803");
    CHECK_STR_CONTAINS(rill_status_message(s), "image file");
    p = write_file("text.txt", "hello, world\n", 13, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "bad magic number 0x68656c6c");

    /* Header cut inside the dimensions. */
    p = write_file("short_hdr", img, 10, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p,
                "truncated header: 6 of the 12 bytes");

    /* Absurd dimensions: over the limit, overflowing 64 bits, empty images. */
    put_be32(img + 4, 0xffffffffu);
    put_be32(img + 8, 0xffffffffu);
    put_be32(img + 12, 0xffffffffu);
    p = write_file("huge", img, len, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "limit");
    CHECK_STR_CONTAINS(rill_status_message(s), "4294967295 images of 4294967295x4294967295");
    put_be32(img + 4, 1u << 22);
    put_be32(img + 8, 28);
    put_be32(img + 12, 28);
    p = write_file("huge2.gz", img, len, true);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "limit");
    put_be32(img + 4, 5);
    put_be32(img + 8, 0);
    p = write_file("zero_rows", img, 16, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "cannot be empty");
    /* Just under the limit, from a tiny file: truncated, without allocating 1.5 GB first. */
    put_be32(img + 4, 2000000);
    put_be32(img + 8, 28);
    put_be32(img + 12, 28);
    p = write_file("liar.gz", img, len, true);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p,
                "truncated: the header describes 2000000 images of 28x28 (1568000000 bytes of "
                "data) but only 18 bytes follow it");
    free(img);

    unsigned char hdr[8];
    put_be32(hdr, 0x801);
    put_be32(hdr + 4, 0x80000001u);
    p = write_file("huge_lab", hdr, 8, false);
    check_fails(rill_idx_read_labels(p, s), s, RILL_DATA_LOSS, p, "limit");
    rill_status_free(s);
}

static void test_bad_data(void)
{
    rill_status *s = rill_status_new();
    size_t len;
    unsigned char *img = make_images(4, 5, 6, false, &len);

    /* Every truncation of a plain file, and the gzip of every truncation. */
    int wrong = 0;
    for (size_t cut = 0; cut < len; cut++) {
        for (int gz = 0; gz < 2; gz++) {
            const char *p = write_file(gz ? "cut.gz" : "cut", img, cut, gz);
            rill_tensor *t = rill_idx_read_images(p, s);
            if (t || rill_status_code(s) != RILL_DATA_LOSS || !strstr(rill_status_message(s), p))
                wrong++;
            rill_tensor_free(t);
            discard_last();
        }
    }
    CHECK_EQ_INT(wrong, 0);
    const char *p = write_file("cut_last", img, len - 1, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p,
                "truncated: the header describes 4 images of 5x6 (120 bytes of data) but only "
                "119 bytes follow it");

    /* Extra bytes after the data. */
    unsigned char *longer = malloc(len + 3);
    memcpy(longer, img, len);
    memset(longer + len, 7, 3);
    p = write_file("long.gz", longer, len + 3, true);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "more bytes follow");
    free(longer);
    free(img);
    rill_status_free(s);
}

static void test_corrupt_gzip(void)
{
    rill_status *s = rill_status_new();
    size_t len = 0, gzlen = 0;
    unsigned char *img = make_images(20, 8, 8, true, &len);
    const char *good = write_file("good.gz", img, len, true);
    unsigned char *gzbytes = slurp(good, &gzlen);
    if (!CHECK(gzbytes != NULL && gzlen > 30)) return;

    /* The gzip trailer cut off: the data is all there but unchecked. */
    const char *p = write_file("no_trailer.gz", gzbytes, gzlen - 8, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "ends before its trailer");

    /* A damaged CRC. */
    gzbytes[gzlen - 6] ^= 0x55;
    p = write_file("bad_crc.gz", gzbytes, gzlen, false);
    check_fails(rill_idx_read_images(p, s), s, RILL_DATA_LOSS, p, "gzip data is corrupt");
    CHECK_STR_CONTAINS(rill_status_message(s), "(zlib: incorrect data check)");
    gzbytes[gzlen - 6] ^= 0x55;

    /* Flip each byte in turn. The gzip header's time, flags and OS bytes are not checked by
     * anyone, so those may read fine, but then the data must be right; everything else is
     * DATA_LOSS naming the file. */
    int wrong = 0, failed = 0;
    for (size_t i = 0; i < gzlen; i++) {
        gzbytes[i] ^= 0xA5;
        p = write_file("flip.gz", gzbytes, gzlen, false);
        rill_tensor *t = rill_idx_read_images(p, s);
        if (t) {
            const float *v = rill_tensor_data(t);
            for (size_t j = 0; j < len - 16; j++)
                if (v[j] != (float)img[16 + j] / 255.0f) {
                    wrong++;
                    break;
                }
            if (i >= 10) wrong++; /* past the fixed header, every byte matters */
        } else {
            failed++;
            if (rill_status_code(s) != RILL_DATA_LOSS || !strstr(rill_status_message(s), p))
                wrong++;
        }
        rill_tensor_free(t);
        gzbytes[i] ^= 0xA5;
        discard_last();
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK(failed >= (int)gzlen - 10);
    free(gzbytes);
    free(img);
    rill_status_free(s);
}

static void test_fashion_mnist(void)
{
    const char *labels_path = RILL_FASHION_MNIST_DIR "/t10k-labels-idx1-ubyte.gz";
    const char *images_path = RILL_FASHION_MNIST_DIR "/t10k-images-idx3-ubyte.gz";
    if (access(labels_path, R_OK) != 0) {
        /* `make test` installs the data first; there (CI, RILL_REQUIRE_DATA=1) it must exist. */
        if (test_required("RILL_REQUIRE_DATA")) {
            CHECK(!"Fashion-MNIST is installed");
            fprintf(stderr, "  %s: %s (Debian: apt-get install dataset-fashion-mnist)\n",
                    labels_path, strerror(errno));
        } else {
            TEST_SKIP_PART("the Fashion-MNIST checks",
                           "%s is not installed (Debian: apt-get install dataset-fashion-mnist)",
                           labels_path);
        }
        return;
    }
    rill_status *s = rill_status_new();
    rill_tensor *labels = rill_idx_read_labels(labels_path, s);
    CHECK_EQ_STR(rill_status_message(s), "");
    if (CHECK(labels != NULL)) {
        CHECK_EQ_INT(rill_tensor_num_elements(labels), 10000);
        const int32_t *v = rill_tensor_data(labels);
        int count[10] = {0}, out_of_range = 0;
        for (int i = 0; i < 10000; i++) {
            if (v[i] < 0 || v[i] > 9)
                out_of_range++;
            else
                count[v[i]]++;
        }
        CHECK_EQ_INT(out_of_range, 0);
        for (int c = 0; c < 10; c++) CHECK_EQ_INT(count[c], 1000);
    }
    rill_tensor_free(labels);

    rill_tensor *images = rill_idx_read_images(images_path, s);
    CHECK_EQ_STR(rill_status_message(s), "");
    if (CHECK(images != NULL)) {
        CHECK_EQ_INT(rill_tensor_dim(images, 0), 10000);
        CHECK_EQ_INT(rill_tensor_dim(images, 1), 784);
        const float *v = rill_tensor_data(images);
        int out_of_range = 0;
        double sum = 0;
        float mx = 0;
        for (int64_t i = 0; i < 10000 * 784; i++) {
            if (!(v[i] >= 0.0f && v[i] <= 1.0f)) out_of_range++;
            sum += v[i];
            if (v[i] > mx) mx = v[i];
        }
        CHECK_EQ_INT(out_of_range, 0);
        CHECK(mx == 1.0f);
        /* Fashion-MNIST's mean pixel is about 0.286. */
        CHECK_NEAR(sum / (10000.0 * 784), 0.286, 0.01);
    }
    rill_tensor_free(images);
    rill_status_free(s);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_read_back();
    test_open_errors();
    test_bad_headers();
    test_bad_data();
    test_corrupt_gzip();
    test_fashion_mnist();
    for (int i = 0; i < nwritten; i++) {
        unlink(written[i]);
        free(written[i]);
    }
    CHECK_EQ_INT(rmdir(tmpdir), 0);
    TEST_MAIN_END();
}
