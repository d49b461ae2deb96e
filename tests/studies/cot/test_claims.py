"""The Chain of thought section: the cot claim kind on fabricated records (each comparison
holds at the measured numbers and fails past its tolerance; the theory patched by an amount
that matters makes it fail), the looped kind, and the section in the reproduce specs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import iclab.studies.cot.claims as cot_claims
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec, load_spec
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.studies.cot.weights_theory import optimal_constant_step
from iclab.utils.errors import ConfigError

FRAGMENT = (Path(__file__).resolve().parents[3] / "src" / "iclab" / "studies" / "cot"
            / "reproduce.toml")
EXACT = {0: 1.875, 2: 1.180592757739717, 4: 0.6962003485279658}
ETA = {0: 0.625, 2: 0.5890725735569811, 4: 0.5221921932902148}


def make_spec(compare: str, tolerance: float, steps: list[int]) -> Spec:
    return parse_spec({
        "defaults": {"d": 5, "n": 10, "sigma": 0.0, "steps": 10},
        "groups": [{"name": "cot", "model": "lsa-cot", "cot_steps": steps, "seeds": [0]}],
        "claims": [{"section": "Chain of thought", "kind": "cot", "compare": compare,
                    "group": "cot", "tolerance": tolerance, "source": "docs/theory.md 20"}],
    }, "t", Registries())


def result(error: float, se: float, eta_w: float, eta_b: float) -> dict[str, Any]:
    return {"weight_error": error, "weight_error_stderr": se, "eta_w": eta_w, "eta_b": eta_b}


# measured in the section's sweep (d = 5, n = 10, sigma = 0, seed 0)
MEASURED = {0: result(1.8804, 0.0051, -0.005, 0.62294), 2: result(1.1851, 0.0046, 0.58915,
                                                                   0.58915),
            4: result(0.70183, 0.0074, 0.52227, 0.52227)}


def check(compare: str, tolerance: float, numbers: dict[int, dict[str, Any]],
          registry: ClaimRegistry | None = None) -> list[bool]:
    spec = make_spec(compare, tolerance, sorted(numbers))
    records = {point.run_id: RunRecord(point, dict(numbers[point.config.model.cot_steps]))
               for point in spec.points()}
    return [claim.holds for claim in evaluate_claims(spec, records, registry or ClaimRegistry(
        ))]


def test_at_gd_holds_at_the_measured_numbers_and_fails_past_4_se() -> None:
    assert check("at-gd", 4, MEASURED) == [True, True, True]
    off = {k: result(EXACT[k] + 4.1 * 0.01, 0.01, ETA[k], ETA[k]) for k in EXACT}
    edge = {k: result(EXACT[k] - 3.9 * 0.01, 0.01, ETA[k], ETA[k]) for k in EXACT}
    assert check("at-gd", 4, off) == [False, False, False]
    assert check("at-gd", 4, edge) == [True, True, True]


@pytest.mark.parametrize(("factor", "fails"), [
    (1.05, [True, True, False]), (0.95, [True, True, True]),
    (1.1, [True, True, True]), (0.9, [True, True, True])])
def test_at_gd_fails_with_the_theory_patched(factor: float, fails: list[bool],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact K-step error 5 % off is 18 se at K = 0 and 13 at K = 2: those sites fail; at
    K = 4 the error is heavy-tailed (se 1.1 %, docs/theory.md section 21.1) and the measured
    0.7018 sits 0.8 % above the exact 0.6962, so 5 % down fails it and 5 % up does not, and
    10 % off (9 se) either way fails it. (The K = 4 error is 46 % above what steps of their
    own reach, and 41 % below K = 2's: 10 % is well inside what separates the algorithms.)"""
    real = optimal_constant_step

    def patched(k: int, n: int, d: int, sigma: float) -> tuple[float, float]:
        eta, error = real(k, n, d, sigma)
        return eta, error * factor

    assert check("at-gd", 4, MEASURED) == [True, True, True]
    monkeypatch.setattr(cot_claims, "optimal_constant_step", patched)
    assert check("at-gd", 4, MEASURED) == [not fail for fail in fails]


def test_steps_hold_within_2_percent_and_fail_with_the_step_patched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert check("steps", 0.02, MEASURED) == [True, True, True]
    real = optimal_constant_step
    monkeypatch.setattr(cot_claims, "optimal_constant_step",
                        lambda k, n, d, s: (1.03 * real(k, n, d, s)[0], real(k, n, d, s)[1]))
    assert check("steps", 0.02, MEASURED) == [False, False, False]


def test_below_one_step_and_falling() -> None:
    deep = {k: MEASURED[k] for k in (2, 4)}
    assert check("below-one-step", 4, deep) == [True, True]
    assert check("falling", 4, deep) == [True]
    flat = {2: result(1.0, 0.01, 0.6, 0.6), 4: result(0.96, 0.01, 0.5, 0.5)}  # 2.8 se apart
    assert check("falling", 4, flat) == [False]
    at_one_step = {2: result(1.875 - 0.03, 0.01, 0.6, 0.6), 4: result(1.8, 0.01, 0.5, 0.5)}
    assert check("below-one-step", 4, at_one_step) == [False, True]


def test_the_section_joins_both_sets_and_its_claims_have_sources() -> None:
    full, quick = (builtin_spec(name, Registries()) for name in ("reproduce", "reproduce-quick"))
    mine = [claim for claim in full.claims if claim.section == "Chain of thought"]
    assert {claim.kind for claim in mine} == {"cot", "looped"}
    assert all(claim.source.strip() for claim in mine)
    assert "Chain of thought" in full.budgets and "Chain of thought" in quick.budgets
    assert {c.kind for c in quick.claims if c.section == "Chain of thought"} == {"cot"}


def test_a_cot_claim_on_another_model_is_refused(tmp_path: Path) -> None:
    text = FRAGMENT.read_text().replace('name = "cot-none"\nmodel = "lsa-cot"\ncot_steps = 0\n',
                                        'name = "cot-none"\nmodel = "lsa"\n')
    path = tmp_path / "cot.toml"
    path.write_text('name = "cot"\n[defaults]\nd = 5\n' + text)
    with pytest.raises(ConfigError, match="needs the lsa-cot model"):
        load_spec(path, Registries())


def test_looped_claim_compares_parameter_counts() -> None:
    def looped_check(width: int) -> list[bool]:
        spec = parse_spec({
            "defaults": {"d": 3, "n": 6, "steps": 10},
            "groups": [{"name": "looped", "model": "transformer", "layers": 1, "loops": 4,
                        "width": 16, "seeds": [0]},
                       {"name": "plain", "model": "transformer", "layers": 1, "width": width,
                        "seeds": [0]}],
            "claims": [{"section": "Chain of thought", "kind": "looped", "group": "looped",
                        "than": "plain", "tolerance": 0.01, "source": "Yang et al. 2024"}],
        }, "t", Registries())
        records = {point.run_id: RunRecord(point, {"test_loss": 1.0, "test_loss_stderr": 0.1})
                   for point in spec.points()}
        return [claim.holds for claim in evaluate_claims(spec, records, ClaimRegistry())]

    assert looped_check(16) == [True]
    assert looped_check(18) == [False]  # another width: other parameters
