/* fuzz_tf_config.c - TF_CONFIG: the JSON reader (distributed/json.c) on the raw bytes, then the
 * resolver (rill_task_config_from_tf_config_json, distributed/resolve.c) on them as a C string.
 *
 * The reader's bounds are checked on every tree it returns: depth, members, string lengths and
 * terminators, and that every key is found again by rill__json_get. A cluster the resolver
 * accepts must print (rill_cluster_spec_to_string, also cut short) as JSON the reader takes, and
 * that text with the task resolved must resolve again to the same cluster and task. */
#include "fuzz.h"

#include "distributed/json.h"

#include <rill/cluster.h>
#include <rill/status.h>

static void check_tree(const rill__json *v, int depth)
{
    FUZZ_ASSERT(depth <= RILL__JSON_MAX_DEPTH);
    switch (v->type) {
    case RILL__JSON_STRING:
        FUZZ_ASSERT(v->string && strlen(v->string) == v->length);
        break;
    case RILL__JSON_NUMBER:
        if (v->is_int) FUZZ_ASSERT((double)v->integer == v->number);
        break;
    case RILL__JSON_ARRAY:
    case RILL__JSON_OBJECT:
        FUZZ_ASSERT(v->count >= 0 && (v->count == 0 || v->items));
        if (v->type == RILL__JSON_OBJECT) FUZZ_ASSERT(v->count <= RILL__JSON_MAX_MEMBERS);
        for (int i = 0; i < v->count; i++) {
            if (v->type == RILL__JSON_OBJECT)
                FUZZ_ASSERT(rill__json_get(v, v->keys[i]) == v->items[i]);
            check_tree(v->items[i], depth + 1);
        }
        break;
    default:
        FUZZ_ASSERT(v->type == RILL__JSON_NULL || v->type == RILL__JSON_BOOL);
    }
}

/* The cluster as rill_cluster_spec_to_string writes it; caller frees. */
static char *spec_text(const rill_cluster_spec *c)
{
    size_t n = rill_cluster_spec_to_string(c, NULL, 0);
    char *buf = malloc(n + 1);
    if (!buf) abort();
    FUZZ_ASSERT(rill_cluster_spec_to_string(c, buf, n + 1) == n && strlen(buf) == n);
    char small[5];
    FUZZ_ASSERT(rill_cluster_spec_to_string(c, small, sizeof small) == n);
    FUZZ_ASSERT(strlen(small) == (n < sizeof small ? n : sizeof small - 1));
    return buf;
}

static void check_config(const rill_task_config *cfg)
{
    rill_status *s = rill_status_new();
    FUZZ_ASSERT(cfg->cluster && strcmp(cfg->source, "TF_CONFIG") == 0);
    FUZZ_ASSERT(strnlen(cfg->job_name, sizeof cfg->job_name) < sizeof cfg->job_name);
    FUZZ_ASSERT(rill_cluster_spec_task_address(cfg->cluster, cfg->job_name, cfg->task_index, s));
    char *text = spec_text(cfg->cluster);
    rill__json *tree = rill__json_parse(text, strlen(text), s);
    FUZZ_ASSERT(tree != NULL);
    rill__json_free(tree);
    /* Job names are letters, digits, '_' and '-' (rill_cluster_spec_add_job): no escaping. */
    size_t n = strlen(text) + strlen(cfg->job_name) + 64;
    char *again = malloc(n);
    if (!again) abort();
    snprintf(again, n, "{\"cluster\": %s, \"task\": {\"type\": \"%s\", \"index\": %d}}", text,
             cfg->job_name, cfg->task_index);
    rill_task_config back = {0};
    FUZZ_ASSERT(rill_task_config_from_tf_config_json(again, &back, s));
    FUZZ_ASSERT(rill_status_ok(s));
    char *text2 = spec_text(back.cluster);
    FUZZ_ASSERT(strcmp(text, text2) == 0);
    FUZZ_ASSERT(strcmp(back.job_name, cfg->job_name) == 0 && back.task_index == cfg->task_index);
    free(text2);
    rill_task_config_clear(&back);
    free(again);
    free(text);
    rill_status_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rill_status *s = rill_status_new();
    /* The reader is given the bytes without a terminator, in a block of exactly their size. */
    char *raw = malloc(size ? size : 1);
    if (!raw) abort();
    memcpy(raw, data, size);
    rill__json *v = rill__json_parse(raw, size, s);
    if (v)
        check_tree(v, 0);
    else
        FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT);
    rill__json_free(v);
    free(raw);

    char *text = fuzz_strndup(data, size);
    rill_status_clear(s);
    rill_task_config cfg = {0};
    bool present = rill_task_config_from_tf_config_json(text, &cfg, s);
    if (present && rill_status_ok(s))
        check_config(&cfg);
    else
        FUZZ_ASSERT(cfg.cluster == NULL && (present || rill_status_ok(s)));
    rill_task_config_clear(&cfg);
    free(text);
    rill_status_free(s);
    return 0;
}
