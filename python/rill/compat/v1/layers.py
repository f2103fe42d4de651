"""tf.layers (TF 1.x's, tf.compat.v1.layers): dense, conv2d, conv2d_transpose, max_pooling2d,
average_pooling2d, dropout, flatten, batch_normalization, and their classes, composed from the
C library's ops (MatMul, BiasAdd, Conv2D, Conv2DBackpropInput, MaxPool, AvgPool, Dropout,
Reshape, Mean, Square, Sqrt, ...).

Names are TF's one to one: a layer without a name takes a unique variable scope of its snake
case class name ("dense", "dense_1", ... inside the enclosing variable scope, TF's counting); the
functions with name= use that scope exactly (a second one without reuse is TF's "already
exists" ValueError). Variables are made by get_variable in the layer's scope ("dense/kernel:0",
"batch_normalization/moving_mean:0"), ops in the name scope the scope opened first
("dense/MatMul"; a second call of one layer object "dense/MatMul_1"), a regularizer's loss under
"<var>/Regularizer/" in REGULARIZATION_LOSSES.

Where TF uses tf.cond on a `training` tensor, rill computes both branches and blends them
arithmetically (this predates rill's tf.cond; it gives TF's values for finite inputs): with t = cast(training, dtype), out = t * a +
(1 - t) * b, exact for t in {0, 1}. batch_normalization's moving averages then move by
t * (1 - momentum) * (moving - batch), nothing when training is false. Only channels_last data
(NHWC, the C convolutions' layout) is supported: channels_first is a ValueError."""
import sys as _sys

import numpy as _np

__all__ = ["Layer", "Dense", "Conv2D", "Conv2DTranspose", "MaxPooling2D", "AveragePooling2D",
           "Dropout", "Flatten", "BatchNormalization", "dense", "conv2d", "conv2d_transpose",
           "max_pooling2d", "average_pooling2d", "dropout", "flatten", "batch_normalization",
           "Convolution2D", "Convolution2DTranspose", "Deconvolution2D", "MaxPool2D",
           "AvgPool2D", "InputSpec"]


def _tf():
    return _sys.modules[__package__]


def _snake(name):
    import re
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def _pair(v, what):
    if isinstance(v, (int, _np.integer)):
        return (int(v), int(v))
    v = tuple(int(x) for x in v)
    if len(v) != 2:
        raise ValueError(f"The `{what}` argument must be a tuple of 2 integers. Received: {v}")
    return v


def _padding(p):
    p = str(p).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be a list/tuple or one of \"valid\", "
                         f"\"same\" (or \"causal\", only for `Conv1D). Received: {p}")
    return p.upper()


def _data_format(df):
    df = "channels_last" if df is None else str(df).lower()
    if df == "channels_first":
        raise ValueError("data_format='channels_first' is not supported by rill: its "
                         "convolutions and pools take NHWC (channels_last) data only")
    if df != "channels_last":
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         f"\"channels_last\". Received: {df}")
    return df


def _static_dims(x):
    s = x.shape
    return None if s.ndims is None else s.as_list()


def _blend(training, a_fn, b_fn, dtype):
    """a_fn() where training (a Python bool or a bool tensor), else b_fn()."""
    tf = _tf()
    if isinstance(training, (bool, _np.bool_)) or training is None:
        return a_fn() if training else b_fn()
    t = tf.cast(training, dtype)
    return t * a_fn() + (1.0 - t) * b_fn()


class InputSpec:
    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype, self.shape, self.ndim = dtype, shape, ndim
        self.max_ndim, self.min_ndim, self.axes = max_ndim, min_ndim, axes or {}


