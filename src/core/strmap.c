/* strmap.c - a string-keyed open-addressing hash map (FNV-1a, linear probing, no deletion:
 * graphs only grow). */
#include "core.h"

#include <string.h>

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

void *rill__strmap_get(const rill__strmap *m, const char *key)
{
    if (!m->cap) return NULL;
    for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return NULL;
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    }
}

static void grow(rill__strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    char **keys = rill__calloc(cap, sizeof *keys);
    void **vals = rill__calloc(cap, sizeof *vals);
    RILL_CHECK_ALLOC(keys);
    RILL_CHECK_ALLOC(vals);
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->keys[j]) continue;
        size_t i = hash(m->keys[j]) & (cap - 1);
        while (keys[i]) i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        vals[i] = m->vals[j];
    }
    rill__free(m->keys);
    rill__free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
}

void rill__strmap_put(rill__strmap *m, const char *key, void *val)
{
    if ((m->n + 1) * 2 > m->cap) grow(m);
    size_t i = hash(key) & (m->cap - 1);
    for (; m->keys[i]; i = (i + 1) & (m->cap - 1)) {
        if (strcmp(m->keys[i], key) == 0) {
            m->vals[i] = val;
            return;
        }
    }
    m->keys[i] = rill__strdup(key);
    m->vals[i] = val;
    m->n++;
}

void rill__strmap_free(rill__strmap *m)
{
    for (size_t i = 0; i < m->cap; i++) rill__free(m->keys[i]);
    rill__free(m->keys);
    rill__free(m->vals);
    memset(m, 0, sizeof *m);
}
