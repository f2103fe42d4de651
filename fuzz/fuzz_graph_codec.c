/* fuzz_graph_codec.c - the execution-graph decoder (distributed/graph_codec.c), what a task runs
 * on the bytes of a REGISTER request.
 *
 * A graph the decoder accepts must be one the encoder writes back: with each node asking for
 * the device it came with (as the server has it), its encoding decodes again to a graph whose
 * encoding is the same bytes (encode . decode is a fixed point) and the same devices. Rejections
 * are DATA_LOSS (malformed bytes) or INVALID_ARGUMENT (a graph that does not build). */
#include "fuzz.h"

#include "core/core.h"
#include "distributed/graph_codec.h"

#include <rill/rill.h>

static void free_devices(char **devs, int n)
{
    for (int i = 0; i < n; i++) rill__free(devs[i]);
    rill__free(devs);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (!p) abort();
    memcpy(p, data, size);
    rill_status *s = rill_status_new();
    char **devs = NULL;
    rill_graph *g = rill__graph_decode(p, size, &devs, s);
    if (!g) {
        rill_code c = rill_status_code(s);
        FUZZ_ASSERT(c == RILL_DATA_LOSS || c == RILL_INVALID_ARGUMENT);
        goto out;
    }
    int nn = rill_graph_num_nodes(g);
    /* Each node asks for the device it came with, as the server has it (server.c). */
    for (int i = 0; i < nn; i++) {
        FUZZ_ASSERT(devs[i] != NULL);
        rill_node *n = rill_graph_node(g, i);
        rill__free(n->requested_device);
        n->requested_device = rill__strdup(devs[i]);
    }
    uint8_t *enc = NULL, *enc2 = NULL;
    size_t len = 0, len2 = 0;
    FUZZ_ASSERT(rill__graph_encode(g, &enc, &len, s));
    char **devs2 = NULL;
    rill_graph *g2 = rill__graph_decode(enc, len, &devs2, s);
    if (!g2) fprintf(stderr, "the re-encoded graph does not decode: %s\n", rill_status_message(s));
    FUZZ_ASSERT(g2 != NULL);
    FUZZ_ASSERT(rill_graph_num_nodes(g2) == nn);
    for (int i = 0; i < nn; i++) {
        FUZZ_ASSERT(strcmp(devs[i], devs2[i]) == 0);
        rill_node *n = rill_graph_node(g2, i);
        rill__free(n->requested_device);
        n->requested_device = rill__strdup(devs2[i]);
    }
    FUZZ_ASSERT(rill__graph_encode(g2, &enc2, &len2, s));
    FUZZ_ASSERT(len2 == len && memcmp(enc, enc2, len) == 0);
    free_devices(devs2, nn);
    rill_graph_free(g2);
    rill__free(enc);
    rill__free(enc2);
    free_devices(devs, nn);
    rill_graph_free(g);
out:
    rill_status_free(s);
    free(p);
    return 0;
}
