"""The options of the ``transformer`` model (``iclab train --model transformer``), declared once."""

from __future__ import annotations

from dataclasses import dataclass

from iclab.utils.errors import ConfigError
from iclab.utils.fields import setting


@dataclass(frozen=True)
class TransformerOptions:
    """A pre-LayerNorm decoder: ``layers`` blocks of ``heads``-head causal attention and a GELU
    MLP of ``mlp_width`` (default 4 x ``width``) on a residual stream of ``width``.

    The defaults are a CPU-scale model (3 layers, 2 heads, width 64); Garg et al.'s standard
    configuration is 12 layers, 8 heads, width 256.
    """

    layers: int = setting(3, "Transformer blocks (transformer model).", minimum=1, maximum=256)
    heads: int = setting(2, "Attention heads per block (transformer model).", minimum=1,
                         maximum=256)
    width: int = setting(64, "Residual stream width (transformer model; divisible by heads).",
                         minimum=1, maximum=65_536)
    mlp_width: int | None = setting(None, "Hidden width of each block's MLP [default: "
                                    "4 x width].", minimum=1, maximum=262_144)
    dropout: float = setting(0.0, "Dropout on the residual branches while training "
                             "(seeded; 0: none).", minimum=0, maximum=0.9)
    max_examples: int = setting(128, "Longest prompt (examples, the query included) the "
                                "learned positions cover.", minimum=1, maximum=100_000)
    init_scale: float = setting(0.1, "Standard deviation of the initial weights (GPT-2: "
                                "0.02, which at this scale sits on the loss plateau for "
                                "thousands of steps).", minimum=0, maximum=10.0, strict=True)
    bfloat16: bool = setting(False, "bfloat16 autocast on cuda (ignored on the CPU).")
    loops: int | None = setting(None, "Loop the blocks: the same `layers` blocks applied "
                                "LOOPS times, the prompt's embedding added before every pass "
                                "after the first (Yang et al. 2024) [default: no loop].",
                                minimum=1, maximum=64, omit_default=True)

    def check(self, d: int) -> None:
        """ConfigError (one line) unless these options build a model for dimension d."""
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ConfigError(f"d must be an integer >= 1, got {d!r}")
        if self.width % self.heads:
            raise ConfigError(f"width ({self.width}) must be divisible by heads "
                              f"({self.heads})")

    def hidden(self) -> int:
        """The MLP's hidden width: ``mlp_width`` or 4 x ``width``."""
        return 4 * self.width if self.mlp_width is None else self.mlp_width
