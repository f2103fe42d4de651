/* rill-events.c - prints the events of TensorBoard event files, written by TensorFlow or rill,
 * as TensorBoard's event inspector would show them.
 *
 *   rill-events logs/events.out.tfevents.1500000000.host    the events of one file
 *   rill-events logs                                        every events.out.tfevents* of logs
 *
 * One line per event: "<wall_time> <step> <kind> ...", where kind and the rest are
 *
 *   file_version brain.Event:2
 *   summary cost=0.25 layer1/weights=histo{num=10,min=-2.5,max=1000000,sum=1000102.75}
 *   session_log START | STOP | CHECKPOINT <path> | UNSPECIFIED   (then msg=<text> when set)
 *   other                                  (a graph, a meta graph, a log message, run metadata)
 *
 * The wall time is printed with 6 decimals, a step that is not on the wire as 0 (as TF reads
 * it), values as %.9g (which gives back the float32 exactly). For a directory, its event files
 * are read in name order (their names start with the time they were opened, as TensorBoard
 * orders them) and each file's events follow a line "# <file>". A record cut short at the end of
 * a file is the end of that file, as in TF (a writer may still be appending to it). A damaged
 * record (DATA_LOSS), a file that cannot be read or a directory without event files stops the
 * tool with a message on stderr and exit status 1, after the events read before; bad usage
 * exits with 2. */
#include <rill/summary.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *prog = "rill-events";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s FILE_OR_LOGDIR...\n"
            "Prints every event of a TensorBoard event file, or of every events.out.tfevents*\n"
            "file of a directory, one per line: \"<wall_time> <step> <kind> ...\" with kind\n"
            "file_version, summary (tag=value ...), session_log (START, STOP, CHECKPOINT <path>)\n"
            "or other. Exits 1 when a file is missing or damaged (DATA_LOSS).\n",
            prog);
}

static const char *session_log_name(int status)
{
    switch (status) {
    case RILL_SESSION_LOG_START:
        return "START";
    case RILL_SESSION_LOG_STOP:
        return "STOP";
    case RILL_SESSION_LOG_CHECKPOINT:
        return "CHECKPOINT";
    default:
        return "UNSPECIFIED";
    }
}

static void print_event(const rill_event *ev)
{
    printf("%.6f %lld ", ev->wall_time, (long long)ev->step);
    switch (ev->kind) {
    case RILL_EVENT_FILE_VERSION:
        printf("file_version %s", ev->file_version);
        break;
    case RILL_EVENT_SUMMARY:
        printf("summary");
        for (int i = 0; i < ev->nvalues; i++) {
            const rill_event_value *v = &ev->values[i];
            if (v->kind == RILL_VALUE_SIMPLE)
                printf(" %s=%.9g", v->tag, (double)v->simple_value);
            else if (v->kind == RILL_VALUE_HISTO)
                printf(" %s=histo{num=%.9g,min=%.9g,max=%.9g,sum=%.9g}", v->tag, v->histo_num,
                       v->histo_min, v->histo_max, v->histo_sum);
            else
                printf(" %s=other", v->tag);
        }
        if (ev->nvalues_omitted) printf(" (%d more values)", ev->nvalues_omitted);
        break;
    case RILL_EVENT_SESSION_LOG:
        printf("session_log %s", session_log_name(ev->session_log_status));
        if (ev->session_log_status == RILL_SESSION_LOG_CHECKPOINT || ev->checkpoint_path[0])
            printf(" %s", ev->checkpoint_path);
        if (ev->session_log_msg[0]) printf(" msg=%s", ev->session_log_msg);
        break;
    default:
        printf("other");
        break;
    }
    putchar('\n');
}

/* Prints the events of one file; 0, or 1 after printing why the file could not be read. */
static int print_file(const char *path)
{
    rill_status *s = rill_status_new();
    int rc = 1;
    rill_event_reader *r = rill_event_reader_new(path, s);
    if (r) {
        rill_event ev;
        int k;
        while ((k = rill_event_reader_next(r, &ev, s)) == 1) print_event(&ev);
        rc = k == 0 ? 0 : 1;
    }
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "%s: %s: %s\n", prog, rill_code_name(rill_status_code(s)),
                rill_status_message(s));
    }
    rill_event_reader_free(r);
    rill_status_free(s);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Prints the events of every events.out.tfevents* file of dir, in name order. */
static int print_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot read directory %s\n", prog, dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "events.out.tfevents", 19) != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(names, cap * sizeof *names);
            if (!p) {
                rc = 1;
                break;
            }
            names = p;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = 1;
            break;
        }
        snprintf(names[n++], len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
    }
    closedir(d);
    if (rc) {
        fprintf(stderr, "%s: out of memory listing %s\n", prog, dir);
    } else if (n == 0) {
        fprintf(stderr, "%s: no events.out.tfevents* file in %s\n", prog, dir);
        rc = 1;
    } else {
        qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i < n && rc == 0; i++) {
            printf("# %s\n", names[i]);
            rc = print_file(names[i]);
        }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "%s: unknown flag '%s'\n", prog, argv[i]);
            usage(stderr);
            return 2;
        }
        npaths++;
    }
    if (npaths == 0) {
        usage(stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s: no such file or directory\n", prog, argv[i]);
            return 1;
        }
        if ((S_ISDIR(st.st_mode) ? print_dir(argv[i]) : print_file(argv[i])) != 0) return 1;
    }
    return 0;
}
