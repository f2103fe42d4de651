/* graph_codec.c - see graph_codec.h. */
#include "graph_codec.h"

#include "../core/pb.h"
#include "../device/device.h"

#include <string.h>

#define MAX_NODES (1 << 20)
#define MAX_STR (1 << 16)
#define MAX_EDGES 4096
#define MAX_ATTRS 64
#define MAX_TENSOR_BYTES ((uint64_t)1 << 32)

/* Attribute names are static strings in rill__attr: decoding maps each name onto the one the
 * op definitions use, so a graph from the wire cannot introduce names no kernel reads. */
static const char *const known_attrs[] = {
    "DstT",        "T",         "a",           "axes",         "axis",       "b",
    "dtype",       "host_memory", "keep_dims", "mean",         "out_type",   "recv_device",
    "seed",        "send_device", "shape",     "tensor_name",  "transpose_a", "transpose_b",
    "use_nesterov", "value",
    /* queues, accumulators, savers, summaries */
    "shared_name", "timeout_ms", "capacity", "names", "shard", "num_shards", "dtypes", "tag",
    "num_outputs", "shapes",
    /* tensors pushed between tasks */
    "send_job", "send_task", "recv_job", "recv_task",
    /* updates, slices, convolutions */
    "update_slots", "begin", "end", "strides", "begin_mask", "end_mask", "ellipsis_mask",
    "new_axis_mask", "shrink_axis_mask", "padding", "ksize", "dilations", "data_format",
    "activation",
};

/* The name's static string: one the op definitions use, else (a client's graph carries every
 * attribute its front end set, rill_op_builder) one interned for the process, if it looks like
 * an attribute name (rill__attr_intern bounds how many there may be). */
static const char *intern(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof known_attrs / sizeof known_attrs[0]; i++)
        if (strlen(known_attrs[i]) == len && memcmp(known_attrs[i], name, len) == 0)
            return known_attrs[i];
    if (len == 0 || len > 64) return NULL;
    char buf[65];
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return NULL;
        buf[i] = c;
    }
    buf[len] = 0;
    return rill__attr_intern(buf, true);
}

/* --- writer --- */

typedef rill__pbw wbuf; /* the core's growable byte buffer */

static void put(wbuf *w, const void *d, size_t n)
{
    rill__pbw_raw(w, d, n);
}

