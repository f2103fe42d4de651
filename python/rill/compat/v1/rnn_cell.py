"""tf.nn.rnn_cell (TF 1.x): the recurrent cells, and tf.nn.static_rnn /
static_bidirectional_rnn, which unroll a cell over a Python list of time steps (no control flow
in the graph). The cells make their variables on their first call, in TF's scopes and names
(`rnn/basic_lstm_cell/kernel`, `rnn/multi_rnn_cell/cell_0/gru_cell/gates/bias`, ...) with TF's
shapes and gate orders, so that TF's checkpoints map onto them one to one:
  BasicRNNCell  h' = act([x, h] W + b)
  BasicLSTMCell [i, j, f, o] = [x, h] W + b; c' = c sig(f + forget_bias) + sig(i) act(j);
                h' = act(c') sig(o)
  LSTMCell      the same, with peepholes (w_i_diag, w_f_diag, w_o_diag), cell_clip, a
                projection (projection/kernel) and proj_clip
  GRUCell       [r, u] = sig([x, h] Wg + bg) (bg starts at 1); c = act([x, r h] Wc + bc);
                h' = u h + (1 - u) c
tf.nn.dynamic_rnn and bidirectional_dynamic_rnn run the cell in a tf.while_loop over time with
TensorArrays for the inputs and outputs, as TF's do."""
import collections as _collections
import sys as _sys

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
           "DropoutWrapper", "ResidualWrapper", "LSTMStateTuple", "static_rnn",
           "static_bidirectional_rnn"]


def _tf():
    return _sys.modules[__package__]


