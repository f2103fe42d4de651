"""TF 1.x's tf.cond, tf.case and tf.while_loop, built from rill's control-flow primitives
(Switch, Merge, Enter, Exit, NextIteration, LoopCond: src/graph/ops_control_flow.c) with TF's
node names, as TF's control_flow_ops does.

While a branch or a loop body is built, the graph has a control-flow context (Graph._cf_ctx):
every op made then is the context's, and an input from outside comes in through the context
(Graph._make asks it): in a cond branch through a Switch on the branch's predicate, so that on
the branch not taken the input is dead and nothing of the branch runs; in a loop through a
constant Enter, so that the body reads it once per step. An op of a context that has no input
from inside it (a constant) gets a control input on the context's pivot, which puts it in the
branch or the loop. The executor runs each loop as a whole (src/runtime/frame.c)."""
import sys as _sys

import numpy as _np

__all__ = ["cond", "case", "while_loop", "TensorArray", "map_fn", "scan", "foldl", "foldr"]


def _tf():
    return _sys.modules[__package__]


# --- nested structures (TF's nest: tuples, lists, namedtuples and dicts are sequences) ---

def _is_seq(x):
    return isinstance(x, (tuple, list, dict))


def _flatten(x):
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _flatten(x[k])]
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flatten(e)]
    return [x]


def _pack(template, flat):
    it = iter(flat)

    def build(t):
        if isinstance(t, dict):
            vals = {k: build(t[k]) for k in sorted(t)}
            return type(t)((k, vals[k]) for k in t)
        if isinstance(t, (tuple, list)):
            items = [build(e) for e in t]
            if hasattr(t, "_fields"):
                return type(t)(*items)
            return type(t)(items) if isinstance(t, list) else tuple(items)
        return next(it)

    return build(template)


def _same_structure(a, b):
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and all(
            _same_structure(a[k], b[k]) for k in a)
    if _is_seq(a) or _is_seq(b):
        return _is_seq(a) and _is_seq(b) and len(a) == len(b) and all(
            _same_structure(x, y) for x, y in zip(a, b))
    return True


# --- contexts ---

# ops whose variable inputs are references (updated in place): never brought in
_REF_OPS = ("Assign", "Apply", "SparseApply", "Scatter", "CountUpTo", "IsVariableInitialized")


def _tensor_ctx(t):
    op = t.op
    out = op._cf_out
    if out and t._index in out:
        return out[t._index]
    return op._cf_ctx


class _Context:
    def __init__(self, graph, outer):
        self.graph = graph
        self.outer = outer
        self.pivot = None
        self._cache = {}

    def encloses(self, c):
        while c is not None:
            if c is self:
                return True
            c = c.outer
        return False

    def holds(self, t):
        return self.encloses(_tensor_ctx(t))

    def capture(self, t):
        """t as this context sees it (brought in when it is from outside)."""
        if self.holds(t):
            return t
        if self.outer is not None:
            t = self.outer.capture(t)
        r = self._cache.get(t._out)
        if r is None:
            r = self._bring_in(t)
            self._cache[t._out] = r
        return r

    def op_inputs(self, type, inputs):
        """The inputs an op of this context gets (Graph._make)."""
        out = []
        for t in inputs:
            if t.op.type == "VariableV2" and type.startswith(_REF_OPS):
                out.append(t)
            else:
                out.append(self.capture(t))
        return tuple(out)

    def output(self, x):
        """A branch's or a body's result as a tensor of this context."""
        tf = _tf()
        g = self.graph
        if isinstance(x, tf.Operation):
            with g.control_dependencies([x]):
                return tf.identity(self.pivot.outputs[0])
        x = tf.convert_to_tensor(x)
        return self.capture(x)


class _CondContext(_Context):
    def __init__(self, graph, outer, pred, branch):
        super().__init__(graph, outer)
        self.pred = pred
        self.branch = branch

    def _bring_in(self, t):
        sw = self.graph._make_raw("Switch", "Switch", (t, self.pred), ctx=self.outer)
        sw._cf_out = {self.branch: self}
        return sw.outputs[self.branch]


