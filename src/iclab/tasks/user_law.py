"""User covariate laws: ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION``.

The function draws standardised coordinates (mean 0, identity covariance along the last axis):

    def draw(shape: tuple[int, ...], generator: torch.Generator,
             dtype: torch.dtype) -> torch.Tensor:
        # draws of ``shape`` from ``generator`` only

with optional attributes ``draw.fourth_moment = mu4`` (a float >= 1: it declares a product law
with that mu4 unless ``draw.product = False``) and ``draw.product`` (bool, default True).
``MODULE`` is importable or a file MODULE.py in the working directory.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import torch

from iclab.errors import ConfigError

MODULE_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
PATH_SPEC = re.compile(r"^(?P<path>.+\.py):(?P<function>[A-Za-z_]\w*)$")

LawFunction = Callable[[tuple[int, ...], torch.Generator, torch.dtype], torch.Tensor]
"""(shape, generator, dtype) -> standardised draws of ``shape``."""


def is_user_spec(text: str) -> bool:
    """Whether ``text`` has the form MODULE:FUNCTION or PATH.py:FUNCTION."""
    return bool(MODULE_SPEC.match(text) or PATH_SPEC.match(text))


@dataclass(frozen=True)
class UserLaw:
    """A user function's law: ``function(shape, generator, dtype)`` returns standardised draws."""

    spec: str
    function: LawFunction = field(compare=False)
    fourth_moment: float | None = None
    product: bool = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        values = self.function(tuple(shape), generator, dtype)
        if not isinstance(values, torch.Tensor) or tuple(values.shape) != tuple(shape):
            got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values)
            raise ConfigError(
                f"covariate law {self.spec}: the function must return a tensor of shape "
                f"{tuple(shape)}, got {got}"
            )
        return values.to(dtype)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _import_module(spec: str, module_name: str) -> ModuleType:
    cwd_missing = os.getcwd() not in sys.path and "" not in sys.path
    if cwd_missing:  # like ``python -m``: the working directory's modules are importable
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except Exception as error:  # the user's module: any failure is a configuration problem
        raise ConfigError(
            f"covariate law {spec!r}: cannot import module {module_name!r} ({_one_line(error)})"
        ) from None
    finally:
        if cwd_missing:
            sys.path.remove(os.getcwd())


def _load_file(spec: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"covariate law {spec!r}: file {str(path)!r} not found")
    module_spec = importlib.util.spec_from_file_location(f"iclab_user_law_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"covariate law {spec!r}: cannot load {str(path)!r} as Python")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:  # the user's file: any failure is a configuration problem
        raise ConfigError(
            f"covariate law {spec!r}: loading {str(path)!r} failed "
            f"({type(error).__name__}: {_one_line(error)})"
        ) from None
    return module


def load_user_law(spec: str) -> UserLaw:
    """Import ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION`` as a ``UserLaw``."""
    path_match = PATH_SPEC.match(spec)
    if path_match is not None:
        module = _load_file(spec, Path(path_match["path"]))
        function_name = path_match["function"]
    elif MODULE_SPEC.match(spec):
        module_name, function_name = spec.split(":")
        module = _import_module(spec, module_name)
    else:
        raise ConfigError(
            f"covariate law {spec!r}: a user law is MODULE:FUNCTION or PATH.py:FUNCTION"
        )
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ConfigError(f"covariate law {spec!r}: no function {function_name!r} there")
    mu4 = getattr(function, "fourth_moment", None)
    if mu4 is not None and (isinstance(mu4, bool) or not isinstance(mu4, int | float)
                            or not math.isfinite(mu4) or mu4 < 1):
        raise ConfigError(
            f"covariate law {spec!r}: fourth_moment must be a finite number >= 1 "
            f"(E z^4 >= (E z^2)^2 = 1), got {mu4!r}"
        )
    product = getattr(function, "product", True)
    if not isinstance(product, bool):
        raise ConfigError(f"covariate law {spec!r}: product must be True or False, got "
                          f"{product!r}")
    return UserLaw(spec, function, None if mu4 is None else float(mu4), product)
