"""The Python API (``iclab.api``, re-exported from ``iclab``): the same numbers as the command
line, the same one-line errors as ``iclab.Error``, every option documented, and a cheap
``import iclab``."""

from __future__ import annotations

import json
import pydoc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import iclab
from iclab.cli.main import main
from iclab.cli.run_options import run_sections
from iclab.experiments.registries import Registries
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos

TIMINGS = ("wall_seconds", "cpu_seconds")
"""result.json's wall-clock fields: the only ones two runs of one config may differ in."""


def _cli_error(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    assert main(args) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("iclab: error: ")
    return line.removeprefix("iclab: error: ")


def test_import_iclab_imports_no_torch() -> None:
    code = "import sys, iclab; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_train_gives_the_command_lines_numbers(tmp_path: Path) -> None:
    api = iclab.train(d=5, n=20, sigma=0.5, seed=0, out=tmp_path / "R")
    assert main(["train", "--d", "5", "--n", "20", "--sigma", "0.5", "--seed", "0",
                 "--quiet", "--out", str(tmp_path / "R2")]) == 0
    cli = json.loads((tmp_path / "R2" / "result.json").read_text())
    written = json.loads((tmp_path / "R" / "result.json").read_text())
    for result in (cli, written, api.result):
        for key in TIMINGS:
            result.pop(key)
    assert written == cli and api.result == cli
    assert api.verdict == cli["verdict"] and api.eta_hat == cli["eta_hat"]
    assert api.test_loss == cli["test_loss"] and api.loss_star == cli["loss_star"]
    assert api.gamma == cli["gamma"]
    # the theory, independently: eta* = 1/(n + d + 1 + sigma^2) for linear-gaussian
    assert api.eta_star == pytest.approx(1 / (20 + 5 + 1 + 0.25), rel=1e-12)
    assert api.run_dir == tmp_path / "R" and api.config.task.d == 5
    model = api.load_model()
    # result.json's Gamma is read from the float32 weights, this one in float64: the same up
    # to float32 rounding, 1e-5 of Gamma's largest entry
    gamma = np.array(cli["gamma"])
    assert np.abs(model.readout(20).gamma - gamma).max() <= 1e-5 * np.abs(gamma).max()


@pytest.mark.parametrize("options, args", [
    ({"d": 0, "n": 20}, ["--d", "0", "--n", "20"]),
    ({"d": 4097, "n": 20}, ["--d", "4097", "--n", "20"]),
    ({"d": 5, "n": 20, "sigma": -1.0}, ["--d", "5", "--n", "20", "--sigma", "-1"]),
    ({"d": 5, "n": 20, "width": 2}, ["--d", "5", "--n", "20", "--width", "2"]),
    ({"d": 5, "n": 20, "family": "nope"}, ["--d", "5", "--n", "20", "--family", "nope"]),
])
def test_bad_options_raise_the_command_lines_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], options: dict[str, object],
        args: list[str]) -> None:
    expected = _cli_error(capsys, ["train", *args, "--out", str(tmp_path / "cli")])
    with pytest.raises(iclab.Error) as raised:
        iclab.train(**options, out=tmp_path / "api")
    assert str(raised.value) == expected
    assert not (tmp_path / "api").exists() and not (tmp_path / "cli").exists()


def test_d_zero_alone_is_refused_by_its_own_line_and_d_one_passes(tmp_path: Path) -> None:
    with pytest.raises(iclab.Error, match=r"^d must be an integer >= 1 and <= 4096, got 0$"):
        iclab.train(d=0)
    with pytest.raises(iclab.Error) as raised:  # the edge passes: what is missing is n
        iclab.train(d=1)
    assert "d must" not in str(raised.value) and "n" in str(raised.value)
    assert issubclass(ConfigError, iclab.Error)


def test_unknown_and_mistyped_keywords_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(iclab.Error, match="no such option: dd"):
        iclab.train(d=5, n=20, dd=3, out=tmp_path / "x")
    with pytest.raises(iclab.Error, match=r"^d must be an integer .* got '5'$"):
        iclab.train(d="5", n=20, out=tmp_path / "x")
    with pytest.raises(iclab.Error, match=r"^--out must name"):
        iclab.train(d=5, n=20)
    assert not (tmp_path / "x").exists()


def test_model_and_family_options_by_owner(tmp_path: Path) -> None:
    """Options of the chosen model and family are taken; a model's option elsewhere is the
    command line's line naming its owner."""
    with pytest.raises(iclab.Error, match=r"^steps must be"):
        iclab.train(d=5, n=20, model="transformer", width=32, heads=2,
                    family="two-layer-relu", relu_width=4, steps=0, out=tmp_path / "t")
    with pytest.raises(iclab.Error, match=r"^--network-width applies only to family relu-net"):
        iclab.train(d=5, n=20, network_width=4, out=tmp_path / "t")
    with pytest.raises(iclab.Error, match=r"^no such option: relu_width"):  # lsa has no width
        iclab.train(d=5, n=20, family="two-layer-relu", relu_width=4, out=tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_help_documents_every_option() -> None:
    text = pydoc.render_doc(iclab.train, renderer=pydoc.plaintext)
    registries = Registries()
    names = set()
    for model in [None, *registries.models.names]:
        for family in registries.families.names:
            visible, _ = run_sections(registries, model, family)
            names |= {name for cls, _ in visible for name, (_, info) in
                      field_infos(cls).items() if info.cli}
    assert {"d", "n", "sigma", "seed", "steps", "lr", "relu_width", "heads"} <= names
    missing = [name for name in sorted(names) if f"    {name}: " not in text]
    assert not missing
    assert "    out: " not in text or "out:" in text  # out is in the prose
    assert "registries" in text


def test_theory_matches_the_closed_form_and_refuses_an_unknown_option() -> None:
    result = iclab.theory(d=5, n=20, sigma=0.5, bayes_prompts=0)
    assert result.eta == pytest.approx(1 / (20 + 5 + 1 + 0.25), rel=1e-12)
    assert result.method == "closed-form" and result.bayes_loss is None
    assert len(result.gamma or []) == 5
    with pytest.raises(iclab.Error, match=r"iclab theory: no such option 'foo'"):
        iclab.theory(d=5, n=20, foo=1)
    with pytest.raises(iclab.Error, match=r"^n must be"):
        iclab.theory(d=5, n=0)
