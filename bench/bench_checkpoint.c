/* bench_checkpoint.c - checkpoint save and restore bandwidth against raw file I/O, in one run.
 *
 * A local session holds float32 variables totalling --mib MiB (--var_kib each). Each repetition
 * times, on the same file system and with the same bytes:
 *
 *   save      rill_saver_save (data file, index and `checkpoint` state, each fsynced)
 *             against write() of the same bytes, one call per variable, then fsync;
 *   restore   rill_saver_restore with the checkpoint in the page cache ("warm"), and again after
 *             the checkpoint's pages were dropped ("cold"), against read() of the raw file in
 *             the same page-cache state, into a buffer touched beforehand and, like rill's big
 *             tensors, 2 MiB aligned with huge pages asked for (one more warm read into a
 *             buffer in 4 KiB pages shows what the page size costs).
 *
 * Raw and rill alternate which goes first. Cold means posix_fadvise(DONTNEED) on the files
 * (--cold=fadvise, default: it leaves the other users' page cache alone) or a global
 * `echo 3 > /proc/sys/vm/drop_caches` (--cold=drop_caches); either way mincore() checks, before
 * each cold read, how much of the file is still resident, and the output says so.
 *
 * The parts that bound the rates are measured too: crc32c (rill__crc32c, one pass on save and
 * one on restore), and memcpy (restore assigns the read tensor into the variable). Bandwidths are
 * GB/s of variable bytes, 1 GB = 1e9 bytes. The first save and restore, which also build their
 * plans, are timed apart. A last, untimed restore over zeroed variables checks that the bytes
 * came back. */
#include <rill/rill.h>

#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MAX_REPS 16
#define GB       1e9

typedef struct bench {
    const char *dir, *cold;
    char prefix[PATH_MAX + 64], raw_path[PATH_MAX + 64], data_path[PATH_MAX + 128],
        index_path[PATH_MAX + 128], state_path[PATH_MAX + 64];
    size_t total, var_bytes;
    int nvars;
    uint8_t *raw;   /* the variables' bytes back to back, and the raw read's target */
    uint8_t *small; /* the same size in 4 KiB pages, for one more raw read */
    rill_graph *g;
    rill_session *sess;
    rill_saver *saver;
    rill_output *vars;
    rill_node *zero; /* assigns zeros to every variable (for the final check) */
    rill_status *s;
} bench;

static double median(double *v, int n)
{
    double c[MAX_REPS];
    memcpy(c, v, (size_t)n * sizeof *v);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && c[j] < c[j - 1]; j--) {
            double t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    return n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
}

static double minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

static double maximum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

static _Noreturn void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_checkpoint: %s: %s\n", what, detail);
    exit(1);
}

/* The mount that holds path: the longest mount point in /proc/mounts that prefixes it. */
static void describe_fs(const char *path, char *out, size_t n)
{
    char real[PATH_MAX];
    if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
    FILE *f = fopen("/proc/mounts", "r");
    char dev[256], mnt[PATH_MAX], type[64], best_dev[256] = "?", best_mnt[PATH_MAX] = "?",
                                            best_type[64] = "?";
    size_t best = 0;
    while (f && fscanf(f, "%255s %4095s %63s %*[^\n]", dev, mnt, type) == 3) {
        size_t k = strlen(mnt);
        bool under = strncmp(real, mnt, k) == 0 &&
                     (real[k] == '/' || real[k] == '\0' || (k == 1 && mnt[0] == '/'));
        if (under && k >= best) {
            best = k;
            snprintf(best_dev, sizeof best_dev, "%s", dev);
            snprintf(best_mnt, sizeof best_mnt, "%s", mnt);
            snprintf(best_type, sizeof best_type, "%s", type);
        }
    }
    if (f) fclose(f);
    snprintf(out, n, "%s on %s (%s)", best_type, best_mnt, best_dev);
}

static void unlink_all(bench *b)
{
    unlink(b->raw_path);
    unlink(b->data_path);
    unlink(b->index_path);
    unlink(b->state_path);
}

/* --- raw file I/O: the baseline --- */

