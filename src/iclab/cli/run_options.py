"""The options of a command that makes a run's config (``iclab train``, ``iclab dynamics``,
``iclab theory``), by owner: the chosen model's and the chosen family's own.

``--model`` and ``--family`` are read from the command line first (``option_argument``); the
command then has the fixed sections' options, the task section of that family (its options and
its extensions', ``iclab.config.task_section``) and that model's options, each with its own
declared default in ``--help``. Every other model's and family's options are there too but
hidden, so that a misplaced one is refused with a line naming its owner ("--sparsity applies
only to family sparse-linear, not 'linear-gaussian'") instead of click's "no such option".
A matrix option is read from its .npy file by its declared loader, after every scalar option
is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from iclab.config.sections import DEFAULT_MODEL, MODEL_KEY, OptimConfig, RunConfig, TaskConfig
from iclab.config.task_section import task_section
from iclab.config.train import TrainConfig
from iclab.models.registry import ModelRegistry
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.fields import FieldInfo, field_infos, validate

Sections = list[tuple[type, str]]


class ConfigRegistries(Protocol):
    """The registries a run's options come from (a command's ``Registries``)."""

    @property
    def models(self) -> ModelRegistry: ...

    @property
    def families(self) -> FamilyRegistry: ...


def option_argument(args: list[str], name: str) -> str | None:
    """The value of the option ``name`` (``--model``) in ``args``, if given."""
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def run_sections(registries: ConfigRegistries, model: str | None, family: str | None,
                 fixed: bool = True) -> tuple[Sections, Sections]:
    """(visible, hidden) option sections: the task section of ``family`` (default
    linear-gaussian), the fixed sections (unless ``fixed`` is False) and ``model``'s options
    (default lsa; none when ``model`` is "", for a command without a model); hidden: every
    other family's options and (with a model) every other model's, each noting its owner."""
    model_class = registries.models.get(model or DEFAULT_MODEL) if model != "" else None
    model_fields = field_infos(model_class.options_class) if model_class else {}
    family = family or TaskConfig.family
    visible: Sections = [(task_section(registries.families, family, model_fields), "")]
    if fixed:
        visible += [(OptimConfig, ""), (RunConfig, "")]
    if model_class is not None:
        visible.append((model_class.options_class, ""))
    hidden: Sections = [(m.options_class, f" (model {m.name})")
                        for m in registries.models.models()
                        if model_class is not None and m is not model_class]
    hidden += [(task_section(registries.families, name), f" (family {name})")
               for name in registries.families.names if name != family]
    return visible, hidden


def matrix_infos(sections: Sections) -> dict[str, FieldInfo]:
    """name -> declaration of every matrix option of ``sections``."""
    return {name: info for cls, _ in sections for name, (_, info) in field_infos(cls).items()
            if info.kind == "matrix"}


def _misplaced(name: str, model_name: str, family: str,
               registries: ConfigRegistries) -> ConfigError:
    """The one line for an option the chosen model and family do not have."""
    owners = [f"model {m.name}" for m in registries.models.models()
              if name in field_infos(m.options_class)]
    owners += [f"family {f}" for f in registries.families.takers(name)]
    return ConfigError(f"--{name.replace('_', '-')} applies only to "
                       f"{' or '.join(owners) or 'no model or family'}, not model "
                       f"{model_name!r} with family {family!r}")


def _selected(values: dict[str, Any], registries: ConfigRegistries) -> str | None:
    """The one model an option given without --model chooses (``Model.selected_by``:
    ``--target`` chooses lsa-cot), or None."""
    given = {key for key, value in values.items() if value is not None}
    chosen = [m.name for m in registries.models.models() if given & set(m.selected_by)]
    return chosen[0] if len(chosen) == 1 else None


def config_from_options(values: dict[str, Any], registries: ConfigRegistries) -> TrainConfig:
    """The config of the given option values (None = not given), its scalar values checked
    before any matrix file is read (the family itself is checked, once, by ``run_training``).
    """
    model_name = values.pop(MODEL_KEY, None) or _selected(values, registries) or DEFAULT_MODEL
    given = {key: value for key, value in values.items() if value is not None}
    family = given.get("family", TaskConfig.family)
    visible, _ = run_sections(registries, model_name, family)
    names = {name for cls, _ in visible for name in field_infos(cls)}
    for name in given:
        if name not in names:
            raise _misplaced(name, model_name, family, registries)
    matrices = {key: info for key, info in matrix_infos(visible).items() if key in given}
    scalars = {key: value for key, value in given.items() if key not in matrices}
    if model_name != DEFAULT_MODEL:
        scalars[MODEL_KEY] = model_name
    config = TrainConfig.from_json(scalars, registries.models, families=registries.families)
    if not matrices:
        return config
    for section in (config.task, config.optim, config.run, config.model):
        validate(section)  # scalar options first, before any file is read
    loaded = {key: _loaded(info.load, given[key], config) for key, info in matrices.items()}
    return TrainConfig.from_json({**scalars, **loaded}, registries.models,
                                 families=registries.families)


def _loaded(load: Callable[[str, int, int], Any] | None, path: str,
            config: TrainConfig) -> Any:
    """The matrix in ``path`` as a nested list, checked by its option's loader."""
    if load is None:
        raise ConfigError(f"{path}: this matrix option declares no loader")
    return load(path, config.task.d, config.task.n).tolist()
