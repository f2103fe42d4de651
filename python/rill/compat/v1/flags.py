"""tf.app.flags (also tf.flags): absl-style command-line flags, as TF 1.x (>= 1.5) and
tf.compat.v1 in TF 2.x have them, in pure Python (no absl, no TensorFlow).

What TF programs rely on, and what this module does the same way:

- Flags are defined at import time (``DEFINE_string/integer/float/boolean/bool/enum/list``, the
  ``multi`` kinds, ``mark_flag_as_required``, validators) and are values of ``FLAGS``.
- Reading an attribute of ``FLAGS`` before anything parsed the command line parses ``sys.argv``
  then, strictly (TF's ``_FlagValuesWrapper.__getattr__``): ``learning_rate = FLAGS.learning_rate``
  at module level works, and an unknown flag raises ``UnrecognizedFlagError`` there.
- The syntax is absl's: ``--name=value``, ``--name value``, ``-name=value``, ``--bool``,
  ``--nobool``, ``--bool=true/false/t/f/1/0``, ``--`` ends the flags, positional arguments may sit
  between flags, ``--flagfile=FILE``, ``--undefok=a,b``.
- Values are converted with absl's parsers and errors have absl's texts: ``flag
  --learning_rate=abc: could not convert string to float: 'abc'`` (``IllegalFlagValueError``),
  ``Unknown command line flag 'x'`` (``UnrecognizedFlagError``), ``The flag 'x' is defined twice.
  ...`` (``DuplicateFlagError``; absl's exception too: the same module run again, a different
  module object under the same name, keeps the first definition silently).
- ``--help`` / ``--helpshort`` / ``-?`` print the main program's flags, ``--helpfull`` every
  flag, to standard output, and exit with status 1, as absl does.

Where this differs from TF (docs/PYTHON.md): ``--help`` also works when the first parse is the
implicit one at module level (TF answers ``Unknown command line flag 'help'`` there, because absl
defines the help flags only inside ``tf.app.run``); a multi-valued flag parsed twice (the implicit
parse, then ``tf.app.run``'s) holds the command line's values once, not twice (TF repeats them);
the flags that absl.logging and absl.app define in TF (``--logtostderr``, ``--alsologtostderr``,
``--log_dir``, ``-v``/``--verbosity``, ``--stderrthreshold``, ``--only_check_args``) are accepted
and may be redefined by a program without a DuplicateFlagError."""
import csv as _csv
import os as _os
import sys as _sys
import textwrap as _textwrap

__all__ = [
    "FLAGS", "FlagValues", "Flag", "BooleanFlag", "EnumFlag", "MultiFlag", "FlagHolder",
    "ArgumentParser", "ArgumentSerializer", "BooleanParser", "EnumParser", "FloatParser",
    "IntegerParser", "ListParser", "WhitespaceSeparatedListParser", "BaseListParser",
    "CsvListSerializer", "ListSerializer",
    "Error", "CantOpenFlagFileError", "DuplicateFlagError", "IllegalFlagValueError",
    "UnrecognizedFlagError", "UnparsedFlagAccessError", "ValidationError",
    "FlagNameConflictsWithMethodError",
    "DEFINE", "DEFINE_flag", "DEFINE_string", "DEFINE_integer", "DEFINE_float",
    "DEFINE_boolean", "DEFINE_bool", "DEFINE_enum", "DEFINE_list", "DEFINE_spaceseplist",
    "DEFINE_multi", "DEFINE_multi_string", "DEFINE_multi_integer", "DEFINE_multi_float",
    "DEFINE_multi_enum", "DEFINE_alias",
    "mark_flag_as_required", "mark_flags_as_required", "mark_flags_as_mutual_exclusive",
    "register_validator", "validator", "register_multi_flags_validator",
    "multi_flags_validator", "set_default", "text_wrap", "get_help_width",
]

# absl exits with 1 after printing the help (absl.app.HelpFlag.parse).
_HELP_EXIT_CODE = 1


# --- exceptions (absl.flags._exceptions) ---

class Error(Exception):
    """The base class of the flag errors."""


class CantOpenFlagFileError(Error):
    """A --flagfile could not be read."""


class DuplicateFlagError(Error):
    """A flag is defined twice."""


class IllegalFlagValueError(Error):
    """A flag was given (or set to) a value that its parser or a validator refuses."""


class UnrecognizedFlagError(Error):
    """A flag on the command line (or set by attribute) is not defined."""

    def __init__(self, flagname, flagvalue="", suggestions=()):
        self.flagname = flagname
        self.flagvalue = flagvalue
        tip = f". Did you mean: {', '.join(suggestions)} ?" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{tip}")


class UnparsedFlagAccessError(Error):
    """A FlagValues that is not FLAGS was read before it was parsed."""


class ValidationError(Error):
    """A validator failed."""


class FlagNameConflictsWithMethodError(Error):
    """A flag's name is that of a FlagValues method."""


# --- parsers and serializers (absl.flags._argument_parser) ---

class ArgumentParser:
    """Parses a string flag value; the base class of the parsers."""
    syntactic_help = ""

    def parse(self, argument):
        if not isinstance(argument, str):
            raise TypeError(f'flag value must be a string, found "{type(argument)}"')
        return argument

    def flag_type(self):
        return "string"


class ArgumentSerializer:
    def serialize(self, value):
        return str(value)


