/* events.c - TensorBoard event files: the writer (tf.summary.FileWriter over TF's C++
 * EventsWriter) and a reader (tf.compat.v1.train.summary_iterator).
 *
 * An event file is a plain sequence of TFRecords, each a serialized `Event` proto
 * (core/util/event.proto) framed as
 *
 *     uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)
 *
 * little-endian, without header or trailer. The first event names the format
 * ("brain.Event:2"); TensorBoard relies on it to decide how a restarted run replaces data.
 *
 * The writer frames records into a memory buffer under its mutex and writes the buffer out when
 * it passes FLUSH_BYTES, or on an explicit flush (which also fsyncs). Before writing it checks
 * that its file is still the one at its path; a file deleted under it is replaced by a new one,
 * as TF's EventsWriter does. A write that fails is cut back off the file, so the file never
 * holds half a record followed by good ones.
 *
 * The reader treats the file as hostile: both checksums are verified, a length is trusted only
 * up to what the file holds, and the protos are walked with the bounded reader of core/pb.h. A
 * record cut short at the end is "the end for now": the next call looks again. */
#include <rill/summary.h>

#include "../core/core.h"
#include "../core/pb.h"
#include "../format/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILE_VERSION "brain.Event:2"
#define FLUSH_BYTES  (64 * 1024)
#define HEADER_BYTES 12 /* length + its crc */
#define FOOTER_BYTES 4  /* data crc */

/* Event (core/util/event.proto) fields. */
enum {
    EV_WALL_TIME = 1,
    EV_STEP = 2,
    EV_FILE_VERSION = 3,
    EV_GRAPH_DEF = 4,
    EV_SUMMARY = 5,
    EV_SESSION_LOG = 7,
};

/* --- TFRecord framing --- */

static uint32_t masked_crc(const void *p, size_t n)
{
    return rill__crc32c_mask(rill__crc32c(0, p, n));
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void frame_record(rill__pbw *out, const rill__pbw *data)
{
    uint8_t head[HEADER_BYTES], foot[FOOTER_BYTES];
    put_le(head, data->n, 8);
    put_le(head + 8, masked_crc(head, 8), 4);
    put_le(foot, masked_crc(data->p, data->n), 4);
    rill__pbw_raw(out, head, sizeof head);
    rill__pbw_raw(out, data->p, data->n);
    rill__pbw_raw(out, foot, sizeof foot);
}

/* --- parsing Summary and Event protos (shared by the reader and add_summary's check) --- */

static void copy_str(char *dst, size_t cap, const uint8_t *p, size_t n)
{
    if (n >= cap) n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = 0;
}

/* Adds the doubles of a packed or unpacked repeated field to *count and *total. */
static bool add_doubles(const rill__pbfield *f, int *count, double *total)
{
    if (f->wire == RILL__PB_FIXED64) {
        if (*count < INT_MAX) (*count)++;
        if (total) *total += rill__pb_as_double(f);
        return true;
    }
    if (f->wire != RILL__PB_BYTES) return true; /* a mismatched wire type: unknown field */
    if (f->blen % 8 != 0) return false;
    for (size_t i = 0; i < f->blen; i += 8) {
        uint64_t u = get_le(f->b + i, 8);
        double d;
        memcpy(&d, &u, sizeof d);
        if (*count < INT_MAX) (*count)++;
        if (total) *total += d;
    }
    return true;
}

static bool parse_histo(const uint8_t *p, size_t n, rill_event_value *v)
{
    double *stats[6] = {NULL,          &v->histo_min, &v->histo_max,
                        &v->histo_num, &v->histo_sum, &v->histo_sum_squares}; /* fields 1-5 */
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    int nlimits = 0;
    while (rill__pbr_next(&r, &f)) {
        bool ok = true;
        if (f.field >= 1 && f.field <= 5 && f.wire == RILL__PB_FIXED64)
            *stats[f.field] = rill__pb_as_double(&f);
        else if (f.field == 6)
            ok = add_doubles(&f, &nlimits, NULL);
        else if (f.field == 7)
            ok = add_doubles(&f, &v->histo_nbuckets, &v->histo_bucket_total);
        if (!ok) return false;
    }
    return !r.bad;
}

static bool parse_value(const uint8_t *p, size_t n, rill_event_value *v)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    while (rill__pbr_next(&r, &f)) {
        if (f.field == 1 && f.wire == RILL__PB_BYTES) {
            copy_str(v->tag, sizeof v->tag, f.b, f.blen);
        } else if (f.field == 2 && f.wire == RILL__PB_FIXED32) {
            v->kind = RILL_VALUE_SIMPLE;
            v->simple_value = rill__pb_as_float(&f);
        } else if (f.field == 5 && f.wire == RILL__PB_BYTES) {
            v->kind = RILL_VALUE_HISTO;
            if (!parse_histo(f.b, f.blen, v)) return false;
        } else if ((f.field == 3 || f.field == 4 || f.field == 6 || f.field == 8) &&
                   f.wire == RILL__PB_BYTES) {
            v->kind = RILL_VALUE_OTHER; /* old histogram, image, audio, tensor */
        }
    }
    if (!v->kind) v->kind = RILL_VALUE_OTHER;
    return !r.bad;
}

