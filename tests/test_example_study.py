"""The example study (examples/odd_power_study.py) goes through the same door as iclab's own:
``--study`` adds its family and claim kind, ``iclab families`` and ``iclab studies`` list them,
the conformance suite runs on its family, and its spec runs end to end with the claims
checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclab.cli.main import main
from tests import test_conformance

ROOT = Path(__file__).resolve().parents[1]
STUDY = f"{ROOT / 'examples' / 'odd_power_study.py'}:STUDY"


def test_the_study_lists_its_family_and_claim_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--study", STUDY, "families", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert "power" in rows["odd-power"]["parameters"]
    assert rows["odd-power"]["capabilities"]["rotation_invariant"]
    assert main(["--study", STUDY, "studies", "--json"]) == 0
    studies = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert studies["odd-power"]["families"] == ["odd-power"]
    assert studies["odd-power"]["claim_kinds"] == ["below-zero-predictor"]
    assert main(["families"]) == 0 and "odd-power" not in capsys.readouterr().out


def test_the_conformance_suite_runs_on_its_family() -> None:
    assert "odd-power" in test_conformance.FAMILY_NAMES


def test_its_option_is_checked_where_declared(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for power, message in (("2", "power must be odd"), ("11", "power must be an integer")):
        code = main(["--study", STUDY, "train", "--family", "odd-power", "--power", power,
                     "--d", "2", "--n", "4", "--out", str(tmp_path / power)])
        err = capsys.readouterr().err
        assert code == 2 and message in err and err.count("\n") == 1
        assert not (tmp_path / power).exists()
    assert main(["--study", STUDY, "train", "--power", "3", "--d", "2", "--n", "4", "--out",
                 str(tmp_path / "lg")]) == 2
    assert "--power applies only to family odd-power" in capsys.readouterr().err


def test_its_spec_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep"
    code = main(["--study", STUDY, "sweep", str(ROOT / "examples" / "odd_power.toml"),
                 "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    claims = json.loads((out / "claims.json").read_text())
    assert [c["holds"] for c in claims] == [True, True]
    powers = sorted(json.loads(p.read_text())["power"] for p in out.glob("runs/*/config.json"))
    assert powers == [1, 1, 3, 3]
    assert all(0 < c["value"] < 0.8 and 0 < c["theory"] < 1 for c in claims)
