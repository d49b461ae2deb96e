"""The heads' exact loss and hand-worked gradient against the theory's PopulationLoss
(Wishart and Isserlis moments, differentiated by torch autograd) on the read-out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.theory.population import PopulationLoss
from iclab.utils.errors import ConfigError


def _population(loss: HeadsLoss, gamma: torch.Tensor) -> torch.Tensor:
    """The exact loss of the nuisance-free read-out u = e_(d+1), M = [Gamma^T; 0]."""
    d = loss.d
    exact = PopulationLoss(loss.n, loss.sigma, torch.tensor(loss.sigma_x),
                           torch.tensor(loss.sigma_w))
    u = torch.zeros(d + 1, dtype=torch.float64)
    u[d] = 1.0
    M = torch.cat([gamma.T, torch.zeros(1, d, dtype=torch.float64)])
    return exact(u, M, loss.normalise)


def _gamma_torch(loss: HeadsLoss, theta: torch.Tensor) -> torch.Tensor:
    H, R, d = loss.heads, loss.rank, loss.d
    v = theta[:H]
    if loss.kq == "merged":
        W = theta[H:].reshape(H, d, d)
        return sum(v[h] * W[h].T for h in range(H))  # type: ignore[return-value]
    K = theta[H:H + H * R * d].reshape(H, R, d)
    Q = theta[H + H * R * d:].reshape(H, R, d)
    return sum(v[h] * Q[h].T @ K[h] for h in range(H))  # type: ignore[return-value]


@pytest.mark.parametrize(("kq", "heads", "rank", "normalise"),
                         [("merged", 3, 1, False), ("separate", 2, 2, False),
                          ("separate", 4, 1, True)])
def test_loss_and_gradient_match_autograd_of_the_population_loss(
        kq: str, heads: int, rank: int, normalise: bool) -> None:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 3))
    sigma_x = A @ A.T + 0.5 * np.eye(3)
    sigma_w = np.diag([1.0, 0.5, 2.0])
    loss = HeadsLoss(kq, heads, rank, 7, 0.3, sigma_x, sigma_w, normalise)
    theta = 0.3 * rng.standard_normal(loss.size)
    t = torch.tensor(theta, requires_grad=True)
    gamma = _gamma_torch(loss, t)          # PopulationLoss divides by n when normalised
    reference = _population(loss, gamma)
    reference.backward()  # type: ignore[no-untyped-call]
    assert loss.loss(theta) == pytest.approx(float(reference.detach()), rel=1e-10)
    assert t.grad is not None
    np.testing.assert_allclose(loss.gradient(theta), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_bad_layout_is_one_line() -> None:
    with pytest.raises(ConfigError, match="kq must be one of"):
        HeadsLoss("joint", 1, 1, 5, 0.0, np.eye(2), np.eye(2))
    loss = HeadsLoss("merged", 1, 1, 5, 0.0, np.eye(2), np.eye(2))
    with pytest.raises(ConfigError, match="theta must have shape"):
        loss.loss(np.zeros(3))
