/* _rill.c - the CPython extension over rill's public C API: graphs built op by op
 * (rill_op_builder), sessions run with numpy arrays in and out, in-process servers.
 *
 * The module is deliberately small: rill.compat.v1 (Python) gives TF's API and its semantics
 * (scopes, devices, fetch structures); this file only crosses the boundary, and keeps the
 * per-step path in C (Session.make_callable: the feeds, fetches and targets resolved once, then
 * each call converts the feeds, releases the GIL for the step and wraps the results as numpy
 * arrays over rill's own buffers, without a copy).
 *
 * Objects:
 *   Graph        a rill_graph; .op(type, name, inputs, attrs, device, control_inputs) makes a
 *                node (attrs: {name: (kind, value)}, kind one of int float bool type string
 *                ints shape tensor); build errors raise at once and leave the graph usable.
 *   Op           one node of a Graph (kept alive by it): name, type, device, outputs' dtypes and
 *                shapes, inputs; equal and hashable by node.
 *   Session      a rill_session over a Graph (options: target, log_device_placement,
 *                allow_soft_placement, intra/inter-op threads); .make_callable(fetches, feeds,
 *                targets) -> Callable; calling it with the feed arrays runs one step.
 *   Server       an in-process rill server (create_local_server): .target, .join(), .stop().
 * Errors: register_errors({code: class}) names the Python class raised for each rill_code
 * (class(message, code)); unregistered codes raise RuntimeError. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <rill/rill.h>

#include <errno.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static PyObject *error_classes; /* dict: int code -> exception class */

/* Raises the registered class for code with msg. Returns NULL for the caller to return. */
static PyObject *raise_code(rill_code code, const char *msg)
{
    PyObject *key = PyLong_FromLong(code);
    PyObject *cls = error_classes && key ? PyDict_GetItem(error_classes, key) : NULL;
    Py_XDECREF(key);
    if (!cls) {
        PyErr_Format(PyExc_RuntimeError, "%s", msg);
        return NULL;
    }
    PyObject *e = PyObject_CallFunction(cls, "si", msg, (int)code);
    if (e) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

static PyObject *raise_status(const rill_status *s)
{
    return raise_code(rill_status_code(s), rill_status_message(s));
}

/* What a call returning only a code gives Python: None, or the error raised. Frees s. */
static PyObject *none_or_raise(rill_code code, rill_status *s)
{
    PyObject *res = NULL;
    if (code == RILL_OK) {
        Py_INCREF(Py_None);
        res = Py_None;
    } else {
        raise_status(s);
    }
    rill_status_free(s);
    return res;
}

static PyObject *register_errors(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyDict_Check(arg)) return PyErr_Format(PyExc_TypeError, "register_errors takes a dict");
    Py_XDECREF(error_classes);
    Py_INCREF(arg);
    error_classes = arg;
    Py_RETURN_NONE;
}


/* --- Ctrl-C during a step ---
 * A step runs with the GIL released, so Python's SIGINT handler only sets its flag; a step
 * blocked in a queue or an accumulator would never see it. The module chains a handler of its
 * own in front of Python's: it writes a byte to a pipe (async-signal-safe) and calls Python's.
 * A thread waiting on the pipe cancels every step running in any session (rill_session_cancel,
 * from any thread); the step returns CANCELLED, and back under the GIL the pending signal
 * raises KeyboardInterrupt. A handler the program installs later with signal.signal replaces
 * this one (and Python's): then Ctrl-C waits for the step, as in TF. */
#define RUNNING_MAX 64
static pthread_mutex_t running_mu = PTHREAD_MUTEX_INITIALIZER;
static rill_session *running[RUNNING_MAX];
static int interrupt_pipe[2] = {-1, -1};
static struct sigaction python_sigint;

static void on_sigint(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    if (interrupt_pipe[1] >= 0) {
        char c = 1;
        ssize_t r = write(interrupt_pipe[1], &c, 1);
        (void)r;
    }
    errno = saved;
    if (python_sigint.sa_flags & SA_SIGINFO) {
        if (python_sigint.sa_sigaction) python_sigint.sa_sigaction(sig, info, uc);
    } else if (python_sigint.sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig);
    } else if (python_sigint.sa_handler != SIG_IGN && python_sigint.sa_handler) {
        python_sigint.sa_handler(sig);
    }
}

