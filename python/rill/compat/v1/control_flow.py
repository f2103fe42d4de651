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

__all__ = ["cond", "case", "while_loop"]


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
        tf = _tf()
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
    def __init__(self, graph, ctx):
        self.graph, self.ctx = graph, ctx

    def __enter__(self):
        self.saved = self.graph._cf_ctx
        self.graph._cf_ctx = self.ctx

    def __exit__(self, *exc):
        self.graph._cf_ctx = self.saved


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
        flat = [tf.convert_to_tensor(v) for v in _flatten(loop_vars)]
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
            pred = cond(*_pack(loop_vars, [m.outputs[0] for m in merges]))
            pred = ctx.output(pred)
        if pred.dtype != tf.bool or pred.shape.ndims not in (None, 0):
            raise ValueError("cond must return a bool scalar, got "
                             f"{pred.dtype.name} of shape {pred.shape}")
        lc = g._make_raw("LoopCond", "LoopCond", (pred,), ctx=ctx).outputs[0]
        switches = [g._make_raw("Switch", "Switch", (m.outputs[0], lc), ctx=ctx) for m in merges]
        ids = [g._make_raw("Identity", "Identity", (sw.outputs[1],), ctx=ctx) for sw in switches]
        ctx.pivot = ids[0]
        with _entered(g, ctx):
            r = body(*_pack(loop_vars, [i.outputs[0] for i in ids]))
            if not _is_seq(r):
                r = [r]
            if not _same_structure(loop_vars, r) and len(_flatten(r)) != len(flat):
                raise ValueError("The two structures don't have the same nested structure.\n\n"
                                 f"First structure: {loop_vars}\n\nSecond structure: {r}")
            outs = [ctx.output(x) for x in _flatten(r)]
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
    result = _pack(r if maximum_iterations is None else (0, r[1]), exits)
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
