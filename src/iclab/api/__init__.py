"""iclab's Python API: the commands as functions taking the command line's options as
keywords (the same names, checks and one-line errors, raised as ``iclab.Error``) and
returning typed results instead of printing. Re-exported from ``iclab`` on first use.

Each function's docstring lists its options, generated from the declarations (a registry of
the core and the installed studies is built once, when this package is imported).
"""

from iclab.api import commands as _commands
from iclab.api import sweeps as _sweeps
from iclab.api import training as _training
from iclab.api.activations import cache
from iclab.api.commands import callable_theory_package as _callable_theory_package
from iclab.api.commands import certify, dynamics, shift, theory
from iclab.api.exports import export
from iclab.api.results import (
    CertifyResult,
    CommandResult,
    SweepResult,
    TheoryResult,
    TrainResult,
)
from iclab.api.sweeps import reproduce, sweep
from iclab.api.training import train
from iclab.experiments.registries import Registries as _Registries
from iclab.utils.errors import Error

__all__ = ["CertifyResult", "CommandResult", "Error", "SweepResult", "TheoryResult",
           "TrainResult", "cache", "certify", "dynamics", "export", "reproduce", "shift", "sweep",
           "theory", "train"]

_documented = _Registries()
for _module in (_training, _commands, _sweeps):
    _module.document(_documented)
del _documented, _module
_callable_theory_package()
