"""The linear Gaussian task's two samplers: shapes, seeding, covariances, equality in law."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def random_covariance(d: int, seed: int, spread: float = 3.0) -> np.ndarray:
    """A non-isotropic SPD (d, d) matrix with eigenvalues spread over [1/spread, spread]."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    eigenvalues = np.geomspace(1 / spread, spread, d)
    return np.asarray((basis * eigenvalues) @ basis.T)


def gaussian_task(d: int, n: int, sigma: float, seed: int = 0) -> LinearGaussian:
    return LinearGaussian(d, n, sigma, random_covariance(d, seed), random_covariance(d, seed + 1))


def mean_and_stderr(values: torch.Tensor) -> tuple[float, float]:
    return float(values.mean()), float(values.std() / math.sqrt(values.numel()))


# --- shapes, validation, seeding -------------------------------------------------------------


def test_shapes_and_dtypes() -> None:
    task = gaussian_task(3, 7, 0.5)
    prompts = task.sample_prompts(11, make_generator(0, "t"), F64)
    assert prompts.X.shape == (11, 7, 3) and prompts.y.shape == (11, 7)
    assert prompts.x_q.shape == (11, 3) and prompts.y_q.shape == (11,)
    assert all(t.dtype == F64 and t.is_contiguous() for t in
               (prompts.X, prompts.y, prompts.x_q, prompts.y_q))
    stats = task.sample_statistics(11, make_generator(0, "t"))
    assert stats.w.shape == stats.x_q.shape == (11, 3)
    assert stats.y_q.shape == stats.chi2.shape == stats.z.shape == (11,)
    assert stats.chol_x is not None and stats.chol_x.shape == (3, 3)
    assert stats.w.dtype == torch.float32 and stats.n == 7 and stats.sigma == 0.5
    assert LinearGaussian(3, 7, 0.5).sample_statistics(2, make_generator(0, "t")).chol_x is None


@given(st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text()))
def test_rejects_bad_dimensions(value: object) -> None:
    with pytest.raises(ConfigError, match="d must be"):
        LinearGaussian(value, 5, 0.1)
    with pytest.raises(ConfigError, match="n must be"):
        LinearGaussian(3, value, 0.1)


@given(st.one_of(st.floats(max_value=-1e-300), st.just(math.inf), st.just(math.nan)))
def test_rejects_bad_sigma(sigma: float) -> None:
    with pytest.raises(ConfigError, match="sigma must be"):
        LinearGaussian(3, 5, sigma)


