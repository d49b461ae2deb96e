"""The ``lu-asymptotic`` claim kind: claims without training runs (no group), their numbers
against the simulation and the closed forms they are built from, the figure, and bad
parameters (one line)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import pytest

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.probe import probe_claim_kinds
from iclab.experiments.claims.registry import evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.report.section_times import section_seconds
from iclab.experiments.report.write import make_figures
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.formulas import ridgeless_e_icl
from iclab.studies.asymptotic.simulation import simulate
from iclab.utils.errors import ConfigError

GROUP = {"name": "tiny", "d": 2, "n": 3, "steps": 1, "batch": 8}


def spec_of(*claims: dict[str, Any]) -> Spec:
    return parse_spec({"groups": [GROUP], "claims": list(claims)}, "t.toml", Registries())


KAPPA = {"section": "Task diversity", "kind": "lu-asymptotic", "measure": "kappa-transition",
         "kappas": [0.25, 16.0], "tau": 2.0, "d": 10, "repeats": 1, "tolerance": 0.5,
         "test_prompts": 400, "source": "test"}
DOUBLE = {"section": "Task diversity", "kind": "lu-asymptotic", "measure": "double-descent",
          "taus": [0.5, 1.0, 2.0], "kappa": 2.0, "lam": 1e-4, "d": 8, "repeats": 1,
          "tolerance": 0.15, "test_prompts": 400, "source": "test"}
CONVERGENCE = {"section": "Task diversity", "kind": "lu-asymptotic", "measure": "convergence",
               "points": [[0.5, 1.0, "inf", 0.1, 0.5]], "dims": [6, 12], "repeats": [3, 2, 1],
               "tolerance": 0.012, "test_prompts": 400, "source": "test"}


def test_claims_without_runs(tmp_path: Path) -> None:
    spec = spec_of(KAPPA, DOUBLE, CONVERGENCE)
    assert [c.group for c in spec.claims] == ["", "", ""]
    registries = Registries()
    context = ClaimContext(out_dir=tmp_path, spec=spec, records={}, kinds=registries.claims)
    claims = evaluate_claims(spec, {}, registries.claims, context.cache, out_dir=tmp_path)
    assert len(claims) == 4 and all(c.source == "test" for c in claims)
    small = simulate(2.0, 1.0, 0.25, 0.1, 0.0, 10, seed=0, repeats=1, test_prompts=400)
    large = simulate(2.0, 1.0, 16.0, 0.1, 0.0, 10, seed=0, repeats=1, test_prompts=400)
    assert claims[0].value == pytest.approx(small.e_idg / small.e_icl, rel=1e-12)
    assert claims[1].value == pytest.approx(large.e_idg / large.e_icl, rel=1e-12)
    for claim, kappa in zip(claims[:2], (0.25, 16.0), strict=True):
        theory = asymptotic_errors(2.0, 1.0, kappa, 0.1, 0.0)
        assert claim.theory == pytest.approx(theory.e_idg / theory.e_icl, rel=1e-12)
        assert claim.holds == (abs(claim.value - claim.theory) <= 0.5)
    peak = max((simulate(t, 1.0, 2.0, 0.1, 1e-4, 8, repeats=1, test_prompts=400).e_icl, t)
               for t in (0.5, 1.0, 2.0))[1]
    assert claims[2].value == peak and claims[2].theory == 1.0  # the closed form peaks at 1
    assert ridgeless_e_icl(0.9, 1.0, 2.0, 0.1) > ridgeless_e_icl(2.0, 1.0, 2.0, 0.1)
    assert claims[2].holds == (abs(peak - 1.0) <= 0.15)
    sims = [simulate(0.5, 1.0, math.inf, 0.1, 0.5, d, seed=0, repeats=r, test_prompts=400)
            for d, r in ((6, 3), (12, 2))]
    theory = asymptotic_errors(0.5, 1.0, math.inf, 0.1, 0.5).e_icl
    estimates = [2 * getattr(sims[1], key) - getattr(sims[0], key)  # the line through both
                 for key in ("e_icl", "e_idg")]
    worst = max(estimates, key=lambda value: abs(value - theory))
    assert claims[3].value == pytest.approx(worst, rel=1e-9) and "d=6, 12" in claims[3].claim
    assert claims[3].theory == theory
    assert claims[3].holds == (abs(worst - theory) <= 0.012)
    figures = make_figures(context, registries.claims)
    assert [f.name for f in figures] == ["task_diversity_asymptotic.png"]
    assert (tmp_path / figures[0].name).stat().st_size > 10_000
    assert section_seconds(spec, {}) == {"Task diversity": (0, 0.0, 0.0)}


def test_a_kind_with_runs_still_needs_its_group() -> None:
    with pytest.raises(ConfigError, match="group must be one of"):
        spec_of({"section": "X", "kind": "eta", "reference": "theorem1", "tolerance": 0.02})


@pytest.mark.parametrize("change, message", [
    ({"points": [[0.5, 1.0, 2.0, 0.1, 0.0], [1.0, 1.0, 2.0, 0.1, 0.0]]}, "diverges"),
    ({"points": [[0.5, 1.0]]}, "points must be a list"),
    ({"points": [[-0.5, 1.0, 2.0, 0.1, 0.0]]}, "must be a number"),
    ({"dims": [20]}, "dims must be a list"),
    ({"memorised": 0.5}, "memorised"),
    ({"measure": "peak"}, "measure must be one of"),
])
def test_bad_parameters(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        spec_of({**CONVERGENCE, **change})
    assert "\n" not in str(error.value)


def test_builtin_specs_state_the_asymptotic_claims() -> None:
    for name, dims in (("reproduce", (10, 20)), ("reproduce-quick", (10, 20))):
        claims = [c for c in builtin_spec(name, Registries()).claims
                  if c.kind == "lu-asymptotic"]
        assert {c.options["measure"] for c in claims} == {
            "double-descent", "kappa-transition", "convergence"}
        assert all(c.section == "Task diversity" and c.source and c.group == ""
                   for c in claims)
        (convergence,) = [c for c in claims if c.options["measure"] == "convergence"]
        assert tuple(convergence.parameters["dims"]) == dims
        assert convergence.tolerance < 0.015  # a theory off by 0.03 cannot pass
        # each d drawn to a standard error of 0.003 at most: the extrapolation's (e + b/d
        # from d = 10 and 20) is then at most sqrt(2^2 + 1) x 0.003 = 0.0067 < tolerance / 2
        assert convergence.parameters["stderr"] <= 0.003


class Constant(ClaimKind):
    """A user's kind without runs."""

    name = "constant"
    needs_runs = False
    statements: ClassVar[dict[str, str]] = {"": "two is more than one"}

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        assert group_sites == []
        return [Claim("two is more than one", True, "2 vs 1", 2.0, 1.0, spec.tolerance,
                      spec.section, spec.group, "", "", spec.source)]


