"""The L-layer LSA: token updates, the Z path, sparse = preconditioned multi-step GD."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.models.lsa.deep import DeepLinearSelfAttention, sparse_gd_model
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import prompts

F64 = torch.float64

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def deep_model(
    d: int, layers: int, parameterisation: str = "full", looped: bool = False, seed: int = 0,
    scale: float = 0.4, init: str = "random",
) -> DeepLinearSelfAttention:
    options = LSAOptions(init_scale=scale, init=init, layers=layers,
                         parameterisation=parameterisation, looped=looped)
    return DeepLinearSelfAttention(d, options, make_generator(seed, "test-deep"), F64)


def gram(X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Z = sum_i e_i e_i^T: (B, d+1, d+1)."""
    tokens = torch.cat([X, y[..., None]], -1)
    return torch.einsum("bni,bnj->bij", tokens, tokens)


def attention_form(
    model: DeepLinearSelfAttention, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor
) -> torch.Tensor:
    """Each token j gets (1/n) sum_i (W_PV e_i) (e_i^T W_KQ e_j): values and scores, token by
    token, with no Gram matrix."""
    n, d = X.shape[1], X.shape[2]
    tokens = torch.cat([torch.cat([X, y[..., None]], -1),
                        torch.cat([x_q, torch.zeros_like(x_q[:, :1])], -1)[:, None]], 1)
    for W_PV, W_KQ in zip(*model.weights(), strict=True):
        context = tokens[:, :n]
        values = context @ W_PV.T                                          # W_PV e_i
        scores = torch.einsum("bip,pq,bjq->bij", context, W_KQ, tokens)    # e_i^T W_KQ e_j
        tokens = tokens + torch.einsum("bij,bip->bjp", scores, values) / n
    return -tokens[:, n, d]


def gd_prediction(
    A: torch.Tensor, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor
) -> torch.Tensor:
    """L steps w <- w + A_l X^T (y - X w) / n from w = 0, then x_q^T w."""
    n = X.shape[1]
    w = torch.zeros_like(x_q)
    for A_l in A:
        residual = y - torch.einsum("bnd,bd->bn", X, w)
        w = w + torch.einsum("ij,bnj,bn->bi", A_l, X, residual) / n
    return (w * x_q).sum(-1)


@pytest.mark.parametrize(("parameterisation", "looped", "layers"),
                         [("full", False, 1), ("full", False, 3), ("full", True, 2),
                          ("sparse", False, 3), ("sparse", True, 4)])
def test_token_updates_match_the_attention_form(
    parameterisation: str, looped: bool, layers: int
) -> None:
    model = deep_model(3, layers, parameterisation, looped)
    batch = prompts(3, 6, batch=32, seed=1)
    expected = attention_form(model, batch.X, batch.y, batch.x_q)
    got = model(batch.X, batch.y, batch.x_q)
    torch.testing.assert_close(got, expected, rtol=1e-11, atol=1e-11)
    assert expected.abs().mean() > 0.1


@pytest.mark.parametrize("n", [1, 2, 7])
@pytest.mark.parametrize(("parameterisation", "looped", "layers"),
                         [("full", False, 1), ("full", False, 2), ("full", False, 4),
                          ("full", True, 3), ("sparse", False, 3)])
def test_forward_statistics_equals_forward(
    parameterisation: str, looped: bool, layers: int, n: int
) -> None:
    model = deep_model(2, layers, parameterisation, looped, seed=n)
    batch = prompts(2, n, batch=64, seed=n)
    expected = model(batch.X, batch.y, batch.x_q)
    got = model.forward_z(gram(batch.X, batch.y), batch.x_q, n)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


