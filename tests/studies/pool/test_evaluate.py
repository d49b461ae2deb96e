"""A pooled run's evaluation: an LSA set to the exact pool optimum measures, on Monte Carlo
prompts, the exact losses of the theory (pool and fresh tasks); and the must-show training
run reaches the pool optimum."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from iclab.cli.main import main
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.studies.pool.evaluate import evaluate_pool
from iclab.studies.pool.family import with_pool
from iclab.studies.pool.loss import PoolLoss
from iclab.studies.pool.optimum import pool_optimum
from iclab.tasks.linear_gaussian import LinearGaussian


def lsa_with(u: np.ndarray, M: np.ndarray) -> LinearSelfAttention:
    """A one-layer LSA whose effective (u, M) are the given ones."""
    d = M.shape[1]
    model = LinearSelfAttention(d).to(torch.float64)
    with torch.no_grad():
        model.W_V.copy_(torch.eye(d + 1))
        model.h.copy_(torch.as_tensor(u))
        model.W_K.copy_(torch.eye(d + 1))
        model.W_Q.zero_()
        model.W_Q[:, :d] = torch.as_tensor(M)
    return model


def test_the_optimal_lsa_measures_the_exact_losses() -> None:
    pool = np.random.default_rng(4).standard_normal((2, 2))
    task = with_pool(LinearGaussian(2, 6, 0.5), None, pool, 0)
    optimum = pool_optimum(PoolLoss(pool, 6, 0.5), seed=1)  # the evaluation's search
    u, M = optimum.u, optimum.M
    result = evaluate_pool(lsa_with(u, M), task, 40_000, 1)
    assert abs(result["test_loss_pool"] - result["loss_star"]) <= 4 * result[
        "test_loss_pool_stderr"]
    assert abs(result["test_loss_fresh"] - result["loss_star_fresh"]) <= 4 * result[
        "test_loss_fresh_stderr"]
    assert result["loss_star"] < result["loss_star_nuisance_free"]
    dmmse = result["baselines"]["dmmse"]
    assert dmmse["loss_pool"] < result["baselines"]["ridge"]["loss_pool"]
    np.testing.assert_allclose(result["gamma"], result["gamma_star"], atol=1e-12)


@pytest.mark.slow
def test_training_on_a_pool_reaches_its_optimum(tmp_path: Path) -> None:
    pool_file = tmp_path / "pool.npy"
    np.save(pool_file, np.random.default_rng(3).standard_normal((4, 3)))
    out = tmp_path / "run"
    assert main(["train", "--task-pool", str(pool_file), "--d", "3", "--n", "10", "--sigma",
                 "0.5", "--seed", "0", "--out", str(out), "--quiet"]) == 0
    result = json.loads((out / "result.json").read_text())
    assert (out / "pool.npy").exists()
    assert abs(result["test_loss_pool"] - result["loss_star"]) <= 4 * result[
        "test_loss_pool_stderr"]
    assert result["test_loss_fresh"] > 0 and result["verdict"] == "optimal"