static void *interrupt_thread(void *arg)
{
    (void)arg;
    char buf[64];
    for (;;) {
        ssize_t n = read(interrupt_pipe[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return NULL;
        pthread_mutex_lock(&running_mu);
        for (int i = 0; i < RUNNING_MAX; i++)
            if (running[i]) rill_session_cancel(running[i]);
        pthread_mutex_unlock(&running_mu);
    }
}

/* Installs the chained handler once (module import, main thread). Failures leave Ctrl-C as
 * Python has it. */
static void interrupts_init(void)
{
    if (pipe(interrupt_pipe) != 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigint;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* the thread blocks no signal of the program's: it only reads the pipe */
    if (pthread_create(&t, &attr, interrupt_thread, NULL) == 0)
        sigaction(SIGINT, &sa, &python_sigint);
    pthread_attr_destroy(&attr);
}

/* A slot in `running` for sess during a step (-1: none free; the step is then not
 * interruptible, and runs anyway). */
static int running_add(rill_session *sess)
{
    int slot = -1;
    pthread_mutex_lock(&running_mu);
    for (int i = 0; i < RUNNING_MAX && slot < 0; i++)
        if (!running[i]) running[i] = sess, slot = i;
    pthread_mutex_unlock(&running_mu);
    return slot;
}

static void running_remove(int slot)
{
    if (slot < 0) return;
    pthread_mutex_lock(&running_mu);
    running[slot] = NULL;
    pthread_mutex_unlock(&running_mu);
}

/* --- dtypes --- */

static int npy_of(rill_dtype t)
{
    switch (t) {
    case RILL_FLOAT: return NPY_FLOAT32;
    case RILL_DOUBLE: return NPY_FLOAT64;
    case RILL_INT32: return NPY_INT32;
    case RILL_INT64: return NPY_INT64;
    case RILL_BOOL: return NPY_BOOL;
    case RILL_HALF: return NPY_FLOAT16;
    case RILL_STRING: return NPY_OBJECT;
    case RILL_INT8: return NPY_INT8;
    case RILL_INT16: return NPY_INT16;
    case RILL_UINT8: return NPY_UINT8;
    case RILL_UINT16: return NPY_UINT16;
    default: return -1;
    }
}

static rill_dtype rill_of_npy(int n)
{
    switch (n) {
    case NPY_FLOAT32: return RILL_FLOAT;
    case NPY_FLOAT64: return RILL_DOUBLE;
    case NPY_INT32: return RILL_INT32;
    case NPY_INT64: return RILL_INT64;
    case NPY_BOOL: return RILL_BOOL;
    case NPY_FLOAT16: return RILL_HALF;
    case NPY_INT8: return RILL_INT8;
    case NPY_INT16: return RILL_INT16;
    case NPY_UINT8: return RILL_UINT8;
    case NPY_UINT16: return RILL_UINT16;
    default: return RILL_DT_INVALID;
    }
}

/* --- tensors <-> numpy --- */

static void tensor_capsule_free(PyObject *cap)
{
    rill_tensor_free(PyCapsule_GetPointer(cap, "rill.tensor"));
}

/* A numpy array over t's buffer (t's reference moves to the array); strings become an object
 * array of bytes (a copy). */
static PyObject *array_of(rill_tensor *t)
{
    const rill_shape *sh = rill_tensor_shape(t);
    npy_intp dims[RILL_MAX_DIMS];
    for (int i = 0; i < sh->rank; i++) dims[i] = (npy_intp)sh->dims[i];
    rill_dtype dt = rill_tensor_dtype(t);
    if (dt == RILL_STRING) {
        PyObject *a = PyArray_SimpleNew(sh->rank, dims, NPY_OBJECT);
        if (!a) {
            rill_tensor_free(t);
            return NULL;
        }
        PyObject **p = PyArray_DATA((PyArrayObject *)a);
        for (int64_t i = 0; i < rill_tensor_num_elements(t); i++) {
            size_t len;
            const char *s = rill_tensor_get_string(t, i, &len);
            PyObject *b = PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
            if (!b) {
                Py_DECREF(a);
                rill_tensor_free(t);
                return NULL;
            }
            Py_XDECREF(p[i]);
            p[i] = b;
        }
        rill_tensor_free(t);
        return a;
    }
    int nt = npy_of(dt);
    if (nt < 0) {
        rill_tensor_free(t);
        if (dt == RILL_BFLOAT16)
            return PyErr_Format(PyExc_TypeError,
                                "cannot fetch a bfloat16 tensor: numpy has no bfloat16 dtype "
                                "(tf.cast it to float32 in the graph and fetch that)");
        return PyErr_Format(PyExc_TypeError, "rill dtype %s has no numpy equivalent",
                            rill_dtype_name(dt));
    }
    /* Over rill's buffer when the fetch owns it alone (as TF moves a tensor it owns alone); a
     * variable's value, a constant or a borrowed feed is copied first, so that writing into the
     * array changes nothing in the session. */
    if (!rill_tensor_is_exclusive(t)) {
        rill_tensor *c = rill_tensor_copy(t);
        rill_tensor_free(t);
        if (!c) return PyErr_NoMemory();
        t = c;
        sh = rill_tensor_shape(t); /* the old one went with the tensor it belonged to */
    }
    PyObject *a = PyArray_SimpleNewFromData(sh->rank, dims, nt, rill_tensor_data(t));
    if (!a) {
        rill_tensor_free(t);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(t, "rill.tensor", tensor_capsule_free);
    if (!cap) {
        rill_tensor_free(t);
        Py_DECREF(a);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* A borrowed feed's release: drops the array's reference (from whichever thread drops the
 * tensor's last reference; usually this one, with the GIL held). */
static void release_array(void *obj)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)obj);
    PyGILState_Release(g);
}

/* Arrays of at least this many bytes are fed without a copy; smaller ones are copied (cheaper
 * than the borrowed tensor's release through the GIL). */
#define BORROW_MIN_BYTES 1024

/* The per-step feeds without numpy's generic conversion: a contiguous array of the wanted dtype
 * (borrowed, no copy, from BORROW_MIN_BYTES on; else one copy), or of its wider or narrower
 * float twin (one converting loop), or a Python float or int. NULL (no error set) when obj is
 * none of these. */
static rill_tensor *tensor_fast(PyObject *obj, rill_dtype want)
{
    if (want == RILL_FLOAT || want == RILL_DOUBLE) {
        if (PyFloat_CheckExact(obj) || PyLong_CheckExact(obj)) {
            double v = PyFloat_AsDouble(obj);
            if (v == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return NULL;
            }
            return want == RILL_FLOAT ? rill_tensor_scalar_float((float)v)
                                      : rill_tensor_scalar_double(v);
        }
    }
    if (!PyArray_CheckExact(obj)) return NULL;
    PyArrayObject *a = (PyArrayObject *)obj;
    if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || PyArray_NDIM(a) > RILL_MAX_DIMS)
        return NULL;
    rill_dtype have = rill_of_npy(PyArray_TYPE(a));
    if (have == RILL_DT_INVALID || have == RILL_HALF || have == RILL_BOOL) return NULL;
    int64_t dims[RILL_MAX_DIMS];
    int rank = PyArray_NDIM(a);
    for (int i = 0; i < rank; i++) dims[i] = (int64_t)PyArray_DIM(a, i);
    if (have == want) {
        if (PyArray_NBYTES(a) >= BORROW_MIN_BYTES) {
            Py_INCREF(obj);
            rill_tensor *t =
                rill_tensor_new_borrowed(want, dims, rank, PyArray_DATA(a), release_array, obj);
            if (t) return t;
            Py_DECREF(obj);
        }
        return rill_tensor_from_data(want, dims, rank, PyArray_DATA(a));
    }
    npy_intp n = PyArray_SIZE(a);
    rill_tensor *t = NULL;
    if (want == RILL_FLOAT && have == RILL_DOUBLE) {
        t = rill_tensor_new(want, dims, rank);
        const double *src = PyArray_DATA(a);
        float *dst = rill_tensor_data(t);
        for (npy_intp i = 0; i < n; i++) dst[i] = (float)src[i];
    } else if (want == RILL_DOUBLE && have == RILL_FLOAT) {
        t = rill_tensor_new(want, dims, rank);
        const float *src = PyArray_DATA(a);
        double *dst = rill_tensor_data(t);
        for (npy_intp i = 0; i < n; i++) dst[i] = src[i];
    }
    return t;
}

/* A new tensor holding obj converted to dtype want (RILL_DT_INVALID: obj's own dtype). */
static rill_tensor *tensor_of(PyObject *obj, rill_dtype want)
{
    if (want != RILL_DT_INVALID && want != RILL_STRING) {
        rill_tensor *t = tensor_fast(obj, want);
        if (t) return t;
    }
    if (want == RILL_STRING ||
        (want == RILL_DT_INVALID && (PyUnicode_Check(obj) || PyBytes_Check(obj)))) {
        PyObject *a = PyArray_FROM_OTF(obj, NPY_OBJECT, NPY_ARRAY_C_CONTIGUOUS);
        if (!a) return NULL;
        PyArrayObject *arr = (PyArrayObject *)a;
        int rank = PyArray_NDIM(arr);
        int64_t dims[RILL_MAX_DIMS];
        if (rank > RILL_MAX_DIMS) {
            Py_DECREF(a);
            PyErr_Format(PyExc_ValueError, "at most %d dimensions", RILL_MAX_DIMS);
            return NULL;
        }
        for (int i = 0; i < rank; i++) dims[i] = (int64_t)PyArray_DIM(arr, i);
        rill_tensor *t = rill_tensor_new(RILL_STRING, dims, rank);
        PyObject **p = PyArray_DATA(arr);
        for (int64_t i = 0; i < rill_tensor_num_elements(t); i++) {
            const char *s;
            Py_ssize_t len;
            PyObject *enc = NULL;
            if (PyBytes_Check(p[i])) {
                s = PyBytes_AS_STRING(p[i]), len = PyBytes_GET_SIZE(p[i]);
            } else if (PyUnicode_Check(p[i])) {
                enc = PyUnicode_AsUTF8String(p[i]);
                if (!enc) break;
                s = PyBytes_AS_STRING(enc), len = PyBytes_GET_SIZE(enc);
            } else {
                PyErr_SetString(PyExc_TypeError, "a string tensor takes str or bytes");
                break;
            }
            rill_tensor_set_string(t, i, s, (size_t)len);
            Py_XDECREF(enc);
        }
        Py_DECREF(a);
        if (PyErr_Occurred()) {
            rill_tensor_free(t);
            return NULL;
        }
        return t;
    }
    int nt = want == RILL_DT_INVALID ? NPY_NOTYPE : npy_of(want);
    if (want == RILL_BFLOAT16) {
        PyErr_Format(PyExc_TypeError,
                     "cannot feed a bfloat16 tensor: numpy has no bfloat16 dtype (feed float32 "
                     "and tf.cast it to bfloat16 in the graph)");
        return NULL;
    }
    if (want != RILL_DT_INVALID && nt < 0) {
        PyErr_Format(PyExc_TypeError, "cannot convert to %s", rill_dtype_name(want));
        return NULL;
    }
    PyArray_Descr *descr = nt == NPY_NOTYPE ? NULL : PyArray_DescrFromType(nt);
    PyObject *a = PyArray_FromAny(obj, descr, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                        NPY_ARRAY_FORCECAST, NULL);
    if (!a) return NULL;
    PyArrayObject *arr = (PyArrayObject *)a;
    rill_dtype dt = rill_of_npy(PyArray_TYPE(arr));
    if (dt == RILL_DT_INVALID) { /* Python ints come as int64, floats as float64: keep them */
        Py_DECREF(a);
        PyErr_Format(PyExc_TypeError, "unsupported numpy dtype for a rill tensor");
        return NULL;
    }
    int rank = PyArray_NDIM(arr);
    if (rank > RILL_MAX_DIMS) {
        Py_DECREF(a);
        PyErr_Format(PyExc_ValueError, "at most %d dimensions", RILL_MAX_DIMS);
        return NULL;
    }
    int64_t dims[RILL_MAX_DIMS];
    for (int i = 0; i < rank; i++) dims[i] = (int64_t)PyArray_DIM(arr, i);
    rill_tensor *t = rill_tensor_from_data(dt, dims, rank, PyArray_DATA(arr));
    Py_DECREF(a);
    return t;
}

static PyObject *shape_tuple(rill_shape s)
{
    if (s.rank < 0) Py_RETURN_NONE;
    PyObject *t = PyTuple_New(s.rank);
    if (!t) return NULL;
    for (int i = 0; i < s.rank; i++) {
        PyObject *d;
        if (s.dims[i] < 0) {
            Py_INCREF(Py_None);
            d = Py_None;
        } else {
            d = PyLong_FromLongLong(s.dims[i]);
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* None (unknown rank) or a sequence of ints / None (unknown dims). */
static int shape_of(PyObject *o, rill_shape *s)
{
    if (o == Py_None) {
        *s = rill_shape_unknown();
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "a shape is None or a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > RILL_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most %d dimensions", RILL_MAX_DIMS);
        return -1;
    }
    s->rank = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        s->dims[i] = d == Py_None ? -1 : PyLong_AsLongLong(d);
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* --- Graph and Op --- */

typedef struct {
    PyObject_HEAD rill_graph *g;
} GraphObject;

typedef struct {
    PyObject_HEAD GraphObject *graph;
    rill_node *n;
} OpObject;

static PyTypeObject GraphType, OpType;

static PyObject *op_new(GraphObject *g, rill_node *n)
{
    if (!n) Py_RETURN_NONE;
    OpObject *o = PyObject_New(OpObject, &OpType);
    if (!o) return NULL;
    Py_INCREF(g);
    o->graph = g;
    o->n = n;
    return (PyObject *)o;
}

static void op_dealloc(OpObject *o)
{
    Py_XDECREF(o->graph);
    PyObject_Free(o);
}

static int output_of(GraphObject *g, PyObject *o, rill_output *out);

/* The Python gradient hook (set_gradient_hook): hook(graph, op, None) -> whether it makes op's
 * gradient; hook(graph, op, [dy (Op, index) or None per output]) -> None (the op's own
 * gradient) or one (Op, index) or None per input. It is every
 * graph's gradient override; an exception it raises stays set (the gradient build then makes
 * nothing more) and is raised by the call that built the gradients. */
static PyObject *grad_hook;

static bool py_grad_override(void *arg, rill_graph *rg, rill_node *n, const rill_output *dy,
                             rill_output *dx)
{
    (void)rg;
    if (!grad_hook) return false;
    GraphObject *g = arg;
    PyGILState_STATE st = PyGILState_Ensure();
    bool handled = true;
    int nout = rill_node_num_outputs(n), nin = rill_node_num_inputs(n);
    PyObject *dys = NULL, *op = NULL, *r = NULL, *seq = NULL;
    if (PyErr_Occurred()) goto out;
    if (!dy) { /* the question: does the hook make n's gradient? */
        if (!(op = op_new(g, n))) goto out;
        r = PyObject_CallFunctionObjArgs(grad_hook, (PyObject *)g, op, Py_None, NULL);
        handled = r ? PyObject_IsTrue(r) == 1 : true; /* an error: "yes", then nothing made */
        goto out;
    }
    dys = PyList_New(nout);
    for (int o = 0; dys && o < nout; o++) {
        PyObject *e;
        if (dy[o].node) {
            PyObject *d = op_new(g, dy[o].node);
            e = d ? Py_BuildValue("(Ni)", d, dy[o].index) : NULL;
        } else {
            Py_INCREF(Py_None);
            e = Py_None;
        }
        if (!e) goto out;
        PyList_SET_ITEM(dys, o, e);
    }
    if (!dys || !(op = op_new(g, n))) goto out;
    r = PyObject_CallFunctionObjArgs(grad_hook, (PyObject *)g, op, dys, NULL);
    if (!r) goto out;
    if (r == Py_None) {
        handled = false;
        goto out;
    }
    seq = PySequence_Fast(r, "a gradient function returns a list of gradients");
    if (!seq) goto out;
    if (PySequence_Fast_GET_SIZE(seq) != nin) {
        PyErr_Format(PyExc_ValueError,
                     "Num gradients %zd generated for op %s do not match num inputs %d",
                     PySequence_Fast_GET_SIZE(seq), rill_node_name(n), nin);
        goto out;
    }
    for (int k = 0; k < nin; k++) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, k);
        if (e != Py_None && output_of(g, e, &dx[k]) < 0) goto out;
    }
out:
    if (PyErr_Occurred() && dx)
        for (int k = 0; k < nin; k++) dx[k] = (rill_output){NULL, 0};
    Py_XDECREF(seq);
    Py_XDECREF(r);
    Py_XDECREF(op);
    Py_XDECREF(dys);
    PyGILState_Release(st);
    return handled;
}

static PyObject *set_gradient_hook(PyObject *self, PyObject *fn)
{
    (void)self;
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "the gradient hook must be callable or None");
        return NULL;
    }
    Py_XDECREF(grad_hook);
    grad_hook = fn == Py_None ? NULL : fn;
    Py_XINCREF(grad_hook);
    Py_RETURN_NONE;
}

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args, (void)kw;
    GraphObject *g = (GraphObject *)type->tp_alloc(type, 0);
    if (g) {
        g->g = rill_graph_new();
        rill_graph_set_gradient_override(g->g, py_grad_override, g);
    }
    return (PyObject *)g;
}

static void graph_dealloc(GraphObject *g)
{
    rill_graph_free(g->g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

/* (Op, index) -> rill_output of graph g. */
static int output_of(GraphObject *g, PyObject *o, rill_output *out)
{
    PyObject *op;
    int idx;
    if (!PyArg_ParseTuple(o, "O!i;an output is (Op, index)", &OpType, &op, &idx)) return -1;
    if (((OpObject *)op)->graph != g) {
        PyErr_SetString(PyExc_ValueError, "the tensor belongs to another graph");
        return -1;
    }
    rill_node *n = ((OpObject *)op)->n;
    if (idx < 0 || idx >= rill_node_num_outputs(n)) {
        PyErr_Format(PyExc_IndexError, "op '%s' has no output %d", rill_node_name(n), idx);
        return -1;
    }
    *out = rill_node_output(n, idx);
    return 0;
}

/* One attr (kind, value) onto b. */
static int set_attr(rill_op_builder *b, const char *name, PyObject *kv)
{
    const char *kind;
    PyObject *v;
    if (!PyArg_ParseTuple(kv, "sO;an attr is (kind, value)", &kind, &v)) return -1;
    if (strcmp(kind, "int") == 0) {
        long long i = PyLong_AsLongLong(v);
        if (PyErr_Occurred()) return -1;
        rill_op_builder_set_int(b, name, i);
    } else if (strcmp(kind, "float") == 0) {
        double f = PyFloat_AsDouble(v);
        if (PyErr_Occurred()) return -1;
        rill_op_builder_set_float(b, name, f);
    } else if (strcmp(kind, "bool") == 0) {
        rill_op_builder_set_bool(b, name, PyObject_IsTrue(v) == 1);
    } else if (strcmp(kind, "type") == 0) {
        long t = PyLong_AsLong(v);
        if (PyErr_Occurred()) return -1;
        rill_op_builder_set_type(b, name, (rill_dtype)t);
    } else if (strcmp(kind, "string") == 0) {
        const char *s = PyUnicode_AsUTF8(v);
        if (!s) return -1;
        rill_op_builder_set_string(b, name, s);
    } else if (strcmp(kind, "ints") == 0) {
        PyObject *seq = PySequence_Fast(v, "ints attrs are sequences of ints");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        int64_t buf[64];
        if (n > 64) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "at most 64 ints in an attr");
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) buf[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        Py_DECREF(seq);
        if (PyErr_Occurred()) return -1;
        rill_op_builder_set_ints(b, name, buf, (int)n);
    } else if (strcmp(kind, "shape") == 0) {
        rill_shape s;
        if (shape_of(v, &s) < 0) return -1;
        rill_op_builder_set_shape(b, name, s);
    } else if (strcmp(kind, "tensor") == 0) {
        PyObject *val;
        long dt = RILL_DT_INVALID;
        if (!PyArg_ParseTuple(v, "Ol;a tensor attr is (value, dtype)", &val, &dt)) return -1;
        rill_tensor *t = tensor_of(val, (rill_dtype)dt);
        if (!t) return -1;
        rill_op_builder_set_tensor(b, name, t);
        rill_tensor_free(t);
    } else {
        PyErr_Format(PyExc_ValueError, "unknown attr kind '%s'", kind);
        return -1;
    }
    return 0;
}

static PyObject *graph_op(GraphObject *g, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"type", "name", "inputs", "attrs", "device", "control_inputs", NULL};
    const char *type, *name = NULL, *device = NULL;
    PyObject *inputs = NULL, *attrs = NULL, *ctl = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zOOzO", kwlist, &type, &name, &inputs, &attrs,
                                     &device, &ctl))
        return NULL;
    rill_op_builder *b = rill_op_builder_new(g->g, type, name);
    PyObject *seq = NULL;
    if (inputs && inputs != Py_None) {
        seq = PySequence_Fast(inputs, "inputs are a sequence of (Op, index)");
        if (!seq) goto fail;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            rill_output o;
            if (output_of(g, PySequence_Fast_GET_ITEM(seq, i), &o) < 0) goto fail;
            rill_op_builder_add_input(b, o);
        }
        Py_CLEAR(seq);
    }
    if (attrs && attrs != Py_None) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        if (!PyDict_Check(attrs)) {
            PyErr_SetString(PyExc_TypeError, "attrs are a dict");
            goto fail;
        }
        while (PyDict_Next(attrs, &pos, &k, &v)) {
            const char *an = PyUnicode_AsUTF8(k);
            if (!an || set_attr(b, an, v) < 0) goto fail;
        }
    }
    rill_node *deps[64];
    int nd = 0;
    if (ctl && ctl != Py_None) {
        seq = PySequence_Fast(ctl, "control_inputs are a sequence of Op");
        if (!seq) goto fail;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && nd < 64; i++) {
            PyObject *op = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyObject_TypeCheck(op, &OpType)) {
                PyErr_SetString(PyExc_TypeError, "control inputs are Ops");
                goto fail;
            }
            deps[nd++] = ((OpObject *)op)->n;
        }
        Py_CLEAR(seq);
    }
    if (device) rill_graph_push_device(g->g, device);
    if (nd) rill_graph_push_control_dependencies(g->g, deps, nd);
    rill_node *n = rill_op_builder_finish(b);
    if (nd) rill_graph_pop_control_dependencies(g->g);
    if (device) rill_graph_pop_device(g->g);
    if (!n) {
        raise_status(rill_graph_status(g->g));
        rill_graph_clear_status(g->g); /* as TF: the failed op is not added, the graph goes on */
        return NULL;
    }
    return op_new(g, n);
fail:
    Py_XDECREF(seq);
    rill_op_builder_finish(b);
    rill_graph_clear_status(g->g);
    return NULL;
}

static PyObject *graph_find(GraphObject *g, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    return op_new(g, rill_graph_find_node(g->g, name));
}

/* ops(start=0): the ops made since the start-th, in creation order. */
static PyObject *graph_ops(GraphObject *g, PyObject *args)
{
    int start = 0;
    if (!PyArg_ParseTuple(args, "|i", &start)) return NULL;
    int n = rill_graph_num_nodes(g->g);
    if (start < 0) start = 0;
    if (start > n) start = n;
    PyObject *l = PyList_New(n - start);
    for (int i = start; l && i < n; i++) {
        PyObject *o = op_new(g, rill_graph_node(g->g, i));
        if (!o) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i - start, o);
    }
    return l;
}

static PyObject *graph_num_ops(GraphObject *g, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(rill_graph_num_nodes(g->g));
}