class Layer:
    """TF 1.x's tf.layers.Layer: a callable owning variables in its variable scope."""

    def __init__(self, trainable=True, name=None, dtype=None, _scope=None, _reuse=None,
                 activity_regularizer=None, **kwargs):
        allowed = {"input_shape", "batch_input_shape", "batch_size", "weights",
                   "autocast", "dynamic", "input_dim"}
        for k in kwargs:
            if k not in allowed:
                raise TypeError(f"Keyword argument not understood: {k}")
        self.trainable = trainable
        self.built = False
        self._reuse = _reuse
        self._base_name = name or _snake(type(self).__name__)
        self._scope = None
        self._scope_arg = _scope
        self._first_name_scope = None
        self.name = name or self._base_name
        self._dtype = None if dtype is None else _tf().as_dtype(dtype)
        self.activity_regularizer = activity_regularizer
        self._weights = []
        self._updates = []
        self._losses = []
        self.input_spec = None

    # --- properties TF's layers have ---
    dtype = property(lambda self: self._dtype)
    scope_name = property(lambda self: self._scope.name if self._scope else None)

    @property
    def variables(self):
        return list(self._weights)

    weights = variables

    @property
    def trainable_variables(self):
        if not self.trainable:
            return []
        tv = set(id(v) for v in _tf().trainable_variables())
        return [v for v in self._weights if id(v) in tv]

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self):
        tw = set(id(v) for v in self.trainable_variables)
        return [v for v in self._weights if id(v) not in tw]

    non_trainable_weights = non_trainable_variables

    @property
    def updates(self):
        return list(self._updates)

    @property
    def losses(self):
        return list(self._losses)

    def get_weights(self):
        sess = _tf().get_default_session()
        return [sess.run(v) for v in self._weights]

    def count_params(self):
        return int(sum(_np.prod(v.shape.as_list()) for v in self._weights))

    def add_update(self, updates, inputs=None):
        updates = updates if isinstance(updates, (list, tuple)) else [updates]
        for u in updates:
            self._updates.append(u)
            _tf().add_to_collection("update_ops", u)

    def add_loss(self, losses, inputs=None):
        losses = losses if isinstance(losses, (list, tuple)) else [losses]
        for l in losses:
            self._losses.append(l)
            _tf().add_to_collection("regularization_losses", l)

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, partitioner=None, use_resource=None,
                   synchronization=None, aggregation=None, getter=None, **kwargs):
        tf = _tf()
        if trainable is None:
            trainable = True
        dtype = dtype or self._dtype or tf.float32
        v = tf.get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                            regularizer=regularizer, trainable=trainable and self.trainable,
                            constraint=constraint, partitioner=partitioner)
        if regularizer is not None:
            regs = tf.get_collection("regularization_losses")
            if regs and regs[-1].name.startswith(v.op.name + "/Regularizer/"):
                self._losses.append(regs[-1])
        if all(v is not w for w in self._weights):
            self._weights.append(v)
        return v

    # --- scopes, as TF's legacy layers set them ---
    def _set_scope(self, scope=None):
        tf = _tf()
        if self._scope is None:
            if self._reuse:
                with tf.variable_scope(scope if scope is not None else self._base_name) as sc:
                    self._scope = sc
            else:
                with tf.variable_scope(scope, default_name=self._base_name) as sc:
                    self._scope = sc
            self.name = self._scope.name.split("/")[-1] if self._scope_arg is None else \
                self.name

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def __call__(self, inputs, *args, **kwargs):
        tf = _tf()
        scope_arg = kwargs.pop("scope", None)
        self._set_scope(scope_arg if scope_arg is not None else self._scope_arg)
        if not isinstance(inputs, (tf.Tensor, tf.Variable)):
            inputs = tf.convert_to_tensor(inputs, dtype=self._dtype)
        elif isinstance(inputs, tf.Variable):
            inputs = inputs.value()
        if self._dtype is None:
            self._dtype = inputs.dtype if inputs.dtype.is_floating else tf.float32
        reuse = True if self.built else (self._reuse or None)
        g = tf.get_default_graph()
        with tf.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            g._g.push_name_scope(self._scope.original_name_scope or "/")
            try:
                if not self.built:
                    self.build(inputs.shape)
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    with tf.name_scope("ActivityRegularizer"):
                        loss = self.activity_regularizer(outputs)
                        batch = tf.cast(tf.shape(outputs)[0], loss.dtype)
                        self.add_loss(tf.truediv(loss, batch))
            finally:
                g._g.pop_name_scope()
        return outputs

    apply = __call__


