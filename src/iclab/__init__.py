"""iclab: in-context learning of one-layer linear self-attention, checked against theory.

Importing the package does no work: every computation is behind an explicit call. The Python
API (``iclab.api``: ``train``, ``theory``, ``certify``, ``shift``, ``dynamics``, ``sweep``,
``reproduce``, ``export``, ``cache``) is imported on first use of one of its names, so
``import iclab`` imports neither torch nor numpy; ``iclab.Error`` is the one exception type it
raises. ``iclab.theory`` is also the package of the optima's formulas: the API makes it callable
(``help(iclab.api.theory)`` lists its options).
"""

from __future__ import annotations

from typing import Any

from iclab.utils.errors import Error

__version__ = "0.1.0"

API = ("train", "theory", "certify", "shift", "dynamics", "sweep", "reproduce", "export",
       "cache", "TrainResult", "TheoryResult", "CertifyResult", "CommandResult", "SweepResult")
"""The names ``iclab`` re-exports from ``iclab.api``, imported on first use."""

__all__ = ["Error", "__version__", *API]


def __getattr__(name: str) -> Any:
    """``iclab.train`` and the rest of ``API``: imported from ``iclab.api`` on first use."""
    if name == "api":
        import importlib

        return importlib.import_module("iclab.api")
    if name in API:
        import importlib

        api = importlib.import_module("iclab.api")
        if name == "theory":  # the package iclab.theory, made callable as the function
            return importlib.import_module("iclab.theory")
        return getattr(api, name)
    raise AttributeError(f"module 'iclab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *API})
