import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.algorithms.construct import lsa_from_gamma
from iclab.algorithms.gd import PreconditionedGD
from iclab.analysis.readout import nuisance_shares, read_algorithm
from iclab.models.lsa.options import LSAOptions
from iclab.utils.errors import ConfigError
from tests.helpers import prompts


@given(st.integers(1, 6), st.integers(1, 12), st.integers(0, 10_000), st.booleans())
def test_constructed_lsa_is_the_algorithm_to_round_off(
    d: int, n: int, seed: int, normalise: bool
) -> None:
    gamma = np.random.default_rng(seed).standard_normal((d, d))
    model = lsa_from_gamma(gamma, LSAOptions(normalise=normalise), n=n)
    batch = prompts(d, n, batch=32, seed=seed)
    with torch.no_grad():
        lsa = model(batch.X, batch.y, batch.x_q)
    algorithm = PreconditionedGD(gamma)(batch.X, batch.y, batch.x_q)
    scale = float(algorithm.abs().max()) + 1e-300
    assert float((lsa - algorithm).abs().max()) <= 1e-12 * scale


def test_constructed_weights_read_back_exactly() -> None:
    gamma = np.array([[0.3, -0.1], [0.2, 0.05]])
    model = lsa_from_gamma(gamma, LSAOptions(key_dim=4, value_dim=3))
    learned = read_algorithm(model, n=5)
    np.testing.assert_array_equal(learned.gamma, gamma)
    assert learned.eta_hat == pytest.approx(0.175)
    shares = nuisance_shares(learned, prompts(2, 5, batch=256))
    assert max(shares.as_dict().values()) == 0.0


def test_construction_refusals() -> None:
    with pytest.raises(ConfigError, match="key_dim"):
        lsa_from_gamma(np.eye(3), LSAOptions(key_dim=2))
    with pytest.raises(ConfigError, match="attend_query"):
        lsa_from_gamma(np.eye(3), LSAOptions(attend_query=True))
    with pytest.raises(ConfigError, match="normalise"):
        lsa_from_gamma(np.eye(3), LSAOptions(normalise=True))
    with pytest.raises(ConfigError, match="square"):
        lsa_from_gamma(np.ones((2, 3)))
