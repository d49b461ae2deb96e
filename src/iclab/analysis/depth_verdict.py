"""The verdict of an L-layer run: the loss against the optimal L-step GD, and the read-out.

The loss criterion is the one-layer verdict's (``iclab.analysis.verdict.judge``) with the
optimal L-step GD loss (gd_steps_loss) as the reference. A sparse L-layer LSA also has a
read-out that the loss cannot blur: each layer is one step of preconditioned GD,
A_l = n eta_l I + (its anisotropic part), read as its step (``layer_steps``, sorted) and its
isotropy error. Where the exact L-step loss applies (``layer_steps_tolerance`` in the result:
Sigma_x = s I, Sigma_w = c I, ``iclab.theory.depth.step_curvature``), the read-out decides
what an imprecise loss cannot:

- tau = layer_steps_tolerance is the relative step error whose worst case raises the exact
  L-step GD loss by LOSS_RESOLUTION (5 %) of it: from its curvature, dl^T H dl / 2 <= 0.05 L,
  confirmed (and shrunk where the higher-order terms need it) by the exact loss;
- "optimal" by the read-out: every learned step within tau of the optimal one
  (layer_steps_rel_err <= tau), every layer isotropic within the same tau
  (max layer_isotropy_err <= tau), and the loss not against it (z <= VERDICT_Z);
- "not optimal" by the read-out: clearly outside, the exact loss of the learned steps
  (layer_steps_loss) more than 5 % above the optimum while some step is off by more than
  tau, and the loss evidence against as well (the test loss above the reference, z > 0);
- a precise loss that says "optimal" beside a read-out clearly outside is "undetermined":
  the two disagree.

Anything else keeps the loss criterion's verdict, and the read-out is recorded beside it.
"""

from __future__ import annotations

import math
from typing import Any

from iclab.analysis.verdict import EVIDENCE_NEEDED, LOSS_RESOLUTION, VERDICT_Z, judge

UNDETERMINED, OPTIMAL, NOT_OPTIMAL = "undetermined", "optimal", "not optimal"
READOUT_NEEDED = (f"; with a sparse L-layer read-out (isotropic linear Gaussian tasks): "
                  f"optimal also when every learned step is within the curvature tolerance "
                  f"tau of the optimal L-step GD step (the worst step error within tau raises "
                  f"the exact L-step loss by {LOSS_RESOLUTION:g} of it), every layer is "
                  f"isotropic within tau and z <= {VERDICT_Z:g}; not optimal also when a step "
                  f"is off by more than tau, the learned steps' exact loss is more than "
                  f"{LOSS_RESOLUTION:g} above the optimum and z > 0")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def step_readout(result: dict[str, Any]) -> dict[str, float] | None:
    """The read-out's evidence of a sparse L-layer result: layer_steps_rel_err,
    layer_isotropy_err (the largest), layer_steps_tolerance and, where known,
    layer_steps_excess (the learned steps' exact loss over gd_steps_loss, minus 1); None
    where the result has no tolerance or a number is missing or not finite."""
    tolerance = _number(result.get("layer_steps_tolerance"))
    error = _number(result.get("layer_steps_rel_err"))
    isotropy = result.get("layer_isotropy_err")
    if tolerance is None or tolerance <= 0 or error is None or not isinstance(isotropy, list) \
            or not isotropy:
        return None
    isotropy_errors = [_number(value) for value in isotropy]
    if any(value is None for value in isotropy_errors):
        return None
    evidence = {"layer_steps_rel_err": error,
                "layer_isotropy_err": max(v for v in isotropy_errors if v is not None),
                "layer_steps_tolerance": tolerance}
    steps_loss, optimum = _number(result.get("layer_steps_loss")), \
        _number(result.get("gd_steps_loss"))
    if steps_loss is not None and optimum is not None and optimum > 0:
        evidence["layer_steps_excess"] = steps_loss / optimum - 1.0
    return evidence


