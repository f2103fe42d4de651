"""tf.app.flags / tf.flags, tf.app.run and tf.gfile (rill.compat.v1.flags, .app, .gfile).

The command-line behaviour is checked in real processes (``python -m rill.run SCRIPT ARGS``):
a program that defines flags at import and reads one at module level, as the seed's programs
do, with good flags, an unknown one, a bad value and --help, and tf.app.run's exit status from
main's return value. The parser's details are checked in this process on FlagValues objects of
their own (the global FLAGS would parse pytest's command line). gfile works on real files in
tmp_path; its errors are tf.errors classes with TensorFlow's texts."""
import os
import subprocess
import sys
import textwrap

import pytest

import rill.compat.v1 as tf
from rill.compat.v1 import flags as flags_mod
from rill.compat.v1 import gfile as gfile_mod

# --- tf.app.run and FLAGS from the command line, in real processes ---

SCRIPT = textwrap.dedent('''\
    import sys
    import tensorflow as tf

    FLAGS = tf.app.flags.FLAGS
    tf.app.flags.DEFINE_float('learning_rate', 0.00003, 'Initial learning rate.')
    tf.app.flags.DEFINE_integer('steps', 1000, 'Number of steps to run.')
    tf.app.flags.DEFINE_boolean('bool_flag', True, 'A boolean flag.')
    tf.app.flags.DEFINE_string('job_name', '', "One of 'ps', 'worker'")
    tf.app.flags.DEFINE_list('hosts', 'a,b', 'Some hosts.')
    tf.app.flags.DEFINE_enum('mode', 'train', ['train', 'eval'], 'The mode.')
    tf.app.flags.DEFINE_integer('exit_code', None, 'What main returns.')

    learning_rate = FLAGS.learning_rate   # at import, before tf.app.run(): parses sys.argv
    print("module: learning_rate=%r" % learning_rate, flush=True)

    def main(argv):
        print("main: argv=%r" % (argv[1:],))
        print("main: %r %r %r %r %r %r" % (FLAGS.learning_rate, FLAGS.steps, FLAGS.bool_flag,
                                           FLAGS.job_name, FLAGS.hosts, FLAGS.mode))
        return FLAGS.exit_code

    if __name__ == "__main__":
        tf.app.run()
''')

# the same, with no flag read before tf.app.run()
SCRIPT_LATE = SCRIPT.replace("learning_rate = FLAGS.learning_rate", "learning_rate = None")


def _run(tmp_path, args, source=SCRIPT, name="flags_prog.py"):
    script = tmp_path / name
    script.write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "rill.run", str(script), *args],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ))


def test_run_good_flags(tmp_path):
    r = _run(tmp_path, ["--learning_rate=0.5", "--steps", "3", "--nobool_flag", "pos1",
                        "--job_name=worker", "--hosts=x,y", "pos2", "--mode", "eval"])
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "module: learning_rate=0.5"  # read at import: sys.argv parsed then
    assert out[1] == "main: argv=['pos1', 'pos2']"  # [program] + the positional arguments
    assert out[2] == "main: 0.5 3 False 'worker' ['x', 'y'] 'eval'"


@pytest.mark.parametrize("arg,value", [("--bool_flag", True), ("--nobool_flag", False),
                                       ("--bool_flag=false", False), ("--bool_flag=true", True),
                                       ("--bool_flag=0", False), ("--bool_flag=1", True)])
def test_boolean_syntax(arg, value):
    fv = flags_mod.FlagValues()
    flags_mod.DEFINE_boolean("bool_flag", not value, "b", flag_values=fv)
    assert fv(["prog", arg]) == ["prog"]
    assert fv.bool_flag is value


def test_run_defaults_and_exit_code_from_main(tmp_path):
    r = _run(tmp_path, ["--exit_code=3"])
    assert r.returncode == 3, r.stderr  # sys.exit(main(argv))
    assert r.stdout.splitlines()[0] == "module: learning_rate=3e-05"
    assert r.stdout.splitlines()[2] == "main: 3e-05 1000 True '' ['a', 'b'] 'train'"
    r = _run(tmp_path, [])
    assert r.returncode == 0, r.stderr  # main returned None