static double raw_write(bench *b, double *fsync_s)
{
    double t0 = rill__now_seconds();
    int fd = open(b->raw_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die(b->raw_path, strerror(errno));
    for (size_t off = 0; off < b->total; off += b->var_bytes) {
        size_t n = b->total - off < b->var_bytes ? b->total - off : b->var_bytes;
        for (size_t done = 0; done < n;) {
            ssize_t w = write(fd, b->raw + off + done, n - done);
            if (w <= 0) die("write", strerror(errno));
            done += (size_t)w;
        }
    }
    double t1 = rill__now_seconds();
    if (fsync(fd) != 0) die("fsync", strerror(errno));
    close(fd);
    double t2 = rill__now_seconds();
    *fsync_s = t2 - t1;
    return t2 - t0;
}

static double raw_read(bench *b, uint8_t *dst)
{
    double t0 = rill__now_seconds();
    int fd = open(b->raw_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die(b->raw_path, strerror(errno));
    for (size_t off = 0; off < b->total;) {
        size_t want = b->total - off < b->var_bytes ? b->total - off : b->var_bytes;
        ssize_t r = read(fd, dst + off, want);
        if (r <= 0) die("read", r < 0 ? strerror(errno) : "short file");
        off += (size_t)r;
    }
    close(fd);
    return rill__now_seconds() - t0;
}

/* --- page cache --- */

/* Fraction of path's pages in the page cache. */
static double resident(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    fstat(fd, &st);
    double frac = -1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)st.st_size;
    void *p = len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p != MAP_FAILED) {
        size_t npages = (len + page - 1) / page, in = 0;
        unsigned char *vec = malloc(npages);
        if (vec && mincore(p, len, vec) == 0) {
            for (size_t i = 0; i < npages; i++) in += vec[i] & 1;
            frac = (double)in / (double)npages;
        }
        free(vec);
        munmap(p, len);
    }
    close(fd);
    return frac;
}

static void drop_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Drops the pages of the given files; false when the method cannot work here. */
static bool drop(const bench *b, const char *const *paths, int n)
{
    if (strcmp(b->cold, "drop_caches") == 0) {
        sync();
        int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "3\n", 2) != 2) {
            if (fd >= 0) close(fd);
            return false;
        }
        close(fd);
        return true;
    }
    for (int i = 0; i < n; i++) drop_file(paths[i]);
    return true;
}

/* --- rill --- */

static double rill_save(bench *b)
{
    double t0 = rill__now_seconds();
    if (rill_saver_save(b->saver, b->sess, b->prefix, -1, NULL, 0, b->s) != RILL_OK)
        die("rill_saver_save", rill_status_message(b->s));
    return rill__now_seconds() - t0;
}

static double rill_restore(bench *b)
{
    double t0 = rill__now_seconds();
    if (rill_saver_restore(b->saver, b->sess, b->prefix, b->s) != RILL_OK)
        die("rill_saver_restore", rill_status_message(b->s));
    return rill__now_seconds() - t0;
}

/* crc32c of every variable's value now, in crcs[]. The fetched references are dropped again so
 * that the variables stay exclusive (an Assign into a shared value would copy). */
static void variable_crcs(bench *b, uint32_t *crcs, bool copy_to_raw)
{
    for (int i = 0; i < b->nvars; i++) {
        rill_tensor *t = NULL;
        if (rill_session_run(b->sess, NULL, NULL, 0, &b->vars[i], &t, 1, NULL, 0, b->s) != RILL_OK)
            die("reading a variable", rill_status_message(b->s));
        crcs[i] = rill__crc32c(0, rill_tensor_data(t), rill_tensor_nbytes(t));
        if (copy_to_raw)
            memcpy(b->raw + (size_t)i * b->var_bytes, rill_tensor_data(t), rill_tensor_nbytes(t));
        rill_tensor_free(t);
    }
}

static void build(bench *b, int64_t mib, int64_t var_kib)
{
    b->var_bytes = (size_t)var_kib << 10;
    b->nvars = (int)(((mib << 10) + var_kib - 1) / var_kib);
    b->total = (size_t)b->nvars * b->var_bytes;
    b->g = rill_graph_new();
    b->vars = calloc((size_t)b->nvars, sizeof *b->vars);
    rill_node **zeros = calloc((size_t)b->nvars, sizeof *zeros);
    for (int i = 0; i < b->nvars; i++) {
        char name[32];
        snprintf(name, sizeof name, "v%04d", i);
        b->vars[i] = rill_variable(b->g, RILL_FLOAT, rill_shape_vector((int64_t)(b->var_bytes / 4)),
                                   rill_random_uniform_initializer(-1, 1, 1000 + i), true, name);
        zeros[i] =
            rill_assign(b->g, b->vars[i], rill_zeros_like(b->g, b->vars[i], NULL), NULL).node;
    }
    b->zero = rill_group(b->g, zeros, b->nvars, "zero_all");
    free(zeros);
    rill_node *init = rill_global_variables_initializer(b->g, NULL);
    b->saver = rill_saver_new(b->g, NULL, 0, 0, 0, b->s);
    if (!b->saver || !rill_graph_ok(b->g))
        die("building the graph", rill_status_message(b->saver ? rill_graph_status(b->g) : b->s));
    b->sess = rill_session_new(b->g, NULL, b->s);
    if (!b->sess || rill_session_run_targets(b->sess, &init, 1, b->s) != RILL_OK)
        die("initializing", rill_status_message(b->s));
}

