/* test_json.c - the hostile-input JSON reader (src/distributed/json.h): a table of valid and
 * invalid documents with the values or error texts they give, the bounds (depth, members,
 * size), and a fuzz loop of 100k random and mutated inputs. Every fuzz input lives in an exactly
 * sized heap block with no terminator, so AddressSanitizer sees any read past its end; every
 * accepted tree is walked to check that its strings are valid, NUL-free UTF-8 and its depth is in
 * bounds.
 */
#include "../test.h"

#include "distributed/json.h"

#include <stdint.h>
#include <stdlib.h>

static rill__json *parse(const char *text, rill_status *s)
{
    /* An exact copy without terminator, so reads past len are caught. */
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, text, n);
    rill__json *v = rill__json_parse(copy, n, s);
    free(copy);
    return v;
}

static void test_valid(void)
{
    rill_status *s = rill_status_new();
    rill__json *v = parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"],"
                          " \"b\": {}, \"c\": [] } ",
                          s);
    if (CHECK(v != NULL)) {
        CHECK_EQ_INT(v->type, RILL__JSON_OBJECT);
        CHECK_EQ_INT(v->count, 3);
        const rill__json *a = rill__json_get(v, "a");
        if (CHECK(a && a->type == RILL__JSON_ARRAY && a->count == 6)) {
            CHECK(a->items[0]->is_int && a->items[0]->integer == 1);
            CHECK(!a->items[1]->is_int);
            CHECK_NEAR(a->items[1]->number, -2500, 0);
            CHECK(a->items[2]->type == RILL__JSON_BOOL && a->items[2]->boolean);
            CHECK(a->items[3]->type == RILL__JSON_BOOL && !a->items[3]->boolean);
            CHECK_EQ_INT(a->items[4]->type, RILL__JSON_NULL);
            CHECK_EQ_STR(a->items[5]->string, "x\xc3\xa9\xf0\x9f\x98\x80\n");
            CHECK_EQ_INT(a->items[5]->length, 8);
        }
        CHECK(rill__json_get(v, "b")->type == RILL__JSON_OBJECT);
        CHECK(rill__json_get(v, "zz") == NULL);
    }
    rill__json_free(v);
    v = parse("\"\xe2\x82\xac \\\" \\\\ \\/ \\b\\f\\r\\t\"", s);
    if (CHECK(v)) CHECK_EQ_STR(v->string, "\xe2\x82\xac \" \\ / \b\f\r\t");
    rill__json_free(v);
    v = parse("-0", s);
    if (CHECK(v)) CHECK(v->is_int && v->integer == 0);
    rill__json_free(v);
    v = parse("99999999999999999999", s); /* too big for int64: a number but not an integer */
    if (CHECK(v)) CHECK(!v->is_int);
    rill__json_free(v);
    rill_status_free(s);
}

static void test_invalid(void)
{
    static const struct {
        const char *text, *error;
    } cases[] = {
        {"", "Invalid JSON at byte 0: expected a value"},
        {"   ", "Invalid JSON at byte 3: expected a value"},
        {"{", "Invalid JSON at byte 1: expected a string key"},
        {"[1,]", "Invalid JSON at byte 3: expected a value"},
        {"[1 2]", "Invalid JSON at byte 3: expected ',' or ']'"},
        {"{\"a\" 1}", "Invalid JSON at byte 5: expected ':' after key"},
        {"{\"a\":1,\"a\":2}", "Invalid JSON at byte 7: duplicate key in object"},
        {"\"abc", "Invalid JSON at byte 1: unterminated string"},
        {"\"a\\x\"", "Invalid JSON at byte 3: invalid escape in string"},
        {"\"\\u12g4\"", "expected 4 hex digits after \\u"},
        {"\"\\ud800\"", "unpaired high surrogate escape"},
        {"\"\\udc00\"", "unpaired low surrogate escape"},
        {"\"\\ud800\\u0041\"", "unpaired high surrogate escape"},
        {"\"\\u0000\"", "\\u0000 is not allowed in a string"},
        {"\"a\tb\"", "unescaped control character in string"},
        {"\"\xc0\xaf\"", "invalid UTF-8 in string"},                    /* overlong '/' */
        {"\"\xed\xa0\x80\"", "invalid UTF-8 in string"},                /* UTF-8 surrogate */
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8 in string"},            /* past U+10FFFF */
        {"\"\xe2\x82\"", "invalid UTF-8 in string"},                    /* truncated */
        {"\xef\xbb\xbf{}", "Invalid JSON at byte 0: expected a value"}, /* BOM */
        {"01", "Invalid JSON at byte 1: unexpected text after the value"},
        {"1.", "malformed number"},
        {"-", "malformed number"},
        {"1e+", "malformed number"},
        {"+1", "expected a value"},
        {"NaN", "expected a value"},
        {"tru", "expected a value"},
        {"{} {}", "unexpected text after the value"},
        {"[1]x", "unexpected text after the value"},
    };
    rill_status *s = rill_status_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rill_status_clear(s);
        rill__json *v = parse(cases[i].text, s);
        if (!CHECK(v == NULL)) {
            fprintf(stderr, "  accepted: %s\n", cases[i].text);
            rill__json_free(v);
            continue;
        }
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), cases[i].error);
    }
    rill_status_free(s);
}

