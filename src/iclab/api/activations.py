"""``iclab.cache(model, prompts)``: every hook point of a model on some prompts
(``iclab.models.hooks``), as named tensors with their documented shapes.

    acts = iclab.cache(model, prompts)          # prompts: iclab Prompts or (X, y, x_q)
    acts["resid.2"]                              # (B, T, F); position T-1 is the query
    acts.prediction                              # model(X, y, x_q), bit-identical

The forward runs once without gradients in evaluation mode (the model's mode is restored);
``names`` picks some hook points (an unknown one is one line, ``iclab.Error``). A model's
hook points and shapes: ``iclab models`` and docs/guide/probes.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from iclab.models.base import Model
from iclab.models.hooks import Activations
from iclab.models.hooks import cache as cache_hooks
from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError


def cache(model: Model, prompts: Prompts | Sequence[torch.Tensor],
          names: Sequence[str] | None = None) -> Activations:
    """The hook points ``names`` (default: all the model declares) of ``model`` on
    ``prompts`` (``Prompts`` or a tuple (X (B, n, d), y (B, n), x_q (B, d))), with the
    prediction; ``Activations.tensors`` maps each name to a (B, T, F) tensor."""
    if not isinstance(model, Model):
        raise ConfigError(f"cache needs an iclab.models.Model, got {type(model).__name__}")
    X, y, x_q = _unpacked(prompts)
    return cache_hooks(model, X, y, x_q, names)


def _unpacked(prompts: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if isinstance(prompts, Prompts):
        return prompts.X, prompts.y, prompts.x_q
    if isinstance(prompts, tuple | list) and len(prompts) == 3 and all(
            isinstance(part, torch.Tensor) for part in prompts):
        X, y, x_q = prompts
        if X.dim() == 3 and y.shape == X.shape[:2] and x_q.shape == (X.shape[0], X.shape[2]):
            return X, y, x_q
    raise ConfigError("prompts must be iclab Prompts or (X (B, n, d), y (B, n), x_q (B, d)) "
                      "tensors")