/* gradients(ys, xs, grad_ys=None) -> [(Op, index) or None] */
static PyObject *graph_gradients(GraphObject *g, PyObject *args)
{
    PyObject *ys, *xs, *gys = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O", &ys, &xs, &gys)) return NULL;
    PyObject *ysq = PySequence_Fast(ys, "ys"), *xsq = PySequence_Fast(xs, "xs"), *gsq = NULL;
    PyObject *res = NULL;
    rill_output *y = NULL, *x = NULL, *gy = NULL, *dx = NULL;
    if (!ysq || !xsq) goto out;
    Py_ssize_t ny = PySequence_Fast_GET_SIZE(ysq), nx = PySequence_Fast_GET_SIZE(xsq);
    y = PyMem_Calloc((size_t)ny + 1, sizeof *y);
    x = PyMem_Calloc((size_t)nx + 1, sizeof *x);
    dx = PyMem_Calloc((size_t)nx + 1, sizeof *dx);
    for (Py_ssize_t i = 0; i < ny; i++)
        if (output_of(g, PySequence_Fast_GET_ITEM(ysq, i), &y[i]) < 0) goto out;
    for (Py_ssize_t i = 0; i < nx; i++)
        if (output_of(g, PySequence_Fast_GET_ITEM(xsq, i), &x[i]) < 0) goto out;
    if (gys != Py_None) {
        gsq = PySequence_Fast(gys, "grad_ys");
        if (!gsq || PySequence_Fast_GET_SIZE(gsq) != ny) {
            if (gsq) PyErr_SetString(PyExc_ValueError, "grad_ys must be as long as ys");
            goto out;
        }
        gy = PyMem_Calloc((size_t)ny + 1, sizeof *gy);
        for (Py_ssize_t i = 0; i < ny; i++)
            if (output_of(g, PySequence_Fast_GET_ITEM(gsq, i), &gy[i]) < 0) goto out;
    }
    bool built = rill_gradients(g->g, y, (int)ny, x, (int)nx, gy, dx);
    if (PyErr_Occurred()) { /* the gradient hook raised */
        rill_graph_clear_status(g->g);
        goto out;
    }
    if (!built) {
        raise_status(rill_graph_status(g->g));
        rill_graph_clear_status(g->g);
        goto out;
    }
    res = PyList_New(nx);
    for (Py_ssize_t i = 0; res && i < nx; i++) {
        PyObject *e;
        if (!dx[i].node) {
            Py_INCREF(Py_None);
            e = Py_None;
        } else {
            PyObject *op = op_new(g, dx[i].node);
            e = op ? Py_BuildValue("(Ni)", op, dx[i].index) : NULL;
        }
        if (!e) {
            Py_CLEAR(res);
            break;
        }
        PyList_SET_ITEM(res, i, e);
    }
out:
    Py_XDECREF(ysq);
    Py_XDECREF(xsq);
    Py_XDECREF(gsq);
    PyMem_Free(y);
    PyMem_Free(x);
    PyMem_Free(gy);
    PyMem_Free(dx);
    return res;
}

static PyObject *graph_set_seed(GraphObject *g, PyObject *arg)
{
    long long seed = PyLong_AsLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    rill_graph_set_seed(g->g, seed);
    Py_RETURN_NONE;
}

static PyObject *graph_push_name_scope(GraphObject *g, PyObject *arg)
{
    const char *scope = PyUnicode_AsUTF8(arg);
    if (!scope) return NULL;
    rill_graph_push_name_scope(g->g, scope);
    Py_RETURN_NONE;
}

static PyObject *graph_name_scope(GraphObject *g, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(rill_graph_name_scope(g->g));
}

static PyObject *graph_pop_name_scope(GraphObject *g, PyObject *unused)
{
    (void)unused;
    rill_graph_pop_name_scope(g->g);
    Py_RETURN_NONE;
}

/* push_control_dependencies(ops): the ops the C library adds from here on (an optimizer's
 * updates, as TF's under tf.control_dependencies) depend on these; pop_control_dependencies()
 * leaves. */
static PyObject *graph_push_control_dependencies(GraphObject *g, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "control_inputs are a sequence of Op");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    rill_node **deps = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *deps);
    if (!deps) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *op = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyObject_TypeCheck(op, &OpType)) {
            PyMem_Free(deps);
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "control inputs are Ops");
            return NULL;
        }
        deps[i] = ((OpObject *)op)->n;
    }
    rill_graph_push_control_dependencies(g->g, deps, (int)n);
    PyMem_Free(deps);
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyObject *graph_pop_control_dependencies(GraphObject *g, PyObject *unused)
{
    (void)unused;
    rill_graph_pop_control_dependencies(g->g);
    Py_RETURN_NONE;
}

/* --- variables (Graph methods) --- */

/* The initializer from ("zeros"|"ones"|"constant"|"normal"|"truncated_normal"|"uniform", a, b,
 * seed): constant a; normal and truncated normal mean a, stddev b; uniform [a, b). */
static int initializer_of(PyObject *spec, rill_initializer *init)
{
    const char *kind;
    double a = 0, b = 0;
    long long seed = 0;
    if (!PyArg_ParseTuple(spec, "s|ddL;an initializer is (kind, a, b, seed)", &kind, &a, &b,
                          &seed))
        return -1;
    if (strcmp(kind, "zeros") == 0)
        *init = rill_zeros_initializer();
    else if (strcmp(kind, "ones") == 0)
        *init = rill_ones_initializer();
    else if (strcmp(kind, "constant") == 0)
        *init = rill_constant_initializer(a);
    else if (strcmp(kind, "normal") == 0)
        *init = rill_random_normal_initializer(a, b, seed);
    else if (strcmp(kind, "truncated_normal") == 0)
        *init = rill_truncated_normal_initializer(a, b, seed);
    else if (strcmp(kind, "uniform") == 0)
        *init = rill_random_uniform_initializer(a, b, seed);
    else {
        PyErr_Format(PyExc_ValueError, "unknown initializer '%s'", kind);
        return -1;
    }
    return 0;
}

/* The graph's sticky error as an exception (cleared, so the graph goes on), or the op. */
static PyObject *node_or_raise(GraphObject *g, rill_node *n)
{
    if (!n || !rill_graph_ok(g->g)) {
        raise_status(rill_graph_status(g->g));
        rill_graph_clear_status(g->g);
        return NULL;
    }
    return op_new(g, n);
}

/* variable(name, dtype, shape, initializer, trainable, get=False): tf.Variable of a shape and
 * initializer, or tf.get_variable (variable scopes, reuse) when get. */
static PyObject *graph_variable(GraphObject *g, PyObject *args)
{
    const char *name, *device = NULL;
    int dtype, trainable, get = 0;
    PyObject *shape, *spec;
    if (!PyArg_ParseTuple(args, "siOOp|pz", &name, &dtype, &shape, &spec, &trainable, &get,
                          &device))
        return NULL;
    rill_shape sh;
    rill_initializer init;
    if (shape_of(shape, &sh) < 0 || initializer_of(spec, &init) < 0) return NULL;
    if (device) rill_graph_push_device(g->g, device);
    rill_output v = get ? rill_get_variable(g->g, name, (rill_dtype)dtype, sh, init, trainable)
                        : rill_variable(g->g, (rill_dtype)dtype, sh, init, trainable, name);
    if (device) rill_graph_pop_device(g->g);
    return node_or_raise(g, v.node);
}

/* variable_from(initial_value, trainable, name): tf.Variable(initial_value). */
static PyObject *graph_variable_from(GraphObject *g, PyObject *args)
{
    PyObject *init;
    int trainable;
    const char *name = NULL, *device = NULL;
    if (!PyArg_ParseTuple(args, "Op|zz", &init, &trainable, &name, &device)) return NULL;
    rill_output in;
    if (output_of(g, init, &in) < 0) return NULL;
    if (device) rill_graph_push_device(g->g, device);
    rill_node *n = rill_variable_from(g->g, in, trainable, name).node;
    if (device) rill_graph_pop_device(g->g);
    return node_or_raise(g, n);
}

/* local_variable(name, dtype, shape, initializer, device=None): a variable of LOCAL_VARIABLES
 * (never saved, per task; tf.metrics' counters, tf.train's epoch counters). */
static PyObject *graph_local_variable(GraphObject *g, PyObject *args)
{
    const char *name, *device = NULL;
    int dtype;
    PyObject *shape, *spec;
    if (!PyArg_ParseTuple(args, "siOO|z", &name, &dtype, &shape, &spec, &device)) return NULL;
    rill_shape sh;
    rill_initializer init;
    if (shape_of(shape, &sh) < 0 || initializer_of(spec, &init) < 0) return NULL;
    if (device) rill_graph_push_device(g->g, device);
    rill_output v = rill_local_variable(g->g, (rill_dtype)dtype, sh, init, name);
    if (device) rill_graph_pop_device(g->g);
    return node_or_raise(g, v.node);
}

static PyObject *graph_local_variables_initializer(GraphObject *g, PyObject *args)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|z", &name)) return NULL;
    return node_or_raise(g, rill_local_variables_initializer(g->g, name));
}

static PyObject *graph_push_variable_scope(GraphObject *g, PyObject *args)
{
    const char *scope;
    int reuse = 0;
    if (!PyArg_ParseTuple(args, "s|p", &scope, &reuse)) return NULL;
    rill_graph_push_variable_scope(g->g, scope, reuse);
    Py_RETURN_NONE;
}

static PyObject *graph_pop_variable_scope(GraphObject *g, PyObject *unused)
{
    (void)unused;
    rill_graph_pop_variable_scope(g->g);
    Py_RETURN_NONE;
}

static PyObject *graph_global_variables_initializer(GraphObject *g, PyObject *args)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|z", &name)) return NULL;
    return node_or_raise(g, rill_global_variables_initializer(g->g, name));
}

static PyObject *graph_variable_initializer(GraphObject *g, PyObject *arg)
{
    rill_output v;
    if (output_of(g, arg, &v) < 0) return NULL;
    return op_new(g, rill_variable_initializer(v));
}

/* set_variable_initializer((Op, index), op): op becomes the variable's initializer */
static PyObject *graph_set_variable_initializer(GraphObject *g, PyObject *args)
{
    PyObject *var, *op;
    if (!PyArg_ParseTuple(args, "OO!", &var, &OpType, &op)) return NULL;
    rill_output v;
    if (output_of(g, var, &v) < 0) return NULL;
    if (!rill_variable_set_initializer(v, ((OpObject *)op)->n)) {
        PyErr_SetString(PyExc_ValueError, "not a variable");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* collection(key) -> [Op] */
static PyObject *graph_collection(GraphObject *g, PyObject *arg)
{
    const char *key = PyUnicode_AsUTF8(arg);
    if (!key) return NULL;
    int n = rill_graph_get_collection(g->g, key, NULL, 0);
    rill_node **nodes = PyMem_Calloc((size_t)n + 1, sizeof *nodes);
    if (!nodes) return PyErr_NoMemory();
    n = rill_graph_get_collection(g->g, key, nodes, n);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *o = op_new(g, nodes[i]);
        if (!o) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, o);
    }
    PyMem_Free(nodes);
    return l;
}

static PyObject *graph_add_to_collection(GraphObject *g, PyObject *args)
{
    const char *key;
    PyObject *op;
    if (!PyArg_ParseTuple(args, "sO!", &key, &OpType, &op)) return NULL;
    rill_graph_add_to_collection(g->g, key, ((OpObject *)op)->n);
    Py_RETURN_NONE;
}

static PyObject *graph_clear_collection(GraphObject *g, PyObject *arg)
{
    const char *key = PyUnicode_AsUTF8(arg);
    if (!key) return NULL;
    rill_graph_clear_collection(g->g, key);
    Py_RETURN_NONE;
}

static PyObject *graph_summary(GraphObject *g, PyObject *args);
static PyObject *graph_summary_merge_all(GraphObject *g, PyObject *args);

/* tf.train.get_or_create_global_step, as the C library makes it (an int64 scalar variable named
 * global_step at the root, in the "global_step" collection). */
static PyObject *graph_global_step(GraphObject *g, PyObject *unused)
{
    (void)unused;
    return node_or_raise(g, rill_train_get_or_create_global_step(g->g).node);
}

static PyMethodDef graph_methods[] = {
    {"get_or_create_global_step", (PyCFunction)graph_global_step, METH_NOARGS,
     "The graph's global step variable's op, made if absent."},
    {"summary", (PyCFunction)graph_summary, METH_VARARGS,
     "summary(kind, name, (Op, index)) -> Op: tf.summary.scalar / histogram"},
    {"summary_merge_all", (PyCFunction)graph_summary_merge_all, METH_VARARGS,
     "summary_merge_all(name=None) -> Op or None"},
    {"variable", (PyCFunction)graph_variable, METH_VARARGS,
     "variable(name, dtype, shape, (kind, a, b, seed), trainable, get=False, device=None) -> Op"},
    {"variable_from", (PyCFunction)graph_variable_from, METH_VARARGS,
     "variable_from((Op, index), trainable, name=None, device=None) -> Op: tf.Variable(value)"},
    {"push_variable_scope", (PyCFunction)graph_push_variable_scope, METH_VARARGS,
     "push_variable_scope(name, reuse=False)"},
    {"pop_variable_scope", (PyCFunction)graph_pop_variable_scope, METH_NOARGS, ""},
    {"global_variables_initializer", (PyCFunction)graph_global_variables_initializer,
     METH_VARARGS, "global_variables_initializer(name=None) -> Op"},
    {"variable_initializer", (PyCFunction)graph_variable_initializer, METH_O,
     "The initializer Assign of a variable (Op, index), or None."},
    {"set_variable_initializer", (PyCFunction)graph_set_variable_initializer, METH_VARARGS,
     "set_variable_initializer((Op, index), op)"},
    {"collection", (PyCFunction)graph_collection, METH_O, "The ops of a named collection."},
    {"local_variable", (PyCFunction)graph_local_variable, METH_VARARGS,
     "local_variable(name, dtype, shape, initializer, device=None)"},
    {"local_variables_initializer", (PyCFunction)graph_local_variables_initializer, METH_VARARGS,
     "local_variables_initializer(name=None)"},
    {"add_to_collection", (PyCFunction)graph_add_to_collection, METH_VARARGS,
     "add_to_collection(key, op)"},
    {"clear_collection", (PyCFunction)graph_clear_collection, METH_O,
     "clear_collection(key): empties it (its ops stay)."},
    {"push_name_scope", (PyCFunction)graph_push_name_scope, METH_O,
     "Enters a name scope (made unique as TF's name_scope makes it)."},
    {"pop_name_scope", (PyCFunction)graph_pop_name_scope, METH_NOARGS, "Leaves it."},
    {"push_control_dependencies", (PyCFunction)graph_push_control_dependencies, METH_O,
     "The ops the library adds from here on depend on these Ops ([]: on none)."},
    {"pop_control_dependencies", (PyCFunction)graph_pop_control_dependencies, METH_NOARGS,
     "Leaves it."},
    {"name_scope", (PyCFunction)graph_name_scope, METH_NOARGS,
     "The current name scope: \"\" or \"a/b/\"."},
    {"op", (PyCFunction)(void (*)(void))graph_op, METH_VARARGS | METH_KEYWORDS,
     "op(type, name=None, inputs=(), attrs={}, device=None, control_inputs=()) -> Op"},
    {"find", (PyCFunction)graph_find, METH_O, "The op of that name, or None."},
    {"ops", (PyCFunction)graph_ops, METH_VARARGS,
     "ops(start=0): the ops from the start-th on, in creation order."},
    {"num_ops", (PyCFunction)graph_num_ops, METH_NOARGS, "How many ops the graph has."},
    {"gradients", (PyCFunction)graph_gradients, METH_VARARGS,
     "gradients(ys, xs, grad_ys=None): d(sum ys)/d xs as (Op, index) or None."},
    {"set_seed", (PyCFunction)graph_set_seed, METH_O, "The graph-level random seed."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GraphType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Graph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A rill graph.",
    .tp_new = graph_new,
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_methods = graph_methods,
};

static PyObject *op_get_name(OpObject *o, void *c)
{
    (void)c;
    return PyUnicode_FromString(rill_node_name(o->n));
}

static PyObject *op_get_type(OpObject *o, void *c)
{
    (void)c;
    return PyUnicode_FromString(rill_node_op_type(o->n));
}

static PyObject *op_get_device(OpObject *o, void *c)
{
    (void)c;
    const char *d = rill_node_requested_device(o->n);
    return PyUnicode_FromString(d ? d : "");
}

static PyObject *op_get_num_outputs(OpObject *o, void *c)
{
    (void)c;
    return PyLong_FromLong(rill_node_num_outputs(o->n));
}

static PyObject *op_get_graph(OpObject *o, void *c)
{
    (void)c;
    Py_INCREF(o->graph);
    return (PyObject *)o->graph;
}

static PyObject *op_get_inputs(OpObject *o, void *c)
{
    (void)c;
    int n = rill_node_num_inputs(o->n);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        rill_output in = rill_node_input(o->n, i);
        PyObject *op = op_new(o->graph, in.node);
        PyObject *e = op ? Py_BuildValue("(Ni)", op, in.index) : NULL;
        if (!e) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

static PyObject *op_get_control_inputs(OpObject *o, void *c)
{
    (void)c;
    int n = rill_node_num_control_inputs(o->n);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *op = op_new(o->graph, rill_node_control_input(o->n, i));
        if (!op) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, op);
    }
    return l;
}