/* A Summary's values into ev (NULL: only check that it parses). */
static bool parse_summary(const uint8_t *p, size_t n, rill_event *ev)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    while (rill__pbr_next(&r, &f)) {
        if (f.field != 1 || f.wire != RILL__PB_BYTES) continue;
        rill_event_value scratch;
        bool keep = ev && ev->nvalues < RILL_EVENT_MAX_VALUES;
        rill_event_value *v = keep ? &ev->values[ev->nvalues] : &scratch;
        memset(v, 0, sizeof *v);
        if (!parse_value(f.b, f.blen, v)) return false;
        if (keep)
            ev->nvalues++;
        else if (ev && ev->nvalues_omitted < INT_MAX)
            ev->nvalues_omitted++;
    }
    return !r.bad;
}

static bool parse_session_log(const uint8_t *p, size_t n, rill_event *ev)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    while (rill__pbr_next(&r, &f)) {
        if (f.field == 1 && f.wire == RILL__PB_VARINT)
            ev->session_log_status = (int)(int32_t)f.u;
        else if (f.field == 2 && f.wire == RILL__PB_BYTES)
            copy_str(ev->checkpoint_path, sizeof ev->checkpoint_path, f.b, f.blen);
        else if (f.field == 3 && f.wire == RILL__PB_BYTES)
            copy_str(ev->session_log_msg, sizeof ev->session_log_msg, f.b, f.blen);
    }
    return !r.bad;
}

static bool parse_event(const uint8_t *p, size_t n, rill_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = RILL_EVENT_OTHER;
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    while (rill__pbr_next(&r, &f)) {
        bool bytes = f.wire == RILL__PB_BYTES;
        if (f.field == EV_WALL_TIME && f.wire == RILL__PB_FIXED64) {
            ev->wall_time = rill__pb_as_double(&f);
        } else if (f.field == EV_STEP && f.wire == RILL__PB_VARINT) {
            ev->step = (int64_t)f.u;
            ev->has_step = true;
        } else if (f.field == EV_FILE_VERSION && bytes) {
            ev->kind = RILL_EVENT_FILE_VERSION;
            copy_str(ev->file_version, sizeof ev->file_version, f.b, f.blen);
        } else if (f.field == EV_SUMMARY && bytes) {
            ev->kind = RILL_EVENT_SUMMARY;
            if (!parse_summary(f.b, f.blen, ev)) return false;
        } else if (f.field == EV_SESSION_LOG && bytes) {
            ev->kind = RILL_EVENT_SESSION_LOG;
            if (!parse_session_log(f.b, f.blen, ev)) return false;
        }
    }
    return !r.bad;
}