def test_unknown_flag_read_at_import(tmp_path):
    # the module-level read parses sys.argv strictly (TF's FLAGS wrapper): the program stops
    # there with absl's exception and status 1; main never runs
    r = _run(tmp_path, ["--bogus=1"])
    assert r.returncode == 1
    assert "UnrecognizedFlagError: Unknown command line flag 'bogus'" in r.stderr, r.stderr
    assert "main:" not in r.stdout
    r = _run(tmp_path, ["--lerning_rate=1"])
    assert r.returncode == 1
    assert "Unknown command line flag 'lerning_rate'. Did you mean: learning_rate ?" in r.stderr


def test_unknown_flag_left_to_main_by_run(tmp_path):
    # tf.app.run itself parses with known_only (TF's _parse_flags_tolerate_undef): a flag that
    # nothing defined reaches main in argv
    r = _run(tmp_path, ["--bogus=1", "--steps=2", "pos"], source=SCRIPT_LATE)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[1] == "main: argv=['--bogus=1', 'pos']"
    assert out[2].startswith("main: 3e-05 2 ")


def test_bad_value(tmp_path):
    r = _run(tmp_path, ["--learning_rate=abc"])
    assert r.returncode == 1
    assert ("IllegalFlagValueError: flag --learning_rate=abc: could not convert string to "
            "float: 'abc'") in r.stderr, r.stderr
    assert "main:" not in r.stdout
    # found by tf.app.run's parse: absl's FATAL line, status 1
    r = _run(tmp_path, ["--mode=test"], source=SCRIPT_LATE)
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == ("FATAL Flags parsing error: flag --mode=test: value "
                                        "should be one of <train|eval>"), r.stderr
    assert "main:" not in r.stdout


@pytest.mark.parametrize("source", [SCRIPT, SCRIPT_LATE], ids=["read_at_import", "read_in_main"])
def test_help(tmp_path, source):
    r = _run(tmp_path, ["--help"], source=source)
    assert r.returncode == 1  # absl's status after the help
    assert "main:" not in r.stdout
    out = r.stdout
    assert "USAGE: " in out and "flags_prog.py [flags]" in out
    for line in ("  --learning_rate: Initial learning rate.\n    (default: '3e-05')\n"
                 "    (a number)",
                 "  --steps: Number of steps to run.\n    (default: '1000')\n    (an integer)",
                 "  --[no]bool_flag: A boolean flag.\n    (default: 'true')",
                 "  --job_name: One of 'ps', 'worker'\n    (default: '')",
                 "  --hosts: Some hosts.\n    (default: 'a,b')\n    (a comma separated list)",
                 "  --mode: <train|eval>: The mode.\n    (default: 'train')",
                 "  --exit_code: What main returns.\n    (an integer)"):
        assert line in out, out
    assert "Try --helpfull to get a list of all flags." in out
    assert "--flagfile" not in out  # only the program's own flags
    r = _run(tmp_path, ["--helpfull"], source=source)
    assert r.returncode == 1
    assert "--learning_rate: Initial learning rate." in r.stdout
    assert "--flagfile: " in r.stdout and "--[no]logtostderr" in r.stdout


def test_required_flag(tmp_path):
    src = SCRIPT_LATE.replace("learning_rate = None",
                              "tf.app.flags.DEFINE_string('job_name_req', None, 'r')\n"
                              "tf.app.flags.mark_flag_as_required('job_name_req')\n"
                              "learning_rate = None")
    r = _run(tmp_path, [], source=src)
    assert r.returncode == 1
    assert ("FATAL Flags parsing error: flag --job_name_req=None: Flag --job_name_req must have "
            "a value other than None.") in r.stderr, r.stderr
    r = _run(tmp_path, ["--job_name_req=x"], source=src)
    assert r.returncode == 0, r.stderr


