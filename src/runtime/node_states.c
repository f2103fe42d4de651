/* node_states.c - per-node kernel state kept across a session's steps (random generators), in
 * fixed pages that never move (see runtime.h). */
#include "runtime.h"

#include <string.h>

void rill__node_states_init(rill__node_states *ns)
{
    memset(ns, 0, sizeof *ns);
    pthread_mutex_init(&ns->mu, NULL);
}

rill__node_state *rill__node_states_get(rill__node_states *ns, int id)
{
    if (id < 0 || id >= RILL__STATE_PAGE * RILL__STATE_PAGES) return NULL;
    pthread_mutex_lock(&ns->mu);
    rill__node_state **page = &ns->pages[id / RILL__STATE_PAGE];
    if (!*page) {
        *page = rill__calloc(RILL__STATE_PAGE, sizeof **page);
        RILL_CHECK_ALLOC(*page);
        for (int i = 0; i < RILL__STATE_PAGE; i++) pthread_mutex_init(&(*page)[i].mu, NULL);
    }
    rill__node_state *e = &(*page)[id % RILL__STATE_PAGE];
    pthread_mutex_unlock(&ns->mu);
    return e;
}

void rill__node_states_free(rill__node_states *ns)
{
    for (int p = 0; p < RILL__STATE_PAGES; p++) {
        if (!ns->pages[p]) continue;
        for (int i = 0; i < RILL__STATE_PAGE; i++) {
            if (ns->pages[p][i].state && ns->pages[p][i].free_fn)
                ns->pages[p][i].free_fn(ns->pages[p][i].state);
            pthread_mutex_destroy(&ns->pages[p][i].mu);
        }
        rill__free(ns->pages[p]);
        ns->pages[p] = NULL;
    }
    pthread_mutex_destroy(&ns->mu);
}