/* --- the parts that bound the rates --- */

static double crc_rate(const uint8_t *p, size_t n, int reps)
{
    double best = 0;
    volatile uint32_t sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = rill__now_seconds();
        sink ^= rill__crc32c(0, p, n);
        double t = rill__now_seconds() - t0;
        best = (double)n / t > best ? (double)n / t : best;
    }
    (void)sink;
    return best / GB;
}

static double crc_rate_cached(const uint8_t *p, size_t n, long iters, int reps)
{
    volatile uint32_t sink = 0;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = rill__now_seconds();
        for (long i = 0; i < iters; i++) sink ^= rill__crc32c((uint32_t)i, p, n);
        double rate = (double)n * (double)iters / (rill__now_seconds() - t0);
        best = rate > best ? rate : best;
    }
    (void)sink;
    return best / GB;
}

/* memcpy of the whole buffer in var-sized pieces into one var-sized buffer touched beforehand. */
static double memcpy_rate(const bench *b, int reps)
{
    uint8_t *dst = malloc(b->var_bytes);
    memset(dst, 1, b->var_bytes);
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = rill__now_seconds();
        for (size_t off = 0; off < b->total; off += b->var_bytes)
            memcpy(dst, b->raw + off, b->var_bytes);
        double t = rill__now_seconds() - t0;
        best = (double)b->total / t > best ? (double)b->total / t : best;
    }
    __asm__ volatile("" : : "r"(dst) : "memory");
    free(dst);
    return best / GB;
}

static void row(const char *what, const double *rill_s, const double *raw_s, int n, size_t bytes)
{
    double r_gbs[MAX_REPS] = {0}, w_gbs[MAX_REPS] = {0}, ratio[MAX_REPS] = {0};
    for (int i = 0; i < n; i++) {
        r_gbs[i] = (double)bytes / rill_s[i] / GB;
        w_gbs[i] = (double)bytes / raw_s[i] / GB;
        ratio[i] = raw_s[i] / rill_s[i]; /* rill rate / raw rate, paired by repetition */
    }
    printf("%-16s %6.2f %6.2f-%-6.2f   %6.2f %6.2f-%-6.2f   %5.2f %5.2f-%-5.2f\n", what,
           median(r_gbs, n), minimum(r_gbs, n), maximum(r_gbs, n), median(w_gbs, n),
           minimum(w_gbs, n), maximum(w_gbs, n), median(ratio, n), minimum(ratio, n),
           maximum(ratio, n));
}

