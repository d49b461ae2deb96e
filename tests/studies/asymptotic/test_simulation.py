"""The finite-d ridge-fitted reduced linear attention (docs/theory.md section 16.5): the fit
against a plain least-squares solve on explicit features, seeded determinism, and the
measured errors converging to the asymptotic ones as d grows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.simulation import (
    fit_gamma,
    prompt_features,
    simulate,
    simulate_to_stderr,
    sizes,
)
from iclab.utils.errors import ConfigError


@pytest.mark.parametrize("n", [15, 60])  # n < p = 30 (kernel path), n > p (features path)
@pytest.mark.parametrize("penalty", [0.0, 0.7])
def test_fit_matches_explicit_least_squares(n: int, penalty: float) -> None:
    """Gamma against numpy's lstsq on the explicit (n, d(d+1)) features, the penalty as sqrt
    (penalty) I rows appended (penalty 0: the minimum-norm solution lstsq returns)."""
    d = 5
    rng = np.random.default_rng(3)
    q, h, y = prompt_features(rng.standard_normal((n, d)), 7, 0.2, rng)
    phi = (q[:, :, None] * h[:, None, :]).reshape(n, -1)
    design = np.vstack([phi, math.sqrt(penalty) * np.eye(phi.shape[1])]) if penalty else phi
    target = np.concatenate([y, np.zeros(phi.shape[1])]) if penalty else y
    expected = np.linalg.lstsq(design, target, rcond=None)[0].reshape(d, d + 1)
    np.testing.assert_allclose(fit_gamma(q, h, y, penalty), expected, rtol=1e-7, atol=1e-9)


def test_sizes_and_determinism() -> None:
    assert sizes(20, 0.5, 1.5, 0.25) == (200, 5, 30)
    assert sizes(20, 0.5, 1.5, math.inf) == (200, None, 30)
    first = simulate(0.5, 1.0, 0.5, 0.1, 0.1, 8, seed=4, repeats=2, test_prompts=200)
    assert first == simulate(0.5, 1.0, 0.5, 0.1, 0.1, 8, seed=4, repeats=2, test_prompts=200)
    assert first != simulate(0.5, 1.0, 0.5, 0.1, 0.1, 8, seed=5, repeats=2, test_prompts=200)
    with pytest.raises(ConfigError, match="--simulate-d"):
        simulate(0.5, 1.0, 0.5, 0.1, 0.1, 1)


def gaps(tau: float, alpha: float, kappa: float, rho: float, lam: float,
         dims: tuple[int, ...], repeats: tuple[int, ...]) -> list[tuple[float, float]]:
    """(the larger of |asymptotic - simulated| for e_ICL and e_IDG, the larger standard
    error) at each d."""
    theory = asymptotic_errors(tau, alpha, kappa, rho, lam)
    out = []
    for d, count in zip(dims, repeats, strict=True):
        sim = simulate(tau, alpha, kappa, rho, lam, d, seed=11, repeats=count,
                       test_prompts=2000)
        gap = max(abs(sim.e_icl - theory.e_icl), abs(sim.e_idg - theory.e_idg))
        out.append((gap, max(sim.e_icl_stderr, sim.e_idg_stderr)))
    return out


POINTS = [  # tau, alpha, kappa, rho, lam: small and large kappa, tau near 1, lam > 0
    (0.5, 1.0, 0.5, 0.1, 0.0),
    (1.2, 1.0, 4.0, 0.1, 0.0),
    (0.5, 1.0, math.inf, 0.1, 0.5),
    (2.0, 2.0, math.inf, 0.5, 0.0),
    (2.0, 1.0, 0.5, 0.1, 0.2),
]


@pytest.mark.parametrize("point", POINTS)
def test_gap_shrinks_from_d20_to_d40(point: tuple[float, ...]) -> None:
    """The gap at d = 40 is below the gap at d = 20 (it falls about as 1/d: next to the peak
    at tau = 1 from a larger start)."""
    (g20, _), (g40, _) = gaps(*point, dims=(20, 40), repeats=(4, 2))
    assert g40 < g20


@pytest.mark.slow
def test_gap_shrinks_to_d80() -> None:
    """d = 20, 40, 80 at tau = 0.5, kappa = 0.5 (ridgeless): the gap at 80 is below the gap
    at 20 and at most the gap at 40 plus 3 standard errors (of both)."""
    (g20, _), (g40, s40), (g80, s80) = gaps(*POINTS[0], dims=(20, 40, 80), repeats=(4, 2, 1))
    assert g80 < g20
    assert g80 <= g40 + 3 * math.hypot(s40, s80)


def test_work_bound_both_ways() -> None:
    """A simulation over MAX_WORK (every repeat together) is refused up front with one line
    naming --repeats and the limit; one at the limit's side is accepted by the check."""
    from iclab.studies.asymptotic.simulation import MAX_WORK, check_simulation, simulation_work
    one = simulation_work(40, 2.0, 1.0, 2.0, 1, 20_000)
    most = int(MAX_WORK // one)
    check_simulation(40, 2.0, 1.0, 2.0, most, 20_000)
    with pytest.raises(ConfigError, match=f"limit.*--repeats at most {most}$"):
        check_simulation(40, 2.0, 1.0, 2.0, most + 1, 20_000)
    with pytest.raises(ConfigError, match="use a smaller d or tau"):
        check_simulation(200, 1e3, 1.0, 2.0, 1, 20_000)
    with pytest.raises(ConfigError, match="context of N"):
        check_simulation(200, 0.5, 1e6, 2.0, 1, 20_000)


def test_sized_simulation_draws_simulate_s_sets_until_the_stderr_is_reached() -> None:
    point = (2.0, 1.0, 4.0, 0.1, 0.5)
    sized, reached = simulate_to_stderr(*point, d=6, stderr=0.01, seed=3, least=4,
                                        test_prompts=200)
    assert reached and max(sized.e_icl_stderr, sized.e_idg_stderr) <= 0.01
    assert 4 < sized.repeats < 1000
    fixed = simulate(*point, d=6, seed=3, repeats=sized.repeats, test_prompts=200)
    # set k is simulate's set k: the same numbers (summed in another order)
    assert fixed.repeats == sized.repeats and fixed.n == sized.n
    for name in ("e_icl", "e_icl_stderr", "e_idg", "e_idg_stderr"):
        assert getattr(sized, name) == pytest.approx(getattr(fixed, name), rel=1e-12)
    fewer = simulate(*point, d=6, seed=3, repeats=sized.repeats - 1, test_prompts=200)
    assert fewer.e_icl != sized.e_icl
    loose, _ = simulate_to_stderr(*point, d=6, stderr=0.03, seed=3, least=4, test_prompts=200)
    assert loose.repeats < sized.repeats / 4  # (0.03 / 0.01)^2 = 9 times fewer, roughly


def test_sized_simulation_refuses_fewer_than_two_sets() -> None:
    with pytest.raises(ConfigError, match=r"least pretraining sets\) must be from 2 to "
                                          r"[0-9]+ here, got 1"):
        simulate_to_stderr(2.0, 1.0, 4.0, 0.1, 0.5, d=6, stderr=0.01, least=1)