class NumericParser(ArgumentParser):
    lower_bound = None
    upper_bound = None

    def _bounds_help(self, article, noun, pos, neg):
        lo, hi = self.lower_bound, self.upper_bound
        sh = f"{article} {noun}"
        if lo is not None and hi is not None:
            return f"{sh} in the range [{lo}, {hi}]"
        if pos is not None and lo == pos:
            return f"a positive {noun}"
        if neg is not None and hi == neg:
            return f"a negative {noun}"
        if lo == 0:
            return f"a non-negative {noun}"
        if hi == 0:
            return f"a non-positive {noun}"
        if hi is not None:
            return f"{noun} <= {hi}"
        if lo is not None:
            return f"{noun} >= {lo}"
        return sh

    def is_outside_bounds(self, val):
        return ((self.lower_bound is not None and val < self.lower_bound) or
                (self.upper_bound is not None and val > self.upper_bound))

    def parse(self, argument):
        val = self.convert(argument)
        if self.is_outside_bounds(val):
            raise ValueError(f"{val} is not {self.syntactic_help}")
        return val


class FloatParser(NumericParser):
    def __init__(self, lower_bound=None, upper_bound=None):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.syntactic_help = self._bounds_help("a", "number", None, None)

    def convert(self, argument):
        if isinstance(argument, (int, float, str)) and not isinstance(argument, bool):
            return float(argument)
        raise TypeError(f"Expect argument to be a string, int, or float, found {type(argument)}")

    def flag_type(self):
        return "float"


class IntegerParser(NumericParser):
    def __init__(self, lower_bound=None, upper_bound=None):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.syntactic_help = self._bounds_help("an", "integer", 1, -1)

    def convert(self, argument):
        if isinstance(argument, int) and not isinstance(argument, bool):
            return argument
        if isinstance(argument, str):
            base = 10
            if len(argument) > 2 and argument[0] == "0":
                if argument[1] == "o":
                    base = 8
                elif argument[1] == "x":
                    base = 16
            return int(argument, base)
        raise TypeError(f"Expect argument to be a string or int, found {type(argument)}")

    def flag_type(self):
        return "int"


class BooleanParser(ArgumentParser):
    def parse(self, argument):
        if isinstance(argument, str):
            if argument.lower() in ("true", "t", "1"):
                return True
            if argument.lower() in ("false", "f", "0"):
                return False
            raise ValueError("Non-boolean argument to boolean flag", argument)
        if isinstance(argument, int):
            if argument in (0, 1):
                return bool(argument)
            raise ValueError("Non-boolean argument to boolean flag", argument)
        raise TypeError("Non-boolean argument to boolean flag", argument)

    def flag_type(self):
        return "bool"


class EnumParser(ArgumentParser):
    def __init__(self, enum_values, case_sensitive=True):
        if not enum_values:
            raise ValueError(f'enum_values cannot be empty, found "{enum_values}"')
        if isinstance(enum_values, str):
            raise ValueError(f'enum_values cannot be a str, found "{enum_values}"')
        self.enum_values = list(enum_values)
        self.case_sensitive = case_sensitive

    def parse(self, argument):
        if self.case_sensitive:
            if argument in self.enum_values:
                return argument
        else:
            for v in self.enum_values:
                if isinstance(argument, str) and v.upper() == argument.upper():
                    return v
        raise ValueError(f"value should be one of <{'|'.join(self.enum_values)}>")

    def flag_type(self):
        return "string enum"


class BaseListParser(ArgumentParser):
    def __init__(self, token=None, name=None):
        self._token = token
        self._name = name
        self.syntactic_help = f"a {name} separated list"

    def parse(self, argument):
        if isinstance(argument, list):
            return argument
        if not argument:
            return []
        return [s.strip() for s in argument.split(self._token)]

    def flag_type(self):
        return f"{self._name} separated list of strings"


class ListParser(BaseListParser):
    """A comma-separated list of strings (csv quoting allowed, as absl)."""

    def __init__(self):
        super().__init__(",", "comma")

    def parse(self, argument):
        if isinstance(argument, list):
            return argument
        if not argument:
            return []
        try:
            return [s.strip() for s in list(_csv.reader([argument], strict=True))[0]]
        except _csv.Error as e:
            raise ValueError(f"Unable to parse the value {argument!r} as a "
                             f"{self.flag_type()}: {e}") from e


class WhitespaceSeparatedListParser(BaseListParser):
    def __init__(self, comma_compat=False):
        self._comma_compat = comma_compat
        super().__init__(None, "whitespace or comma" if comma_compat else "whitespace")

    def parse(self, argument):
        if isinstance(argument, list):
            return argument
        if not argument:
            return []
        if self._comma_compat:
            argument = argument.replace(",", " ")
        return argument.split()


class ListSerializer(ArgumentSerializer):
    def __init__(self, list_sep):
        self.list_sep = list_sep

    def serialize(self, value):
        return self.list_sep.join([str(x) for x in value])


class CsvListSerializer(ListSerializer):
    def serialize(self, value):
        return ",".join(str(x) for x in value)


# --- flags (absl.flags._flag) ---

