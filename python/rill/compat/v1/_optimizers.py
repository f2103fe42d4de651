"""tf.train's RMSPropOptimizer, AdadeltaOptimizer, FtrlOptimizer, ProximalAdagradOptimizer and
ProximalGradientDescentOptimizer over rill's C optimizers (src/train/optimizers.c; the updates
are the Apply* ops of src/graph/ops_apply.c). Slots are TF's: RMSProp's "rms" (ones), "mg"
(centered) and "momentum" as <var>/RMSProp, RMSProp_1, RMSProp_2; Adadelta's "accum" and
"accum_update"; Ftrl's "accum" (initial_accumulator_value) and "linear"; ProximalAdagrad's
"accumulator". Imported into tf.train by train.py."""
from ... import _rill
from .train import Optimizer, _v1

__all__ = ["RMSPropOptimizer", "AdadeltaOptimizer", "FtrlOptimizer", "ProximalAdagradOptimizer",
           "ProximalGradientDescentOptimizer", "AdagradDAOptimizer"]


def _init(self, kind, learning_rate, a=0.0, b=0.0, eps=0.0, flag=False, c=0.0, d=0.0, e=0.0,
          name=None, *step):
    tf = _v1()
    self._tf = tf
    self._lr_tensor = None
    if isinstance(learning_rate, (tf.Tensor, tf.Variable)):
        self._lr_tensor, learning_rate = learning_rate, 0.0
    self._opt = _rill.Optimizer(kind, float(learning_rate), float(a), float(b), float(eps),
                                bool(flag), float(c), float(d), float(e), *step)
    self._name = name


class RMSPropOptimizer(Optimizer):
    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        _init(self, "rmsprop", learning_rate, decay, momentum, epsilon, centered, name=name)


class AdadeltaOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        _init(self, "adadelta", learning_rate, rho, eps=epsilon, name=name)


class FtrlOptimizer(Optimizer):
    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        if initial_accumulator_value < 0.0:
            raise ValueError("initial_accumulator_value %f needs to be positive or zero" %
                             initial_accumulator_value)
        if learning_rate_power > 0.0:
            raise ValueError("learning_rate_power %f needs to be negative or zero" %
                             learning_rate_power)
        if l1_regularization_strength < 0.0:
            raise ValueError("l1_regularization_strength %f needs to be positive or zero" %
                             l1_regularization_strength)
        if l2_regularization_strength < 0.0:
            raise ValueError("l2_regularization_strength %f needs to be positive or zero" %
                             l2_regularization_strength)
        if l2_shrinkage_regularization_strength < 0.0:
            raise ValueError("l2_shrinkage_regularization_strength %f needs to be positive"
                             " or zero" % l2_shrinkage_regularization_strength)
        _init(self, "ftrl", learning_rate, learning_rate_power, initial_accumulator_value,
              0.0 if beta is None else beta, False, l1_regularization_strength,
              l2_regularization_strength, l2_shrinkage_regularization_strength, name=name)


class ProximalAdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s" %
                             initial_accumulator_value)
        _init(self, "proximal_adagrad", learning_rate, initial_accumulator_value,
              c=l1_regularization_strength, d=l2_regularization_strength, name=name)


class ProximalGradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        _init(self, "proximal_sgd", learning_rate, c=l1_regularization_strength,
              d=l2_regularization_strength, name=name)


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (ApplyAdagradDA; SparseApplyAdagradDA for a gather's gradient):
    slots "gradient_accumulator" and "gradient_squared_accumulator" as <var>/AdagradDA and
    <var>/AdagradDA_1; the updates read global_step + 1 (int64, as TF's op requires) when they
    run, before minimize(global_step=...) increments it."""

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: %s" %
                             initial_gradient_squared_accumulator_value)
        tf = _v1()
        step = tf.convert_to_tensor(global_step)
        _init(self, "adagrad_da", learning_rate, initial_gradient_squared_accumulator_value, 0.0,
              0.0, False, l1_regularization_strength, l2_regularization_strength, 0.0, name,
              (step.graph._g, step._out))
        self._global_step = global_step