class LSTMStateTuple(_collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: (c, h)."""
    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError("Inconsistent internal state: %s vs %s" % (c.dtype, h.dtype))
        return c.dtype


def _flatten(s):
    if isinstance(s, (tuple, list)):
        out = []
        for x in s:
            out.extend(_flatten(x))
        return out
    return [s]


def _zeros_like_size(size, batch, dtype):
    tf = _tf()
    if isinstance(size, LSTMStateTuple):
        return LSTMStateTuple(_zeros_like_size(size.c, batch, dtype),
                              _zeros_like_size(size.h, batch, dtype))
    if isinstance(size, (tuple, list)):
        return tuple(_zeros_like_size(x, batch, dtype) for x in size)
    if not isinstance(batch, tf.Tensor):
        return tf.zeros([batch, size], dtype=dtype)
    return tf.zeros(tf.stack([batch, size]), dtype=dtype)  # shape (?, size), as TF infers


class RNNCell:
    """The cell protocol: state_size, output_size, zero_state and __call__(inputs, state) ->
    (output, new_state), the variables made on the first call under the cell's scope."""

    def __init__(self, reuse=None, name=None, dtype=None):
        self._reuse = reuse
        self._name = name
        self._dtype = dtype
        self._built = False
        self._scope = None
        self._variables = []

    @property
    def state_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    def _default_name(self):
        raise NotImplementedError

    @property
    def name(self):
        return self._name or self._default_name()

    @property
    def trainable_variables(self):
        return list(self._variables)

    @property
    def variables(self):
        return list(self._variables)

    weights = variables
    trainable_weights = trainable_variables

    def zero_state(self, batch_size, dtype):
        tf = _tf()
        with tf.name_scope(type(self).__name__ + "ZeroState"):
            return _zeros_like_size(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        tf = _tf()
        if inputs is not None:
            batch_size = tf.shape(inputs)[0] if inputs.shape[0] is None else int(inputs.shape[0])
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype or tf.float32)

    def _variable(self, name, shape, dtype, initializer=None):
        v = _tf().get_variable(name, shape=shape, dtype=dtype, initializer=initializer)
        if v not in self._variables:
            self._variables.append(v)
        return v

    def __call__(self, inputs, state, scope=None):
        tf = _tf()
        if scope is not None:
            ctx = tf.variable_scope(scope, reuse=self._reuse)
        elif self._scope is not None:
            ctx = tf.variable_scope(self._scope, reuse=True)
        else:
            ctx = tf.variable_scope(None, default_name=self.name, reuse=self._reuse)
        with ctx as vs:
            if self._scope is None:
                self._scope = vs
            out = self.call(tf.convert_to_tensor(inputs), state)
        self._built = True
        return out

    def call(self, inputs, state):
        raise NotImplementedError


def _input_depth(inputs):
    d = inputs.shape[-1]
    if d is None:
        raise ValueError("Expected inputs.shape[-1] to be known, saw shape: %s" % (inputs.shape,))
    return int(d)


def _activation(act):
    return act or _tf().tanh


class _UnitsCell(RNNCell):
    """A cell whose state and output are num_units wide (BasicRNNCell, GRUCell)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = num_units
        self._act = _activation(activation)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units


class BasicRNNCell(_UnitsCell):
    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(num_units, activation, reuse, name, dtype)

    def _default_name(self):
        return "basic_rnn_cell"

    def call(self, inputs, state):
        tf = _tf()
        dt = inputs.dtype
        k = self._variable("kernel", [_input_depth(inputs) + self._num_units, self._num_units], dt)
        b = self._variable("bias", [self._num_units], dt, tf.zeros_initializer())
        h = self._act(tf.nn.bias_add(tf.matmul(tf.concat([inputs, state], 1), k), b))
        return h, h


class GRUCell(_UnitsCell):
    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(num_units, activation, reuse, name, dtype)
        self._kinit, self._binit = kernel_initializer, bias_initializer

    def _default_name(self):
        return "gru_cell"

    def call(self, inputs, state):
        tf = _tf()
        dt, n, d = inputs.dtype, self._num_units, _input_depth(inputs)
        with tf.variable_scope("gates"):
            gk = self._variable("kernel", [d + n, 2 * n], dt, self._kinit)
            gb = self._variable("bias", [2 * n], dt, self._binit or tf.constant_initializer(1.0))
        with tf.variable_scope("candidate"):
            ck = self._variable("kernel", [d + n, n], dt, self._kinit)
            cb = self._variable("bias", [n], dt, self._binit or tf.zeros_initializer())
        gates = tf.sigmoid(tf.nn.bias_add(tf.matmul(tf.concat([inputs, state], 1), gk), gb))
        r, u = tf.split(gates, 2, axis=1)
        c = self._act(tf.nn.bias_add(tf.matmul(tf.concat([inputs, r * state], 1), ck), cb))
        h = u * state + (1 - u) * c
        return h, h


class BasicLSTMCell(RNNCell):
    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._tuple = state_is_tuple
        self._act = _activation(activation)

    def _default_name(self):
        return "basic_lstm_cell"

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._tuple else 2 * n

    @property
    def output_size(self):
        return self._num_units

    def call(self, inputs, state):
        tf = _tf()
        dt, n = inputs.dtype, self._num_units
        c, h = state if self._tuple else tf.split(state, 2, axis=1)
        k = self._variable("kernel", [_input_depth(inputs) + n, 4 * n], dt)
        b = self._variable("bias", [4 * n], dt, tf.zeros_initializer())
        gates = tf.nn.bias_add(tf.matmul(tf.concat([inputs, h], 1), k), b)
        i, j, f, o = tf.split(gates, 4, axis=1)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * self._act(j)
        new_h = self._act(new_c) * tf.sigmoid(o)
        return new_h, (LSTMStateTuple(new_c, new_h) if self._tuple
                       else tf.concat([new_c, new_h], 1))


class LSTMCell(RNNCell):
    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units, self._peep, self._cell_clip = num_units, use_peepholes, cell_clip
        self._init, self._num_proj, self._proj_clip = initializer, num_proj, proj_clip
        self._forget_bias, self._tuple = forget_bias, state_is_tuple
        self._act = _activation(activation)

    def _default_name(self):
        return "lstm_cell"

    @property
    def state_size(self):
        n, p = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, p) if self._tuple else n + p

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def call(self, inputs, state):
        tf = _tf()
        dt, n = inputs.dtype, self._num_units
        p = self._num_proj or n
        if self._tuple:
            c_prev, m_prev = state
        else:
            c_prev = tf.slice(state, [0, 0], [-1, n])
            m_prev = tf.slice(state, [0, n], [-1, p])
        k = self._variable("kernel", [_input_depth(inputs) + p, 4 * n], dt, self._init)
        b = self._variable("bias", [4 * n], dt, tf.zeros_initializer())
        gates = tf.nn.bias_add(tf.matmul(tf.concat([inputs, m_prev], 1), k), b)
        i, j, f, o = tf.split(gates, 4, axis=1)
        if self._peep:
            wf = self._variable("w_f_diag", [n], dt, self._init)
            wi = self._variable("w_i_diag", [n], dt, self._init)
            wo = self._variable("w_o_diag", [n], dt, self._init)
            c = (tf.sigmoid(f + self._forget_bias + wf * c_prev) * c_prev +
                 tf.sigmoid(i + wi * c_prev) * self._act(j))
        else:
            c = tf.sigmoid(f + self._forget_bias) * c_prev + tf.sigmoid(i) * self._act(j)
        if self._cell_clip is not None:
            c = tf.clip_by_value(c, -self._cell_clip, self._cell_clip)
        m = tf.sigmoid(o + wo * c) * self._act(c) if self._peep else tf.sigmoid(o) * self._act(c)
        if self._num_proj is not None:
            with tf.variable_scope("projection"):
                pk = self._variable("kernel", [n, self._num_proj], dt, self._init)
            m = tf.matmul(m, pk)
            if self._proj_clip is not None:
                m = tf.clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, (LSTMStateTuple(c, m) if self._tuple else tf.concat([c, m], 1))


class MultiRNNCell(RNNCell):
    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        self._cells, self._tuple = list(cells), state_is_tuple

    def _default_name(self):
        return "multi_rnn_cell"

    @property
    def state_size(self):
        sizes = tuple(c.state_size for c in self._cells)
        return sizes if self._tuple else sum(_flatten(sizes))

    @property
    def output_size(self):
        return self._cells[-1].output_size

    @property
    def variables(self):
        return [v for c in self._cells for v in c.variables]

    trainable_variables = variables

    def zero_state(self, batch_size, dtype):
        tf = _tf()
        with tf.name_scope(type(self).__name__ + "ZeroState"):
            if self._tuple:
                return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
            return _zeros_like_size(self.state_size, batch_size, dtype)

    def call(self, inputs, state):
        tf = _tf()
        cur, new_states, start = inputs, [], 0
        for i, cell in enumerate(self._cells):
            with tf.variable_scope("cell_%d" % i):
                if self._tuple:
                    s = state[i]
                else:
                    size = sum(_flatten(cell.state_size))
                    s = tf.slice(state, [0, start], [-1, size])
                    start += size
                cur, ns = cell(cur, s)
                new_states.append(ns)
        return cur, (tuple(new_states) if self._tuple else tf.concat(new_states, 1))


class _Wrapper(RNNCell):
    def __init__(self, cell):
        super().__init__()
        self._cell = cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    @property
    def variables(self):
        return self._cell.variables

    trainable_variables = variables

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self.call(_tf().convert_to_tensor(inputs), state, scope)


class DropoutWrapper(_Wrapper):
    """Dropout on the cell's inputs, outputs and (not of an LSTM's c, as TF) state."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(cell)
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper(variational_recurrent=True) is not "
                                      "supported yet")
        self._in, self._out, self._st, self._seed = (input_keep_prob, output_keep_prob,
                                                     state_keep_prob, seed)

    @staticmethod
    def _keeps(p):
        return not (isinstance(p, (int, float)) and float(p) == 1.0)

    def _drop(self, x, p, salt):
        seed = None if self._seed is None else self._seed + salt
        return _tf().nn.dropout(x, keep_prob=p, seed=seed)

    def call(self, inputs, state, scope=None):
        if self._keeps(self._in):
            inputs = self._drop(inputs, self._in, 1)
        out, new_state = self._cell(inputs, state, scope=scope)
        if self._keeps(self._st):
            if isinstance(new_state, LSTMStateTuple):
                new_state = LSTMStateTuple(new_state.c, self._drop(new_state.h, self._st, 2))
            elif not isinstance(new_state, tuple):
                new_state = self._drop(new_state, self._st, 2)
        if self._keeps(self._out):
            out = self._drop(out, self._out, 3)
        return out, new_state


