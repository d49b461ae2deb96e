"""Spec files: expansion into runs, config hashes, covariance expressions, validation."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.config.train import TrainConfig
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec, load_spec
from iclab.experiments.specs.groups import config_hash
from iclab.experiments.specs.spec import parse_spec
from iclab.utils.errors import ConfigError

S = [[2.0, 0.5], [0.5, 1.0]]


def spec_data(**group: Any) -> dict[str, Any]:
    return {"name": "t", "defaults": {"d": 2, "steps": 10}, "covariances": {"S": S},
            "groups": [{"name": "g", **group}]}


def test_groups_expand_to_the_product_of_axes_with_seeds_innermost() -> None:
    spec = parse_spec(spec_data(seeds=[3, 4], n=[5, 10], sigma=[0.0, 1.0, 2.0]), "t", Registries())
    points = spec.group("g").points
    assert len(points) == 2 * 3 * 2
    assert spec.group("g").axes == ("n", "sigma")
    got = [(p.config.task.n, p.config.task.sigma, p.config.run.seed) for p in points]
    assert got == [(n, s, seed) for n in (5, 10) for s in (0.0, 1.0, 2.0) for seed in (3, 4)]
    assert all(p.config.optim.steps == 10 and p.config.task.d == 2 for p in points)


def test_a_config_reached_by_two_groups_is_one_run_listing_both() -> None:
    data = spec_data(n=[5, 10], sigma=0.5)
    data["groups"].append({"name": "h", "n": 10, "sigma": 0.5})
    spec = parse_spec(data, "t", Registries())
    points = spec.points()
    assert len(points) == 2
    assert points[1].groups == ("g", "h")
    assert points[0].groups == ("g",)


def test_config_hash_is_a_hash_of_the_canonical_json() -> None:
    config = TrainConfig.flat(d=2, n=5, sigma=0.5)
    text = json.dumps(config.to_json(), sort_keys=True, separators=(",", ":"))
    expected = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    assert config_hash(config) == expected
    assert config_hash(TrainConfig.flat(d=2, n=5, sigma=0.5, seed=1)) != expected


def test_integer_and_float_values_of_float_fields_hash_the_same() -> None:
    a = parse_spec(spec_data(n=5, sigma=0), "t", Registries()).points()[0]
    b = parse_spec(spec_data(n=5, sigma=0.0), "t", Registries()).points()[0]
    assert a.run_id == b.run_id
    assert isinstance(a.config.task.sigma, float)


def test_covariance_expressions() -> None:
    data = spec_data(n=5, sigma=0.5, cov_x="S", cov_w={"inverse": "S"})
    point = parse_spec(data, "t", Registries()).points()[0]
    cov_x, cov_w = np.array(point.config.task.cov_x), np.array(point.config.task.cov_w)
    np.testing.assert_allclose(cov_x, S)
    np.testing.assert_allclose(cov_x @ cov_w, np.eye(2), atol=1e-12)
    assert (point.cov_x_label, point.cov_w_label) == ("S", "inverse(S)")
    diag = parse_spec(spec_data(n=5, sigma=0.5, cov_w={"diag": [1, 3]}), "t",
                      Registries()).points()[0]
    assert diag.config.task.cov_w == [[1.0, 0.0], [0.0, 3.0]]
    assert diag.config.task.cov_x is None and diag.cov_x_label == "I"


def test_covariate_laws_are_axes_and_position_covariances_are_expressions() -> None:
    R = (0.5 * np.eye(6) + 0.5).tolist()
    data = spec_data(n=5, sigma=0.5, x_law=["gaussian", "uniform"])
    data["covariances"]["R"] = R
    data["groups"].append({"name": "h", "n": 5, "sigma": 0.5, "context_covariance": "R"})
    data["groups"].append({"name": "k", "n": 5, "sigma": 0.5, "context_covariance": R})
    spec = parse_spec(data, "t", Registries())
    assert spec.group("g").axes == ("x_law",)
    laws = [p.config.task.x_law for p in spec.group("g").points]
    assert laws == ["gaussian", "uniform"]
    assert "x_law" not in spec.group("g").points[0].config.to_json()   # the default
    named, listed = spec.group("h").points[0], spec.group("k").points[0]
    assert named.config.task.context_covariance == R and spec.group("k").axes == ()
    assert named.run_id == listed.run_id                                # one run, two labels
    assert (named.context_covariance_label, listed.context_covariance_label) == ("R", "matrix")
    assert spec.group("g").points[0].context_covariance_label == ""
    bad = spec_data(n=5, sigma=0.5, context_covariance=(0.5 * np.eye(5) + 0.5).tolist())
    with pytest.raises(ConfigError, match=r"group 'g'.*shape \(6, 6\)"):
        parse_spec(bad, "t", Registries())


@pytest.mark.parametrize(("group", "message"), [
    ({"n": 5, "sigma": 0.5, "cov_x": "T"}, "unknown covariance 'T'"),
    ({"n": 5, "sigma": 0.5, "cov_x": {"inverse": [[1.0, 1.0], [1.0, 1.0]]}}, "singular"),
    ({"n": 5, "sigma": 0.5, "cov_x": [[1.0, 2.0], [2.0, 1.0]]}, "not positive definite"),
    ({"n": 5, "sigma": -1.0}, "sigma must be"),
    ({"n": 5, "sigma": 0.5, "colour": 1}, "unknown keys ['colour']"),
    ({"n": 5, "sigma": 0.5, "seeds": [0, 0]}, "seeds repeat"),
    ({"n": 5, "sigma": [0.5, 0.5]}, "distinct values"),
    ({"n": 5, "sigma": 0.5, "family": "no-such-family"}, "cannot run this group"),
])
def test_bad_groups_are_refused_naming_the_group(group: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="group 'g'") as error:
        parse_spec(spec_data(**group), "t", Registries())
    assert message in str(error.value)


def test_bad_claims_are_refused() -> None:
    data = spec_data(n=5, sigma=0.5)
    data["claims"] = [{"kind": "eta", "group": "nope", "tolerance": 0.02}]
    with pytest.raises(ConfigError, match="group must be one of"):
        parse_spec(data, "t", Registries())
    data["claims"] = [{"kind": "eta", "group": "g", "tolerance": 0.02, "reference": "x"}]
    with pytest.raises(ConfigError, match="reference must be one of optimum, theorem1"):
        parse_spec(data, "t", Registries())
    data["claims"] = [{"kind": "eta", "group": "g", "tolerance": -1}]
    with pytest.raises(ConfigError, match="tolerance must be a positive number"):
        parse_spec(data, "t", Registries())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 50) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=2),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(["n", "sigma", "d", "seeds", "cov_x", "steps", "name", "family"]),
       value=json_values)
def test_any_value_either_loads_or_is_refused_with_a_config_error(key: str, value: Any) -> None:
    group = {"n": 3, "sigma": 0.5, key: value}
    try:
        spec = parse_spec(spec_data(**group), "t", Registries())
    except ConfigError as error:
        assert "\n" not in str(error)
    else:
        assert all(isinstance(p.config, TrainConfig) for p in spec.points())


def test_load_spec_reads_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text('[defaults]\nd = 2\n[[groups]]\nname = "g"\nn = [3, 4]\nsigma = 0.1\n')
    as_json = tmp_path / "s.json"
    as_json.write_text(json.dumps({"defaults": {"d": 2},
                                   "groups": [{"name": "g", "n": [3, 4], "sigma": 0.1}]}))
    assert [p.run_id for p in load_spec(toml, Registries()).points()] == \
        [p.run_id for p in load_spec(as_json, Registries()).points()]
    assert load_spec(toml, Registries()).name == "s"
    with pytest.raises(ConfigError, match="not valid TOML"):
        (tmp_path / "bad.toml").write_text("[[groups]\n")
        load_spec(tmp_path / "bad.toml", Registries())
    with pytest.raises(ConfigError, match=r"\.toml or \.json"):
        load_spec(tmp_path / "s.yaml", Registries())
    with pytest.raises(ConfigError, match="cannot read spec"):
        load_spec(tmp_path / "missing.toml", Registries())


OWN_TOLERANCE = ("gaussian-gap", "n-eff", "lu-asymptotic", "probe", "cot", "looped",
                 "development")
"""Kinds whose tolerance is not a relative error (Covariates, Task diversity; Probes: standard
errors of a held-out R^2; Chain of thought: standard errors, or a step's relative error;
Development: standard errors of a paired distance): the same in both sets."""


@pytest.mark.parametrize(("name", "limit"), [("reproduce", 0.02), ("reproduce-quick", 0.03)])
def test_builtin_specs_make_the_issue_s_claims(name: str, limit: float) -> None:
    spec = builtin_spec(name, Registries())
    relative = [claim for claim in spec.claims  # Shift, Depth, Dynamics: own tolerances
                if claim.section not in ("Shift", "Depth", "Transformers", "Dynamics",
                                         "Sequence models")
                and claim.kind not in OWN_TOLERANCE]
    assert all(0 < claim.tolerance <= limit for claim in relative)
    assert {"Theorem 1", "Theorem 2", "Theorem 3", "Control", "Context", "Shift", "Depth",
            "Covariates", "Dynamics"} <= {
        claim.section for claim in spec.claims}
    sigma_sites = {p.config.task.sigma for p in spec.group("theorem1-sigma").points}
    assert len(sigma_sites) >= 5 and 0.0 in sigma_sites
    assert len({p.config.run.seed for p in spec.group("theorem1-sigma").points}) >= 2
    assert {p.config.task.family for p in spec.group("theorem3").points} == {
        "relu", "two-layer-relu"}
    assert {p.config.task.family for p in spec.group("control").points} == {"anisotropic"}
    assert len(spec.points()) > 10


def test_the_quick_spec_is_a_short_override_of_the_default_one() -> None:
    text = resources.files("iclab.experiments.specs").joinpath("reproduce-quick.toml")
    raw = tomllib.loads(text.read_text())
    overrides = [line for line in text.read_text().splitlines()  # the budgets aside
                 if not line.startswith('"') and "budgets" not in line]
    assert raw["extends"] == "reproduce.toml" and len(overrides) <= 68
    quick = builtin_spec("reproduce-quick", Registries())
    full = builtin_spec("reproduce", Registries())
    # The quick set leaves out three sections, the Probes claims on the transformer's run and
    # the Chain of thought claim on the looped transformers.
    full_claims = full.claims
    left_out = ("Transformers", "Sequence models", "Development")
    full = dataclasses.replace(full, claims=tuple(c for c in full_claims
                                                  if c.section not in left_out
                                                  and c.group != "transformers"
                                                  and c.kind != "looped"))
    assert len(full.claims) == len(full_claims) - 4 - 8 - 2 - 2 - 1
    assert [c.kind for c in quick.claims] == [c.kind for c in full.claims]
    assert {c.tolerance for c in quick.claims if c.section not in ("Shift", "Depth", "Dynamics")
            and c.kind not in OWN_TOLERANCE} == {0.03}
    assert {c.tolerance for c in full.claims if c.section not in ("Shift", "Depth", "Dynamics")
            and c.kind not in OWN_TOLERANCE} == {0.02}
    own = [(q, f) for q, f in zip(quick.claims, full.claims, strict=True)
           if f.kind in OWN_TOLERANCE]  # an absolute gap, a fall per step: the same in both
    assert own and all(q.tolerance == f.tolerance for q, f in own)
    depth = [(q, f) for q, f in zip(quick.claims, full.claims, strict=True)
             if f.section == "Depth"]  # the same tolerances, but above-bayes's 3 %
    assert depth and all(q.tolerance == (0.03 if q.kind == "above-bayes" else f.tolerance)
                         for q, f in depth)
    shifts = [(q, f) for q, f in zip(quick.claims, full.claims, strict=True) if q.kind == "shift"]
    assert shifts and all(q.tolerance == f.tolerance and q.parameters["values"] ==
                          f.parameters["values"] for q, f in shifts)
    assert {q.parameters["prompts"] for q, _ in shifts} == {5000}
    assert len(quick.points()) < len(full.points())


def test_unknown_builtin_spec() -> None:
    with pytest.raises(ConfigError, match="allowed: reproduce, reproduce-quick"):
        builtin_spec("paper", Registries())
