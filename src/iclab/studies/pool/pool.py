"""A task pool: its checks (``check_pool``) and its seeded draw from the prior (``draw_pool``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclab.tasks.covariance import load_npy
from iclab.utils.errors import ConfigError
from iclab.utils.fields import setting
from iclab.utils.seeding import make_generator

MAX_POOL = 10_000_000
"""The most tasks a pool may hold."""
MAX_ENTRY = 1e8
"""The largest |entry| of a pool: beyond it the theory's fourth moments leave float64."""


def check_pool(pool: object, d: int, name: str = "task_pool") -> np.ndarray:
    """``pool`` as a float64 (K, d) array: real, 2-D, 1 <= K <= MAX_POOL rows of width d,
    finite entries of size at most MAX_ENTRY. ConfigError (one line naming ``name``)
    otherwise."""
    try:
        array = np.asarray(pool)
    except ValueError:  # a ragged nested list
        raise ConfigError(f"{name}: a task pool must be a (K, {d}) array of numbers") from None
    if array.dtype.kind not in "biuf":
        raise ConfigError(f"{name}: a task pool must hold real numbers, got dtype "
                          f"{array.dtype}")
    if array.ndim != 2:
        raise ConfigError(f"{name}: a task pool must be a 2-D (K, {d}) array, got shape "
                          f"{array.shape}")
    if array.shape[1] != d or not 1 <= array.shape[0] <= MAX_POOL:
        raise ConfigError(f"{name}: a task pool must have shape (K, {d}) with 1 <= K <= "
                          f"{MAX_POOL}, got {array.shape}")
    array = np.asarray(array, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"{name}: the task pool has non-finite entries")
    largest = float(np.max(np.abs(array)))
    if largest > MAX_ENTRY:
        raise ConfigError(f"{name}: task pool entries must be at most {MAX_ENTRY:g} in size, "
                          f"got {largest:.3g}")
    return array


def draw_pool(tasks: int, sigma_w: np.ndarray, seed: int) -> np.ndarray:
    """K = ``tasks`` tasks w_k ~ N(0, sigma_w) from the "task-pool" stream of ``seed``:
    (K, d) float64, the same on every machine."""
    if isinstance(tasks, bool) or not isinstance(tasks, int) or not 1 <= tasks <= MAX_POOL:
        raise ConfigError(f"tasks must be an integer from 1 to {MAX_POOL}, got {tasks!r}")
    d = sigma_w.shape[0]
    normals = torch.randn(tasks, d, generator=make_generator(seed, "task-pool"),
                          dtype=torch.float64).numpy()
    drawn: np.ndarray = normals @ np.linalg.cholesky(sigma_w).T
    return drawn


def load_pool(path: str | Path, d: int) -> np.ndarray:
    """A (K, d) task pool from a ``.npy`` file, checked by ``check_pool``."""
    return check_pool(load_npy(path, "task pool"), d, str(path))


@dataclass(frozen=True)
class PoolOptions:
    """The options the pool study adds to ``linear-gaussian``."""

    tasks: int | None = setting(
        None, "A pool of K tasks drawn once from the task law with the seed; every prompt's "
        "task is one of them (linear-gaussian; saved as pool.npy) [default: fresh tasks].",
        minimum=1, maximum=MAX_POOL, omit_default=True)
    task_pool: list[list[float]] | None = setting(
        None, "A (K, d) pool of tasks as a .npy file; every prompt's task is one of its rows "
        "(linear-gaussian).", omit_default=True, load=lambda path, d, n: load_pool(path, d))
