"""Fuzz of bad plug-ins, each kind: `iclab train` exits 2 with one line, no traceback, and
writes nothing. Hypothesis writes each bad plug-in as a new file (the loader caches a file's
module by its path) and runs the command on it."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.experiments.claims.kind import ClaimKind
from iclab.experiments.claims.registry import ClaimRegistry
from iclab.utils.errors import ConfigError

_counter = itertools.count()
FUZZ = settings(max_examples=12, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
TRAIN = ["train", "--d", "3", "--n", "5", "--steps", "3", "--batch", "32", "--eval-prompts",
         "200", "--quiet"]
ERRORS = st.sampled_from(["RuntimeError", "ValueError", "ZeroDivisionError", "KeyError",
                          "IndexError", "MemoryError", "NotImplementedError", "SystemExit"])
RANDN = "torch.randn(shape, generator=g, dtype=dtype)"
LAW = "def law(shape, g, dtype):\n    return "
BAD_NUMBERS = st.sampled_from(["float('nan')", "float('inf')", "-float('inf')"])


def write_plugin(folder: Path, body: str) -> Path:
    path = folder / f"plugin_{next(_counter)}.py"
    path.write_text("import torch\nimport numpy as np\n" + textwrap.dedent(body))
    return path


def assert_refused(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("iclab: error: ")
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists()


def law_body(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["scale", "mean", "constant", "bad_number", "raises", "shape",
                                 "cauchy", "mu4", "dtype", "complex", "correlated"]))
    if kind == "scale":  # variance c^2 != 1
        c = draw(st.one_of(st.floats(0.0, 0.8), st.floats(1.25, 1e6)))
        return f"{LAW}{c!r} * {RANDN}\n"
    if kind == "mean":
        m = draw(st.one_of(st.floats(-1e3, -0.1), st.floats(0.1, 1e3)))
        return f"{LAW}{RANDN} + {m!r}\n"
    if kind == "constant":
        v = draw(st.floats(-1e3, 1e3))
        return f"def law(shape, g, dtype):\n    return torch.full(shape, {v!r}, dtype=dtype)\n"
    if kind == "bad_number":
        return (f"def law(shape, g, dtype):\n    z = torch.randn(shape, generator=g, dtype=dtype)\n"
                f"    z.view(-1)[-1] = {draw(BAD_NUMBERS)}\n    return z\n")
    if kind == "raises":
        return f"def law(shape, g, dtype):\n    raise {draw(ERRORS)}('law')\n"
    if kind == "shape":
        extra = draw(st.integers(1, 3))
        return (f"def law(shape, g, dtype):\n    return torch.randn((*shape, {extra}), "
                f"generator=g, dtype=dtype)\n")
    if kind == "cauchy":  # no mean, no variance, no fourth moment
        scale = draw(st.floats(0.1, 10))
        return (f"def law(shape, g, dtype):\n    u = torch.rand(shape, generator=g, dtype=dtype)\n"
                f"    return {scale!r} * torch.tan(torch.pi * (u - 0.5))\n")
    if kind == "mu4":  # Gaussian (mu4 = 3) declaring another fourth moment
        mu4 = draw(st.one_of(st.floats(1.0, 2.5), st.floats(3.5, 100)))
        return f"{LAW}{RANDN}\nlaw.fourth_moment = {mu4!r}\n"
    if kind == "dtype":
        return "def law(shape, g, dtype):\n    return torch.ones(shape, dtype=torch.int64)\n"
    if kind == "complex":  # standard complex normal: real part variance 1/2, cast would hide it
        return f"{LAW}torch.randn(shape, generator=g, dtype=torch.complex64)\n"
    # correlated: every coordinate the same standard normal
    return ("def law(shape, g, dtype):\n    z = torch.randn((*shape[:-1], 1), generator=g, "
            "dtype=dtype)\n    return z.expand(shape).clone()\n")


@FUZZ
@given(body=st.composite(law_body)())
def test_bad_covariate_laws_are_refused(body: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = write_plugin(tmp_path, body)
    assert_refused([*TRAIN, "--x-law", f"{path}:law"], tmp_path / f"out{next(_counter)}",
                   capsys)


def family_body(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["constant", "bad_number", "raises", "shape", "type"]))
    if kind == "constant":
        v = draw(st.floats(-1e3, 1e3))
        return f"def f(x, g):\n    return torch.full(x.shape[:2], {v!r}, dtype=x.dtype)\n"
    if kind == "bad_number":
        return (f"def f(x, g):\n    v = x.sum(-1)\n    v.view(-1)[0] = {draw(BAD_NUMBERS)}\n"
                f"    return v\n")
    if kind == "raises":
        return f"def f(x, g):\n    raise {draw(ERRORS)}('family')\n"
    if kind == "shape":
        shape = draw(st.sampled_from(["x.shape", "x.shape[:1]", "x.shape[1:2]", "(1,)"]))
        return f"def f(x, g):\n    return torch.ones({shape}, dtype=x.dtype) + x.sum()\n"
    value = draw(st.sampled_from(["1.0", "None", "[1, 2]", "np.ones(3)", "'text'"]))
    return f"def f(x, g):\n    return {value}\n"


@FUZZ
@given(body=st.composite(family_body)())
def test_bad_families_are_refused(body: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = write_plugin(tmp_path, body)
    assert_refused([*TRAIN, "--family", f"{path}:f"], tmp_path / f"out{next(_counter)}",
                   capsys)


MODEL = """
from dataclasses import dataclass
from torch import nn
from iclab.models import LinearReadout, Model