int main(int argc, char **argv)
{
    int64_t mib, var_kib, reps;
    const char *dir_flag, *cold;
    rill_flags *flags =
        rill_flags_new("bench_checkpoint", "Checkpoint save/restore against raw file I/O.");
    rill_flags_define_int(flags, "mib", &mib, 256, "MiB of variables in all");
    rill_flags_define_int(flags, "var_kib", &var_kib, 65536, "KiB per variable (a multiple of 4)");
    rill_flags_define_int(flags, "reps", &reps, 3, "repetitions (1-16)");
    rill_flags_define_string(flags, "dir", &dir_flag, "",
                             "directory for the files (default: a new one under $TMPDIR or /tmp)");
    rill_flags_define_string(flags, "cold", &cold, "fadvise",
                             "how to empty the page cache: fadvise, drop_caches or none");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    if (rc >= 0) {
        rill_flags_free(flags);
        return rc;
    }
    if (mib < 1 || var_kib < 4 || var_kib % 4 || reps < 1 || reps > MAX_REPS)
        die("flags", "out of range");
    bench b = {.cold = cold, .s = rill_status_new()};
    char tmpl[PATH_MAX];
    if (dir_flag[0]) {
        b.dir = dir_flag;
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/rill-bench-ckpt.XXXXXX", t && t[0] ? t : "/tmp");
        if (!mkdtemp(tmpl)) die(tmpl, strerror(errno));
        b.dir = tmpl;
    }
    snprintf(b.prefix, sizeof b.prefix, "%s/model.ckpt", b.dir);
    snprintf(b.raw_path, sizeof b.raw_path, "%s/raw.bin", b.dir);
    snprintf(b.data_path, sizeof b.data_path, "%s.data-00000-of-00001", b.prefix);
    snprintf(b.index_path, sizeof b.index_path, "%s.index", b.prefix);
    snprintf(b.state_path, sizeof b.state_path, "%s/checkpoint", b.dir);
    bool do_cold = strcmp(cold, "none") != 0;

    char fs[PATH_MAX + 400];
    describe_fs(b.dir, fs, sizeof fs);
    double t0 = rill__now_seconds();
    build(&b, mib, var_kib);
    /* Like rill's allocator for big tensors (core/alloc.c): 2 MiB aligned, huge pages asked
     * for. A buffer in 4 KiB pages is read into once per repetition too, to show the cost. */
    b.raw = aligned_alloc(2u << 20, (b.total + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1));
    b.small = malloc(b.total);
    if (!b.raw || !b.small) die("malloc", "out of memory");
    madvise(b.raw, b.total, MADV_HUGEPAGE);
    madvise(b.small, b.total, MADV_NOHUGEPAGE);
    memset(b.small, 0, b.total);
    uint32_t *want = calloc((size_t)b.nvars, sizeof *want),
             *got = calloc((size_t)b.nvars, sizeof *got);
    variable_crcs(&b, want, true); /* also touches every page of raw */
    printf("checkpoint: %d float32 variables x %lld KiB = %zu MiB (%.3f GB), built in %.1f s\n",
           b.nvars, (long long)var_kib, b.total >> 20, (double)b.total / GB,
           rill__now_seconds() - t0);
    printf("files in %s: %s\n", b.dir, fs);

    /* The parts: crc32c (compute-bound on a cached block; memory-bound on the whole buffer)
     * and the memcpy restore's Assign does. */
    static uint8_t block[64 << 10];
    memcpy(block, b.raw, sizeof block);
    double crc_l2 = crc_rate_cached(block, sizeof block, 10000, 5);
    double crc_mem = crc_rate(b.raw, b.total, 3);
    double cpy = memcpy_rate(&b, 3);
    /* The first save and restore also build their plans (and the restore's buffers are new). */
    unlink_all(&b);
    double first_save = rill_save(&b), first_restore = rill_restore(&b);
    printf("crc32c (rill__crc32c), best of 5/3: %.2f GB/s on a 64 KiB block in cache, %.2f GB/s "
           "over the %zu MiB "
           "in memory\n",
           crc_l2, crc_mem, b.total >> 20);
    printf("memcpy, best of 3: %.2f GB/s (%zu MiB in %zu KiB pieces)\n", cpy, b.total >> 20,
           b.var_bytes >> 10);
    printf("first save %.3f s, first restore %.3f s (with building their plans; not in the "
           "table)\n",
           first_save, first_restore);

    double save_s[MAX_REPS], wraw_s[MAX_REPS], rw_s[MAX_REPS], rrw_s[MAX_REPS], rc_s[MAX_REPS],
        rrc_s[MAX_REPS];
    double small_s[MAX_REPS], fsync_s[MAX_REPS];
    double res_min = 1, res_max = 0;
    bool cold_ok = do_cold;
    const char *raw_files[] = {b.raw_path};
    const char *ckpt_files[] = {b.data_path, b.index_path, b.state_path};
    for (int r = 0; r < reps; r++) {
        bool raw_first = r % 2 == 0;
        unlink_all(&b);
        if (raw_first) {
            wraw_s[r] = raw_write(&b, &fsync_s[r]);
            save_s[r] = rill_save(&b);
        } else {
            save_s[r] = rill_save(&b);
            wraw_s[r] = raw_write(&b, &fsync_s[r]);
        }
        /* warm: both files were just written and sit in the page cache */
        if (raw_first) {
            rrw_s[r] = raw_read(&b, b.raw);
            rw_s[r] = rill_restore(&b);
        } else {
            rw_s[r] = rill_restore(&b);
            rrw_s[r] = raw_read(&b, b.raw);
        }
        small_s[r] = raw_read(&b, b.small);
        if (!cold_ok) continue;
        for (int k = 0; k < 2; k++) {
            bool raw_now = (k == 0) == raw_first;
            if (!drop(&b, raw_now ? raw_files : ckpt_files, raw_now ? 1 : 3)) {
                cold_ok = false;
                break;
            }
            double frac = resident(raw_now ? b.raw_path : b.data_path);
            res_min = frac < res_min ? frac : res_min;
            res_max = frac > res_max ? frac : res_max;
            if (raw_now)
                rrc_s[r] = raw_read(&b, b.raw);
            else
                rc_s[r] = rill_restore(&b);
        }
    }

    /* Untimed: zero the variables, restore, and compare with the values saved. */
    if (rill_session_run_targets(b.sess, &b.zero, 1, b.s) != RILL_OK)
        die("zeroing", rill_status_message(b.s));
    rill_restore(&b);
    variable_crcs(&b, got, false);
    int bad = 0;
    for (int i = 0; i < b.nvars; i++) bad += got[i] != want[i];

    printf("%d repetitions; GB/s of variable bytes: median min-max; ratio = rill/raw, paired per "
           "repetition\n",
           (int)reps);
    printf("%-16s %-21s   %-21s   %-17s\n", "", "rill", "raw", "ratio");
    row("save (fsync)", save_s, wraw_s, (int)reps, b.total);
    row("restore warm", rw_s, rrw_s, (int)reps, b.total);
    if (cold_ok) {
        row("restore cold", rc_s, rrc_s, (int)reps, b.total);
        printf("cold: %s; %.0f-%.0f %% of the file still resident before a cold read\n",
               strcmp(cold, "drop_caches") == 0 ? "echo 3 > /proc/sys/vm/drop_caches"
                                                : "posix_fadvise(POSIX_FADV_DONTNEED)",
               100 * res_min, 100 * res_max);
    } else {
        printf("restore cold: skipped (%s)\n",
               do_cold ? "cannot drop the page cache here" : "--cold=none");
    }
    double into_cache[MAX_REPS], fsync_share[MAX_REPS];
    for (int i = 0; i < reps; i++) {
        into_cache[i] = (double)b.total / (wraw_s[i] - fsync_s[i]) / GB;
        fsync_share[i] = 100 * fsync_s[i] / wraw_s[i];
    }
    printf("raw write: write() into the page cache %.2f GB/s (%.2f-%.2f), fsync %.0f %% of the "
           "time (%.0f-%.0f %%)\n",
           median(into_cache, (int)reps), minimum(into_cache, (int)reps),
           maximum(into_cache, (int)reps), median(fsync_share, (int)reps),
           minimum(fsync_share, (int)reps), maximum(fsync_share, (int)reps));
    double small_gbs[MAX_REPS];
    for (int i = 0; i < reps; i++) small_gbs[i] = (double)b.total / small_s[i] / GB;
    printf("raw read warm into a buffer in 4 KiB pages: %.2f GB/s (%.2f-%.2f); the table's raw "
           "reads go to a 2 MiB-aligned MADV_HUGEPAGE buffer, as rill's tensors\n",
           median(small_gbs, (int)reps), minimum(small_gbs, (int)reps),
           maximum(small_gbs, (int)reps));
    printf("check: %s\n", bad ? "MISMATCH after restore" : "restored bytes match the saved ones");
    printf("RESULT ckpt_mib=%zu vars=%d save_gbs=%.3f raw_write_gbs=%.3f restore_warm_gbs=%.3f "
           "raw_read_warm_gbs=%.3f crc32c_gbs=%.3f\n",
           b.total >> 20, b.nvars, (double)b.total / median(save_s, (int)reps) / GB,
           (double)b.total / median(wraw_s, (int)reps) / GB,
           (double)b.total / median(rw_s, (int)reps) / GB,
           (double)b.total / median(rrw_s, (int)reps) / GB, crc_mem);

    unlink_all(&b);
    if (!dir_flag[0]) rmdir(b.dir);
    rill_session_free(b.sess);
    rill_saver_free(b.saver);
    rill_graph_free(b.g);
    rill_status_free(b.s);
    rill_flags_free(flags);
    free(b.vars);
    free(b.raw);
    free(b.small);
    free(want);
    free(got);
    return bad ? 1 : 0;
}
