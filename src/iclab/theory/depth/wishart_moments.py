"""Exact moments of a Wishart matrix S = X^T X, X: (n, d) with i.i.d. N(0, 1) entries.

The loss of any polynomial predictor w = q(S) X^T y on isotropic Gaussian tasks is a finite
combination of E tr(S^k) (the theory docs (docs/theory.md), section 6). These have exact
finite-n formulas, computed here in integer arithmetic from one recursion over products of
traces, p_mu(S) = prod_j tr(S^(mu_j)) for a partition mu.

The recursion is Stein's lemma, E[X_ia f(X)] = E[d f / d X_ia], applied to
tr(S^(m+1)) P = sum_ia X_ia (X S^m)_ia P with P = prod_j tr(S^(mu_j)):

    E[tr(S^(m+1)) P] = E[ (n + m) tr(S^m) P
                          + sum_{r=0}^{m-1} tr(S^(r+1)) tr(S^(m-1-r)) P
                          + sum_j 2 mu_j tr(S^(m + mu_j)) P / tr(S^(mu_j)) ],

with tr(S^0) = d. Every term on the right has total degree one less, so the recursion ends at
the empty product (E[1] = 1). Checks: E tr(S) = n d, E tr(S^2) = n d (n + d + 1).
The moments are integers (polynomials in n, d with integer coefficients), exact for any n, d
(n < d included: S is then singular).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from iclab.utils.errors import ConfigError

MAX_DEGREE = 40


def _check(n: int, d: int) -> None:
    for name, value in (("n", n), ("d", d)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")


@lru_cache(maxsize=200_000)
def _moment(parts: tuple[int, ...], n: int, d: int) -> int:
    """E prod_j tr(S^(parts_j)); ``parts`` sorted in decreasing order, all >= 1."""
    if not parts:
        return 1
    top, rest = parts[0] - 1, parts[1:]                # tr(S^(m+1)) with m = top
    total = 0

    def term(extra: Sequence[int], others: tuple[int, ...]) -> int:
        """E[prod(tr S^e for e in extra) * prod(tr S^o for o in others)], zeros -> d."""
        zeros = sum(1 for e in extra if e == 0)
        keep = tuple(sorted((*[e for e in extra if e > 0], *others), reverse=True))
        return int(d**zeros * _moment(keep, n, d))

    total += (n + top) * term([top], rest)
    for r in range(top):
        total += term([r + 1, top - 1 - r], rest)
    for j, part in enumerate(rest):
        others = rest[:j] + rest[j + 1 :]
        total += 2 * part * term([top + part], others)
    return total


def wishart_moment(partition: Sequence[int], n: int, d: int) -> int:
    """E prod_j tr(S^(partition_j)) exactly, S ~ Wishart(n, I_d). Zero parts count as tr(I) = d.

    For instance ``wishart_moment([2], n, d)`` = E tr(S^2) = n d (n + d + 1) and
    ``wishart_moment([1, 1], n, d)`` = E tr(S)^2 = n d (n d + 2).
    """
    _check(n, d)
    parts = [int(p) for p in partition]
    if any(p < 0 for p in parts):
        raise ConfigError(f"a partition has parts >= 0, got {list(partition)!r}")
    if sum(parts) > MAX_DEGREE:
        raise ConfigError(f"total degree at most {MAX_DEGREE}, got {sum(parts)}")
    zeros = sum(1 for p in parts if p == 0)
    return int(d**zeros * _moment(tuple(sorted((p for p in parts if p > 0), reverse=True)), n, d))


def wishart_trace_moments(k_max: int, n: int, d: int) -> list[int]:
    """[E tr(S^k) for k = 0..k_max] exactly (the k = 0 entry is d), S ~ Wishart(n, I_d)."""
    _check(n, d)
    if isinstance(k_max, bool) or not isinstance(k_max, int) or not 0 <= k_max <= MAX_DEGREE:
        raise ConfigError(f"k_max must be an integer in 0..{MAX_DEGREE}, got {k_max!r}")
    return [d] + [_moment((k,), n, d) for k in range(1, k_max + 1)]
