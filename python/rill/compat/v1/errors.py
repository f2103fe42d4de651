"""tf.errors: OpError and a subclass per status code, raised with rill's (TensorFlow's) texts."""
from ... import _rill


class OpError(Exception):
    def __init__(self, message, error_code=None, node_def=None, op=None):
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self.node_def = node_def
        self.op = op

    def __str__(self):
        return self.message


OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, \
    PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, \
    UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = range(17)


def _cls(name, code):
    def __init__(self, message, error_code=code, node_def=None, op=None):
        OpError.__init__(self, message, code, node_def, op)
    return type(name, (OpError,), {"__init__": __init__, "__module__": __name__})


CancelledError = _cls("CancelledError", CANCELLED)
UnknownError = _cls("UnknownError", UNKNOWN)
InvalidArgumentError = _cls("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _cls("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _cls("NotFoundError", NOT_FOUND)
AlreadyExistsError = _cls("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _cls("PermissionDeniedError", PERMISSION_DENIED)
ResourceExhaustedError = _cls("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _cls("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _cls("AbortedError", ABORTED)
OutOfRangeError = _cls("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _cls("UnimplementedError", UNIMPLEMENTED)
InternalError = _cls("InternalError", INTERNAL)
UnavailableError = _cls("UnavailableError", UNAVAILABLE)
DataLossError = _cls("DataLossError", DATA_LOSS)
UnauthenticatedError = _cls("UnauthenticatedError", UNAUTHENTICATED)

# The class raised for each rill_code, by both extensions (rill._rill, rill._readers).
BY_CODE = {c.__init__.__defaults__[0]: c for c in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}
_rill.register_errors(BY_CODE)