/* --- the writer --- */

struct rill_summary_writer {
    pthread_mutex_t mu;
    char *logdir;    /* without trailing slashes */
    char *suffix;    /* "" when none */
    char *path;      /* the current file; one of paths */
    rill__vec paths; /* every file opened, so that rill_summary_writer_path stays valid */
    int fd;          /* -1: a new file is opened at the next write */
    dev_t dev;       /* the open file's identity, to notice it disappearing */
    ino_t ino;
    off_t size;    /* bytes written to the file: a failed write is cut back to here */
    rill__pbw buf; /* framed records not written yet */
    int nbuffered; /* events in buf */
    int nunsynced; /* events written since the last fsync */
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}


static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? errno : EIO;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Writes one framed Event straight to fd (the version event of a new file). */
static int write_event_now(int fd, const rill__pbw *event)
{
    rill__pbw rec = {0};
    frame_record(&rec, event);
    int err = write_all(fd, rec.p, rec.n);
    if (!err && fsync(fd) != 0) err = errno;
    rill__pbw_free(&rec);
    return err;
}

/* TF 1.x's name, events.out.tfevents.<second>.<host><suffix>; with `again` > 0 (that name is
 * taken: another writer started in the same second), TF 2.x's form with the process and a
 * counter, events.out.tfevents.<second>.<host>.<pid>.<again><suffix>, which TensorBoard reads
 * the same way. */
static char *events_file_name(const rill_summary_writer *w, long long secs, int again)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_';
    if (again > 0)
        return rill__asprintf("%s/events.out.tfevents.%010lld.%s.%ld.%d%s", w->logdir, secs, host,
                              (long)getpid(), again, w->suffix);
    return rill__asprintf("%s/events.out.tfevents.%010lld.%s%s", w->logdir, secs, host, w->suffix);
}

/* Opens a new file named after the current second and writes its version event. A name that
 * another writer took in the same second (a restarted job, a second writer) is never replaced,
 * as TF 1.x replaces it, losing that writer's events: the new file gets the next free name. */