class _WhileContext(_Context):
    def __init__(self, graph, outer, frame, parallel_iterations):
        super().__init__(graph, outer)
        self.frame = frame
        self.parallel_iterations = parallel_iterations

    def enter(self, t, constant, shape=None):
        attrs = {"frame_name": ("string", self.frame), "is_constant": ("bool", constant),
                 "parallel_iterations": ("int", int(self.parallel_iterations))}
        if shape is not None:
            attrs["shape"] = ("shape", None if shape.ndims is None else list(shape._dims))
        return self.graph._make_raw("Enter", "Enter", (t,), attrs, ctx=self).outputs[0]

    def _bring_in(self, t):
        return self.enter(t, True)


class _entered:
    """The graph inside ctx. Ops the C library made meanwhile (an optimizer's updates, built
    without Graph._make) that update a variable from outside get a control input on the pivot,
    so that they run only where the branch or body does, as TF's contexts make them."""

    def __init__(self, graph, ctx):
        self.graph, self.ctx = graph, ctx

    def __enter__(self):
        self.saved = self.graph._cf_ctx
        self.graph._cf_ctx = self.ctx
        self.mark = self.graph._g.num_ops()

    def __exit__(self, *exc):
        self.graph._cf_ctx = self.saved
        if exc[0] is not None or self.ctx.pivot is None:
            return
        new = self.graph._g.ops(self.mark)
        made_here = set(new)
        for rop in new:
            op = self.graph._wrap(rop)
            if getattr(op, "_cf_made", False) or not op.type.startswith(_REF_OPS):
                continue
            if any(src.type == "VariableV2" and src not in made_here for src, _ in rop.inputs):
                rop.add_control_input(self.ctx.pivot._op)


# --- tf.cond ---