def _activation(fn, x):
    return x if fn is None else fn(x)


class Dense(Layer):
    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def build(self, input_shape):
        tf = _tf()
        dims = input_shape.as_list() if input_shape.ndims is not None else None
        if not dims or dims[-1] is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        self.kernel = self.add_weight("kernel", [dims[-1], self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.units],
                                        initializer=self.bias_initializer or
                                        tf.zeros_initializer(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        tf = _tf()
        dims = _static_dims(inputs)
        if len(dims) > 2:
            # TF's tensordot: flatten the leading axes, multiply, restore them
            lead = dims[:-1]
            if sum(d is None for d in lead) > 1:
                raise ValueError("rill's Dense on rank > 2 inputs needs at most one unknown "
                                 f"leading dimension, got shape {dims}")
            flat = tf.reshape(inputs, [-1, dims[-1]])
            out = tf.matmul(flat, self.kernel)
            out = tf.reshape(out, [-1 if d is None else d for d in lead] + [self.units])
        else:
            out = tf.matmul(inputs, self.kernel)
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return _activation(self.activation, out)


class Conv2D(Layer):
    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        if self.dilation_rate != (1, 1) and self.strides != (1, 1):
            raise ValueError("`strides > 1` not supported in conjunction with "
                             "`dilation_rate > 1`")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def _in_channels(self, input_shape):
        dims = input_shape.as_list() if input_shape.ndims is not None else None
        if not dims or len(dims) != 4:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=4, found ndim={len(dims) if dims else None}. Full "
                             f"shape received: {input_shape}")
        if dims[-1] is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found "
                             "`None`.")
        return dims[-1]

    def _kernel_shape(self, cin):
        return list(self.kernel_size) + [cin, self.filters]

    def build(self, input_shape):
        tf = _tf()
        cin = self._in_channels(input_shape)
        self.kernel = self.add_weight("kernel", self._kernel_shape(cin),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters],
                                        initializer=self.bias_initializer or
                                        tf.zeros_initializer(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        tf = _tf()
        out = tf.nn.conv2d(inputs, self.kernel, strides=[1, *self.strides, 1],
                           padding=self.padding, dilations=[1, *self.dilation_rate, 1])
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return _activation(self.activation, out)


def _deconv_length(n, k, padding, stride, dilation=1):
    if n is None:
        return None
    k = k + (k - 1) * (dilation - 1)
    if padding == "VALID":
        return n * stride + max(k - stride, 0)
    return n * stride


class Conv2DTranspose(Conv2D):
    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)

    def _kernel_shape(self, cin):
        return list(self.kernel_size) + [self.filters, cin]

    def call(self, inputs):
        tf = _tf()
        n, h, w, _ = _static_dims(inputs)
        oh = _deconv_length(h, self.kernel_size[0], self.padding, self.strides[0])
        ow = _deconv_length(w, self.kernel_size[1], self.padding, self.strides[1])
        if oh is None or ow is None:
            raise ValueError("rill's conv2d_transpose needs the input's height and width known "
                             f"when the graph is built, got shape {[n, h, w]}")
        g = tf.get_default_graph()
        if n is not None:
            sizes = tf.constant([n, oh, ow, self.filters], dtype=tf.int32)
        else:  # the batch from the input's shape: Shape * [1,0,0,0] + [0,h,w,c]
            sizes = tf.add(tf.multiply(tf.shape(inputs),
                                       tf.constant([1, 0, 0, 0], dtype=tf.int32)),
                           tf.constant([0, oh, ow, self.filters], dtype=tf.int32))
        attrs = {"strides": ("ints", [1, *self.strides, 1]),
                 "padding": ("string", self.padding), "data_format": ("string", "NHWC"),
                 "dilations": ("ints", [1, 1, 1, 1]), "T": tf._attr_type(inputs.dtype)}
        out = g._make("Conv2DBackpropInput", "conv2d_transpose",
                      (sizes, self.kernel.value(), inputs), attrs).outputs[0]
        if n is None:  # the static shape the sizes' arithmetic hid
            out = tf.reshape(out, [-1, oh, ow, self.filters])
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return _activation(self.activation, out)