class Flag:
    """One flag: its name, help, parser, default and current value."""

    def __init__(self, parser, serializer, name, default, help_string, short_name=None,
                 boolean=False, allow_override=False, allow_override_cpp=False,
                 allow_hide_cpp=False, allow_overwrite=True, allow_using_method_names=False):
        self.name = name
        self.help = help_string or "(no help available)"
        self.short_name = short_name
        self.boolean = boolean
        self.present = 0
        self.parser = parser
        self.serializer = serializer
        self.allow_override = allow_override
        self.allow_overwrite = allow_overwrite
        self.allow_using_method_names = allow_using_method_names
        self.using_default_value = True
        self._value = None
        self.validators = []
        self._set_default(default)

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, value):
        self._value = value

    def __hash__(self):
        return hash(id(self))

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError("A Flag instance would always be True. "
                        "Did you mean to test the `.value` attribute?")

    def __repr__(self):
        return f"<{type(self).__name__} --{self.name}={self._value!r}>"

    def _get_parsed_value_as_string(self, value):
        if value is None:
            return None
        if self.serializer:
            return repr(self.serializer.serialize(value))
        if self.boolean:
            return repr("true") if value else repr("false")
        return repr(str(value))

    def parse(self, argument):
        if self.present and not self.allow_overwrite:
            raise IllegalFlagValueError(
                f"flag --{self.name}={argument}: already defined as {self.value}")
        self.value = self._parse(argument)
        self.present += 1

    def _parse(self, argument):
        try:
            return self.parser.parse(argument)
        except (TypeError, ValueError, OverflowError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={argument}: {e}") from e

    def unparse(self):
        self.value = self.default
        self.using_default_value = True
        self.present = 0

    def serialize(self):
        return self._serialize(self.value)

    def _serialize(self, value):
        if value is None:
            return ""
        if self.boolean:
            return f"--{self.name}" if value else f"--no{self.name}"
        if not self.serializer:
            raise Error(f"Serializer not present for flag {self.name}")
        return f"--{self.name}={self.serializer.serialize(value)}"

    def _set_default(self, value):
        self.default_unparsed = value
        self.default = None if value is None else self._parse_from_default(value)
        self.default_as_str = self._get_parsed_value_as_string(self.default)
        if self.using_default_value:
            self.value = self.default

    def _parse_from_default(self, value):
        return self._parse(value)

    def flag_type(self):
        return self.parser.flag_type()


class BooleanFlag(Flag):
    def __init__(self, name, default, help, short_name=None, **args):
        super().__init__(BooleanParser(), None, name, default, help, short_name, True, **args)


class EnumFlag(Flag):
    def __init__(self, name, default, help, enum_values, short_name=None, case_sensitive=True,
                 **args):
        p = EnumParser(enum_values, case_sensitive)
        super().__init__(p, ArgumentSerializer(), name, default, help, short_name, **args)
        self.help = f"<{'|'.join(p.enum_values)}>: {self.help}"


class MultiFlag(Flag):
    """A flag that may be given several times: its value is the list of all of them."""

    def __init__(self, *args, **kwargs):
        self._fresh = True
        super().__init__(*args, **kwargs)
        self.help += ";\n    repeat this option to specify a list of values"

    def parse(self, arguments):
        new_values = self._parse(arguments)
        if self.present and not self._fresh:
            self.value.extend(new_values)
        else:
            self.value = new_values
        self._fresh = False
        self.present += len(new_values)

    def _parse(self, arguments):
        if isinstance(arguments, (list, tuple)):
            return [super(MultiFlag, self)._parse(a) for a in arguments]
        return [super()._parse(arguments)]

    def _get_parsed_value_as_string(self, value):
        return None if value is None else repr(value)

    def _serialize(self, value):
        if not value:
            return ""
        return "\n".join(f"--{self.name}={self.serializer.serialize(v)}" for v in value)

    def flag_type(self):
        return "multi " + self.parser.flag_type()


class FlagHolder:
    """What DEFINE_* returns (absl): a typed handle on one flag of a FlagValues."""

    def __init__(self, flag_values, flag):
        self._flagvalues = flag_values
        self._name = flag.name

    @property
    def name(self):
        return self._name

    @property
    def value(self):
        return getattr(self._flagvalues, self._name)

    @property
    def default(self):
        return self._flagvalues[self._name].default

    @property
    def present(self):
        return bool(self._flagvalues[self._name].present)

    def __bool__(self):
        raise TypeError("A FlagHolder instance would always be True. "
                        "Did you mean to test the `.value` attribute?")

    def __eq__(self, other):
        raise TypeError(f"unsupported operand type(s) for ==: '{type(self).__name__}' and "
                        f"'{type(other).__name__}' (did you mean to use "
                        f"'{type(self).__name__}.value' instead?)")

    __hash__ = object.__hash__


# --- validators (absl.flags._validators) ---

class _Validator:
    _count = 0

    def __init__(self, checker, message):
        self.checker = checker
        self.message = message
        _Validator._count += 1
        self.insertion_index = _Validator._count

    def verify(self, flag_values):
        if not self.checker(self._value(flag_values)):
            raise ValidationError(self.message)


class _SingleFlagValidator(_Validator):
    def __init__(self, flag_name, checker, message):
        super().__init__(checker, message)
        self.flag_name = flag_name
        self.flag_names = [flag_name]

    def _value(self, fv):
        return fv[self.flag_name].value

    def describe(self, fv):
        return f"flag --{self.flag_name}={fv[self.flag_name].value}"


class _MultiFlagsValidator(_Validator):
    def __init__(self, flag_names, checker, message):
        super().__init__(checker, message)
        self.flag_names = list(flag_names)

    def _value(self, fv):
        return {n: fv[n].value for n in self.flag_names}

    def describe(self, fv):
        return "flags " + ", ".join(f"{n}={fv[n].value}" for n in self.flag_names)


# --- the flag values (absl.flags._flagvalues) ---

_SPECIAL = ("flagfile", "undefok")
_THIS_PACKAGE = __name__.rpartition(".")[0]  # rill.compat.v1


def _calling_module():
    """(name, globals) of the first frame outside this module and app.py; a program run as
    __main__ is named by sys.argv[0], as absl names it. The globals dict tells one execution of
    a module from another (absl compares module ids; an id can be reused once a namespace is
    freed, so the registry keeps the namespace itself)."""
    f = _sys._getframe(1)
    skip = (__name__, _THIS_PACKAGE + ".app")
    while f is not None and f.f_globals.get("__name__") in skip:
        f = f.f_back
    if f is None:
        return "<unknown>", "<unknown>"
    name = f.f_globals.get("__name__", "<unknown>")
    if name == "__main__" and _sys.argv and _sys.argv[0]:
        name = _sys.argv[0]
    return name, f.f_globals


def _damerau_levenshtein(a, b):
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + cost)
    return d[len(a)][len(b)]


