"""Task families by name: one registry object holding the built-in families and the user's.

The core's families register exactly as a user's family does (``register_builtin_families``):
``linear-gaussian`` (Sigma_x, Sigma_w from ``cov_x``/``cov_w``; the covariates' law
``x_law`` and correlated contexts ``context_correlation``/``context_covariance``, see
``iclab.tasks.linear_law``), ``relu``, ``two-layer-relu`` (``relu_width``, default 8;
``make_family``'s ``width``) and ``anisotropic`` (see ``iclab.tasks.nonlinear``); so do the
families of every study (Garg et al.'s ``sparse-linear``, ``decision-tree`` and
``relu-network``: ``iclab.studies.garg``), through the study's declaration
(``iclab.utils.studies``).

A user adds a family with a function that draws f's values on given inputs,

    def draw(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        # inputs: (B, k, d) drawn from N(0, I); draw one f per row from ``generator``
        # and return its values at the row's k inputs: (B, k).

either in Python, ``registry = FamilyRegistry(); registry.register_family("cubic", draw)``
then ``registry.make_family("cubic", d, n, sigma)``, or from the command line as
``--family my_module:draw`` (importable, or a file my_module.py in the working directory) or
``--family path/to/file.py:draw``; ``rotation_invariant = True`` and ``sign_symmetric = True``
attributes on the function declare those properties of f's law. No registry is global: a
``FamilyRegistry`` is an ordinary object the caller owns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iclab.tasks.base import TaskFamily, check_family, check_scalars
from iclab.tasks.covariate_laws import DEFAULT_LAW, allowed_laws
from iclab.tasks.linear_law import linear_family
from iclab.tasks.nonlinear import (
    DEFAULT_WIDTH,
    DrawFunction,
    FunctionTask,
    ReluTask,
    TwoLayerReluTask,
    anisotropic_task,
)
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference, load_plugin
from iclab.utils.studies import Study, installed_studies

FAMILY_NAMES = ("linear-gaussian", "relu", "two-layer-relu", "anisotropic")
"""The core's families, in the order ``iclab families`` lists them (the studies' follow)."""

Family = TaskFamily
"""Every task family ``make_family`` returns (kept as a name for older imports)."""

FamilyBuilder = Callable[..., TaskFamily]
"""(d, n, sigma, **parameters) -> a family; parameters are the entry's declared ones."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class FamilyEntry:
    """A registered family: how to build it and which parameters it takes.

    parameters: name -> help text (every other parameter is refused for this family);
    description: one line for ``iclab families``; plugin: whether the family is a user's
    draw function (whose failures are held to one line naming it as a plug-in).
    """

    name: str
    build: FamilyBuilder
    description: str
    parameters: dict[str, str] = field(default_factory=dict)
    plugin: bool = False


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"family name {name!r} must be lower-case letters, digits, '-', '_' or '.'"
        )
    return name


def _function_entry(name: str, draw: DrawFunction, rotation_invariant: bool,
                    sign_symmetric: bool) -> FamilyEntry:
    def build(d: int, n: int, sigma: float) -> TaskFamily:
        return FunctionTask(d, n, sigma, draw, name, rotation_invariant, sign_symmetric)

    kind = "rotation-invariant " if rotation_invariant else ""
    return FamilyEntry(name, build, f"user {kind}family: x ~ N(0, I), f drawn by {name}",
                       plugin=True)


def load_draw_function(spec: str) -> FamilyEntry:
    """Import ``module:function`` or ``path/file.py:function`` as a user family."""
    draw = load_plugin(spec, "family")
    if not callable(draw):
        raise ConfigError(f"family {spec!r}: {draw!r} is not a function")
    return _function_entry(spec, draw, bool(getattr(draw, "rotation_invariant", False)),
                           bool(getattr(draw, "sign_symmetric", False)))


