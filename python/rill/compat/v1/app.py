"""tf.app: ``run`` and ``flags`` (the same module as tf.flags), as in TF 1.x (>= 1.5) and
tf.compat.v1.

``tf.app.run(main=None, argv=None)`` parses the flags in argv (sys.argv by default) and calls
``sys.exit(main(remaining))``, main being ``__main__``'s ``main`` by default. ``remaining`` is
``[program] + the arguments that are not flags``. As TF's, run() parses with ``known_only``:
flags that no program defined are left in ``remaining`` for main, not refused (TF's
``_parse_flags_tolerate_undef``); a program that reads a flag before run() (the seed's
``learning_rate = FLAGS.learning_rate`` at module level) has already parsed sys.argv strictly
then, and an unknown flag fails there with ``UnrecognizedFlagError``, as on TF.

A value that a flag refuses, or a required flag that is missing, ends the program as absl's
``app.run`` does: ``FATAL Flags parsing error: ...`` on stderr and exit status 1 (TF lets the
same absl exception escape as a traceback, also with status 1). ``--only_check_args`` exits 0
after parsing, without calling main."""
import sys as _sys

from . import flags

__all__ = ["run", "flags"]


def run(main=None, argv=None):
    """Runs the program with an optional 'main' function and 'argv' list."""
    main = main or _sys.modules["__main__"].main
    args = _sys.argv if argv is None else argv
    try:
        remaining = flags.FLAGS(args, known_only=True)
    except flags.Error as e:
        _sys.stderr.write(f"FATAL Flags parsing error: {e}\n"
                          "Pass --helpshort or --helpfull to see help on flags.\n")
        _sys.stderr.flush()
        _sys.exit(1)
    only_check = flags.FLAGS._flags().get("only_check_args")
    if only_check is not None and only_check.value is True:
        _sys.exit(0)
    _sys.exit(main(remaining))
