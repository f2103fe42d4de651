/* status.c - the status object: a code and a heap message. */
#include "core.h"

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

struct rill_status {
    rill_code code;
    char *msg;
};

rill_status *rill_status_new(void)
{
    rill_status *s = rill__calloc(1, sizeof *s);
    RILL_CHECK_ALLOC(s);
    return s;
}

void rill_status_free(rill_status *s)
{
    if (!s) return;
    rill__free(s->msg);
    rill__free(s);
}

rill_code rill_status_code(const rill_status *s)
{
    return s ? s->code : RILL_OK;
}

const char *rill_status_message(const rill_status *s)
{
    return s && s->msg ? s->msg : "";
}

bool rill_status_ok(const rill_status *s)
{
    return !s || s->code == RILL_OK;
}

void rill_status_setv(rill_status *s, rill_code code, const char *fmt, va_list ap)
{
    if (!s) return;
    rill__free(s->msg);
    s->msg = NULL;
    s->code = code;
    if (code == RILL_OK || !fmt) return;
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    s->msg = rill__malloc((size_t)n + 1);
    RILL_CHECK_ALLOC(s->msg);
    if ((size_t)n < sizeof small)
        memcpy(s->msg, small, (size_t)n + 1);
    else
        vsnprintf(s->msg, (size_t)n + 1, fmt, ap);
}

void rill_status_set(rill_status *s, rill_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rill_status_setv(s, code, fmt, ap);
    va_end(ap);
}

void rill_status_copy(rill_status *dst, const rill_status *src)
{
    if (!dst || dst == src) return;
    if (!src || src->code == RILL_OK) {
        rill_status_clear(dst);
        return;
    }
    rill_status_set(dst, src->code, "%s", rill_status_message(src));
}

void rill_status_clear(rill_status *s)
{
    if (!s) return;
    rill__free(s->msg);
    s->msg = NULL;
    s->code = RILL_OK;
}

const char *rill_code_name(rill_code c)
{
    static const char *const names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    if ((int)c < 0 || (size_t)c >= sizeof names / sizeof names[0]) return "UNKNOWN_CODE";
    return names[c];
}

/* One per thread, freed when the thread exits (a pthread key destructor: pool threads come
 * and go with their sessions). */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    rill_status_free(p);
}

/* Key destructors do not run for the thread that calls exit(): free its status then. */
static void scratch_free_at_exit(void)
{
    rill_status *s = pthread_getspecific(scratch_key);
    pthread_setspecific(scratch_key, NULL);
    rill_status_free(s);
}

static void scratch_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
    atexit(scratch_free_at_exit);
}

rill_status *rill__scratch_status(void)
{
    pthread_once(&scratch_once, scratch_init);
    rill_status *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = rill_status_new();
        pthread_setspecific(scratch_key, s);
    }
    rill_status_clear(s);
    return s;
}
