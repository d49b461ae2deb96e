"""What a registered family declares: how it is built, its options (a dataclass of declared
settings, like a model's options) and its description; what a family extension declares (more
options of some families and how they change the family built); and the core's families.

A family's options are its own: ``two-layer-relu`` has ``width``, Garg et al.'s families have
``sparsity``, ``tree_depth`` and ``network_width``, ``linear-gaussian`` has ``cov_x`` and
``cov_w``; a study may extend a family with options of its own (the covariates study's
``x_law`` and correlated contexts, the pool study's ``tasks`` and ``task_pool``:
``FamilyExtension``). Each option is declared once with ``iclab.utils.fields.setting`` (type,
default, range, help), so its check, its ``iclab train`` option and its spec key come from the
declaration. Where a model's option has the same name (the transformer's ``width``), the
family's key is qualified with the family's ``short`` name (``relu_width``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclab.tasks.base import TaskFamily
from iclab.tasks.covariance import load_covariance
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import DEFAULT_WIDTH, ReluTask, TwoLayerReluTask, anisotropic_task
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos, setting

FamilyBuilder = Callable[[int, int, float, Any], TaskFamily]
"""(d, n, sigma, the family's options object) -> the family."""
ExtensionApply = Callable[[TaskFamily, Any, Any, int], TaskFamily]
"""(the family built so far, the extension's options, the family's options, seed) -> the
family (itself when the extension's options are at their defaults)."""


@dataclass(frozen=True)
class NoFamilyOptions:
    """The options of a family that has none."""


@dataclass(frozen=True)
class FamilyEntry:
    """A registered family: how to build it, its options and a one-line description.

    build: (d, n, sigma, options) -> the family, ``options`` an ``options_class`` instance
    (checked against its declarations before); plugin: the family is a user's draw function
    (its failures are held to one line naming it as a plug-in); short: the prefix of an
    option's key where a model's option has the same name (default: the name, '-' as '_').
    """

    name: str
    build: FamilyBuilder
    description: str
    options_class: type = NoFamilyOptions
    plugin: bool = False
    short: str = ""

    @property
    def prefix(self) -> str:
        return self.short or self.name.replace("-", "_")

    @property
    def parameters(self) -> dict[str, str]:
        """Option name -> its help, for ``iclab families``."""
        return {name: info.help for name, (_, info) in field_infos(self.options_class).items()}


@dataclass(frozen=True)
class FamilyExtension:
    """Options a study adds to some families, and how they change the family built.

    families: the names of the families it extends; options_class: its declared options;
    apply: (family, its options, the family's options, seed) -> the family."""

    name: str
    families: tuple[str, ...]
    options_class: type
    apply: ExtensionApply


def check_options_class(cls: Any, owner: str) -> None:
    """ConfigError unless ``cls`` is a frozen dataclass whose declared options all have
    defaults (a family is built from its name alone)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ConfigError(f"{owner}: options_class must be a dataclass, got {cls!r}")
    try:
        infos = field_infos(cls)
    except TypeError as error:
        raise ConfigError(f"{owner}: {error}") from None
    for name, (f, _) in infos.items():
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{owner}: option {name} needs a default")


@dataclass(frozen=True)
class LinearGaussianOptions:
    """The options of ``linear-gaussian``: its two covariances."""

    cov_x: list[list[float]] | None = setting(
        None, "Sigma_x as a (d, d) .npy file (linear-gaussian only).",
        load=lambda path, d, n: load_covariance(path, d))
    cov_w: list[list[float]] | None = setting(
        None, "Sigma_w as a (d, d) .npy file (linear-gaussian only).",
        load=lambda path, d, n: load_covariance(path, d))


@dataclass(frozen=True)
class TwoLayerReluOptions:
    """The option of ``two-layer-relu``: the width of its random networks."""

    width: int | None = setting(None, f"Hidden width m of two-layer-relu [default: "
                                f"{DEFAULT_WIDTH}].", minimum=1, maximum=100_000,
                                omit_default=True)


def matrix(value: list[list[float]] | None) -> np.ndarray | None:
    """A matrix option as a float64 array (None stays None)."""
    return None if value is None else np.asarray(value, dtype=np.float64)


def core_families() -> tuple[FamilyEntry, ...]:
    """The core's families, registered exactly as a user's are."""
    def linear(d: int, n: int, sigma: float, options: LinearGaussianOptions) -> TaskFamily:
        return LinearGaussian(d, n, sigma, matrix(options.cov_x), matrix(options.cov_w))

    def two_layer(d: int, n: int, sigma: float, options: TwoLayerReluOptions) -> TaskFamily:
        return TwoLayerReluTask(d, n, sigma, options.width or DEFAULT_WIDTH)

    return (
        FamilyEntry("linear-gaussian", linear,
                    "x = Sigma_x^(1/2) z (z Gaussian by default), f(x) = w^T x with "
                    "w ~ N(0, Sigma_w)", LinearGaussianOptions),
        FamilyEntry("relu", lambda d, n, sigma, options: ReluTask(d, n, sigma),
                    "x ~ N(0, I), f(x) = relu(u^T x), u uniform on the sphere"),
        FamilyEntry("two-layer-relu", two_layer,
                    "x ~ N(0, I), f(x) = a^T relu(W x) / sqrt(m), Gaussian W and a",
                    TwoLayerReluOptions, short="relu"),
        FamilyEntry("anisotropic", lambda d, n, sigma, options: anisotropic_task(d, n, sigma),
                    "control: x ~ N(0, I), w ~ N(0, diag(1/4 .. 4)), not rotation-invariant"),
    )
