"""The options of the sequence models (``iclab train --model h3 | gla``), declared once."""

from __future__ import annotations

from dataclasses import dataclass

from iclab.utils.errors import ConfigError
from iclab.utils.fields import setting


def _check_d(d: int) -> None:
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ConfigError(f"d must be an integer >= 1, got {d!r}")


@dataclass(frozen=True)
class H3Options:
    """One H3-like layer: ``channels`` channels, a causal shift filter of ``shift_taps`` taps
    on the keys and a diagonal state-space filter of ``state`` modes per channel."""

    channels: int | None = setting(None, "Channels of the q, k, v projections [default: d+1] "
                                   "(h3 model).", minimum=1, maximum=4096)
    state: int = setting(4, "Diagonal state-space modes per channel (h3 model).", minimum=1,
                         maximum=256)
    shift_taps: int = setting(2, "Taps of the shift filter on the keys (h3 model; 1: none).",
                              minimum=1, maximum=64)
    init_scale: float = setting(0.3, "Standard deviation of the initial projections.",
                                minimum=0, maximum=10.0, strict=True)

    def check(self, d: int) -> None:
        _check_d(d)

    def width(self, d: int) -> int:
        return d + 1 if self.channels is None else self.channels


@dataclass(frozen=True)
class GLAOptions:
    """One gated linear attention layer with key width ``key_dim`` and a scalar or a vector
    (per key coordinate) gate computed from each token."""

    key_dim: int | None = setting(None, "Key/query/value width [default: d+1] (gla model).",
                                  minimum=1, maximum=4096)
    gate: str = setting("scalar", "The gate: one number per token (scalar) or one per key "
                        "coordinate (vector) (gla model).", choices=("scalar", "vector"))
    gate_bias: float = setting(2.0, "Initial gate bias (sigmoid(2) = 0.88) (gla model).",
                               minimum=-20.0, maximum=20.0)
    init_scale: float = setting(0.3, "Standard deviation of the initial projections.",
                                minimum=0, maximum=10.0, strict=True)

    def check(self, d: int) -> None:
        _check_d(d)

    def width(self, d: int) -> int:
        return d + 1 if self.key_dim is None else self.key_dim


@dataclass(frozen=True)
class MambaOptions:
    """A stack of ``layers`` Mamba-style blocks (selective state space, Gu and Dao 2023) on a
    residual stream of ``width``."""

    layers: int = setting(2, "Mamba-style blocks (mamba model).", minimum=1, maximum=64)
    width: int = setting(32, "Residual stream and state-space channels (mamba model).",
                         minimum=1, maximum=4096)
    state: int = setting(8, "State size per channel (mamba model).", minimum=1, maximum=256)
    conv: int = setting(4, "Taps of the causal depthwise convolution (mamba model).",
                        minimum=1, maximum=64)
    scan: str = setting("parallel", "The recurrence: a parallel (log-depth) scan or the "
                        "sequential reference (mamba model).", choices=("parallel",
                                                                        "sequential"))
    init_scale: float = setting(0.1, "Standard deviation of the initial weights.", minimum=0,
                                maximum=10.0, strict=True)

    def check(self, d: int) -> None:
        _check_d(d)