def test_same_seed_and_step_give_identical_batches() -> None:
    task = gaussian_task(4, 6, 0.3)

    def draw(step: int) -> tuple[torch.Tensor, ...]:
        prompts = task.sample_prompts(64, make_generator(5, "train", step))
        stats = task.sample_statistics(64, make_generator(5, "train", step))
        return (prompts.X, prompts.y, prompts.x_q, prompts.y_q,
                stats.w, stats.x_q, stats.y_q, stats.chi2, stats.z)

    first, again, other = draw(3), draw(3), draw(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not any(torch.equal(a, b) for a, b in zip(first, other, strict=True))


# --- marginal laws ---------------------------------------------------------------------------


def assert_covariance(samples: torch.Tensor, expected: np.ndarray) -> None:
    """Sample covariance of zero-mean rows within 4.5 standard errors, entry by entry."""
    x = samples.reshape(-1, samples.shape[-1]).to(F64).numpy()
    count = x.shape[0]
    empirical = x.T @ x / count
    stderr = np.sqrt((np.outer(np.diag(expected), np.diag(expected)) + expected**2) / count)
    z = np.abs(empirical - expected) / stderr
    assert z.max() < 4.5, (empirical, expected)


def test_prompt_inputs_and_tasks_have_the_asked_covariances() -> None:
    task = gaussian_task(4, 5, 0.5, seed=3)
    prompts = task.sample_prompts(40_000, make_generator(1, "cov"), F64)
    assert_covariance(prompts.X, task.sigma_x)
    assert_covariance(prompts.x_q, task.sigma_x)
    stats = task.sample_statistics(200_000, make_generator(1, "cov"), F64)
    assert_covariance(stats.x_q, task.sigma_x)
    assert_covariance(stats.w, task.sigma_w)
    # The check has power: the identity is rejected.
    with pytest.raises(AssertionError):
        assert_covariance(prompts.X, np.eye(4))


def test_labels_and_bartlett_factors_have_their_laws() -> None:
    task = gaussian_task(3, 9, 0.7, seed=5)
    stats = task.sample_statistics(200_000, make_generator(2, "law"), F64)
    label_variance = float(np.trace(task.sigma_x @ task.sigma_w)) + 0.7**2
    mean, stderr = mean_and_stderr(stats.y_q**2)
    assert abs(mean - label_variance) < 4 * stderr
    mean, stderr = mean_and_stderr(stats.chi2)                       # chi2_n: mean n, var 2n
    assert abs(mean - 9) < 4 * stderr
    mean, stderr = mean_and_stderr((stats.chi2 - 9) ** 2)
    assert abs(mean - 18) < 4 * stderr
    mean, stderr = mean_and_stderr(stats.z**2)
    assert abs(mean - 1) < 4 * stderr
    # Given w and x_q, the query label's noise has variance sigma^2.
    residual = stats.y_q - (stats.w * stats.x_q).sum(-1)
    mean, stderr = mean_and_stderr(residual**2)
    assert abs(mean - 0.7**2) < 4 * stderr
    prompts = task.sample_prompts(20_000, make_generator(2, "law"), F64)
    mean, stderr = mean_and_stderr((prompts.y**2).mean(1))    # prompts are i.i.d., labels not
    assert abs(mean - label_variance) < 4 * stderr


# --- equality in law of the prediction -------------------------------------------------------

LAW_CASES = [  # (n, sigma, attend_query, normalise)
    (1, 0.0, False, False),
    (1, 0.7, True, True),
    (2, 0.7, True, False),
    (2, 0.0, False, True),
    (5, 0.0, True, True),
    (5, 0.7, False, False),
    (30, 0.7, False, True),
    (30, 0.0, True, False),
]


def prediction_moments(
    yhat: torch.Tensor, y_q: torch.Tensor
) -> dict[str, tuple[float, float]]:
    """Mean and standard error of yhat, yhat^2, yhat y_q and (yhat - y_q)^2."""
    return {
        "mean": mean_and_stderr(yhat),
        "square": mean_and_stderr(yhat**2),
        "cross": mean_and_stderr(yhat * y_q),
        "loss": mean_and_stderr((yhat - y_q) ** 2),
    }


def law_samples(
    task: LinearGaussian, model: LinearSelfAttention, count: int, seed: int, statistics: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    generator = make_generator(seed, "law-stats" if statistics else "law-prompts")
    with torch.no_grad():
        if statistics:
            stats = task.sample_statistics(count, generator, F64)
            return model.forward_statistics(stats), stats.y_q
        prompts = task.sample_prompts(count, generator, F64)
        return model(prompts.X, prompts.y, prompts.x_q), prompts.y_q


def assert_same_law(
    first: dict[str, tuple[float, float]], second: dict[str, tuple[float, float]], bound: float
) -> None:
    for name, (mean_a, se_a) in first.items():
        mean_b, se_b = second[name]
        assert abs(mean_a - mean_b) < bound * math.hypot(se_a, se_b), (name, mean_a, mean_b)


@pytest.mark.parametrize(("n", "sigma", "attend_query", "normalise"), LAW_CASES)
def test_statistics_prediction_has_the_law_of_the_prompt_prediction(
    n: int, sigma: float, attend_query: bool, normalise: bool
) -> None:
    d, count = 3, 60_000
    task = gaussian_task(d, n, sigma, seed=n)
    options = LSAOptions(normalise=normalise, attend_query=attend_query, init_scale=0.6,
                         init="random")
    model = LinearSelfAttention(d, options, make_generator(n, "init"), dtype=F64)
    direct = prediction_moments(*law_samples(task, model, count, n, statistics=False))
    statistics = prediction_moments(*law_samples(task, model, count, n, statistics=True))
    assert_same_law(direct, statistics, 4.0)


def test_law_comparison_detects_a_wrong_sampler() -> None:
    """The moment comparison above rejects statistics drawn with n + 1 examples."""
    d, n, count = 3, 5, 60_000
    task = gaussian_task(d, n, 0.7, seed=n)
    model = LinearSelfAttention(d, LSAOptions(init_scale=0.6, init="random"),
                                make_generator(n, "init"), dtype=F64)
    direct = prediction_moments(*law_samples(task, model, count, n, statistics=False))
    wrong_task = replace(task, n=n + 1)
    wrong = prediction_moments(*law_samples(wrong_task, model, count, n, statistics=True))
    with pytest.raises(AssertionError):
        assert_same_law(direct, wrong, 4.0)


def test_statistics_prediction_equals_z_form_on_one_prompt() -> None:
    """On one prompt, u^T Z M x_q equals p^T W q with W = G^T G for the whitened examples G.

    This pins the factorisation Z = L W L^T that the sufficient-statistic sampler relies on.
    """
    d, n = 3, 4
    task = gaussian_task(d, n, 0.6, seed=9)
    model = LinearSelfAttention(d, LSAOptions(init_scale=0.7, init="random"),
                                make_generator(1, "init"), dtype=F64)
    generator = make_generator(3, "z")
    chol_x = torch.as_tensor(np.linalg.cholesky(task.sigma_x))
    w = torch.randn(d, generator=generator, dtype=F64)
    x_q = torch.randn(d, generator=generator, dtype=F64)
    whitened = torch.randn(n, d + 1, generator=generator, dtype=F64)     # rows [g_i; eps_i]
    L = torch.zeros(d + 1, d + 1, dtype=F64)
    L[:d, :d] = chol_x
    L[d, :d] = w @ chol_x
    L[d, d] = task.sigma
    tokens = whitened @ L.T                                              # e_i = L [g_i; eps_i]
    with torch.no_grad():
        direct = model(tokens[None, :, :d], tokens[None, :, d], x_q[None])
        u, M = model.effective()
        W = whitened.T @ whitened
        via_w = (L.T @ u) @ W @ (L.T @ (M @ x_q))
    assert torch.allclose(direct, via_w.reshape(1), rtol=1e-12, atol=1e-12)


# --- gradients and training ------------------------------------------------------------------


def chunk_gradients(
    task: LinearGaussian, model: LinearSelfAttention, statistics: bool, chunks: int, size: int
) -> torch.Tensor:
    """Gradient of the mean squared error w.r.t. all weights on ``chunks`` batches: (chunks, p)."""
    rows = []
    for index in range(chunks):
        generator = make_generator(index, "grad-stats" if statistics else "grad-prompts")
        if statistics:
            stats = task.sample_statistics(size, generator, F64)
            yhat, y_q = model.forward_statistics(stats), stats.y_q
        else:
            prompts = task.sample_prompts(size, generator, F64)
            yhat, y_q = model(prompts.X, prompts.y, prompts.x_q), prompts.y_q
        grads = torch.autograd.grad((yhat - y_q).square().mean(), list(model.parameters()))
        rows.append(torch.cat([g.flatten() for g in grads]))
    return torch.stack(rows)


def test_both_samplers_give_the_same_mean_gradient() -> None:
    d, n = 2, 5
    task = gaussian_task(d, n, 0.5, seed=4)
    model = LinearSelfAttention(d, LSAOptions(init_scale=0.6, init="random"),
                                make_generator(2, "init"), dtype=F64)
    direct = chunk_gradients(task, model, statistics=False, chunks=40, size=2_000)
    statistics = chunk_gradients(task, model, statistics=True, chunks=40, size=2_000)
    moving = direct.var(0) > 0        # W_Q's last column never reaches the output
    assert int(moving.sum()) == direct.shape[1] - (d + 1)
    direct, statistics = direct[:, moving], statistics[:, moving]
    difference = direct.mean(0) - statistics.mean(0)
    stderr = torch.sqrt(direct.var(0) / 40 + statistics.var(0) / 40)
    assert float((difference.abs() / stderr).max()) < 4.5
    # and the gradient is not trivially zero: it is resolved well above its noise
    assert float((direct.mean(0).abs() / stderr).max()) > 10


@pytest.mark.slow
def test_training_with_either_sampler_learns_the_same_step_size(tmp_path: Path) -> None:
    from iclab.config.train import TrainConfig
    from iclab.runs import run_training as train

    etas: dict[str, list[float]] = {"statistics": [], "prompts": []}
    for sampler in etas:
        for seed in range(4):
            config = TrainConfig.flat(d=4, n=10, sigma=0.5, steps=800, batch=4096, seed=seed,
                                 sampler=sampler, eval_prompts=1000)
            result = train(config, tmp_path / f"{sampler}-{seed}", progress=False)
            etas[sampler].append(result["eta_hat"] / result["eta_star"])
    a, b = np.array(etas["statistics"]), np.array(etas["prompts"])
    assert np.all(np.abs(a - 1) < 0.01) and np.all(np.abs(b - 1) < 0.01)
    stderr = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * stderr + 1e-4


def test_training_on_statistics_leaves_the_batch_it_reads_unchanged() -> None:
    """A training step reads one batch several times (the forward, the hand-worked loss and
    its gradients, in place where it can): none may write into the batch, or a later read
    would see other draws than the ones the step was taken on."""
    task = LinearGaussian(3, 7, 0.5)
    for stats in (task.sample_statistics(16, make_generator(0, "f")),
                  task.sample_z_statistics(16, make_generator(1, "f"))):
        before = {f.name: getattr(stats, f.name).clone() for f in fields(stats)
                  if isinstance(getattr(stats, f.name), torch.Tensor)}
        model = LinearSelfAttention(3, LSAOptions(init_scale=0.5, init="random"),
                                    make_generator(0, "init"))
        model.statistics_loss(stats).backward()
        model.statistics_loss_and_gradients(stats)
        model.forward_statistics(stats)
        assert before and all(torch.equal(getattr(stats, name), value)
                              for name, value in before.items())
