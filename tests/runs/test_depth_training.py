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
    # The verdict needs 4 se within 5 % of the reference loss; a four-layer model's squared
    # errors are heavy-tailed at sigma = 0 (se / loss about 6 % at 100,000 prompts), so the
    # verdict is withheld and says why, not "optimal" on a loss it cannot resolve.
    evidence = result["verdict_evidence"]
    assert result["verdict"] == "undetermined" and evidence["precision"] > 0.05
    assert "raise --eval-prompts" in evidence["reason"]


def test_four_full_layers_train_without_diverging_and_beat_gd(tmp_path: Path) -> None:
    # seed 2 met a batch whose loss overflowed float32 at step 5 before the warm-up
    result = run_training(TrainConfig.flat(**TASK, seed=2), tmp_path, progress=False)
    assert result["test_loss"] < 0.2 * result["gd_steps_loss"]
