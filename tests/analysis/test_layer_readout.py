"""Per-layer read-out of sparse L-layer models."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclab.analysis.layer_readout import compare_steps, read_layers
from iclab.models.lsa.deep import DeepLinearSelfAttention, sparse_gd_model
from iclab.models.lsa.options import LSAOptions
from iclab.utils.errors import ConfigError


def test_read_layers_of_constructed_preconditioners() -> None:
    A = torch.stack([torch.diag(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)),
                     0.25 * torch.eye(3, dtype=torch.float64)])
    first, second = read_layers(sparse_gd_model(A))
    np.testing.assert_allclose(first.preconditioner, A[0].numpy(), atol=1e-15)
    assert first.step == pytest.approx(2.0)
    # ||diag(-1, 0, 1)||_F / ||diag(1, 2, 3)||_F
    assert first.isotropy_err == pytest.approx(math.sqrt(2 / 14))
    assert second.step == pytest.approx(0.25) and second.isotropy_err == pytest.approx(0.0)


def test_looped_model_reads_the_same_layer_l_times() -> None:
    readouts = read_layers(sparse_gd_model([0.4, 0.4, 0.4], d=2, looped=True))
    assert [r.step for r in readouts] == pytest.approx([0.4, 0.4, 0.4])


def test_compare_steps_sorts_both_sides() -> None:
    readouts = read_layers(sparse_gd_model([1.3, 0.5], d=3))
    comparison = compare_steps(readouts, [0.52, 1.25])
    assert comparison.learned == pytest.approx([0.5, 1.3])
    assert comparison.optimal == [0.52, 1.25]
    assert comparison.rel_err == pytest.approx([0.02 / 0.52, 0.05 / 1.25])
    assert comparison.max_rel_err == pytest.approx(0.04)
    assert compare_steps([0.7], [0.7]).max_rel_err == 0.0


def test_bad_comparisons_and_full_models_are_refused() -> None:
    with pytest.raises(ConfigError, match="one optimal step size per layer: 2 layers, 1"):
        compare_steps([0.1, 0.2], [0.1])
    with pytest.raises(ConfigError, match="one optimal step size per layer: 1 layers, 2"):
        compare_steps([0.1], [0.1, 0.2])
    with pytest.raises(ConfigError, match="finite and non-zero"):
        compare_steps([0.1], [0.0])
    full = DeepLinearSelfAttention(2, LSAOptions(layers=2))
    with pytest.raises(ConfigError, match="sparse parameterisation only"):
        read_layers(full)