def test_run_with_argv_and_main(tmp_path):
    src = textwrap.dedent('''\
        import sys
        import tensorflow as tf
        tf.flags.DEFINE_integer('n', 1, 'n')
        def work(argv):
            print(argv, tf.flags.FLAGS.n)
            return "failed: %d" % tf.flags.FLAGS.n   # a string: printed, status 1
        tf.app.run(main=work, argv=['prog', '--n=7', 'rest'])
    ''')
    r = _run(tmp_path, ["--n=2"], source=src, name="argv_prog.py")
    assert r.returncode == 1
    assert r.stdout.strip() == "['prog', 'rest'] 7"
    assert r.stderr.strip() == "failed: 7"


# --- the parser, in this process ---

def _fv():
    return flags_mod.FlagValues()


def test_namespaces():
    assert tf.flags is tf.app.flags
    assert tf.app.flags.FLAGS is tf.flags.FLAGS
    assert tf.app.flags is flags_mod and callable(tf.app.run)
    assert tf.flags.DEFINE_bool is tf.flags.DEFINE_boolean
    assert isinstance(tf.flags.FLAGS, tf.flags.FlagValues)


def test_syntax():
    fv = _fv()
    flags_mod.DEFINE_string("s", "d", "s", flag_values=fv)
    flags_mod.DEFINE_integer("i", 0, "i", flag_values=fv)
    flags_mod.DEFINE_float("f", 0.5, "f", flag_values=fv)
    flags_mod.DEFINE_boolean("b", False, "b", flag_values=fv)
    rest = fv(["prog", "a", "--s=x=y", "-i", "0x10", "b", "-f=2", "--b", "--", "--i=5", "c"])
    assert rest == ["prog", "a", "b", "--i=5", "c"]  # GNU style; `--` ends the flags
    assert (fv.s, fv.i, fv.f, fv.b) == ("x=y", 16, 2.0, True)
    assert type(fv.f) is float and type(fv.i) is int
    with pytest.raises(flags_mod.Error, match="Missing value for flag --s"):
        fv(["prog", "--s"])
    with pytest.raises(flags_mod.IllegalFlagValueError, match="--nob=1 does not take an arg"):
        fv(["prog", "--nob=1"])
    with pytest.raises(flags_mod.IllegalFlagValueError,
                       match=r"flag --b=maybe: \('Non-boolean argument to boolean flag', "
                             r"'maybe'\)"):
        fv(["prog", "--b=maybe"])
    with pytest.raises(flags_mod.IllegalFlagValueError,
                       match=r"flag --i=1.5: invalid literal for int\(\) with base 10: '1.5'"):
        fv(["prog", "--i=1.5"])
    assert fv(["prog", "--unknown", "x"], known_only=True) == ["prog", "--unknown", "x"]
    with pytest.raises(flags_mod.UnrecognizedFlagError, match="Unknown command line flag 'zz'"):
        fv(["prog", "--zz"])
    assert fv(["prog", "--undefok=zz,q", "--zz=1", "--noq"]) == ["prog"]


def test_kinds_and_defaults():
    fv = _fv()
    flags_mod.DEFINE_float("lr", 1, "lr", flag_values=fv)        # defaults go through the parser
    flags_mod.DEFINE_integer("n", "7", "n", lower_bound=0, flag_values=fv)
    flags_mod.DEFINE_list("l", "a, b,c", "l", flag_values=fv)
    flags_mod.DEFINE_enum("e", "x", ["x", "Y"], "e", flag_values=fv, case_sensitive=False)
    flags_mod.DEFINE_multi_string("m", [], "m", flag_values=fv)
    fv(["prog"])
    assert (fv.lr, fv.n, fv.l, fv.e, fv.m) == (1.0, 7, ["a", "b", "c"], "x", [])
    fv(["prog", "--e=y", "--m=a", "--m", "b", "--l="])
    assert (fv.e, fv.m, fv.l) == ("Y", ["a", "b"], [])
    fv(["prog", "--m=c"])  # a second parse: the command line's values, once
    assert fv.m == ["c"]
    with pytest.raises(flags_mod.IllegalFlagValueError, match="flag --n=-1: -1 is not a "
                                                              "non-negative integer"):
        fv(["prog", "--n=-1"])
    with pytest.raises(flags_mod.IllegalFlagValueError, match="flag --n=-2: -2 is not a "
                                                              "non-negative integer"):
        fv.n = -2  # validators also run on assignment, which is undone
    assert fv.n == 7
    with pytest.raises(flags_mod.IllegalFlagValueError):
        flags_mod.DEFINE_integer("bad", 1.5, "bad", flag_values=fv)


