/* _readers.c - the extension module rill._readers: reading the files rill and TensorFlow write,
 * for tf.train.summary_iterator and tf.train.NewCheckpointReader (rill.compat.v1.train_io).
 *
 * A module of its own beside rill._rill (which holds graphs, sessions and training): readers
 * need neither, and keeping them apart keeps _rill.c one concern. It uses only rill's public
 * API (rill_event_reader, rill_checkpoint_reader) and no numpy: a tensor comes back as
 * (dtype number, shape, bytes) — or a list of bytes for strings — and the Python side views the
 * bytes as an array. Errors are raised as the tf.errors class registered for the status code. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <rill/rill.h>

static PyObject *error_classes; /* {code: class}, from register_errors */

static PyObject *raise_status(const rill_status *s)
{
    PyObject *cls = NULL;
    if (error_classes) {
        PyObject *code = PyLong_FromLong(rill_status_code(s));
        cls = code ? PyDict_GetItemWithError(error_classes, code) : NULL;
        Py_XDECREF(code);
    }
    if (PyErr_Occurred()) return NULL;
    PyErr_SetString(cls ? cls : PyExc_RuntimeError, rill_status_message(s));
    return NULL;
}

static PyObject *register_errors(PyObject *self, PyObject *classes)
{
    (void)self;
    if (!PyDict_Check(classes)) return PyErr_Format(PyExc_TypeError, "expected a dict");
    Py_INCREF(classes);
    Py_XDECREF(error_classes);
    error_classes = classes;
    Py_RETURN_NONE;
}

/* --- event files --- */

typedef struct {
    PyObject_HEAD rill_event_reader *r;
} EventsObject;

static int events_init(EventsObject *self, PyObject *args, PyObject *kw)
{
    (void)kw;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return -1;
    rill_status *s = rill_status_new();
    rill_event_reader *r;
    Py_BEGIN_ALLOW_THREADS
    r = rill_event_reader_new(path, s);
    Py_END_ALLOW_THREADS
    if (!r) {
        raise_status(s);
        rill_status_free(s);
        return -1;
    }
    rill_status_free(s);
    rill_event_reader_free(self->r);
    self->r = r;
    return 0;
}

static void events_dealloc(EventsObject *self)
{
    rill_event_reader_free(self->r);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *value_dict(const rill_event_value *v)
{
    const char *kind = v->kind == RILL_VALUE_SIMPLE  ? "simple_value"
                       : v->kind == RILL_VALUE_HISTO ? "histo"
                                                     : "other";
    return Py_BuildValue("{s:s,s:s,s:d,s:d,s:d,s:d,s:d,s:d,s:i}", "tag", v->tag, "kind", kind,
                         "simple_value", (double)v->simple_value, "min", v->histo_min, "max",
                         v->histo_max, "num", v->histo_num, "sum", v->histo_sum, "sum_squares",
                         v->histo_sum_squares, "nbuckets", v->histo_nbuckets);
}

/* next() -> dict of the event's fields, or None at the end of the file. */
static PyObject *events_next(EventsObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->r) return PyErr_Format(PyExc_ValueError, "the event reader is not open");
    rill_event *ev = PyMem_Calloc(1, sizeof *ev);
    if (!ev) return PyErr_NoMemory();
    rill_status *s = rill_status_new();
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rill_event_reader_next(self->r, ev, s);
    Py_END_ALLOW_THREADS
    PyObject *out = NULL;
    if (rc < 0) {
        raise_status(s);
    } else if (rc == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    } else {
        const char *kind = ev->kind == RILL_EVENT_FILE_VERSION  ? "file_version"
                           : ev->kind == RILL_EVENT_SUMMARY     ? "summary"
                           : ev->kind == RILL_EVENT_SESSION_LOG ? "session_log"
                                                                : "other";
        PyObject *values = PyList_New(0);
        for (int i = 0; values && i < ev->nvalues; i++) {
            PyObject *v = value_dict(&ev->values[i]);
            if (!v || PyList_Append(values, v) < 0) Py_CLEAR(values);
            Py_XDECREF(v);
        }
        if (values)
            out = Py_BuildValue("{s:d,s:L,s:s,s:s,s:i,s:s,s:s,s:N}", "wall_time", ev->wall_time,
                                "step", (long long)ev->step, "kind", kind, "file_version",
                                ev->file_version, "session_log_status", ev->session_log_status,
                                "checkpoint_path", ev->checkpoint_path, "session_log_msg",
                                ev->session_log_msg, "values", values);
    }
    rill_status_free(s);
    PyMem_Free(ev);
    return out;
}

