"""The verdict of a run: did the trained model reach the optimum, and is there evidence enough?

The model's test loss is compared with the family's optimal one-layer LSA loss L*: the excess
in standard errors is z = (test_loss - L*) / se, se combining the test loss's standard error and
L*'s (0 for closed forms). A model cannot beat L* in expectation, so a z far below 0 only says
the estimates are noisy.

A verdict needs evidence, stated in result.json's ``verdict_evidence``:

- precision: "optimal" says the excess is below VERDICT_Z standard errors, which says
  something only if that bound is small beside the loss: VERDICT_Z * se <= LOSS_RESOLUTION * L*
  (4 se within 5 % of L*; for squared errors se / L* is about sqrt(kurtosis - 1) / sqrt(prompts),
  so a few thousand evaluation prompts on a linear Gaussian task);
- the read-out, where the model has one: its Gamma within GAMMA_TOLERANCE of Gamma*
  (gamma_rel_err, widened by VERDICT_Z times the relative standard error of a Monte Carlo
  Gamma*). A read-out far from Gamma* is "not optimal" however noisy the loss.

"not optimal" needs only evidence against: z > VERDICT_Z, or the read-out outside its tolerance.
Without evidence either way the verdict is "undetermined", with the reason.
"""

from __future__ import annotations

import math
from typing import Any

VERDICT_Z = 4.0
LOSS_RESOLUTION = 0.05
"""The largest excess, relative to L*, an "optimal" verdict may leave unresolved (at 4 se)."""
GAMMA_TOLERANCE = 0.1
"""The largest relative error ||Gamma - Gamma*||_F / ||Gamma*||_F of an "optimal" read-out.
Near the optimum the excess loss is quadratic in it: 10 % costs about 1 % of the loss, the
order of what LOSS_RESOLUTION resolves."""
UNDETERMINED = "undetermined"
EVIDENCE_NEEDED = (f"optimal: z <= {VERDICT_Z:g}, {VERDICT_Z:g} se <= {LOSS_RESOLUTION:g} of the "
                   f"reference loss, and (with a read-out) gamma_rel_err <= "
                   f"{GAMMA_TOLERANCE:g} (+ {VERDICT_Z:g} relative se of a Monte Carlo "
                   f"Gamma*); not optimal: z > {VERDICT_Z:g} or the read-out outside its "
                   f"tolerance; otherwise undetermined")


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _readout_check(result: dict[str, Any]) -> tuple[float, float] | None:
    """(gamma_rel_err, its tolerance) of a result with a read-out, or None without one."""
    error = _finite(result.get("gamma_rel_err"))
    if error is None:
        return None
    eta, eta_se = _finite(result.get("eta_star")), _finite(result.get("eta_star_stderr"))
    widen = VERDICT_Z * eta_se / abs(eta) if eta and eta_se else 0.0
    return error, GAMMA_TOLERANCE + widen


def judge(result: dict[str, Any], linear: bool = True,
          reference_name: str = "L*") -> dict[str, Any]:
    """{"verdict", "excess_z", "verdict_reference", "verdict_evidence", "verdict_needs"}.

    ``linear``: the model is a one-layer linear model (it has a linear read-out), so L* bounds
    its loss and the verdict is "optimal", "not optimal" or "undetermined". Any other model
    (softmax attention, say) can sit above or below L*, and the verdict says which: "at L*",
    "above L*", "below L*" (|z| <= VERDICT_Z is "at", given the precision) or "undetermined".
    The read-out (``gamma_rel_err``) is used where the result has one."""
    loss, star = _finite(result.get("test_loss")), _finite(result.get("loss_star"))
    se_model = _finite(result.get("test_loss_stderr"))
    se_star = _finite(result.get("loss_star_stderr") or 0.0)
    evidence: dict[str, Any] = {"z_limit": VERDICT_Z, "loss_resolution": LOSS_RESOLUTION}
    if loss is None or star is None or se_model is None or se_star is None or star <= 0 \
            or se_model < 0 or se_star < 0:
        evidence["reason"] = "the test loss, the reference loss or a standard error is not " \
                             "a finite number (or the reference is not positive, or a " \
                             "standard error negative)"
        return _verdict(UNDETERMINED, 0.0, reference_name, evidence)
    se = math.hypot(se_model, se_star)
    excess = loss - star
    z = excess / se if se > 0 else (0.0 if excess <= 0 else 1e300)
    z = max(min(z, 1e300), -1e300)  # JSON has no infinity
    precision = min(VERDICT_Z * se / star, 1e300)  # se / a tiny L* overflows; JSON has no inf
    evidence["precision"] = precision
    readout = _readout_check(result) if linear else None
    if readout is not None:
        evidence["gamma_rel_err"], evidence["gamma_tolerance"] = readout
    precise = precision <= LOSS_RESOLUTION
    if linear:
        if z > VERDICT_Z:
            verdict, evidence["reason"] = "not optimal", f"z > {VERDICT_Z:g}"
        elif readout is not None and readout[0] > readout[1]:
            verdict = "not optimal"
            evidence["reason"] = "the read-out's Gamma is outside its tolerance of Gamma*"
        elif not precise:
            verdict = UNDETERMINED
            evidence["reason"] = _imprecise(precision)
        else:
            verdict, evidence["reason"] = "optimal", "all the evidence needed is there"
    else:
        if abs(z) > VERDICT_Z:
            verdict = f"above {reference_name}" if z > 0 else f"below {reference_name}"
            evidence["reason"] = f"|z| > {VERDICT_Z:g}"
        elif not precise:
            verdict, evidence["reason"] = UNDETERMINED, _imprecise(precision)
        else:
            verdict, evidence["reason"] = f"at {reference_name}", "all the evidence needed " \
                                                                  "is there"
    return _verdict(verdict, z, reference_name, evidence)


def _imprecise(precision: float) -> str:
    return (f"{VERDICT_Z:g} standard errors are {100 * precision:.3g} % of the reference "
            f"loss, more than the {100 * LOSS_RESOLUTION:g} % a verdict needs: raise "
            f"--eval-prompts")


def _verdict(verdict: str, z: float, reference_name: str,
             evidence: dict[str, Any]) -> dict[str, Any]:
    reference = ("the optimal one-layer LSA loss L* (loss_star)" if reference_name == "L*"
                 else f"{reference_name} loss")
    return {"verdict": verdict, "excess_z": z, "verdict_reference": reference,
            "verdict_evidence": evidence, "verdict_needs": EVIDENCE_NEEDED}
