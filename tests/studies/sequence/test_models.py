"""The h3 and gla models against independent computations: their recurrences run step by
step, and the part of the prediction odd in the labels against their WPGD read-outs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.studies.sequence.family import DriftingOptions, drifting_family
from iclab.studies.sequence.gla import GatedLinearAttention
from iclab.studies.sequence.h3 import H3
from iclab.studies.sequence.model_base import prompt_tokens
from iclab.studies.sequence.options import GLAOptions, H3Options
from iclab.studies.sequence.readout import weighted_readout
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.seeding import make_generator

D, N = 3, 7


def prompts(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch = LinearGaussian(D, N, 0.5).sample_prompts(32, make_generator(seed, "p"),
                                                     torch.float64)
    return batch.X, batch.y, batch.x_q


def perturbed(model: torch.nn.Module, seed: int) -> None:
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.5 * torch.randn(parameter.shape, dtype=parameter.dtype,
                                             generator=make_generator(seed, "w")))


def h3(shift_taps: int = 2, seed: int = 0) -> H3:
    model = H3.create(D, H3Options(shift_taps=shift_taps), make_generator(seed, "h3"),
                      torch.float64)
    perturbed(model, seed)
    return model


def gla(gate: str = "scalar", seed: int = 0, gate_weights: bool = True) -> GatedLinearAttention:
    model = GatedLinearAttention.create(D, GLAOptions(gate=gate), make_generator(seed, "g"),
                                        torch.float64)
    perturbed(model, seed)
    if not gate_weights:
        with torch.no_grad():
            model.W_g.zero_()
    return model


def odd_part(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor
             ) -> torch.Tensor:
    with torch.no_grad():
        return (model(X, y, x_q) - model(X, -y, x_q)) / 2


def wpgd_prediction(stack: np.ndarray, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor
                    ) -> torch.Tensor:
    return torch.einsum("zi,za,iab,zib->z", y, x_q, torch.as_tensor(stack), X)


def test_h3_is_its_state_space_recurrence_run_step_by_step() -> None:
    """Per channel j and mode s: shift register for the keys, state
    h_t = a_(j,s) h_(t-1) + u_(t,j), output sum_s C_(j,s) h_T."""
    model = h3(shift_taps=3)
    X, y, x_q = prompts()
    tokens = prompt_tokens(X, y, x_q)
    with torch.no_grad():
        keys, values = tokens @ model.W_k.T, tokens @ model.W_v.T
        decay = torch.sigmoid(model.log_decay)
        state = torch.zeros(32, *decay.shape, dtype=torch.float64)
        for t in range(tokens.shape[1]):
            shifted = sum(model.shift[m] * keys[:, t - m] for m in range(3) if t - m >= 0)
            state = decay * state + (shifted * values[:, t])[..., None]
        pooled = (state * model.C).sum(-1)
        expected = ((tokens[:, -1] @ model.W_q.T) * pooled) @ model.head
        torch.testing.assert_close(model(X, y, x_q), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("gate", ["scalar", "vector"])
def test_gla_is_its_gated_recurrence_run_step_by_step(gate: str) -> None:
    """S_t = S_(t-1) diag(g_t) + v_t k_t^T (a scalar gate scales S), yhat = h^T S_T q_T."""
    model = gla(gate)
    X, y, x_q = prompts(1)
    tokens = prompt_tokens(X, y, x_q)
    p = model.W_q.shape[0]
    with torch.no_grad():
        S = torch.zeros(32, p, p, dtype=torch.float64)
        for t in range(tokens.shape[1]):
            g = torch.sigmoid(tokens[:, t] @ model.W_g.T + model.b_g)      # (B, 1 | p)
            v, k = tokens[:, t] @ model.W_v.T, tokens[:, t] @ model.W_k.T
            S = S * g[:, None, :] + v[:, :, None] * k[:, None, :]
        expected = torch.einsum("j,bjk,bk->b", model.head, S, tokens[:, -1] @ model.W_q.T)
        torch.testing.assert_close(model(X, y, x_q), expected, rtol=1e-10, atol=1e-10)
        omega = model.sample_weights(X, y, x_q)
        gates = torch.sigmoid(tokens @ model.W_g.T + model.b_g)
        torch.testing.assert_close(omega[:, 2], gates[:, 3:].prod(1), rtol=1e-10, atol=0)


def test_h3_odd_part_is_weighted_gd_without_the_shift() -> None:
    model = h3(shift_taps=1)
    X, y, x_q = prompts(2)
    stack = model.position_gammas(N)
    torch.testing.assert_close(odd_part(model, X, y, x_q), wpgd_prediction(stack, X, y, x_q),
                               rtol=1e-10, atol=1e-10)
    assert model.wpgd_readout(N).complete


def test_h3_shift_adds_terms_the_readout_does_not_hold() -> None:
    model = h3(shift_taps=2)
    X, y, x_q = prompts(3)
    gap = odd_part(model, X, y, x_q) - wpgd_prediction(model.position_gammas(N), X, y, x_q)
    assert float(gap.abs().max()) > 1e-3 and not model.wpgd_readout(N).complete
    with torch.no_grad():
        model.shift[1:].zero_()
    gap = odd_part(model, X, y, x_q) - wpgd_prediction(model.position_gammas(N), X, y, x_q)
    assert float(gap.abs().max()) < 1e-10 and model.wpgd_readout(N).complete


@pytest.mark.parametrize("gate", ["scalar", "vector"])
def test_gla_odd_part_is_weighted_gd_with_constant_gates(gate: str) -> None:
    model = gla(gate, seed=4, gate_weights=False)
    X, y, x_q = prompts(4)
    torch.testing.assert_close(odd_part(model, X, y, x_q),
                               wpgd_prediction(model.position_gammas(N), X, y, x_q),
                               rtol=1e-10, atol=1e-10)
    readout = model.wpgd_readout(N)
    assert readout.complete
    if gate == "scalar":          # geometric weights: omega_(i+1) / omega_i = 1 / sigmoid(b)
        ratio = readout.omega[1:] / readout.omega[:-1]
        expected = 1 / float(torch.sigmoid(model.b_g[0].detach()))
        np.testing.assert_allclose(ratio, expected, rtol=1e-10)
        assert readout.residual < 1e-12
    assert not gla(gate, seed=4).wpgd_readout(N).complete


def test_weighted_readout_recovers_weights_and_preconditioner() -> None:
    rng = np.random.default_rng(0)
    omega = rng.uniform(0.5, 2.0, 6)
    gamma = rng.standard_normal((3, 3))
    readout = weighted_readout(omega[:, None, None] * gamma)
    np.testing.assert_allclose(readout.omega, omega * 6 / omega.sum(), rtol=1e-10)
    np.testing.assert_allclose(readout.gamma, gamma * omega.sum() / 6, rtol=1e-9, atol=1e-12)
    assert readout.residual < 1e-12
    noisy = weighted_readout(omega[:, None, None] * gamma + rng.standard_normal((6, 3, 3)))
    assert noisy.residual > 0.1


def test_logsigmoid_weights_do_not_underflow_on_long_prompts() -> None:
    model = GatedLinearAttention.create(D, GLAOptions(gate_bias=-5.0),
                                        make_generator(0, "long"), torch.float32)
    batch = LinearGaussian(D, 400, 0.5).sample_prompts(4, make_generator(5, "p"))
    with torch.no_grad():
        weights = model.sample_weights(batch.X, batch.y, batch.x_q)
    # the last example's weight is the query's gate alone: sigmoid(-5) at W_g = 0
    assert torch.isfinite(weights).all() and float(weights.min()) >= 0
    torch.testing.assert_close(weights[:, -1], torch.sigmoid(torch.full((4, 1), -5.0)))


@pytest.mark.parametrize("model", [h3(), gla("scalar"), gla("vector")])
def test_parameter_count_is_declared_exactly(model: torch.nn.Module) -> None:
    declared = type(model).parameter_count(model.options, D)  # type: ignore[attr-defined]
    assert declared == sum(p.numel() for p in model.parameters())


def test_h3_terms_beyond_its_wpgd_part_only_add_loss_on_iid_prompts() -> None:
    """The ground of h3's declared bound: on i.i.d. prompts the terms of the prediction that
    are not its lag-0 WPGD part (the shift's lag-1 terms, the label-even terms) are
    uncorrelated with the WPGD part's error, so loss = loss(WPGD part) + E[residual^2]."""
    model = h3(shift_taps=2, seed=5)
    batch = LinearGaussian(D, N, 0.5).sample_prompts(200_000, make_generator(6, "p"),
                                                     torch.float64)
    with torch.no_grad():
        prediction = model(batch.X, batch.y, batch.x_q)
    wpgd = wpgd_prediction(model.position_gammas(N), batch.X, batch.y, batch.x_q)
    residual = prediction - wpgd
    cross = (residual * (wpgd - batch.y_q)).numpy()
    stderr = cross.std(ddof=1) / np.sqrt(cross.size)
    assert abs(cross.mean()) < 4 * stderr
    assert float((residual ** 2).mean()) > 40 * stderr  # the residual is there to test


def test_the_lsa_bound_is_declared_for_h3_on_iid_isotropic_prompts_only() -> None:
    iid = LinearGaussian(D, N, 0.5)
    drifting = drifting_family(D, N, 0.5, DriftingOptions(rho=0.9))
    assert h3().bounded_by_lsa_optimum(iid)
    assert not h3().bounded_by_lsa_optimum(drifting)
    assert not gla().bounded_by_lsa_optimum(iid)
