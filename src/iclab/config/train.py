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

from iclab.config.checks import check_config, supports_statistics
from iclab.config.schedule import elapsed_time, learning_rate
from iclab.config.sections import (
    DEFAULT_MODEL,
    LEGACY_RELU_WIDTH,
    MODEL_KEY,
    OptimConfig,
    RunConfig,
    TaskConfig,
    section_fields,
)
from iclab.models.base import Model
from iclab.models.registry import ModelRegistry
from iclab.tasks.base import TaskFamily
from iclab.tasks.covariate_laws import DEFAULT_LAW
from iclab.tasks.garg.curriculum import Curriculum, make_curriculum
from iclab.tasks.pool import with_pool
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos, from_flat, to_flat


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
    model_type: type[Model] | None = dataclasses.field(default=None, compare=False,
                                                       repr=False)
    """The registered class of ``model_name``, resolved once when the config is made (from
    the caller's registry in ``from_json``; from the built-ins when None), so that nothing
    downstream looks the model up again."""

    def __post_init__(self) -> None:
        if self.model_type is None:
            object.__setattr__(self, "model_type", ModelRegistry().get(self.model_name))
        if self.model is None:
            object.__setattr__(self, "model", self.model_class().options_class())

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
    def from_json(cls, data: Any, models: ModelRegistry | None = None,
                  model_type: type[Model] | None = None) -> TrainConfig:
        """Parse and check the flat JSON form; ConfigError naming the first bad key/value.
        The model is looked up in ``models`` (default: the built-ins), unless its class is
        given as ``model_type``."""
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        model_name = data.get(MODEL_KEY, DEFAULT_MODEL)
        model_class = model_type or (models or ModelRegistry()).get(model_name)
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
                model_type=model_class,
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
        """A copy with flat keys changed (validated like ``from_json``; the same model class
        unless ``model`` changes)."""
        same = changes.get(MODEL_KEY, self.model_name) == self.model_name
        return TrainConfig.from_json({**self.to_json(), **changes},
                                     model_type=self.model_type if same else None)

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

    def model_class(self) -> type[Model]:
        """The registered class (resolved when the config was made); it builds
        ``built_class()`` for these options."""
        assert self.model_type is not None  # set by __post_init__
        return self.model_type

    def built_class(self) -> type[Model]:
        """The class of the model these options build (whose capabilities apply)."""
        return self.model_class().built_class(self.model)

    def depth(self) -> int | None:
        """The depth the run's model declares for its options (``Model.depth_of``): L for an
        L-layer stack judged against the optimal L-step GD, None for one layer."""
        return self.model_class().depth_of(self.model)

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

    def validate(self, families: FamilyRegistry | None = None) -> TrainConfig:
        """Raise ConfigError naming the first bad value; return self when all are allowed."""
        self.checked_task(families)
        return self

    def checked_task(self, families: FamilyRegistry | None = None) -> TaskFamily:
        """Validate (as ``validate``) and return the task family, built once from
        ``families`` (default: the built-ins; ``iclab.config.checks``)."""
        return check_config(self, families or FamilyRegistry())