static PyMethodDef events_methods[] = {
    {"next", (PyCFunction)events_next, METH_NOARGS, "next() -> dict, or None at the end"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EventsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._readers.EventReader",
    .tp_basicsize = sizeof(EventsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "EventReader(path): the events of a TensorBoard event file, in order",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)events_init,
    .tp_dealloc = (destructor)events_dealloc,
    .tp_methods = events_methods,
};

/* --- checkpoints --- */

typedef struct {
    PyObject_HEAD rill_checkpoint_reader *r;
} CkptObject;

static int ckpt_init(CkptObject *self, PyObject *args, PyObject *kw)
{
    (void)kw;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return -1;
    rill_status *s = rill_status_new();
    rill_checkpoint_reader *r;
    Py_BEGIN_ALLOW_THREADS
    r = rill_checkpoint_reader_new(path, s);
    Py_END_ALLOW_THREADS
    if (!r) {
        raise_status(s);
        rill_status_free(s);
        return -1;
    }
    rill_status_free(s);
    rill_checkpoint_reader_free(self->r);
    self->r = r;
    return 0;
}

static void ckpt_dealloc(CkptObject *self)
{
    rill_checkpoint_reader_free(self->r);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *shape_tuple(const rill_shape *sh)
{
    if (sh->rank < 0) Py_RETURN_NONE;
    PyObject *t = PyTuple_New(sh->rank);
    for (int d = 0; t && d < sh->rank; d++)
        PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(sh->dims[d]));
    return t;
}

/* entries() -> [(name, dtype number, shape)], sorted by name. */
static PyObject *ckpt_entries(CkptObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->r) return PyErr_Format(PyExc_ValueError, "the checkpoint reader is not open");
    int n = rill_checkpoint_reader_num_tensors(self->r);
    PyObject *out = PyList_New(n);
    for (int i = 0; out && i < n; i++) {
        rill_shape sh = rill_checkpoint_reader_shape(self->r, i);
        PyObject *e =
            Py_BuildValue("(siN)", rill_checkpoint_reader_name(self->r, i),
                          (int)rill_checkpoint_reader_dtype(self->r, i), shape_tuple(&sh));
        if (!e)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, e);
    }
    return out;
}

/* get(name) -> (dtype number, shape, bytes | [bytes, ...] for strings). */
static PyObject *ckpt_get(CkptObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    if (!self->r) return PyErr_Format(PyExc_ValueError, "the checkpoint reader is not open");
    rill_status *s = rill_status_new();
    rill_tensor *t;
    Py_BEGIN_ALLOW_THREADS
    t = rill_checkpoint_reader_get_tensor(self->r, name, s);
    Py_END_ALLOW_THREADS
    if (!t) {
        raise_status(s);
        rill_status_free(s);
        return NULL;
    }
    rill_status_free(s);
    rill_dtype dt = rill_tensor_dtype(t);
    PyObject *data;
    if (dt == RILL_STRING) {
        int64_t n = rill_tensor_num_elements(t);
        data = PyList_New((Py_ssize_t)n);
        for (int64_t i = 0; data && i < n; i++) {
            size_t len;
            const char *p = rill_tensor_get_string(t, i, &len);
            PyObject *b = PyBytes_FromStringAndSize(p, (Py_ssize_t)len);
            if (!b)
                Py_CLEAR(data);
            else
                PyList_SET_ITEM(data, (Py_ssize_t)i, b);
        }
    } else {
        data = PyBytes_FromStringAndSize(rill_tensor_data(t), (Py_ssize_t)rill_tensor_nbytes(t));
    }
    PyObject *out =
        data ? Py_BuildValue("(iNN)", (int)dt, shape_tuple(rill_tensor_shape(t)), data) : NULL;
    rill_tensor_free(t);
    return out;
}

static PyObject *ckpt_prefix(CkptObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->r) return PyErr_Format(PyExc_ValueError, "the checkpoint reader is not open");
    return PyUnicode_FromString(rill_checkpoint_reader_prefix(self->r));
}

static PyMethodDef ckpt_methods[] = {
    {"entries", (PyCFunction)ckpt_entries, METH_NOARGS, "entries() -> [(name, dtype, shape)]"},
    {"get", (PyCFunction)ckpt_get, METH_VARARGS, "get(name) -> (dtype, shape, data)"},
    {"prefix", (PyCFunction)ckpt_prefix, METH_NOARGS, "The checkpoint prefix opened."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CkptType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rill._readers.CheckpointReader",
    .tp_basicsize = sizeof(CkptObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CheckpointReader(prefix_or_dir): a V2 checkpoint's tensors",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ckpt_init,
    .tp_dealloc = (destructor)ckpt_dealloc,
    .tp_methods = ckpt_methods,
};

static PyMethodDef module_methods[] = {
    {"register_errors", register_errors, METH_O,
     "register_errors({code: class}): the exception class raised for each rill_code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_readers",
    "Readers of event files and checkpoints.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__readers(void)
{
    if (PyType_Ready(&EventsType) < 0 || PyType_Ready(&CkptType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EventsType);
    PyModule_AddObject(m, "EventReader", (PyObject *)&EventsType);
    Py_INCREF(&CkptType);
    PyModule_AddObject(m, "CheckpointReader", (PyObject *)&CkptType);
    return m;
}