class _Pooling2D(Layer):
    _op = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides if strides is not None else pool_size, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        tf = _tf()
        fn = tf.nn.max_pool if self._op == "MaxPool" else tf.nn.avg_pool
        return fn(inputs, ksize=[1, *self.pool_size, 1], strides=[1, *self.strides, 1],
                  padding=self.padding)


class MaxPooling2D(_Pooling2D):
    _op = "MaxPool"


class AveragePooling2D(_Pooling2D):
    _op = "AvgPool"


class Flatten(Layer):
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        tf = _tf()
        dims = _static_dims(inputs)
        if dims is None:
            raise ValueError("rill's Flatten needs the input's rank known")
        if len(dims) == 1:
            return tf.expand_dims(inputs, 1)
        rest = dims[1:]
        if any(d is None for d in rest):
            raise ValueError(f"rill's Flatten needs every dimension but the first known, got "
                             f"shape {dims}")
        n = int(_np.prod(rest))
        return tf.reshape(inputs, tf.constant([-1, n], dtype=tf.int32, name="Const"))


class Dropout(Layer):
    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        tf = _tf()
        with tf.name_scope("dropout"):
            return _blend(training,
                          lambda: tf.nn.dropout(inputs, rate=self.rate,
                                                noise_shape=self.noise_shape, seed=self.seed),
                          lambda: inputs, inputs.dtype)


# --- batch normalization ---

def _moments_and_normalize(x, axes, gamma, beta, epsilon, fused_like):
    """Batch statistics and the normalized x, composed from ops: the path where TF 1.x does
    not fuse, and where TF fuses but rill's FusedBatchNormV3 cannot (NHWC only: NCHW, 5-D,
    float16). Returns (y, mean, variance for the moving average); fused_like: the moving
    variance is the unbiased (n / (n - 1)) batch variance, as TF's fused kernel's, else the
    biased one, as TF's composed path."""
    tf = _tf()
    mean = tf.reduce_mean(x, axes, keepdims=True, name="mean")
    var = tf.reduce_mean(tf.square(tf.subtract(x, mean)), axes, keepdims=True, name="variance")
    y = _normalize(x, mean, var, gamma, beta, epsilon)
    keep = [i for i in range(len(x.shape.as_list())) if i not in axes]
    c = [x.shape.as_list()[i] for i in keep]
    mean_c = tf.reshape(mean, c)
    var_c = tf.reshape(var, c)
    if fused_like:
        dims = x.shape.as_list()
        n = [dims[i] for i in axes]
        if all(d is not None for d in n):
            count = float(_np.prod(n))
            var_c = var_c * (count / max(count - 1.0, 1.0))
        else:
            count = tf.cast(tf.truediv(tf.reduce_sum(tf.ones_like(x)), float(_np.prod(c))),
                            x.dtype)
            var_c = var_c * count / tf.maximum(count - 1.0, 1.0)
    return y, mean_c, var_c


def _normalize(x, mean, var, gamma, beta, epsilon):
    """TF's batch_normalization formula: x * inv + (beta - mean * inv), inv = gamma /
    sqrt(var + epsilon)."""
    tf = _tf()
    with tf.name_scope("batchnorm"):
        inv = tf.truediv(1.0, tf.sqrt(var + epsilon))
        if gamma is not None:
            inv = inv * gamma
        shift = -mean * inv if beta is None else beta - mean * inv
        return x * inv + shift