/* Integers are stored little-endian; the hosts we run on are little-endian x86-64 and arm64,
 * so a memcpy is the encoding (checked at compile time). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "graph codec assumes little-endian");

static void put_u32(wbuf *w, uint32_t v) { put(w, &v, 4); }
static void put_i64(wbuf *w, int64_t v) { put(w, &v, 8); }
static void put_u8(wbuf *w, uint8_t v) { put(w, &v, 1); }

static void put_str(wbuf *w, const char *s)
{
    size_t n = strlen(s);
    put_u32(w, (uint32_t)n);
    put(w, s, n);
}

static bool put_tensor(wbuf *w, const rill_tensor *t, rill_status *s)
{
    put_u32(w, (uint32_t)t->dtype);
    put_u32(w, (uint32_t)t->shape.rank);
    for (int i = 0; i < t->shape.rank; i++) put_i64(w, t->shape.dims[i]);
    if (t->buf->dev) {
        rill_status_set(s, RILL_INTERNAL, "graph encode: a constant lives in device memory");
        return false;
    }
    if (t->dtype == RILL_STRING) {
        for (int64_t i = 0; i < t->numel; i++) {
            size_t len;
            const char *p = rill_tensor_get_string(t, i, &len);
            put_i64(w, (int64_t)len);
            put(w, p, len);
        }
    } else {
        put_i64(w, (int64_t)rill_tensor_nbytes(t));
        put(w, t->buf->data, rill_tensor_nbytes(t));
    }
    return true;
}

bool rill__graph_encode(const rill_graph *g, uint8_t **out, size_t *len, rill_status *s)
{
    wbuf w = {0};
    put(&w, "RGPH", 4);
    put_u32(&w, 2);
    int nn = rill_graph_num_nodes(g);
    put_u32(&w, (uint32_t)nn);
    for (int i = 0; i < nn; i++) {
        const rill_node *n = rill_graph_node(g, i);
        put_str(&w, n->name);
        put_str(&w, n->op->name);
        put_str(&w, n->assigned ? n->assigned->name : n->requested_device);
        put_u32(&w, (uint32_t)n->ninputs);
        for (int k = 0; k < n->ninputs; k++) {
            put_u32(&w, (uint32_t)n->inputs[k].node->id);
            put_u32(&w, (uint32_t)n->inputs[k].index);
        }
        put_u32(&w, (uint32_t)n->ncontrol);
        for (int k = 0; k < n->ncontrol; k++) put_u32(&w, (uint32_t)n->control_inputs[k]->id);
        put_u32(&w, (uint32_t)n->nattrs);
        for (int k = 0; k < n->nattrs; k++) {
            const rill__attr *a = &n->attrs[k];
            put_str(&w, a->name);
            put_u8(&w, (uint8_t)a->kind);
            switch (a->kind) {
            case RILL__ATTR_INT: put_i64(&w, a->v.i); break;
            case RILL__ATTR_FLOAT: put(&w, &a->v.f, 8); break;
            case RILL__ATTR_BOOL: put_u8(&w, a->v.b); break;
            case RILL__ATTR_TYPE: put_u32(&w, (uint32_t)a->v.type); break;
            case RILL__ATTR_SHAPE:
                put_u32(&w, (uint32_t)(int32_t)a->v.shape.rank);
                for (int d = 0; d < a->v.shape.rank; d++) put_i64(&w, a->v.shape.dims[d]);
                break;
            case RILL__ATTR_STRING: put_str(&w, a->v.s); break;
            case RILL__ATTR_INTS:
                put_u32(&w, (uint32_t)a->v.ints.n);
                for (int d = 0; d < a->v.ints.n; d++) put_i64(&w, a->v.ints.v[d]);
                break;
            case RILL__ATTR_TENSOR:
                if (!put_tensor(&w, a->v.tensor, s)) {
                    rill__free(w.p);
                    return false;
                }
                break;
            }
        }
        put_i64(&w, n->seed);
        put_i64(&w, n->seed2);
        put_u32(&w, n->colocate_with ? (uint32_t)n->colocate_with->id + 1 : 0);
        put_u32(&w, n->initializer ? (uint32_t)n->initializer->id + 1 : 0);
    }
    *out = w.p;
    *len = w.n;
    return true;
}

/* --- reader --- */

typedef struct rbuf {
    const uint8_t *p;
    size_t n, off;
    bool bad;
    char why[128];
} rbuf;

static bool take(rbuf *r, void *d, size_t n, const char *what)
{
    if (r->bad) return false;
    if (n > r->n - r->off) {
        r->bad = true;
        snprintf(r->why, sizeof r->why, "truncated at offset %zu reading %s", r->off, what);
        return false;
    }
    memcpy(d, r->p + r->off, n);
    r->off += n;
    return true;
}

static uint32_t get_u32(rbuf *r, const char *what)
{
    uint32_t v = 0;
    take(r, &v, 4, what);
    return v;
}

static int64_t get_i64(rbuf *r, const char *what)
{
    int64_t v = 0;
    take(r, &v, 8, what);
    return v;
}

static uint8_t get_u8(rbuf *r, const char *what)
{
    uint8_t v = 0;
    take(r, &v, 1, what);
    return v;
}

static void fail(rbuf *r, const char *fmt, const char *arg)
{
    if (r->bad) return;
    r->bad = true;
    snprintf(r->why, sizeof r->why, fmt, arg);
}

/* A string borrowed from the buffer (not NUL-terminated): pointer and length. */
static const char *get_str(rbuf *r, size_t *len, const char *what)
{
    uint32_t n = get_u32(r, what);
    if (r->bad) return NULL;
    if (n > MAX_STR || n > r->n - r->off) {
        fail(r, "string too long or truncated (%s)", what);
        return NULL;
    }
    const char *p = (const char *)r->p + r->off;
    r->off += n;
    *len = n;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] == 0) {
            fail(r, "NUL inside a string (%s)", what);
            return NULL;
        }
    return p;
}

