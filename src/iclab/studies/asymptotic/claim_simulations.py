"""The finite-d simulations the ``lu-asymptotic`` claims read (``.claims``): computed once per
sweep folder (``ClaimContext.stored``), over a fixed number of pretraining sets or until their
standard errors reach the one a claim asks for."""

from __future__ import annotations

from iclab.experiments.claims.kind import ClaimContext
from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.simulation import SimulatedErrors, simulate, simulate_to_stderr
from iclab.theory.sized_mean import means_to_stderr

Point = tuple[float, float, float, float, float]
"""[tau, alpha, kappa, rho, lam]."""


def simulated(context: ClaimContext, point: Point, d: int, repeats: int, seed: int,
              test_prompts: int, stderr: float | None = None) -> SimulatedErrors:
    """The finite-d simulation at ``point`` over ``repeats`` sets, or, with ``stderr``, over at
    least ``repeats`` sets until its standard errors are at most ``stderr``; computed once per
    sweep folder (``ClaimContext.stored``)."""
    if stderr is not None:
        sized = context.stored("lu-simulation-sized", (simulate_to_stderr, means_to_stderr),
                               lambda v: [v[0].to_json(), v[1]],
                               lambda data: (SimulatedErrors.from_json(data[0]), data[1]))
        sized_key = (point, d, repeats, seed, test_prompts, stderr)
        if sized_key not in sized:
            sized[sized_key] = simulate_to_stderr(*point, d=d, stderr=stderr, seed=seed,
                                                  least=repeats, test_prompts=test_prompts)
        result: SimulatedErrors = sized[sized_key][0]
        return result
    stored = context.stored("lu-simulation", simulate, SimulatedErrors.to_json,
                            SimulatedErrors.from_json)
    key = (point, d, repeats, seed, test_prompts)
    if key not in stored:
        stored[key] = simulate(*point, d=d, seed=seed, repeats=repeats,
                               test_prompts=test_prompts)
    fixed: SimulatedErrors = stored[key]
    return fixed


def reached(sim: SimulatedErrors, stderr: float | None) -> bool:
    """Whether a simulation's standard errors are within the ``stderr`` asked for (always,
    where none was asked for)."""
    return stderr is None or max(sim.e_icl_stderr, sim.e_idg_stderr) <= stderr


def gap(point: Point, sim: SimulatedErrors) -> tuple[float, float]:
    """max |theory - simulation| over e_ICL and e_IDG, with the standard error of that
    simulated value."""
    theory = asymptotic_errors(*point)
    return max((abs(sim.e_icl - theory.e_icl), sim.e_icl_stderr),
               (abs(sim.e_idg - theory.e_idg), sim.e_idg_stderr))
