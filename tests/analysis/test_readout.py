import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.algorithms.construct import lsa_from_gamma
from iclab.algorithms.gd import PreconditionedGD
from iclab.analysis.readout import (
    gamma_relative_error,
    nuisance_shares,
    prediction_terms,
    read_algorithm,
)
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from tests.helpers import prompts, random_lsa


def lsa_with_gamma_in_my_ux(a: np.ndarray, b: np.ndarray) -> LinearSelfAttention:
    """An LSA with u = [a; 0] and M = [0; b^T]: u_y = 0, M_x = 0, so its whole linear part is
    x_q^T (b a^T) X^T y, held in m_y u_x^T."""
    d = len(a)
    model = LinearSelfAttention(d, LSAOptions(init="random"), dtype=torch.float64)
    with torch.no_grad():
        for weight in (model.W_K, model.W_Q, model.W_V, model.h):
            weight.zero_()
        model.W_V[0, :d] = torch.as_tensor(a)        # u = W_V^T h = [a; 0]
        model.h[0] = 1.0
        model.W_K[0, d] = 1.0                         # M = W_K^T W_Q[:, :d] = e_(d+1) b^T
        model.W_Q[0, :d] = torch.as_tensor(b)
    return model


@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("attend_query", [False, True])
def test_terms_add_up_to_the_prediction(normalise: bool, attend_query: bool) -> None:
    d, n = 3, 7
    model = random_lsa(d, seed=2, normalise=normalise, attend_query=attend_query)
    batch = prompts(d, n, batch=50)
    terms = prediction_terms(read_algorithm(model, n), batch, attend_query)
    with torch.no_grad():
        yhat = model(batch.X, batch.y, batch.x_q)
    torch.testing.assert_close(sum(terms.values()), yhat, rtol=1e-11, atol=1e-11)
    assert bool((terms["query"] == 0).all()) != attend_query


@given(st.integers(1, 5), st.integers(1, 9), st.integers(0, 10_000))
def test_gamma_held_in_m_y_u_x_is_read_and_is_the_algorithm(d: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(d), rng.standard_normal(d)
    model = lsa_with_gamma_in_my_ux(a, b)
    learned = read_algorithm(model, n)
    np.testing.assert_allclose(learned.gamma, np.outer(b, a), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(learned.gamma_parts["uy_Mx"], np.zeros((d, d)))
    batch = prompts(d, n, batch=16, seed=seed)
    with torch.no_grad():
        lsa = model(batch.X, batch.y, batch.x_q)
    algorithm = PreconditionedGD(np.outer(b, a))(batch.X, batch.y, batch.x_q)
    assert float((lsa - algorithm).abs().max()) <= 1e-12 * (float(algorithm.abs().max()) + 1e-300)
    assert max(nuisance_shares(learned, batch).as_dict().values()) == 0.0


@given(st.integers(1, 5), st.integers(1, 9), st.integers(0, 10_000), st.booleans())
def test_gamma_held_in_u_y_m_x_is_read(d: int, n: int, seed: int, normalise: bool) -> None:
    gamma = np.random.default_rng(seed).standard_normal((d, d))
    learned = read_algorithm(lsa_from_gamma(gamma, LSAOptions(normalise=normalise), n=n), n)
    np.testing.assert_allclose(learned.gamma, gamma, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(learned.gamma_parts["my_ux"], np.zeros((d, d)))


def test_parts_sum_to_gamma_and_a_random_model_has_both() -> None:
    learned = read_algorithm(random_lsa(3, seed=3), n=10)
    parts = learned.gamma_parts
    np.testing.assert_allclose(parts["uy_Mx"] + parts["my_ux"], learned.gamma, rtol=0, atol=0)
    assert np.linalg.norm(parts["uy_Mx"]) > 1e-3 and np.linalg.norm(parts["my_ux"]) > 1e-3


def test_normalisation_divides_gamma_by_n() -> None:
    plain = read_algorithm(random_lsa(4, seed=3), n=10).gamma
    normalised = read_algorithm(random_lsa(4, seed=3, normalise=True), n=10).gamma
    np.testing.assert_allclose(normalised, plain / 10, rtol=1e-14)


def test_shares_of_a_random_model_are_positive() -> None:
    model = random_lsa(3, seed=5)
    shares = nuisance_shares(read_algorithm(model, 8), prompts(3, 8, batch=2000))
    assert shares.x_x > 1e-3 and shares.y_y > 1e-3
    assert shares.query == 0.0


def test_gamma_relative_error() -> None:
    target = np.diag([1.0, 2.0])
    assert gamma_relative_error(target, target) == 0.0
    assert gamma_relative_error(1.1 * target, target) == pytest.approx(0.1)
    assert gamma_relative_error(0.9 * target, target) == pytest.approx(0.1)
