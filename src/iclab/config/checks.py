"""The checks of a training run's configuration that span its sections and its family:
``check_config`` (``TrainConfig.validate``) builds the family once, tries a user's model or
family on it, and refuses every combination that cannot run, with one line naming the value
and what is allowed, before anything is written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclab.config.curriculum import supports_curriculum
from iclab.config.sections import MEMORY_LIMIT_BYTES, OptimConfig
from iclab.config.task_section import option_values
from iclab.models.base import Model
from iclab.models.probe import probe_plugins
from iclab.tasks.base import TaskFamily
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.batches import shared_statistics_kind
from iclab.utils.errors import ConfigError
from iclab.utils.fields import validate

if TYPE_CHECKING:
    from iclab.config.train import TrainConfig


def supports_statistics(task: TaskFamily, model_class: type[Model]) -> bool:
    """Whether the family can draw the sufficient statistics the model reads."""
    return shared_statistics_kind(task, model_class) is not None


def check_config(config: TrainConfig, families: FamilyRegistry) -> TaskFamily:
    """Raise ConfigError naming the first bad value of ``config``; return the task family,
    built once from ``families``."""
    for section in (config.task, config.optim, config.run, config.model):
        validate(section)
    families.check_name(config.task.family)
    config.model_class().check_options(config.model, config.task.d)  # before any file
    model_class = config.built_class()
    model_class.check_prompt_length(config.model, config.task.n)
    _check_size(config)
    task = config.make_task(families)
    probe_plugins(config.model_class(), config.model_name, config.task.d, config.task.n,
                  config.model, task, config.run.seed)  # a user's model or family, tried here
    if config.optim.sampler == "statistics" and not supports_statistics(task, model_class):
        raise ConfigError(
            f"sampler statistics needs a family with the sufficient-statistic sampler "
            f"(linear-gaussian with Gaussian independent covariates, anisotropic) and a "
            f"model that reads it; got family {config.task.family!r}{_law_note(config)}, "
            f"model {config.model_name!r}; use prompts or auto")
    _check_finite_data(config, task)
    if config.optim.exact:
        _check_exact(config, task, model_class)
    _check_curriculum(config, task)
    if config.run.checkpoints is not None and config.run.checkpoints > config.optim.steps:
        raise ConfigError(f"checkpoints must be at most steps ({config.optim.steps}): K "
                          f"checkpoints are K distinct steps of the run, got "
                          f"{config.run.checkpoints}")
    if config.optim.momentum and config.optim.optimizer != "sgd":
        raise ConfigError(f"momentum applies to --optimizer sgd only; got optimizer "
                          f"{config.optim.optimizer!r} with momentum {config.optim.momentum:g}")
    return task


def _check_finite_data(config: TrainConfig, task: TaskFamily) -> None:
    """A task pool needs a one-layer model; a fixed pretraining set, whole prompts."""
    if task.task_pool is not None and config.depth() is not None:
        raise ConfigError("tasks/task_pool apply to one-layer models only (the theory of "
                          "a pool is the one-layer LSA's); leave layers at 1")
    if task.task_pool is not None and config.optim.exact:
        raise ConfigError("exact does not apply to a task pool (its exact optimum is "
                          "iclab theory --task-pool's); train with Adam")
    if config.optim.pretrain_prompts is not None and config.resolved_sampler(task) != "prompts":
        raise ConfigError(f"pretrain_prompts needs the prompts sampler (a fixed set of "
                          f"whole prompts); got sampler {config.resolved_sampler(task)!r}")


def _check_curriculum(config: TrainConfig, task: TaskFamily) -> None:
    if config.curriculum() is None:
        return
    if config.optim.pretrain_prompts is not None:
        raise ConfigError("the curriculum and pretrain_prompts do not combine: a fixed "
                          "pretraining set has one d and n; leave one of them out")
    sampler = config.resolved_sampler(task)
    if sampler != "prompts":
        raise ConfigError(f"the curriculum trains on whole prompts; sampler {sampler!r} "
                          f"does not apply (use prompts or auto)")
    if not supports_curriculum(task):
        raise ConfigError(f"the curriculum needs a family drawn on its inputs or a "
                          f"linear Gaussian one; got {config.task.family!r}"
                          f"{_law_note(config)}")


def _law_note(config: TrainConfig) -> str:
    """", x_law ..." / ", correlated contexts" where the linear family has them (the
    covariates study's options)."""
    values = option_values(config.task)
    law = values.get("x_law")
    note = "" if law in (None, "gaussian") else f" with x_law {law!r}"
    if values.get("context_correlation") is not None \
            or values.get("context_covariance") is not None:
        note += " with correlated contexts"
    return note


def _check_size(config: TrainConfig) -> None:
    t, o = config.task, config.optim
    width = config.model_class().token_width(config.model, t.d)
    per_prompt = (t.n + 1) * width * 4
    largest = max(o.batch, o.pretrain_prompts or 0,
                  min(config.run.eval_prompts, 4_000_000 // ((t.n + 1) * (t.d + 1)) or 1))
    weights = 16 * config.model_class().parameter_count(config.model, t.d)  # float32: +
    if weights > MEMORY_LIMIT_BYTES:                # gradients, Adam's two moments
        raise ConfigError(f"model {config.model_name!r} of these options needs about "
                          f"{weights / 1024**3:.0f} GiB (weights, gradients, optimiser "
                          f"state); the limit is {MEMORY_LIMIT_BYTES // 1024**3} GiB: lower "
                          f"the widths or layers")
    if per_prompt * largest > MEMORY_LIMIT_BYTES or width * width * 8 > MEMORY_LIMIT_BYTES:
        raise ConfigError(
            f"d={t.d}, n={t.n}, batch={o.batch} and width {width} need about "
            f"{per_prompt * largest / 1024**3:.0f} GiB per batch; the limit is "
            f"{MEMORY_LIMIT_BYTES // 1024**3} GiB: lower batch, n or d")


def _check_exact(config: TrainConfig, task: TaskFamily, model_class: type[Model]) -> None:
    if not task.gaussian or not model_class.has_exact_loss:
        raise ConfigError(
            f"exact training needs a linear Gaussian family (linear-gaussian with Gaussian "
            f"independent covariates, anisotropic) and a model with an exact loss; got "
            f"family {config.task.family!r}{_law_note(config)}, model {config.model_name!r}")
    defaults = OptimConfig()
    for name in ("batch", "lr", "lr_schedule", "warmup", "sampler", "optimizer", "momentum",
                 "weight_decay"):
        default = getattr(defaults, name)
        if getattr(config.optim, name) != default:
            raise ConfigError(
                f"{name} does not apply to exact training (L-BFGS on the exact loss); "
                f"leave it at {default!r}, got {getattr(config.optim, name)!r}")
