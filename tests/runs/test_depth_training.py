"""Slow: four-layer models trained with the deep model's own defaults, judged against the
exact optimal 4-step GD (d = 5, n = 20, sigma = 0: loss 0.05495, steps 0.0181, 0.0260,
0.0445, 0.1069, computed in ``iclab.theory.multistep``, not from the runs)."""

from pathlib import Path

import pytest

from iclab.config.train import TrainConfig
from iclab.runs import run_training

pytestmark = pytest.mark.slow

TASK = {"d": 5, "n": 20, "sigma": 0.0, "layers": 4, "eval_prompts": 100_000}


def test_four_sparse_layers_reach_the_optimal_four_step_gd(tmp_path: Path) -> None:
    result = run_training(TrainConfig.flat(**TASK, parameterisation="sparse", seed=1),
                          tmp_path, progress=False)
    excess = (result["test_loss"] - result["gd_steps_loss"]) / result["test_loss_stderr"]
    assert abs(excess) < 3, excess
    assert result["layer_steps_rel_err"] < 0.05
    # The loss cannot decide: a four-layer model's squared errors are heavy-tailed at
    # sigma = 0 (4 se are about 26 % of the loss at 100,000 prompts, the verdict needs 5 %).
    # The read-out could (docs/theory.md section 10.4): its steps are within the curvature
    # tolerance (3.9 % here, for d = 5, n = 20, L = 4), but one layer's isotropy error (6 %)
    # is not, so the verdict is still withheld, and says why, not "optimal".
    evidence = result["verdict_evidence"]
    assert result["verdict"] == "undetermined" and evidence["precision"] > 0.05
    assert "raise --eval-prompts" in evidence["reason"]
    assert 0.035 < evidence["layer_steps_tolerance"] < 0.045
    assert evidence["layer_steps_rel_err"] < evidence["layer_steps_tolerance"]
    assert evidence["layer_isotropy_err"] > evidence["layer_steps_tolerance"]
    assert "isotropy error" in evidence["reason"] and abs(evidence["layer_steps_excess"]) < 0.01


def test_four_full_layers_train_without_diverging_and_beat_gd(tmp_path: Path) -> None:
    # seed 2 met a batch whose loss overflowed float32 at step 5 before the warm-up
    result = run_training(TrainConfig.flat(**TASK, seed=2), tmp_path, progress=False)
    assert result["test_loss"] < 0.2 * result["gd_steps_loss"]