class FamilyRegistry:
    """Task families by name: the built-ins (unless ``builtins=False``: the core's and those
    of ``studies``, every installed study by default) and those registered on this object,
    plus ``MODULE:FUNCTION`` / ``file.py:FUNCTION`` references."""

    def __init__(self, builtins: bool = True, studies: Sequence[Study] | None = None) -> None:
        self._entries: dict[str, FamilyEntry] = {}
        if builtins:
            register_builtin_families(self)
            for study in installed_studies() if studies is None else studies:
                self.add_study(study)

    def add_study(self, study: Study) -> None:
        """Register the families ``study`` declares (``Study.families``)."""
        for entry in study.families():
            if not isinstance(entry, FamilyEntry):
                raise ConfigError(f"study {study.name!r}: families must be FamilyEntry "
                                  f"objects, got {entry!r}")
            self.register(entry)

    def is_plugin(self, name: str) -> bool:
        """Whether the family ``name`` is a user's draw function (registered or by
        reference)."""
        known = self._entries.get(name)
        return known.plugin if known is not None else True

    @property
    def names(self) -> tuple[str, ...]:
        """Registered names in registration order (built-ins first)."""
        return tuple(self._entries)

    def entries(self) -> tuple[FamilyEntry, ...]:
        return tuple(self._entries.values())

    def allowed(self) -> str:
        """The allowed family names, for error messages."""
        return ", ".join((*self._entries, "MODULE:FUNCTION", "FILE.py:FUNCTION"))

    def register(self, entry: FamilyEntry) -> None:
        """Add a family; its name must be new."""
        _check_name(entry.name)
        if entry.name in self._entries:
            raise ConfigError(f"family {entry.name!r} already exists; pick another name")
        self._entries[entry.name] = entry

    def register_family(
        self, name: str, draw: DrawFunction, *, rotation_invariant: bool = False,
        sign_symmetric: bool = False,
    ) -> None:
        """Add a family whose f's values on inputs (B, k, d) are drawn by ``draw``: (B, k)."""
        _check_name(name)
        if not callable(draw):
            raise ConfigError(f"family {name!r}: draw must be callable, got {draw!r}")
        self.register(_function_entry(name, draw, rotation_invariant, sign_symmetric))

    def entry(self, name: str) -> FamilyEntry:
        """The entry called ``name`` (a registered name or a plugin reference)."""
        if not isinstance(name, str):
            raise ConfigError(f"family must be a name, got {name!r}")
        known = self._entries.get(name)
        if known is not None:
            return known
        if is_plugin_reference(name):
            return load_draw_function(name)
        raise ConfigError(f"unknown family {name!r}; allowed: {self.allowed()}")

    def check_name(self, name: str) -> None:
        """Raise ConfigError unless ``name`` is registered or has a plugin reference's form
        (the plugin itself is imported only when the family is made)."""
        if not isinstance(name, str) or (name not in self._entries
                                          and not is_plugin_reference(name)):
            raise ConfigError(f"unknown family {name!r}; allowed: {self.allowed()}")

    def make_family(
        self,
        name: str,
        d: int,
        n: int,
        sigma: float,
        width: int | None = None,
        cov_x: np.ndarray | None = None,
        cov_w: np.ndarray | None = None,
        **parameters: Any,
    ) -> TaskFamily:
        """The family ``name`` at (d, n, sigma) with its parameters (None = not given); a
        parameter the family does not declare is refused with one line."""
        entry = self.entry(name)
        given = {key: value for key, value in
                 {"relu_width": width, "cov_x": cov_x, "cov_w": cov_w, **parameters}.items()
                 if value is not None}
        for key in given:
            if key not in entry.parameters:
                takers = [e.name for e in self._entries.values() if key in e.parameters]
                where = f"family {' or '.join(takers)}" if takers else "no family"
                raise ConfigError(f"{key} applies only to {where}, not {name!r}")
        check_scalars(d, n, sigma)
        return check_family(entry.build(d, n, float(sigma), **given), name)


def register_builtin_families(registry: FamilyRegistry) -> None:
    """Register the core's families on ``registry``, exactly as a user registers theirs."""

    def linear_gaussian(d: int, n: int, sigma: float, cov_x: np.ndarray | None = None,
                        cov_w: np.ndarray | None = None, x_law: str = DEFAULT_LAW,
                        context_correlation: float | None = None,
                        context_covariance: np.ndarray | None = None) -> TaskFamily:
        return linear_family(d, n, sigma, cov_x, cov_w, x_law, context_correlation,
                             context_covariance)

    def two_layer(d: int, n: int, sigma: float, relu_width: int = DEFAULT_WIDTH) -> TaskFamily:
        return TwoLayerReluTask(d, n, sigma, relu_width)

    linear = {
        "cov_x": "Sigma_x, a (d, d) positive-definite matrix (default I)",
        "cov_w": "Sigma_w, a (d, d) positive-definite matrix (default I)",
        "x_law": f"law of x = Sigma_x^(1/2) z, z's coordinates iid standardised: "
                 f"{allowed_laws()} (default {DEFAULT_LAW})",
        "context_correlation": "AR(1) correlation rho in (-1, 1) between a prompt's "
                               "positions, the query last (Gaussian x)",
        "context_covariance": "R, the (n+1, n+1) positive-definite covariance of a prompt's "
                              "positions, the query last (Gaussian x)",
    }
    for entry in (
        FamilyEntry("linear-gaussian", linear_gaussian,
                    "x = Sigma_x^(1/2) z (z Gaussian by default), f(x) = w^T x with "
                    "w ~ N(0, Sigma_w)", linear),
        FamilyEntry("relu", ReluTask, "x ~ N(0, I), f(x) = relu(u^T x), u uniform on the sphere"),
        FamilyEntry("two-layer-relu", two_layer,
                    "x ~ N(0, I), f(x) = a^T relu(W x) / sqrt(m), Gaussian W and a",
                    {"relu_width": f"hidden width m >= 1 (default {DEFAULT_WIDTH})"}),
        FamilyEntry("anisotropic", anisotropic_task,
                    "control: x ~ N(0, I), w ~ N(0, diag(1/4 .. 4)), not rotation-invariant"),
    ):
        registry.register(entry)


def make_family(
    name: str,
    d: int,
    n: int,
    sigma: float,
    width: int | None = None,
    cov_x: np.ndarray | None = None,
    cov_w: np.ndarray | None = None,
) -> TaskFamily:
    """A built-in family (or a plugin reference) by name; see ``FamilyRegistry.make_family``."""
    return FamilyRegistry().make_family(name, d, n, sigma, width, cov_x, cov_w)