def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """true_fn() when pred is true, else false_fn(): only the taken branch runs."""
    tf = _tf()
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, (bool, _np.bool_)):
        raise TypeError("pred must not be a Python bool")
    g = tf.get_default_graph()
    outer = g._cf_ctx
    with g.name_scope(name or "cond"):
        pred = tf.convert_to_tensor(pred)
        if pred.dtype != tf.bool:
            raise TypeError(f"pred must be a bool tensor, got {pred.dtype.name}")
        sw = g._make("Switch", "Switch", (pred, pred))
        pivots = {1: tf.identity(sw.outputs[1], name="switch_t"),
                  0: tf.identity(sw.outputs[0], name="switch_f")}
        pred_id = tf.identity(pred, name="pred_id")
        built = {}
        for branch, fn in ((1, true_fn), (0, false_fn)):
            ctx = _CondContext(g, outer, pred_id, branch)
            ctx.pivot = pivots[branch].op
            ctx.pivot._cf_ctx = ctx
            with _entered(g, ctx):
                r = fn()
                if r is None:
                    raise ValueError(f"{'true_fn' if branch else 'false_fn'} must have a return "
                                     "value.")
                flat = [ctx.output(x) for x in _flatten(r)]
            built[branch] = (r, flat)
        (rt, ft), (rf, ff) = built[1], built[0]
        if not _same_structure(rt, rf) or len(ft) != len(ff):
            raise ValueError("Outputs of true_fn and false_fn must have the same structure")
        ops_only = all(isinstance(x, tf.Operation) for x in _flatten(rt))
        merges = []
        for t, f in zip(ft, ff):
            if t.dtype != f.dtype:
                raise ValueError("Outputs of true_fn and false_fn must have the same type: "
                                 f"{t.dtype.name}, {f.dtype.name}")
            merges.append(g._make("Merge", "Merge", (f, t)).outputs[0])
    if ops_only:
        merges = [m.op for m in merges]
    result = _pack(rt, merges)
    if not strict and isinstance(result, (list, tuple)) and not hasattr(result, "_fields") \
            and len(result) == 1:
        result = result[0]
    return result


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The fn of the first pred that is true (default when none is), as nested conds."""
    tf = _tf()
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
    else:
        pairs = list(pred_fn_pairs)
    for p in pairs:
        if not isinstance(p, tuple) or len(p) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        if not callable(p[1]):
            raise TypeError("fn for pred %s must be callable." % getattr(p[0], "name", p[0]))
    if not pairs and default is None:
        raise ValueError("pred_fn_pairs must not be empty without a default")
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]
    if not pairs:
        return default()
    with tf.name_scope(name):
        preds = [tf.convert_to_tensor(p) for p, _ in pairs]
        if exclusive:
            n = tf.add_n([tf.cast(p, tf.int32) for p in preds])
            check = tf.Assert(n <= 1, ["Input error: exclusive=True: more than 1 condition "
                                       "evaluated as True:"] + preds)
            preds = [tf.identity(p) for p in preds]
            with tf.control_dependencies([check]):
                preds = [tf.identity(p) for p in preds]

        def chain(k):
            if k == len(pairs):
                return default()
            return cond(preds[k], pairs[k][1], lambda: chain(k + 1), strict=strict)

        return chain(0)


# --- tf.while_loop ---

def _shape_ok(inv, shape):
    """Whether shape fits the invariant inv (unknown dims of inv match anything)."""
    if inv.ndims is None:
        return True
    if shape.ndims != inv.ndims:
        return False
    return all(a is None or a == b for a, b in zip(inv._dims, shape._dims))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeats body while cond is true, on loop_vars (a possibly nested structure)."""
    tf = _tf()
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    bare = not _is_seq(loop_vars)
    if bare:
        loop_vars = [loop_vars]
    if not _flatten(loop_vars):
        raise ValueError("No loop variables provided")
    g = tf.get_default_graph()
    outer = g._cf_ctx
    with g.name_scope(name or "while") as scope:
        if maximum_iterations is not None:
            mi = tf.convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if mi.shape.ndims not in (None, 0):
                raise ValueError("maximum_iterations must be a scalar, saw shape: "
                                 f"{mi.shape}")
            counter = tf.constant(0, dtype=mi.dtype, name="iteration_counter")
            orig_cond, orig_body = cond, body
            lv0 = loop_vars
            cond = lambda i, lv: tf.logical_and(i < mi, orig_cond(*lv))  # noqa: E731
            body = lambda i, lv: (i + 1, orig_body(*lv))  # noqa: E731
            loop_vars = (counter, lv0)
            if shape_invariants is not None:
                shape_invariants = (tf.TensorShape([]), shape_invariants)
        leaves = _flatten(loop_vars)
        flat = [tf.convert_to_tensor(_flow_of(v)) for v in leaves]
        if shape_invariants is None:
            invs = [v.shape for v in flat]
        else:
            invs = _flatten_shapes(shape_invariants, loop_vars)
            for v, inv in zip(flat, invs):
                if not _shape_ok(inv, v.shape):
                    raise ValueError(f"The shape invariant specified for {v.name} is not "
                                     f"compatible with the initial shape of the loop variable. "
                                     f"It enters the loop with shape {v.shape}, but the "
                                     f"specified shape invariant is {inv}.")
        ctx = _WhileContext(g, outer, scope + "while_context", parallel_iterations)
        if outer is not None:
            flat = [outer.capture(v) for v in flat]
        enters = [ctx.enter(v, False, inv if shape_invariants is not None else None)
                  for v, inv in zip(flat, invs)]
        merges = [g._make_raw("Merge", "Merge", (e,), ctx=ctx) for e in enters]
        ctx.pivot = merges[0]
        with _entered(g, ctx):
            pred = cond(*_pack(loop_vars, [_like(v, m.outputs[0]) for v, m in zip(leaves, merges)]))
            pred = ctx.output(pred)
        if pred.dtype != tf.bool or pred.shape.ndims not in (None, 0):
            raise ValueError("cond must return a bool scalar, got "
                             f"{pred.dtype.name} of shape {pred.shape}")
        lc = g._make_raw("LoopCond", "LoopCond", (pred,), ctx=ctx).outputs[0]
        switches = [g._make_raw("Switch", "Switch", (m.outputs[0], lc), ctx=ctx) for m in merges]
        ids = [g._make_raw("Identity", "Identity", (sw.outputs[1],), ctx=ctx) for sw in switches]
        ctx.pivot = ids[0]
        with _entered(g, ctx):
            r = body(*_pack(loop_vars, [_like(v, i.outputs[0]) for v, i in zip(leaves, ids)]))
            if not _is_seq(r):
                r = [r]
            rleaves = _flatten(r)
            if not _same_structure(loop_vars, r) and len(_flatten(r)) != len(flat):
                raise ValueError("The two structures don't have the same nested structure.\n\n"
                                 f"First structure: {loop_vars}\n\nSecond structure: {r}")
            outs = [ctx.output(_flow_of(x)) for x in rleaves]
        if len(outs) != len(flat):
            raise ValueError("The two structures don't have the same number of elements. "
                             f"First structure: {len(flat)} elements, second: {len(outs)}")
        for v, o, inv, e in zip(flat, outs, invs, enters):
            if o.dtype != v.dtype:
                raise TypeError(f"Loop variable {v.name} enters the loop with type "
                                f"{v.dtype.name}, but has type {o.dtype.name} after 1 "
                                "iteration.")
            if not _shape_ok(e.shape, o.shape):
                raise ValueError(f"Input tensor '{v.name}' enters the loop with shape "
                                 f"{e.shape}, but has shape {o.shape} after one iteration. To "
                                 "allow the shape to vary across iterations, use the "
                                 "`shape_invariants` argument of tf.while_loop to specify a "
                                 "less-specific shape.")
        nexts = [g._make_raw("NextIteration", "NextIteration", (o,), control_inputs=(m,), ctx=ctx)
                 for o, m in zip(outs, merges)]
        exits = [g._make_raw("Exit", "Exit", (sw.outputs[0],), control_inputs=nexts,
                             ctx=outer).outputs[0] for sw in switches]
    result = _pack(r, [_like(x, e) for x, e in zip(rleaves, exits)])
    if maximum_iterations is not None:
        result = result[1]
    if (bare or not return_same_structure) and isinstance(result, (list, tuple)) \
            and not hasattr(result, "_fields") and len(_flatten(result)) == 1:
        return _flatten(result)[0]
    return result


