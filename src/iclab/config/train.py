"""The exact, JSON-serialisable configuration of a training run: ``TrainConfig`` puts the
fixed sections of ``iclab.config.sections`` (task, optimiser, run) together with the model (a
name, ``model``, default ``lsa``, and that model's own options object).

The JSON form is flat, with the same keys as iclab 0.1's config.json (``model`` and later
fields are left out while at their defaults), so older run folders and spec files load and
keep their config hash. A run is reproducible bit for bit on the CPU from this object alone:
covariances are stored as matrices, and every random draw is seeded from ``seed``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclab.config.schedule import elapsed_time, learning_rate
from iclab.config.sections import (
    DEFAULT_MODEL,
    LEGACY_RELU_WIDTH,
    MEMORY_LIMIT_BYTES,
    MODEL_KEY,
    OptimConfig,
    RunConfig,
    TaskConfig,
    section_fields,
)
from iclab.models.base import Model
from iclab.models.probe import probe_plugins
from iclab.models.registry import ModelRegistry
from iclab.tasks.base import TaskFamily
from iclab.tasks.covariate_laws import DEFAULT_LAW
from iclab.tasks.garg.curriculum import Curriculum, make_curriculum, supports_curriculum
from iclab.tasks.pool import with_pool
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.batches import shared_statistics_kind
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos, from_flat, to_flat, validate


def supports_statistics(task: TaskFamily, model_class: type[Model]) -> bool:
    """Whether the family can draw the sufficient statistics the model reads."""
    return shared_statistics_kind(task, model_class) is not None


def _among(values: dict[str, Any], section: type) -> dict[str, Any]:
    """The entries of ``values`` that are fields of ``section``."""
    keys = field_infos(section)
    return {key: value for key, value in values.items() if key in keys}


def _legacy_relu_width(data: dict[str, Any], model_class: type[Model]) -> dict[str, Any]:
    """``data`` with the old key ``width`` read as relu_width, for a model that has no
    ``width`` option (config files written before the rename); unchanged otherwise."""
    if LEGACY_RELU_WIDTH not in data or LEGACY_RELU_WIDTH in field_infos(
            model_class.options_class):
        return data
    rest = {key: value for key, value in data.items() if key != LEGACY_RELU_WIDTH}
    value = data[LEGACY_RELU_WIDTH]
    if value is None:
        return rest
    if rest.get("relu_width") not in (None, value):
        raise ConfigError(f"width (the old name of relu_width) = {value!r} and relu_width = "
                          f"{rest['relu_width']!r} disagree; give relu_width only")
    return {**rest, "relu_width": value}
@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run: task, model (name and options), optimiser,
    run bookkeeping. Build it with ``TrainConfig.from_json`` (flat keys) or directly."""

    task: TaskConfig
    optim: OptimConfig = dataclasses.field(default_factory=OptimConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)
    model_name: str = DEFAULT_MODEL
    model: Any = None
    """The model's options object (None: the model's defaults)."""

    def __post_init__(self) -> None:
        if self.model is None:
            options = ModelRegistry().get(self.model_name).options_class()
            object.__setattr__(self, "model", options)

    # --- the JSON form -------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The flat JSON form (iclab 0.1 keys; ``model`` only when not lsa). relu_width is
        written under its old key ``width`` (null when unset) for a model without a ``width``
        option, so config files and hashes of runs made before the rename stay the same;
        as ``relu_width`` (when set) for a model that has one (the transformer)."""
        out: dict[str, Any] = {**to_flat(self.task)}
        if LEGACY_RELU_WIDTH not in field_infos(type(self.model)):  # iclab 0.1's key
            out[LEGACY_RELU_WIDTH] = out.pop("relu_width", None)
        if self.model_name != DEFAULT_MODEL:
            out[MODEL_KEY] = self.model_name
        out.update(to_flat(self.model))
        out.update(to_flat(self.optim))
        out.update(to_flat(self.run))
        return out

    @classmethod
    def from_json(cls, data: Any, models: ModelRegistry | None = None) -> TrainConfig:
        """Parse and check the flat JSON form; ConfigError naming the first bad key/value."""
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        registry = models or ModelRegistry()
        model_name = data.get(MODEL_KEY, DEFAULT_MODEL)
        model_class = registry.get(model_name)
        data = _legacy_relu_width(data, model_class)
        known = {*section_fields(), MODEL_KEY, *field_infos(model_class.options_class)}
        unknown = sorted(str(key) for key in set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config keys {unknown} for model {model_name!r}; "
                              f"allowed: {sorted(known)}")
        try:
            options = from_flat(model_class.options_class, data)
            suggested = model_class.training_defaults(options)
            return cls(
                task=from_flat(TaskConfig, data, required=("d", "n")),
                optim=from_flat(OptimConfig, {**_among(suggested, OptimConfig), **data}),
                run=from_flat(RunConfig, {**_among(suggested, RunConfig), **data}),
                model_name=model_name,
                model=options,
            )
        except TypeError as error:
            raise ConfigError(f"bad config: {error}") from None

    @classmethod
    def flat(cls, **values: Any) -> TrainConfig:
        """The config of flat keyword values, as in config.json: ``TrainConfig.flat(d=5,
        n=20, sigma=0.5, steps=400)``."""
        return cls.from_json(values)

    def hash(self) -> str:
        """16 hex digits identifying the run: a hash of the canonical JSON form (names run
        folders in sweeps; stamped on checkpoints)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with flat keys changed (validated like ``from_json``)."""
        return TrainConfig.from_json({**self.to_json(), **changes})

    # --- what the config describes ---------------------------------------------------------

    def make_task(self, families: FamilyRegistry | None = None) -> TaskFamily:
        """The task family this run trains on. Parameters at their defaults are not passed,
        so a family that does not take them is not asked to."""
        t = self.task

        def matrix(value: list[list[float]] | None) -> np.ndarray | None:
            return None if value is None else np.asarray(value, dtype=np.float64)

        law = {} if t.x_law == DEFAULT_LAW else {"x_law": t.x_law}
        family = (families or FamilyRegistry()).make_family(
            t.family, t.d, t.n, float(t.sigma), t.relu_width, matrix(t.cov_x), matrix(t.cov_w),
            **law, context_correlation=t.context_correlation,
            context_covariance=matrix(t.context_covariance), sparsity=t.sparsity,
            tree_depth=t.tree_depth, network_width=t.network_width)
        pooled: TaskFamily = with_pool(family, t.tasks, t.task_pool, self.run.seed)
        return pooled  # a pool of tasks: docs/theory.md section 15

    def model_class(self, models: ModelRegistry | None = None) -> type[Model]:
        """The registered class; it builds ``built_class()`` for these options."""
        return (models or ModelRegistry()).get(self.model_name)

    def built_class(self, models: ModelRegistry | None = None) -> type[Model]:
        """The class of the model these options build (whose capabilities apply)."""
        return self.model_class(models).built_class(self.model)

    def depth(self, models: ModelRegistry | None = None) -> int | None:
        """The depth the run's model declares for its options (``Model.depth_of``): L for an
        L-layer stack judged against the optimal L-step GD, None for one layer."""
        return self.model_class(models).depth_of(self.model)

    def resolved_sampler(self, task: TaskFamily | None = None) -> str:
        """The sampler training uses: "statistics", "prompts" or "exact" (no sampling)."""
        if self.optim.exact:
            return "exact"
        if self.optim.sampler != "auto":
            return self.optim.sampler
        if self.optim.pretrain_prompts is not None or self.curriculum() is not None:
            return "prompts"
        family = task or self.make_task()
        return "statistics" if supports_statistics(family, self.built_class()) else "prompts"

    def curriculum(self) -> Curriculum | None:
        """Garg et al.'s schedule of the effective d and n, or None (no curriculum_every)."""
        o = self.optim
        return make_curriculum(self.task.d, self.task.n, o.curriculum_every,
                               o.curriculum_d_start, o.curriculum_n_start,
                               o.curriculum_d_increment, o.curriculum_n_increment)

    def learning_rate(self, step: int) -> float:
        """The learning rate at ``step`` (0-based; ``iclab.config.schedule``)."""
        return learning_rate(self.optim, step)

    def elapsed_time(self, steps: int) -> float:
        """The gradient-flow time after ``steps`` steps (``iclab.config.schedule``)."""
        return elapsed_time(self.optim, steps)

    # --- validation --------------------------------------------------------------------------

    def validate(self, families: FamilyRegistry | None = None,
                 models: ModelRegistry | None = None) -> TrainConfig:
        """Raise ConfigError naming the first bad value; return self when all are allowed."""
        for section in (self.task, self.optim, self.run, self.model):
            validate(section)
        (families or FamilyRegistry()).check_name(self.task.family)
        self.model_class(models).check_options(self.model, self.task.d)  # before any file
        model_class = self.built_class(models)
        model_class.check_prompt_length(self.model, self.task.n)
        self._check_size(models)
        task = self.make_task(families)
        probe_plugins(self.model_class(models), self.model_name, self.task.d, self.task.n,
                      self.model, task, self.run.seed)  # a user's model or family, tried here
        if self.optim.sampler == "statistics" and not supports_statistics(task, model_class):
            raise ConfigError(
                f"sampler statistics needs a family with the sufficient-statistic sampler "
                f"(linear-gaussian with Gaussian independent covariates, anisotropic) and a "
                f"model that reads it; got family {self.task.family!r}{self._law_note()}, "
                f"model {self.model_name!r}; use prompts or auto")
        self._check_finite_data(task, models)
        if self.optim.exact:
            self._check_exact(task, model_class)
        self._check_curriculum(task)
        if self.optim.momentum and self.optim.optimizer != "sgd":
            raise ConfigError(f"momentum applies to --optimizer sgd only; got optimizer "
                              f"{self.optim.optimizer!r} with momentum {self.optim.momentum:g}")
        return self

    def _check_finite_data(self, task: TaskFamily, models: ModelRegistry | None) -> None:
        """A task pool needs a one-layer model; a fixed pretraining set, whole prompts."""
        if getattr(task, "task_pool", None) is not None and self.depth(models) is not None:
            raise ConfigError("tasks/task_pool apply to one-layer models only (the theory of "
                              "a pool is the one-layer LSA's); leave layers at 1")
        if getattr(task, "task_pool", None) is not None and self.optim.exact:
            raise ConfigError("exact does not apply to a task pool (its exact optimum is "
                              "iclab theory --task-pool's); train with Adam")
        if self.optim.pretrain_prompts is not None and self.resolved_sampler(task) != "prompts":
            raise ConfigError(f"pretrain_prompts needs the prompts sampler (a fixed set of "
                              f"whole prompts); got sampler {self.resolved_sampler(task)!r}")

    def _check_curriculum(self, task: TaskFamily) -> None:
        if self.curriculum() is None:
            return
        if self.optim.pretrain_prompts is not None:
            raise ConfigError("the curriculum and pretrain_prompts do not combine: a fixed "
                              "pretraining set has one d and n; leave one of them out")
        sampler = self.resolved_sampler(task)
        if sampler != "prompts":
            raise ConfigError(f"the curriculum trains on whole prompts; sampler {sampler!r} "
                              f"does not apply (use prompts or auto)")
        if not supports_curriculum(task):
            raise ConfigError(f"the curriculum needs a family drawn on its inputs or a "
                              f"linear Gaussian one; got {self.task.family!r}"
                              f"{self._law_note()}")

    def _law_note(self) -> str:
        """", x_law ..." / ", correlated contexts" where the linear family has them."""
        t = self.task
        note = "" if t.x_law == TaskConfig.x_law else f" with x_law {t.x_law!r}"
        correlated = t.context_correlation is not None or t.context_covariance is not None
        return note + " with correlated contexts" * correlated

    def _check_size(self, models: ModelRegistry | None) -> None:
        t, o = self.task, self.optim
        width = max(getattr(self.model, "key_dim", None) or 0,
                    getattr(self.model, "value_dim", None) or 0, t.d + 1)
        per_prompt = (t.n + 1) * width * 4
        largest = max(o.batch, o.pretrain_prompts or 0,
                      min(self.run.eval_prompts, 4_000_000 // ((t.n + 1) * (t.d + 1)) or 1))
        weights = 16 * self.model_class(models).parameter_count(self.model, t.d)  # float32: +
        if weights > MEMORY_LIMIT_BYTES:                # gradients, Adam's two moments
            raise ConfigError(f"model {self.model_name!r} of these options needs about "
                              f"{weights / 1024**3:.0f} GiB (weights, gradients, optimiser "
                              f"state); the limit is {MEMORY_LIMIT_BYTES // 1024**3} GiB: lower "
                              f"the widths or layers")
        if per_prompt * largest > MEMORY_LIMIT_BYTES or width * width * 8 > MEMORY_LIMIT_BYTES:
            raise ConfigError(
                f"d={t.d}, n={t.n}, batch={o.batch} and width {width} need about "
                f"{per_prompt * largest / 1024**3:.0f} GiB per batch; the limit is "
                f"{MEMORY_LIMIT_BYTES // 1024**3} GiB: lower batch, n or d")

    def _check_exact(self, task: TaskFamily, model_class: type[Model]) -> None:
        if not task.gaussian or not model_class.has_exact_loss:
            raise ConfigError(
                f"exact training needs a linear Gaussian family (linear-gaussian with Gaussian "
                f"independent covariates, anisotropic) and a model with an exact loss; got "
                f"family {self.task.family!r}{self._law_note()}, model {self.model_name!r}")
        defaults = OptimConfig()
        for name in ("batch", "lr", "lr_schedule", "warmup", "sampler", "optimizer", "momentum"):
            default = getattr(defaults, name)
            if getattr(self.optim, name) != default:
                raise ConfigError(
                    f"{name} does not apply to exact training (L-BFGS on the exact loss); "
                    f"leave it at {default!r}, got {getattr(self.optim, name)!r}")