def test_values_api():
    fv = _fv()
    h = flags_mod.DEFINE_string("name", "x", "the name", flag_values=fv)
    with pytest.raises(flags_mod.UnparsedFlagAccessError,
                       match="Trying to access flag --name before flags were parsed."):
        fv.name
    fv(["prog", "--name=y"])
    assert h.value == "y" and h.name == "name" and h.default == "x" and h.present
    assert fv["name"].value == "y" and "name" in fv and list(fv) == ["name"]
    assert fv.flag_values_dict() == {"name": "y"}
    assert fv.__dict__["__flags"]["name"] is fv["name"]  # TF 1.x programs' FLAGS.__flags
    fv.name = "z"
    assert fv.name == "z"
    with pytest.raises(flags_mod.UnrecognizedFlagError, match="Unknown command line flag 'nope'"):
        fv.nope = 1
    with pytest.raises(AttributeError):
        fv.nope
    fv.unparse_flags()
    assert not fv.is_parsed() and fv["name"].value == "x"


def test_implicit_parse_of_sys_argv(monkeypatch):
    # FLAGS (not another FlagValues) parses sys.argv when read before any parse
    fv = flags_mod._TFFlagValues()
    flags_mod.DEFINE_float("learning_rate", 0.1, "lr", flag_values=fv)
    monkeypatch.setattr(sys, "argv", ["prog", "--learning_rate=0.25", "pos"])
    assert fv.learning_rate == 0.25 and fv.is_parsed()
    fv2 = flags_mod._TFFlagValues()
    flags_mod.DEFINE_float("learning_rate", 0.1, "lr", flag_values=fv2)
    monkeypatch.setattr(sys, "argv", ["prog", "--other=1"])
    with pytest.raises(flags_mod.UnrecognizedFlagError, match="Unknown command line flag 'other'"):
        fv2.learning_rate


def test_duplicate_flag():
    fv = _fv()
    flags_mod.DEFINE_integer("steps", 1, "Steps.", flag_values=fv)
    with pytest.raises(flags_mod.DuplicateFlagError,
                       match="The flag 'steps' is defined twice. First from .*test_app_flags_gfile"
                             ", second from .*test_app_flags_gfile. Description from first "
                             "occurrence: Steps."):
        flags_mod.DEFINE_integer("steps", 2, "Again.", flag_values=fv)
    # absl: the same module executed again (another module object of the same name), as a
    # program run twice in one process, keeps the first definition
    code = compile("flags.DEFINE_integer('k', 5, 'k', flag_values=fv)", "prog.py", "exec")
    for _ in range(2):
        exec(code, {"__name__": "some_module", "flags": flags_mod, "fv": fv})
    assert fv["k"].default == 5
    # TF programs may define a flag that absl's logging defines (--log_dir): not an error
    fv_tf = _fv()
    flags_mod._define_builtin_flags(fv_tf)
    flags_mod.DEFINE_string("log_dir", "/tmp/x", "mine", flag_values=fv_tf)
    fv_tf(["prog", "--log_dir=/y", "-v", "1"])
    assert fv_tf["log_dir"].default == "/tmp/x" and fv_tf.log_dir == "/y" and fv_tf.verbosity == 1
    with pytest.raises(flags_mod.FlagNameConflictsWithMethodError):
        flags_mod.DEFINE_string("is_parsed", "", "x", flag_values=fv)


def test_tf_old_keyword_names(capfd):
    fv = _fv()
    flags_mod.DEFINE_string(flag_name="s", default_value="v", docstring="old names",
                            flag_values=fv)
    fv(["prog"])
    assert fv.s == "v" and fv["s"].help == "old names"
    assert "deprecated" in capfd.readouterr().err