@dataclass(frozen=True)
class Options:
    pass

class Bad(Model):
    name = "bad"
    options_class = Options
    has_readout = True

    def __init__(self, d, gamma):
        super().__init__()
        self.d = d
        self.gamma = nn.Parameter(gamma)

    @classmethod
    def create(cls, d, options, generator=None, dtype=torch.float32):
        {create}
        return cls(d, 0.01 * torch.randn(d, d, generator=generator, dtype=dtype))

    def forward(self, X, y, x_q):
        {forward}
        out = ((x_q @ self.gamma) * torch.einsum("bnd,bn->bd", X, y)).sum(-1)
        {output}

    def readout(self, n):
        {readout}
        return LinearReadout.from_gamma(self.gamma.detach().double().numpy())
"""


def model_body(draw: st.DrawFn) -> str:
    parts = {"create": "pass", "forward": "pass", "output": "return out", "readout": "pass"}
    kind = draw(st.sampled_from(["create", "forward", "readout", "shape", "bad_number",
                                 "detached", "returns", "readout_shape", "no_parameters",
                                 "ignores_parameters"]))
    if kind in ("create", "forward", "readout"):
        parts[kind] = f"raise {draw(ERRORS)}('model')"
    elif kind == "shape":
        parts["output"] = "return " + draw(st.sampled_from(
            ["out[:, None]", "out.sum()", "out[:1]", "torch.cat([out, out])", "out.tolist()"]))
    elif kind == "bad_number":
        parts["output"] = f"return out * {draw(BAD_NUMBERS)}"
    elif kind == "detached":
        parts["output"] = "return out.detach()"
    elif kind == "ignores_parameters":  # in the graph, but with a zero gradient everywhere
        parts["output"] = "return x_q.sum(-1) + " + draw(st.sampled_from(
            ["0.0 * self.gamma.sum()", "self.gamma.sum() - self.gamma.sum()"]))
    elif kind == "returns":
        parts["create"] = "return " + draw(st.sampled_from(["None", "1", "nn.Linear(2, 2)"]))
    elif kind == "readout_shape":
        size = draw(st.sampled_from(["self.d + 1", "self.d - 1", "1"]))
        parts["readout"] = f"return LinearReadout.from_gamma(np.ones(({size}, {size})))"
    else:
        parts["create"] = "return _Frozen(d)"
    body = MODEL.format(**parts)
    return body + ("\nclass _Frozen(Bad):\n    def __init__(self, d):\n"
                   "        Model.__init__(self)\n        self.d = d\n"
                   "        self.register_buffer('gamma', torch.zeros(d, d))\n")


@FUZZ
@given(body=st.composite(model_body)())
def test_bad_models_are_refused(body: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = write_plugin(tmp_path, body)
    assert_refused([*TRAIN, "--model", f"{path}:Bad"], tmp_path / f"out{next(_counter)}",
                   capsys)


@FUZZ
@given(name=st.sampled_from(["", "  ", None, 3]), options=st.sampled_from(
    [{}, {"a": ()}, {"a": ("x", 2)}, {"a": "xy"}, {3: ("x",)}]), with_check=st.booleans())
def test_bad_claim_kinds_are_refused_when_registered(name: object, options: object,
                                                     with_check: bool) -> None:
    attributes: dict[str, object] = {"name": name, "options": options, "statements": {}}
    if with_check:
        attributes["check_site"] = lambda self, spec, site, context: None
    kind = type("UserKind", (ClaimKind,), attributes)()
    with pytest.raises(ConfigError) as error:
        ClaimRegistry().register(kind)
    assert "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="must be a ClaimKind instance"):
        ClaimRegistry().register(object())  # type: ignore[arg-type]


def test_a_plugin_failing_after_its_probe_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A read-out that works on the fresh model (the probe) but fails once trained."""
    body = MODEL.format(create="pass", forward="pass", output="return out",
                        readout="assert not self.gamma.abs().sum() > 0.15, 'trained'")
    path = write_plugin(tmp_path, body)
    out = tmp_path / "run"
    argv = ["train", "--d", "3", "--n", "5", "--steps", "30", "--batch", "256", "--lr",
            "0.05", "--eval-prompts", "200", "--quiet"]
    assert main([*argv, "--model", f"{path}:Bad", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "training failed in a plug-in" in err
    assert "AssertionError: trained" in err and not (out / "result.json").exists()


KIND = """
from typing import ClassVar
from iclab.experiments.claims.kind import Claim, ClaimKind
class Bad(ClaimKind):
    name = "bad"
    statements: ClassVar[dict[str, str]] = {{"": "a claim"}}
{methods}
"""
CHECK = "    def check_site(self, spec, site, context):\n        {body}\n"
GOOD_CHECK = CHECK.format(body="return self.claim(spec, site, True, 'm', 1.0, 1.0)")
SPEC = """
[[groups]]
name = "g"
d = 2
n = 4
sigma = [0.0, 0.5]
steps = 3
eval_prompts = 200
[[groups]]
name = "deep"
d = 2
n = 4
layers = 2
parameterisation = "sparse"
steps = 3
eval_prompts = 200
[[claims]]
kind = "{kind}"
group = "{group}"
tolerance = 1
"""


CLAIM_FAULTS = ("raises", "returns", "number", "holds", "key", "figure", "figure_type",
                "parameters", "measurements")


def claim_kind_methods(draw: st.DrawFn, kind: str) -> str:
    if kind == "raises":
        return CHECK.format(body=f"raise {draw(ERRORS)}('kind')")
    if kind == "returns":  # check() must return a list of claims
        value = draw(st.sampled_from(["None", "3", "'text'", "[1]", "(self.claim(spec, "
                                      "site, True, 'm', 1.0, 1.0),)"]))
        return ("    def check(self, spec, sites, context):\n"
                f"        return {value.replace('site,', 'sites[0],')}\n")
    if kind == "number":  # a claim's value or theory not finite
        bad, where = draw(BAD_NUMBERS), draw(st.sampled_from(["value", "theory"]))
        numbers = f"{bad}, 1.0" if where == "value" else f"1.0, {bad}"
        return CHECK.format(body=f"return self.claim(spec, site, True, 'm', {numbers})")
    if kind == "holds":  # Claim built by hand with a verdict that is not a bool
        return CHECK.format(body="return Claim('c', 'yes', 'm', 1.0, 1.0, 1.0, 's', 'g', 'x')")
    if kind == "key":  # a key no result.json has
        return CHECK.format(body="return site.records[0].result['no_such_key']")
    if kind == "figure":
        return GOOD_CHECK + ("    def figure_key(self, spec):\n"
                             f"        raise {draw(ERRORS)}('figure')\n")
    if kind == "figure_type":
        return GOOD_CHECK + "    def figure_key(self, spec):\n        return 'one string'\n"
    if kind == "parameters":
        return GOOD_CHECK + ("    def validate_parameters(self, raw, where):\n"
                             f"        raise {draw(ERRORS)}('parameters')\n")
    return GOOD_CHECK + "    def measurements(self, parameters):\n        return [1, 2]\n"


@pytest.mark.parametrize("fault", CLAIM_FAULTS)
@settings(FUZZ, max_examples=3)
@given(data=st.data(), group=st.sampled_from(["g", "deep"]))
def test_bad_claim_kinds_are_refused_before_any_run(
        fault: str, data: st.DataObject, group: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """sweep (the claims on one-layer or two-layer runs): exit 2, one line, no folder."""
    methods = data.draw(st.composite(claim_kind_methods)(fault))
    path = write_plugin(tmp_path, KIND.format(methods=methods))
    spec = tmp_path / f"spec{next(_counter)}.toml"
    spec.write_text(SPEC.format(kind=f"{path}:Bad", group=group))
    out = tmp_path / f"out{next(_counter)}"
    assert_refused(["sweep", str(spec), "--quiet", "--workers", "1"], out, capsys)
    assert_refused(["sweep", str(spec), "--quiet", "--workers", "1"], out, capsys)  # again


def test_a_kind_that_reads_the_sweeps_files_passes_the_probe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kind that asks for the sweep folder (its measurements) is checked after the runs,
    on the real results: not refused by the probe, which has no folder to give it."""
    body = ("_, _, out = context.sweep('reading runs')\n"
            "        value = float((out / 'results.csv').exists())\n"
            "        return self.claim(spec, site, True, 'm', value, 1.0)")
    path = write_plugin(tmp_path, KIND.format(methods=CHECK.format(body=body)))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(kind=f"{path}:Bad", group="g"))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    assert "2 of 2 claims hold" in capsys.readouterr().out
    assert (out / "claims.json").exists()
