/* json.h - a small JSON reader for configuration that arrives from outside (TF_CONFIG).
 *
 * The input is treated as hostile: it is read only within the given length (no terminator
 * needed), nesting is bounded by RILL__JSON_MAX_DEPTH, the input by RILL__JSON_MAX_INPUT bytes
 * and the tree by RILL__JSON_MAX_NODES values, one object by RILL__JSON_MAX_MEMBERS members.
 * Strings must be valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF), control
 * characters must be escaped, \u escapes must pair surrogates correctly, and \u0000 is refused
 * because the strings come back as C strings. Duplicate keys in one object are refused, since
 * "which one wins" is an ambiguity an attacker could use. Anything else is RFC 8259 JSON; a failure
 * is INVALID_ARGUMENT naming the byte offset and what was expected there. Internal to rill (rill__
 * prefix).
 */
#ifndef RILL_DISTRIBUTED_JSON_H
#define RILL_DISTRIBUTED_JSON_H

#include <rill/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RILL__JSON_MAX_DEPTH 32
#define RILL__JSON_MAX_INPUT (1u << 20)
#define RILL__JSON_MAX_NODES 65536
/* Members of one object (duplicate keys are looked for by a linear scan). */
#define RILL__JSON_MAX_MEMBERS 1024

typedef enum rill__json_type {
    RILL__JSON_NULL,
    RILL__JSON_BOOL,
    RILL__JSON_NUMBER,
    RILL__JSON_STRING,
    RILL__JSON_ARRAY,
    RILL__JSON_OBJECT,
} rill__json_type;

typedef struct rill__json rill__json;
struct rill__json {
    rill__json_type type;
    bool boolean;       /* RILL__JSON_BOOL */
    double number;      /* RILL__JSON_NUMBER */
    bool is_int;        /* number written without fraction or exponent and fits int64 */
    int64_t integer;    /* valid when is_int */
    char *string;       /* RILL__JSON_STRING: NUL-terminated UTF-8, owned by the node */
    size_t length;      /* string length in bytes */
    int count;          /* ARRAY / OBJECT: number of members */
    rill__json **items; /* ARRAY / OBJECT: the member values, in input order */
    char **keys;        /* OBJECT: the member keys, in input order */
};

/* Parses text[0..len) (no terminator needed; bytes past len are never read). Returns a tree the
 * caller frees with rill__json_free, or NULL with s (may be NULL) set to INVALID_ARGUMENT
 * "Invalid JSON at byte <offset>: <reason>". */
rill__json *rill__json_parse(const char *text, size_t len, rill_status *s);

/* Frees a tree; NULL is a no-op. */
void rill__json_free(rill__json *v);

/* The value of key in an object, or NULL when obj is not an object or has no such key.
 * Borrowed from obj. */
const rill__json *rill__json_get(const rill__json *obj, const char *key);

/* "null", "boolean", "number", "string", "array", "object". */
const char *rill__json_type_name(rill__json_type t);

#endif
