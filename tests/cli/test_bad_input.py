"""Every command, driven with generated bad values: exit code 2, one line on stderr naming the
problem, no traceback, and no file written (the working folder is left as it was)."""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.config.sections import SECTIONS
from iclab.models.lsa.options import LSAOptions
from iclab.utils.fields import FieldInfo, field_infos

FAST = ["--d", "2", "--n", "5", "--sigma", "0.5", "--steps", "5", "--batch", "8",
        "--eval-prompts", "100", "--quiet"]
SPEC = ('[[groups]]\nname = "g"\nd = 2\nn = 5\nsigma = 0.5\nsteps = 5\nbatch = 8\n'
        'eval_prompts = 100\n')
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@contextlib.contextmanager
def scratch(files: dict[str, bytes] | None = None) -> Iterator[Path]:
    """A fresh empty working folder (holding ``files``) for one example."""
    with tempfile.TemporaryDirectory() as name, contextlib.chdir(name):
        for relative, data in (files or {}).items():
            path = Path(name) / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        yield Path(name)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*")}


def assert_refused(argv: list[str], capsys: pytest.CaptureFixture[str],
                   files: dict[str, bytes] | None = None) -> str:
    with scratch(files) as folder:
        before = snapshot(folder)
        code = main(argv)
        after = snapshot(folder)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    assert err.count("\n") == 1 and err.endswith("\n"), (argv, err)
    assert "Traceback" not in err + out and out == "", (argv, out, err)
    assert after == before, (argv, sorted(set(after) ^ set(before)))
    return err


def _numeric_fields() -> list[tuple[str, FieldInfo]]:
    """Every declared int/float option of iclab train."""
    fields = [(name, info) for cls in (*SECTIONS, LSAOptions)
              for name, (_, info) in field_infos(cls).items()
              if info.kind in ("int", "float") and info.cli]
    assert {"d", "n", "sigma", "steps", "batch", "lr", "seed", "key_dim"} <= {n for n, _ in fields}
    return fields


def out_of_bounds(info: FieldInfo) -> st.SearchStrategy[str]:
    """Text of a number just outside, or far outside, the field's declared bounds, or of no
    number at all."""
    options: list[st.SearchStrategy[str]] = [
        st.sampled_from(["", " ", "abc", "1e", "--", "0x1p3", "1,5", "nan", "inf", "-inf"])]
    if info.kind == "int":
        options.append(st.sampled_from(["1.5", "1e3", "2.0"]))
    low, high = info.minimum, info.maximum
    if low is not None:
        if info.kind == "int":
            options.append(st.integers(max_value=int(low) - 1).map(str))
        else:
            below = st.floats(max_value=low, allow_nan=False, allow_infinity=False)
            options.append(below.filter(lambda x: x < low or info.strict).map(repr))
    if high is not None:
        if info.kind == "int":
            options.append(st.integers(min_value=int(high) + 1).map(str))
        else:
            options.append(st.floats(min_value=high, exclude_min=True, allow_nan=False,
                                     allow_infinity=False).map(repr))
    return st.one_of(options)


@st.composite
def bad_train_option(draw: st.DrawFn) -> tuple[str, str]:
    name, info = draw(st.sampled_from(_numeric_fields()))
    return "--" + name.replace("_", "-"), draw(out_of_bounds(info))


def with_option(argv: list[str], flag: str, value: str) -> list[str]:
    if flag in argv:
        argv = list(argv)
        argv[argv.index(flag) + 1] = value
        return argv
    return [*argv, flag, value]