def _flag_suggestions(attempt, names):
    if len(attempt) <= 2 or not names:
        return []
    distances = sorted((_damerau_levenshtein(attempt, n[:len(attempt)]), n) for n in names)
    least = distances[0][0]
    if least >= 0.5 * len(attempt):
        return []
    return [n for e, n in distances if e == least]


def get_help_width():
    return 80


def text_wrap(text, length=None, indent="", firstline_indent=None):
    """absl's text_wrap: wraps each paragraph (line) of text to length columns."""
    length = length or get_help_width()
    indent = indent or ""
    firstline_indent = indent if firstline_indent is None else firstline_indent
    if len(indent) >= length or len(firstline_indent) >= length:
        raise ValueError("Length of indent exceeds length")
    first = _textwrap.TextWrapper(width=length, initial_indent=firstline_indent,
                                  subsequent_indent=indent)
    rest = _textwrap.TextWrapper(width=length, initial_indent=indent, subsequent_indent=indent)
    result, wrapper = [], first
    for paragraph in (p.strip() for p in text.expandtabs(4).splitlines()):
        if paragraph:
            result.extend(wrapper.wrap(paragraph))
        else:
            result.append("")
        wrapper = rest
    return "\n".join(result)


class FlagValues:
    """A registry of flags and their values (absl's FlagValues). ``FLAGS`` is the global one;
    a FlagValues made by a program raises UnparsedFlagAccessError when read before parsing,
    while FLAGS parses ``sys.argv`` then (TF's behaviour)."""

    def __init__(self):
        d = self.__dict__
        d["__flags"] = {}
        d["__hiddenflags"] = set()
        d["__flags_by_module"] = {}     # module name -> [Flag]
        d["__module_ids"] = {}          # flag name -> the defining module's globals (or name)
        d["__flags_parsed"] = False
        d["__implicit_parse"] = False

    # the registry
    def _flags(self):
        return self.__dict__["__flags"]

    def flags_by_module_dict(self):
        return self.__dict__["__flags_by_module"]

    def _register(self, flag, module_name=None, module_id=None):
        """Adds flag, defined by module module_name; module_id tells this execution of the
        module from another: its globals dict, or a string for a module named explicitly."""
        if module_name is None:
            module_name, module_id = _calling_module()
        fl = self._flags()
        name = flag.name
        if not isinstance(name, str):
            raise Error("Flag name must be a string")
        if not name:
            raise Error("Flag name cannot be empty")
        if " " in name:
            raise Error("Flag name cannot contain a space")
        if not flag.allow_using_method_names and hasattr(type(self), name):
            raise FlagNameConflictsWithMethodError(
                f'Cannot define a flag named "{name}". It conflicts with a method on class '
                f'"{type(self).__name__}". To allow defining it, use allow_using_method_names '
                f"and access the flag value with FLAGS['{name}'].value. FLAGS.{name} returns "
                "the method, not the flag value.")
        old = fl.get(name)
        if old is not None and not flag.allow_override and not old.allow_override:
            first = self.find_module_defining_flag(name, "<unknown>")
            prev = self.__dict__["__module_ids"].get(name)
            same = prev is module_id or (isinstance(prev, str) and prev == module_id)
            if first == module_name and not same:
                # absl: the same module imported (or a program run) a second time
                return old
            raise DuplicateFlagError(
                f"The flag '{name}' is defined twice. First from {first}, second from "
                f"{module_name}. Description from first occurrence: {old.help}")
        replaced = set()
        if flag.short_name is not None:
            sold = fl.get(flag.short_name)
            if sold is not None and sold is not old and not flag.allow_override \
                    and not sold.allow_override:
                raise DuplicateFlagError(
                    f"The flag '{flag.short_name}' is defined twice. First from "
                    f"{self.find_module_defining_flag(flag.short_name, '<unknown>')}, second "
                    f"from {module_name}. Description from first occurrence: {sold.help}")
            if sold is not None:
                replaced.add(sold)
            fl[flag.short_name] = flag
        if old is not None:
            replaced.add(old)
        fl[name] = flag
        for f in replaced - {flag}:
            for n in [k for k, v in fl.items() if v is f]:
                del fl[n]
            for lst in self.flags_by_module_dict().values():
                if f in lst:
                    lst.remove(f)
        self.flags_by_module_dict().setdefault(module_name, []).append(flag)
        self.__dict__["__module_ids"][name] = module_id
        return flag

    def find_module_defining_flag(self, flagname, default=None):
        flag = self._flags().get(flagname)
        if flag is None:
            return default
        for module, flags in self.flags_by_module_dict().items():
            if flag in flags:
                return module
        return default

    def get_flags_for_module(self, module):
        if not isinstance(module, str):
            module = module.__name__
        return list(self.flags_by_module_dict().get(module, []))

    get_key_flags_for_module = get_flags_for_module

    def __contains__(self, name):
        return name in self._flags()

    def __len__(self):
        return len(self._flags())

    def __iter__(self):
        return iter(self._flags())

    def __dir__(self):
        return sorted(self._flags())

    def __getitem__(self, name):
        return self._flags()[name]

    def __setitem__(self, name, flag):
        if name != flag.name and name != flag.short_name:
            raise Error(f"Flag name {name!r} is neither the name nor the short name of {flag!r}")
        self._register(flag)

    # values
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        d = self.__dict__
        if "__flags" not in d:
            raise AttributeError(name)
        if not d["__flags_parsed"] and d["__implicit_parse"]:
            # TF's _FlagValuesWrapper: a read before tf.app.run() parses sys.argv, strictly
            self(_sys.argv)
        flag = d["__flags"].get(name)
        if flag is None or name in d["__hiddenflags"]:
            raise AttributeError(name)
        if d["__flags_parsed"] or flag.present:
            return flag.value
        raise UnparsedFlagAccessError(f"Trying to access flag --{name} before flags were parsed.")

    def __setattr__(self, name, value):
        self._set_attributes(**{name: value})
        return value

    def _set_attributes(self, **attributes):
        fl = self._flags()
        originals = {}
        try:
            for name, value in attributes.items():
                flag = fl.get(name)
                if flag is None or name in self.__dict__["__hiddenflags"]:
                    raise UnrecognizedFlagError(name, value)
                originals[name] = (flag.value, flag.using_default_value)
                flag.value = value
            for name in originals:
                self._assert_validators(fl[name].validators)
                fl[name].using_default_value = False
        except BaseException:
            for name, (v, used_default) in originals.items():
                fl[name].value = v
                fl[name].using_default_value = used_default
            raise

    def __delattr__(self, flag_name):
        fl = self._flags()
        flag = fl.get(flag_name)
        if flag is None:
            raise AttributeError(flag_name)
        del fl[flag_name]
        if flag not in fl.values():
            for lst in self.flags_by_module_dict().values():
                if flag in lst:
                    lst.remove(flag)

    def set_default(self, name, value):
        flag = self._flags().get(name)
        if flag is None:
            raise UnrecognizedFlagError(name, value)
        flag._set_default(value)
        self._assert_validators(flag.validators)

    def get_flag_value(self, name, default):
        value = self.__getattr__(name)
        return default if value is None else value

    def flag_values_dict(self):
        return {name: flag.value for name, flag in self._flags().items()}

    def is_parsed(self):
        return self.__dict__["__flags_parsed"]

    def mark_as_parsed(self):
        self.__dict__["__flags_parsed"] = True

    def unparse_flags(self):
        for f in self._flags().values():
            f.unparse()
        self.__dict__["__flags_parsed"] = False

    # validation
    def validate_all_flags(self):
        vs = set()
        for flag in self._flags().values():
            vs.update(flag.validators)
        self._assert_validators(vs)

    def _assert_validators(self, validators):
        messages, bad = [], set()
        for v in sorted(validators, key=lambda v: v.insertion_index):
            if bad.intersection(v.flag_names):
                continue
            try:
                v.verify(self)
            except ValidationError as e:
                bad.update(v.flag_names)
                messages.append(f"{v.describe(self)}: {e}")
        if messages:
            raise IllegalFlagValueError("\n".join(messages))

    # parsing
    def __call__(self, argv, known_only=False):
        """Parses argv[1:] (argv[0] is the program); returns [argv[0]] + the arguments that are
        not flags (and, with known_only, the unknown flags, untouched)."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program name as "
                             "the first element.")
        program_name = argv[0]
        args = self.read_flags_from_files(list(argv[1:]))
        for f in set(self._flags().values()):
            if isinstance(f, MultiFlag):
                f._fresh = True
        unknown, unparsed = self._parse_args(args, known_only)
        for name, value in unknown:
            names = [n for n in self._flags()] + list(_SPECIAL)
            raise UnrecognizedFlagError(name, value, _flag_suggestions(name, names))
        self.mark_as_parsed()
        self.validate_all_flags()
        return [program_name] + unparsed

    def _parse_args(self, args, known_only):
        unparsed = []       # (name or None, arg)
        undefok = set()
        fl = self._flags()
        it = iter(args)
        for arg in it:
            value = None

            def get_value():
                try:
                    return next(it) if value is None else value
                except StopIteration:
                    raise Error("Missing value for flag " + arg) from None

            if not arg.startswith("-"):
                unparsed.append((None, arg))  # GNU style: flags may follow positionals
                continue
            if arg == "--":
                if known_only:
                    unparsed.append((None, arg))
                break
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, eq, v = body.partition("=")
            if eq:
                value = v
            if not name:
                unparsed.append((None, arg))
                continue
            if name == "undefok":
                value = get_value()
                for u in value.split(","):
                    undefok.update((u.strip(), "no" + u.strip()))
                continue
            flag = fl.get(name)
            if flag is not None:
                value = "true" if flag.boolean and value is None else get_value()
            elif name.startswith("no") and len(name) > 2:
                noflag = fl.get(name[2:])
                if noflag is not None and noflag.boolean:
                    if value is not None:
                        raise IllegalFlagValueError(arg + " does not take an argument")
                    flag, value = noflag, "false"
            if flag is not None:
                flag.parse(value)
                flag.using_default_value = False
            else:
                unparsed.append((name, arg))
        unknown, rest = [], []
        for name, arg in unparsed:
            if name is None:
                rest.append(arg)
            elif name in undefok:
                continue
            elif known_only:
                rest.append(arg)
            else:
                unknown.append((name, arg))
        rest.extend(it)
        return unknown, rest

    def read_flags_from_files(self, argv, force_gnu=True):
        """Expands --flagfile=FILE (one flag a line; # and // comment lines) in argv."""
        out, it = [], iter(argv)
        for arg in it:
            if arg == "--":
                out.append(arg)
                out.extend(it)
                break
            name = arg.lstrip("-")
            if arg.startswith("-") and (name == "flagfile" or name.startswith("flagfile=")):
                if "=" in name:
                    path = name.split("=", 1)[1]
                else:
                    try:
                        path = next(it)
                    except StopIteration:
                        raise Error("Missing value for flag " + arg) from None
                out.extend(self._flagfile_lines(_os.path.expanduser(path.strip()), set()))
            else:
                out.append(arg)
        return out

    def _flagfile_lines(self, path, seen):
        if path in seen:
            return []
        seen = seen | {path}
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise CantOpenFlagFileError(f"ERROR:: Unable to open flagfile: {e}") from e
        out = []
        for line in (l.strip() for l in lines):
            if not line or line.startswith("#") or line.startswith("//"):
                continue
            name = line.lstrip("-")
            if line.startswith("-") and name.startswith("flagfile="):
                sub = _os.path.expanduser(name.split("=", 1)[1].strip())
                if not _os.path.isabs(sub):
                    sub = _os.path.join(_os.path.dirname(path), sub)
                out.extend(self._flagfile_lines(sub, seen))
            else:
                out.append(line)
        return out

    # help
    def _render_flag_list(self, flaglist, prefix="  "):
        fl = self._flags()
        lines, done = [], set()
        for flag in sorted(flaglist, key=lambda f: f.name):
            if fl.get(flag.name) is not flag and flag.name not in _SPECIAL:
                continue
            if id(flag) in done:
                continue
            done.add(id(flag))
            h = f"-{flag.short_name}," if flag.short_name else ""
            h += f"--[no]{flag.name}: " if flag.boolean else f"--{flag.name}: "
            h = text_wrap(h + flag.help, indent=prefix + "  ", firstline_indent=prefix)
            if flag.default_as_str:
                h += "\n" + text_wrap(f"(default: {flag.default_as_str})", indent=prefix + "  ")
            if flag.parser.syntactic_help:
                h += "\n" + text_wrap(f"({flag.parser.syntactic_help})", indent=prefix + "  ")
            lines.append(h)
        return lines

    def _module_help(self, module, prefix=""):
        flags = self.get_flags_for_module(module)
        if not flags:
            return []
        return [f"\n{prefix}{module}:"] + self._render_flag_list(flags, prefix + "  ")

    def module_help(self, module):
        if not isinstance(module, str):
            module = module.__name__
        return "\n".join(self._module_help(module))

    def main_module_help(self):
        return self.module_help(_sys.argv[0] if _sys.argv else "__main__")

    def get_help(self, prefix="", include_special_flags=True):
        modules = sorted(m for m, fs in self.flags_by_module_dict().items() if fs)
        main = _sys.argv[0] if _sys.argv else None
        if main in modules:
            modules.remove(main)
            modules.insert(0, main)
        lines = []
        for m in modules:
            lines += self._module_help(m, prefix)
        if include_special_flags:
            lines += [f"\n{prefix}{__name__}:"] + self._render_flag_list(
                _special_flags(), prefix + "  ")
        return "\n".join(lines)

    def __str__(self):
        return self.get_help()


class _TFFlagValues(FlagValues):
    """tf.app.flags.FLAGS: reading a flag before parsing parses sys.argv (TF's wrapper)."""

    def __init__(self):
        super().__init__()
        self.__dict__["__implicit_parse"] = True


_SPECIAL_FLAGS = []


def _special_flags():
    """--flagfile and --undefok, which the parser handles itself: for --helpfull only."""
    if not _SPECIAL_FLAGS:
        _SPECIAL_FLAGS.append(Flag(ArgumentParser(), ArgumentSerializer(), "flagfile", "",
                                   "Insert flag definitions from the given file into the "
                                   "command line."))
        _SPECIAL_FLAGS.append(Flag(ArgumentParser(), ArgumentSerializer(), "undefok", "",
                                   "comma-separated list of flag names that it is okay to "
                                   "specify on the command line even if the program does not "
                                   "define a flag with that name. IMPORTANT: flags in this list "
                                   "that have arguments MUST use the --flag=value format."))
    return _SPECIAL_FLAGS


FLAGS = _TFFlagValues()


# --- definitions (absl.flags._defines), with TF's old keyword names ---

_RENAMED = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _renamed(kwargs):
    if any(k in kwargs for k in _RENAMED):
        _sys.stderr.write("WARNING: Use of the keyword argument names (flag_name, default_value, "
                          "docstring) is deprecated, please use (name, default, help) instead.\n")
        for old, new in _RENAMED.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
    return kwargs


def DEFINE_flag(flag, flag_values=FLAGS, module_name=None, required=False):
    if module_name is None:
        module_name, module_id = _calling_module()
    else:
        module_id = module_name
    registered = flag_values._register(flag, module_name, module_id)
    if required:
        mark_flag_as_required(flag.name, flag_values)
    return FlagHolder(flag_values, registered)


def DEFINE(parser, name, default, help, flag_values=FLAGS, serializer=None, module_name=None,
           required=False, **args):
    return DEFINE_flag(Flag(parser, serializer, name, default, help, **args), flag_values,
                       module_name, required)


def _define(make, module_name, flag_values, required):
    mod = _calling_module() if module_name is None else (module_name, module_name)
    registered = flag_values._register(make(), *mod)
    if required:
        mark_flag_as_required(registered.name, flag_values)
    return FlagHolder(flag_values, registered)


def _bounds_validator(parser, name, flag_values):
    if parser.lower_bound is None and parser.upper_bound is None:
        return

    def checker(value):
        if value is not None and parser.is_outside_bounds(value):
            raise ValidationError(f"{value} is not {parser.syntactic_help}")
        return True
    register_validator(name, checker, flag_values=flag_values)


def DEFINE_string(*a, **kw):
    return _string(*a, **_renamed(kw))


def _string(name, default, help, flag_values=FLAGS, required=False, module_name=None, **args):
    return _define(lambda: Flag(ArgumentParser(), ArgumentSerializer(), name, default, help,
                                **args), module_name, flag_values, required)


def DEFINE_boolean(*a, **kw):
    return _boolean(*a, **_renamed(kw))


def _boolean(name, default, help, flag_values=FLAGS, module_name=None, required=False, **args):
    return _define(lambda: BooleanFlag(name, default, help, **args), module_name, flag_values,
                   required)


DEFINE_bool = DEFINE_boolean


def DEFINE_float(*a, **kw):
    return _numeric(FloatParser, *a, **_renamed(kw))


def DEFINE_integer(*a, **kw):
    return _numeric(IntegerParser, *a, **_renamed(kw))


def _numeric(parser_cls, name, default, help, lower_bound=None, upper_bound=None,
             flag_values=FLAGS, required=False, module_name=None, **args):
    parser = parser_cls(lower_bound, upper_bound)
    h = _define(lambda: Flag(parser, ArgumentSerializer(), name, default, help, **args),
                module_name, flag_values, required)
    _bounds_validator(parser, name, flag_values)
    return h


def DEFINE_enum(name, default, enum_values, help, flag_values=FLAGS, module_name=None,
                required=False, case_sensitive=True, **args):
    return _define(lambda: EnumFlag(name, default, help, enum_values,
                                    case_sensitive=case_sensitive, **args),
                   module_name, flag_values, required)


def DEFINE_list(name, default, help, flag_values=FLAGS, required=False, module_name=None,
                **args):
    return _define(lambda: Flag(ListParser(), CsvListSerializer(","), name, default, help,
                                **args), module_name, flag_values, required)


def DEFINE_spaceseplist(name, default, help, comma_compat=False, flag_values=FLAGS,
                        required=False, module_name=None, **args):
    return _define(lambda: Flag(WhitespaceSeparatedListParser(comma_compat),
                                ListSerializer(" "), name, default, help, **args),
                   module_name, flag_values, required)


def DEFINE_multi(parser, serializer, name, default, help, flag_values=FLAGS, module_name=None,
                 required=False, **args):
    return _define(lambda: MultiFlag(parser, serializer, name, default, help, **args),
                   module_name, flag_values, required)


def DEFINE_multi_string(name, default, help, flag_values=FLAGS, required=False,
                        module_name=None, **args):
    return DEFINE_multi(ArgumentParser(), ArgumentSerializer(), name, default, help,
                        flag_values, module_name, required, **args)


def DEFINE_multi_integer(name, default, help, lower_bound=None, upper_bound=None,
                         flag_values=FLAGS, required=False, module_name=None, **args):
    return DEFINE_multi(IntegerParser(lower_bound, upper_bound), ArgumentSerializer(), name,
                        default, help, flag_values, module_name, required, **args)


def DEFINE_multi_float(name, default, help, lower_bound=None, upper_bound=None,
                       flag_values=FLAGS, required=False, module_name=None, **args):
    return DEFINE_multi(FloatParser(lower_bound, upper_bound), ArgumentSerializer(), name,
                        default, help, flag_values, module_name, required, **args)


def DEFINE_multi_enum(name, default, enum_values, help, flag_values=FLAGS, case_sensitive=True,
                      required=False, module_name=None, **args):
    return DEFINE_multi(EnumParser(enum_values, case_sensitive), ArgumentSerializer(), name,
                        default, f"<{'|'.join(enum_values)}>: {help}", flag_values,
                        module_name, required, **args)


class _AliasFlag(Flag):
    def __init__(self, original, name):
        self._original = original
        super().__init__(original.parser, original.serializer, name, None,
                         f"Alias for --{original.name}.", boolean=original.boolean)

    value = property(lambda self: self._original.value,
                     lambda self, v: setattr(self._original, "value", v))

    def parse(self, argument):
        self._original.parse(argument)
        self.present += 1

    def _set_default(self, value):
        self.default_unparsed = self.default = None
        self.default_as_str = None


def DEFINE_alias(name, original_name, flag_values=FLAGS, module_name=None):
    if original_name not in flag_values:
        raise UnrecognizedFlagError(original_name)
    return _define(lambda: _AliasFlag(flag_values[original_name], name), module_name,
                   flag_values, False)


# --- validators' API ---

def _flag_name(flag, flag_values):
    if isinstance(flag, FlagHolder):
        return flag.name, flag._flagvalues
    return flag, flag_values


def register_validator(flag_name, checker, message="Flag validation failed",
                       flag_values=FLAGS):
    flag_name, flag_values = _flag_name(flag_name, flag_values)
    v = _SingleFlagValidator(flag_name, checker, message)
    if flag_name not in flag_values:
        raise KeyError(f"Flag --{flag_name} is not defined")
    flag_values[flag_name].validators.append(v)


def validator(flag_name, message="Flag validation failed", flag_values=FLAGS):
    def decorate(function):
        register_validator(flag_name, function, message, flag_values)
        return function
    return decorate


def register_multi_flags_validator(flag_names, multi_flags_checker,
                                   message="Flags validation failed", flag_values=FLAGS):
    names = []
    for f in flag_names:
        n, flag_values = _flag_name(f, flag_values)
        names.append(n)
    v = _MultiFlagsValidator(names, multi_flags_checker, message)
    for n in names:
        flag_values[n].validators.append(v)


def multi_flags_validator(flag_names, message="Flag validation failed", flag_values=FLAGS):
    def decorate(function):
        register_multi_flags_validator(flag_names, function, message, flag_values)
        return function
    return decorate


def mark_flag_as_required(flag_name, flag_values=FLAGS):
    """The flag must have a value other than None once flags are parsed (absl's text)."""
    flag_name, flag_values = _flag_name(flag_name, flag_values)
    if flag_values[flag_name].default is not None:
        _sys.stderr.write(f"WARNING: Flag --{flag_name} has a non-None default value; therefore, "
                          "mark_flag_as_required will pass even if flag is not specified in the "
                          "command line!\n")
    register_validator(flag_name, lambda value: value is not None,
                       message=f"Flag --{flag_name} must have a value other than None.",
                       flag_values=flag_values)


def mark_flags_as_required(flag_names, flag_values=FLAGS):
    for n in flag_names:
        mark_flag_as_required(n, flag_values)


def mark_flags_as_mutual_exclusive(flag_names, required=False, flag_values=FLAGS):
    names = [_flag_name(f, flag_values)[0] for f in flag_names]

    def checker(values):
        count = sum(1 for v in values.values() if v is not None)
        if count > 1 or (required and count == 0):
            raise ValidationError(f"{'Exactly' if required else 'At most'} one of "
                                  f"({', '.join(names)}) must have a value other than None.")
        return True
    register_multi_flags_validator(names, checker, flag_values=flag_values)


def set_default(flag_holder, value):
    flag_holder._flagvalues.set_default(flag_holder.name, value)


# --- the flags that TF's absl defines before any program's (absl.logging, absl.app) ---

class _HelpFlag(BooleanFlag):
    """--help (-?), --helpshort: the main program's flags; --helpfull: all. Exit status 1."""

    def __init__(self, name, short_name, full):
        super().__init__(name, False, "show full help" if full else "show this help",
                         short_name=short_name, allow_override=True)
        self._full = full

    def parse(self, arg):
        if self._parse(arg):
            _usage(full=self._full)
            _sys.exit(_HELP_EXIT_CODE)


def _usage(full):
    main = _sys.modules.get("__main__")
    prog = _sys.argv[0] if _sys.argv else "program"
    doc = getattr(main, "__doc__", None)
    if not doc:
        doc = text_wrap(f"\nUSAGE: {prog} [flags]\n", indent="       ", firstline_indent="")
    else:
        n = doc.count("%") - 2 * doc.count("%%")
        try:
            doc %= (prog,) * n
        except (OverflowError, TypeError, ValueError):
            pass
    flag_str = FLAGS.get_help() if full else FLAGS.main_module_help()
    out = doc + ("\nflags:\n" + flag_str if flag_str else "") + "\n"
    if not full:
        out += "\nTry --helpfull to get a list of all flags.\n"
    _sys.stdout.write(out)
    _sys.stdout.flush()


def _define_builtin_flags(fv):
    app_mod = (_THIS_PACKAGE + ".app",) * 2
    log_mod = (_THIS_PACKAGE + ".logging",) * 2
    for f in (_HelpFlag("help", "?", False), _HelpFlag("helpshort", None, False),
              _HelpFlag("helpfull", None, True)):
        fv._register(f, *app_mod)
    fv._register(BooleanFlag("only_check_args", False, "Set to true to validate args and exit.",
                             allow_override=True), *app_mod)
    accepted = " (absl's; accepted, rill does not act on it)"
    for name in ("logtostderr", "alsologtostderr"):
        fv._register(BooleanFlag(name, False, ("Should only log to stderr?" if name == "logtostderr"
                                               else "also log to stderr?") + accepted,
                                 allow_override=True), *log_mod)
    fv._register(Flag(ArgumentParser(), ArgumentSerializer(), "log_dir",
                      _os.getenv("TEST_TMPDIR", ""), "directory to write logfiles into" + accepted,
                      allow_override=True), *log_mod)
    fv._register(Flag(IntegerParser(), ArgumentSerializer(), "verbosity", -1,
                      "Logging verbosity level" + accepted, short_name="v", allow_override=True),
                 *log_mod)
    fv._register(Flag(ArgumentParser(), ArgumentSerializer(), "stderrthreshold", "fatal",
                      "log messages at this level, or more severe, to stderr in addition to the "
                      "logfile" + accepted, allow_override=True), *log_mod)


_define_builtin_flags(FLAGS)
