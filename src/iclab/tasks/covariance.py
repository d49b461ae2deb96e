"""Reading and checking covariance matrices given by the user as ``.npy`` files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iclab.utils.errors import ConfigError

SYMMETRY_RTOL = 1e-8
MIN_SCALE, MAX_SCALE = 1e-8, 1e8
"""The largest entry of a covariance must lie in this range: beyond it the fourth and sixth
moments of the theory overflow or underflow float64."""


def validate_covariance(matrix: np.ndarray, d: int, name: str) -> np.ndarray:
    """Check that ``matrix`` is a finite, symmetric, positive-definite (d, d) array.

    Returns it as float64. ``name`` (a file name, say) is used in the error message.
    """
    array = np.asarray(matrix)
    if array.dtype.kind not in "biuf":
        raise ConfigError(f"{name}: covariance must hold real numbers, got dtype {array.dtype}")
    array = np.asarray(array, dtype=np.float64)
    if array.shape != (d, d):
        raise ConfigError(f"{name}: covariance must have shape ({d}, {d}), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"{name}: covariance has non-finite entries")
    scale: float = max(float(np.max(np.abs(array))), float(np.finfo(np.float64).tiny))
    if not MIN_SCALE <= scale <= MAX_SCALE:
        raise ConfigError(f"{name}: covariance entries must be between {MIN_SCALE:g} and "
                          f"{MAX_SCALE:g} in size (rescale the problem), got {scale:.3g}")
    asymmetry = float(np.max(np.abs(array - array.T)))
    if asymmetry > SYMMETRY_RTOL * scale:
        raise ConfigError(
            f"{name}: covariance is not symmetric (max |A - A^T| = {asymmetry:.3g})"
        )
    array = np.asarray((array + array.T) / 2, dtype=np.float64)
    diagonal = np.diagonal(array)
    if np.array_equal(array, np.diag(diagonal)):  # the eigenvalues are the diagonal
        smallest = float(np.min(diagonal))
    else:
        smallest = float(np.linalg.eigvalsh(array)[0])
    if smallest <= 0 or smallest <= 1e-12 * scale:
        raise ConfigError(
            f"{name}: covariance is not positive definite (smallest eigenvalue {smallest:.3g})"
        )
    return array


def load_npy(path: str | Path, what: str) -> np.ndarray:
    """The single array in the ``.npy`` file ``path`` (no pickles); ConfigError with one line
    naming the file and ``what`` it should hold when it is missing or not such an array."""
    path = Path(path)
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} file not found") from None
    except (OSError, ValueError, EOFError) as error:
        raise ConfigError(f"{path}: cannot read {what} as a .npy array ({error})") from None
    if not isinstance(array, np.ndarray):
        raise ConfigError(f"{path}: expected a single .npy array, got {type(array).__name__}")
    return array


def load_covariance(path: str | Path, d: int) -> np.ndarray:
    """Load a (d, d) covariance from a ``.npy`` file, checked by ``validate_covariance``."""
    return validate_covariance(load_npy(path, "covariance"), d, str(path))


def covariance_or_identity(matrix: np.ndarray | None, d: int) -> np.ndarray:
    """A task's covariance as a float64 (d, d) array: ``matrix``, or I_d where it is None."""
    return np.eye(d) if matrix is None else matrix


def symmetric_sqrt(matrix: np.ndarray) -> np.ndarray:
    """The symmetric positive square root of a symmetric positive-definite (k, k) matrix."""
    values, vectors = np.linalg.eigh(matrix)
    root: np.ndarray = (vectors * np.sqrt(values)) @ vectors.T
    symmetric: np.ndarray = (root + root.T) / 2
    return symmetric