static PyObject *op_output_dtype(OpObject *o, PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    if (i < 0 || i >= rill_node_num_outputs(o->n))
        return PyErr_Format(PyExc_IndexError, "no output %ld", i);
    return PyLong_FromLong(rill_node_output_dtype(o->n, (int)i));
}

static PyObject *op_output_shape(OpObject *o, PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    if (i < 0 || i >= rill_node_num_outputs(o->n))
        return PyErr_Format(PyExc_IndexError, "no output %ld", i);
    return shape_tuple(rill_node_output_shape(o->n, (int)i));
}

static PyObject *op_add_control_input(OpObject *o, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &OpType)) return PyErr_Format(PyExc_TypeError, "an Op");
    rill_node_add_control_input(o->n, ((OpObject *)arg)->n);
    Py_RETURN_NONE;
}

static Py_hash_t op_hash(OpObject *o)
{
    Py_hash_t h = (Py_hash_t)((uintptr_t)o->n >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *op_richcompare(PyObject *a, PyObject *b, int opid)
{
    if (!PyObject_TypeCheck(b, &OpType) || (opid != Py_EQ && opid != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    bool eq = ((OpObject *)a)->n == ((OpObject *)b)->n;
    return PyBool_FromLong(opid == Py_EQ ? eq : !eq);
}

static PyGetSetDef op_getset[] = {
    {"name", (getter)op_get_name, NULL, NULL, NULL},
    {"type", (getter)op_get_type, NULL, NULL, NULL},
    {"device", (getter)op_get_device, NULL, NULL, NULL},
    {"num_outputs", (getter)op_get_num_outputs, NULL, NULL, NULL},
    {"graph", (getter)op_get_graph, NULL, NULL, NULL},
    {"inputs", (getter)op_get_inputs, NULL, NULL, NULL},
    {"control_inputs", (getter)op_get_control_inputs, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef op_methods[] = {
    {"output_dtype", (PyCFunction)op_output_dtype, METH_O, "rill dtype number of output i."},
    {"output_shape", (PyCFunction)op_output_shape, METH_O,
     "Output i's static shape: a tuple (None for unknown dims), or None for unknown rank."},
    {"add_control_input", (PyCFunction)op_add_control_input, METH_O, "A control edge op -> self."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OpType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Op",
    .tp_basicsize = sizeof(OpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A node of a rill graph.",
    .tp_dealloc = (destructor)op_dealloc,
    .tp_getset = op_getset,
    .tp_methods = op_methods,
    .tp_hash = (hashfunc)op_hash,
    .tp_richcompare = op_richcompare,
};

/* --- Session and Callable --- */

/* Session.run's signatures seen before, for run_fast: the fetch elements (a list's or tuple's, or
 * the one fetch) and the feed keys in the feed_dict's order, held (so their identities stay
 * theirs), and the callable made for them. */
#define FAST_MAX 32
typedef struct fast_entry {
    int kind; /* 0 list, 1 tuple, 2 one fetch */
    PyObject *elems, *keys; /* tuples */
    PyObject *callable;
} fast_entry;

typedef struct {
    PyObject_HEAD GraphObject *graph;
    rill_session *sess;
    fast_entry fast[FAST_MAX];
    int nfast, next_evict;
    PyObject *owner; /* what made the session (a Supervisor), freed after it */
    PyObject *server; /* the Server whose target it names (options' "server"), freed after it */
    int inflight;    /* steps running now (counted under the GIL): close cancels and waits */
} SessionObject;

typedef struct {
    PyObject_HEAD SessionObject *sess;
    int nfeeds, nfetches, ntargets;
    rill_output *feeds, *fetches;
    rill_dtype *feed_dtypes;
    rill_node **targets;
    /* run_dict's structure (NULL without): the feed_dict keys in feed order, and per fetched
     * element its fetch index or -1 (an op: None), built as a list, a tuple or one value. */
    PyObject *feed_keys, *layout;
    int kind;
    /* A status kept for the steps (taken and given back with the GIL held; a second thread in
     * the same callable meanwhile makes its own). */
    rill_status *status;
    bool status_busy;
} CallableObject;

static PyTypeObject SessionType, CallableType;

static PyObject *session_wrap(PyTypeObject *type, GraphObject *graph, rill_session *sess,
                              PyObject *owner);
static rill_session_options *session_options_of(PyObject *opts);

static int opt_int(PyObject *opts, const char *key, long *v)
{
    PyObject *o = opts ? PyDict_GetItemString(opts, key) : NULL;
    if (!o) return 0;
    *v = PyLong_AsLong(o);
    return PyErr_Occurred() ? -1 : 1;
}

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"graph", "options", NULL};
    PyObject *graph, *opts = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O!", kwlist, &GraphType, &graph, &PyDict_Type,
                                     &opts))
        return NULL;
    rill_session_options *o = session_options_of(opts);
    if (!o) return NULL;
    rill_status *s = rill_status_new();
    rill_session *sess;
    Py_BEGIN_ALLOW_THREADS
    sess = rill_session_new(((GraphObject *)graph)->g, o, s);
    Py_END_ALLOW_THREADS
    rill_session_options_free(o);
    if (!sess) {
        raise_status(s);
        rill_status_free(s);
        return NULL;
    }
    rill_status_free(s);
    PyObject *so = session_wrap(type, (GraphObject *)graph, sess, NULL);
    PyObject *server = opts ? PyDict_GetItemString(opts, "server") : NULL;
    if (so && server && server != Py_None) {
        Py_INCREF(server);
        ((SessionObject *)so)->server = server;
    }
    return so;
}

/* A Session object over sess (taken), keeping graph and owner alive. */
static PyObject *session_wrap(PyTypeObject *type, GraphObject *graph, rill_session *sess,
                              PyObject *owner)
{
    SessionObject *so = (SessionObject *)type->tp_alloc(type, 0);
    if (!so) {
        rill_session_free(sess);
        return NULL;
    }
    Py_INCREF(graph);
    so->graph = graph;
    so->sess = sess;
    Py_XINCREF(owner);
    so->owner = owner;
    return (PyObject *)so;
}

/* Session options from {log_device_placement, allow_soft_placement, intra_op_threads,
 * inter_op_threads, operation_timeout_ms, gpu_allow_growth, gpu_memory_fraction,
 * gpu_visible_device_list, device_filters, target}; NULL with the error raised. */
static rill_session_options *session_options_of(PyObject *opts)
{
    rill_session_options *o = rill_session_options_new();
    long v;
    int r;
    if ((r = opt_int(opts, "log_device_placement", &v)) > 0)
        rill_session_options_set_log_device_placement(o, v != 0);
    if (r >= 0 && (r = opt_int(opts, "allow_soft_placement", &v)) > 0)
        rill_session_options_set_allow_soft_placement(o, v != 0);
    if (r >= 0 && (r = opt_int(opts, "intra_op_threads", &v)) > 0)
        rill_session_options_set_intra_op_threads(o, (int)v);
    if (r >= 0 && (r = opt_int(opts, "inter_op_threads", &v)) > 0)
        rill_session_options_set_inter_op_threads(o, (int)v);
    if (r >= 0 && (r = opt_int(opts, "operation_timeout_ms", &v)) > 0)
        rill_session_options_set_operation_timeout_ms(o, v);
    if (r >= 0 && (r = opt_int(opts, "gpu_allow_growth", &v)) > 0)
        rill_session_options_set_gpu_allow_growth(o, v != 0);
    PyObject *frac = opts ? PyDict_GetItemString(opts, "gpu_memory_fraction") : NULL;
    if (r >= 0 && frac) {
        double f = PyFloat_AsDouble(frac);
        if (f == -1 && PyErr_Occurred())
            r = -1;
        else if (f > 0)
            rill_session_options_set_gpu_memory_fraction(o, f);
    }
    PyObject *vis = opts ? PyDict_GetItemString(opts, "gpu_visible_device_list") : NULL;
    if (r >= 0 && vis && vis != Py_None) {
        const char *l = PyUnicode_AsUTF8(vis);
        if (!l)
            r = -1;
        else
            rill_session_options_set_gpu_visible_device_list(o, l);
    }
    /* ConfigProto.device_filters: a sequence of device-name strings */
    PyObject *filters = opts ? PyDict_GetItemString(opts, "device_filters") : NULL;
    if (r >= 0 && filters && filters != Py_None) {
        PyObject *seq = PySequence_Fast(filters, "device_filters is a list of device names");
        Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
        const char **fs = seq ? PyMem_Calloc((size_t)n + 1, sizeof *fs) : NULL;
        r = fs ? 0 : -1;
        for (Py_ssize_t i = 0; r >= 0 && i < n; i++)
            if (!(fs[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)))) r = -1;
        if (r >= 0) rill_session_options_set_device_filters(o, fs, (int)n);
        PyMem_Free(fs);
        Py_XDECREF(seq);
    }
    PyObject *target = opts ? PyDict_GetItemString(opts, "target") : NULL;
    if (r >= 0 && target && target != Py_None) {
        const char *t = PyUnicode_AsUTF8(target);
        if (!t)
            r = -1;
        else
            rill_session_options_set_target(o, t);
    }
    if (r < 0) {
        rill_session_options_free(o);
        return NULL;
    }
    return o;
}

static int interpreter_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

static void session_close_impl(SessionObject *so)
{
    if (so->sess) {
        rill_session *s = so->sess;
        so->sess = NULL;
        /* Steps other threads run (queue runners blocked in an enqueue) end CANCELLED, as
         * TF's Session.close cancels them; the session is freed once none runs. */
        if (so->inflight > 0) rill_session_cancel(s);
        /* At interpreter exit the daemon threads running them never take the GIL back: the
         * session is left to the process's end then, never freed under a running step. */
        if (so->inflight > 0 && interpreter_finalizing()) return;
        while (so->inflight > 0) {
            /* again and again: a step that was about to begin at the first one would miss it */
            rill_session_cancel(s);
            Py_BEGIN_ALLOW_THREADS
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
            Py_END_ALLOW_THREADS
        }
        Py_BEGIN_ALLOW_THREADS
        rill_session_free(s);
        Py_END_ALLOW_THREADS
    }
}

static void fast_clear(SessionObject *so)
{
    for (int i = 0; i < so->nfast; i++) {
        Py_CLEAR(so->fast[i].elems);
        Py_CLEAR(so->fast[i].keys);
        Py_CLEAR(so->fast[i].callable);
    }
    so->nfast = 0;
}

static void session_dealloc(SessionObject *so)
{
    fast_clear(so);
    session_close_impl(so);
    Py_CLEAR(so->owner);
    Py_CLEAR(so->server);
    Py_XDECREF(so->graph);
    Py_TYPE(so)->tp_free((PyObject *)so);
}

static PyObject *session_close(SessionObject *so, PyObject *unused)
{
    (void)unused;
    fast_clear(so);
    session_close_impl(so);
    Py_RETURN_NONE;
}

/* make_callable(fetches, feeds, targets[, feed_keys, layout, kind]): fetches and feeds
 * sequences of (Op, index), targets of Op; with the last three, run_dict works too. */
static PyObject *session_make_callable(SessionObject *so, PyObject *args)
{
    PyObject *fetches, *feeds, *targets, *keys = NULL, *layout = NULL;
    int kind = 0;
    if (!PyArg_ParseTuple(args, "OOO|O!O!i", &fetches, &feeds, &targets, &PyTuple_Type, &keys,
                          &PyTuple_Type, &layout, &kind))
        return NULL;
    if (!so->sess) return PyErr_Format(PyExc_RuntimeError, "Attempted to use a closed Session.");
    PyObject *fq = PySequence_Fast(fetches, "fetches"), *dq = PySequence_Fast(feeds, "feeds"),
             *tq = PySequence_Fast(targets, "targets");
    CallableObject *c = NULL;
    if (!fq || !dq || !tq) goto out;
    c = PyObject_New(CallableObject, &CallableType);
    if (!c) goto out;
    Py_INCREF(so);
    c->sess = so;
    c->nfetches = (int)PySequence_Fast_GET_SIZE(fq);
    c->nfeeds = (int)PySequence_Fast_GET_SIZE(dq);
    c->ntargets = (int)PySequence_Fast_GET_SIZE(tq);
    c->fetches = PyMem_Calloc((size_t)c->nfetches + 1, sizeof *c->fetches);
    c->feeds = PyMem_Calloc((size_t)c->nfeeds + 1, sizeof *c->feeds);
    c->feed_dtypes = PyMem_Calloc((size_t)c->nfeeds + 1, sizeof *c->feed_dtypes);
    c->targets = PyMem_Calloc((size_t)c->ntargets + 1, sizeof *c->targets);
    Py_XINCREF(keys);
    Py_XINCREF(layout);
    c->feed_keys = keys, c->layout = layout, c->kind = kind;
    c->status = rill_status_new();
    c->status_busy = false;
    if (keys && PyTuple_GET_SIZE(keys) != c->nfeeds) {
        PyErr_SetString(PyExc_ValueError, "one feed key per feed");
        goto fail;
    }
    for (int i = 0; layout && i < PyTuple_GET_SIZE(layout); i++) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(layout, i));
        if (PyErr_Occurred() || k < -1 || k >= c->nfetches) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "a layout entry is a fetch index or -1");
            goto fail;
        }
    }
    for (int i = 0; i < c->nfetches; i++)
        if (output_of(so->graph, PySequence_Fast_GET_ITEM(fq, i), &c->fetches[i]) < 0) goto fail;
    for (int i = 0; i < c->nfeeds; i++) {
        if (output_of(so->graph, PySequence_Fast_GET_ITEM(dq, i), &c->feeds[i]) < 0) goto fail;
        c->feed_dtypes[i] = rill_output_dtype(c->feeds[i]);
    }
    for (int i = 0; i < c->ntargets; i++) {
        PyObject *op = PySequence_Fast_GET_ITEM(tq, i);
        if (!PyObject_TypeCheck(op, &OpType)) {
            PyErr_SetString(PyExc_TypeError, "targets are Ops");
            goto fail;
        }
        c->targets[i] = ((OpObject *)op)->n;
    }
    goto out;
