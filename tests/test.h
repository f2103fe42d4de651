/* tests/test.h - the tiny check harness every standalone rill test program uses.
 *
 * Header-only: include it in the one file that holds main(). Each CHECK counts, prints
 * "file:line: in function: what failed" to stderr when it fails, and evaluates to true when it
 * passed, so a test can stop early on a check the rest depends on:
 *
 *     rill_tensor *t = rill_idx_read_labels(path, s);
 *     if (!CHECK(t != NULL)) return;
 *
 * main() ends with TEST_MAIN_END(), which prints "N checks, M failed" and returns non-zero when
 * anything failed. Every macro evaluates its arguments exactly once. Messages go to stderr so
 * that tests capturing stdout (help text, printed tensors) never swallow them.
 *
 * Skipping is honest: ctest runs every test with SKIP_RETURN_CODE 77, so a test that cannot run
 * here says why and exits 77, and ctest reports it as skipped rather than passed.
 *   - TEST_SKIP("no OpenCL device") when the test's subject cannot be checked here: prints
 *     "SKIPPED: no OpenCL device" and the summary, and exits 77 at once (1 if a check already
 *     failed: a skip never hides a failure). Run what can run first, then skip.
 *   - TEST_SKIP_PART("the /gpu:0 checks", "no GPU device") when only a part cannot run: prints
 *     "SKIPPED: the /gpu:0 checks: no GPU device" and the test goes on. The summary then reads
 *     "N checks, M failed, K skipped", and TEST_MAIN_END() exits 77 when no check ran at all.
 * A prerequisite that `make test` provides (the .venv, the Fashion-MNIST data) is a failure, not
 * a skip, where test_required() says so (CI, or RILL_REQUIRE_VENV=1 and the like).
 */
#ifndef RILL_TESTS_TEST_H
#define RILL_TESTS_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ctest's SKIP_RETURN_CODE, and automake's. */
#define TEST_SKIP_CODE 77

static int test__checks __attribute__((unused));
static int test__failed __attribute__((unused));
static int test__skipped __attribute__((unused)); /* parts skipped, and the whole test once */

static inline bool test__report(bool ok, const char *file, int line, const char *func)
{
    test__checks++;
    if (ok) return true;
    test__failed++;
    fprintf(stderr, "%s:%d: in %s: ", file, line, func);
    return false;
}

static inline bool test__check(bool ok, const char *expr, const char *file, int line,
                               const char *func)
{
    if (test__report(ok, file, line, func)) return true;
    fprintf(stderr, "check failed: %s\n", expr);
    return false;
}

static inline bool test__eq_int(long long a, long long b, const char *ea, const char *eb,
                                const char *file, int line, const char *func)
{
    if (test__report(a == b, file, line, func)) return true;
    fprintf(stderr, "expected %s == %s, got %lld vs %lld\n", ea, eb, a, b);
    return false;
}

static inline bool test__near(double a, double b, double tol, const char *ea, const char *eb,
                              const char *file, int line, const char *func)
{
    /* a == b covers equal infinities; NaN never passes. */
    bool ok = a == b || fabs(a - b) <= tol;
    if (test__report(ok, file, line, func)) return true;
    fprintf(stderr, "expected %s ~= %s (tol %g), got %.9g vs %.9g\n", ea, eb, tol, a, b);
    return false;
}

static inline bool test__str_contains(const char *hay, const char *needle, const char *eh,
                                      const char *file, int line, const char *func)
{
    bool ok = hay && needle && strstr(hay, needle);
    if (test__report(ok, file, line, func)) return true;
    fprintf(stderr, "expected %s to contain \"%s\", got %s%s%s\n", eh, needle ? needle : "(null)",
            hay ? "\"" : "", hay ? hay : "(null)", hay ? "\"" : "");
    return false;
}

static inline bool test__eq_str(const char *a, const char *b, const char *ea, const char *eb,
                                const char *file, int line, const char *func)
{
    bool ok = (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
    if (test__report(ok, file, line, func)) return true;
    fprintf(stderr, "expected %s == %s, got %s%s%s vs %s%s%s\n", ea, eb, a ? "\"" : "",
            a ? a : "(null)", a ? "\"" : "", b ? "\"" : "", b ? b : "(null)", b ? "\"" : "");
    return false;
}

/* True when cond holds. */
#define CHECK(cond) test__check(!!(cond), #cond, __FILE__, __LINE__, __func__)
/* Integers compared as long long. */
#define CHECK_EQ_INT(a, b)                                                                         \
    test__eq_int((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__, __func__)
/* |a - b| <= tol, as doubles. */
#define CHECK_NEAR(a, b, tol)                                                                      \
    test__near((double)(a), (double)(b), (double)(tol), #a, #b, __FILE__, __LINE__, __func__)
/* haystack (may be NULL, which fails) contains needle. */
#define CHECK_STR_CONTAINS(haystack, needle)                                                       \
    test__str_contains((haystack), (needle), #haystack, __FILE__, __LINE__, __func__)
/* Equal strings (both NULL counts as equal). */
#define CHECK_EQ_STR(a, b) test__eq_str((a), (b), #a, #b, __FILE__, __LINE__, __func__)

/* Prints the summary line ("N checks, M failed", with ", K skipped" when something was) and
 * returns the exit status: 1 when a check failed, TEST_SKIP_CODE when nothing ran but something
 * was skipped, 0 otherwise. */
static inline int test__end(void)
{
    fflush(stdout);
    if (test__skipped > 0)
        fprintf(stderr, "%d checks, %d failed, %d skipped\n", test__checks, test__failed,
                test__skipped);
    else
        fprintf(stderr, "%d checks, %d failed\n", test__checks, test__failed);
    if (test__failed > 0) return 1;
    return test__checks == 0 && test__skipped > 0 ? TEST_SKIP_CODE : 0;
}

__attribute__((format(printf, 2, 3))) static inline void test__skip_part(const char *part,
                                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "SKIPPED: %s: ", part);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    test__skipped++;
}

__attribute__((noreturn, format(printf, 1, 2))) static inline void test__skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("SKIPPED: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    test__skipped++;
    int code = test__end();
    exit(code == 1 ? 1 : TEST_SKIP_CODE);
}

/* True when a prerequisite that `make test` provides must be there, so that its absence is a
 * failure rather than a skip: the CI variable is set (to anything but "", "0" or "false"), or
 * the environment variable var (RILL_REQUIRE_VENV, RILL_REQUIRE_DATA) is "1". */
static inline bool test_required(const char *var)
{
    const char *ci = getenv("CI"), *v = getenv(var);
    if (ci && *ci && strcmp(ci, "0") != 0 && strcmp(ci, "false") != 0) return true;
    return v && strcmp(v, "1") == 0;
}

/* The whole test cannot run here: prints "SKIPPED: <reason>" (printf-style) and the summary, and
 * exits TEST_SKIP_CODE now, or 1 when a check has already failed. */
#define TEST_SKIP(...) test__skip(__VA_ARGS__)
/* One part cannot run here: prints "SKIPPED: <part>: <reason>" (reason printf-style) and goes on;
 * TEST_MAIN_END() exits TEST_SKIP_CODE when every part was skipped and no check ran. */
#define TEST_SKIP_PART(part, ...) test__skip_part((part), __VA_ARGS__)

/* The last statement of main(): prints the summary and returns 1 if any check failed, 77 if
 * nothing ran because everything was skipped, 0 otherwise. */
#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        return test__end();                                                                        \
    } while (0)

#endif