class BatchNormalization(Layer):
    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=None, gamma_initializer=None,
                 moving_mean_initializer=None, moving_variance_initializer=None,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise ValueError("rill's batch_normalization has no renorm, virtual_batch_size or "
                             "adjustment")
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise ValueError("rill's batch_normalization normalizes over one axis")
            axis = axis[0]
        self.axis = int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        tf = _tf()
        dims = input_shape.as_list() if input_shape.ndims is not None else None
        if dims is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        ax = self.axis % len(dims)
        if dims[ax] is None:
            raise ValueError(f"Input has undefined `axis` dimension. Received input with shape "
                             f"{input_shape}. Axis value: {self.axis}")
        self._ax, self._rank = ax, len(dims)
        c = [dims[ax]]
        if self.scale:
            self.gamma = self.add_weight("gamma", c, initializer=self.gamma_initializer or
                                         tf.ones_initializer(),
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", c, initializer=self.beta_initializer or
                                        tf.zeros_initializer(),
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.moving_mean = self.add_weight("moving_mean", c, trainable=False,
                                           initializer=self.moving_mean_initializer or
                                           tf.zeros_initializer())
        self.moving_variance = self.add_weight("moving_variance", c, trainable=False,
                                               initializer=self.moving_variance_initializer or
                                               tf.ones_initializer())
        self.built = True

    def _bshape(self, v):
        """A [C] tensor shaped to broadcast against the input."""
        tf = _tf()
        if v is None or self._ax == self._rank - 1:
            return None if v is None else v.value() if isinstance(v, tf.Variable) else v
        shape = [1] * self._rank
        shape[self._ax] = -1
        return tf.reshape(v, shape)

    def _assign_moving_average(self, var, value, weight):
        """TF's assign_moving_average: var -= (var - value) * (1 - momentum) [* weight]."""
        tf = _tf()
        g = tf.get_default_graph()
        # the op takes its scope's name, as TF's: the scope is entered as an absolute prefix so
        # that the name stays free for the op
        prefix, i = g._g.name_scope(), 0
        name = "AssignMovingAvg"
        while g._g.find(prefix + name) is not None:
            i += 1
            name = f"AssignMovingAvg_{i}"
        full = prefix + name
        g._g.push_name_scope(full + "/")
        try:
            decay = tf.subtract(1.0, tf.constant(self.momentum, dtype=var.dtype))
            delta = tf.multiply(tf.subtract(var.value(), value), decay)
            if weight is not None:
                delta = delta * weight
        finally:
            g._g.pop_name_scope()
        g._g.push_name_scope("/")
        try:
            op = g._make("AssignSub", full, (var.value(), delta))
        finally:
            g._g.pop_name_scope()
        return op

    def _fused_like(self, dtype):
        """TF 1.x's rule (keras BatchNormalization, V1 behaviour): fused=None and fused=True
        both fuse when the input is 4-D with axis 1 or 3 (5-D: 1 or 4) and the compute dtype is
        float16, bfloat16 or float32; fused=False never. The fused kernel's moving variance is
        the unbiased (Bessel-corrected) batch variance."""
        tf = _tf()
        axes_ok = {4: (1, 3), 5: (1, 4)}.get(self._rank, ())
        return (self.fused is not False and self._ax in axes_ok and
                dtype in (tf.float16, tf.bfloat16, tf.float32))

    def _fused_call(self, inputs, training):
        """FusedBatchNormV3 (NHWC) as TF's _fused_batch_norm: the training op takes the moving
        statistics as its (unused) mean and variance, the inference op normalizes with them;
        a training tensor runs both and blends them (rill has no cond), and scales the moving
        averages' updates by it (TF's momentum 1.0 when not training)."""
        tf = _tf()
        c = self.moving_mean.shape.as_list()
        gamma = self.gamma if self.scale else tf.constant(1.0, tf.float32, shape=c)
        beta = self.beta if self.center else tf.constant(0.0, tf.float32, shape=c)

        def infer():
            return tf.nn.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                          variance=self.moving_variance, epsilon=self.epsilon,
                                          is_training=False, data_format="NHWC")[0]

        if isinstance(training, (bool, _np.bool_)) and not training:
            return infer()
        y, mean, var = tf.nn.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                              variance=self.moving_variance,
                                              epsilon=self.epsilon, is_training=True,
                                              data_format="NHWC")
        weight = None
        if not isinstance(training, (bool, _np.bool_)):
            weight = tf.cast(training, inputs.dtype)
            y = weight * y + (1.0 - weight) * infer()
        u1 = self._assign_moving_average(self.moving_mean, mean, weight)
        u2 = self._assign_moving_average(self.moving_variance, var, weight)
        self.add_update([u1, u2])
        return y

    def call(self, inputs, training=False):
        tf = _tf()
        axes = [i for i in range(self._rank) if i != self._ax]
        gamma, beta = self._bshape(self.gamma), self._bshape(self.beta)
        fused_like = self._fused_like(inputs.dtype)
        if fused_like and self._rank == 4 and self._ax == 3 and inputs.dtype == tf.float32:
            return self._fused_call(inputs, training)
        if isinstance(training, (bool, _np.bool_)) and not training:
            return _normalize(inputs, self._bshape(self.moving_mean),
                              self._bshape(self.moving_variance), gamma, beta, self.epsilon)
        y, mean, var = _moments_and_normalize(inputs, axes, gamma, beta, self.epsilon,
                                              fused_like)
        if isinstance(training, (bool, _np.bool_)):
            weight = None
        else:
            weight = tf.cast(training, inputs.dtype)
            y_inf = _normalize(inputs, self._bshape(self.moving_mean),
                               self._bshape(self.moving_variance), gamma, beta, self.epsilon)
            y = weight * y + (1.0 - weight) * y_inf
        u1 = self._assign_moving_average(self.moving_mean, mean, weight)
        u2 = self._assign_moving_average(self.moving_variance, var, weight)
        self.add_update([u1, u2])
        return y


