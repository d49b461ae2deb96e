"""The rank-k losses against brute-force optimisation over rank-k Gamma (torch L-BFGS on the
theory's PopulationLoss), the plateau finder on a made curve, and the merged heads' analytic
drop time against the integrated flow."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.studies.dynamics.flow import integrate
from iclab.studies.dynamics.flow_curve import flow_curve
from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.studies.dynamics.plateaus import find_plateaus, merged_drop_time, rank_k_losses
from iclab.theory.gaussian import gaussian_optimum
from iclab.theory.population import PopulationLoss


def _best_rank_k(n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray, k: int,
                 restarts: int = 3) -> tuple[float, np.ndarray]:
    """min over Gamma = A B^T (A, B: (d, k)) of the exact loss, by L-BFGS from random
    starts: (loss, Gamma)."""
    d = sigma_x.shape[0]
    exact = PopulationLoss(n, sigma, torch.tensor(sigma_x), torch.tensor(sigma_w))
    u = torch.zeros(d + 1, dtype=torch.float64)
    u[d] = 1.0
    best: tuple[float, np.ndarray] = (np.inf, np.zeros((d, d)))
    generator = torch.Generator().manual_seed(k)
    for _ in range(restarts):
        found = _fit_once(exact, u, d, k, generator)
        if found[0] < best[0]:
            best = found
    return best


def _fit_once(exact: PopulationLoss, u: torch.Tensor, d: int, k: int,
              generator: torch.Generator) -> tuple[float, np.ndarray]:
    A = (0.1 * torch.randn(d, k, generator=generator, dtype=torch.float64)).requires_grad_()
    B = (0.1 * torch.randn(d, k, generator=generator, dtype=torch.float64)).requires_grad_()
    optimiser = torch.optim.LBFGS([A, B], max_iter=3000, tolerance_grad=1e-14,
                                  tolerance_change=1e-16, history_size=50,
                                  line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        gamma = A @ B.T
        value = exact(u, torch.cat([gamma.T, torch.zeros(1, d, dtype=torch.float64)]))
        value.backward()  # type: ignore[no-untyped-call]
        return value

    for _ in range(5):
        optimiser.step(closure)  # type: ignore[no-untyped-call]
    return float(closure().detach()), (A @ B.T).detach().numpy()


def test_rank_k_losses_match_brute_force_and_end_at_the_optimum() -> None:
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    sigma_x = basis @ np.diag([3.0, 1.0, 0.4]) @ basis.T
    sigma_w = np.array([[1.0, 0.2, 0.0], [0.2, 0.7, 0.1], [0.0, 0.1, 1.3]])
    levels = rank_k_losses(9, 0.4, sigma_x, sigma_w)
    assert levels[0] == pytest.approx(np.trace(sigma_x @ sigma_w) + 0.16, rel=1e-12)
    for k in (1, 2):
        brute, _ = _best_rank_k(9, 0.4, sigma_x, sigma_w, k)
        assert levels[k] == pytest.approx(brute, rel=1e-7)
    optimum = gaussian_optimum(9, 0.4, sigma_x, sigma_w).loss
    assert levels[3] == pytest.approx(optimum, rel=1e-10)


def test_best_rank_k_is_principal_component_regression_on_the_top_k_directions() -> None:
    """Sigma_w = I: the brute-force rank-2 Gamma lives on Sigma_x's top two eigenvectors."""
    sigma_x = np.diag([4.0, 2.0, 1.0, 0.5])
    loss, gamma = _best_rank_k(20, 0.0, sigma_x, np.eye(4), 2)
    assert rank_k_losses(20, 0.0, sigma_x)[2] == pytest.approx(loss, rel=1e-7)
    assert np.abs(gamma[2:, :]).max() < 1e-6 and np.abs(gamma[:, 2:]).max() < 1e-6
    expected = [1 / (21 * lam + 7.5) for lam in (4.0, 2.0)]  # lambda / K_ii, unshrunk
    np.testing.assert_allclose(np.diag(gamma)[:2], expected, rtol=1e-6)


def test_find_plateaus_names_the_flat_stretches_of_a_made_curve() -> None:
    t = np.geomspace(1e-2, 1e3, 500)
    levels = np.array([10.0, 6.0, 5.0])
    step = 1 / (1 + np.exp(-8 * (np.log(t) - 0.0)))
    later = 1 / (1 + np.exp(-8 * (np.log(t) - np.log(50.0))))
    curve = 10.0 - 4.0 * step - 1.0 * later
    found = find_plateaus(t, curve, levels)
    assert [p.components for p in found] == [0, 1, 2]
    np.testing.assert_allclose([p.loss for p in found], levels, rtol=1e-4)
    assert found[0].end < 1.0 < found[1].start < found[1].end < 50.0 < found[2].start


def test_merged_heads_drop_once_at_the_analytic_time() -> None:
    loss = HeadsLoss("merged", 3, 1, 10, 0.0, np.eye(3), np.eye(3))
    theta0 = 1e-3 * np.random.default_rng(1).standard_normal(loss.size)
    predicted = merged_drop_time(loss, theta0)
    assert predicted is not None
    times = np.geomspace(predicted / 30, predicted * 30, 400)
    result = integrate(lambda th: -loss.gradient(th), theta0, times, rtol=1e-10, atol=1e-14)
    losses = np.array([loss.loss(th) for th in result.theta])
    start, end = loss.loss(theta0), gaussian_optimum(10, 0.0, d=3).loss
    crossing = times[np.argmax(losses <= (start + end) / 2)]
    assert crossing == pytest.approx(predicted, rel=0.02)   # the grid's spacing is 1.7 %
    assert merged_drop_time(HeadsLoss("separate", 3, 1, 10, 0.0, np.eye(3), np.eye(3)),
                            np.zeros(21)) is None


@pytest.mark.slow
def test_separate_heads_pass_the_rank_k_plateaus_in_order() -> None:
    """The guide's example: d = 4, n = 20, Sigma_x = diag(4, 2, 1, 0.5), 4 rank-one heads
    from 1e-3: plateaus at L_0..L_4 in order, the end at L*."""
    sigma_x = np.diag([4.0, 2.0, 1.0, 0.5])
    loss = HeadsLoss("separate", 4, 1, 20, 0.0, sigma_x, np.eye(4))
    theta0 = 1e-3 * np.random.default_rng(0).standard_normal(loss.size)
    curve = flow_curve(loss, theta0, np.geomspace(0.01, 4.0, 20))
    levels = rank_k_losses(20, 0.0, sigma_x)
    found = find_plateaus(curve.grid, curve.grid_losses, levels)
    assert [p.components for p in found] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose([p.loss for p in found], levels, rtol=1e-3)
    assert curve.converged and curve.error < 1e-6
    assert curve.final_loss == pytest.approx(gaussian_optimum(20, 0.0, sigma_x).loss,
                                             rel=1e-6)
