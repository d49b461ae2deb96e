"""The depth verdict's read-out criterion: weights constructed to run exact L-step GD with the
optimal steps are "optimal" although their test loss is too heavy-tailed to resolve 5 %;
steps moved past the curvature tolerance (too large, too small) are "not optimal"; an
untrained model is never "optimal"; each decision by the read-out states its evidence."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.analysis import evaluate
from iclab.analysis.depth import depth_optimum, depth_results
from iclab.analysis.depth_verdict import judge_depth
from iclab.models.lsa.deep import DeepLinearSelfAttention, sparse_gd_model
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.multistep import multistep_optimum
from iclab.theory.depth.step_curvature import isotropic_steps_loss, step_tolerance
from iclab.utils.seeding import make_generator

D, N, LAYERS = 5, 20, 4
TASK = LinearGaussian(D, N, 0.0)


def optimal_steps() -> list[float]:
    return list(multistep_optimum(TASK, LAYERS, preconditioned=False).etas)


def judged(model: DeepLinearSelfAttention, prompts: int) -> dict:
    """The evaluation's depth keys (von Oswald's measures on 100 prompts only, for speed)
    and test loss on ``prompts`` fresh prompts, judged."""
    loss, stderr = evaluate.test_loss(model, TASK, prompts, 0)
    few = TASK.sample_prompts(100, make_generator(0, "nuisance")).to(torch.float64)
    steps = depth_optimum(LAYERS, TASK, 0)
    result = {"test_loss": loss, "test_loss_stderr": stderr,
              **depth_results(model, evaluate.cpu64(model), TASK, steps, few)}
    result.update(judge_depth(result, sparse=True))
    json.dumps(result, allow_nan=False)
    return result


def test_exact_four_step_gd_is_optimal_by_its_read_out() -> None:
    # A_l = n eta_l I: the model is the optimal 4-step GD (d = 5, n = 20, sigma = 0)
    result = judged(sparse_gd_model([N * eta for eta in optimal_steps()], d=D), 2000)
    evidence = result["verdict_evidence"]
    assert evidence["precision"] > 0.05  # the loss alone cannot say
    assert result["verdict"] == "optimal" and evidence["decided_by"] == "read-out"
    assert evidence["layer_steps_rel_err"] < 1e-6 and evidence["layer_isotropy_err"] < 1e-6
    assert 0.035 < evidence["layer_steps_tolerance"] < 0.045
    assert abs(evidence["layer_steps_excess"]) < 1e-9
    assert "read-out" in result["verdict_needs"]


@pytest.mark.parametrize("sign", [1, -1])  # every step too large, every step too small
def test_steps_past_the_tolerance_are_not_optimal(sign: int) -> None:
    exact = isotropic_steps_loss(TASK)
    assert exact is not None
    optimum = multistep_optimum(TASK, LAYERS, preconditioned=False)
    found = step_tolerance(exact, optimum.etas, optimum.loss, 0.05)
    assert found is not None
    tolerance = found.tolerance
    factor = 1 + sign * 2 * tolerance
    result = judged(sparse_gd_model([N * eta * factor for eta in optimal_steps()], d=D), 20000)
    evidence = result["verdict_evidence"]
    assert result["verdict"] == "not optimal"
    assert evidence["layer_steps_rel_err"] == pytest.approx(2 * tolerance, rel=1e-6)
    assert evidence["layer_steps_excess"] > 0.05


def test_an_untrained_model_is_never_optimal() -> None:
    options = LSAOptions(layers=LAYERS, parameterisation="sparse")
    model = DeepLinearSelfAttention(D, options, make_generator(0, "init"), torch.float64)
    for prompts in (50, 2000):
        assert judged(model, prompts)["verdict"] in ("not optimal", "undetermined")


def deep(loss: float, se: float, rel_err: float, isotropy: float, steps_loss: float,
         tolerance: float = 0.04) -> dict:
    return {"test_loss": loss, "test_loss_stderr": se, "gd_steps_loss": 1.0,
            "layer_steps_rel_err": rel_err, "layer_isotropy_err": [0.0, isotropy],
            "layer_steps_tolerance": tolerance, "layer_steps_loss": steps_loss}


@pytest.mark.parametrize(("numbers", "verdict"), [
    (deep(1.01, 0.1, 0.01, 0.01, 1.001), "optimal"),        # imprecise loss, read-out inside
    (deep(1.01, 0.1, 0.01, 0.06, 1.001), "undetermined"),   # a layer not isotropic enough
    (deep(1.01, 0.1, 0.05, 0.01, 1.02), "undetermined"),    # outside, but not clearly
    (deep(1.10, 0.1, 0.2, 0.01, 1.3), "not optimal"),       # clearly outside, loss above
    (deep(0.95, 0.1, 0.2, 0.01, 1.3), "undetermined"),      # clearly outside, loss below
    (deep(1.002, 0.001, 0.2, 0.01, 1.3), "undetermined"),   # a precise loss disagrees
    (deep(1.002, 0.001, 0.01, 0.01, 1.001), "optimal"),     # both agree
    (deep(1.9, 0.1, 0.01, 0.01, 1.001), "not optimal"),     # z > 4 whatever the read-out
    (deep(1.01, 0.1, 0.01, float("nan"), 1.001), "undetermined"),  # no read-out to use
])
def test_the_read_out_decides_only_with_its_evidence(numbers: dict, verdict: str) -> None:
    out = judge_depth(numbers, sparse=True)
    json.dumps(out, allow_nan=False)
    assert out["verdict"] == verdict, out["verdict_evidence"]
    assert judge_depth(numbers, sparse=False)["verdict"] != "optimal"


numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 2), st.none())


@given(loss=numbers, se=numbers, rel_err=numbers, isotropy=numbers, steps_loss=numbers,
       tolerance=numbers)
def test_a_depth_verdict_is_one_of_its_words_and_json_without_nan(
        loss: float | None, se: float | None, rel_err: float | None, isotropy: float | None,
        steps_loss: float | None, tolerance: float | None) -> None:
    out = judge_depth({"test_loss": loss, "test_loss_stderr": se, "gd_steps_loss": 0.05,
                       "layer_steps_rel_err": rel_err, "layer_isotropy_err": [isotropy],
                       "layer_steps_loss": steps_loss, "layer_steps_tolerance": tolerance},
                      sparse=True)
    json.dumps(out, allow_nan=False)
    assert out["verdict"] in ("optimal", "not optimal", "undetermined")
    if out["verdict"] == "optimal":  # the loss precise, or the read-out inside its tolerance
        evidence = out["verdict_evidence"]
        assert evidence["precision"] <= 0.05 or (
            rel_err is not None and isotropy is not None and tolerance is not None
            and max(rel_err, isotropy) <= tolerance)
