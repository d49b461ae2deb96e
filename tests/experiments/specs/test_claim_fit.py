"""A claim put on a group it cannot judge is refused when the spec is loaded, in one line naming
the claim, the group and what is missing; the same claim on a group it can judge loads.
Before, each of these was found only after every run of the sweep had been trained."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.needs import Need
from iclab.experiments.registries import Registries
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.experiments.specs.spec import parse_spec
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError

FAST = {"steps": 5, "batch": 8, "eval_prompts": 100}
LSA = {"d": 2, "n": 5, "sigma": 0.5, **FAST}
SGD_HEADS = {**LSA, "heads": 2, "optimizer": "sgd", "lr_schedule": "constant", "lr": 0.01,
             "init_scale": 0.001}
TRANSFORMER = {"model": "transformer", "d": 2, "n": 5, "sigma": 0.0, "layers": 1, "width": 8,
               "heads": 2, **FAST}
DYNAMICS = {"kind": "dynamics", "claim": "global-optimum", "tolerance": 0.01}
POOL = {"kind": "pool-optimum", "tolerance": 0.02}
PREFIX = {"kind": "prefix", "compare": "near-ols", "tolerance": 0.1}
GROWTH = {"kind": "shift-growth", "shift": "w-scale", "values": [0.5, 1.0, 2.0],
          "tolerance": 4}
EXACT = {"kind": "shift", "shift": "w-scale", "values": [0.5, 1.0, 2.0],
         "measure": "exact-agreement", "tolerance": 0.05}

# (claim, a group it cannot judge, words the refusal must hold, a group it can judge)
CASES = {
    "dynamics on an adam group": (DYNAMICS, {**SGD_HEADS, "optimizer": "adam"},
                                  "optimizer sgd", SGD_HEADS),
    "dynamics on the one-head lsa": (DYNAMICS, {**SGD_HEADS, "heads": None},
                                     "multi-head lsa", SGD_HEADS),
    "merged-drop with separate keys": ({**DYNAMICS, "claim": "merged-drop"},
                                       {**SGD_HEADS, "kq": "separate"}, "kq merged",
                                       SGD_HEADS),
    "merged-drop on anisotropic inputs": ({**DYNAMICS, "claim": "merged-drop"},
                                          {**SGD_HEADS, "cov_x": {"diag": [2.0, 1.0]}},
                                          "multiples of I", {**SGD_HEADS, "cov_x":
                                                             {"diag": [2.0, 2.0]}}),
    "pool claim without a pool": (POOL, LSA, "a task pool", {**LSA, "tasks": 4}),
    "pool-nuisance without a pool": ({**POOL, "kind": "pool-nuisance"}, LSA, "a task pool",
                                     {**LSA, "tasks": 4}),
    "prefix on lsa": (PREFIX, {**LSA, "n": 4}, "prefix predictions", {**TRANSFORMER, "n": 4}),
    "prefix with n < 2d": (PREFIX, {**TRANSFORMER, "n": 3}, "n >= 2d", {**TRANSFORMER, "n": 4}),
    "below-lsa on anisotropic inputs": ({**PREFIX, "compare": "below-lsa"},
                                        {**TRANSFORMER, "cov_x": {"diag": [2.0, 1.0]}},
                                        "Sigma_x = Sigma_w = I", TRANSFORMER),
    "shift-growth on a pool": (GROWTH, {**LSA, "tasks": 4}, "linear Gaussian family", LSA),
    "shift-growth on relu": (GROWTH, {**LSA, "family": "two-layer-relu"},
                             "linear Gaussian family", LSA),
    "shift-growth at sigma = 0": (GROWTH, {**LSA, "sigma": [0.0, 0.5]}, "sigma > 0",
                                  {**LSA, "sigma": [0.25, 0.5]}),
    "exact shift on a model without read-out": (EXACT, {**TRANSFORMER, "n": 4}, "read-out",
                                                LSA),
    "eta on a transformer": ({"kind": "eta", "tolerance": 0.02}, TRANSFORMER, "read-out", LSA),
    "above-bayes on a uniform law": ({"kind": "above-bayes", "tolerance": 0.02},
                                     {**LSA, "x_law": "uniform"}, "linear Gaussian family",
                                     LSA),
    "n-eff without correlated contexts": ({"kind": "n-eff", "tolerance": 0.05}, LSA,
                                          "context_correlation",
                                          {**LSA, "context_correlation": [0.0, 0.5]}),
    "steps-loss on one layer": ({"kind": "steps-loss", "tolerance": 4}, LSA, "L-layer lsa",
                                {**LSA, "layers": 2}),
    "layer-steps on the full parameterisation": (
        {"kind": "layer-steps", "tolerance": 0.1}, {**LSA, "layers": 2}, "sparse",
        {**LSA, "layers": 2, "parameterisation": "sparse"}),
}


def spec_data(claim: dict[str, Any], group: dict[str, Any]) -> dict[str, Any]:
    return {"groups": [{"name": "g", **{k: v for k, v in group.items() if v is not None}}],
            "claims": [{"group": "g", **claim}]}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_claim_on_a_group_it_cannot_judge_is_refused_at_load(case: str) -> None:
    claim, bad, words, good = CASES[case]
    with pytest.raises(ConfigError) as error:
        parse_spec(spec_data(claim, bad), "s.toml", Registries())
    message = str(error.value)
    assert "\n" not in message
    assert "claims[0]" in message and f"kind {claim['kind']}" in message, message
    assert "group 'g'" in message and words in message, message
    spec = parse_spec(spec_data(claim, good), "s.toml", Registries())  # the group it can judge
    assert spec.claims[0].kind == claim["kind"]


def test_the_refusal_names_the_run_of_a_swept_group() -> None:
    with pytest.raises(ConfigError, match=r"run sigma=0\.0, seed=1: the claim needs sigma > 0"):
        parse_spec({"groups": [{"name": "g", "seeds": [1], **LSA, "sigma": [0.5, 0.0]}],
                    "claims": [{"group": "g", **GROWTH}]}, "s.toml", Registries())


@pytest.mark.parametrize(("parameters", "words"), [
    ({"measure": "kappa-transition", "kappas": [-1.0, 10.0]}, "kappa must be a number from"),
    ({"measure": "kappa-transition", "kappas": [0.0, 10.0]}, "kappa must be a number from"),
    ({"measure": "double-descent", "taus": [0.0, 1.0, 2.0]}, "tau must be a number from"),
    ({"measure": "kappa-transition"}, "needs kappas"),
    ({"measure": "convergence"}, "needs points"),
    ({"measure": "convergence", "points": [[2, 1, 1, 0.1, 0]], "repeats": [1, 2]}, "repeats"),
    ({"measure": "convergence", "points": [[2, 1, 1, 0.1, 0]], "dims": [40, 20]}, "dims"),
])
def test_asymptotic_options_out_of_range_are_refused_at_load(parameters: dict[str, Any],
                                                             words: str) -> None:
    data = {"groups": [{"name": "g", **LSA}],
            "claims": [{"kind": "lu-asymptotic", "tolerance": 0.1, **parameters}]}
    with pytest.raises(ConfigError, match="claims\\[0\\]") as error:
        parse_spec(data, "s.toml", Registries())
    assert words in str(error.value) and "\n" not in str(error.value)


def test_asymptotic_options_at_their_edges_load() -> None:
    claims = [{"kind": "lu-asymptotic", "tolerance": 0.1, "measure": "kappa-transition",
               "kappas": [1e-6, 1e6]},
              {"kind": "lu-asymptotic", "tolerance": 0.1, "measure": "convergence",
               "points": [[2, 1, 1, 0.1, 0]], "dims": [10, 20], "repeats": [2, 8]}]
    spec = parse_spec({"groups": [{"name": "g", **LSA}], "claims": claims}, "s.toml",
                      Registries())
    assert len(spec.claims) == 2


def test_sgd_matches_flow_needs_two_replicates_at_load() -> None:
    claim = {**DYNAMICS, "claim": "sgd-matches-flow", "tolerance": 4}
    with pytest.raises(ConfigError, match="replicates must be from 2"):
        parse_spec(spec_data({**claim, "replicates": 1}, SGD_HEADS), "s.toml", Registries())
    parse_spec(spec_data({**claim, "replicates": 2}, SGD_HEADS), "s.toml", Registries())


class _NeedsPool(ClaimKind):
    """A user's kind declaring a need, as the built-ins do."""

    name = "user-pool"
    statements: ClassVar[dict[str, str]] = {"": "a user's claim"}
    requires = (Need("a pool of 4 tasks", lambda config, task: config.task.tasks == 4),)

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        return self.claim(spec, site, True, "m", 0.0, 0.0)


