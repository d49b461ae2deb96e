"""The exact, JSON-serialisable configuration of a training run: ``TrainConfig`` puts the
fixed sections of ``iclab.config.sections`` (task, optimiser, run) together with the model (a
name, ``model``, default ``lsa``, and that model's own options object).

The task section is the family's (``iclab.config.task_section``: the core's keys and the
options the family and its extensions declare). The JSON form is flat, with the same keys as
iclab 0.1's config.json (``model`` and later fields are left out while at their defaults), so
older run folders and spec files load and keep their config hash. A run is reproducible bit
for bit on the CPU from this object alone: covariances are stored as matrices, and every
random draw is seeded from ``seed``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from iclab.config.checks import check_config, supports_statistics
from iclab.config.curriculum import Curriculum, make_curriculum
from iclab.config.schedule import elapsed_time, learning_rate
from iclab.config.sections import (
    DEFAULT_MODEL,
    MODEL_KEY,
    OptimConfig,
    RunConfig,
    TaskConfig,
)
from iclab.config.task_section import LEGACY_NULL_KEYS, option_values, task_section
from iclab.models.base import Model
from iclab.models.registry import ModelRegistry
from iclab.tasks.base import TaskFamily
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos, from_flat, to_flat


def _among(values: dict[str, Any], section: type) -> dict[str, Any]:
    """The entries of ``values`` that are fields of ``section``."""
    keys = field_infos(section)
    return {key: value for key, value in values.items() if key in keys}


def _unknown_keys(data: dict[str, Any], known: set[str], family: str, model_name: str,
                  families: FamilyRegistry) -> None:
    """ConfigError naming the first key of ``data`` that is not ``known``: one another
    family declares, or any other."""
    unknown = sorted(str(key) for key in set(data) - known
                     if not (key in LEGACY_NULL_KEYS and data[key] is None))
    for key in unknown:
        takers = families.takers(key)
        if takers:
            raise ConfigError(f"{key} applies only to family {' or '.join(takers)}, not "
                              f"{family!r}")
    if unknown:
        raise ConfigError(f"unknown config keys {unknown} for model {model_name!r} and family "
                          f"{family!r}; allowed: {sorted(known)}")


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
    family_registry: FamilyRegistry | None = dataclasses.field(default=None, compare=False,
                                                              repr=False)
    """The families the config was read with (``from_json``'s), which ``make_task`` builds
    from unless given others (None: the built-ins)."""

    def __post_init__(self) -> None:
        if self.model_type is None:
            object.__setattr__(self, "model_type", ModelRegistry().get(self.model_name))
        if self.model is None:
            object.__setattr__(self, "model", self.model_class().options_class())

    # --- the JSON form -------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The flat JSON form (iclab 0.1 keys; ``model`` only when not lsa): the task
        section's keys (the family's options qualified where the model has one of the same
        name), iclab 0.1's ``cov_x``, ``cov_w`` and ``width`` as null where neither the family
        nor the model has them (``LEGACY_NULL_KEYS``), then the model's, optimiser's and
        run's."""
        out: dict[str, Any] = {**to_flat(self.task)}
        model_fields = field_infos(type(self.model))
        for key in LEGACY_NULL_KEYS:
            if key not in out and key not in model_fields:
                out[key] = None
        if self.model_name != DEFAULT_MODEL:
            out[MODEL_KEY] = self.model_name
        out.update(to_flat(self.model))
        out.update(to_flat(self.optim))
        out.update(to_flat(self.run))
        return out

    @classmethod
    def from_json(cls, data: Any, models: ModelRegistry | None = None,
                  model_type: type[Model] | None = None,
                  families: FamilyRegistry | None = None) -> TrainConfig:
        """Parse and check the flat JSON form; ConfigError naming the first bad key/value.
        The model is looked up in ``models`` (default: the built-ins), unless its class is
        given as ``model_type``; the family's options in ``families`` (default: the
        built-ins)."""
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        model_name = data.get(MODEL_KEY, DEFAULT_MODEL)
        model_class = model_type or (models or ModelRegistry()).get(model_name)
        families = families or FamilyRegistry()
        family = data.get("family", TaskConfig.family)
        families.check_name(family)
        model_fields = field_infos(model_class.options_class)
        task_class = task_section(families, family, model_fields)
        known = {*field_infos(task_class), *field_infos(OptimConfig), *field_infos(RunConfig),
                 MODEL_KEY, *model_fields}
        _unknown_keys(data, known, family, model_name, families)
        try:
            options = from_flat(model_class.options_class, data)
            suggested = model_class.training_defaults(options)
            return cls(
                task=from_flat(task_class, data, required=("d", "n")),
                optim=from_flat(OptimConfig, {**_among(suggested, OptimConfig), **data}),
                run=from_flat(RunConfig, {**_among(suggested, RunConfig), **data}),
                model_name=model_name,
                model=options,
                model_type=model_class,
                family_registry=families,
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
                                     model_type=self.model_type if same else None,
                                     families=self.family_registry)

    # --- what the config describes ---------------------------------------------------------

    def make_task(self, families: FamilyRegistry | None = None) -> TaskFamily:
        """The task family this run trains on, built from ``families`` (default: those the
        config was read with, else the built-ins) with the options of its task section (a pool
        of tasks is drawn from the run's seed: docs/theory.md section 15)."""
        t = self.task
        registry = families or self.family_registry or FamilyRegistry()
        return registry.build(t.family, t.d, t.n, float(t.sigma), option_values(t),
                              self.run.seed)

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
        ``families`` (default: those the config was read with, else the built-ins;
        ``iclab.config.checks``)."""
        return check_config(self, families or self.family_registry or FamilyRegistry())