@SETTINGS
@given(option=bad_train_option())
def test_train_refuses_every_out_of_bounds_number(
    option: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    flag, value = option
    err = assert_refused(["train", *with_option(FAST, flag, value), "--out", "run"], capsys)
    name = flag.lstrip("-").replace("-", "_")
    assert f"{name} must be" in err or f"'{flag}'" in err, err


CHOICES = {"--lr-schedule": ("cosine", "constant"), "--sampler": ("auto", "statistics",
                                                                   "prompts"),
           "--device": ("cpu", "cuda"), "--init": ("gd-subspace", "random")}


@SETTINGS
@given(flag=st.sampled_from(sorted(CHOICES)), value=st.text(max_size=12))
def test_train_refuses_every_unknown_choice(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if value in CHOICES[flag] or "\x00" in value or value.startswith("-"):
        value = value + "?"
    assert_refused(["train", *FAST, flag, value, "--out", "run"], capsys)


NAME_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.:/ ", max_size=20)


@SETTINGS
@given(family=st.one_of(
    NAME_TEXT.filter(lambda s: s not in ("linear-gaussian", "relu", "two-layer-relu",
                                         "anisotropic")),
    st.sampled_from(["os:system", "os:getcwd", "sys:exit", "math:pi", "builtins:len",
                     "no_such_module_xyz:draw", "missing.py:draw", "time:sleep"])))
def test_train_and_theory_refuse_every_bad_family(
    family: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(["train", *FAST, "--family", family, "--out", "run"], capsys)
    assert_refused(["theory", "--d", "2", "--n", "5", "--sigma", "0.5", "--family", family],
                   capsys)


THEORY_BOUNDS: dict[str, st.SearchStrategy[str]] = {
    "--d": st.one_of(st.integers(max_value=0), st.integers(min_value=4097)).map(str),
    "--n": st.one_of(st.integers(max_value=0), st.integers(min_value=1_000_001)).map(str),
    "--sigma": st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1e4,
                                                                 exclude_min=True),
                         st.just(math.nan)).map(repr),
    "--seed": st.one_of(st.integers(max_value=-1), st.integers(min_value=2**62 + 1)).map(str),
    "--bayes-prompts": st.one_of(st.integers(max_value=-1), st.just(1),
                                 st.integers(min_value=10**12)).map(str),
    "--precision": st.one_of(st.floats(max_value=1e-7), st.floats(min_value=0.51)).map(repr),
}


@SETTINGS
@given(flag=st.sampled_from(sorted(THEORY_BOUNDS)), data=st.data())
def test_theory_refuses_every_out_of_bounds_number(
    flag: str, data: st.DataObject, capsys: pytest.CaptureFixture[str]
) -> None:
    value = data.draw(THEORY_BOUNDS[flag])
    base = ["theory", "--d", "2", "--n", "5", "--sigma", "0.5"]
    assert_refused(with_option(base, flag, value), capsys)


@pytest.fixture(scope="module")
def finished_run() -> dict[str, bytes]:
    """The files of a small finished run (d = 2: the span fit needs >= 1200 prompts)."""
    with tempfile.TemporaryDirectory() as name:
        assert main(["train", *FAST, "--out", str(Path(name) / "run")]) == 0
        return {f"run/{p.name}": p.read_bytes() for p in (Path(name) / "run").iterdir()}


@SETTINGS
@given(config=st.binary(max_size=64), result=st.binary(max_size=64), data=st.data())
def test_certify_refuses_damaged_folders_and_counts(
    config: bytes, result: bytes, data: st.DataObject, finished_run: dict[str, bytes],
    capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = {**finished_run, "run/config.json": config}
    assert_refused(["certify", "run"], capsys, damaged)
    damaged = {**finished_run, "run/result.json": result}
    assert_refused(["certify", "run"], capsys, damaged)
    damaged = {**finished_run, "run/model.safetensors": data.draw(st.binary(max_size=200))}
    assert_refused(["certify", "run"], capsys, damaged)
    option, value = data.draw(st.sampled_from([
        ("--fit-prompts", st.one_of(st.integers(max_value=1199), st.integers(10**8 + 1))),
        ("--test-prompts", st.one_of(st.integers(max_value=99), st.integers(10**8 + 1))),
        ("--seed", st.one_of(st.integers(max_value=-1), st.integers(min_value=2**62 + 1)))]))
    assert_refused(["certify", "run", option, str(data.draw(value))], capsys, finished_run)


@SETTINGS
@given(spec=st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"a = " + b"[" * 5000 + b"]" * 5000, b"[" * 5000 + b"]" * 5000]),
    st.builds(lambda key, value: SPEC.replace("sigma = 0.5", f"{key} = {value}").encode(),
              st.sampled_from(["sigma", "d", "n", "steps", "lr", "seeds", "family", "model"]),
              st.sampled_from(["-1", "nan", "inf", "1e300", '"x"', "[]", "[-1]", "{a = 1}",
                               '"os:system"', "100000000000000000000"]))),
    suffix=st.sampled_from([".toml", ".json"]))