static char *dup_str(rbuf *r, const char *what)
{
    size_t len;
    const char *p = get_str(r, &len, what);
    return p ? rill__strndup(p, len) : NULL;
}

static rill_tensor *get_tensor(rbuf *r)
{
    rill_dtype t = (rill_dtype)get_u32(r, "tensor dtype");
    uint32_t rank = get_u32(r, "tensor rank");
    if (r->bad) return NULL;
    if (!rill_dtype_is_valid(t) || rank > RILL_MAX_DIMS) {
        fail(r, "bad tensor dtype or rank%s", "");
        return NULL;
    }
    int64_t dims[RILL_MAX_DIMS];
    uint64_t numel = 1;
    for (uint32_t i = 0; i < rank; i++) {
        dims[i] = get_i64(r, "tensor dim");
        if (r->bad) return NULL;
        if (dims[i] < 0 || (dims[i] && numel > MAX_TENSOR_BYTES / (uint64_t)dims[i])) {
            fail(r, "bad tensor dimension%s", "");
            return NULL;
        }
        numel *= (uint64_t)dims[i];
    }
    if (t == RILL_STRING) {
        if (numel > r->n - r->off) { /* every element takes at least 8 bytes */
            fail(r, "string tensor larger than its bytes%s", "");
            return NULL;
        }
        rill_tensor *x = rill_tensor_new(t, dims, (int)rank);
        for (uint64_t i = 0; i < numel; i++) {
            int64_t len = get_i64(r, "string element length");
            if (r->bad || len < 0 || (uint64_t)len > r->n - r->off) {
                fail(r, "bad string element%s", "");
                rill_tensor_free(x);
                return NULL;
            }
            rill_tensor_set_string(x, (int64_t)i, (const char *)r->p + r->off, (size_t)len);
            r->off += (size_t)len;
        }
        return x;
    }
    int64_t nbytes = get_i64(r, "tensor byte count");
    if (r->bad) return NULL;
    if (nbytes < 0 || (uint64_t)nbytes != numel * rill_dtype_size(t) ||
        (uint64_t)nbytes > r->n - r->off) {
        fail(r, "tensor bytes do not match its shape%s", "");
        return NULL;
    }
    rill_tensor *x = rill_tensor_from_data(t, dims, (int)rank, r->p + r->off);
    r->off += (size_t)nbytes;
    return x;
}

static void free_attrs(rill__attr *a, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].kind == RILL__ATTR_TENSOR) rill_tensor_free(a[i].v.tensor);
        if (a[i].kind == RILL__ATTR_STRING) rill__free((void *)a[i].v.s);
        if (a[i].kind == RILL__ATTR_INTS) rill__free((void *)a[i].v.ints.v);
    }
}