def _flatten_shapes(invariants, loop_vars):
    """The shape invariants at the loop variables' leaves (a TensorShape is a leaf)."""
    tf = _tf()
    if not _is_seq(loop_vars):
        return [invariants if isinstance(invariants, tf.TensorShape) else tf.TensorShape(invariants)]
    if isinstance(loop_vars, dict):
        return [s for k in sorted(loop_vars) for s in _flatten_shapes(invariants[k], loop_vars[k])]
    if not _is_seq(invariants) or len(invariants) != len(loop_vars):
        raise ValueError("shape_invariants must have the same structure as loop_vars")
    return [s for i, v in zip(invariants, loop_vars) for s in _flatten_shapes(i, v)]


# --- tf.TensorArray ---

class TensorArray:
    """TF 1.x's TensorArray: the handle of an array that lives for one step, and a flow tensor
    that orders the ops on it. write, scatter, unstack and split return a new TensorArray (the
    same array, the new flow), as TF's do."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        tf = _tf()
        self._dtype = tf.as_dtype(dtype)
        self._infer_shape = infer_shape
        self._dynamic_size = bool(dynamic_size)
        self._element_shape = tf.TensorShape(element_shape)
        # the size when known when the graph is built (stack's static first dimension)
        self._static_size = None if dynamic_size or not isinstance(size, int) else size
        if handle is not None:
            if flow is None:
                raise ValueError("flow must not be None if handle is not None.")
            self._handle, self._flow = handle, flow
            return
        if flow is not None:
            raise ValueError("flow must be None if handle is None.")
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        g = tf.get_default_graph()
        with g.name_scope(name or "TensorArray"):
            size = tf.convert_to_tensor(size, dtype=tf.int32, name="size")
            attrs = {"dtype": tf._attr_type(self._dtype),
                     "element_shape": _shape_attr(self._element_shape),
                     "dynamic_size": ("bool", self._dynamic_size),
                     "clear_after_read": ("bool", True if clear_after_read is None
                                          else bool(clear_after_read)),
                     "identical_element_shapes": ("bool", bool(infer_shape)),
                     "tensor_array_name": ("string", tensor_array_name or "")}
            op = g._make("TensorArrayV3", "TensorArray", (size,), attrs)
        self._handle, self._flow = op.outputs[0], op.outputs[1]

    def _with_flow(self, flow, element_shape=None):
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow,
                         infer_shape=self._infer_shape, dynamic_size=self._dynamic_size,
                         element_shape=self._element_shape if element_shape is None
                         else element_shape)
        ta._static_size = self._static_size
        return ta

    @property
    def handle(self):
        return self._handle

    @property
    def flow(self):
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._element_shape

    def _learn(self, shape):
        """The element shape after a write of shape (TF's infer_shape)."""
        tf = _tf()
        if not self._infer_shape:
            return self._element_shape
        e = self._element_shape
        if e.ndims is None:
            return shape
        if shape.ndims is not None and not e.is_compatible_with(shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {e} (and "
                             "infer_shape=True)")
        if shape.ndims is None:
            return e
        return tf.TensorShape([a if a is not None else b for a, b in zip(e._dims, shape._dims)])

    def _op(self, type, name, inputs, attrs=None):
        return _tf().get_default_graph()._make(type, name, inputs, attrs)

    def _read_attrs(self):
        return {"dtype": _tf()._attr_type(self._dtype),
                "element_shape": _shape_attr(self._element_shape)}

    def identity(self):
        return self._with_flow(_tf().identity(self._flow))

    def size(self, name=None):
        return self._op("TensorArraySizeV3", name or "TensorArraySizeV3",
                        (self._handle, self._flow)).outputs[0]

    def read(self, index, name=None):
        tf = _tf()
        index = tf.convert_to_tensor(index, dtype=tf.int32)
        return self._op("TensorArrayReadV3", name or "TensorArrayReadV3",
                        (self._handle, index, self._flow), self._read_attrs()).outputs[0]

    def write(self, index, value, name=None):
        tf = _tf()
        with tf.name_scope(name or "TensorArrayWrite"):
            index = tf.convert_to_tensor(index, dtype=tf.int32)
            value = tf.convert_to_tensor(value, dtype=self._dtype, name="value")
            shape = self._learn(value.shape)
            flow = self._op("TensorArrayWriteV3", "TensorArrayWriteV3",
                            (self._handle, index, value, self._flow)).outputs[0]
        return self._with_flow(flow, shape)

    def gather(self, indices, name=None, _count=None):
        tf = _tf()
        indices = tf.convert_to_tensor(indices, dtype=tf.int32)
        attrs = self._read_attrs()
        if _count is not None:
            attrs["num_elements"] = ("int", int(_count))
        return self._op("TensorArrayGatherV3", name or "TensorArrayGatherV3",
                        (self._handle, indices, self._flow), attrs).outputs[0]

    def stack(self, name=None):
        tf = _tf()
        with tf.name_scope(name or "TensorArrayStack"):
            return self.gather(tf.range(0, self.size()), name="TensorArrayGatherV3",
                               _count=self._static_size)

    def scatter(self, indices, value, name=None):
        tf = _tf()
        with tf.name_scope(name or "TensorArrayScatter"):
            indices = tf.convert_to_tensor(indices, dtype=tf.int32)
            value = tf.convert_to_tensor(value, dtype=self._dtype, name="value")
            shape = self._learn(value.shape[1:] if value.shape.ndims else tf.TensorShape(None))
            flow = self._op("TensorArrayScatterV3", "TensorArrayScatterV3",
                            (self._handle, indices, value, self._flow)).outputs[0]
        return self._with_flow(flow, shape)

    def unstack(self, value, name=None):
        tf = _tf()
        with tf.name_scope(name or "TensorArrayUnstack"):
            value = tf.convert_to_tensor(value, dtype=self._dtype, name="value")
            n = tf.shape(value)[0]
            return self.scatter(tf.range(0, n), value, name="TensorArrayScatter")

    def concat(self, name=None):
        tf = _tf()
        e = self._element_shape
        attrs = {"dtype": tf._attr_type(self._dtype),
                 "element_shape_except0": _shape_attr(
                     tf.TensorShape(None) if e.ndims is None else e[1:])}
        return self._op("TensorArrayConcatV3", name or "TensorArrayConcatV3",
                        (self._handle, self._flow), attrs).outputs[0]

    def split(self, value, lengths, name=None):
        tf = _tf()
        with tf.name_scope(name or "TensorArraySplit"):
            value = tf.convert_to_tensor(value, dtype=self._dtype, name="value")
            lengths = tf.cast(tf.convert_to_tensor(lengths), tf.int64)
            shape = self._learn(tf.TensorShape([None] + list(value.shape._dims[1:]))
                                if value.shape.ndims else tf.TensorShape(None))
            flow = self._op("TensorArraySplitV3", "TensorArraySplitV3",
                            (self._handle, value, lengths, self._flow)).outputs[0]
        return self._with_flow(flow, shape)

    def close(self, name=None):
        return self._op("TensorArrayCloseV3", name or "TensorArrayCloseV3", (self._handle,))


def _shape_attr(shape):
    return ("shape", None if shape.ndims is None else list(shape._dims))


def _flow_of(x):
    return x.flow if isinstance(x, TensorArray) else x


def _like(template, t):
    """t (a flow when template is a TensorArray) as the template's kind."""
    return template._with_flow(t) if isinstance(template, TensorArray) else t


# --- tf.map_fn, tf.scan, tf.foldl, tf.foldr (TF 1.x's functional_ops, on while_loop) ---

def _elems(elems):
    tf = _tf()
    flat = [tf.convert_to_tensor(e, name="elem") for e in _flatten(elems)]
    if not flat:
        raise ValueError("elems must not be empty")
    d = flat[0].shape[0] if flat[0].shape.ndims else None
    n = d if d is not None else tf.shape(flat[0])[0]
    tas = [TensorArray(dtype=e.dtype, size=n, dynamic_size=False, infer_shape=True).unstack(e)
           for e in flat]
    return flat, n, d, tas


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None):
    """fn on each element of elems along dimension 0, stacked."""
    tf = _tf()
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with tf.name_scope(name or "map"):
        flat, n, d, elems_ta = _elems(elems)
        out_struct = elems if dtype is None else dtype
        dtypes = [tf.as_dtype(t) for t in _flatten(dtype)] if dtype is not None else \
            [e.dtype for e in flat]
        accs = [TensorArray(dtype=t, size=n, dynamic_size=False, infer_shape=infer_shape)
                for t in dtypes]

        def compute(i, tas):
            vals = fn(_pack(elems, [ta.read(i) for ta in elems_ta]))
            outs = _flatten(vals)
            if len(outs) != len(tas):
                raise ValueError("The two structures don't have the same number of elements "
                                 f"(fn returned {len(outs)}, dtype says {len(tas)})")
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, outs)]

        _, r = while_loop(lambda i, _: i < n, compute, (tf.constant(0), accs),
                          parallel_iterations=parallel_iterations or 10,
                          back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        results = [ta.stack() for ta in r]
        return _pack(out_struct, results)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """The running fn(acc, x) over elems along dimension 0 (every intermediate acc, stacked)."""
    tf = _tf()
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with tf.name_scope(name or "scan"):
        flat, n, d, elems_ta = _elems(elems)
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            i = n - 2 if reverse else 1
            a_struct = elems
        else:
            a_flat = [tf.convert_to_tensor(a) for a in _flatten(initializer)]
            i = n - 1 if reverse else 0
            a_struct = initializer
        accs = [TensorArray(dtype=a.dtype, size=n, dynamic_size=False, infer_shape=infer_shape)
                for a in a_flat]
        if initializer is None:
            accs = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs, a_flat)]

        def compute(i, a, tas):
            out = _flatten(fn(_pack(a_struct, a), _pack(elems, [ta.read(i) for ta in elems_ta])))
            tas = [ta.write(i, v) for ta, v in zip(tas, out)]
            return (i - 1 if reverse else i + 1), out, tas

        _, _, r = while_loop((lambda i, a, t: i >= 0) if reverse else (lambda i, a, t: i < n),
                             compute, (tf.convert_to_tensor(i, dtype=tf.int32), a_flat, accs),
                             parallel_iterations=parallel_iterations, back_prop=back_prop,
                             swap_memory=swap_memory)
        results = [ta.stack() for ta in r]
        return _pack(a_struct, results)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, right):
    tf = _tf()
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with tf.name_scope(name or ("foldr" if right else "foldl")):
        flat, n, d, elems_ta = _elems(elems)
        if initializer is None:
            a = _pack(elems, [ta.read(n - 1 if right else 0) for ta in elems_ta])
            i = n - 2 if right else 1
        else:
            a = initializer
            i = n - 1 if right else 0

        def compute(i, a):
            a = fn(a, _pack(elems, [ta.read(i) for ta in elems_ta]))
            return [i - 1 if right else i + 1, a]

        _, r = while_loop((lambda i, a: i >= 0) if right else (lambda i, a: i < n), compute,
                          [tf.convert_to_tensor(i, dtype=tf.int32), a],
                          parallel_iterations=parallel_iterations, back_prop=back_prop,
                          swap_memory=swap_memory, return_same_structure=True)
        return r


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
          name=None):
    """fn(acc, x) folded over elems from the first element on."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
          name=None):
    """fn(acc, x) folded over elems from the last element back."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, True)
