"""Task families by name: the built-in ones, user-registered ones, and MODULE:FUNCTION.

Built in (``FAMILY_NAMES``): ``linear-gaussian`` (Sigma_x, Sigma_w from ``cov_x``/``cov_w``),
``relu``, ``two-layer-relu`` (``width``, default 8) and ``anisotropic`` (see
``iclab.tasks.nonlinear``).

A user adds a family with a function that draws f's values on given inputs,

    def draw(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        # inputs: (B, k, d) drawn from N(0, I); draw one f per row from ``generator``
        # and return its values at the row's k inputs: (B, k).

either in Python, ``registry = FamilyRegistry(); registry.register_family("cubic", draw)``
then ``registry.make_family("cubic", d, n, sigma)``, or from the command line as
``--family my_module:draw`` (importable, or a file my_module.py in the working directory; a
``rotation_invariant = True`` attribute on the function declares f's law rotation-invariant).
No registry is global: a ``FamilyRegistry`` is an ordinary object the caller owns.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from iclab.errors import ConfigError
from iclab.tasks.base import check_scalars
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import (
    DEFAULT_WIDTH,
    DrawFunction,
    FunctionTask,
    ReluTask,
    TwoLayerReluTask,
    anisotropic_task,
)

FAMILY_NAMES = ("linear-gaussian", "relu", "two-layer-relu", "anisotropic")
Family = LinearGaussian | ReluTask | TwoLayerReluTask | FunctionTask
"""Every task family ``make_family`` returns."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class CustomFamily:
    """A registered user family: its draw function and whether f's law is rotation-invariant."""

    draw: DrawFunction
    rotation_invariant: bool = False


def allowed_names(extra: tuple[str, ...] = ()) -> str:
    """The allowed family names, for error messages."""
    return ", ".join((*FAMILY_NAMES, *extra, "MODULE:FUNCTION"))


def check_family_name(name: str) -> None:
    """Raise ConfigError unless ``name`` is a built-in family or has the MODULE:FUNCTION form."""
    if not isinstance(name, str) or (name not in FAMILY_NAMES and not _SPEC.match(name)):
        raise ConfigError(f"unknown family {name!r}; allowed: {allowed_names()}")


def load_draw_function(spec: str) -> CustomFamily:
    """Import ``module:function`` and wrap the function as a user family."""
    if not _SPEC.match(spec):
        raise ConfigError(f"unknown family {spec!r}; allowed: {allowed_names()}")
    module_name, function_name = spec.split(":")
    cwd_missing = os.getcwd() not in sys.path and "" not in sys.path
    if cwd_missing:  # like ``python -m``: the working directory's modules are importable
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"family {spec!r}: cannot import module {module_name!r} ({error})") \
            from None
    finally:
        if cwd_missing:
            sys.path.remove(os.getcwd())
    draw = getattr(module, function_name, None)
    if not callable(draw):
        raise ConfigError(f"family {spec!r}: {module_name} has no function {function_name!r}")
    return CustomFamily(draw, bool(getattr(draw, "rotation_invariant", False)))


class FamilyRegistry:
    """The built-in families plus those registered on this object."""

    def __init__(self) -> None:
        self._custom: dict[str, CustomFamily] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """Built-in names, then registered names in registration order."""
        return (*FAMILY_NAMES, *self._custom)

    def register_family(
        self, name: str, draw: DrawFunction, *, rotation_invariant: bool = False
    ) -> None:
        """Add a family whose f's values on inputs (B, k, d) are drawn by ``draw``: (B, k)."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"family name {name!r} must be lower-case letters, digits, '-', '_' or '.'"
            )
        if name in self.names:
            raise ConfigError(f"family {name!r} already exists; pick another name")
        if not callable(draw):
            raise ConfigError(f"family {name!r}: draw must be callable, got {draw!r}")
        self._custom[name] = CustomFamily(draw, rotation_invariant)

    def make_family(
        self,
        name: str,
        d: int,
        n: int,
        sigma: float,
        width: int | None = None,
        cov_x: np.ndarray | None = None,
        cov_w: np.ndarray | None = None,
    ) -> Family:
        """The family ``name`` at (d, n, sigma); ``width`` only for two-layer-relu,
        ``cov_x``/``cov_w`` only for linear-gaussian."""
        if not isinstance(name, str):
            raise ConfigError(f"family must be a name, got {name!r}")
        if width is not None and name != "two-layer-relu":
            raise ConfigError(f"width applies only to family two-layer-relu, not {name!r}")
        if (cov_x is not None or cov_w is not None) and name != "linear-gaussian":
            raise ConfigError(
                f"covariances (cov_x, cov_w) apply only to family linear-gaussian, not {name!r}"
            )
        check_scalars(d, n, sigma)
        sigma = float(sigma)
        if name == "linear-gaussian":
            return LinearGaussian(d, n, sigma, cov_x, cov_w)
        if name == "relu":
            return ReluTask(d, n, sigma)
        if name == "two-layer-relu":
            return TwoLayerReluTask(d, n, sigma, DEFAULT_WIDTH if width is None else width)
        if name == "anisotropic":
            return anisotropic_task(d, n, sigma)
        custom = self._custom.get(name)
        if custom is None:
            if ":" not in name:
                extra = tuple(self._custom)
                raise ConfigError(f"unknown family {name!r}; allowed: {allowed_names(extra)}")
            custom = load_draw_function(name)
        return FunctionTask(d, n, sigma, custom.draw, name, custom.rotation_invariant)


def make_family(
    name: str,
    d: int,
    n: int,
    sigma: float,
    width: int | None = None,
    cov_x: np.ndarray | None = None,
    cov_w: np.ndarray | None = None,
) -> Family:
    """A built-in family (or MODULE:FUNCTION) by name; see ``FamilyRegistry.make_family``."""
    return FamilyRegistry().make_family(name, d, n, sigma, width, cov_x, cov_w)

