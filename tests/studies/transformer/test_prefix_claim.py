"""The ``prefix`` claim kind on hand-made prefix.json files, and the Transformers spec section
(examples/transformers.toml equals reproduce.toml's; --quick drops it with its claims)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from iclab.cli.reproduce import sourced_spec
from iclab.experiments.claims.probe import synthetic_records
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import load_spec
from iclab.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "transformers.toml"


def _curves(model: list[float], d: int = 5, n: int = 20) -> dict[str, object]:
    rows = []
    for k in range(n + 1):
        rows.append({"k": k, "model": model[k], "model_stderr": 0.001,
                     "ols": max(d - k, 0) / d, "ols_stderr": 0.0,
                     "averaging": 1.0 if k == 0 else (d + 1) / k, "averaging_stderr": 0.01})
    return {"d": d, "n": n, "sigma": 0.0, "rows": rows, "predictors": ["model", "ols"],
            "exact": []}


GD_STEPS = """
[[claims]]
section = "Transformers"
kind = "prefix"
compare = "below-gd-steps"
group = "transformers"
tolerance = 0.01
source = "a comparison the built-in specs do not claim (docs/guide/reproduce.md)"
"""
"""The below-gd-steps comparison, added to the example's claims for these tests."""


def _claims(tmp_path: Path, model: list[float]) -> dict[str, tuple[bool, float, float]]:
    path = tmp_path / "transformers.toml"
    path.write_text(EXAMPLE.read_text() + GD_STEPS)
    spec = load_spec(path, Registries())
    records = synthetic_records(spec)
    for run_id in records:
        atomic_write_json(tmp_path / "runs" / run_id / "prefix.json", _curves(model))
    claims = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    return {claim.claim.split(": ")[1].split(" [")[0]: (claim.holds, claim.value, claim.theory)
            for claim in claims}


def test_a_curve_like_least_squares_holds_every_claim(tmp_path: Path) -> None:
    good = [max(5 - k, 0) / 5 + 0.02 for k in range(21)]
    found = _claims(tmp_path, good)
    assert len(found) == 5 and all(holds for holds, _, _ in found.values())
    near, below_avg = (found[key] for key in list(found)[:2])
    assert near[1] == pytest.approx(0.02)
    assert below_avg[1] == pytest.approx(0.02 / 0.3)          # largest ratio: at k = n
    lsa, gd = list(found.values())[3:]
    assert lsa[2] == pytest.approx(6 / 26) and gd[2] == pytest.approx(0.02672, abs=1e-4)


def test_a_flat_curve_fails_them(tmp_path: Path) -> None:
    flat = [0.9] * 21
    found = _claims(tmp_path, flat)
    assert [holds for holds, _, _ in found.values()] == [False] * 5
    rising = [0.1 * (k > 4) + 0.05 for k in range(21)]  # low, but rising from k = d/2 to d
    assert not list(_claims(tmp_path, rising).values())[2][0]


def test_the_example_is_reproduce_s_section_and_quick_drops_it() -> None:
    full = tomllib.loads((ROOT / "src/iclab/studies/transformer/reproduce.toml").read_text())
    example = tomllib.loads(EXAMPLE.read_text())
    group = next(g for g in full["groups"] if g["name"] == "transformers")
    assert example["groups"] == [group]
    assert example["claims"] == [c for c in full["claims"] if c["section"] == "Transformers"]
    assert example["sections"]["Transformers"] == full["sections"]["Transformers"]
    quick = sourced_spec("reproduce-quick", Registries())
    assert not [c for c in quick.claims if c.section == "Transformers"]
    assert len([c for c in sourced_spec("reproduce", Registries()).claims
                if c.section == "Transformers"]) == 4   # the 3-step GD's loss: no claim


def test_falls_is_one_rule_on_the_ratio_at_2d(tmp_path: Path) -> None:
    """error(2d) / error(0) <= 0.25 and nothing else: 0.24 holds, 0.26 fails, whatever the
    curve does in between (a bump at k = d/2 .. d is drawn, not claimed)."""
    for ratio, holds in ((0.24, True), (0.26, False)):
        curve = [1.0] + [1.2] * 9 + [ratio] * 11   # k = 1..9 above k = 0, then the ratio
        found = list(_claims(tmp_path, curve).values())[2]
        assert found[0] is holds and found[1] == pytest.approx(ratio)