class _Raises(_NeedsPool):
    name = "user-raises"

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        raise ZeroDivisionError("oops")


def test_a_users_kind_declares_its_needs_like_a_builtin() -> None:
    registries = Registries()
    registries.claims.register(_NeedsPool())
    registries.claims.register(_Raises())
    claim = {"kind": "user-pool", "tolerance": 1.0}
    with pytest.raises(ConfigError, match="needs a pool of 4 tasks"):
        parse_spec(spec_data(claim, {**LSA, "tasks": 3}), "s.toml", registries)
    parse_spec(spec_data(claim, {**LSA, "tasks": 4}), "s.toml", registries)
    with pytest.raises(ConfigError, match=r"unmet failed \(ZeroDivisionError: oops\)"):
        parse_spec(spec_data({**claim, "kind": "user-raises"}, LSA), "s.toml", registries)


def _toml(claim: dict[str, Any], group: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, bool):
            return str(v).lower()
        return repr(v)
    lines = ["[[groups]]", 'name = "g"', *(f"{k} = {value(v)}" for k, v in group.items()),
             "[[claims]]", 'group = "g"', *(f"{k} = {value(v)}" for k, v in claim.items())]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case", ["dynamics on an adam group", "pool claim without a pool",
                                  "prefix on lsa", "shift-growth at sigma = 0"])
def test_iclab_sweep_refuses_before_any_file(case: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    claim, bad, words, _ = CASES[case]
    (tmp_path / "s.toml").write_text(_toml(claim, bad))
    before = sorted(tmp_path.rglob("*"))
    code = main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out"),
                 "--quiet"])
    _out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before
