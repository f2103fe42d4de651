"""tf.get_variable and variable scopes as TF 1.x's (variable_scope, VariableScope,
get_variable_scope, AUTO_REUSE), kept in Python over the C library's variables.

A scope is a name prefix for get_variable, a reuse mode (False, True or AUTO_REUSE, inherited),
a default initializer, regularizer and dtype, and the name scope it opened for ops. A scope
entered by name opens a name scope of that name (made unique, as TF's); one entered with
default_name gets a unique variable-scope name first (TF's counting of scopes entered per full
name), and a VariableScope object re-enters its own original name scope.

get_variable decides existence, reuse and the error texts here (TF's), then makes the variable
in C at the scope's prefix: with an initializer the C library knows (zeros, ones, constant,
normal, truncated normal, uniform, and every variance-scaling one, which becomes one of those
once the shape is known) as C's initializer, and with any other callable from the tensor it
returns. A regularizer's loss joins REGULARIZATION_LOSSES, made under "<var>/Regularizer/"."""
import builtins as _builtins
import contextlib as _contextlib
import sys as _sys

import numpy as _np

__all__ = ["AUTO_REUSE", "VariableScope", "variable_scope", "get_variable_scope",
           "get_variable", "no_regularizer", "get_local_variable"]


def _tf():
    return _sys.modules[__package__]


class _ReuseMode:
    def __repr__(self):
        return "_ReuseMode.AUTO_REUSE"


AUTO_REUSE = _ReuseMode()


def no_regularizer(_):
    """Use this to turn a scope's regularizer off for one variable."""
    return None


class VariableScope:
    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope="", dtype=None,
                 use_resource=None, constraint=None):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._dtype = dtype
        self._name_scope = name_scope
        self.caching_device = caching_device
        self.partitioner = partitioner
        self.custom_getter = custom_getter
        self.use_resource = use_resource
        self.constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    dtype = property(lambda self: self._dtype)

    def reuse_variables(self):
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_dtype(self, dtype):
        self._dtype = dtype

    def get_variable(self, var_store, name, *args, **kwargs):
        return get_variable(name, *args, **kwargs)

    def global_variables(self):
        return _tf().get_collection("variables", self._name + "/" if self._name else None)

    def trainable_variables(self):
        return _tf().get_collection("trainable_variables",
                                    self._name + "/" if self._name else None)

    def __repr__(self):
        return f"<VariableScope name={self._name!r} reuse={self._reuse!r}>"


def _store(graph):
    """(scope stack, {full scope name: times entered}) of a graph."""
    st = graph.__dict__.get("_var_scope_store")
    if st is None:
        st = graph.__dict__["_var_scope_store"] = ([], {})
    return st


def get_variable_scope():
    g = _tf().get_default_graph()
    stack, _ = _store(g)
    if stack:
        return stack[-1]
    root = g.__dict__.get("_root_var_scope")
    if root is None:
        root = g.__dict__["_root_var_scope"] = VariableScope(False)
    return root


def _unique_scope_name(counts, outer, prefix):
    name = f"{outer.name}/{prefix}" if outer.name else prefix
    if counts.get(name, 0) == 0:
        return prefix
    i = 1
    while counts.get(f"{name}_{i}", 0) > 0:
        i += 1
    return f"{prefix}_{i}"


@_contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    tf = _tf()
    g = tf.get_default_graph()
    stack, counts = _store(g)
    outer = get_variable_scope()
    if name_or_scope is None and default_name is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    if reuse is False:
        reuse = None  # TF: False means "inherit"
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        base = name_or_scope
        reopen = base.original_name_scope
    else:
        if name_or_scope is not None:
            if not isinstance(name_or_scope, str):
                raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
            local = name_or_scope
        else:
            if reuse:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            local = _unique_scope_name(counts, outer, default_name)
        full = f"{outer.name}/{local}" if outer.name else local
        base = outer
        reopen = None
    if reuse is None:
        new_reuse = outer.reuse
        if isinstance(name_or_scope, VariableScope) and name_or_scope.reuse:
            new_reuse = name_or_scope.reuse
    else:
        new_reuse = reuse
    if outer.reuse is True:
        new_reuse = True  # TF: inside a reusing scope every scope reuses
    pushed = False
    if auxiliary_name_scope:
        if reopen is not None:
            g._g.push_name_scope(reopen if reopen else "/")
        else:
            g._g.push_name_scope(local)
        pushed = True
    ns = g._g.name_scope()  # the name scope just opened, as the C library made it unique
    scope = VariableScope(
        new_reuse, name=full,
        initializer=initializer if initializer is not None else base.initializer,
        regularizer=regularizer if regularizer is not None else base.regularizer,
        caching_device=caching_device or base.caching_device,
        partitioner=partitioner or base.partitioner,
        custom_getter=custom_getter or base.custom_getter,
        name_scope=(reopen if reopen is not None else ns),
        dtype=dtype if dtype is not None else base.dtype,
        use_resource=use_resource, constraint=constraint or base.constraint)
    counts[full] = counts.get(full, 0) + 1
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()
        for k in counts:  # TF's close_variable_subscopes: inner default names count afresh
            if k.startswith(full + "/"):
                counts[k] = 0
        if pushed:
            g._g.pop_name_scope()


