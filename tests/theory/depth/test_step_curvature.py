"""The curvature tolerance of the L-step GD steps, against the exact rational loss itself:
finite differences of ``loss_of_steps`` (Fractions, no float rounding), and the loss at the
worst corner of the tolerance box reaching the 5 % it is derived from."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.multistep import multistep_optimum
from iclab.theory.depth.polynomial_exact import IsotropicPolynomialLoss
from iclab.theory.depth.step_curvature import isotropic_steps_loss, step_hessian, step_tolerance


def exact_loss(exact: IsotropicPolynomialLoss, etas: list[Fraction]) -> Fraction:
    """The rational loss at rational steps (error_polynomial takes floats: build it here)."""
    p = [Fraction(1)]
    for eta in etas:
        p = [a - eta * b for a, b in zip([*p, Fraction(0)], [Fraction(0), *p], strict=True)]
    return exact.loss_of_error_polynomial(p)


@pytest.mark.parametrize(("layers", "sigma"), [(2, 0.0), (3, 0.5), (4, 0.0)])
def test_the_hessian_is_the_finite_difference_hessian_of_the_exact_loss(
        layers: int, sigma: float) -> None:
    task = LinearGaussian(5, 20, sigma)
    exact = isotropic_steps_loss(task)
    assert exact is not None
    etas = list(multistep_optimum(task, layers, preconditioned=False).etas)
    h = Fraction(1, 10**7)
    base = [Fraction(e) for e in etas]
    fd = np.zeros((layers, layers))
    for j, k in itertools.product(range(layers), repeat=2):
        def at(a: int, b: int, j: int = j, k: int = k) -> Fraction:
            steps = list(base)
            steps[j] += a * h
            steps[k] += b * h
            return exact_loss(exact, steps)
        fd[j, k] = float((at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h))
    hessian = step_hessian(exact, etas)
    assert np.allclose(hessian, fd, rtol=1e-6, atol=1e-9 * np.abs(fd).max())
    assert np.abs(hessian).max() > 0


@pytest.mark.parametrize(("layers", "sigma"), [(1, 0.0), (2, 0.5), (4, 0.0), (4, 0.5)])
def test_step_errors_within_the_tolerance_cost_at_most_five_percent(
        layers: int, sigma: float) -> None:
    task = LinearGaussian(5, 20, sigma)
    exact = isotropic_steps_loss(task)
    assert exact is not None
    optimum = multistep_optimum(task, layers, preconditioned=False)
    found = step_tolerance(exact, optimum.etas, optimum.loss, 0.05)
    assert found is not None and 0 < found.tolerance <= found.quadratic_tolerance
    etas = np.array(optimum.etas)

    def rise(relative_errors: np.ndarray) -> float:
        return exact.loss_of_steps(list(etas * (1 + relative_errors))) / optimum.loss - 1

    corners = [np.array(s) for s in itertools.product((-1, 1), repeat=layers)]
    worst = max(rise(found.tolerance * s) for s in corners)
    assert 0.0499 < worst <= 0.05 + 1e-12  # the tolerance is the largest that keeps 5 %
    assert max(rise(1.1 * found.tolerance * s) for s in corners) > 0.05
    inside = np.random.default_rng(0).uniform(-1, 1, (100, layers))
    assert max(rise(found.tolerance * u) for u in inside) <= 0.05
    # the second-order tolerance: its worst corner has the 5 % as a quadratic form
    quadratic = max(float(s @ found.hessian @ s) for s in
                    (found.quadratic_tolerance * etas * c for c in corners)) / 2
    assert quadratic == pytest.approx(0.05 * optimum.loss, rel=1e-9)
    if layers == 1:  # one step: L(eta* (1 + u)) = L* + u^2 eta*^2 n d (n + d + 1 + s^2), exact
        n, d = 20, 5
        curvature = n * d * (n + d + 1 + sigma**2) * etas[0] ** 2
        assert found.tolerance == pytest.approx(np.sqrt(0.05 * optimum.loss / curvature))


def test_no_tolerance_where_scalar_steps_are_not_the_sparse_optimum() -> None:
    assert isotropic_steps_loss(LinearGaussian(3, 10, 0.0, cov_w=np.diag([1.0, 2.0, 3.0]))) \
        is None
    assert isotropic_steps_loss(LinearGaussian(3, 10, 0.0, cov_x=np.diag([1.0, 2.0, 3.0]))) \
        is None
    exact = isotropic_steps_loss(LinearGaussian(3, 10, 0.0))
    assert exact is not None
    assert step_tolerance(exact, [0.5, -0.5], 1.0, 0.05) is None  # not a minimum