fail:
    Py_CLEAR(c);
out:
    Py_XDECREF(fq);
    Py_XDECREF(dq);
    Py_XDECREF(tq);
    return (PyObject *)c;
}

static void callable_dealloc(CallableObject *c)
{
    Py_XDECREF(c->sess);
    Py_XDECREF(c->feed_keys);
    Py_XDECREF(c->layout);
    rill_status_free(c->status);
    PyMem_Free(c->fetches);
    PyMem_Free(c->feeds);
    PyMem_Free(c->feed_dtypes);
    PyMem_Free(c->targets);
    PyObject_Free(c);
}

/* A fetched tensor for Python: a numpy scalar for rank 0 (as TF gives), else an array over the
 * tensor's buffer. Takes t's reference. */
static PyObject *value_of(rill_tensor *t)
{
    rill_dtype dt = rill_tensor_dtype(t);
    if (rill_tensor_rank(t) == 0 && dt != RILL_STRING && npy_of(dt) >= 0) {
        PyArray_Descr *d = PyArray_DescrFromType(npy_of(dt));
        PyObject *v = d ? PyArray_Scalar(rill_tensor_data(t), d, NULL) : NULL;
        Py_XDECREF(d);
        rill_tensor_free(t);
        return v;
    }
    if (rill_tensor_rank(t) == 0 && dt == RILL_STRING) {
        size_t len;
        const char *str = rill_tensor_get_string(t, 0, &len);
        PyObject *v = PyBytes_FromStringAndSize(str, (Py_ssize_t)len);
        rill_tensor_free(t);
        return v;
    }
    return array_of(t);
}

/* One step with vals[i] fed to feed i: the fetched values in ov[] (as value_of gives them, new
 * references), or -1 with the error raised. */
static int run_step(CallableObject *c, PyObject *const *vals, PyObject **ov, long long timeout_ms)
{
    if (!c->sess->sess) {
        PyErr_SetString(PyExc_RuntimeError, "Attempted to use a closed Session.");
        return -1;
    }
    rill_tensor *fbuf[16], *obuf[16];
    rill_tensor **fv = c->nfeeds > 16 ? PyMem_Calloc((size_t)c->nfeeds, sizeof *fv) : fbuf;
    rill_tensor **tv = c->nfetches > 16 ? PyMem_Calloc((size_t)c->nfetches, sizeof *tv) : obuf;
    int made = 0, rc = -1;
    bool held = false;
    if (!fv || !tv) {
        PyErr_NoMemory();
        goto out;
    }
    for (; made < c->nfeeds; made++) {
        fv[made] = tensor_of(vals[made], c->feed_dtypes[made]);
        if (!fv[made]) goto out;
    }
    for (int i = 0; i < c->nfetches; i++) tv[i] = NULL;
    bool own = !c->status_busy;
    rill_status *s = own ? c->status : rill_status_new();
    if (own) rill_status_clear(s);
    c->status_busy = true;
    rill_code code;
    int slot;
    rill_session *rs = c->sess->sess;
    /* Another thread may drop the session's cache (close) while this step runs: c stays. */
    Py_INCREF(c);
    held = true;
    c->sess->inflight++;
    Py_BEGIN_ALLOW_THREADS
    slot = running_add(rs);
    rill_run_options ro = {.timeout_ms = timeout_ms};
    code = rill_session_run_with_options(rs, &ro, c->feeds, fv, c->nfeeds, c->fetches, tv,
                                         c->nfetches, c->targets, c->ntargets, s);
    running_remove(slot);
    Py_END_ALLOW_THREADS
    c->sess->inflight--;
    /* Ctrl-C cancelled it: Python's pending KeyboardInterrupt, not the CANCELLED error */
    if (code == RILL_CANCELLED && PyErr_CheckSignals() < 0) {
        if (own)
            c->status_busy = false;
        else
            rill_status_free(s);
        goto out;
    }
    if (code != RILL_OK) raise_status(s);
    if (own)
        c->status_busy = false;
    else
        rill_status_free(s);
    if (code != RILL_OK) goto out;
    rc = 0;
    for (int i = 0; i < c->nfetches; i++) {
        ov[i] = rc == 0 ? value_of(tv[i]) : NULL;
        if (rc != 0) rill_tensor_free(tv[i]);
        if (rc == 0 && !ov[i]) {
            rc = -1;
            for (int k = 0; k < i; k++) Py_CLEAR(ov[k]);
        }
    }
out:
    for (int i = 0; i < made; i++) rill_tensor_free(fv[i]);
    if (fv != fbuf) PyMem_Free(fv);
    if (tv != obuf) PyMem_Free(tv);
    if (held) Py_DECREF(c);
    return rc;
}

/* callable(*feed_values, timeout_ms=0) -> list of fetched values, one per fetch. */
static PyObject *callable_call(CallableObject *c, PyObject *args, PyObject *kw)
{
    long long timeout_ms = 0;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyObject *t = PyDict_GetItemString(kw, "timeout_ms");
        if (!t || PyDict_GET_SIZE(kw) != 1)
            return PyErr_Format(PyExc_TypeError, "the only keyword argument is timeout_ms");
        timeout_ms = PyLong_AsLongLong(t);
        if (timeout_ms == -1 && PyErr_Occurred()) return NULL;
    }
    if (PyTuple_GET_SIZE(args) != c->nfeeds)
        return PyErr_Format(PyExc_TypeError, "expected %d feed values, got %zd", c->nfeeds,
                            PyTuple_GET_SIZE(args));
    PyObject *res = PyList_New(c->nfetches);
    if (!res) return NULL;
    PyObject **ov = PySequence_Fast_ITEMS(res);
    if (run_step(c, PySequence_Fast_ITEMS(args), ov, timeout_ms) < 0) {
        Py_DECREF(res);
        return NULL;
    }
    return res;
}

/* One step with vals fed, the result built by c's layout (what Session.run returns). */
static PyObject *run_layout(CallableObject *c, PyObject *const *vals, long long timeout_ms)
{
    PyObject *obuf[16];
    PyObject **ov = c->nfetches > 16 ? PyMem_Calloc((size_t)c->nfetches, sizeof *ov) : obuf;
    if (!ov) return PyErr_NoMemory();
    PyObject *res = NULL;
    if (run_step(c, vals, ov, timeout_ms) == 0) {
        Py_ssize_t n = PyTuple_GET_SIZE(c->layout);
        res = c->kind == 2 ? NULL : c->kind == 1 ? PyTuple_New(n) : PyList_New(n);
        for (Py_ssize_t i = 0; i < n && (res || c->kind == 2); i++) {
            long k = PyLong_AsLong(PyTuple_GET_ITEM(c->layout, i));
            PyObject *v = k < 0 ? Py_None : ov[k];
            Py_INCREF(v);
            if (c->kind == 2)
                res = v;
            else if (c->kind == 1)
                PyTuple_SET_ITEM(res, i, v);
            else
                PyList_SET_ITEM(res, i, v);
        }
        for (int i = 0; i < c->nfetches; i++) Py_XDECREF(ov[i]);
    }
    if (ov != obuf) PyMem_Free(ov);
    return res;
}

/* run_dict(feed_dict, timeout_ms=0): the step with the feeds looked up in feed_dict by the keys
 * given to make_callable, the result built as Session.run returns it. */
static PyObject *callable_run_dict(CallableObject *c, PyObject *args)
{
    PyObject *fd;
    long long timeout_ms = 0;
    if (!PyArg_ParseTuple(args, "O|L", &fd, &timeout_ms)) return NULL;
    if (!c->layout || !c->feed_keys)
        return PyErr_Format(PyExc_TypeError, "this callable was made without a layout");
    if (c->nfeeds && (!fd || !PyDict_Check(fd))) return PyErr_Format(PyExc_TypeError, "feed_dict");
    PyObject *vbuf[16];
    PyObject **vals = c->nfeeds > 16 ? PyMem_Calloc((size_t)c->nfeeds, sizeof *vals) : vbuf;
    PyObject *res = NULL;
    if (!vals) return PyErr_NoMemory();
    int i = 0;
    for (; i < c->nfeeds; i++) {
        vals[i] = PyDict_GetItemWithError(fd, PyTuple_GET_ITEM(c->feed_keys, i));
        if (!vals[i]) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "a feed is missing");
            break;
        }
    }
    if (i == c->nfeeds) res = run_layout(c, vals, timeout_ms);
    if (vals != vbuf) PyMem_Free(vals);
    return res;
}

static PyMethodDef callable_methods[] = {
    {"run_dict", (PyCFunction)callable_run_dict, METH_VARARGS,
     "run_dict(feed_dict, timeout_ms=0): one step, the result in Session.run's structure"},
    {NULL, NULL, 0, NULL},
};

static PyObject *run_layout(CallableObject *c, PyObject *const *vals, long long timeout_ms);

/* run_fast(fetches, feed_dict, timeout_ms=0): Session.run for a signature seen before
 * (cache_put), all in C; NotImplemented when it is new. */
static PyObject *session_run_fast(SessionObject *so, PyObject *args)
{
    PyObject *fetches, *fd;
    long long timeout_ms = 0;
    if (!PyArg_ParseTuple(args, "OO|L", &fetches, &fd, &timeout_ms)) return NULL;
    int kind = PyList_CheckExact(fetches) ? 0 : PyTuple_CheckExact(fetches) ? 1 : 2;
    Py_ssize_t n = kind == 2 ? 1 : PySequence_Fast_GET_SIZE(fetches);
    PyObject **items = kind == 2 ? &fetches : PySequence_Fast_ITEMS(fetches);
    Py_ssize_t nk = fd == Py_None ? 0 : PyDict_Check(fd) ? PyDict_GET_SIZE(fd) : -1;
    for (int e = 0; nk >= 0 && e < so->nfast; e++) {
        fast_entry *f = &so->fast[e];
        if (f->kind != kind || PyTuple_GET_SIZE(f->elems) != n || PyTuple_GET_SIZE(f->keys) != nk)
            continue;
        bool same = true;
        for (Py_ssize_t i = 0; same && i < n; i++) same = PyTuple_GET_ITEM(f->elems, i) == items[i];
        /* the keys in the dict's order, the same objects as before: their values are the feeds */
        PyObject *vbuf[16], **vals = nk > 16 ? PyMem_Calloc((size_t)nk, sizeof *vals) : vbuf;
        if (!vals) return PyErr_NoMemory();
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *v;
        while (same && nk && PyDict_Next(fd, &pos, &k, &v)) {
            same = PyTuple_GET_ITEM(f->keys, i) == k;
            vals[i++] = v;
        }
        PyObject *res = same ? run_layout((CallableObject *)f->callable, vals, timeout_ms) : NULL;
        if (vals != vbuf) PyMem_Free(vals);
        if (same) return res;
    }
    Py_RETURN_NOTIMPLEMENTED;
}

/* cache_put(fetches, feed_keys, callable): remembers a signature for run_fast. */
static PyObject *session_cache_put(SessionObject *so, PyObject *args)
{
    PyObject *fetches, *keys, *callable;
    if (!PyArg_ParseTuple(args, "OO!O!", &fetches, &PyTuple_Type, &keys, &CallableType, &callable))
        return NULL;
    int kind = PyList_CheckExact(fetches) ? 0 : PyTuple_CheckExact(fetches) ? 1 : 2;
    PyObject *elems = kind == 2 ? PyTuple_Pack(1, fetches) : PySequence_Tuple(fetches);
    if (!elems) return NULL;
    int slot = so->nfast < FAST_MAX ? so->nfast++ : so->next_evict++ % FAST_MAX;
    fast_entry *f = &so->fast[slot];
    Py_XDECREF(f->elems);
    Py_XDECREF(f->keys);
    Py_XDECREF(f->callable);
    Py_INCREF(keys);
    Py_INCREF(callable);
    f->kind = kind, f->elems = elems, f->keys = keys, f->callable = callable;
    Py_RETURN_NONE;
}

