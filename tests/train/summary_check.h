/* tests/train/summary_check.h - helpers shared by test_summary.c and test_events.c.
 *
 * Header-only, included by one test file per program after ../test.h. It reads files whole,
 * finds TFRecord boundaries in a well-formed file, runs one fetch in a fresh session, and parses
 * serialized Summary protos independently of rill's own reader (histogram arrays included), so
 * the tests never check rill's parsing with itself. source_dir() finds the source tree (for the
 * golden files and the project's .venv) from this header's own path.
 */
#ifndef RILL_TESTS_TRAIN_SUMMARY_CHECK_H
#define RILL_TESTS_TRAIN_SUMMARY_CHECK_H

#include "../test.h"

#include <rill/rill.h>

#include "core/core.h"
#include "core/pb.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned char *slurp(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(p, 1, len > 0 ? (size_t)len : 0, f);
    fclose(f);
    return p;
}

/* Record offsets of a well-formed file (ends[k]: the byte after record k); returns the count. */
static inline int record_ends(const unsigned char *p, size_t n, size_t *ends, int cap)
{
    size_t off = 0;
    int k = 0;
    while (off + 12 <= n && k < cap) {
        uint64_t len = 0;
        for (int i = 0; i < 8; i++) len |= (uint64_t)p[off + (size_t)i] << (8 * i);
        if (len > n - off - 12 || n - off - 12 - len < 4) break;
        off += 12 + len + 4;
        ends[k++] = off;
    }
    return k;
}

/* Runs fetch with feeds; NULL (s set) on failure. */
static inline rill_tensor *run1(rill_graph *g, rill_output fetch, const rill_output *feeds,
                                rill_tensor *const *vals, int nfeeds, rill_status *s)
{
    rill_tensor *out = NULL;
    rill_session *sess = rill_session_new(g, NULL, s);
    if (!sess) return NULL;
    rill_session_run(sess, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0, s);
    rill_session_free(sess);
    return out;
}

/* A parsed Summary.Value, with the histogram's arrays. */
typedef struct tvalue {
    char tag[128];
    int kind; /* 1 simple, 2 histo */
    float simple;
    double min, max, num, sum, sum_squares;
    double *limits, *counts;
    size_t nlimits, ncounts;
} tvalue;

static inline void tvalues_free(tvalue *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].limits);
        free(v[i].counts);
    }
}

static inline bool parse_histo(const uint8_t *p, size_t n, tvalue *v)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    size_t lcap = 0, ccap = 0;
    while (rill__pbr_next(&r, &f)) {
        double d = rill__pb_as_double(&f);
        switch (f.field) {
        case 1:
            v->min = d;
            break;
        case 2:
            v->max = d;
            break;
        case 3:
            v->num = d;
            break;
        case 4:
            v->sum = d;
            break;
        case 5:
            v->sum_squares = d;
            break;
        case 6:
            if (!rill__pb_doubles(&f, &v->limits, &v->nlimits, &lcap)) return false;
            break;
        case 7:
            if (!rill__pb_doubles(&f, &v->counts, &v->ncounts, &ccap)) return false;
            break;
        }
    }
    return !r.bad;
}

/* Parses a serialized Summary; returns the value count or -1. Free with tvalues_free. */
static inline int parse_summary(const void *bytes, size_t n, tvalue *out, int cap)
{
    rill__pbr r = rill__pbr_make(bytes, n);
    rill__pbfield f;
    int k = 0;
    while (rill__pbr_next(&r, &f)) {
        if (f.field != 1 || k >= cap) return -1;
        tvalue *v = &out[k++];
        memset(v, 0, sizeof *v);
        rill__pbr vr = rill__pbr_make(f.b, f.blen);
        rill__pbfield vf;
        while (rill__pbr_next(&vr, &vf)) {
            if (vf.field == 1) snprintf(v->tag, sizeof v->tag, "%.*s", (int)vf.blen, vf.b);
            if (vf.field == 2) v->kind = 1, v->simple = rill__pb_as_float(&vf);
            if (vf.field == 5) {
                v->kind = 2;
                if (!parse_histo(vf.b, vf.blen, v)) return -1;
            }
        }
        if (vr.bad) return -1;
    }
    return r.bad ? -1 : k;
}

static inline int parse_summary_tensor(const rill_tensor *t, tvalue *out, int cap)
{
    if (!t || rill_tensor_dtype(t) != RILL_STRING || rill_tensor_rank(t) != 0) return -1;
    size_t n = 0;
    const char *p = rill_tensor_get_string(t, 0, &n);
    return parse_summary(p, n, out, cap);
}

static inline char *source_dir(void)
{
    const char *f = __FILE__;
    const char *cut = strstr(f, "tests/train/summary_check.h");
    if (!cut) return rill__strdup(".");
    return cut == f ? rill__strdup(".") : rill__strndup(f, (size_t)(cut - f - 1));
}

#endif