def _is_c_initializer(init):
    return hasattr(init, "_spec_for") or hasattr(init, "spec")


def _spec(init, dims, dt):
    if hasattr(init, "_spec_for"):
        return init._spec_for(dims, dt)
    return init.spec


def _as_dims(shape):
    tf = _tf()
    if isinstance(shape, tf.TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (int, _np.integer)):
        shape = [shape]
    return [int(d) for d in shape]


def _default_initializer(name, dt):
    """TF's rule: glorot uniform for floats, zeros for ints and bools."""
    tf = _tf()
    from .initializers import glorot_uniform_initializer
    if dt.is_floating:
        return glorot_uniform_initializer()
    if dt in (tf.int32, tf.int64, tf.bool):
        return tf.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dt.name} is required")


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    tf = _tf()
    g = tf.get_default_graph()
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    if dtype is None:
        dtype = scope.dtype
    if dtype is None:
        dtype = getattr(initializer, "dtype", None) if initializer is not None else None
    if dtype is None and isinstance(initializer, (tf.Tensor, tf.Variable)):
        dtype = initializer.dtype
    dt = tf.as_dtype(dtype) if dtype is not None else tf.float32
    existing = g._g.find(full)
    if existing is not None:
        if existing.type != "VariableV2":
            raise ValueError(f"Variable {full} cannot be created: an operation of type "
                             f"{existing.type} has that name")
        if scope.reuse is None or scope.reuse is False:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        var = tf._as_variable(g, existing)
        found = var.shape
        if shape is not None and validate_shape:
            want = tf.TensorShape(_as_dims(shape))
            if want != found:
                raise ValueError(f"Trying to share variable {full}, but specified shape "
                                 f"{tuple(want.as_list())} and found shape "
                                 f"{tuple(found.as_list())}.")
        if dtype is not None and tf.as_dtype(dtype) != var.dtype:
            raise ValueError(f"Trying to share variable {full}, but specified dtype "
                             f"{tf.as_dtype(dtype).name} and found dtype {var.dtype.name}.")
        return var
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?")
    if trainable is None:
        trainable = True
    if initializer is None:
        initializer = scope.initializer
    if initializer is None:
        initializer = _default_initializer(full, dt)
    device = g._device_for("VariableV2", name)
    prefix = f"{scope.name}/" if scope.name else "/"
    g._g.push_name_scope(prefix)  # get_variable names ignore name scopes
    try:
        if _is_c_initializer(initializer) and not isinstance(initializer, type):
            if shape is None:
                raise ValueError(f"Shape of a new variable ({full}) must be fully defined, but "
                                 "instead was <unknown>.")
            dims = _as_dims(shape)
            try:
                rop = g._g.variable(name, dt.enum, dims, _spec(initializer, dims, dt),
                                    _builtins.bool(trainable), False, device)
            except (tf.errors.AlreadyExistsError, tf.errors.NotFoundError) as e:
                raise ValueError(e.message) from None
            var = tf._as_variable(g, rop)
        else:
            if isinstance(initializer, type):
                initializer = initializer()
            g._g.push_name_scope(f"{full}/Initializer/")
            try:
                if callable(initializer):
                    if shape is None:
                        raise ValueError(f"Shape of a new variable ({full}) must be fully "
                                         "defined, but instead was <unknown>.")
                    try:
                        value = initializer(_as_dims(shape), dtype=dt, partition_info=None)
                    except TypeError:
                        value = initializer(_as_dims(shape), dtype=dt)
                    value = tf.convert_to_tensor(value, dtype=dt)
                else:
                    if isinstance(initializer, (tf.Tensor, tf.Variable)) and shape is not None \
                            and validate_shape:
                        raise ValueError("If initializer is a constant, do not specify shape.")
                    value = tf.convert_to_tensor(initializer, dtype=dt)
            finally:
                g._g.pop_name_scope()
            with g.device(device) if device else _contextlib.nullcontext():
                rop = g._g.variable_from(value._out, _builtins.bool(trainable), name, device)
            var = tf._as_variable(g, rop)
        if regularizer is None:
            regularizer = scope.regularizer
        if regularizer is not None:
            g._g.push_name_scope(f"{full}/Regularizer/")
            try:
                loss = regularizer(var)
            finally:
                g._g.pop_name_scope()
            if loss is not None:
                g.add_to_collection("regularization_losses", loss)
    finally:
        g._g.pop_name_scope()
    from .graph_collections import _place_variable
    _place_variable(var, collections, trainable)
    return var


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """get_variable into LOCAL_VARIABLES (never trainable, as TF)."""
    collections = list(collections or []) + ["local_variables"]
    return get_variable(name, shape, dtype, initializer, regularizer, False, collections,
                        caching_device, partitioner, validate_shape, use_resource,
                        custom_getter, constraint)
