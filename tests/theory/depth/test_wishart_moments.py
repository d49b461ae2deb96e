"""Exact Wishart moments against closed forms, chi-square laws, the n <-> d symmetry and
Monte Carlo."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.theory.depth.wishart_moments import wishart_moment, wishart_trace_moments
from iclab.utils.errors import ConfigError


def rising(start: int, k: int) -> int:
    """start (start + 2) ... (start + 2k - 2): the k-th moment of a chi-square with start dof."""
    return math.prod(start + 2 * j for j in range(k))


@pytest.mark.parametrize(("n", "d"), [(1, 1), (3, 5), (7, 3), (20, 5), (4, 9)])
def test_first_three_trace_moments_closed_forms(n: int, d: int) -> None:
    m = wishart_trace_moments(3, n, d)
    assert m[0] == d
    assert m[1] == n * d
    assert m[2] == n * d * (n + d + 1)
    assert m[3] == n * d * (n * n + d * d + 3 * n * d + 3 * n + 3 * d + 4)


@pytest.mark.parametrize("n", [1, 2, 6, 15])
def test_one_dimension_is_a_chi_square(n: int) -> None:
    """d = 1: S ~ chi2_n, E S^k = n (n+2) ... (n + 2k - 2)."""
    assert wishart_trace_moments(10, n, 1) == [rising(n, k) for k in range(11)]


@pytest.mark.parametrize("d", [1, 2, 5, 11])
def test_one_example_is_rank_one(d: int) -> None:
    """n = 1: S = x x^T, tr(S^k) = |x|^(2k), |x|^2 ~ chi2_d."""
    assert wishart_trace_moments(8, 1, d)[1:] == [rising(d, k) for k in range(1, 9)]


@pytest.mark.parametrize(("n", "d"), [(3, 5), (8, 2), (10, 4)])
def test_powers_of_the_trace_are_chi_square_moments(n: int, d: int) -> None:
    """tr(S) ~ chi2_(n d): the mixed moments E tr(S)^k."""
    for k in range(1, 7):
        assert wishart_moment([1] * k, n, d) == rising(n * d, k)


@pytest.mark.parametrize("parts", [[1], [4], [7], [2, 1], [3, 3, 1], [5, 2]])
def test_n_and_d_are_interchangeable(parts: list[int]) -> None:
    """X^T X and X X^T have the same nonzero eigenvalues, so moments without tr(S^0) = d are
    symmetric in (n, d); the recursion itself is not."""
    assert wishart_moment(parts, 4, 9) == wishart_moment(parts, 9, 4)
    assert wishart_moment(parts, 2, 7) == wishart_moment(parts, 7, 2)


def test_zero_parts_count_as_the_dimension() -> None:
    assert wishart_moment([0, 2], 5, 3) == 3 * wishart_moment([2], 5, 3)
    assert wishart_moment([0], 5, 3) == 3
    assert wishart_moment([], 5, 3) == 1


def test_against_monte_carlo() -> None:
    """n = 7, d = 3: 200,000 draws of X^T X, each moment within 4 standard errors."""
    n, d, draws = 7, 3, 200_000
    generator = torch.Generator().manual_seed(11)
    X = torch.randn(draws, n, d, generator=generator, dtype=torch.float64)
    S = X.transpose(1, 2) @ X
    traces = {k: torch.linalg.matrix_power(S, k).diagonal(dim1=-2, dim2=-1).sum(-1)
              for k in range(1, 7)}
    cases: list[tuple[list[int], torch.Tensor]] = [([k], traces[k]) for k in range(1, 7)]
    cases += [([2, 1], traces[2] * traces[1]), ([3, 2], traces[3] * traces[2]),
              ([2, 2, 1], traces[2] ** 2 * traces[1])]
    for parts, values in cases:
        mean, se = float(values.mean()), float(values.std()) / draws**0.5
        assert abs(mean - wishart_moment(parts, n, d)) < 4 * se, (parts, mean, se)


@given(st.integers(-3, 0), st.integers(1, 4))
def test_refuses_bad_sizes(bad: int, good: int) -> None:
    with pytest.raises(ConfigError, match="n must be an integer >= 1"):
        wishart_trace_moments(2, bad, good)
    with pytest.raises(ConfigError, match="d must be an integer >= 1"):
        wishart_moment([1], good, bad)


def test_refuses_bad_degrees() -> None:
    with pytest.raises(ConfigError, match=r"k_max must be an integer in 0\.\.40"):
        wishart_trace_moments(41, 3, 2)
    with pytest.raises(ConfigError, match="k_max"):
        wishart_trace_moments(-1, 3, 2)
    with pytest.raises(ConfigError, match="parts >= 0"):
        wishart_moment([2, -1], 3, 2)
    with pytest.raises(ConfigError, match="total degree at most 40"):
        wishart_moment([30, 11], 3, 2)
    with pytest.raises(ConfigError, match="n must be an integer"):
        wishart_trace_moments(2, True, 2)  # type: ignore[arg-type]



def test_degree_16_at_d_2_against_the_eigenvalue_density() -> None:
    """E tr W^16 at n = 10, d = 2 (what the chain-of-thought theory's 8-step error needs,
    docs/theory.md section 21) by quadrature of the joint eigenvalue density of a real
    Wishart, c prod_i lambda_i^((n-d-1)/2) e^(-lambda_i/2) |lambda_1 - lambda_2|: an
    independent computation beside the recursion's (the d = 1 and n = 1 checks above do not
    reach the cross terms of two eigenvalues)."""
    integrate = pytest.importorskip("scipy.integrate")
    n, d, m = 10, 2, 16
    a = (n - d - 1) / 2

    def integral(power: int) -> float:
        def density(u: float, lam: float) -> float:  # lambda_2 = u lambda_1 < lambda_1
            return float(lam**power * (1 + u**power) * (lam * lam * u) ** a
                         * math.exp(-lam * (1 + u) / 2) * lam * (1 - u) * lam)
        return sum(integrate.dblquad(density, low, high, 0, 1, epsabs=0, epsrel=1e-13)[0]
                   for low, high in ((0, 20), (20, 60), (60, 150), (150, math.inf)))

    value = integral(m) / (integral(0) / 2)  # the density is symmetric in the two
    exact = wishart_trace_moments(m, n, d)[m]
    assert abs(value / exact - 1) < 1e-10
    assert abs(value / (1.01 * exact) - 1) > 1e-3  # a moment off by 1 % fails