static bool open_file(rill_summary_writer *w, rill_status *s)
{
    long long secs = (long long)time(NULL);
    char *path = events_file_name(w, secs, 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    for (int again = 1; fd < 0 && errno == EEXIST && again < 1000; again++) {
        rill__free(path);
        path = events_file_name(w, secs, again);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    }
    if (fd < 0) {
        int err = errno;
        rill_status_set(s, rill__errno_code(err), "Could not open events file '%s': %s", path,
                        strerror(err));
        rill__free(path);
        return false;
    }
    rill__pbw ev = {0};
    rill__pbw_double(&ev, EV_WALL_TIME, (double)secs);
    rill__pbw_string(&ev, EV_FILE_VERSION, FILE_VERSION);
    struct stat st;
    int err = write_event_now(fd, &ev);
    if (!err && fstat(fd, &st) != 0) err = errno;
    rill__pbw_free(&ev);
    if (err) {
        rill_status_set(s, rill__errno_code(err), "Could not write events file '%s': %s", path,
                        strerror(err));
        close(fd);
        rill__free(path);
        return false;
    }
    w->fd = fd;
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    w->size = st.st_size;
    w->path = path;
    rill__vec_push(&w->paths, path);
    return true;
}

/* True (after logging, as TF) when the open file is no longer at its path. */
static bool file_disappeared(const rill_summary_writer *w)
{
    struct stat st;
    if (stat(w->path, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino) return false;
    rill__log(RILL_LOG_ERROR, "The events file %s has disappeared.", w->path);
    return true;
}

static void close_file(rill_summary_writer *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
}

static void drop_buffer(rill_summary_writer *w)
{
    w->buf.n = 0;
    w->nbuffered = 0;
}

/* Makes sure a file takes the buffered events: one deleted under the writer is replaced by a
 * new one, as TF's EventsWriter re-opens at its next write. The events are lost (and s set)
 * when no file can be opened. */
static bool ensure_file(rill_summary_writer *w, rill_status *s)
{
    if (w->fd >= 0 && file_disappeared(w)) {
        close_file(w);
        w->nunsynced = 0; /* those went with the old file */
    }
    if (w->fd >= 0 || !w->buf.n || open_file(w, s)) return true;
    char *why = rill__strdup(rill_status_message(s));
    rill_status_set(s, rill_status_code(s), "Failed to flush %d events: %s", w->nbuffered, why);
    rill__free(why);
    drop_buffer(w);
    return false;
}

/* Writes the buffer to the file; a failed write is cut back off the file and its events are
 * lost (TF loses them too), so that later records stay readable. */
static bool write_buffer(rill_summary_writer *w, rill_status *s)
{
    if (!w->buf.n) return true;
    int err = write_all(w->fd, w->buf.p, w->buf.n);
    if (err) {
        if (ftruncate(w->fd, w->size) != 0 || lseek(w->fd, w->size, SEEK_SET) < 0)
            rill__log(RILL_LOG_ERROR, "Could not cut %s back to %lld bytes: %s", w->path,
                      (long long)w->size, strerror(errno));
        rill_status_set(s, rill__errno_code(err), "Failed to flush %d events to %s: %s", w->nbuffered,
                        w->path, strerror(err));
        drop_buffer(w);
        return false;
    }
    w->size += (off_t)w->buf.n;
    w->nunsynced += w->nbuffered;
    drop_buffer(w);
    return true;
}

/* Writes the buffer out and, with sync, fsyncs. Called with the mutex held. */
static bool flush_locked(rill_summary_writer *w, bool sync, rill_status *s)
{
    if (!ensure_file(w, s) || !write_buffer(w, s)) return false;
    if (sync && w->nunsynced) {
        if (fsync(w->fd) != 0) {
            int err = errno;
            rill_status_set(s, rill__errno_code(err), "Failed to sync %d events to %s: %s", w->nunsynced,
                            w->path, strerror(err));
            return false;
        }
        w->nunsynced = 0;
    }
    return true;
}

/* Frames event into the buffer, opening a new file first when there is none. */
static bool append_event(rill_summary_writer *w, const rill__pbw *event, rill_status *s)
{
    pthread_mutex_lock(&w->mu);
    bool ok = w->fd >= 0 || open_file(w, s);
    if (ok) {
        frame_record(&w->buf, event);
        w->nbuffered++;
        if (w->buf.n >= FLUSH_BYTES) ok = flush_locked(w, false, s);
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

/* An Event with wall_time = now and step (proto3: 0 and "no step" look alike). */
static void event_start(rill__pbw *ev, int64_t step, bool has_step)
{
    rill__pbw_double(ev, EV_WALL_TIME, wall_now());
    if (has_step && step != 0) rill__pbw_sint(ev, EV_STEP, step);
}

static bool check_writer(const rill_summary_writer *w, const char *fn, rill_status *s)
{
    if (w) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT, "%s: the writer is NULL", fn);
    return false;
}

rill_summary_writer *rill_summary_writer_new(const char *logdir, const char *filename_suffix,
                                             rill_status *s)
{
    if (!logdir || !*logdir) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_summary_writer_new: logdir is empty");
        return NULL;
    }
    size_t len = strlen(logdir);
    while (len > 1 && logdir[len - 1] == '/') len--;
    rill_summary_writer *w = rill__calloc(1, sizeof *w);
    RILL_CHECK_ALLOC(w);
    pthread_mutex_init(&w->mu, NULL);
    w->fd = -1;
    w->logdir = rill__strndup(logdir, len);
    w->suffix = rill__strdup(filename_suffix ? filename_suffix : "");
    if (strcmp(w->logdir, "/") == 0) w->logdir[0] = 0; /* "/events..." rather than "//..." */
    if (!rill__make_dirs(logdir, s) || !open_file(w, s)) {
        rill_summary_writer_free(w);
        return NULL;
    }
    return w;
}

bool rill_summary_writer_add_summary(rill_summary_writer *w, const rill_tensor *summary,
                                     int64_t step, rill_status *s)
{
    if (!check_writer(w, "rill_summary_writer_add_summary", s)) return false;
    if (!summary || rill_tensor_dtype(summary) != RILL_STRING || rill_tensor_rank(summary) != 0) {
        char buf[96] = "";
        if (summary) rill_shape_str(rill_tensor_shape(summary), buf, sizeof buf);
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "add_summary expects a scalar string tensor holding a serialized Summary, "
                        "got %s %s",
                        summary ? rill_dtype_name(rill_tensor_dtype(summary)) : "NULL", buf);
        return false;
    }
    size_t n = 0;
    const char *bytes = rill_tensor_get_string(summary, 0, &n);
    if (!bytes || !parse_summary((const uint8_t *)bytes, n, NULL)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "add_summary: the tensor (%zu bytes) is not a serialized Summary proto", n);
        return false;
    }
    rill__pbw ev = {0};
    event_start(&ev, step, true);
    rill__pbw_bytes(&ev, EV_SUMMARY, bytes, n);
    bool ok = append_event(w, &ev, s);
    rill__pbw_free(&ev);
    return ok;
}

