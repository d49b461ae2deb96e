"""The multi-head lsa model (--heads, --kq separate): options, the seeded draw, its exact
loss against a Monte Carlo estimate and against the theory's heads loss, unchanged hashes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.config.train import TrainConfig
from iclab.models.lsa.heads import MultiHeadLinearAttention
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError


def test_old_defaults_and_config_hashes_are_unchanged() -> None:
    """Hashes of iclab before the heads options (computed on that version)."""
    assert TrainConfig.flat(d=5, n=20).hash() == "40f437473048f424"
    assert TrainConfig.flat(d=3, n=10, sigma=0.5, lr=0.01, init_scale=0.05).hash() \
        == "74a267a05a09dee3"
    flat = TrainConfig.flat(d=5, n=20).to_json()
    assert not {"kq", "heads", "rank", "optimizer", "momentum"} & set(flat)
    model = LinearSelfAttention.create(3, LSAOptions(), torch.Generator().manual_seed(0))
    assert type(model) is LinearSelfAttention


@pytest.mark.parametrize(("options", "shapes"), [
    (LSAOptions(kq="separate", heads=3, rank=2, init_scale=0.5),
     [(3,), (3, 2, 4), (3, 2, 4)]),
    (LSAOptions(heads=2, init_scale=0.5), [(2,), (2, 4, 4)]),
])
def test_the_draw_is_seeded_in_the_documented_order(options: LSAOptions,
                                                     shapes: list[tuple[int, ...]]) -> None:
    model = LinearSelfAttention.create(4, options, torch.Generator().manual_seed(7))
    assert isinstance(model, MultiHeadLinearAttention)
    generator = torch.Generator().manual_seed(7)
    expected = [0.5 * torch.randn(*shape, generator=generator) for shape in shapes]
    for got, want in zip(model.raw_parameters(), expected, strict=True):
        np.testing.assert_array_equal(got, want.double().numpy())


def test_exact_loss_matches_monte_carlo_and_the_theory() -> None:
    sigma_x = np.diag([2.0, 1.0, 0.5])
    task = LinearGaussian(3, 6, 0.3, cov_x=sigma_x)
    options = LSAOptions(kq="separate", heads=2, rank=1, init_scale=0.4, normalise=True)
    model = LinearSelfAttention.create(3, options, torch.Generator().manual_seed(1),
                                       torch.float64)
    exact = float(model.exact_loss(task).detach())
    heads = HeadsLoss("separate", 2, 1, 6, 0.3, sigma_x, np.eye(3), True)
    assert exact == pytest.approx(heads.loss(heads.join(*model.raw_parameters())), rel=1e-12)
    prompts = task.sample_prompts(400_000, torch.Generator().manual_seed(2), torch.float64)
    with torch.no_grad():
        errors = (model(prompts.X, prompts.y, prompts.x_q) - prompts.y_q).square()
    stderr = float(errors.std()) / np.sqrt(errors.numel())
    assert abs(float(errors.mean()) - exact) < 4 * stderr


@pytest.mark.parametrize(("options", "message"), [
    (LSAOptions(kq="separate", rank=5), "rank must be at most d"),
    (LSAOptions(heads=2, attend_query=True), "attend_query does not apply"),
    (LSAOptions(heads=2, init="random"), "init must be gd-subspace"),
    (LSAOptions(heads=2, rank=2), "rank applies to kq separate only"),
    (LSAOptions(kq="joint"), "kq must be one of"),
])
def test_bad_options_are_one_line(options: LSAOptions, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LinearSelfAttention.create(3, options)
