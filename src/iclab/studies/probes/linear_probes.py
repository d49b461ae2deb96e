"""Linear (ridge) probes from activations to targets, with held-out R^2 and its standard
error. (Not ``iclab.models.probe``, which tries a user's plug-in on tiny input.)

``fit_probes(features, targets, folds, seed)``: features (N, F), targets {name: (N, k)}.
The prompts are split into ``folds`` folds by a permutation from ``seed``; for each fold,
a ridge regression with intercept is fitted on the other folds (features standardised on
them) and predicts the held-out fold, so every prompt gets one out-of-fold prediction. The
penalty of each target is chosen on the training folds alone, by exact leave-one-out
cross-validation over ``PENALTIES`` (the hat matrix's diagonal, from one SVD per fold).

R^2 = 1 - sum_i ||t_i - that_i||^2 / sum_i ||t_i - mean t||^2 over all prompts (the
coordinates of a vector target pooled), and its standard error by the delta method on the
ratio of the two means: se = sd_i(e_i - (1 - R^2) s_i) / (sqrt(N) mean_i s_i), e_i and s_i
each prompt's two squared norms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PENALTIES = tuple(float(10.0 ** k) for k in range(-8, 5))
"""The ridge penalties tried, relative to the training fold's size (standardised features)."""


@dataclass(frozen=True)
class ProbeScore:
    """A probe's held-out R^2, its standard error and the median penalty chosen."""

    r2: float
    se: float
    penalty: float


def fold_ids(count: int, folds: int, seed: int) -> np.ndarray:
    """Each prompt's fold, 0..folds-1, from a permutation seeded by ``seed``."""
    order = np.random.default_rng(np.random.SeedSequence([seed, 0x9B0BE])).permutation(count)
    ids = np.empty(count, dtype=np.int64)
    ids[order] = np.arange(count) % folds
    return ids


def _loo_errors(U: np.ndarray, s: np.ndarray, yc: np.ndarray, scale: float) -> np.ndarray:
    """Exact leave-one-out squared errors of every target column for each penalty:
    (len(PENALTIES), K); scale: the relative penalty's unit (the fold's size)."""
    Uty = U.T @ yc
    hat_parts = U ** 2
    errors = []
    for lam_rel in PENALTIES:
        shrink = s ** 2 / (s ** 2 + lam_rel * scale)                       # (r,)
        fitted = U @ (shrink[:, None] * Uty)                               # (N, K)
        hat = hat_parts @ shrink                                           # (N,)
        errors.append((((yc - fitted) / (1.0 - hat)[:, None]) ** 2).sum(0))
    return np.stack(errors)


def fit_probes(features: np.ndarray, targets: dict[str, np.ndarray], folds: int,
               seed: int) -> dict[str, ProbeScore]:
    """Held-out R^2 of a ridge probe from ``features`` to each target (module docstring)."""
    names = list(targets)
    blocks, start = {}, 0
    for name in names:
        blocks[name] = slice(start, start + targets[name].shape[1])
        start += targets[name].shape[1]
    Y = np.concatenate([targets[name] for name in names], axis=1)          # (N, K)
    ids = fold_ids(features.shape[0], folds, seed)
    predicted = np.empty_like(Y)
    chosen: dict[str, list[float]] = {name: [] for name in names}
    for fold in range(folds):
        train, test = ids != fold, ids == fold
        mean, sd = features[train].mean(0), features[train].std(0)
        sd = np.where(sd > 1e-12 * max(1.0, float(np.abs(mean).max(initial=0.0))), sd, np.inf)
        U, s, Vt = np.linalg.svd((features[train] - mean) / sd, full_matrices=False)
        y_mean = Y[train].mean(0)
        yc = Y[train] - y_mean
        errors = _loo_errors(U, s, yc, float(train.sum()))
        lam_col = np.empty(Y.shape[1])
        for name, block in blocks.items():
            pick = PENALTIES[int(np.argmin(errors[:, block].sum(1)))]
            lam_col[block] = pick * float(train.sum())
            chosen[name].append(pick)
        coef = _coefficients(s, Vt, U.T @ yc, lam_col)
        predicted[test] = ((features[test] - mean) / sd) @ coef + y_mean
    return {name: _score(Y[:, block], predicted[:, block], chosen[name])
            for name, block in blocks.items()}


def _coefficients(s: np.ndarray, Vt: np.ndarray, Uty: np.ndarray,
                  lam_col: np.ndarray) -> np.ndarray:
    """Ridge coefficients (F, K), column k with penalty lam_col[k]."""
    factors = s[:, None] / (s[:, None] ** 2 + lam_col[None, :])             # (r, K)
    coef: np.ndarray = Vt.T @ (factors * Uty)
    return coef


def _score(target: np.ndarray, predicted: np.ndarray, penalties: list[float]) -> ProbeScore:
    errors = ((target - predicted) ** 2).sum(1)
    spread = ((target - target.mean(0)) ** 2).sum(1)
    if spread.sum() <= 0:
        return ProbeScore(float("nan"), float("nan"), float(np.median(penalties)))
    r2 = 1.0 - errors.mean() / spread.mean()
    influence = errors - (1.0 - r2) * spread
    se = float(influence.std(ddof=1) / (math.sqrt(len(errors)) * spread.mean()))
    return ProbeScore(float(r2), se, float(np.median(penalties)))
