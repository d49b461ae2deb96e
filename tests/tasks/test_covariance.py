from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclab.tasks.covariance import load_covariance, validate_covariance
from iclab.utils.errors import ConfigError


def _spd(d: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((d, d))
    return A @ A.T + 0.5 * np.eye(d)


def test_valid_covariance_loads_as_float64(tmp_path: Path) -> None:
    path = tmp_path / "c.npy"
    np.save(path, _spd(3, 0).astype(np.float32))
    loaded = load_covariance(path, 3)
    assert loaded.dtype == np.float64
    np.testing.assert_allclose(loaded, loaded.T)


@pytest.mark.parametrize(
    ("matrix", "fragment"),
    [
        (np.array([[1.0, 0.5], [0.0, 1.0]]), "not symmetric"),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "not positive definite"),
        (np.eye(3), "shape (2, 2)"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "non-finite"),
        (np.array([["a", "b"], ["c", "d"]]), "real numbers"),
        (np.zeros((2, 2)), "entries must be between 1e-08 and 1e+08"),
        (1e300 * np.eye(2), "entries must be between 1e-08 and 1e+08"),
        (1e9 * np.eye(2), "entries must be between 1e-08 and 1e+08"),
        (1e-9 * np.eye(2), "entries must be between 1e-08 and 1e+08"),
    ],
)
def test_bad_covariances_are_named(tmp_path: Path, matrix: np.ndarray, fragment: str) -> None:
    path = tmp_path / "bad.npy"
    np.save(path, matrix)
    with pytest.raises(ConfigError) as info:
        load_covariance(path, 2)
    message = str(info.value)
    assert fragment in message and "bad.npy" in message and "\n" not in message


def test_unreadable_and_missing_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"not an npy file")
    with pytest.raises(ConfigError, match=r"junk\.npy: cannot read"):
        load_covariance(junk, 2)
    with pytest.raises(ConfigError, match="not found"):
        load_covariance(tmp_path / "missing.npy", 2)
    pickled = tmp_path / "obj.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match=r"obj\.npy"):
        load_covariance(pickled, 2)


@given(st.lists(st.floats(-10, 10), min_size=4, max_size=4))
def test_any_2x2_is_accepted_only_if_symmetric_positive_definite(values: list[float]) -> None:
    matrix = np.array(values).reshape(2, 2)
    symmetric = abs(matrix[0, 1] - matrix[1, 0]) <= 1e-8 * max(np.abs(matrix).max(), 1e-300)
    sym = (matrix + matrix.T) / 2
    positive = symmetric and np.linalg.eigvalsh(sym)[0] > 1e-12 * np.abs(matrix).max()
    in_range = 1e-8 <= np.abs(matrix).max() <= 1e8  # the documented entry sizes
    if positive and in_range:
        validate_covariance(matrix, 2, "m")
    else:
        with pytest.raises(ConfigError):
            validate_covariance(matrix, 2, "m")
