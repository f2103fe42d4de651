/* fuzz.h - what the libFuzzer targets in fuzz/ share (header-only: each target is one file).
 *
 * A target feeds hostile bytes to one of rill's decoders and checks what the decoder promises:
 * no crash, leak or undefined behaviour (ASan, LeakSanitizer and UBSan watch), and, where the
 * decoder accepts the input, the invariants FUZZ_ASSERT states (bounds, round trips). Strings
 * and buffers handed to rill live in blocks of exactly their size, so a read one byte past the
 * end is an ASan report. Decoders that read files get them from this process's own scratch
 * directory (fuzz_dir), made once and removed at exit. docs/ARCHITECTURE.md ("Fuzzing") says
 * how to run them. */
#ifndef RILL_FUZZ_FUZZ_H
#define RILL_FUZZ_FUZZ_H

#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A broken promise of the decoder: reported as a crash, with the input saved by libFuzzer. */
#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond);      \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* rill's log lines (a warning per rejected file) would drown libFuzzer's own output. */
static inline void fuzz_quiet(void)
{
    setenv("RILL_LOG_LEVEL", "9", 1);
}

/* p[0, n) as a NUL-terminated string in a block of exactly n + 1 bytes; caller frees. */
static inline char *fuzz_strndup(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) abort();
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* The input as a cursor that the target cuts into pieces; reading past the end gives zeros
 * and empty pieces, so every input means something. */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in;

static inline uint8_t fuzz_u8(fuzz_in *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static inline uint32_t fuzz_u16(fuzz_in *in)
{
    uint32_t lo = fuzz_u8(in);
    return lo | (uint32_t)fuzz_u8(in) << 8;
}

static inline uint32_t fuzz_u32(fuzz_in *in)
{
    uint32_t lo = fuzz_u16(in);
    return lo | fuzz_u16(in) << 16;
}

/* The next min(want, what is left) bytes; *got says how many. */
static inline const uint8_t *fuzz_bytes(fuzz_in *in, size_t want, size_t *got)
{
    const uint8_t *p = in->p;
    *got = want < in->n ? want : in->n;
    in->p += *got;
    in->n -= *got;
    return p;
}

/* The bytes up to the next NUL (consumed, not returned) or the end, as a new string. */
static inline char *fuzz_next_str(fuzz_in *in)
{
    const uint8_t *z = memchr(in->p, 0, in->n);
    size_t len = z ? (size_t)(z - in->p) : in->n, got;
    const uint8_t *p = fuzz_bytes(in, len, &got);
    if (z) fuzz_u8(in);
    return fuzz_strndup(p, got);
}

static int fuzz__rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static char fuzz__dir[64];

static void fuzz__rm_dir(void)
{
    if (fuzz__dir[0]) nftw(fuzz__dir, fuzz__rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* This process's scratch directory, removed at exit: /dev/shm/rill-fuzz-XXXXXX where there is
 * a /dev/shm (tmpfs: the files never reach a disk, and the writers' fsyncs cost nothing), else
 * /tmp/rill-fuzz-XXXXXX. */
static inline const char *fuzz_dir(void)
{
    if (!fuzz__dir[0]) {
        struct stat st;
        bool shm =
            stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0;
        snprintf(fuzz__dir, sizeof fuzz__dir, "%s/rill-fuzz-XXXXXX", shm ? "/dev/shm" : "/tmp");
        if (!mkdtemp(fuzz__dir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(fuzz__rm_dir);
    }
    return fuzz__dir;
}

/* Replaces path's contents with p[0, n). */
static inline void fuzz_write_file(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror(path);
            abort();
        }
        p += w;
        n -= (size_t)w;
    }
    close(fd);
}

#endif
