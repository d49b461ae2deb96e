"""Prefix curves of a model without prefix predictions (truncation), and of a model with them
(one pass) against truncation of the same model."""

from __future__ import annotations

import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.options import TransformerOptions
from iclab.studies.transformer.prefix_curves import model_prefix_predictions, prefix_curves
from iclab.tasks.registry import make_family
from iclab.utils.seeding import make_generator


def test_a_transformer_s_one_pass_equals_truncated_prompts() -> None:
    model = Transformer.create(3, TransformerOptions(layers=1, width=8),
                               make_generator(0, "t"), torch.float64)
    X = torch.randn(5, 6, 3, dtype=torch.float64, generator=make_generator(1, "x"))
    y = torch.randn(5, 6, dtype=torch.float64, generator=make_generator(2, "y"))
    one_pass = model_prefix_predictions(model, X, y)
    for k in range(1, 6):
        truncated = model(X[:, :k], y[:, :k], X[:, k])
        assert torch.allclose(one_pass[k], truncated, rtol=0, atol=1e-12)  # type: ignore[arg-type]


def test_an_lsa_is_applied_to_each_prefix() -> None:
    task = make_family("linear-gaussian", 3, 6, 0.0)
    model = LinearSelfAttention.create(3, LinearSelfAttention.options_class(),
                                       make_generator(0, "m"), torch.float64)
    curves = prefix_curves(model, task, 400, seed=0)
    rows = curves["rows"]
    assert rows[0]["model"] is None and all(row["model"] is not None for row in rows[1:])
    # sigma = 0, isotropic: the noiseless Bayes curve max(d - k, 0)/d is exact
    assert [row["bayes_exact"] for row in rows] == [1.0, 2 / 3, 1 / 3, 0.0, 0.0, 0.0, 0.0]
    assert abs(rows[1]["bayes"] - 2 / 3) <= 4 * rows[1]["bayes_stderr"]
