"""The finite-d counterpart of Lu et al.'s asymptotics (docs/theory.md section 16.5): the
reduced linear attention Gamma (d x (d+1)) fitted by ridge regression on n = round(tau d^2)
pretraining prompts whose tasks come from a pool of k = round(kappa d) tasks drawn once
(kappa = inf: a fresh task per prompt), context length N = round(alpha d); e_ICL and e_IDG
measured on held-out prompts, with standard errors. Float64, numpy, one seeded generator per
repeat (``derive_seed(seed, "asymptotic-simulation", repeat)``).

The normal equations are solved in the smaller of the two spaces: the p = d(d+1) features
(p x p Gram matrix Phi^T Phi built in chunks, one solve) when n > p, else the n x n kernel
K = (Q Q^T) o (H H^T) (o: entrywise), whose entries are <H_mu, H_nu> = (q_mu . q_nu)
(h_mu . h_nu) for H = q h^T, so Gamma = Q^T diag(a) H with (K + (n/d) lam I) a = y. lam = 0
gives the minimum-norm (ridgeless) fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclab.studies.asymptotic.formulas import check_inputs
from iclab.theory.sized_mean import means_to_stderr
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import derive_seed

CHUNK_ENTRIES = 4_000_000
"""About how many floats one chunk of prompts holds (32 MB)."""
MAX_WORK = 6e11
"""The most work units (``simulation_work``) of one simulation, every repeat together:
measured at 1.4e10 to 4e10 units a second on one loaded core, so at most about 45 s."""
MOST_REPEATS = 4096
"""The most pretraining sets one simulation draws."""
DRAW_COST = 200.0
"""Work units per normal draw (a draw costs about what 200 floating-point operations of the
solve do)."""


@dataclass(frozen=True)
class SimulatedErrors:
    """Held-out e_ICL and e_IDG at one d: means over ``repeats`` pretraining sets, standard
    errors over the repeats (over the held-out prompts when there is one repeat)."""

    d: int
    n: int
    k: int | None
    context: int
    repeats: int
    e_icl: float
    e_icl_stderr: float
    e_idg: float
    e_idg_stderr: float

    def to_json(self) -> dict[str, Any]:
        return {"d": self.d, "n": self.n, "k": self.k, "N": self.context,
                "repeats": self.repeats, "e_icl": self.e_icl,
                "e_icl_stderr": self.e_icl_stderr, "e_idg": self.e_idg,
                "e_idg_stderr": self.e_idg_stderr}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SimulatedErrors:
        """The inverse of ``to_json``."""
        return cls(d=int(data["d"]), n=int(data["n"]),
                   k=None if data["k"] is None else int(data["k"]), context=int(data["N"]),
                   repeats=int(data["repeats"]), e_icl=float(data["e_icl"]),
                   e_icl_stderr=float(data["e_icl_stderr"]), e_idg=float(data["e_idg"]),
                   e_idg_stderr=float(data["e_idg_stderr"]))


def sizes(d: int, tau: float, alpha: float, kappa: float) -> tuple[int, int | None, int]:
    """(n, k, N) = (round(tau d^2), round(kappa d) or None for kappa = inf, round(alpha d)),
    each at least 1."""
    k = None if math.isinf(kappa) else max(1, round(kappa * d))
    return max(1, round(tau * d * d)), k, max(1, round(alpha * d))


def prompt_features(tasks: np.ndarray, context: int, rho: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prompts of the given tasks (B, d): x ~ N(0, I/d), y = x^T w + N(0, rho). Returns the
    query q (B, d), h~ = [(d/N) sum_i y_i x_i, (1/N) sum_i y_i^2] (B, d+1) and the query's
    label (B,): H_Z = q h~^T."""
    batch, d = tasks.shape
    x = rng.standard_normal((batch, context + 1, d)) / math.sqrt(d)
    y = np.einsum("bid,bd->bi", x, tasks) + math.sqrt(rho) * rng.standard_normal(
        (batch, context + 1))
    h = np.empty((batch, d + 1))
    h[:, :d] = (d / context) * np.einsum("bid,bi->bd", x[:, :context], y[:, :context])
    h[:, d] = np.mean(y[:, :context] ** 2, axis=1)
    return x[:, context], h, y[:, context]


def _tasks(size: int, d: int, pool: np.ndarray | None,
           rng: np.random.Generator) -> np.ndarray:
    """``size`` tasks (size, d): fresh w ~ N(0, I_d), or rows of ``pool`` uniformly."""
    drawn: np.ndarray = rng.standard_normal((size, d)) if pool is None else pool[
        rng.integers(0, len(pool), size)]
    return drawn


