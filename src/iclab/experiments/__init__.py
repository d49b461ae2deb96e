"""Experiments: declarative specs, sweeps over them (local processes or Ray), claims, report.

``iclab sweep SPEC --out DIR`` runs a spec; ``iclab reproduce`` runs the built-in spec of the
paper's claims. See ``spec`` for the file format and ``claims`` for what a verdict means.
``report`` (which imports matplotlib) is imported only where a report is written.
"""

from iclab.experiments.claims import Claim, evaluate_claims
from iclab.experiments.spec import Spec, builtin_spec, load_spec
from iclab.experiments.sweep import SweepError, make_executor, run_sweep

__all__ = [
    "Claim",
    "Spec",
    "SweepError",
    "builtin_spec",
    "evaluate_claims",
    "load_spec",
    "make_executor",
    "run_sweep",
]