def test_required_and_validators():
    fv = _fv()
    flags_mod.DEFINE_string("job", None, "job", flag_values=fv)
    flags_mod.mark_flag_as_required("job", flag_values=fv)
    with pytest.raises(flags_mod.IllegalFlagValueError,
                       match="flag --job=None: Flag --job must have a value other than None."):
        fv(["prog"])
    assert fv(["prog", "--job=ps"]) == ["prog"]
    flags_mod.register_validator("job", lambda v: v in ("ps", "worker"), "ps or worker",
                                 flag_values=fv)
    with pytest.raises(flags_mod.IllegalFlagValueError, match="flag --job=chief: ps or worker"):
        fv(["prog", "--job=chief"])


def test_flagfile(tmp_path):
    fv = _fv()
    flags_mod.DEFINE_integer("a", 0, "a", flag_values=fv)
    flags_mod.DEFINE_string("b", "", "b", flag_values=fv)
    (tmp_path / "inner.flags").write_text("--b=inner\n")
    (tmp_path / "f.flags").write_text("# comment\n// comment\n--a=4\n\n--flagfile=inner.flags\n")
    assert fv(["prog", f"--flagfile={tmp_path / 'f.flags'}", "x"]) == ["prog", "x"]
    assert (fv.a, fv.b) == (4, "inner")
    with pytest.raises(flags_mod.CantOpenFlagFileError):
        fv(["prog", "--flagfile=/nonexistent/f"])


# --- tf.gfile ---

@pytest.fixture
def d(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello\nworld\nlast")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.bin").write_bytes(b"\x00\x01\xff")
    return tmp_path


def _raises(cls, text, f, *args, **kwargs):
    with pytest.raises(cls) as e:
        f(*args, **kwargs)
    assert isinstance(e.value, tf.errors.OpError)
    assert e.value.message == text, e.value.message
    return e.value


def test_gfile_namespace():
    g = tf.gfile
    assert g is gfile_mod
    assert g.Open is g.GFile and issubclass(g.FastGFile, g.GFile)
    for name in ("Exists", "IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "Remove",
                 "DeleteRecursively", "Rename", "Copy", "Glob", "Stat", "Walk"):
        assert callable(getattr(g, name))
    assert g.io_gfile.isdir is g.IsDirectory and g.io_gfile.GFile is g.GFile


def test_exists_isdirectory(d):
    g = tf.gfile
    assert g.Exists("a.txt") and g.Exists(str(d / "sub")) and g.Exists(d / "a.txt")
    assert g.Exists(b"a.txt") and g.Exists("file://" + str(d / "a.txt"))
    assert not g.Exists("nope") and not g.Exists("")
    assert g.IsDirectory("sub") and not g.IsDirectory("a.txt") and not g.IsDirectory("nope")
    e = _raises(tf.errors.UnimplementedError,
                "File system scheme 'gs' not implemented (file: 'gs://bucket/x')",
                g.Exists, "gs://bucket/x")
    assert e.error_code == tf.errors.UNIMPLEMENTED


def test_exists_checkpoint_prefix(d):
    # issue 11, item 4: a V2 checkpoint's prefix "exists" when its .index does
    ck = d / "checkpoint"
    ck.mkdir()
    (ck / "model.ckpt-100.index").write_bytes(b"i")
    (ck / "model.ckpt-100.data-00000-of-00001").write_bytes(b"d")
    assert tf.gfile.Exists("./checkpoint/model.ckpt-100")
    assert tf.gfile.Exists(str(ck / "model.ckpt-100"))
    assert not tf.gfile.Exists("./checkpoint/model.ckpt-200")     # no such bundle
    assert not tf.gfile.Exists("./checkpoint/random-path")
    (ck / "model.ckpt-300.data-00000-of-00001").write_bytes(b"d")  # a data file alone: no
    assert not tf.gfile.Exists("./checkpoint/model.ckpt-300")
    assert tf.gfile.Exists("./checkpoint") and tf.gfile.Exists("./checkpoint/")  # as always
    # nothing else changes: not tf.io.gfile.exists, nor the other functions
    assert not tf.gfile.io_gfile.exists("./checkpoint/model.ckpt-100")
    assert not tf.gfile.IsDirectory("./checkpoint/model.ckpt-100")
    _raises(tf.errors.NotFoundError, "./checkpoint/model.ckpt-100; No such file or directory",
            tf.gfile.Stat, "./checkpoint/model.ckpt-100")


