"""tf.contrib.framework: the global step and variable listing functions."""
import sys as _sys

__all__ = ["get_or_create_global_step", "get_global_step", "get_variables", "get_model_variables",
           "get_trainable_variables", "get_local_variables", "get_variables_by_name",
           "get_variables_to_restore"]


def _tf():
    return _sys.modules["rill.compat.v1"]


def get_or_create_global_step(graph=None):
    return _tf().train.get_or_create_global_step(graph)


def get_global_step(graph=None):
    return _tf().train.get_global_step(graph)


def get_variables(scope=None, suffix=None, collection="variables"):
    if scope is not None and not isinstance(scope, str):
        scope = scope.name
    vs = _tf().get_collection(collection, scope)
    if suffix is not None:
        vs = [v for v in vs if v.op.name.endswith(suffix)]
    return vs


def get_model_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, "model_variables")


def get_trainable_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, "trainable_variables")


def get_local_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, "local_variables")


def get_variables_by_name(given_name, scope=None):
    return get_variables(scope=scope, suffix="/" + given_name) + [
        v for v in get_variables(scope=scope) if v.op.name == given_name]


def get_variables_to_restore(include=None, exclude=None):
    vs = get_variables()
    if include is not None:
        vs = [v for v in vs if any(v.op.name.startswith(s) for s in include)]
    if exclude is not None:
        vs = [v for v in vs if not any(v.op.name.startswith(s) for s in exclude)]
    return vs
