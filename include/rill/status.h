/* rill/status.h - error codes and the status object.
 *
 * Codes are TensorFlow's (same names, same numbers) so that users read errors as they know them.
 * A rill_status holds one code and one message. Graph building keeps a sticky status on the graph
 * (see graph.h); running returns a status every time.
 */
#ifndef RILL_STATUS_H
#define RILL_STATUS_H

#include <stdarg.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rill_code {
    RILL_OK = 0,
    RILL_CANCELLED = 1,
    RILL_UNKNOWN = 2,
    RILL_INVALID_ARGUMENT = 3,
    RILL_DEADLINE_EXCEEDED = 4,
    RILL_NOT_FOUND = 5,
    RILL_ALREADY_EXISTS = 6,
    RILL_PERMISSION_DENIED = 7,
    RILL_RESOURCE_EXHAUSTED = 8,
    RILL_FAILED_PRECONDITION = 9,
    RILL_ABORTED = 10,
    RILL_OUT_OF_RANGE = 11,
    RILL_UNIMPLEMENTED = 12,
    RILL_INTERNAL = 13,
    RILL_UNAVAILABLE = 14,
    RILL_DATA_LOSS = 15,
    RILL_UNAUTHENTICATED = 16,
} rill_code;

typedef struct rill_status rill_status;

/* A new status holding RILL_OK. Caller frees with rill_status_free. */
rill_status *rill_status_new(void);
/* Frees a status; NULL is a no-op. */
void rill_status_free(rill_status *s);
/* The code; RILL_OK for a NULL status. */
rill_code rill_status_code(const rill_status *s);
/* The message ("" when OK); borrowed, valid until the status changes. */
const char *rill_status_message(const rill_status *s);
/* True when the code is RILL_OK. */
bool rill_status_ok(const rill_status *s);
/* Sets code and printf-formatted message. Setting RILL_OK clears the message. */
void rill_status_set(rill_status *s, rill_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rill_status_setv(rill_status *s, rill_code code, const char *fmt, va_list ap);
/* Copies src into dst. */
void rill_status_copy(rill_status *dst, const rill_status *src);
/* Back to RILL_OK. */
void rill_status_clear(rill_status *s);
/* "INVALID_ARGUMENT" and so on; "UNKNOWN_CODE" for values out of range. */
const char *rill_code_name(rill_code code);

#ifdef __cplusplus
}
#endif
#endif
