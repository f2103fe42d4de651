/* fuzz_checkpoint_state.c - the `checkpoint` state file's parser (format/checkpoint_state.c):
 * CheckpointState in protobuf text format, as rill_get_checkpoint_state and
 * rill_latest_checkpoint read it from a training directory.
 *
 * The input is the file. A state that parses must come back the same through the writer
 * (rill__checkpoint_state_write into a second directory, then read again): every path byte for
 * byte, every timestamp bit for bit. That is the check that the writer's escaping and number
 * printing are what the parser reads. */
#include "fuzz.h"

#include "format/checkpoint.h"

#include <rill/rill.h>

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
}

/* st (read from one directory: its paths absolute) through the writer into dir and back. */
static void round_trip(const rill_checkpoint_state *st, const char *dir)
{
    int n = st->num_all_model_checkpoint_paths;
    /* The writer takes one timestamp per path, or none. */
    if (st->num_timestamps != 0 && st->num_timestamps != n) return;
    /* Paths into the harness's own scratch folder (the fuzzer learns its name from the compares)
     * may name the state file being written: not a state a Saver writes. */
    if (strstr(st->model_checkpoint_path, fuzz_dir())) return;
    for (int i = 0; i < n; i++)
        if (strstr(st->all_model_checkpoint_paths[i], fuzz_dir())) return;
    rill_status *s = rill_status_new();
    const double *ts = st->num_timestamps ? st->all_model_checkpoint_timestamps : NULL;
    FUZZ_ASSERT(rill__checkpoint_state_write(dir, st->model_checkpoint_path,
                                             (const char *const *)st->all_model_checkpoint_paths,
                                             ts, n, st->last_preserved_timestamp, s));
    rill_checkpoint_state *back = rill_get_checkpoint_state(dir, s);
    FUZZ_ASSERT(back != NULL);
    FUZZ_ASSERT(strcmp(back->model_checkpoint_path, st->model_checkpoint_path) == 0);
    FUZZ_ASSERT(back->num_all_model_checkpoint_paths == n);
    for (int i = 0; i < n; i++)
        FUZZ_ASSERT(
            strcmp(back->all_model_checkpoint_paths[i], st->all_model_checkpoint_paths[i]) == 0);
    FUZZ_ASSERT(back->num_timestamps == st->num_timestamps);
    for (int i = 0; i < st->num_timestamps; i++)
        FUZZ_ASSERT(same_double(back->all_model_checkpoint_timestamps[i],
                                st->all_model_checkpoint_timestamps[i]));
    FUZZ_ASSERT(same_double(back->last_preserved_timestamp, st->last_preserved_timestamp));
    rill_checkpoint_state_free(back);
    rill_status_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[96], file[128], again[96];
    if (!dir[0]) {
        fuzz_quiet();
        snprintf(dir, sizeof dir, "%s/train", fuzz_dir());
        snprintf(again, sizeof again, "%s/again", fuzz_dir());
        snprintf(file, sizeof file, "%s/checkpoint", dir);
        FUZZ_ASSERT(mkdir(dir, 0700) == 0 && mkdir(again, 0700) == 0);
    }
    fuzz_write_file(file, data, size);
    rill_status *s = rill_status_new();
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    if (st) {
        FUZZ_ASSERT(rill_status_ok(s));
        FUZZ_ASSERT(st->model_checkpoint_path && st->model_checkpoint_path[0]);
        FUZZ_ASSERT(st->num_all_model_checkpoint_paths >= 0 && st->num_timestamps >= 0);
        for (int i = 0; i < st->num_all_model_checkpoint_paths; i++)
            FUZZ_ASSERT(st->all_model_checkpoint_paths[i] != NULL);
        round_trip(st, again);
    }
    rill_checkpoint_state_free(st);
    /* What a Saver or a restore does with the directory. */
    char latest[256];
    rill_latest_checkpoint(dir, latest, sizeof latest);
    rill_status_free(s);
    return 0;
}
