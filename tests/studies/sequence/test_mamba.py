"""The mamba model: the parallel scan equals the sequential reference (float64 exactly up to
rounding, float32 to its rounding), the prefix predictions are causal, and the block is
its recurrence."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from iclab.studies.sequence.mamba import Mamba, parallel_scan, sequential_scan
from iclab.studies.sequence.options import MambaOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.seeding import make_generator


@pytest.mark.parametrize("length", [1, 2, 7, 16, 33])
def test_parallel_scan_is_the_sequential_recurrence(length: int) -> None:
    generator = make_generator(length, "scan")
    a = torch.rand(4, length, 5, 3, generator=generator, dtype=torch.float64)
    b = torch.randn(4, length, 5, 3, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(parallel_scan(a, b), sequential_scan(a, b), rtol=1e-12,
                               atol=1e-12)
    a32, b32 = a.float(), b.float()
    exact = sequential_scan(a, b)
    for scanned in (parallel_scan(a32, b32), sequential_scan(a32, b32)):
        torch.testing.assert_close(scanned.double(), exact, rtol=1e-5, atol=1e-5)


def test_the_sequential_scan_is_the_recurrence_written_out() -> None:
    a = torch.tensor([[0.5, 0.25, 2.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    h1 = 1.0
    h2 = 0.25 * h1 + 2.0
    h3 = 2.0 * h2 + 3.0
    torch.testing.assert_close(sequential_scan(a, b), torch.tensor([[h1, h2, h3]],
                                                                   dtype=torch.float64))


def models(dtype: torch.dtype) -> tuple[Mamba, Mamba]:
    options = MambaOptions(width=8, state=4, layers=2)
    parallel = Mamba.create(3, options, make_generator(0, "m"), dtype)
    sequential = Mamba.create(3, dataclasses.replace(options, scan="sequential"),
                              make_generator(0, "m"), dtype)
    return parallel, sequential


@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float64, 1e-12),
                                                  (torch.float32, 1e-5)])
def test_both_scans_give_the_same_model(dtype: torch.dtype, tolerance: float) -> None:
    parallel, sequential = models(dtype)
    batch = LinearGaussian(3, 12, 0.5).sample_prompts(16, make_generator(1, "p"), dtype)
    with torch.no_grad():
        torch.testing.assert_close(parallel(batch.X, batch.y, batch.x_q),
                                   sequential(batch.X, batch.y, batch.x_q),
                                   rtol=tolerance, atol=tolerance)


def test_prefix_predictions_are_causal_and_end_at_the_query() -> None:
    """Changing y_k and x_(k+1).. changes no prediction at positions <= k; the forward pass
    is the last prefix's prediction."""
    model, _ = models(torch.float64)
    batch = LinearGaussian(3, 10, 0.5).sample_prompts(4, make_generator(2, "p"),
                                                      torch.float64)
    X, y = batch.X.clone(), batch.y.clone()
    with torch.no_grad():
        before = model.predict_prefixes(X, y)
        X[:, 6:] += 1.0
        y[:, 5:] -= 2.0
        after = model.predict_prefixes(X, y)
        torch.testing.assert_close(before[:, :6], after[:, :6], rtol=0, atol=0)
        assert float((before[:, 6:] - after[:, 6:]).abs().min()) > 0
        X_all = torch.cat([batch.X, batch.x_q[:, None]], 1)
        y_all = torch.cat([batch.y, torch.zeros(4, 1, dtype=torch.float64)], 1)
        torch.testing.assert_close(model(batch.X, batch.y, batch.x_q),
                                   model.predict_prefixes(X_all, y_all)[:, -1])


def test_parameter_count_is_declared_exactly() -> None:
    options = MambaOptions(width=8, state=4, layers=3, conv=2)
    model = Mamba.create(5, options, make_generator(0, "c"))
    assert Mamba.parameter_count(options, 5) == sum(p.numel() for p in model.parameters())