def test_a_users_kind_without_runs_is_probed_and_checked() -> None:
    registries = Registries()
    registries.claims.register(Constant())
    spec = parse_spec({"groups": [GROUP], "claims": [
        {"section": "Mine", "kind": "constant", "tolerance": 1}]}, "t.toml", registries)
    probe_claim_kinds(spec, registries.claims)
    (claim,) = evaluate_claims(spec, {}, registries.claims)
    assert claim.holds and claim.group == ""


def test_double_descent_fails_with_the_theory_s_peak_moved_by_twice_the_tolerance(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The asymptotic e_ICL with its divergence moved from tau = 1 to 1.3 (tau read as
    tau / 1.3: twice the tolerance 0.15): its peak over the grid moves to 1.25 and the claim,
    which holds on the simulation at d = 8 with the right theory, fails."""
    claim = {**DOUBLE, "taus": [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]}
    registries = Registries()
    (right,) = evaluate_claims(spec_of(claim), {}, registries.claims)
    assert right.holds and right.theory == 1.0 and right.value == 1.0

    def moved(tau: float, *rest: float) -> Any:
        return asymptotic_errors(tau / 1.3, *rest)

    monkeypatch.setattr("iclab.studies.asymptotic.claims.asymptotic_errors", moved)
    (wrong,) = evaluate_claims(spec_of(claim), {}, registries.claims)
    assert wrong.theory == 1.25 and wrong.value == 1.0 and not wrong.holds


def test_a_report_made_again_reads_the_simulations_from_the_sweep_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = spec_of(KAPPA)
    registries = Registries()
    first = evaluate_claims(spec, {}, registries.claims, {}, out_dir=tmp_path)
    assert len(list((tmp_path / "theory-cache").glob("lu-simulation-*.json"))) == 2

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("simulated again")

    monkeypatch.setattr("iclab.studies.asymptotic.simulation.fit_gamma", refused)
    again = evaluate_claims(spec, {}, registries.claims, {}, out_dir=tmp_path)
    assert [c.to_json() for c in again] == [c.to_json() for c in first]
    with pytest.raises(AssertionError, match="simulated again"):  # another folder: computed
        evaluate_claims(spec, {}, registries.claims, {}, out_dir=tmp_path / "other")
