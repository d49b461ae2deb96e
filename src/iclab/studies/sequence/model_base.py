"""What the sequence study's models share: each is built by its constructor from (d, options,
generator, dtype), and its options check themselves (``check(d)``) before any file is
written."""

from __future__ import annotations

from typing import Any, Self

import torch

from iclab.models.base import Model


class SequenceModel(Model):
    """A model of the sequence study (``h3``, ``gla``, ``mamba``); subclasses give ``name``,
    ``options_class``, ``__init__(d, options, generator, dtype)``, ``forward`` and what else
    they declare."""

    @classmethod
    def create(cls, d: int, options: Any, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float32) -> Self:
        return cls(d, options, generator, dtype)

    @classmethod
    def check_options(cls, options: Any, d: int) -> None:
        options.check(d)