def _decide(loss_verdict: str, z: float, readout: dict[str, float]) -> tuple[str, str] | None:
    """(verdict, reason) where the read-out decides, None where the loss's verdict stands."""
    tolerance = readout["layer_steps_tolerance"]
    excess = readout.get("layer_steps_excess")
    within = readout["layer_steps_rel_err"] <= tolerance \
        and readout["layer_isotropy_err"] <= tolerance \
        and (excess is None or excess <= LOSS_RESOLUTION)
    outside = readout["layer_steps_rel_err"] > tolerance and excess is not None \
        and excess > LOSS_RESOLUTION
    steps = (f"the learned steps are within {100 * readout['layer_steps_rel_err']:.3g} % of "
             f"the optimal L-step GD steps and isotropic within "
             f"{100 * readout['layer_isotropy_err']:.3g} %")
    if loss_verdict == NOT_OPTIMAL:
        return None
    if within and loss_verdict == UNDETERMINED:
        return OPTIMAL, (f"the read-out: {steps}, inside the tolerance {100 * tolerance:.3g} % "
                         f"(a step error that raises the exact L-step loss by at most "
                         f"{100 * LOSS_RESOLUTION:g} %); the test loss is too imprecise to "
                         f"decide and not against it (z <= {VERDICT_Z:g})")
    if outside and excess is not None:
        off = (f"the read-out: a learned step is {100 * readout['layer_steps_rel_err']:.3g} % "
               f"off the optimal L-step GD step (tolerance {100 * tolerance:.3g} %), which "
               f"raises the exact L-step loss by {100 * excess:.3g} %")
        if loss_verdict == OPTIMAL:
            return UNDETERMINED, f"{off}, but the test loss is within its tolerance: the two " \
                                 f"disagree"
        if z > 0:
            return NOT_OPTIMAL, f"{off}, and the test loss is above the reference (z = {z:.3g})"
        return UNDETERMINED, f"{off}, but the test loss is not above the reference " \
                             f"(z = {z:.3g}): the two disagree"
    return None


def _undecided(readout: dict[str, float]) -> str:
    """Why the read-out does not decide either: what is outside its tolerance, not clearly."""
    tolerance = readout["layer_steps_tolerance"]
    parts = [f"{what} {100 * readout[key]:.3g} %" for key, what in
             (("layer_steps_rel_err", "a step error of"),
              ("layer_isotropy_err", "a layer's isotropy error of"))
             if readout[key] > tolerance]
    excess = readout.get("layer_steps_excess")
    if excess is not None and excess > LOSS_RESOLUTION:
        parts.append(f"a loss of the learned steps {100 * excess:.3g} % above the optimum")
    return (f"the read-out does not decide: {' and '.join(parts) or 'its numbers'} against "
            f"the tolerance {100 * tolerance:.3g} %")


def judge_depth(result: dict[str, Any], sparse: bool) -> dict[str, Any]:
    """The verdict of an L-layer run, against the optimal L-step GD loss (gd_steps_loss).

    A sparse model is L steps of preconditioned GD, so the optimal L-step GD bounds it (for
    isotropic tasks) and the verdict is "optimal" / "not optimal" / "undetermined", decided
    by the loss or, where the loss cannot, by the read-out (module docstring); a full
    model can do better than GD (GD++, say), and the verdict says "at", "above" or "below" it.
    The one-layer read-out (Gamma) does not apply; the precision rule does."""
    reference = {"test_loss": result.get("test_loss"),
                 "test_loss_stderr": result.get("test_loss_stderr"),
                 "loss_star": result.get("gd_steps_loss"),
                 "loss_star_stderr": result.get("gd_steps_loss_stderr") or 0.0}
    verdict = judge(reference, linear=sparse, reference_name="the optimal L-step GD")
    verdict["verdict_reference"] = "the optimal L-step GD loss (gd_steps_loss)"
    readout = step_readout(result) if sparse else None
    if readout is None or "precision" not in verdict["verdict_evidence"]:
        return verdict  # no read-out, or a loss that is not a number: as the loss says
    evidence = {**verdict["verdict_evidence"], **readout}
    decided = _decide(verdict["verdict"], float(verdict["excess_z"]), readout)
    if decided is not None:
        verdict["verdict"], evidence["reason"] = decided
        evidence["decided_by"] = "read-out" if decided[0] != UNDETERMINED else "disagreement"
    elif verdict["verdict"] == UNDETERMINED:
        evidence["reason"] += "; " + _undecided(readout)
    verdict["verdict_evidence"] = evidence
    verdict["verdict_needs"] = EVIDENCE_NEEDED + READOUT_NEEDED
    return verdict
