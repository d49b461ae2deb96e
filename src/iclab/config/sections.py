"""The fixed sections of a training run's configuration: ``TaskConfig`` (the family and the
keys every family has; its own options join them in ``iclab.config.task_section``),
``OptimConfig`` (how the model is fitted) and ``RunConfig`` (seed, device, bookkeeping). Each
field is declared once (``iclab.utils.fields.setting``); ``TrainConfig``
(``iclab.config.train``) puts them together with the model's own options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iclab.utils.fields import REQUIRED, field_infos, setting

SAMPLERS = ("auto", "statistics", "prompts")
SCHEDULES = ("cosine", "constant")
OPTIMIZERS = ("adam", "sgd")
DEVICES = ("cpu", "cuda", "auto")
MEMORY_LIMIT_BYTES = 8 * 1024**3
"""The largest batch of whole prompts (float32) a run may ask for: 8 GiB."""


@dataclass(frozen=True)
class TaskConfig:
    """The task family a run trains on: the keys every family has. A family's own options
    (and those of its extensions) join these in its task section
    (``iclab.config.task_section``)."""

    d: int = setting(REQUIRED, "Input dimension d >= 1.", minimum=1, maximum=4096)
    n: int = setting(REQUIRED, "Examples per prompt n >= 1.", minimum=1, maximum=1_000_000)
    sigma: float = setting(0.0, "Label noise sigma >= 0.", minimum=0, maximum=1e4)
    family: str = setting("linear-gaussian", "Task family: a registered name (iclab families) "
                          "or MODULE:FUNCTION or FILE.py:FUNCTION.")

    option_keys: ClassVar[dict[str, str]] = {}
    """Flat key -> option name of the family's (and its extensions') options, in a family's
    task section (none here)."""


@dataclass(frozen=True)
class OptimConfig:
    """How the model is fitted."""

    # steps, batch, lr: the cheapest found that keep Theorem 1's verdict with margin (eta
    # error < 0.5 %, isotropy error < 1 %, d in {5, 10}, n = 20); see benchmarks/README.md.
    steps: int = setting(800, "Optimisation steps.", minimum=1, maximum=100_000_000)
    batch: int = setting(8192, "Fresh prompts per step.", minimum=1, maximum=10_000_000)
    lr: float = setting(0.005, "The initial learning rate (Adam's or SGD's).", minimum=0,
                        maximum=1e15, strict=True)
    lr_schedule: str = setting("cosine", "cosine (decayed to 0) or constant.",
                               choices=SCHEDULES)
    warmup: int = setting(0, "Steps over which the learning rate rises linearly to its "
                          "schedule (full deep lsa: 50).", minimum=0,
                          maximum=100_000_000, omit_default=True)
    sampler: str = setting("auto", "statistics (cost independent of n), prompts, or auto "
                           "(statistics wherever the family and model support it).",
                           choices=SAMPLERS)
    exact: bool = setting(False, "Train on the exact population loss (float64 L-BFGS, no "
                          "sampling).")
    optimizer: str = setting("adam", "adam, or sgd (plain stochastic gradient descent: a run "
                             "then has the time axis t = sum of the learning rates, lr x step "
                             "with --lr-schedule constant; docs/guide/dynamics.md).",
                             choices=OPTIMIZERS, omit_default=True)
    momentum: float = setting(0.0, "SGD's heavy-ball momentum in [0, 1) (sgd only).",
                              minimum=0, maximum=0.999, omit_default=True)
    weight_decay: float = setting(0.0, "Decoupled weight decay lambda: theta <- theta (1 - lr "
                                  "lambda) before each step (AdamW with adam; with sgd and no "
                                  "momentum the same as an L2 penalty lambda |theta|^2 / 2).",
                                  minimum=0, maximum=1e6, omit_default=True)
    clip_grad: float | None = setting(None, "Clip the gradient's norm to this before each "
                                      "Adam step [default: no clipping; 1 for deep lsa].",
                                      minimum=0, strict=True, maximum=1e12,
                                      omit_default=True)
    pretrain_prompts: int | None = setting(
        None, "A fixed pretraining set of P whole prompts drawn once with the seed, each "
        "step's batch taken from it [default: fresh prompts every step].", minimum=1,
        maximum=100_000_000, omit_default=True)
    curriculum_every: int | None = setting(
        None, "Steps between curriculum increments (Garg et al.: 2000) [default: no "
        "curriculum].", minimum=1, maximum=100_000_000, omit_default=True)
    curriculum_d_start: int | None = setting(
        None, "Effective d at step 0 of the curriculum [default: d].", minimum=1,
        maximum=4096, omit_default=True)
    curriculum_n_start: int | None = setting(
        None, "Examples per prompt at step 0 of the curriculum [default: n].", minimum=1,
        maximum=1_000_000, omit_default=True)
    curriculum_d_increment: int = setting(
        1, "Rise of the effective d at each curriculum increment.", minimum=0, maximum=4096,
        omit_default=True)
    curriculum_n_increment: int = setting(
        2, "Rise of the examples per prompt at each curriculum increment.", minimum=0,
        maximum=1_000_000, omit_default=True)


@dataclass(frozen=True)
class RunConfig:
    """Seed, device and bookkeeping."""

    seed: int = setting(0, "Seed of every random draw.", minimum=0, maximum=2**62)
    device: str = setting("cpu", "cpu, cuda, or auto (cuda where available, else "
                          "cpu).", choices=DEVICES)
    checkpoint_every: int = setting(500, "Steps between checkpoints.", minimum=1,
                                    maximum=100_000_000)
    checkpoints: int | None = setting(
        None, "Keep K model checkpoints on a log scale of steps (step 0, then round(T^(i/K)) "
        "for i = 1..K-1), plus the last, in checkpoints/ (iclab development reads them) "
        "[default: none].", minimum=1, maximum=100_000, omit_default=True)
    log_every: int = setting(50, "Steps between metrics lines.", minimum=1,
                             maximum=100_000_000)
    eval_prompts: int = setting(100_000, "Fresh prompts for the test loss.", minimum=2,
                                maximum=100_000_000)


SECTIONS: tuple[type, ...] = (TaskConfig, OptimConfig, RunConfig)


MODEL_KEY = "model"
DEFAULT_MODEL = "lsa"


def section_fields() -> dict[str, type]:
    """Every field name of the fixed sections -> its section class."""
    return {name: cls for cls in SECTIONS for name in field_infos(cls)}