static PyMethodDef session_methods[] = {
    {"run_fast", (PyCFunction)session_run_fast, METH_VARARGS,
     "run_fast(fetches, feed_dict): a step of a known signature, or NotImplemented"},
    {"cache_put", (PyCFunction)session_cache_put, METH_VARARGS,
     "cache_put(fetches, feed_keys, callable): a signature for run_fast"},
    {"make_callable", (PyCFunction)session_make_callable, METH_VARARGS,
     "make_callable(fetches, feeds, targets) -> Callable(*feed_values) -> [ndarray]"},
    {"close", (PyCFunction)session_close, METH_NOARGS, "Frees the session."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Session(graph, options={}): a rill session.",
    .tp_new = session_new,
    .tp_dealloc = (destructor)session_dealloc,
    .tp_methods = session_methods,
};

static PyTypeObject CallableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Callable",
    .tp_basicsize = sizeof(CallableObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One step of a session for fixed feeds, fetches and targets.",
    .tp_dealloc = (destructor)callable_dealloc,
    .tp_call = (ternaryfunc)callable_call,
    .tp_methods = callable_methods,
};

/* --- Server --- */

typedef struct {
    PyObject_HEAD rill_server *srv;
} ServerObject;

static PyObject *server_create_local(PyTypeObject *type, PyObject *unused)
{
    (void)unused;
    rill_status *s = rill_status_new();
    rill_server *srv;
    Py_BEGIN_ALLOW_THREADS
    srv = rill_server_create_local(s);
    Py_END_ALLOW_THREADS
    if (!srv) {
        raise_status(s);
        rill_status_free(s);
        return NULL;
    }
    rill_status_free(s);
    ServerObject *o = (ServerObject *)type->tp_alloc(type, 0);
    if (!o) {
        rill_server_free(srv);
        return NULL;
    }
    o->srv = srv;
    return (PyObject *)o;
}

/* {job: [address, ...] or {task_index: address}} -> a new rill_cluster_spec, or NULL with the
 * error raised. */
static rill_cluster_spec *cluster_of(PyObject *spec)
{
    if (!PyDict_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "a cluster is a dict {job: [addresses] or {index: address}}");
        return NULL;
    }
    rill_cluster_spec *c = rill_cluster_spec_new();
    rill_status *s = rill_status_new();
    PyObject *job, *tasks;
    Py_ssize_t pos = 0;
    bool ok = true;
    while (ok && PyDict_Next(spec, &pos, &job, &tasks)) {
        const char *jn = PyUnicode_AsUTF8(job);
        if (!jn) {
            ok = false;
            break;
        }
        if (PyDict_Check(tasks)) {
            PyObject *k, *v;
            Py_ssize_t p2 = 0;
            while (ok && PyDict_Next(tasks, &p2, &k, &v)) {
                long idx = PyLong_AsLong(k);
                const char *addr = PyUnicode_AsUTF8(v);
                ok = !PyErr_Occurred() && addr &&
                     (rill_cluster_spec_add_task(c, jn, (int)idx, addr, s) || (raise_status(s), false));
            }
            continue;
        }
        PyObject *seq = PySequence_Fast(tasks, "a job's tasks are a list of addresses or a dict");
        if (!seq) {
            ok = false;
            break;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        const char **addrs = PyMem_Calloc((size_t)n + 1, sizeof *addrs);
        for (Py_ssize_t i = 0; ok && addrs && i < n; i++)
            ok = (addrs[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i))) != NULL;
        if (ok && addrs) ok = rill_cluster_spec_add_job(c, jn, addrs, (int)n, s) || (raise_status(s), false);
        PyMem_Free(addrs);
        Py_DECREF(seq);
    }
    rill_status_free(s);
    if (!ok) {
        rill_cluster_spec_free(c);
        return NULL;
    }
    return c;
}

/* Server.new(cluster, job_name, task_index, cluster_secret_file=None, encrypt=False,
 * run_id=None): this process's task of a cluster. */
static PyObject *server_new_task(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"cluster", "job_name", "task_index", "cluster_secret_file", "encrypt",
                            "run_id", NULL};
    PyObject *spec;
    const char *job, *secret_file = NULL, *run_id = NULL;
    int task, encrypt = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Osi|zpz", names, &spec, &job, &task, &secret_file,
                                     &encrypt, &run_id))
        return NULL;
    rill_status *s = rill_status_new();
    rill_server_options so = {0};
    char *secret = NULL;
    if (secret_file) {
        secret = rill_cluster_secret_read(secret_file, s);
        if (!secret) {
            raise_status(s);
            rill_status_free(s);
            return NULL;
        }
    }
    so.secret = secret;
    so.encrypt = encrypt != 0;
    so.run_id = run_id;
    rill_cluster_spec *c = cluster_of(spec);
    if (!c) {
        free(secret);
        rill_status_free(s);
        return NULL;
    }
    rill_server *srv;
    Py_BEGIN_ALLOW_THREADS
    srv = rill_server_new(c, job, task, &so, s);
    Py_END_ALLOW_THREADS
    free(secret);
    rill_cluster_spec_free(c);
    if (!srv) {
        raise_status(s);
        rill_status_free(s);
        return NULL;
    }
    rill_status_free(s);
    ServerObject *o = (ServerObject *)type->tp_alloc(type, 0);
    if (!o) {
        rill_server_free(srv);
        return NULL;
    }
    o->srv = srv;
    return (PyObject *)o;
}