bool rill_summary_writer_add_scalar(rill_summary_writer *w, const char *tag, double value,
                                    int64_t step, rill_status *s)
{
    if (!check_writer(w, "rill_summary_writer_add_scalar", s)) return false;
    if (!tag || !*tag) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_summary_writer_add_scalar: empty tag");
        return false;
    }
    rill__pbw val = {0}, sum = {0}, ev = {0};
    rill__pbw_string(&val, 1, tag);
    rill__pbw_float(&val, 2, (float)value);
    rill__pbw_message(&sum, 1, &val);
    event_start(&ev, step, true);
    rill__pbw_message(&ev, EV_SUMMARY, &sum);
    bool ok = append_event(w, &ev, s);
    rill__pbw_free(&val);
    rill__pbw_free(&sum);
    rill__pbw_free(&ev);
    return ok;
}

bool rill_summary_writer_add_session_log(rill_summary_writer *w, rill_session_log_status st,
                                         const char *checkpoint_path, int64_t step, rill_status *s)
{
    if (!check_writer(w, "rill_summary_writer_add_session_log", s)) return false;
    if (st < RILL_SESSION_LOG_START || st > RILL_SESSION_LOG_CHECKPOINT) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "add_session_log: unknown status %d", (int)st);
        return false;
    }
    rill__pbw log = {0}, ev = {0};
    rill__pbw_varint(&log, 1, (uint64_t)st);
    if (checkpoint_path && *checkpoint_path) rill__pbw_string(&log, 2, checkpoint_path);
    event_start(&ev, step, step >= 0);
    rill__pbw_message(&ev, EV_SESSION_LOG, &log);
    bool ok = append_event(w, &ev, s);
    rill__pbw_free(&log);
    rill__pbw_free(&ev);
    return ok;
}

/* A TensorShapeProto: dims (-1 unknown), or unknown_rank. */
static void encode_shape(rill__pbw *w, rill_shape sh)
{
    rill__pbw dim = {0};
    if (sh.rank < 0) rill__pbw_varint(w, 3, 1);
    for (int d = 0; d < sh.rank; d++) {
        dim.n = 0;
        if (sh.dims[d]) rill__pbw_sint(&dim, 1, sh.dims[d]);
        rill__pbw_message(w, 2, &dim);
    }
    rill__pbw_free(&dim);
}

/* A NodeDef (graph.proto / node_def.proto): name, op, inputs ("x", "x:1", then "^dep" for
 * control inputs), the requested device, and attr "_output_shapes" (what TensorBoard labels
 * edges with). rill's other attributes are not TF's AttrValues and stay out. */
