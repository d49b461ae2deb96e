import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import prompts, random_lsa, z_statistics_of


def literal_attention(model: LinearSelfAttention, X: torch.Tensor, y: torch.Tensor,
                      x_q: torch.Tensor) -> torch.Tensor:
    """h^T sum_i (W_V e_i)(W_K e_i)^T (W_Q e_q), token by token, straight from the definition."""
    B, n, _ = X.shape
    out = torch.zeros(B, dtype=X.dtype)
    for b in range(B):
        e_q = torch.cat([x_q[b], torch.zeros(1, dtype=X.dtype)])
        tokens = [torch.cat([X[b, i], y[b, i : i + 1]]) for i in range(n)]
        if model.options.attend_query:
            tokens.append(e_q)
        total = torch.zeros(model.options.value_width(model.d), dtype=X.dtype)
        for e in tokens:
            total = total + (model.W_V @ e) * ((model.W_K @ e) @ (model.W_Q @ e_q))
        out[b] = model.h @ total / (n if model.options.normalise else 1)
    return out


@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("attend_query", [False, True])
@pytest.mark.parametrize(("key_dim", "value_dim"), [(None, None), (2, 7)])
def test_forward_matches_the_definition(
    normalise: bool, attend_query: bool, key_dim: int | None, value_dim: int | None
) -> None:
    d, n = 3, 6
    model = random_lsa(d, normalise=normalise, attend_query=attend_query, key_dim=key_dim,
                       value_dim=value_dim)
    batch = prompts(d, n, batch=8)
    with torch.no_grad():
        fast = model(batch.X, batch.y, batch.x_q)
        slow = literal_attention(model, batch.X, batch.y, batch.x_q)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12)


def test_forward_equals_u_Z_M_xq() -> None:
    d, n = 4, 5
    model = random_lsa(d)
    batch = prompts(d, n, batch=16)
    Z = z_statistics_of(batch).Z
    with torch.no_grad():
        u, M = model.effective()
        expected = torch.einsum("a,bac,cd,bd->b", u, Z, M, batch.x_q)
        torch.testing.assert_close(model(batch.X, batch.y, batch.x_q), expected)


@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("attend_query", [False, True])
def test_the_prediction_from_z_statistics_is_the_literal_attention(
    normalise: bool, attend_query: bool
) -> None:
    """Z = sum_i e_i e_i^T of whole prompts, as a ``ZStatistics`` batch, predicts exactly what
    attention token by token does, and its gradient is the whole-prompt forward's."""
    d, n = 3, 7
    model = random_lsa(d, normalise=normalise, attend_query=attend_query, key_dim=2,
                       value_dim=5)
    batch = prompts(d, n, batch=8)
    stats = z_statistics_of(batch)
    on_z = model.forward_statistics(stats)
    with torch.no_grad():
        literal = literal_attention(model, batch.X, batch.y, batch.x_q)
    torch.testing.assert_close(on_z.detach(), literal, rtol=1e-12, atol=1e-12)
    grads_z = torch.autograd.grad((on_z - stats.y_q).square().sum(), list(model.parameters()))
    on_prompts = model(batch.X, batch.y, batch.x_q)
    grads_p = torch.autograd.grad((on_prompts - batch.y_q).square().sum(),
                                  list(model.parameters()))
    for a, b in zip(grads_z, grads_p, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_shapes_and_seeded_initialisation() -> None:
    options = LSAOptions(key_dim=3, value_dim=4, init="random")
    a = LinearSelfAttention(5, options, make_generator(1, "init"))
    b = LinearSelfAttention(5, options, make_generator(1, "init"))
    assert a.W_K.shape == (3, 6) and a.W_Q.shape == (3, 6)
    assert a.W_V.shape == (4, 6) and a.h.shape == (4,)
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name])
    u, M = a.effective()
    assert u.shape == (6,) and M.shape == (6, 5)
    assert a.W_K.dtype == torch.float32


@given(st.integers(-5, 0))
def test_bad_widths_are_refused(width: int) -> None:
    with pytest.raises(ConfigError, match="key_dim must be"):
        LinearSelfAttention(3, LSAOptions(key_dim=width))
    with pytest.raises(ConfigError, match="value_dim must be"):
        LinearSelfAttention(3, LSAOptions(value_dim=width))


def test_gd_subspace_initialisation_has_no_nuisance_coordinates() -> None:
    model = LinearSelfAttention(4, LSAOptions(key_dim=3, value_dim=6, init="gd-subspace"),
                                make_generator(0, "init"))
    with torch.no_grad():
        u, M = model.effective()
    assert float(u[:4].abs().max()) == 0.0 and float(M[4].abs().max()) == 0.0
    assert float(u[4].abs()) > 0 and float(M[:4].abs().min()) > 0
    random = LinearSelfAttention(4, LSAOptions(key_dim=3, value_dim=6, init="random"),
                                 make_generator(0, "init"))
    with torch.no_grad():
        u, M = random.effective()
    assert float(u[:4].abs().min()) > 0 and float(M[4].abs().min()) > 0
    with pytest.raises(ConfigError, match="init must be one of gd-subspace, random"):
        LinearSelfAttention(4, LSAOptions(init="zeros"))


def test_gd_subspace_is_invariant_under_the_population_gradient() -> None:
    """At u_x = 0, m_y = 0 the exact loss's gradient in W_V[:, :d] and W_K[:, d] vanishes."""
    import numpy as np

    from iclab.tasks.linear_gaussian import LinearGaussian
    from iclab.theory.population import PopulationLoss

    d = 3
    cov_x = np.diag([0.5, 1.0, 2.0])
    model = LinearSelfAttention(d, LSAOptions(init_scale=0.5, init="gd-subspace"),
                                make_generator(1, "init"), dtype=torch.float64)
    population = PopulationLoss.from_task(LinearGaussian(d, 7, 0.4, cov_x, np.eye(d)))
    u, M = model.effective()
    population(u, M, False, False).backward()
    assert model.W_V.grad is not None and model.W_K.grad is not None
    scale = float(model.W_Q.grad.abs().max())  # type: ignore[union-attr]
    assert float(model.W_V.grad[:, :d].abs().max()) <= 1e-12 * scale
    assert float(model.W_K.grad[:, d].abs().max()) <= 1e-12 * scale
