"""``iclab sweep`` and ``iclab reproduce`` from the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from iclab.cli.main import main

SPEC = """name = "cli"
[defaults]
d = 3
steps = 300
batch = 512
eval_prompts = 20000
[[groups]]
name = "iso"
n = [4, 8]
sigma = 0.5
[[claims]]
section = "Theorem 1"
kind = "eta"
reference = "theorem1"
group = "iso"
tolerance = TOL
"""


def write_spec(tmp_path: Path, tolerance: float) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.replace("TOL", str(tolerance)))
    return path


def test_sweep_runs_a_users_spec_and_reports(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, 0.05)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "2 of 2 claims hold" in printed
    for name in ("results.csv", "timings.csv", "claims.json", "report.html", "report.md",
                 "iso_eta.png"):
        assert (out / name).exists(), name
    # a stricter tolerance on the same (finished, not re-run) models: the verdict flips, exit 1
    strict = write_spec(tmp_path, 1e-9)
    assert main(["sweep", str(strict), "--out", str(out), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "FAILS" in captured.out
    assert re.search(r"iclab: error: 2 of 2 claims do not hold", captured.err)


@pytest.mark.parametrize(("args", "message"), [
    (["sweep", "missing.toml", "--out", "o"], "cannot read spec"),
    (["sweep", "SPEC", "--out", "o", "--executor", "kubernetes"], "'kubernetes' is not one of"),
    (["sweep", "SPEC", "--out", "o", "--address", "auto"], "--address applies only"),
    (["sweep", "SPEC", "--out", "o", "--workers", "0"], "workers must be an integer >= 1"),
    (["reproduce", "--workers", "-3"], "workers must be an integer >= 1"),
])
def test_bad_input_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = write_spec(tmp_path, 0.05)
    args = [str(spec) if a == "SPEC" else a for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "runs").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["sweep", "SPEC", "--out", "o", "--threads", "0"], "--threads must be an integer >= 1, got 0"),
    (["reproduce", "--threads", "-2"], "--threads must be an integer >= 1, got -2"),
    (["reproduce", "--quick", "--threads", "1.5"], "'1.5' is not a valid integer"),
    (["sweep", "SPEC", "--out", "o", "--threads", "two"], "'two' is not a valid integer"),
])
def test_threads_below_one_or_not_an_integer_are_one_line_and_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = write_spec(tmp_path, 0.05)
    before = sorted(tmp_path.rglob("*"))
    assert main([str(spec) if a == "SPEC" else a for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and "--threads" in err and len(err.strip().splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before


def test_reproduce_help_names_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--quick", "--out", "--executor", "--address", "--workers", "--threads"):
        assert option in text


@pytest.mark.slow
def test_reproduce_quick_holds_every_claim(tmp_path: Path) -> None:
    """Every claim of the quick set holds, each with its source, so the command exits 0; the
    softmax model's shift curves are measurements beside the claims, not claims. Its time is
    measured outside tests (benchmarks/README.md)."""
    out = tmp_path / "quick"
    assert main(["reproduce", "--quick", "--out", str(out), "--quiet"]) == 0
    claims = json.loads((out / "claims.json").read_text())
    assert isinstance(claims, list) and claims
    assert [c["claim"] for c in claims if c["holds"] is not True] == []
    assert all(isinstance(c["source"], str) and c["source"].strip() for c in claims)
    assert not any("model=softmax" in c["claim"] for c in claims)
    named = " ".join(c["claim"] for c in claims)
    for section in ("Theorem 1", "Theorem 2", "Theorem 3", "Control", "Context", "Shift",
                    "Depth", "Covariates"):
        assert f"{section}:" in named
    assert "layers=4" in named  # Depth reaches four layers in the quick set too
    assert (out / "depth_depth.png").is_file()
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(list(out.glob("*.png"))) >= 6


def test_reproduce_refuses_a_built_in_claim_without_a_source(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import iclab.cli.reproduce
    from iclab.experiments.registries import Registries
    from iclab.experiments.specs.spec import parse_spec

    spec = parse_spec({"groups": [{"name": "iso", "d": 2, "n": 4}], "claims": [
        {"section": "S", "kind": "eta", "group": "iso", "tolerance": 0.1, "source": "x"},
        {"section": "S", "kind": "isotropy", "group": "iso", "tolerance": 0.1}]}, "t",
        Registries())
    monkeypatch.setattr(iclab.cli.reproduce, "builtin_spec", lambda name, found: spec)
    assert main(["reproduce", "--quick", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "needs a source; 1 have none, first S/isotropy/iso" in err
    assert err.count("\n") == 1 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["reproduce", "reproduce-quick"])
def test_every_built_in_claim_has_a_source(name: str) -> None:
    from iclab.cli.reproduce import sourced_spec
    from iclab.experiments.registries import Registries

    spec = sourced_spec(name, Registries())
    assert all(claim.source.strip() for claim in spec.claims)
    assert all(claim.group != "shift-softmax" for claim in spec.claims)  # measured only