def _draw(count: int, d: int, context: int, rho: float, pool: np.ndarray | None,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` prompts (q, h~, y), in chunks; tasks uniform from ``pool`` or fresh."""
    chunk = max(1, CHUNK_ENTRIES // ((context + 1) * d))
    parts = []
    for start in range(0, count, chunk):
        size = min(chunk, count - start)
        parts.append(prompt_features(_tasks(size, d, pool, rng), context, rho, rng))
    q, h, y = (np.concatenate([part[i] for part in parts]) for i in range(3))
    return q, h, y


def fit_gamma(q: np.ndarray, h: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
    """Gamma (d, d+1) minimising sum_mu (y_mu - q_mu^T Gamma h_mu)^2 + penalty ||Gamma||_F^2
    (penalty 0: the minimum-norm least-squares fit), in the smaller space."""
    n, d = q.shape
    p = d * h.shape[1]
    if n <= p:
        kernel = (q @ q.T) * (h @ h.T)
        kernel[np.diag_indices(n)] += penalty
        coef = np.linalg.lstsq(kernel, y, rcond=None)[0] if penalty == 0.0 else \
            np.linalg.solve(kernel, y)
        gamma: np.ndarray = (q * coef[:, None]).T @ h
        return gamma
    gram, rhs = np.zeros((p, p)), np.zeros(p)
    chunk = max(1, CHUNK_ENTRIES // p)
    for start in range(0, n, chunk):
        phi = (q[start:start + chunk, :, None] * h[start:start + chunk, None, :]).reshape(-1, p)
        gram += phi.T @ phi
        rhs += phi.T @ y[start:start + chunk]
    gram[np.diag_indices(p)] += penalty
    return np.linalg.solve(gram, rhs).reshape(d, h.shape[1])


def _test_error(gamma: np.ndarray, prompts: int, context: int, rho: float,
                pool: np.ndarray | None, rng: np.random.Generator) -> tuple[float, float]:
    """The test error of Gamma on ``prompts`` held-out prompts (tasks fresh or from
    ``pool``), and its standard error. Each prompt's context is drawn; its query x ~ N(0, I/d)
    and label noise are averaged exactly: E[(x^T Gamma h~ - x^T w - eps)^2 | h~, w] =
    ||Gamma h~ - w||^2/d + rho, the same mean as the drawn query's squared error, with less
    variance."""
    d = gamma.shape[0]
    chunk = max(1, CHUNK_ENTRIES // ((context + 1) * d))
    errors = []
    for start in range(0, prompts, chunk):
        size = min(chunk, prompts - start)
        tasks = _tasks(size, d, pool, rng)
        _, h, _ = prompt_features(tasks, context, rho, rng)
        errors.append(np.sum((h @ gamma.T - tasks) ** 2, axis=1) / d + rho)
    values = np.concatenate(errors)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(prompts))


def simulation_work(d: int, tau: float, alpha: float, kappa: float, repeats: int,
                    test_prompts: int) -> float:
    """The work units of ``simulate``: per repeat the solve, min(n, p)^2 max(n, p) with p =
    d(d+1), and DRAW_COST per token drawn, (n + 2 test_prompts)(N + 1) d."""
    n, _, context = sizes(d, tau, alpha, kappa)
    p = d * (d + 1)
    solve = float(min(n, p)) ** 2 * max(n, p)
    draws = DRAW_COST * (n + 2.0 * test_prompts) * (context + 1) * d
    return repeats * (solve + draws)


def check_simulation(d: int, tau: float, alpha: float, kappa: float, repeats: int,
                     test_prompts: int) -> None:
    """ConfigError (one line) on a bad d, repeats or test_prompts, a prompt larger than a
    chunk, or a simulation over MAX_WORK (naming the limit and the repeats that fit)."""
    if not 2 <= d <= 200:
        raise ConfigError(f"--simulate-d must be an integer from 2 to 200, got {d}")
    if repeats < 1 or test_prompts < 2:
        raise ConfigError(f"repeats must be >= 1 and test prompts >= 2, got {repeats}, "
                          f"{test_prompts}")
    n, _, context = sizes(d, tau, alpha, kappa)
    if (context + 1) * d > CHUNK_ENTRIES:
        raise ConfigError(f"--simulate-d {d} with --alpha {alpha}: a context of N = {context} "
                          f"examples is too long (N d at most {CHUNK_ENTRIES:.0e})")
    work = simulation_work(d, tau, alpha, kappa, repeats, test_prompts)
    if work > MAX_WORK:
        fit = int(MAX_WORK / simulation_work(d, tau, alpha, kappa, 1, test_prompts))
        hint = f"give --repeats at most {fit}" if fit >= 1 else "use a smaller d or tau"
        raise ConfigError(f"--simulate-d {d} with --tau {tau:g} and --repeats {repeats}: n = "
                          f"{n} prompts, {d * (d + 1)} features, about {work:.1e} work units "
                          f"(limit {MAX_WORK:.0e}, about 45 s); {hint}")


def _repeat_errors(tau: float, alpha: float, kappa: float, rho: float, lam: float, d: int,
                   seed: int, repeat: int, test_prompts: int) -> np.ndarray:
    """One pool and pretraining set (number ``repeat`` of ``seed``): its held-out (e_ICL,
    its standard error, e_IDG, its standard error) over ``test_prompts`` prompts, (4,)."""
    n, k, context = sizes(d, tau, alpha, kappa)
    rng = np.random.Generator(np.random.PCG64(
        derive_seed(seed, "asymptotic-simulation", repeat)))
    pool = None if k is None else rng.standard_normal((k, d))
    q, h, y = _draw(n, d, context, rho, pool, rng)
    gamma = fit_gamma(q, h, y, (n / d) * lam)
    icl = _test_error(gamma, test_prompts, context, rho, None, rng)
    idg = _test_error(gamma, test_prompts, context, rho, pool, rng)
    return np.array([*icl, *idg])


def simulate(tau: float, alpha: float, kappa: float, rho: float, lam: float, d: int,
             seed: int = 0, repeats: int = 1, test_prompts: int = 20_000) -> SimulatedErrors:
    """Held-out e_ICL (fresh tasks) and e_IDG (tasks of the pool) of the ridge-fitted Gamma at
    dimension d, over ``repeats`` independent pool and pretraining draws."""
    check_inputs(tau, alpha, kappa, rho, lam)
    check_simulation(d, tau, alpha, kappa, repeats, test_prompts)
    n, k, context = sizes(d, tau, alpha, kappa)
    rows = np.stack([_repeat_errors(tau, alpha, kappa, rho, lam, d, seed, repeat,
                                    test_prompts) for repeat in range(repeats)])
    if repeats == 1:
        return SimulatedErrors(d, n, k, context, 1, *(float(v) for v in rows[0]))
    means, stderrs = rows[:, [0, 2]].mean(axis=0), rows[:, [0, 2]].std(axis=0, ddof=1)
    stderrs = stderrs / math.sqrt(repeats)
    return SimulatedErrors(d, n, k, context, repeats, float(means[0]), float(stderrs[0]),
                           float(means[1]), float(stderrs[1]))


def most_repeats(d: int, tau: float, alpha: float, kappa: float, test_prompts: int) -> int:
    """The most pretraining sets a simulation may draw: ``MOST_REPEATS``, or fewer where
    ``MAX_WORK`` allows fewer (at least 1)."""
    one = simulation_work(d, tau, alpha, kappa, 1, test_prompts)
    return max(1, min(MOST_REPEATS, int(MAX_WORK // one)))


def simulate_to_stderr(tau: float, alpha: float, kappa: float, rho: float, lam: float, d: int,
                       stderr: float, seed: int = 0, least: int = 2,
                       test_prompts: int = 20_000) -> tuple[SimulatedErrors, bool]:
    """``simulate`` over as many pretraining sets as it takes for the standard errors (over
    the sets) of e_ICL and e_IDG both to be at most ``stderr`` (``iclab.theory.sized_mean``:
    at least ``least`` >= 2 sets, at most ``most_repeats``; set k is ``simulate``'s set k);
    with whether the target was reached."""
    check_inputs(tau, alpha, kappa, rho, lam)
    check_simulation(d, tau, alpha, kappa, least, test_prompts)
    most = most_repeats(d, tau, alpha, kappa, test_prompts)
    if not 2 <= least <= most:
        raise ConfigError(f"repeats (the least pretraining sets) must be from 2 to {most} "
                          f"here, got {least}")
    n, k, context = sizes(d, tau, alpha, kappa)
    icl, idg = means_to_stderr(
        lambda repeat: _repeat_errors(tau, alpha, kappa, rho, lam, d, seed, repeat,
                                      test_prompts)[[0, 2]].reshape(1, 2),
        target=stderr, first=least, most=most)
    simulated = SimulatedErrors(d, n, k, context, icl.draws, icl.mean, icl.stderr, idg.mean,
                                idg.stderr)
    return simulated, icl.reached and idg.reached