def test_list_make_remove(d):
    g = tf.gfile
    assert g.ListDirectory(".") == ["a.txt", "sub"] and g.ListDirectory("sub/") == ["x.bin"]
    _raises(tf.errors.NotFoundError, "Could not find directory nope", g.ListDirectory, "nope")
    _raises(tf.errors.NotFoundError, "Could not find directory a.txt", g.ListDirectory, "a.txt")
    g.MakeDirs("m/n/o")
    g.MakeDirs("m/n")  # exists: nothing
    assert g.IsDirectory("m/n/o")
    _raises(tf.errors.FailedPreconditionError, "a.txt is not a directory", g.MakeDirs, "a.txt/q")
    g.MkDir("k")
    g.MkDir("k")  # TF 2.x's compat.v1 MkDir: an existing path is not an error
    _raises(tf.errors.NotFoundError, "z/y; No such file or directory", g.MkDir, "z/y")
    e = _raises(tf.errors.NotFoundError, "nope; No such file or directory", g.Remove, "nope")
    assert e.error_code == tf.errors.NOT_FOUND
    _raises(tf.errors.FailedPreconditionError, "k; Is a directory", g.Remove, "k")
    (d / "r.txt").write_text("r")
    g.Remove("r.txt")
    assert not g.Exists("r.txt")
    _raises(tf.errors.NotFoundError, "nope not found", g.DeleteRecursively, "nope")
    g.DeleteRecursively("m")
    assert not g.Exists("m")


def test_rename_copy(d):
    g = tf.gfile
    (d / "f1").write_text("1")
    (d / "f2").write_text("2")
    _raises(tf.errors.AlreadyExistsError, "file already exists", g.Rename, "f1", "f2")
    g.Rename("f1", "f2", overwrite=True)
    assert (d / "f2").read_text() == "1" and not g.Exists("f1")
    _raises(tf.errors.NotFoundError, "nope; No such file or directory", g.Rename, "nope", "f3")
    g.Copy("f2", "f3")
    assert (d / "f3").read_text() == "1"
    _raises(tf.errors.AlreadyExistsError, "file already exists", g.Copy, "a.txt", "f3")
    g.Copy("a.txt", "f3", overwrite=True)
    assert (d / "f3").read_text() == "hello\nworld\nlast"
    g.Copy("f3", "f3", overwrite=True)
    assert (d / "f3").read_text() == "hello\nworld\nlast"
    _raises(tf.errors.NotFoundError, "nope; No such file or directory", g.Copy, "nope", "f4")


def test_glob_stat_walk(d):
    g = tf.gfile
    (d / "f2").write_text("2")
    (d / "f3").write_text("3")
    assert g.Glob("*.txt") == ["./a.txt"]  # TF's ./ for a wildcard in the first component
    assert g.Glob("f?") == ["./f2", "./f3"] and g.Glob("f[3]") == ["./f3"]
    assert g.Glob("sub/*") == ["sub/x.bin"] and g.Glob("*/*.bin") == ["./sub/x.bin"]
    assert g.Glob(str(d) + "/*") == [str(d / n) for n in ("a.txt", "f2", "f3", "sub")]
    assert g.Glob("a.txt") == ["a.txt"] and g.Glob("zz*") == [] and g.Glob("nodir/*") == []
    st = g.Stat("a.txt")
    assert (st.length, st.is_directory) == (16, False) and st.mtime_nsec > 0
    assert g.Stat("sub").is_directory
    _raises(tf.errors.NotFoundError, "nope; No such file or directory", g.Stat, "nope")
    (d / "sub" / "deep").mkdir()
    walk = list(g.Walk(str(d)))
    assert walk == [(str(d), ["sub"], ["a.txt", "f2", "f3"]),
                    (str(d / "sub"), ["deep"], ["x.bin"]), (str(d / "sub" / "deep"), [], [])]
    assert [w[0] for w in g.Walk(str(d), in_order=False)] == [
        str(d / "sub" / "deep"), str(d / "sub"), str(d)]
    assert list(g.Walk("nope")) == []