static void encode_node(rill__pbw *w, const rill_node *n)
{
    rill__pbw one = {0}, list = {0}, val = {0}, entry = {0};
    rill__pbw_string(w, 1, rill_node_name(n));
    rill__pbw_string(w, 2, rill_node_op_type(n));
    for (int i = 0; i < rill_node_num_inputs(n); i++) {
        rill_output in = rill_node_input(n, i);
        if (!in.node) continue;
        char *name = in.index ? rill__asprintf("%s:%d", rill_node_name(in.node), in.index)
                              : rill__strdup(rill_node_name(in.node));
        rill__pbw_string(w, 3, name);
        rill__free(name);
    }
    for (int i = 0; i < rill_node_num_control_inputs(n); i++) {
        char *name = rill__asprintf("^%s", rill_node_name(rill_node_control_input(n, i)));
        rill__pbw_string(w, 3, name);
        rill__free(name);
    }
    if (*rill_node_requested_device(n)) rill__pbw_string(w, 4, rill_node_requested_device(n));
    if (rill_node_num_outputs(n) > 0) {
        for (int i = 0; i < rill_node_num_outputs(n); i++) {
            one.n = 0;
            encode_shape(&one, rill_node_output_shape(n, i));
            rill__pbw_message(&list, 7, &one); /* AttrValue.ListValue.shape */
        }
        rill__pbw_message(&val, 1, &list); /* AttrValue.list */
        rill__pbw_string(&entry, 1, "_output_shapes"); /* the map entry: key, value */
        rill__pbw_message(&entry, 2, &val);
        rill__pbw_message(w, 5, &entry);
    }
    rill__pbw_free(&one);
    rill__pbw_free(&list);
    rill__pbw_free(&val);
    rill__pbw_free(&entry);
}

bool rill_summary_writer_add_graph(rill_summary_writer *w, const rill_graph *g, rill_status *s)
{
    if (!check_writer(w, "rill_summary_writer_add_graph", s)) return false;
    if (!g) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_summary_writer_add_graph: the graph is NULL");
        return false;
    }
    rill__pbw def = {0}, node = {0}, ev = {0};
    int n = rill_graph_num_nodes(g);
    for (int i = 0; i < n; i++) {
        node.n = 0;
        encode_node(&node, rill_graph_node(g, i));
        rill__pbw_message(&def, 1, &node);
    }
    event_start(&ev, 0, false);
    rill__pbw_bytes(&ev, EV_GRAPH_DEF, def.p, def.n);
    bool ok = append_event(w, &ev, s);
    rill__pbw_free(&def);
    rill__pbw_free(&node);
    rill__pbw_free(&ev);
    return ok;
}

bool rill_summary_writer_flush(rill_summary_writer *w, rill_status *s)
{
    if (!check_writer(w, "rill_summary_writer_flush", s)) return false;
    pthread_mutex_lock(&w->mu);
    bool ok = flush_locked(w, true, s);
    pthread_mutex_unlock(&w->mu);
    return ok;
}

const char *rill_summary_writer_path(const rill_summary_writer *w)
{
    if (!w) return NULL;
    pthread_mutex_t *mu = (pthread_mutex_t *)&w->mu; /* the lock is not part of the value */
    pthread_mutex_lock(mu);
    const char *p = w->path;
    pthread_mutex_unlock(mu);
    return p;
}

void rill_summary_writer_free(rill_summary_writer *w)
{
    if (!w) return;
    rill_status *s = rill_status_new();
    if (w->fd >= 0 || w->buf.n) {
        if (!flush_locked(w, true, s))
            rill__log(RILL_LOG_ERROR, "Closing the events writer: %s", rill_status_message(s));
    }
    rill_status_free(s);
    close_file(w);
    for (int i = 0; i < w->paths.n; i++) rill__free(w->paths.items[i]);
    rill__vec_free(&w->paths);
    rill__pbw_free(&w->buf);
    rill__free(w->logdir);
    rill__free(w->suffix);
    pthread_mutex_destroy(&w->mu);
    rill__free(w);
}