class ResidualWrapper(_Wrapper):
    """The cell's output plus its input."""

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._fn = residual_fn or (lambda i, o: i + o)

    def call(self, inputs, state, scope=None):
        out, new_state = self._cell(inputs, state, scope=scope)
        return self._fn(inputs, out), new_state


def _batch_of(x):
    tf = _tf()
    b = x.shape[0]
    return int(b) if b is not None else tf.shape(x)[0]


def _select(keep, new, old):
    """Rows of new where keep (bool [batch]), else old; nested alike."""
    tf = _tf()
    if isinstance(new, LSTMStateTuple):
        return LSTMStateTuple(_select(keep, new.c, old.c), _select(keep, new.h, old.h))
    if isinstance(new, (tuple, list)):
        return tuple(_select(keep, n, o) for n, o in zip(new, old))
    return tf.where(keep, new, old)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Unrolls cell over inputs (a list of [batch, depth] tensors): (outputs, state). With
    sequence_length, a row's outputs past its length are zeros and its state is the one at its
    last step, as TF's."""
    tf = _tf()
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    outputs = []
    with tf.variable_scope(scope or "rnn") as vs:
        first = tf.convert_to_tensor(inputs[0])
        batch = _batch_of(first)
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            state = cell.zero_state(batch, dtype)
        if sequence_length is not None:
            sequence_length = tf.cast(sequence_length, tf.int32)
        for t, x in enumerate(inputs):
            if t > 0:
                vs.reuse_variables()
            out, new_state = cell(x, state)
            if sequence_length is not None:
                keep = tf.less(tf.constant(t, tf.int32), sequence_length)
                out = tf.where(keep, out, tf.zeros_like(out))
                new_state = _select(keep, new_state, state)
            outputs.append(out)
            state = new_state
    return outputs, state


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs, state_fw, state_bw): outputs[t] is the forward and backward outputs at t,
    concatenated (the backward cell runs over the reversed inputs)."""
    tf = _tf()
    if sequence_length is not None:
        raise NotImplementedError("static_bidirectional_rnn(sequence_length=...) is not "
                                  "supported yet")
    with tf.variable_scope(scope or "bidirectional_rnn"):
        with tf.variable_scope("fw") as fw_scope:
            out_fw, st_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, scope=fw_scope)
        with tf.variable_scope("bw") as bw_scope:
            rev, st_bw = static_rnn(cell_bw, list(reversed(inputs)), initial_state_bw, dtype,
                                    scope=bw_scope)
    out_bw = list(reversed(rev))
    outputs = [tf.concat([f, b], 1) for f, b in zip(out_fw, out_bw)]
    return outputs, st_fw, st_bw


def _transpose_batch_time(x):
    """[batch, time, ...] <-> [time, batch, ...]."""
    tf = _tf()
    r = x.shape.ndims
    if r is None or r < 2:
        raise ValueError(f"Expected input tensor {x.name} to have rank at least 2, but saw "
                         f"shape: {x.shape}")
    return tf.transpose(x, [1, 0] + list(range(2, r)))


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """cell over inputs ([batch, time, depth], or [time, batch, depth] when time_major) in a
    tf.while_loop over time: (outputs, state). With sequence_length, a row's outputs past its
    length are zeros and its state the one at its last step, as TF's."""
    tf = _tf()
    from .control_flow import TensorArray, _pack, while_loop
    with tf.variable_scope(scope or "rnn"):
        flat = [tf.convert_to_tensor(x) for x in _flatten(inputs)]
        if not time_major:
            flat = [_transpose_batch_time(x) for x in flat]
        if sequence_length is not None:
            sequence_length = tf.identity(tf.cast(sequence_length, tf.int32),
                                          name="sequence_length")
        first = flat[0]
        batch = int(first.shape[1]) if first.shape[1] is not None else tf.shape(first)[1]
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            state = cell.zero_state(batch, dtype)
        with tf.name_scope("dynamic_rnn") as base:
            steps_static = first.shape[0]
            steps = int(steps_static) if steps_static is not None else tf.shape(first)[0]
            out_dtype = dtype or _flatten(state)[0].dtype
            time = tf.constant(0, dtype=tf.int32, name="time")
            out_sizes = _flatten(cell.output_size)
            batch_static = batch if isinstance(batch, int) else None
            output_tas = [TensorArray(out_dtype, size=steps,
                                      element_shape=[batch_static, int(s)],
                                      tensor_array_name=f"{base}output_{k}")
                          for k, s in enumerate(out_sizes)]
            input_tas = [TensorArray(x.dtype, size=steps, element_shape=x.shape[1:],
                                     tensor_array_name=f"{base}input_{k}").unstack(x)
                         for k, x in enumerate(flat)]
            if sequence_length is not None:
                zeros = [tf.zeros(tf.stack([batch, int(s)]) if not isinstance(batch, int)
                                  else [batch, int(s)], dtype=out_dtype) for s in out_sizes]
                bound = tf.minimum(steps, tf.maximum(1, tf.reduce_max(sequence_length)))
            else:
                bound = steps

            def step(t, tas, st):
                xs = [ta.read(t) for ta in input_tas]
                x = xs[0] if not isinstance(inputs, (tuple, list)) else _pack(inputs, xs)
                out, new_st = cell(x, st)
                outs = _flatten(out)
                if sequence_length is not None:
                    keep = tf.less(t, sequence_length)
                    outs = [tf.where(keep, o, z) for o, z in zip(outs, zeros)]
                    new_st = _select(keep, new_st, st)
                return t + 1, [ta.write(t, o) for ta, o in zip(tas, outs)], new_st

            _, out_tas, final = while_loop(lambda t, *_: t < bound, step,
                                           (time, output_tas, state),
                                           parallel_iterations=parallel_iterations or 32,
                                           swap_memory=swap_memory, maximum_iterations=steps)
            outs = [ta.stack() for ta in out_tas]
        if not time_major:
            outs = [_transpose_batch_time(o) for o in outs]
        outputs = outs[0] if not isinstance(cell.output_size, (tuple, list)) else \
            _pack(cell.output_size, outs)
    return outputs, final


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """((outputs_fw, outputs_bw), (state_fw, state_bw)): the backward cell runs over each row
    reversed within its length (tf.reverse_sequence), its outputs reversed back."""
    tf = _tf()
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def rev(x):
        if sequence_length is not None:
            return tf.reverse_sequence(x, tf.cast(sequence_length, tf.int64), seq_axis=time_axis,
                                       batch_axis=batch_axis)
        return tf.reverse(x, axis=[time_axis])

    with tf.variable_scope(scope or "bidirectional_rnn"):
        with tf.variable_scope("fw") as fw_scope:
            out_fw, st_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                        dtype, parallel_iterations, swap_memory, time_major,
                                        scope=fw_scope)
        with tf.variable_scope("bw") as bw_scope:
            tmp, st_bw = dynamic_rnn(cell_bw, rev(inputs), sequence_length, initial_state_bw,
                                     dtype, parallel_iterations, swap_memory, time_major,
                                     scope=bw_scope)
    return (out_fw, rev(tmp)), (st_fw, st_bw)