def test_gfile_read(d):
    g = tf.gfile
    assert g.GFile("a.txt").read() == "hello\nworld\nlast"            # 'r': str
    assert g.GFile("a.txt", "rb").read() == b"hello\nworld\nlast"     # 'rb': bytes
    assert g.Open("sub/x.bin", "rb").read() == b"\x00\x01\xff"
    f = g.GFile("a.txt")
    assert [f.readline(), f.readline(), f.readline(), f.readline()] == [
        "hello\n", "world\n", "last", ""]
    assert g.GFile("a.txt").readlines() == ["hello\n", "world\n", "last"]
    assert list(g.GFile("a.txt", "rb")) == [b"hello\n", b"world\n", b"last"]
    with g.GFile("a.txt") as f:
        assert f.read(2) == "he" and f.tell() == 2
        f.seek(1)
        assert f.read(2) == "el"
        f.seek(-2, 2)
        assert f.read() == "st"
        assert f.size() == 16 and f.name == "a.txt" and f.mode == "r"
    f = g.GFile("a.txt")
    f.read(3)
    f.close()
    assert f.read() == "hello\nworld\nlast"  # TF: reopened from the start
    (d / "u.txt").write_bytes("é!".encode())
    assert g.GFile("u.txt").read(1) == "é"  # text mode: a cut UTF-8 character is completed
    # errors: at the first read (GFile opens lazily), as TF
    f = g.GFile("nope")
    _raises(tf.errors.NotFoundError, "nope; No such file or directory", f.read)
    _raises(tf.errors.NotFoundError, "nope; No such file or directory",
            lambda: g.GFile("nope", "rb").readline())
    _raises(tf.errors.FailedPreconditionError, "sub; Is a directory", g.GFile("sub").read)
    _raises(tf.errors.InvalidArgumentError,
            "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'", g.GFile, "a.txt", "q")
    _raises(tf.errors.PermissionDeniedError, "File isn't open for writing",
            g.GFile("a.txt").write, "x")


def test_gfile_write(d):
    g = tf.gfile
    with g.GFile("w.txt", "w") as f:
        f.write("abc")
        f.write(b"def")  # str or bytes in any mode
    assert (d / "w.txt").read_bytes() == b"abcdef"
    with g.GFile("w.txt", "a") as f:
        f.write("é")
    assert (d / "w.txt").read_text(encoding="utf-8") == "abcdefé"
    with g.GFile("w.bin", "wb") as f:
        f.write(b"\x00\xff")
        f.flush()
        assert (d / "w.bin").read_bytes() == b"\x00\xff"
    with g.GFile("n.txt", "w"):
        pass
    assert not g.Exists("n.txt")  # TF: created at the first write
    _raises(tf.errors.PermissionDeniedError, "File isn't open for reading",
            g.GFile("w2.txt", "w").read)
    _raises(tf.errors.NotFoundError, "nodir/w.txt; No such file or directory",
            g.GFile("nodir/w.txt", "w").write, "x")
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 5"):
        g.GFile("w3.txt", "w").write(5)
    f = g.GFile("wp.txt", "w+")
    f.write("xy")
    f.seek(0)
    assert f.read() == "xy"
    f.close()


def test_fastgfile(d, capfd):
    assert tf.gfile.FastGFile("a.txt", "rb").read() == b"hello\nworld\nlast"
    tf.gfile.FastGFile("a.txt", "rb").close()
    err = capfd.readouterr().err
    assert err.count("FastGFile is deprecated") == 1  # one line per process
