/* rill/summary.h - TensorBoard summaries and event files (TF1's tf.summary and FileWriter).
 *
 * Summary ops run in a session like any other op; each produces a DT_STRING scalar holding a
 * serialized `Summary` protocol buffer. A rill_summary_writer appends them, stamped with a step
 * and the wall time, to an event file TensorBoard reads (`<logdir>/events.out.tfevents.*`).
 * rill_event_reader reads such files back, whoever wrote them.
 *
 * The typical loop, as a TF1 script does it:
 *
 *     rill_summary_scalar(g, "cost", loss);
 *     rill_summary_histogram(g, "weights", w);
 *     rill_output merged = rill_summary_merge_all(g, NULL);
 *     rill_summary_writer *fw = rill_summary_writer_new("/tmp/logs", NULL, s);
 *     ... each N steps: run merged, then rill_summary_writer_add_summary(fw, out, step, s);
 *     rill_summary_writer_free(fw);
 */
#ifndef RILL_SUMMARY_H
#define RILL_SUMMARY_H

#include <rill/graph.h>
#include <rill/status.h>
#include <rill/tensor.h>

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The graph collection every summary op joins (TF's tf.GraphKeys.SUMMARIES). */
#define RILL_SUMMARIES_COLLECTION "summaries"

/* --- summary ops ---
 *
 * As tf.summary.scalar/histogram: name is cleaned as TF does (characters outside
 * [A-Za-z0-9_./-] become '_', leading '/' are dropped, with an info log), opens a name scope,
 * and the node takes the scope's name: inside scope "train", "cost" gives node and tag
 * "train/cost", a second "cost" gives "train/cost_1". Errors go to the graph's sticky status. */

/* Summary{Value{tag, simple_value}} of a scalar (float, double, int32, int64 or half; the value
 * is converted to float as TF does). Op "ScalarSummary". */
rill_output rill_summary_scalar(rill_graph *g, const char *name, rill_output value);
/* Summary{Value{tag, histo}} of every element of values (any shape; float, double, int32,
 * int64 or half), with TensorFlow's default buckets. A NaN or infinite element fails the step
 * with INVALID_ARGUMENT "Nan in summary histogram for: <tag>" ("Infinity in ..." for an
 * infinity, as TF 1.15). Op "HistogramSummary". */
rill_output rill_summary_histogram(rill_graph *g, const char *name, rill_output values);
/* The values of n string tensors of serialized Summary protos (any shape), in order, as one
 * Summary; a tag seen twice fails the step with INVALID_ARGUMENT "Duplicate tag <tag> found in
 * summary inputs". As tf.summary.merge, the node is "<name or Merge>/<name or MergeSummary>"
 * (normally "Merge/MergeSummary") and joins no collection. inputs are copied. */
rill_output rill_summary_merge(rill_graph *g, const rill_output *inputs, int n, const char *name);
/* rill_summary_merge of the RILL_SUMMARIES_COLLECTION collection; {NULL, 0} without an error
 * when the collection is empty (TF returns None). */
rill_output rill_summary_merge_all(rill_graph *g, const char *name);

/* --- writing event files (tf.summary.FileWriter) ---
 *
 * Records are kept in memory and written when 64 KiB have piled up, at
 * rill_summary_writer_flush and at rill_summary_writer_free. TF's FileWriter flushes from a
 * background thread every flush_secs (120 s); rill has no such thread: the caller (the
 * Supervisor's summary thread) flushes periodically. All calls are thread-safe.
 *
 * If the file is deleted while open, the next flush logs "The events file <f> has disappeared."
 * and starts a new file (current time in its name, the version event first) holding the events
 * not yet written, as TF's EventsWriter re-opens at its next write. */
typedef struct rill_summary_writer rill_summary_writer;

/* Creates logdir (and its parents), opens <logdir>/events.out.tfevents.<%010lld unix
 * seconds>.<hostname><filename_suffix> (the suffix may be NULL) and writes and flushes
 * Event{wall_time = whole seconds of the open, file_version = "brain.Event:2"}. A file of the
 * same name is replaced (with a warning), as in TF. Returns NULL with s set (the message names the
 * path) on failure. Free with rill_summary_writer_free. */
rill_summary_writer *rill_summary_writer_new(const char *logdir, const char *filename_suffix,
                                             rill_status *s);
/* Appends Event{wall_time = now, step, summary} (a step of 0 is not on the wire: proto3).
 * summary (borrowed) is a DT_STRING scalar from a summary op; anything that does not parse as a
 * Summary is INVALID_ARGUMENT and nothing is written. */
bool rill_summary_writer_add_summary(rill_summary_writer *w, const rill_tensor *summary,
                                     int64_t step, rill_status *s);
/* Appends a Summary{Value{tag, simple_value = (float)value}} event at step. */
bool rill_summary_writer_add_scalar(rill_summary_writer *w, const char *tag, double value,
                                    int64_t step, rill_status *s);

typedef enum {
    RILL_SESSION_LOG_START = 1,
    RILL_SESSION_LOG_STOP = 2,
    RILL_SESSION_LOG_CHECKPOINT = 3,
} rill_session_log_status;

/* Appends Event{wall_time, step, session_log{status, checkpoint_path}}; checkpoint_path may be
 * NULL, a negative step means "no step" (the Supervisor's STOP). TensorBoard drops points at or
 * after the step of a START, which is how a restarted run replaces what it redoes. */
bool rill_summary_writer_add_session_log(rill_summary_writer *w, rill_session_log_status st,
                                         const char *checkpoint_path, int64_t step, rill_status *s);
/* Appends Event{wall_time, graph_def}: g as a GraphDef (every node's name, op, inputs with
 * "^name" control inputs, requested device, and the "_output_shapes" attr), which TensorBoard's
 * graph tab draws, as tf.summary.FileWriter.add_graph. */
bool rill_summary_writer_add_graph(rill_summary_writer *w, const rill_graph *g, rill_status *s);
/* Writes what is buffered and fsyncs the file. */
bool rill_summary_writer_flush(rill_summary_writer *w, rill_status *s);
/* The file being written (a new one after the old one disappeared); borrowed, valid until
 * rill_summary_writer_free. */
const char *rill_summary_writer_path(const rill_summary_writer *w);
/* Flushes (errors are logged), closes and frees. NULL is a no-op. */
void rill_summary_writer_free(rill_summary_writer *w);

/* --- reading event files (tf.compat.v1.train.summary_iterator) --- */

enum { RILL_EVENT_FILE_VERSION = 1, RILL_EVENT_SUMMARY, RILL_EVENT_SESSION_LOG, RILL_EVENT_OTHER };
enum { RILL_VALUE_SIMPLE = 1, RILL_VALUE_HISTO, RILL_VALUE_OTHER };
#define RILL_EVENT_MAX_VALUES 64

/* One Summary.Value of an event. */
typedef struct rill_event_value {
    char tag[256];
    int kind; /* RILL_VALUE_* */
    float simple_value;
    double histo_min, histo_max, histo_num, histo_sum, histo_sum_squares;
    int histo_nbuckets;
    double histo_bucket_total; /* the sum of the bucket counts (== num when consistent) */
} rill_event_value;

/* One event, flattened into bounded fields: strings longer than their array are truncated;
 * values past RILL_EVENT_MAX_VALUES are only counted. */
typedef struct rill_event {
    double wall_time;
    int64_t step;
    bool has_step; /* step is on the wire (proto3 leaves out a step of 0) */
    int kind;      /* RILL_EVENT_*; OTHER: a graph, a log message, metadata, ... */
    char file_version[64];
    int session_log_status; /* rill_session_log_status, or 0 */
    char checkpoint_path[1024];
    char session_log_msg[256];
    int nvalues;         /* values stored below */
    int nvalues_omitted; /* values beyond RILL_EVENT_MAX_VALUES */
    rill_event_value values[RILL_EVENT_MAX_VALUES];
} rill_event;

typedef struct rill_event_reader rill_event_reader;

/* Opens an event file (any TFRecord file of Event protos). NULL with s set on failure. */
rill_event_reader *rill_event_reader_new(const char *path, rill_status *s);
/* Reads the next event into *ev: 1 for an event, 0 at the end of the file, -1 with s set to
 * DATA_LOSS (naming the file and the record's byte offset) for a bad length checksum, a bad data
 * checksum or a malformed Event. A record cut short at the end counts as the end, as in TF; a
 * later call tries it again, so a reader can follow a file that is being written. After -1 every
 * call returns -1. */
int rill_event_reader_next(rill_event_reader *r, rill_event *ev, rill_status *s);
/* Closes and frees. NULL is a no-op. */
void rill_event_reader_free(rill_event_reader *r);

#ifdef __cplusplus
}
#endif
#endif
