"""The options of the ``lsa`` model, declared once (``LSAModelOptions``: the settings of
``iclab train --model lsa`` and of a spec's groups), and the shape of one layer
(``LSAOptions``: what ``LinearSelfAttention`` is built from).

``layers`` is bounded where it is declared by the theory's own limit
(``iclab.theory.depth.multistep.MAX_LAYERS``): a run the theory cannot judge is refused with
one line before anything is trained or written.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclab.errors import ConfigError
from iclab.fields import setting
from iclab.theory.depth.multistep import MAX_LAYERS


@dataclass(frozen=True)
class LSAOptions:
    """Shape and convention of a one-layer LSA.

    d: input dimension; key_dim k and value_dim m (None means d+1); normalise: 1/n on the sum;
    attend_query: the query token attends to itself.
    """

    d: int
    key_dim: int | None = None
    value_dim: int | None = None
    normalise: bool = False
    attend_query: bool = False

    def __post_init__(self) -> None:
        if self.d < 1:
            raise ConfigError(f"d must be an integer >= 1, got {self.d}")
        for name, value in (("key_dim", self.key_dim), ("value_dim", self.value_dim)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value}")

    @property
    def k(self) -> int:
        return self.d + 1 if self.key_dim is None else self.key_dim

    @property
    def m(self) -> int:
        return self.d + 1 if self.value_dim is None else self.value_dim


INIT_SCHEMES = ("gd-subspace", "random")


@dataclass(frozen=True)
class LSAModelOptions:
    """The options of the ``lsa`` model (``iclab train --model lsa``), declared once."""

    key_dim: int | None = setting(None, "Key/query width k [default: d+1].", minimum=1,
                                  maximum=100_000)
    value_dim: int | None = setting(None, "Value width m [default: d+1].", minimum=1,
                                    maximum=100_000)
    normalise: bool = setting(False, "Divide the attention sum by n.")
    attend_query: bool = setting(False, "Let the query token attend to itself.")
    init_scale: float = setting(0.1, "Standard deviation of the initial weights.", minimum=0,
                                maximum=1e6, strict=True)
    init: str = setting("gd-subspace", "gd-subspace (u_x = m_y = 0 at the start, and kept "
                        "there when the family's optimum has no nuisance term; with several "
                        "layers, every layer starts at a noisy GD step) or random (every "
                        "weight random and free; can end in a non-global local minimum).",
                        choices=INIT_SCHEMES)
    layers: int = setting(1, "Layers L of linear self-attention with a residual stream "
                          "(1: the one-layer model; at most the theory's MAX_LAYERS).",
                          minimum=1, maximum=MAX_LAYERS, omit_default=True)
    parameterisation: str = setting("full", "full (every weight free) or sparse (Ahn et al.: "
                                    "each layer one step of preconditioned GD); sparse and "
                                    "looped use the L-layer model even at L = 1.",
                                    choices=("full", "sparse"), omit_default=True)
    looped: bool = setting(False, "One set of weights applied at every layer.",
                           omit_default=True)

    @property
    def deep(self) -> bool:
        """Whether these options build the L-layer model (``iclab.models.lsa.deep``)."""
        return self.layers > 1 or self.parameterisation == "sparse" or self.looped

    @property
    def depth(self) -> int | None:
        """The depth these options declare (``Model.depth_of``): L for the L-layer model,
        None for the one-layer model."""
        return self.layers if self.deep else None
