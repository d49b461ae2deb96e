import numpy as np
import pytest
import torch

from iclab.analysis.readout import (
    gamma_relative_error,
    nuisance_shares,
    nuisance_terms,
    read_algorithm,
)
from tests.helpers import prompts, random_lsa


@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("attend_query", [False, True])
def test_terms_add_up_to_the_prediction(normalise: bool, attend_query: bool) -> None:
    d, n = 3, 7
    model = random_lsa(d, seed=2, normalise=normalise, attend_query=attend_query)
    batch = prompts(d, n, batch=50)
    terms = nuisance_terms(model, batch)
    with torch.no_grad():
        yhat = model(batch.X, batch.y, batch.x_q)
    torch.testing.assert_close(sum(terms.values()), yhat, rtol=1e-11, atol=1e-11)
    assert bool((terms["query"] == 0).all()) != attend_query


def test_gamma_is_u_y_times_M_x_transposed_and_scales_with_normalisation() -> None:
    model = random_lsa(4, seed=3)
    with torch.no_grad():
        u, M = model.effective()
    learned = read_algorithm(model, n=10)
    np.testing.assert_allclose(learned.gamma, (u[4] * M[:4].T).numpy(), rtol=1e-14)
    assert learned.eta_hat == pytest.approx(np.trace(learned.gamma) / 4)
    expected_iso = np.linalg.norm(learned.gamma - learned.eta_hat * np.eye(4)) / np.linalg.norm(
        learned.gamma
    )
    assert learned.isotropy_err == pytest.approx(expected_iso)
    normalised = random_lsa(4, seed=3, normalise=True)
    np.testing.assert_allclose(read_algorithm(normalised, n=10).gamma, learned.gamma / 10)


def test_shares_of_a_random_model_are_positive_and_of_a_gd_model_zero() -> None:
    model = random_lsa(3, seed=5)
    shares = nuisance_shares(model, prompts(3, 8, batch=2000))
    assert all(value > 1e-3 for name, value in shares.as_dict().items() if name != "query")
    assert shares.query == 0.0
    terms = nuisance_terms(model, prompts(3, 8, batch=2000))
    total = sum(terms.values())
    assert shares.x_x == pytest.approx(float(terms["x_x"].var() / total.var()))


def test_gamma_relative_error() -> None:
    target = np.diag([1.0, 2.0])
    assert gamma_relative_error(target, target) == 0.0
    assert gamma_relative_error(1.1 * target, target) == pytest.approx(0.1)