@given(d=st.integers(1, 4), n=st.integers(1, 8), layers=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_constructed_sparse_weights_run_preconditioned_gd(
    d: int, n: int, layers: int, seed: int
) -> None:
    generator = make_generator(seed, "test-gd")
    A = 0.5 * torch.randn(layers, d, d, generator=generator, dtype=F64)
    batch = prompts(d, n, batch=16, seed=seed)
    expected = gd_prediction(A, batch.X, batch.y, batch.x_q)
    model = sparse_gd_model(A)
    torch.testing.assert_close(model(batch.X, batch.y, batch.x_q), expected)
    torch.testing.assert_close(
        model.forward_z(gram(batch.X, batch.y), batch.x_q, n), expected)
    torch.testing.assert_close(model.layer_preconditioners().detach(), A)


@given(d=st.integers(1, 4), layers=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_step_sizes_give_plain_multi_step_gd(d: int, layers: int, seed: int) -> None:
    etas = (0.3 + torch.rand(layers, generator=make_generator(seed, "test-eta"))).tolist()
    batch = prompts(d, 5, batch=16, seed=seed)
    A = torch.stack([eta * torch.eye(d, dtype=F64) for eta in etas])
    model = sparse_gd_model(etas, d=d)
    torch.testing.assert_close(model(batch.X, batch.y, batch.x_q),
                               gd_prediction(A, batch.X, batch.y, batch.x_q))


@pytest.mark.parametrize("looped", [False, True])
def test_read_off_preconditioners_reproduce_a_random_sparse_model(looped: bool) -> None:
    model = deep_model(3, 3, "sparse", looped, scale=0.7)
    A = model.layer_preconditioners().detach()
    assert A.shape == (3, 3, 3)
    batch = prompts(3, 9, batch=32, seed=4)
    torch.testing.assert_close(model(batch.X, batch.y, batch.x_q),
                               gd_prediction(A, batch.X, batch.y, batch.x_q))


def test_one_layer_is_the_normalised_one_layer_lsa() -> None:
    """yhat = -(1/n) W_PV[d, :] Z W_KQ[:, :d] x_q: the LSA with u = -W_PV[d, :] and
    M = W_KQ[:, :d] (W_K = W_V = I, W_Q = W_KQ, h = -W_PV[d, :]), normalised."""
    d = 3
    deep = deep_model(d, 1)
    W_PV, W_KQ = (weight[0].detach() for weight in deep.weights())
    lsa = LinearSelfAttention(d, LSAOptions(normalise=True, init="random"), dtype=F64)
    with torch.no_grad():
        lsa.W_K.copy_(torch.eye(d + 1, dtype=F64))
        lsa.W_V.copy_(torch.eye(d + 1, dtype=F64))
        lsa.W_Q.copy_(W_KQ)
        lsa.h.copy_(-W_PV[d])
    batch = prompts(d, 8, batch=32, seed=2)
    torch.testing.assert_close(deep(batch.X, batch.y, batch.x_q), lsa(batch.X, batch.y, batch.x_q))


def test_looped_model_is_the_unlooped_model_with_repeated_weights() -> None:
    looped = deep_model(2, 3, "full", looped=True)
    unlooped = deep_model(2, 3, "full", looped=False)
    with torch.no_grad():
        unlooped.W_PV.copy_(looped.W_PV.expand(3, 3, 3))
        unlooped.W_KQ.copy_(looped.W_KQ.expand(3, 3, 3))
    assert sum(p.numel() for p in looped.parameters()) == 2 * 9
    batch = prompts(2, 5, batch=32, seed=3)
    Z = gram(batch.X, batch.y)
    loss_looped = looped.forward_z(Z, batch.x_q, 5).square().mean()
    loss_unlooped = unlooped.forward_z(Z, batch.x_q, 5).square().mean()
    torch.testing.assert_close(loss_looped, loss_unlooped)
    loss_looped.backward()  # type: ignore[no-untyped-call]
    loss_unlooped.backward()  # type: ignore[no-untyped-call]
    assert looped.W_PV.grad is not None and unlooped.W_PV.grad is not None
    torch.testing.assert_close(looped.W_PV.grad[0], unlooped.W_PV.grad.sum(0))


@pytest.mark.parametrize(("init", "odd"), [("gd-subspace", True), ("random", False)])
def test_the_prediction_is_odd_in_the_labels_exactly_on_the_gd_subspace(
    init: str, odd: bool
) -> None:
    model = deep_model(3, 3, "full", init=init, scale=0.5)
    batch = prompts(3, 6, batch=64, seed=5)
    with torch.no_grad():
        plus = model(batch.X, batch.y, batch.x_q)
        minus = model(batch.X, -batch.y, batch.x_q)
    asymmetry = float((plus + minus).abs().max() / plus.abs().max())
    assert (asymmetry < 1e-12) if odd else (asymmetry > 1e-2)


def test_gd_init_is_a_noisy_gd_step_and_seeded() -> None:
    d, scale = 4, 0.05
    options = LSAOptions(layers=2, init_scale=scale)
    model = DeepLinearSelfAttention(d, options, make_generator(7, "init"))
    same = DeepLinearSelfAttention(d, options, make_generator(7, "init"))
    other = DeepLinearSelfAttention(d, options, make_generator(8, "init"))
    assert torch.equal(model.W_KQ, same.W_KQ) and torch.equal(model.W_PV, same.W_PV)
    assert not torch.equal(model.W_KQ, other.W_KQ)
    free_kq = torch.zeros(d + 1, d + 1, dtype=torch.bool)
    free_kq[:d, :d] = True
    assert torch.all(model.W_KQ[:, ~free_kq] == 0)
    assert torch.all(model.W_PV[:, :d] == 0) and torch.all(model.W_PV[:, d, :d] == 0)
    assert torch.all((model.W_PV[:, d, d] + 1).abs() < 5 * scale)
    diagonal = model.W_KQ.detach()[:, range(d), range(d)]
    assert abs(float(diagonal.mean()) - scale) < 3 * scale / d**0.5


@given(d=st.one_of(st.integers(-3, 0), st.booleans(), st.floats(1.5, 2.5)),
       layers=st.integers(1, 5))
def test_bad_d_is_refused(d: object, layers: int) -> None:
    with pytest.raises(ConfigError, match=r"^d must be an integer >= 1"):
        DeepLinearSelfAttention(d, LSAOptions(layers=layers))  # type: ignore[arg-type]


@given(layers=st.one_of(st.integers(-3, 0), st.booleans(), st.just(2.0)))
def test_bad_layers_are_refused(layers: object) -> None:
    with pytest.raises(ConfigError, match=r"^layers must be an integer >= 1"):
        DeepLinearSelfAttention(3, LSAOptions(layers=layers))  # type: ignore[arg-type]


@given(name=st.text(max_size=8).filter(lambda text: text not in ("full", "sparse")))
def test_bad_parameterisation_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"^parameterisation must be one of full, sparse"):
        DeepLinearSelfAttention(3, LSAOptions(layers=2, parameterisation=name))


@given(d=st.integers(1, 6), layers=st.integers(1, 6), sparse=st.booleans(), looped=st.booleans())
def test_good_options_are_accepted(d: int, layers: int, sparse: bool, looped: bool) -> None:
    options = LSAOptions(layers=layers, parameterisation="sparse" if sparse else "full",
                         looped=looped)
    model = DeepLinearSelfAttention(d, options)
    stored = 1 if looped else layers
    weight = model.B if sparse else model.W_KQ
    assert weight.shape[0] == stored and model.weights()[0].shape[0] == layers


def test_other_bad_inputs_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"^looped must be true or false"):
        DeepLinearSelfAttention(3, LSAOptions(layers=2, looped=1))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^init must be one of gd-subspace, random; got"):
        DeepLinearSelfAttention(3, LSAOptions(layers=2, init="zeros"))
    with pytest.raises(ConfigError, match=r"^normalise applies to the one-layer lsa model only"):
        DeepLinearSelfAttention(3, LSAOptions(layers=2, normalise=True))
    with pytest.raises(ConfigError, match="sparse parameterisation only"):
        deep_model(3, 2, "full").layer_preconditioners()
    with pytest.raises(ConfigError, match="needs d"):
        sparse_gd_model([0.1, 0.2])
    with pytest.raises(ConfigError, match="same preconditioner"):
        sparse_gd_model([0.1, 0.2], d=2, looped=True)
    assert sparse_gd_model([0.1, 0.1], d=2, looped=True).B.shape == (1, 2, 2)