/* --- the reader --- */

struct rill_event_reader {
    char *path;
    int fd;
    uint64_t offset; /* of the next record */
    uint8_t *buf;
    size_t cap;
    char *error; /* the DATA_LOSS that stopped the reader, repeated on later calls */
};

rill_event_reader *rill_event_reader_new(const char *path, rill_status *s)
{
    if (!path) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_event_reader_new: path is NULL");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        rill_status_set(s, rill__errno_code(err), "Could not open event file '%s': %s", path,
                        strerror(err));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        rill_status_set(s, RILL_FAILED_PRECONDITION,
                        "Could not read event file '%s': it is a directory", path);
        return NULL;
    }
    rill_event_reader *r = rill__calloc(1, sizeof *r);
    RILL_CHECK_ALLOC(r);
    r->path = rill__strdup(path);
    r->fd = fd;
    return r;
}

/* Reads n bytes at off; 0, or an errno (EIO when the file ended early). */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t k = pread(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? errno : EIO;
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static int reader_fail(rill_event_reader *r, rill_status *s, const char *what)
{
    rill__free(r->error);
    r->error = rill__asprintf("Event file '%s': corrupted record at byte offset %llu: %s", r->path,
                              (unsigned long long)r->offset, what);
    rill_status_set(s, RILL_DATA_LOSS, "%s", r->error);
    return -1;
}

static int reader_io_error(rill_event_reader *r, rill_status *s, int err)
{
    rill_status_set(s, rill__errno_code(err), "Could not read event file '%s' at byte offset %llu: %s",
                    r->path, (unsigned long long)r->offset, strerror(err));
    return -1;
}

int rill_event_reader_next(rill_event_reader *r, rill_event *ev, rill_status *s)
{
    if (!r || !ev) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_event_reader_next: NULL argument");
        return -1;
    }
    if (r->error) {
        rill_status_set(s, RILL_DATA_LOSS, "%s", r->error);
        return -1;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0) return reader_io_error(r, s, errno);
    uint64_t size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (size < r->offset || size - r->offset < HEADER_BYTES) return 0; /* the end, for now */
    uint8_t head[HEADER_BYTES];
    int err = read_at(r->fd, head, sizeof head, r->offset);
    if (err) return err == EIO ? 0 : reader_io_error(r, s, err);
    if (masked_crc(head, 8) != (uint32_t)get_le(head + 8, 4))
        return reader_fail(r, s, "bad length checksum");
    uint64_t len = get_le(head, 8);
    uint64_t left = size - r->offset - HEADER_BYTES;
    if (left < FOOTER_BYTES || len > left - FOOTER_BYTES) return 0; /* not all written yet */
    size_t need = (size_t)len + FOOTER_BYTES;
    if (need > r->cap) {
        uint8_t *p = rill__realloc(r->buf, need);
        RILL_CHECK_ALLOC(p);
        r->buf = p;
        r->cap = need;
    }
    err = read_at(r->fd, r->buf, need, r->offset + HEADER_BYTES);
    if (err) return err == EIO ? 0 : reader_io_error(r, s, err);
    if (masked_crc(r->buf, (size_t)len) != (uint32_t)get_le(r->buf + len, 4))
        return reader_fail(r, s, "bad data checksum");
    if (!parse_event(r->buf, (size_t)len, ev)) return reader_fail(r, s, "malformed Event proto");
    r->offset += HEADER_BYTES + need;
    return 1;
}

void rill_event_reader_free(rill_event_reader *r)
{
    if (!r) return;
    close(r->fd);
    rill__free(r->buf);
    rill__free(r->path);
    rill__free(r->error);
    rill__free(r);
}