static void test_bounds(void)
{
    rill_status *s = rill_status_new();
    char deep[200];
    /* 32 nested arrays parse; 33 do not. */
    for (int depth = 32; depth <= 33; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        deep[2 * depth] = '\0';
        rill__json *v = parse(deep, s);
        CHECK((v != NULL) == (depth == 32));
        if (!v) CHECK_STR_CONTAINS(rill_status_message(s), "nesting deeper than 32 levels");
        rill__json_free(v);
    }
    /* A million '[' is refused at depth 33 without using the stack. */
    size_t n = 1000000;
    char *big = malloc(n);
    memset(big, '[', n);
    rill__json *v = rill__json_parse(big, n, s);
    CHECK(v == NULL);
    free(big);
    /* Past the size limit. */
    n = RILL__JSON_MAX_INPUT + 1;
    big = malloc(n);
    memset(big, ' ', n);
    big[0] = '1';
    CHECK(rill__json_parse(big, n, s) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "more than the");
    free(big);
    /* Too many members in one object. */
    size_t cap = 20 * 2000;
    big = malloc(cap);
    size_t len = 0;
    big[len++] = '{';
    for (int i = 0; i < RILL__JSON_MAX_MEMBERS + 1; i++)
        len += (size_t)snprintf(big + len, cap - len, "%s\"k%d\":0", i ? "," : "", i);
    big[len++] = '}';
    CHECK(rill__json_parse(big, len, s) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "too many members in one object");
    free(big);
    /* Too many values in all. */
    cap = 3 * (RILL__JSON_MAX_NODES + 10);
    big = malloc(cap);
    len = 0;
    big[len++] = '[';
    for (int i = 0; i < RILL__JSON_MAX_NODES + 1; i++) {
        big[len++] = '0';
        big[len++] = ',';
    }
    big[len - 1] = ']';
    CHECK(rill__json_parse(big, len, s) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "too many values");
    free(big);
    rill_status_free(s);
}

/* --- fuzz --- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static bool valid_utf8_no_nul(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (c == 0 || c >= 0xF5 || (c >= 0x80 && c < 0xC2) || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if ((u[i + j] & 0xC0) != 0x80) return false;
        i += k;
    }
    return p[n] == '\0';
}

static bool well_formed(const rill__json *v, int depth)
{
    if (depth > RILL__JSON_MAX_DEPTH) return false;
    if (v->type == RILL__JSON_STRING) return valid_utf8_no_nul(v->string, v->length);
    for (int i = 0; i < v->count; i++) {
        if (v->type == RILL__JSON_OBJECT && !valid_utf8_no_nul(v->keys[i], strlen(v->keys[i])))
            return false;
        if (!well_formed(v->items[i], depth + 1)) return false;
    }
    return true;
}

static void test_fuzz(void)
{
    static const char *seeds[] = {
        ("{\"cluster\": {\"ps\": [\"h:1\"], \"worker\": [\"a:2\", \"b:3\"]}, \"task\": {\"type\": "
         "\"worker\", \"index\": 1}, \"environment\": \"cloud\"}"), /* one seed over two lines */
        "[1, -2.5e-3, true, false, null, \"\\u00e9\\ud83d\\ude00\", {\"a\": [[], {}]}]",
        "\"\xe2\x82\xac\xf0\x9f\x98\x80\\n\\t\"",
        "{\"a\":{\"b\":{\"c\":{\"d\":[0,1,2,3]}}}}",
    };
    static const char alphabet[] = "{}[],:\"\\u0123456789abcdefABCDEF.-+eEtrunlsx \t\n\r";
    rill_status *s = rill_status_new();
    int accepted = 0;
    for (int iter = 0; iter < 100000; iter++) {
        size_t n;
        char *buf;
        int mode = iter % 3;
        if (mode == 0) { /* random bytes */
            n = next() % 64;
            buf = malloc(n ? n : 1);
            for (size_t i = 0; i < n; i++) buf[i] = (char)(next() & 0xFF);
        } else if (mode == 1) { /* random JSON-ish characters */
            n = next() % 96;
            buf = malloc(n ? n : 1);
            for (size_t i = 0; i < n; i++) buf[i] = alphabet[next() % (sizeof alphabet - 1)];
        } else { /* a valid document, mutated */
            const char *seed = seeds[next() % (sizeof seeds / sizeof seeds[0])];
            size_t sn = strlen(seed);
            n = sn;
            buf = malloc(sn + 8);
            memcpy(buf, seed, sn);
            int muts = 1 + (int)(next() % 4);
            for (int m = 0; m < muts && n > 0; m++) {
                size_t at = next() % n;
                switch (next() % 4) {
                case 0:
                    buf[at] = (char)(next() & 0xFF);
                    break;
                case 1:
                    buf[at] = alphabet[next() % (sizeof alphabet - 1)];
                    break;
                case 2:
                    memmove(buf + at, buf + at + 1, n - at - 1), n--;
                    break; /* delete */
                default:
                    n = at;
                    break; /* truncate */
                }
            }
            /* Exact-size copy so ASan catches reads past n. */
            char *exact = malloc(n ? n : 1);
            memcpy(exact, buf, n);
            free(buf);
            buf = exact;
        }
        rill__json *v = rill__json_parse(buf, n, s);
        if (v) {
            accepted++;
            if (!CHECK(well_formed(v, 0))) fprintf(stderr, "  iteration %d\n", iter);
        } else if (!CHECK(rill_status_code(s) == RILL_INVALID_ARGUMENT)) {
            fprintf(stderr, "  iteration %d\n", iter);
        }
        rill__json_free(v);
        free(buf);
    }
    printf("fuzz: 100000 inputs, %d accepted\n", accepted);
    CHECK(accepted > 100); /* the mutations keep some documents valid */
    rill_status_free(s);
}

int main(void)
{
    test_valid();
    test_invalid();
    test_bounds();
    test_fuzz();
    TEST_MAIN_END();
}