static void server_dealloc(ServerObject *o)
{
    if (o->srv) {
        rill_server *srv = o->srv;
        o->srv = NULL;
        Py_BEGIN_ALLOW_THREADS
        rill_server_free(srv);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *server_get_target(ServerObject *o, void *c)
{
    (void)c;
    return PyUnicode_FromString(rill_server_target(o->srv));
}

static PyObject *server_join(ServerObject *o, PyObject *unused)
{
    (void)unused;
    rill_status *s = rill_status_new();
    rill_code code;
    Py_BEGIN_ALLOW_THREADS
    code = rill_server_join(o->srv, s);
    Py_END_ALLOW_THREADS
    return none_or_raise(code, s);
}

/* Server.report_finished(): tells every ps task this training task is done (rill_server_report_
 * finished); raises what did not reach them. */
static PyObject *server_report_finished(ServerObject *o, PyObject *unused)
{
    (void)unused;
    rill_status *s = rill_status_new();
    rill_code code;
    Py_BEGIN_ALLOW_THREADS
    code = rill_server_report_finished(o->srv, s);
    Py_END_ALLOW_THREADS
    return none_or_raise(code, s);
}

static PyObject *server_stop(ServerObject *o, PyObject *unused)
{
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    rill_server_stop(o->srv);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyGetSetDef server_getset[] = {
    {"target", (getter)server_get_target, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef server_methods[] = {
    {"create_local", (PyCFunction)server_create_local, METH_NOARGS | METH_CLASS,
     "An in-process server of a one-task cluster on a free loopback port."},
    {"new", (PyCFunction)(void (*)(void))server_new_task, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Server.new(cluster, job_name, task_index, cluster_secret_file=None, encrypt=False, "
     "run_id=None): this process's task of a cluster"},
    {"join", (PyCFunction)server_join, METH_NOARGS, "Blocks until the server stops."},
    {"stop", (PyCFunction)server_stop, METH_NOARGS, "Stops the server."},
    {"report_finished", (PyCFunction)server_report_finished, METH_NOARGS,
     "Tells every ps task that this worker finished training."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ServerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Server",
    .tp_basicsize = sizeof(ServerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A rill server.",
    .tp_dealloc = (destructor)server_dealloc,
    .tp_getset = server_getset,
    .tp_methods = server_methods,
};

/* --- Optimizer --- */

typedef struct {
    PyObject_HEAD rill_optimizer *o;
} OptimizerObject;

/* Optimizer(kind, learning_rate, a=0, b=0, eps=0, nesterov=False, c=0, d=0, e=0): "sgd";
 * "momentum" (a: the momentum); "adam" (a, b: beta1, beta2; eps); "adagrad" (a: the initial
 * accumulator value); "rmsprop" (a, b: decay, momentum; eps; nesterov: centered); "adadelta"
 * (a: rho; eps); "ftrl" (a: learning_rate_power, b: initial accumulator, eps: beta, c, d: l1,
 * l2, e: l2 shrinkage); "proximal_adagrad" (a: initial accumulator, c, d: l1, l2);
 * "proximal_sgd" (c, d: l1, l2); "adagrad_da" (a: initial squared accumulator, c, d: l1, l2,
 * step: (graph, (Op, index)) of the global step). */
static PyObject *optimizer_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)kw;
    const char *kind;
    double lr, a = 0, b = 0, eps = 0, c = 0, d = 0, e = 0;
    int nesterov = 0;
    PyObject *step = NULL; /* "adagrad_da": (graph, (Op, index)) of the global step */
    if (!PyArg_ParseTuple(args, "sd|dddpdddO", &kind, &lr, &a, &b, &eps, &nesterov, &c, &d, &e,
                          &step))
        return NULL;
    rill_optimizer *o = NULL;
    if (strcmp(kind, "adagrad_da") == 0) {
        PyObject *graph, *out;
        rill_output so;
        if (!step || !PyArg_ParseTuple(step, "O!O;step is (graph, (Op, index))", &GraphType,
                                       &graph, &out))
            return step ? NULL : PyErr_Format(PyExc_ValueError, "adagrad_da needs a global step");
        if (output_of((GraphObject *)graph, out, &so) < 0) return NULL;
        o = rill_adagrad_da_optimizer_new(lr, so, a, c, d);
    } else if (strcmp(kind, "sgd") == 0)
        o = rill_gradient_descent_optimizer_new(lr);
    else if (strcmp(kind, "momentum") == 0)
        o = rill_momentum_optimizer_new(lr, a, nesterov);
    else if (strcmp(kind, "adam") == 0)
        o = rill_adam_optimizer_new(lr, a, b, eps);
    else if (strcmp(kind, "adagrad") == 0) {
        if (!(o = rill_adagrad_optimizer_new(lr, a))) {
            PyObject *v = PyFloat_FromDouble(a);
            if (v) PyErr_Format(PyExc_ValueError, "initial_accumulator_value must be positive: %R", v);
            Py_XDECREF(v);
            return NULL;
        }
    } else if (strcmp(kind, "rmsprop") == 0)
        o = rill_rmsprop_optimizer_new(lr, a, b, eps, nesterov);
    else if (strcmp(kind, "adadelta") == 0)
        o = rill_adadelta_optimizer_new(lr, a, eps);
    else if (strcmp(kind, "ftrl") == 0 || strcmp(kind, "proximal_adagrad") == 0) {
        o = kind[0] == 'f' ? rill_ftrl_optimizer_new(lr, a, b, c, d, e, eps)
                           : rill_proximal_adagrad_optimizer_new(lr, a, c, d);
        if (!o) return PyErr_Format(PyExc_ValueError, "invalid %s optimizer arguments", kind);
    } else if (strcmp(kind, "proximal_sgd") == 0)
        o = rill_proximal_gradient_descent_optimizer_new(lr, c, d);
    else
        return PyErr_Format(PyExc_ValueError, "unknown optimizer '%s'", kind);
    OptimizerObject *self = (OptimizerObject *)type->tp_alloc(type, 0);
    if (!self) {
        rill_optimizer_free(o);
        return NULL;
    }
    self->o = o;
    return (PyObject *)self;
}

static void optimizer_dealloc(OptimizerObject *self)
{
    rill_optimizer_free(self->o);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Outputs of a sequence of (Op, index); *n set. NULL on error. */
static rill_output *outputs_of(GraphObject *g, PyObject *seqobj, int *n)
{
    PyObject *seq = PySequence_Fast(seqobj, "a sequence of (Op, index)");
    if (!seq) return NULL;
    *n = (int)PySequence_Fast_GET_SIZE(seq);
    rill_output *out = PyMem_Calloc((size_t)*n + 1, sizeof *out);
    for (int i = 0; out && i < *n; i++)
        if (output_of(g, PySequence_Fast_GET_ITEM(seq, i), &out[i]) < 0) {
            PyMem_Free(out);
            out = NULL;
        }
    Py_DECREF(seq);
    return out;
}

/* compute_gradients(graph, loss, var_list or None) -> [(grad or None, var)] */
static PyObject *optimizer_compute_gradients(OptimizerObject *self, PyObject *args)
{
    PyObject *graph, *loss, *vars = Py_None;
    if (!PyArg_ParseTuple(args, "O!O|O", &GraphType, &graph, &loss, &vars)) return NULL;
    GraphObject *g = (GraphObject *)graph;
    rill_output l, *vl = NULL;
    int nv = 0;
    if (output_of(g, loss, &l) < 0) return NULL;
    if (vars != Py_None && !(vl = outputs_of(g, vars, &nv))) return NULL;
    int cap = nv > 0 ? nv : rill_graph_trainable_variables(g->g, NULL, 0);
    rill_grad_and_var *gv = PyMem_Calloc((size_t)cap + 1, sizeof *gv);
    int n = gv ? rill_optimizer_compute_gradients(self->o, g->g, l, vl, nv, gv, cap) : -1;
    PyMem_Free(vl);
    if (n >= 0 && PyErr_Occurred()) { /* the gradient hook raised */
        PyMem_Free(gv);
        return NULL;
    }
    if (n < 0) {
        PyMem_Free(gv);
        if (!PyErr_Occurred()) {
            raise_status(rill_graph_status(g->g));
            rill_graph_clear_status(g->g);
        }
        return NULL;
    }
    PyObject *res = PyList_New(n);
    for (int i = 0; res && i < n; i++) {
        PyObject *grad, *var = op_new(g, gv[i].var.node);
        if (gv[i].grad.node) {
            PyObject *op = op_new(g, gv[i].grad.node);
            grad = op ? Py_BuildValue("(Ni)", op, gv[i].grad.index) : NULL;
        } else {
            Py_INCREF(Py_None);
            grad = Py_None;
        }
        PyObject *e = grad && var ? Py_BuildValue("(N(Ni))", grad, var, gv[i].var.index) : NULL;
        if (!e) {
            Py_CLEAR(res);
            break;
        }
        PyList_SET_ITEM(res, i, e);
    }
    PyMem_Free(gv);
    return res;
}

/* [(grad or None, var)] -> a PyMem array of n pairs (free with PyMem_Free), or NULL with the
 * error raised. */
static rill_grad_and_var *pairs_of(GraphObject *g, PyObject *pairs, int *n)
{
    PyObject *seq = PySequence_Fast(pairs, "a sequence of (grad, var)");
    if (!seq) return NULL;
    *n = (int)PySequence_Fast_GET_SIZE(seq);
    rill_grad_and_var *gv = PyMem_Calloc((size_t)*n + 1, sizeof *gv);
    int ok = gv != NULL;
    if (!ok) PyErr_NoMemory();
    for (int i = 0; ok && i < *n; i++) {
        PyObject *grad, *var;
        ok = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OO;a (grad, var) pair", &grad,
                              &var) &&
             (grad == Py_None || output_of(g, grad, &gv[i].grad) == 0) &&
             output_of(g, var, &gv[i].var) == 0;
    }
    Py_DECREF(seq);
    if (!ok) {
        PyMem_Free(gv);
        gv = NULL;
    }
    return gv;
}

/* apply_gradients(graph, [(grad or None, var)], global_step or None, name=None) -> Op */
static PyObject *optimizer_apply_gradients(OptimizerObject *self, PyObject *args)
{
    PyObject *graph, *pairs, *gs = Py_None;
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "O!O|Oz", &GraphType, &graph, &pairs, &gs, &name)) return NULL;
    GraphObject *g = (GraphObject *)graph;
    int n;
    rill_grad_and_var *gv = pairs_of(g, pairs, &n);
    rill_output step = {NULL, 0};
    int ok = gv != NULL;
    if (ok && gs != Py_None) ok = output_of(g, gs, &step) == 0;
    PyObject *res = NULL;
    if (ok) res = node_or_raise(g, rill_optimizer_apply_gradients(self->o, g->g, gv, n, step, name));
    PyMem_Free(gv);
    return res;
}

static PyObject *optimizer_set_learning_rate(OptimizerObject *self, PyObject *args)
{
    PyObject *graph, *lr;
    if (!PyArg_ParseTuple(args, "O!O", &GraphType, &graph, &lr)) return NULL;
    rill_output o;
    if (output_of((GraphObject *)graph, lr, &o) < 0) return NULL;
    rill_optimizer_set_learning_rate_tensor(self->o, o);
    Py_RETURN_NONE;
}

static PyMethodDef optimizer_methods[] = {
    {"compute_gradients", (PyCFunction)optimizer_compute_gradients, METH_VARARGS,
     "compute_gradients(graph, loss, var_list=None) -> [(grad or None, var)]"},
    {"apply_gradients", (PyCFunction)optimizer_apply_gradients, METH_VARARGS,
     "apply_gradients(graph, pairs, global_step=None, name=None) -> Op"},
    {"set_learning_rate_tensor", (PyCFunction)optimizer_set_learning_rate, METH_VARARGS,
     "set_learning_rate_tensor(graph, (Op, index)): the rate from a scalar tensor"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OptimizerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Optimizer",
    .tp_basicsize = sizeof(OptimizerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Optimizer(kind, learning_rate, a=0, b=0, eps=0, nesterov=False)",
    .tp_new = optimizer_new,
    .tp_dealloc = (destructor)optimizer_dealloc,
    .tp_methods = optimizer_methods,
};

/* --- Saver and checkpoint state --- */

typedef struct {
    PyObject_HEAD GraphObject *graph;
    rill_saver *sv;
} SaverObject;

/* Saver(graph, var_list or None, max_to_keep=5, keep_checkpoint_every_n_hours=10000) */
static PyObject *saver_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)kw;
    PyObject *graph, *vars = Py_None, *keys = Py_None;
    int keep = 5;
    double hours = 10000;
    if (!PyArg_ParseTuple(args, "O!|OidO", &GraphType, &graph, &vars, &keep, &hours, &keys))
        return NULL;
    GraphObject *g = (GraphObject *)graph;
    rill_output *vl = NULL;
    int nv = 0;
    if (vars != Py_None && !(vl = outputs_of(g, vars, &nv))) return NULL;
    /* keys: the checkpoint name of each variable (a {name: variable} var_list) */
    const char **kv = NULL;
    PyObject *kseq = NULL;
    if (keys != Py_None) {
        kseq = PySequence_Fast(keys, "keys are a sequence of str");
        if (!kseq || PySequence_Fast_GET_SIZE(kseq) != nv) {
            if (kseq) PyErr_SetString(PyExc_ValueError, "one key per variable");
            Py_XDECREF(kseq);
            PyMem_Free(vl);
            return NULL;
        }
        kv = PyMem_Calloc((size_t)nv + 1, sizeof *kv);
        for (int i = 0; kv && i < nv; i++)
            if (!(kv[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(kseq, i)))) {
                PyMem_Free(kv);
                Py_DECREF(kseq);
                PyMem_Free(vl);
                return NULL;
            }
    }
    rill_status *s = rill_status_new();
    rill_saver *sv = rill_saver_new_named(g->g, vl, kv, nv, keep, hours, s);
    PyMem_Free(kv);
    Py_XDECREF(kseq);
    PyMem_Free(vl);
    if (!sv) {
        raise_status(s);
        rill_status_free(s);
        rill_graph_clear_status(g->g);
        return NULL;
    }
    rill_status_free(s);
    SaverObject *self = (SaverObject *)type->tp_alloc(type, 0);
    if (!self) {
        rill_saver_free(sv);
        return NULL;
    }
    Py_INCREF(graph);
    self->graph = g;
    self->sv = sv;
    return (PyObject *)self;
}

static void saver_dealloc(SaverObject *self)
{
    rill_saver_free(self->sv);
    Py_XDECREF(self->graph);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* save(session, save_path, global_step=-1) -> the checkpoint's prefix */
static PyObject *saver_save(SaverObject *self, PyObject *args)
{
    PyObject *sess;
    const char *path;
    long long step = -1;
    if (!PyArg_ParseTuple(args, "O!s|L", &SessionType, &sess, &path, &step)) return NULL;
    if (!((SessionObject *)sess)->sess)
        return PyErr_Format(PyExc_RuntimeError, "Attempted to use a closed Session.");
    char prefix[4096];
    rill_status *s = rill_status_new();
    rill_code code;
    Py_BEGIN_ALLOW_THREADS
    code = rill_saver_save(self->sv, ((SessionObject *)sess)->sess, path, step, prefix,
                           sizeof prefix, s);
    Py_END_ALLOW_THREADS
    PyObject *res = code == RILL_OK ? PyUnicode_FromString(prefix) : raise_status(s);
    rill_status_free(s);
    return res;
}

static PyObject *saver_restore(SaverObject *self, PyObject *args)
{
    PyObject *sess;
    const char *prefix;
    if (!PyArg_ParseTuple(args, "O!s", &SessionType, &sess, &prefix)) return NULL;
    if (!((SessionObject *)sess)->sess)
        return PyErr_Format(PyExc_RuntimeError, "Attempted to use a closed Session.");
    rill_status *s = rill_status_new();
    rill_code code;
    Py_BEGIN_ALLOW_THREADS
    code = rill_saver_restore(self->sv, ((SessionObject *)sess)->sess, prefix, s);
    Py_END_ALLOW_THREADS
    return none_or_raise(code, s);
}

static PyObject *saver_last_checkpoints(SaverObject *self, PyObject *unused)
{
    (void)unused;
    const char *paths[256];
    int n = rill_saver_last_checkpoints(self->sv, paths, 256);
    if (n > 256) n = 256;
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) PyList_SET_ITEM(l, i, PyUnicode_FromString(paths[i]));
    return l;
}

static PyMethodDef saver_methods[] = {
    {"save", (PyCFunction)saver_save, METH_VARARGS,
     "save(session, save_path, global_step=-1) -> prefix"},
    {"restore", (PyCFunction)saver_restore, METH_VARARGS, "restore(session, prefix)"},
    {"last_checkpoints", (PyCFunction)saver_last_checkpoints, METH_NOARGS,
     "The kept checkpoints, oldest first."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SaverType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Saver",
    .tp_basicsize = sizeof(SaverObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Saver(graph, var_list=None, max_to_keep=5, keep_checkpoint_every_n_hours=1e4)",
    .tp_new = saver_new,
    .tp_dealloc = (destructor)saver_dealloc,
    .tp_methods = saver_methods,
};

/* --- SummaryWriter (tf.summary.FileWriter's file) --- */

typedef struct {
    PyObject_HEAD rill_summary_writer *w;
} WriterObject;

/* SummaryWriter(logdir, filename_suffix=None) */
static PyObject *writer_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)kw;
    const char *logdir, *suffix = NULL;
    if (!PyArg_ParseTuple(args, "s|z", &logdir, &suffix)) return NULL;
    rill_status *s = rill_status_new();
    rill_summary_writer *w;
    Py_BEGIN_ALLOW_THREADS
    w = rill_summary_writer_new(logdir, suffix, s);
    Py_END_ALLOW_THREADS
    if (!w) {
        raise_status(s);
        rill_status_free(s);
        return NULL;
    }
    rill_status_free(s);
    WriterObject *self = (WriterObject *)type->tp_alloc(type, 0);
    if (!self) {
        rill_summary_writer_free(w);
        return NULL;
    }
    self->w = w;
    return (PyObject *)self;
}

static void writer_dealloc(WriterObject *self)
{
    rill_summary_writer_free(self->w);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static bool writer_open(WriterObject *self)
{
    if (self->w) return true;
    PyErr_SetString(PyExc_RuntimeError, "the summary writer is closed");
    return false;
}

/* add_summary(serialized Summary bytes, step or -1) */
static PyObject *writer_add_summary(WriterObject *self, PyObject *args)
{
    PyObject *summary;
    long long step = -1;
    if (!PyArg_ParseTuple(args, "O|L", &summary, &step) || !writer_open(self)) return NULL;
    rill_tensor *t = tensor_of(summary, RILL_STRING);
    if (!t) return NULL;
    rill_status *s = rill_status_new();
    bool ok = rill_summary_writer_add_summary(self->w, t, step < 0 ? 0 : step, s);
    rill_tensor_free(t);
    return none_or_raise(ok ? RILL_OK : rill_status_code(s), s);
}

/* add_session_log(status 1..3, checkpoint_path or None, step or -1) */
static PyObject *writer_add_session_log(WriterObject *self, PyObject *args)
{
    int st;
    const char *path = NULL;
    long long step = -1;
    if (!PyArg_ParseTuple(args, "iz|L", &st, &path, &step) || !writer_open(self)) return NULL;
    rill_status *s = rill_status_new();
    bool ok = rill_summary_writer_add_session_log(self->w, (rill_session_log_status)st, path,
                                                  step, s);
    return none_or_raise(ok ? RILL_OK : rill_status_code(s), s);
}

static PyObject *writer_add_graph(WriterObject *self, PyObject *graph)
{
    if (!PyObject_TypeCheck(graph, &GraphType))
        return PyErr_Format(PyExc_TypeError, "add_graph needs a rill Graph, got %R", graph);
    if (!writer_open(self)) return NULL;
    rill_status *s = rill_status_new();
    bool ok = rill_summary_writer_add_graph(self->w, ((GraphObject *)graph)->g, s);
    return none_or_raise(ok ? RILL_OK : rill_status_code(s), s);
}

static PyObject *writer_flush(WriterObject *self, PyObject *unused)
{
    (void)unused;
    if (!writer_open(self)) return NULL;
    rill_status *s = rill_status_new();
    bool ok;
    Py_BEGIN_ALLOW_THREADS
    ok = rill_summary_writer_flush(self->w, s);
    Py_END_ALLOW_THREADS
    return none_or_raise(ok ? RILL_OK : rill_status_code(s), s);
}

/* close(): flushes and closes; later calls but close raise. */
static PyObject *writer_close(WriterObject *self, PyObject *unused)
{
    (void)unused;
    rill_summary_writer *w = self->w;
    self->w = NULL;
    Py_BEGIN_ALLOW_THREADS
    rill_summary_writer_free(w);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *writer_path(WriterObject *self, PyObject *unused)
{
    (void)unused;
    if (!writer_open(self)) return NULL;
    return PyUnicode_FromString(rill_summary_writer_path(self->w));
}

static PyMethodDef writer_methods[] = {
    {"add_summary", (PyCFunction)writer_add_summary, METH_VARARGS,
     "add_summary(serialized Summary, step=-1)"},
    {"add_session_log", (PyCFunction)writer_add_session_log, METH_VARARGS,
     "add_session_log(status, checkpoint_path, step=-1)"},
    {"add_graph", (PyCFunction)writer_add_graph, METH_O, "add_graph(Graph)"},
    {"flush", (PyCFunction)writer_flush, METH_NOARGS, "Writes what is buffered; fsyncs."},
    {"close", (PyCFunction)writer_close, METH_NOARGS, "Flushes and closes the file."},
    {"path", (PyCFunction)writer_path, METH_NOARGS, "The event file being written."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.SummaryWriter",
    .tp_basicsize = sizeof(WriterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SummaryWriter(logdir, filename_suffix=None): a TensorBoard event file",
    .tp_new = writer_new,
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_methods = writer_methods,
};

/* get_checkpoint_state(dir) -> (model_checkpoint_path, [all paths]) or None */
static PyObject *get_checkpoint_state(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *dir = PyUnicode_AsUTF8(arg);
    if (!dir) return NULL;
    rill_status *s = rill_status_new();
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    PyObject *res = NULL;
    if (!st && rill_status_code(s) != RILL_OK) {
        raise_status(s);
    } else if (!st) {
        Py_INCREF(Py_None);
        res = Py_None;
    } else {
        PyObject *all = PyList_New(st->num_all_model_checkpoint_paths);
        for (int i = 0; all && i < st->num_all_model_checkpoint_paths; i++)
            PyList_SET_ITEM(all, i, PyUnicode_FromString(st->all_model_checkpoint_paths[i]));
        res = all ? Py_BuildValue("(sN)", st->model_checkpoint_path, all) : NULL;
    }
    rill_checkpoint_state_free(st);
    rill_status_free(s);
    return res;
}

static PyObject *latest_checkpoint(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *dir = PyUnicode_AsUTF8(arg);
    if (!dir) return NULL;
    char buf[4096];
    if (!rill_latest_checkpoint(dir, buf, sizeof buf)) Py_RETURN_NONE;
    return PyUnicode_FromString(buf);
}

/* --- SyncReplicasOptimizer --- */

typedef struct {
    PyObject_HEAD OptimizerObject *opt; /* kept: the C object borrows it */
    rill_sync_replicas_optimizer *o;
} SyncObject;

static PyTypeObject SyncType;

/* SyncReplicas(optimizer, replicas_to_aggregate, total_num_replicas) */
static PyObject *sync_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)kw;
    PyObject *opt;
    int agg, total = 0;
    if (!PyArg_ParseTuple(args, "O!i|i", &OptimizerType, &opt, &agg, &total)) return NULL;
    rill_sync_replicas_optimizer *o =
        rill_sync_replicas_optimizer_new(((OptimizerObject *)opt)->o, agg, total);
    if (!o) return PyErr_Format(PyExc_ValueError, "replicas_to_aggregate must be positive");
    SyncObject *self = (SyncObject *)type->tp_alloc(type, 0);
    if (!self) {
        rill_sync_replicas_optimizer_free(o);
        return NULL;
    }
    Py_INCREF(opt);
    self->opt = (OptimizerObject *)opt;
    self->o = o;
    return (PyObject *)self;
}

static void sync_dealloc(SyncObject *self)
{
    rill_sync_replicas_optimizer_free(self->o);
    Py_XDECREF(self->opt);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *sync_apply_gradients(SyncObject *self, PyObject *args)
{
    PyObject *graph, *pairs, *gs;
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "O!OO|z", &GraphType, &graph, &pairs, &gs, &name)) return NULL;
    GraphObject *g = (GraphObject *)graph;
    int n;
    rill_grad_and_var *gv = pairs_of(g, pairs, &n);
    rill_output step = {NULL, 0};
    int ok = gv != NULL;
    if (ok && gs != Py_None) ok = output_of(g, gs, &step) == 0;
    PyObject *res = NULL;
    if (ok)
        res = node_or_raise(g, rill_sync_replicas_apply_gradients(self->o, g->g, gv, n, step, name));
    PyMem_Free(gv);
    return res;
}

/* op(graph, which[, num_tokens]): "init_tokens", "chief_queue_runner", "chief_init",
 * "local_step_init" -> Op */
static PyObject *sync_op(SyncObject *self, PyObject *args)
{
    PyObject *graph;
    const char *which;
    int tokens = -1;
    if (!PyArg_ParseTuple(args, "O!s|i", &GraphType, &graph, &which, &tokens)) return NULL;
    GraphObject *g = (GraphObject *)graph;
    rill_status *s = rill_status_new();
    rill_node *n = NULL;
    if (strcmp(which, "init_tokens") == 0)
        n = rill_sync_replicas_get_init_tokens_op(self->o, tokens, s);
    else if (strcmp(which, "chief_queue_runner") == 0)
        n = rill_sync_replicas_chief_queue_runner_op(self->o, s);
    else if (strcmp(which, "chief_init") == 0)
        n = rill_sync_replicas_chief_init_op(self->o);
    else if (strcmp(which, "local_step_init") == 0)
        n = rill_sync_replicas_local_step_init_op(self->o);
    else {
        rill_status_free(s);
        return PyErr_Format(PyExc_ValueError, "no sync op '%s'", which);
    }
    PyObject *res;
    if (rill_status_code(s) != RILL_OK)
        res = raise_status(s);
    else
        res = node_or_raise(g, n);
    rill_status_free(s);
    return res;
}

static PyMethodDef sync_methods[] = {
    {"apply_gradients", (PyCFunction)sync_apply_gradients, METH_VARARGS,
     "apply_gradients(graph, pairs, global_step, name=None) -> Op"},
    {"op", (PyCFunction)sync_op, METH_VARARGS, "op(graph, which[, num_tokens]) -> Op"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SyncType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.SyncReplicas",
    .tp_basicsize = sizeof(SyncObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SyncReplicas(optimizer, replicas_to_aggregate, total_num_replicas=0)",
    .tp_new = sync_new,
    .tp_dealloc = (destructor)sync_dealloc,
    .tp_methods = sync_methods,
};

/* --- Supervisor --- */

typedef struct {
    PyObject_HEAD GraphObject *graph;
    PyObject *saver; /* kept: the supervisor borrows it */
    PyObject *server; /* the Server its sessions run on (freed after the supervisor, whose last
                       * checkpoint needs it) */
    rill_supervisor *sv;
} SupervisorObject;

static PyTypeObject SupervisorType;

static rill_node *opt_op(PyObject *opts, const char *key)
{
    PyObject *o = PyDict_GetItemString(opts, key);
    return o && PyObject_TypeCheck(o, &OpType) ? ((OpObject *)o)->n : NULL;
}

static double opt_double(PyObject *opts, const char *key, double def)
{
    PyObject *o = PyDict_GetItemString(opts, key);
    double v = o && o != Py_None ? PyFloat_AsDouble(o) : def;
    if (PyErr_Occurred()) PyErr_Clear(), v = def;
    return v;
}

/* Supervisor(graph, {is_chief, logdir, init_op, local_init_op, ready_op,
 * ready_for_local_init_op, saver (Saver, or
 * False for none), summary_op (False: none), global_step ((Op, index)), save_model_secs,
 * save_summaries_secs, recovery_wait_secs, max_wait_secs, restore_over_live, prepare_only}) */
static PyObject *supervisor_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)kw;
    PyObject *graph, *opts;
    if (!PyArg_ParseTuple(args, "O!O!", &GraphType, &graph, &PyDict_Type, &opts)) return NULL;
    GraphObject *g = (GraphObject *)graph;
    rill_supervisor_options o = RILL_SUPERVISOR_OPTIONS_INIT;
    PyObject *v;
    if ((v = PyDict_GetItemString(opts, "is_chief"))) o.is_chief = PyObject_IsTrue(v) == 1;
    const char *logdir = NULL;
    if ((v = PyDict_GetItemString(opts, "logdir")) && v != Py_None && !(logdir = PyUnicode_AsUTF8(v)))
        return NULL;
    o.logdir = logdir;
    o.init_op = opt_op(opts, "init_op");
    o.local_init_op = opt_op(opts, "local_init_op");
    o.ready_op = opt_op(opts, "ready_op");
    o.ready_for_local_init_op = opt_op(opts, "ready_for_local_init_op");
    PyObject *saver = PyDict_GetItemString(opts, "saver");
    if (saver && PyObject_TypeCheck(saver, &SaverType))
        o.saver = ((SaverObject *)saver)->sv;
    else if (saver == Py_False)
        o.no_saver = true;
    if ((v = PyDict_GetItemString(opts, "summary_op")) == Py_False) o.no_summary_op = true;
    if ((v = PyDict_GetItemString(opts, "global_step")) && v != Py_None &&
        output_of(g, v, &o.global_step) < 0)
        return NULL;
    o.save_model_secs = opt_double(opts, "save_model_secs", o.save_model_secs);
    o.save_summaries_secs = opt_double(opts, "save_summaries_secs", o.save_summaries_secs);
    o.recovery_wait_secs = opt_double(opts, "recovery_wait_secs", o.recovery_wait_secs);
    o.max_wait_secs = opt_double(opts, "max_wait_secs", o.max_wait_secs);
    if ((v = PyDict_GetItemString(opts, "restore_over_live")))
        o.restore_over_live = PyObject_IsTrue(v) == 1;
    if ((v = PyDict_GetItemString(opts, "prepare_only"))) o.prepare_only = PyObject_IsTrue(v) == 1;
    rill_status *s = rill_status_new();
    rill_supervisor *sv = rill_supervisor_new(g->g, &o, s);
    if (!sv) {
        raise_status(s);
        rill_status_free(s);
        rill_graph_clear_status(g->g);
        return NULL;
    }
    rill_status_free(s);
    SupervisorObject *self = (SupervisorObject *)type->tp_alloc(type, 0);
    if (!self) {
        rill_supervisor_free(sv);
        return NULL;
    }
    Py_INCREF(graph);
    self->graph = g;
    Py_XINCREF(saver);
    self->saver = saver;
    self->sv = sv;
    return (PyObject *)self;
}

static void supervisor_dealloc(SupervisorObject *self)
{
    if (self->sv) {
        rill_supervisor *sv = self->sv;
        self->sv = NULL;
        Py_BEGIN_ALLOW_THREADS
        rill_supervisor_free(sv);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(self->server);
    Py_XDECREF(self->saver);
    Py_XDECREF(self->graph);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* prepare_or_wait_for_session(session options) -> Session (which keeps the supervisor) */
static PyObject *supervisor_prepare(SupervisorObject *self, PyObject *arg)
{
    if (!PyDict_Check(arg)) return PyErr_Format(PyExc_TypeError, "session options are a dict");
    rill_session_options *o = session_options_of(arg);
    if (!o) return NULL;
    PyObject *server = PyDict_GetItemString(arg, "server");
    if (server && server != Py_None && !self->server) {
        Py_INCREF(server);
        self->server = server;
    }
    rill_status *s = rill_status_new();
    rill_session *sess;
    Py_BEGIN_ALLOW_THREADS
    sess = rill_supervisor_prepare_or_wait_for_session(self->sv, o, s);
    Py_END_ALLOW_THREADS
    rill_session_options_free(o);
    PyObject *res = sess ? session_wrap(&SessionType, self->graph, sess, (PyObject *)self)
                         : raise_status(s);
    rill_status_free(s);
    return res;
}

static PyObject *supervisor_start_queue_runner(SupervisorObject *self, PyObject *args)
{
    PyObject *sess, *op;
    if (!PyArg_ParseTuple(args, "O!O!", &SessionType, &sess, &OpType, &op)) return NULL;
    rill_status *s = rill_status_new();
    rill_code code = rill_supervisor_start_queue_runner(self->sv, ((SessionObject *)sess)->sess,
                                                        ((OpObject *)op)->n, s);
    return none_or_raise(code, s);
}

static PyObject *supervisor_should_stop(SupervisorObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(rill_supervisor_should_stop(self->sv));
}

static PyObject *supervisor_request_stop(SupervisorObject *self, PyObject *unused)
{
    (void)unused;
    rill_supervisor_request_stop(self->sv, NULL);
    Py_RETURN_NONE;
}

static PyObject *supervisor_stop(SupervisorObject *self, PyObject *unused)
{
    (void)unused;
    rill_status *s = rill_status_new();
    rill_code code;
    Py_BEGIN_ALLOW_THREADS
    code = rill_supervisor_stop(self->sv, s);
    Py_END_ALLOW_THREADS
    return none_or_raise(code, s);
}

/* summary_computed(session unused, summary bytes tensor value, step) */
static PyObject *supervisor_summary_computed(SupervisorObject *self, PyObject *args)
{
    PyObject *summary;
    long long step;
    if (!PyArg_ParseTuple(args, "OL", &summary, &step)) return NULL;
    rill_tensor *t = tensor_of(summary, RILL_STRING);
    if (!t) return NULL;
    rill_status *s = rill_status_new();
    rill_code code = rill_supervisor_summary_computed(self->sv, t, step, s);
    rill_tensor_free(t);
    return none_or_raise(code, s);
}

static PyMethodDef supervisor_methods[] = {
    {"prepare_or_wait_for_session", (PyCFunction)supervisor_prepare, METH_O,
     "prepare_or_wait_for_session(session options) -> Session"},
    {"start_queue_runner", (PyCFunction)supervisor_start_queue_runner, METH_VARARGS,
     "start_queue_runner(session, op)"},
    {"should_stop", (PyCFunction)supervisor_should_stop, METH_NOARGS, ""},
    {"request_stop", (PyCFunction)supervisor_request_stop, METH_NOARGS, ""},
    {"stop", (PyCFunction)supervisor_stop, METH_NOARGS, ""},
    {"summary_computed", (PyCFunction)supervisor_summary_computed, METH_VARARGS,
     "summary_computed(summary, step)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SupervisorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._rill.Supervisor",
    .tp_basicsize = sizeof(SupervisorObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Supervisor(graph, options)",
    .tp_new = supervisor_new,
    .tp_dealloc = (destructor)supervisor_dealloc,
    .tp_methods = supervisor_methods,
};

/* summary(graph, kind, name, input): "scalar", "histogram" -> Op; merge_all(graph, name) */
static PyObject *graph_summary(GraphObject *g, PyObject *args)
{
    const char *kind, *name;
    PyObject *in;
    if (!PyArg_ParseTuple(args, "ssO", &kind, &name, &in)) return NULL;
    rill_output o;
    if (output_of(g, in, &o) < 0) return NULL;
    rill_output r = strcmp(kind, "scalar") == 0 ? rill_summary_scalar(g->g, name, o)
                                                : rill_summary_histogram(g->g, name, o);
    return node_or_raise(g, r.node);
}

static PyObject *graph_summary_merge_all(GraphObject *g, PyObject *args)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|z", &name)) return NULL;
    rill_output r = rill_summary_merge_all(g->g, name);
    if (!r.node && rill_graph_ok(g->g)) Py_RETURN_NONE;
    return node_or_raise(g, r.node);
}

/* --- module --- */

static PyObject *runtime_info(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyUnicode_FromString(rill_runtime_info());
}

static PyMethodDef module_methods[] = {
    {"set_gradient_hook", set_gradient_hook, METH_O,
     "set_gradient_hook(fn or None): fn(graph, op, dys) -> None or one gradient per input."},
    {"register_errors", register_errors, METH_O,
     "register_errors({code: class}): the exception class raised for each rill_code."},
    {"runtime_info", runtime_info, METH_NOARGS, "rill_runtime_info(): CPU and code paths."},
    {"get_checkpoint_state", get_checkpoint_state, METH_O,
     "get_checkpoint_state(dir) -> (model_checkpoint_path, all paths) or None"},
    {"latest_checkpoint", latest_checkpoint, METH_O, "The newest checkpoint's prefix, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rill", "rill's C library, for rill.compat.v1.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rill(void)
{
    import_array();
    interrupts_init();
    PyTypeObject *types[] = {&GraphType,     &OpType,    &SessionType, &CallableType,
                             &ServerType,    &OptimizerType, &SaverType, &SyncType,
                             &SupervisorType, &WriterType};
    const char *names[] = {"Graph", "Op",    "Session",      "Callable",  "Server",
                           "Optimizer", "Saver", "SyncReplicas", "Supervisor", "SummaryWriter"};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyModule_AddStringConstant(m, "__version__", rill_version());
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        Py_INCREF(types[i]);
        PyModule_AddObject(m, names[i], (PyObject *)types[i]);
    }
    return m;
}
