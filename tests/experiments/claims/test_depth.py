"""The depth claim kinds on fabricated result.json records, and the Depth section of the
built-in specs. Expected values are worked out by hand in each test, not by the kinds' code."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, describe
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.report.write import write_report
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.results import RunRecord, sites
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.utils.errors import ConfigError

N, D = 6, 2


def make_spec(claims: list[dict[str, Any]], sigma: Any = 0.0) -> Spec:
    return parse_spec({
        "defaults": {"d": D, "n": N, "steps": 10, "sigma": sigma},
        "groups": [
            {"name": "sparse", "seeds": [0, 1], "parameterisation": "sparse",
             "layers": [1, 2, 3]},
            {"name": "full", "seeds": [0, 1], "layers": [1, 2, 3]},
            {"name": "looped", "seeds": [0], "parameterisation": "sparse", "looped": True,
             "layers": [2, 3]},
            {"name": "deep", "seeds": [0], "parameterisation": "sparse", "layers": [2, 3]},
        ],
        "claims": claims,
    }, "t", Registries())


def layers_of(record_config: Any) -> int:
    return int(record_config.model.layers)


def fake(spec: Spec, result_of: Any) -> dict[str, RunRecord]:
    """Records whose result.json is result_of(group, layers, sigma, seed)."""
    records = {}
    for point in spec.points():
        config = point.config
        records[point.run_id] = RunRecord(point, result_of(
            point.groups[0], layers_of(config), config.task.sigma, config.run.seed))
    return records


def deep_result(loss: float, stderr: float, gd: float, etas: list[float],
                steps: list[float] | None = None, gd_stderr: float = 0.0) -> dict[str, Any]:
    result = {"test_loss": loss, "test_loss_stderr": stderr, "loss_star": 9.0,
              "gd_steps_loss": gd, "gd_steps_loss_stderr": gd_stderr,
              "gd_steps_etas": etas, "wall_seconds": 1.0}
    if steps is not None:
        result["layer_steps"] = steps
    return result


def claims_of(spec: Spec, records: dict[str, RunRecord]) -> list[Claim]:
    return evaluate_claims(spec, records, ClaimRegistry())


def test_steps_loss_holds_within_k_combined_standard_errors_of_the_mean() -> None:
    spec = make_spec([{"section": "Depth", "kind": "steps-loss", "group": "deep",
                       "tolerance": 3}])
    # one seed: se = hypot(0.03, 0.04) = 0.05, so the bound is gd + 0.15
    for excess, holds in ((0.149, True), (0.151, False), (-1.0, True)):
        records = fake(spec, lambda g, L, s, seed, e=excess: deep_result(
            1.0 / L + e, 0.03, 1.0 / L, [0.1] * L, [0.1] * L, gd_stderr=0.04))
        claims = claims_of(spec, records)
        assert [c.holds for c in claims] == [holds, holds]
        assert claims[0].theory == pytest.approx(0.5) and claims[1].theory == pytest.approx(1 / 3)
        assert claims[0].value == pytest.approx(0.5 + excess)
        assert claims[0].tolerance_text == "3 se" and "layers=2" in claims[0].claim


def test_steps_loss_with_two_seeds_uses_the_standard_error_of_their_mean() -> None:
    spec = make_spec([{"section": "Depth", "kind": "steps-loss", "group": "sparse",
                       "tolerance": 2}])
    # seeds 0, 1: losses gd + 0.1 and gd + 0.3 (mean gd + 0.2), se 0.1 and 0.2 ->
    # se of the mean sqrt(0.01 + 0.04) / 2 = 0.1118; bound gd + 0.2236
    records = fake(spec, lambda g, L, s, seed: deep_result(
        2.0 + 0.1 + 0.2 * seed, 0.1 + 0.1 * seed, 2.0, [0.1] * L, [0.1] * L))
    claims = claims_of(spec, records)
    assert all(c.holds for c in claims) and len(claims) == 3
    assert claims[0].value == pytest.approx(2.2)
    spec = make_spec([{"section": "Depth", "kind": "steps-loss", "group": "sparse",
                       "tolerance": 1.7}])  # bound gd + 0.190 < gd + 0.2
    assert not any(c.holds for c in claims_of(spec, records))


def test_steps_loss_refuses_a_one_layer_run_when_the_spec_is_loaded() -> None:
    with pytest.raises(ConfigError, match=r"group 'full' cannot judge its run layers=1, "
                                          r"seed=0: the claim needs an L-layer lsa") as error:
        make_spec([{"section": "Depth", "kind": "steps-loss", "group": "full",
                    "tolerance": 3}])
    assert "\n" not in str(error.value)


def test_steps_loss_refuses_runs_without_the_depth_keys() -> None:
    spec = make_spec([{"section": "Depth", "kind": "steps-loss", "group": "deep",
                       "tolerance": 3}])
    records = fake(spec, lambda g, L, s, seed: {"test_loss": 1.0, "test_loss_stderr": 0.1,
                                                "loss_star": 1.0})
    with pytest.raises(ConfigError, match="has no gd_steps_loss") as error:
        claims_of(spec, records)
    assert "\n" not in str(error.value)


def test_layer_steps_compares_the_sorted_steps_with_the_optimal_ones() -> None:
    spec = make_spec([{"section": "Depth", "kind": "layer-steps", "group": "deep",
                       "tolerance": 0.06}])
    optimal = {1: [0.1], 2: [0.05, 0.1], 3: [0.02, 0.04, 0.08]}
    # errors (sorted): 1 %, 5 % at L = 2; 1 %, 2 %, 1 % at L = 3
    learned = {1: [0.1], 2: [0.105, 0.0495], 3: [0.0808, 0.0202, 0.0392]}
    records = fake(spec, lambda g, L, s, seed: deep_result(1.0, 0.1, 1.0, optimal[L],
                                                           learned[L]))
    claims = claims_of(spec, records)
    assert [c.value for c in claims] == pytest.approx([0.05, 0.02])
    assert [c.holds for c in claims] == [True, True] and claims[0].theory == 0.0
    spec = make_spec([{"section": "Depth", "kind": "layer-steps", "group": "deep",
                       "tolerance": 0.04}])
    assert [c.holds for c in claims_of(spec, records)] == [False, True]


def test_layer_steps_theorem1_judges_the_one_layer_sites_against_the_closed_form() -> None:
    eta = {0.0: 1 / (N + D + 1), 0.5: 1 / (N + D + 1 + 0.25)}  # 1/9 and 1/9.25
    spec = make_spec([{"section": "Depth", "kind": "layer-steps", "reference": "theorem1",
                       "group": "sparse", "tolerance": 0.02}], sigma=[0.0, 0.5])
    # the recorded gd_steps_etas are wrong on purpose: theorem1 must not read them
    records = fake(spec, lambda g, L, s, seed: deep_result(
        1.0, 0.1, 1.0, [0.5] * L, [eta[s] * (1.015 if seed else 0.99)] * L))
    claims = claims_of(spec, records)
    assert len(claims) == 2 and all("layers=1" in c.claim for c in claims)
    assert [c.value for c in claims] == pytest.approx([0.015, 0.015])
    assert all(c.holds for c in claims) and "1/(n+d+1+sigma^2)" in claims[0].metric
    with pytest.raises(ConfigError, match="needs one-layer sites"):
        claims_of(make_spec([{"section": "Depth", "kind": "layer-steps", "group": "deep",
                              "reference": "theorem1", "tolerance": 0.02}]), records)


def test_loss_below_pairs_the_sites_with_the_same_axis_values() -> None:
    spec = make_spec([{"section": "Depth", "kind": "loss-below", "group": "full",
                       "than": "sparse", "tolerance": 3}], sigma=[0.0, 0.5])
    # full = sparse - 0.1 at L = 1, 2 and sparse + 0.2 at L = 3; se 0.05 each seed ->
    # se of a mean over 2 seeds 0.05/sqrt(2), combined with the other group's: 0.05
    def result(group: str, L: int, s: float, seed: int) -> dict[str, Any]:
        loss = 1.0 / L + s
        if group == "full":
            loss += 0.2 if L == 3 else -0.1
        return deep_result(loss, 0.05, 1.0, [0.1] * L, [0.1] * L)

    claims = claims_of(spec, fake(spec, result))
    assert len(claims) == 6
    assert [c.holds for c in claims] == [True, True, False] * 2
    assert claims[2].value - claims[2].theory == pytest.approx(0.2)
    assert "se 0.05" in claims[2].metric and "sparse" in claims[2].claim


def test_loss_below_against_a_group_with_fewer_sites_judges_the_shared_ones() -> None:
    spec = make_spec([{"section": "Depth", "kind": "loss-below", "group": "sparse",
                       "than": "looped", "tolerance": 3}])
    claims = claims_of(spec, fake(spec, lambda g, L, s, seed: deep_result(
        1.0 / L + (0.3 if g == "looped" else 0.0), 0.01, 1.0, [0.1] * L, [0.1] * L)))
    assert len(claims) == 2 and all(c.holds for c in claims)
    assert [c.theory - c.value for c in claims] == pytest.approx([0.3, 0.3])


@pytest.mark.parametrize(("than", "message"), [
    ("nope", "than must be another group"), ("full", "than must be another group"),
    ("Bad Name", "than must be a name"), (3, "than must be a name")])
def test_loss_below_bad_than_is_one_line(than: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        make_spec([{"section": "Depth", "kind": "loss-below", "group": "full", "than": than,
                    "tolerance": 3}])
    assert "\n" not in str(error.value) and "claims[0]" in str(error.value)


def test_loss_below_needs_than() -> None:
    with pytest.raises(ConfigError, match="than is required"):
        make_spec([{"section": "Depth", "kind": "loss-below", "group": "full", "tolerance": 3}])


def test_falls_with_takes_the_largest_consecutive_ratio_per_line() -> None:
    spec = make_spec([{"section": "Depth", "kind": "falls-with", "group": "sparse",
                       "axis": "layers", "tolerance": 0.05}], sigma=[0.0, 0.5])
    losses = {0.0: [1.0, 0.5, 0.45], 0.5: [1.0, 0.9, 0.97]}  # ratios 0.5, 0.9; 0.9, 1.078
    gd = [1.0, 0.4, 0.2]  # ratios 0.4, 0.5
    records = fake(spec, lambda g, L, s, seed: deep_result(losses[s][L - 1], 0.01, gd[L - 1],
                                                           [0.1] * L, [0.1] * L))
    claims = claims_of(spec, records)
    assert [c.value for c in claims] == pytest.approx([0.9, 0.97 / 0.9])
    assert [c.theory for c in claims] == pytest.approx([0.5, 0.5])
    assert [c.holds for c in claims] == [True, False]
    assert "sigma=0.0" in claims[0].claim and claims[0].claim.endswith("; layers = 1, 2, 3]")
    assert "layers=" not in claims[0].claim
    spec = make_spec([{"section": "Depth", "kind": "falls-with", "group": "sparse",
                       "tolerance": 0.15}], sigma=[0.0, 0.5])  # axis defaults to layers
    assert [c.holds for c in claims_of(spec, records)] == [False, False]


def test_falls_with_a_one_layer_run_uses_l_star() -> None:
    spec = make_spec([{"section": "Depth", "kind": "falls-with", "group": "full",
                       "tolerance": 0.05}])

    def result(group: str, L: int, s: float, seed: int) -> dict[str, Any]:
        if L == 1:  # the one-layer model: no depth keys
            return {"test_loss": 1.0, "test_loss_stderr": 0.01, "loss_star": 2.0}
        return deep_result(1.0 / L, 0.01, 1.0 / L, [0.1] * L)

    claim, = claims_of(spec, fake(spec, result))
    assert claim.theory == pytest.approx(1 / 3 / 0.5)  # 2.0 -> 0.5 -> 1/3: largest 2/3
    assert claim.value == pytest.approx(2 / 3) and claim.holds


def test_does_not_rise_allows_a_rise_within_k_standard_errors_of_each_ratio() -> None:
    spec = make_spec([{"section": "Depth", "kind": "falls-with", "group": "sparse",
                       "direction": "does-not-rise", "tolerance": 3}])
    # two seeds of se 0.01 each: the mean's se is hypot(0.01, 0.01) / 2 = 0.00707; the ratio
    # 1.0 -> 0.5 is far below 1; 0.5 -> b has se (b/0.5) * hypot(0.00707/0.5, 0.00707/b)
    for last, holds in ((0.52, True), (0.53, True), (0.55, False), (0.45, True)):
        se = math.hypot(0.01, 0.01) / 2
        bound = 1 + 3 * (last / 0.5) * math.hypot(se / 0.5, se / last)
        assert (last / 0.5 <= bound) == holds  # the hand-worked rule agrees with the table
        losses = [1.0, 0.5, last]
        records = fake(spec, lambda g, L, s, seed, losses=losses: deep_result(
            losses[L - 1], 0.01, 1.0 / L, [0.1] * L, [0.1] * L))
        claim, = claims_of(spec, records)
        assert claim.holds == holds
        assert claim.value == pytest.approx(max(0.5, last / 0.5))
        assert claim.claim.startswith("Depth: the test loss does not rise as layers grow")
    with pytest.raises(ConfigError, match=r"direction must be one of falls, does-not-rise"):
        make_spec([{"section": "Depth", "kind": "falls-with", "group": "sparse",
                    "direction": "rises", "tolerance": 3}])


def test_falls_with_refuses_an_axis_the_group_does_not_sweep() -> None:
    spec = make_spec([{"section": "Depth", "kind": "falls-with", "group": "sparse",
                       "axis": "sigma", "tolerance": 0.05}])
    records = fake(spec, lambda g, L, s, seed: deep_result(1.0, 0.1, 1.0, [0.1] * L))
    with pytest.raises(ConfigError, match="axis 'sigma' is not one of the group's axes"):
        claims_of(spec, records)


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(st.text(max_size=3)),
                 st.text(alphabet="ABC _.", min_size=1, max_size=5)))
def test_falls_with_bad_axis_is_one_line(axis: Any) -> None:
    with pytest.raises(ConfigError, match=r"claims\[0\] \(kind falls-with\): axis must be") \
            as error:
        make_spec([{"section": "Depth", "kind": "falls-with", "group": "sparse", "axis": axis,
                    "tolerance": 0.05}])
    assert "\n" not in str(error.value)


def test_the_report_draws_one_depth_figure(tmp_path: Path) -> None:
    spec = make_spec([
        {"section": "Depth", "kind": "steps-loss", "group": "sparse", "tolerance": 3},
        {"section": "Depth", "kind": "loss-below", "group": "full", "than": "sparse",
         "tolerance": 3},
        {"section": "Depth", "kind": "falls-with", "group": "looped", "tolerance": 0.02}])
    records = fake(spec, lambda g, L, s, seed: deep_result(
        1.0 / L, 0.01, 1.0 / L, [0.1 * (k + 1) for k in range(L)],
        [0.1 * (k + 1) * 1.01 for k in range(L)]))
    claims = write_report(spec, records, tmp_path, ClaimRegistry())
    assert len(claims) == 3 + 3 + 1
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["depth_depth.png"]
    html = (tmp_path / "report.html").read_text()
    assert "<h2>Depth</h2>" in html and html.count("data:image/png;base64,") == 1


@pytest.mark.parametrize("name", ["reproduce", "reproduce-quick"])
def test_the_builtin_specs_have_a_depth_section(name: str) -> None:
    spec = builtin_spec(name, Registries())
    depth = [c for c in spec.claims if c.section == "Depth"]
    assert {c.kind for c in depth} == {"layer-steps", "steps-loss", "loss-below", "falls-with",
                                       "above-bayes"}
    assert any(c.kind == "layer-steps" and c.options["reference"] == "theorem1" for c in depth)
    quick = name == "reproduce-quick"
    for group, parameterisation, looped, layers in (
            ("depth-sparse", "sparse", False, {1, 2, 3, 4}),
            ("depth-full", "full", False, {1, 2, 3, 4}),
            ("depth-looped", "sparse", True, {2, 3})):
        points = spec.group(group).points
        assert {p.config.model.layers for p in points} == layers
        assert {p.config.model.parameterisation for p in points} == {parameterisation}
        assert {p.config.model.looped for p in points} == {looped}
        assert {p.config.task.sigma for p in points} == ({0.0} if quick else {0.0, 0.5})
        assert {(p.config.task.d, p.config.task.n) for p in points} == {(5, 20)}
        # every run of a group trains with the deep model's own defaults at L = 2
        deep = TrainConfig.flat(d=5, n=20, layers=2, parameterisation=parameterisation,
                                looped=looped).optim
        assert {p.config.optim for p in points} == {deep}
    steps_loss = next(c for c in depth if c.kind == "steps-loss")
    assert steps_loss.tolerance == 3 and math.isclose(
        next(c for c in depth if c.kind == "layer-steps" and c.options["reference"] ==
             "optimum").tolerance, 0.05)


def test_a_site_that_sweeps_layers_names_them_even_at_the_default() -> None:
    spec = make_spec([])
    records = fake(spec, lambda g, L, s, seed: deep_result(1.0, 0.1, 1.0, [0.1] * L))
    texts = [describe(site) for site in sites(spec, records, "full")]
    assert texts[0].endswith("sigma=0.0, layers=1; 2 seeds")  # the one-layer model
    assert "layers=2" in texts[1] and "parameterisation" not in texts[1]
    sparse_one = describe(sites(spec, records, "sparse")[0])
    assert "layers=1, parameterisation=sparse" in sparse_one
