"""The options of the ``lsa`` model, declared once: ``LSAOptions``, the settings of ``iclab
train --model lsa`` and of a spec's groups, from which ``LinearSelfAttention.create`` builds
one layer or the L-layer stack; ``LinearSelfAttention(d, options)`` builds the one layer and
``DeepLinearSelfAttention(d, options)`` the stack directly, each checking the options it
takes (``check_layer``, ``check_stack``).

``layers`` is bounded where it is declared by the theory's own limit
(``iclab.theory.depth.multistep.MAX_LAYERS``): a run the theory cannot judge is refused with
one line before anything is trained or written.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclab.theory.depth.multistep import MAX_LAYERS
from iclab.utils.errors import ConfigError
from iclab.utils.fields import setting

INIT_SCHEMES = ("gd-subspace", "random")
PARAMETERISATIONS = ("full", "sparse")
ONE_LAYER_FIELDS = ("key_dim", "value_dim", "normalise", "attend_query", "kq", "heads", "rank")
KQ_CHOICES = ("merged", "separate")


@dataclass(frozen=True)
class LSAOptions:
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
                                    choices=PARAMETERISATIONS, omit_default=True)
    looped: bool = setting(False, "One set of weights applied at every layer.",
                           omit_default=True)
    kq: str = setting("merged", "Key-query parameterisation of the heads (docs/guide/"
                      "dynamics.md): merged (one d x d matrix W_h per head) or separate "
                      "(keys K_h and queries Q_h of rank `rank`, W_h = K_h^T Q_h); "
                      "with --heads or separate, the multi-head model (values read the label, "
                      "keys and queries the inputs).", choices=KQ_CHOICES, omit_default=True)
    heads: int | None = setting(None, "Heads H of the multi-head model, outputs summed "
                                "[default: the classic one-head layer; 1 with kq separate].",
                                minimum=1, maximum=4096, omit_default=True)
    rank: int = setting(1, "Rank R of each head's keys and queries (kq separate).",
                        minimum=1, maximum=4096, omit_default=True)

    def check_layer(self, d: int) -> None:
        """ConfigError (one line) unless these options build one layer for dimension d:
        d, key_dim and value_dim integers >= 1, a known init, and not the L-layer model."""
        _check_positive("d", d)
        for name, value in (("key_dim", self.key_dim), ("value_dim", self.value_dim)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value}")
        if self.init not in INIT_SCHEMES:
            raise ConfigError(f"init must be one of {', '.join(INIT_SCHEMES)}; got "
                              f"{self.init!r}")
        if self.deep:
            raise ConfigError("these options build the L-layer model: use "
                              "LinearSelfAttention.create(d, options)")
        if self.kq not in KQ_CHOICES:
            raise ConfigError(f"kq must be one of {', '.join(KQ_CHOICES)}; got {self.kq!r}")
        if self.multi_head:
            self._check_heads(d)
        elif self.rank != 1:
            raise ConfigError(f"rank applies to kq separate only; got rank {self.rank} with kq "
                              f"merged: leave it at 1 or use --kq separate")

    def _check_heads(self, d: int) -> None:
        """ConfigError (one line) unless the multi-head model applies: heads and rank >= 1,
        rank at most d, the gd-subspace start, no key_dim, value_dim nor attend_query."""
        _check_positive("heads", self.head_count)
        _check_positive("rank", self.rank)
        if self.rank > d:
            raise ConfigError(f"rank must be at most d = {d}, got {self.rank}")
        for name in ("key_dim", "value_dim", "attend_query"):
            if getattr(self, name) != getattr(LSAOptions(), name):
                raise ConfigError(f"{name} does not apply to the multi-head model (heads or kq "
                                  f"separate); leave it at its default")
        if self.init != "gd-subspace":
            raise ConfigError("the multi-head model starts nuisance-free: init must be "
                              f"gd-subspace, got {self.init!r}")
        if self.kq == "merged" and self.rank != 1:
            raise ConfigError("rank applies to kq separate only; leave it at 1 with merged")

    @property
    def multi_head(self) -> bool:
        """Whether these options build the multi-head model (``iclab.models.lsa.heads``):
        ``heads`` given or ``kq`` separate."""
        return self.heads is not None or self.kq == "separate"

    @property
    def head_count(self) -> int:
        """H: ``heads``, or 1."""
        return 1 if self.heads is None else self.heads

    def check_stack(self, d: int) -> None:
        """ConfigError (one line) unless these options build the L-layer stack for dimension
        d (``iclab.models.lsa.deep``): d and layers integers >= 1, a known parameterisation
        and init, looped true or false, and the one-layer fields at their defaults."""
        _check_positive("d", d)
        _check_positive("layers", self.layers)
        if self.parameterisation not in PARAMETERISATIONS:
            raise ConfigError(f"parameterisation must be one of {', '.join(PARAMETERISATIONS)}; "
                              f"got {self.parameterisation!r}")
        if not isinstance(self.looped, bool):
            raise ConfigError(f"looped must be true or false, got {self.looped!r}")
        if self.init not in INIT_SCHEMES:
            raise ConfigError(f"init must be one of {', '.join(INIT_SCHEMES)}; got "
                              f"{self.init!r}")
        for name in ONE_LAYER_FIELDS:
            if getattr(self, name) != getattr(LSAOptions(), name):
                raise ConfigError(f"{name} applies to the one-layer lsa model only (layers = 1, "
                                  f"parameterisation full, not looped)")

    @property
    def stored_layers(self) -> int:
        """How many sets of weights the L-layer stack stores: 1 when looped, else L."""
        return 1 if self.looped else self.layers

    def key_width(self, d: int) -> int:
        """k: ``key_dim``, or d+1."""
        return d + 1 if self.key_dim is None else self.key_dim

    def value_width(self, d: int) -> int:
        """m: ``value_dim``, or d+1."""
        return d + 1 if self.value_dim is None else self.value_dim

    @property
    def deep(self) -> bool:
        """Whether these options build the L-layer model (``iclab.models.lsa.deep``)."""
        return self.layers > 1 or self.parameterisation == "sparse" or self.looped

    @property
    def depth(self) -> int | None:
        """The depth these options declare (``Model.depth_of``): L for the L-layer model,
        None for the one-layer model."""
        return self.layers if self.deep else None


def _check_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