static bool get_attr(rbuf *r, rill__attr *a)
{
    size_t len;
    const char *name = get_str(r, &len, "attribute name");
    if (!name) return false;
    a->name = intern(name, len);
    if (!a->name) {
        fail(r, "unknown attribute%s", "");
        return false;
    }
    a->kind = (rill__attr_kind)get_u8(r, "attribute kind");
    /* An attribute some op reads without checking its kind must have the kind it expects. */
    if (!r->bad && !rill__attr_kind_ok(a->name, a->kind, NULL)) {
        fail(r, "attribute '%s' of the wrong kind", a->name);
        return false;
    }
    switch (a->kind) {
    case RILL__ATTR_INT: a->v.i = get_i64(r, "int"); break;
    case RILL__ATTR_FLOAT: take(r, &a->v.f, 8, "float"); break;
    case RILL__ATTR_BOOL: a->v.b = get_u8(r, "bool") != 0; break;
    case RILL__ATTR_TYPE: a->v.type = (rill_dtype)get_u32(r, "type"); break;
    case RILL__ATTR_SHAPE: {
        int32_t rank = (int32_t)get_u32(r, "shape rank");
        if (rank < -1 || rank > RILL_MAX_DIMS) {
            fail(r, "bad shape rank%s", "");
            return false;
        }
        a->v.shape.rank = rank;
        for (int d = 0; d < rank; d++) {
            a->v.shape.dims[d] = get_i64(r, "shape dim");
            if (a->v.shape.dims[d] < -1) fail(r, "bad shape dim%s", "");
        }
        break;
    }
    case RILL__ATTR_STRING: a->v.s = dup_str(r, "string attribute"); break;
    case RILL__ATTR_INTS: {
        uint32_t n = get_u32(r, "int list length");
        if (n > MAX_EDGES || (size_t)n * 8 > r->n - r->off) {
            fail(r, "int list too long%s", "");
            return false;
        }
        int64_t *v = rill__malloc(((size_t)n + 1) * sizeof *v);
        RILL_CHECK_ALLOC(v);
        for (uint32_t i = 0; i < n; i++) v[i] = get_i64(r, "int list");
        a->v.ints.n = (int)n;
        a->v.ints.v = v;
        break;
    }
    case RILL__ATTR_TENSOR: a->v.tensor = get_tensor(r); break;
    default: fail(r, "unknown attribute kind%s", ""); return false;
    }
    if (r->bad) {
        /* Leave nothing half-owned behind. */
        if (a->kind == RILL__ATTR_STRING) rill__free((void *)a->v.s), a->v.s = NULL;
        if (a->kind == RILL__ATTR_TENSOR) rill_tensor_free(a->v.tensor), a->v.tensor = NULL;
        if (a->kind == RILL__ATTR_INTS) rill__free((void *)a->v.ints.v), a->v.ints.v = NULL;
        return false;
    }
    return true;
}

