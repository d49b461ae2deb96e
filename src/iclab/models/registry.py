"""Models by name: one registry object holding the built-in models and the user's.

The core's model (``lsa``) registers exactly as a user's model does
(``register_builtin_models``), and so do the models of every study (``softmax``,
``transformer``, a user's installed study: ``iclab.utils.studies``). From the command line a
model is a registered name, ``MODULE:CLASS`` or ``path/to/file.py:CLASS`` (see
``iclab.utils.plugins``); no registry is global.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from typing import Any

from iclab.models.base import Model
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference, load_plugin
from iclab.utils.studies import Study, installed_studies


def check_model_class(model_class: Any, reference: str) -> type[Model]:
    """``model_class`` if it implements the model interface; ConfigError naming what is
    missing otherwise."""
    if not (inspect.isclass(model_class) and issubclass(model_class, Model)):
        raise ConfigError(f"model {reference!r} must be a subclass of iclab.models.Model, "
                          f"got {model_class!r}")
    options = model_class.options_class
    if not dataclasses.is_dataclass(options) or not isinstance(options, type):
        raise ConfigError(f"model {reference!r}: options_class must be a dataclass")
    if model_class.create.__func__ is Model.create.__func__:  # type: ignore[attr-defined]
        raise ConfigError(f"model {reference!r} must define the classmethod create()")
    return model_class


class ModelRegistry:
    """Models by name: built-ins (unless ``builtins=False``: the core's and those of
    ``studies``, every installed study by default), those registered here, and plug-in
    references."""

    def __init__(self, builtins: bool = True, studies: Sequence[Study] | None = None) -> None:
        self._models: dict[str, type[Model]] = {}
        if builtins:
            register_builtin_models(self)
            for study in installed_studies() if studies is None else studies:
                self.add_study(study)

    def add_study(self, study: Study) -> None:
        """Register the models ``study`` declares (``Study.models``)."""
        for model_class in study.models():
            self.register(model_class)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._models)

    def models(self) -> tuple[type[Model], ...]:
        return tuple(self._models.values())

    def allowed(self) -> str:
        return ", ".join((*self._models, "MODULE:CLASS", "FILE.py:CLASS"))

    def register(self, model_class: type[Model], name: str | None = None) -> None:
        """Add a model class under ``name`` (default: its ``name`` attribute)."""
        declared = inspect.isclass(model_class) and issubclass(model_class, Model)
        key = name or (model_class.name if declared else None)
        if not isinstance(key, str) or not key:
            raise ConfigError(f"model {model_class!r} needs a name")
        check_model_class(model_class, key)
        if key in self._models:
            raise ConfigError(f"model {key!r} already exists; pick another name")
        self._models[key] = model_class

    def get(self, name: str) -> type[Model]:
        """The model class called ``name`` (a registered name or a plug-in reference)."""
        if not isinstance(name, str):
            raise ConfigError(f"model must be a name, got {name!r}")
        known = self._models.get(name)
        if known is not None:
            return known
        if is_plugin_reference(name):
            return check_model_class(load_plugin(name, "model"), name)
        raise ConfigError(f"unknown model {name!r}; registered models: {self.allowed()}")


def register_builtin_models(registry: ModelRegistry) -> None:
    """Register the core's model (``lsa``) on ``registry``, exactly as a user registers
    theirs (the studies' models come from their declarations)."""
    from iclab.models.lsa.layer import LinearSelfAttention

    registry.register(LinearSelfAttention)
