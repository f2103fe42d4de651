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
 */
#ifndef RILL_TESTS_TEST_H
#define RILL_TESTS_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int test__checks __attribute__((unused));
static int test__failed __attribute__((unused));

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

/* The last statement of main(): prints the summary and returns 1 if any check failed. */
#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        fflush(stdout);                                                                            \
        fprintf(stderr, "%d checks, %d failed\n", test__checks, test__failed);                     \
        return test__failed > 0 ? 1 : 0;                                                           \
    } while (0)

#endif