rill_graph *rill__graph_decode(const uint8_t *buf, size_t len, char ***devices, rill_status *s)
{
    rbuf r = {.p = buf, .n = len};
    char magic[4] = {0};
    take(&r, magic, 4, "magic");
    uint32_t version = get_u32(&r, "version");
    uint32_t nn = get_u32(&r, "node count");
    if (!r.bad && memcmp(magic, "RGPH", 4) != 0) fail(&r, "bad magic%s", "");
    if (!r.bad && version != 2) fail(&r, "unsupported version%s", "");
    if (!r.bad && (nn > MAX_NODES || nn > len / 8)) fail(&r, "too many nodes%s", "");
    if (r.bad) {
        rill_status_set(s, RILL_DATA_LOSS, "graph from the wire: %s", r.why);
        return NULL;
    }
    rill_graph *g = rill_graph_new();
    char **devs = rill__calloc((size_t)nn + 1, sizeof *devs);
    RILL_CHECK_ALLOC(devs);
    uint32_t *ctrl_from = NULL, *ctrl_to = NULL;
    /* Each node's colocation group and (a variable's) initializer: 1 + a node's index, or 0;
     * either may name a later node, so they are linked once every node is built. */
    uint32_t *links = rill__calloc(2 * (size_t)nn + 1, sizeof *links);
    RILL_CHECK_ALLOC(links);
    size_t nctrl = 0, ctrl_cap = 0;
    for (uint32_t i = 0; i < nn && !r.bad; i++) {
        char *name = dup_str(&r, "node name");
        char *op = dup_str(&r, "op");
        devs[i] = dup_str(&r, "device");
        uint32_t nin = get_u32(&r, "input count");
        rill_output ins[64];
        if (!r.bad && nin > 64) fail(&r, "too many inputs%s", "");
        for (uint32_t k = 0; k < nin && !r.bad; k++) {
            uint32_t src = get_u32(&r, "input node"), idx = get_u32(&r, "input index");
            if (r.bad) break;
            rill_node *sn = src < i ? rill_graph_node(g, (int)src) : NULL;
            if (!sn || (int)idx >= sn->noutputs) {
                fail(&r, "input refers to a missing node or output%s", "");
                break;
            }
            ins[k] = (rill_output){sn, (int)idx};
        }
        uint32_t nc = get_u32(&r, "control count");
        if (!r.bad && (nc > MAX_EDGES || (size_t)nc * 4 > r.n - r.off)) fail(&r, "too many control inputs%s", "");
        for (uint32_t k = 0; k < nc && !r.bad; k++) {
            uint32_t src = get_u32(&r, "control input");
            if (src >= nn) fail(&r, "control input out of range%s", "");
            if (nctrl == ctrl_cap) {
                ctrl_cap = ctrl_cap ? ctrl_cap * 2 : 16;
                ctrl_from = rill__realloc(ctrl_from, ctrl_cap * sizeof *ctrl_from);
                ctrl_to = rill__realloc(ctrl_to, ctrl_cap * sizeof *ctrl_to);
                RILL_CHECK_ALLOC(ctrl_from);
                RILL_CHECK_ALLOC(ctrl_to);
            }
            ctrl_from[nctrl] = src;
            ctrl_to[nctrl++] = i;
        }
        uint32_t na = get_u32(&r, "attribute count");
        rill__attr attrs[MAX_ATTRS];
        int got = 0;
        if (!r.bad && na > MAX_ATTRS) fail(&r, "too many attributes%s", "");
        for (uint32_t k = 0; k < na && !r.bad; k++) {
            memset(&attrs[got], 0, sizeof attrs[got]);
            if (get_attr(&r, &attrs[got])) got++;
        }
        int64_t seed = get_i64(&r, "seed"), seed2 = get_i64(&r, "seed2");
        links[2 * i] = get_u32(&r, "colocation");
        links[2 * i + 1] = get_u32(&r, "initializer");
        if (!r.bad && (links[2 * i] > nn || links[2 * i + 1] > nn))
            fail(&r, "colocation or initializer out of range%s", "");
        rill_node *n = NULL;
        if (!r.bad) {
            char *exact = rill__asprintf("%s/", name);
            n = rill__node_create(g, op, exact, ins, (int)nin, attrs, got);
            rill__free(exact);
            if (n) {
                n->seed = seed;
                n->seed2 = seed2;
                if ((uint32_t)n->id != i) fail(&r, "node order%s", "");
            }
        }
        free_attrs(attrs, got);
        rill__free(name);
        rill__free(op);
        if (!r.bad && !n) break; /* a build error: the graph's status says which */
    }
    for (size_t k = 0; !r.bad && rill_graph_ok(g) && k < nctrl; k++)
        rill_node_add_control_input(rill_graph_node(g, (int)ctrl_to[k]),
                                    rill_graph_node(g, (int)ctrl_from[k]));
    rill__free(ctrl_from);
    rill__free(ctrl_to);
    for (uint32_t i = 0; !r.bad && rill_graph_ok(g) && i < nn &&
                         (int)i < rill_graph_num_nodes(g); i++) {
        rill_node *n = rill_graph_node(g, (int)i);
        if (links[2 * i]) n->colocate_with = rill_graph_node(g, (int)links[2 * i] - 1);
        if (links[2 * i + 1]) n->initializer = rill_graph_node(g, (int)links[2 * i + 1] - 1);
    }
    rill__free(links);
    if (!r.bad && rill_graph_ok(g) && r.off != r.n) fail(&r, "trailing bytes%s", "");
    bool ok = !r.bad && rill_graph_ok(g) && rill_graph_num_nodes(g) == (int)nn;
    if (!ok) {
        if (r.bad)
            rill_status_set(s, RILL_DATA_LOSS, "graph from the wire: %s", r.why);
        else
            rill_status_set(s, RILL_INVALID_ARGUMENT, "graph from the wire does not build: %s",
                            rill_status_message(rill_graph_status(g)));
        for (uint32_t i = 0; i < nn; i++) rill__free(devs[i]);
        rill__free(devs);
        rill_graph_free(g);
        return NULL;
    }
    if (devices) {
        *devices = devs;
    } else {
        for (uint32_t i = 0; i < nn; i++) rill__free(devs[i]);
        rill__free(devs);
    }
    rill_status_clear(s);
    return g;
}