def test_sweep_refuses_every_bad_spec(
    spec: bytes, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "spec" + suffix
    assert_refused(["sweep", name, "--out", "sw", "--quiet"], capsys, {name: spec})


OUTS: list[tuple[str, dict[str, bytes]]] = [
    ("", {}), (" ", {}), ("afile", {"afile": b"x"}), ("afile/below", {"afile": b"x"}),
    ("/proc/iclab-test/x", {}), ("sw", {"sw/runs": b"x"}), ("sw", {"sw/runs/.locks": b"x"}),
    ("x" * 300, {}),
]


@pytest.mark.parametrize(("out", "files"), OUTS)
@pytest.mark.parametrize("command", ["train", "sweep", "reproduce"])
def test_every_command_refuses_a_bad_out_folder(
    command: str, out: str, files: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = {"train": ["train", *FAST], "sweep": ["sweep", "spec.toml", "--quiet"],
            "reproduce": ["reproduce", "--quick", "--quiet"]}[command]
    if command == "train" and out == "sw":
        files = {**files, "sw/other": b"x"}  # not a run folder
    assert_refused([*argv, "--out", out], capsys, {"spec.toml": SPEC.encode(), **files})


@SETTINGS
@given(workers=st.integers(max_value=0).map(str), executor=NAME_TEXT.filter(
    lambda s: s not in ("local", "ray")), command=st.sampled_from(["sweep", "reproduce"]))
def test_sweep_and_reproduce_refuse_bad_executor_options(
    workers: str, executor: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "spec.toml"] if command == "sweep" else ["reproduce", "--quick"]
    files = {"spec.toml": SPEC.encode()}
    assert_refused([*argv, "--out", "sw", "--workers", workers], capsys, files)
    assert_refused([*argv, "--out", "sw", "--executor", executor], capsys, files)
    assert_refused([*argv, "--out", "sw", "--address", "localhost:1"], capsys, files)


@SETTINGS
@given(extra=st.lists(NAME_TEXT.filter(lambda s: not s.startswith("-")).map(
    lambda s: s or "x"), min_size=1, max_size=3),
    command=st.sampled_from(["models", "families"]))
def test_catalogue_commands_refuse_extra_arguments(
    extra: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused([command, *extra], capsys)


def test_the_refusals_are_real(capsys: pytest.CaptureFixture[str]) -> None:
    """The other side: the base command lines above are accepted and write their files."""
    with scratch() as folder:
        assert main(["train", *FAST, "--out", "run"]) == 0
        assert (folder / "run" / "result.json").is_file()
        assert main(["theory", "--d", "2", "--n", "5", "--sigma", "0.5", "--bayes-prompts",
                     "100"]) == 0
    capsys.readouterr()


PLUGINS: dict[str, Callable[[], str]] = {
    "wrong_shape": lambda: "def draw(x, g):\n    return x.sum(-1, keepdim=True)\n",
    "raises": lambda: "def draw(x, g):\n    raise RuntimeError('boom\\nsecond line')\n",
    "non_finite": lambda: ("import torch\ndef draw(x, g):\n"
                           "    return torch.full(x.shape[:2], float('nan'))\n"),
    "complex": lambda: ("import torch\ndef draw(x, g):\n"
                        "    return torch.zeros(x.shape[:2], dtype=torch.complex64)\n"),
    "exits": lambda: "import sys\nsys.exit(3)\n",
    "too_many_args": lambda: "def draw():\n    return 0\n",
}


@pytest.mark.parametrize("kind", sorted(PLUGINS))
def test_a_broken_user_family_is_refused_before_anything_is_written(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"plug.py": PLUGINS[kind]().encode()}
    err = assert_refused(["train", *FAST, "--family", "plug.py:draw", "--out", "run"], capsys,
                         files)
    assert "plug.py" in err
    assert_refused(["sweep", "spec.toml", "--out", "sw"], capsys,
                   {**files, "spec.toml": SPEC.replace(
                       "sigma = 0.5", 'sigma = 0.5\nfamily = "plug.py:draw"').encode()})


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError(
    "[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory: you "
    "tried to allocate 8000000000000 bytes")])
def test_running_out_of_memory_is_one_line(
    error: BaseException, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import iclab.cli.theory.command

    def exhausted(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(iclab.cli.theory.command, "family_optimum", exhausted)
    err = assert_refused(["theory", "--d", "2", "--n", "5", "--sigma", "0.5"], capsys)
    assert "out of memory" in err

    def fails(*args: object, **kwargs: object) -> None:
        raise RuntimeError("another failure")

    monkeypatch.setattr(iclab.cli.theory.command, "family_optimum", fails)
    with pytest.raises(RuntimeError, match="another failure"):   # not hidden as memory
        main(["theory", "--d", "2", "--n", "5", "--sigma", "0.5"])
