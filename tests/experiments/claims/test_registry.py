"""Claim kinds of the user's: the example of docs/guide/extending.md as a plug-in named in a
spec run by ``iclab sweep``, the same kind registered in Python, and bad references."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.experiments.registries import Registries

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "extending.md"


def guide_example(language: str) -> str:
    """The ``language`` code block of the guide's claim-kind section."""
    section = GUIDE.read_text().split("## A claim kind of your own", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def write_example(folder: Path, kind: str | None = None) -> Path:
    (folder / "my_claims.py").write_text(guide_example("python"))
    spec = guide_example("toml")
    if kind is not None:
        spec = spec.replace('kind = "my_claims.py:AboveNoise"', f'kind = "{kind}"')
    (folder / "noise.toml").write_text(spec)
    return folder / "noise.toml"


def test_the_guides_plugin_kind_is_checked_and_reported_by_iclab_sweep(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_example(tmp_path)
    assert main(["sweep", "noise.toml", "--out", "out", "--quiet", "--workers", "1"]) == 0
    claims = json.loads((tmp_path / "out" / "claims.json").read_text())
    runs = [folder for folder in (tmp_path / "out" / "runs").iterdir() if folder.name[0] != "."]
    losses = {json.loads((run / "config.json").read_text())["sigma"]:
              json.loads((run / "result.json").read_text())["test_loss"] for run in runs}
    assert [c["theory"] for c in claims] == [0.25, 1.0]  # sigma^2 of the two sites
    assert [c["value"] for c in claims] == [losses[0.5], losses[1.0]]  # read from the runs
    assert all(c["holds"] and c["claim"].startswith("Noise floor: the test loss is at least")
               for c in claims)
    assert "Noise floor" in (tmp_path / "out" / "report.md").read_text()


def test_a_kind_registered_in_python_reaches_iclab_sweep(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A false statement of a registered kind fails with exit code 1: the kind is used."""
    monkeypatch.chdir(tmp_path)
    write_example(tmp_path, kind="below-noise")
    namespace: dict[str, object] = {}
    exec(guide_example("python"), namespace)  # the guide's own example
    above = namespace["AboveNoise"]
    assert isinstance(above, type)

    class BelowNoise(above):  # type: ignore[misc, valid-type]
        """A false claim: the test loss below sigma^2 / 2."""

        name = "below-noise"

        def check_site(self, spec, site, context):  # type: ignore[no-untyped-def]
            claim = super().check_site(spec, site, context)
            return self.claim(spec, site, claim.value < claim.theory / 2, claim.metric,
                              claim.value, claim.theory / 2)

    registries = Registries()
    registries.claims.register(BelowNoise())
    argv = ["sweep", "noise.toml", "--out", "out", "--quiet", "--workers", "1"]
    assert main(argv, registries=registries) == 1
    assert "2 of 2 claims do not hold" in capsys.readouterr().err
    assert main(["sweep", "noise.toml", "--out", "other", "--quiet"]) == 2  # not built in
    assert "kind must be one of" in capsys.readouterr().err


@pytest.mark.parametrize(("kind", "message"), [
    ("my_claims.py:Missing", "has no class 'Missing'"),
    ("missing.py:AboveNoise", "no such file"),
    ("my_claims.py:ClaimSpec", "must be a subclass of"),
])
def test_a_bad_plugin_kind_is_one_line_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        kind: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    write_example(tmp_path, kind=kind)
    assert main(["sweep", "noise.toml", "--out", "out", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