# TF's aliases
Convolution2D = Conv2D
Convolution2DTranspose = Deconvolution2D = Conv2DTranspose
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D


# --- the functions: a layer object with _scope=name, called once ---

def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer(inputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    layer = Conv2D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                   use_bias=use_bias, kernel_initializer=kernel_initializer,
                   bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                   bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer(inputs)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    layer = Conv2DTranspose(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name,
                            _scope=name, _reuse=reuse)
    return layer(inputs)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return MaxPooling2D(pool_size, strides, padding=padding, data_format=data_format,
                        name=name, _scope=name)(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    return AveragePooling2D(pool_size, strides, padding=padding, data_format=data_format,
                            name=name, _scope=name)(inputs)


def flatten(inputs, name=None, data_format="channels_last"):
    return Flatten(name=name, data_format=data_format, _scope=name)(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name,
                   _scope=name)(inputs, training=training)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                               scale=scale, beta_initializer=beta_initializer,
                               gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               beta_regularizer=beta_regularizer,
                               gamma_regularizer=gamma_regularizer,
                               beta_constraint=beta_constraint,
                               gamma_constraint=gamma_constraint, renorm=renorm,
                               renorm_clipping=renorm_clipping,
                               renorm_momentum=renorm_momentum, fused=fused,
                               trainable=trainable, virtual_batch_size=virtual_batch_size,
                               adjustment=adjustment, name=name, _scope=name, _reuse=reuse)
    return layer(inputs, training=training)
from ._layers_breadth import *  # noqa: E402,F401,F403  (Conv1D, pooling 1-D, SeparableConv1D/2D, ...)


from ._layers3d import *  # noqa: E402,F401,F403  (Conv3D, conv3d, max_pooling3d, ...)
from ._layers3d import __all__ as _all3d  # noqa: E402
__all__ += _all3d
