"""The verdict of a run: did the trained model reach the optimum, within statistical error?

The model's test loss is compared with the family's optimal one-layer LSA loss L*: the excess
in standard errors is z = (test_loss - L*) / se, se combining the test loss's standard error and
L*'s (0 for closed forms). "optimal" when z <= VERDICT_Z, "not optimal" otherwise. A model
cannot beat L* in expectation, so a z far below 0 only says the estimates are noisy.
"""

from __future__ import annotations

import math
from typing import Any

VERDICT_Z = 4.0


def judge(result: dict[str, Any], linear: bool = True) -> dict[str, Any]:
    """{"verdict": ..., "excess_z": z, "verdict_reference": ...}.

    ``linear``: the model is a one-layer linear model (it has a linear read-out), so L* bounds
    its loss and the verdict is "optimal" or "not optimal". Any other model (softmax
    attention, say) can sit above or below L*, and the verdict says which: "at L*",
    "above L*" or "below L*" (|z| <= VERDICT_Z is "at")."""
    loss, star = float(result["test_loss"]), float(result["loss_star"])
    se = math.hypot(float(result["test_loss_stderr"]),
                    float(result.get("loss_star_stderr") or 0.0))
    excess = loss - star
    z = excess / se if se > 0 else (0.0 if excess <= 0 else math.inf)
    z = max(min(z, 1e300), -1e300)  # JSON has no infinity
    if linear:
        verdict = "optimal" if z <= VERDICT_Z else "not optimal"
    else:
        verdict = "at L*" if abs(z) <= VERDICT_Z else ("above L*" if z > 0 else "below L*")
    return {
        "verdict": verdict,
        "excess_z": z,
        "verdict_reference": "the optimal one-layer LSA loss L* (loss_star)",
    }


def judge_depth(result: dict[str, Any], sparse: bool) -> dict[str, Any]:
    """The verdict of an L-layer run, against the optimal L-step GD loss (gd_steps_loss).

    A sparse model is L steps of preconditioned GD, so the optimal L-step GD bounds it (for
    isotropic tasks) and the verdict is "optimal" / "not optimal"; a full model can do
    better than GD (GD++, say), and the verdict says "at", "above" or "below" it."""
    reference = {"test_loss": result["test_loss"], "test_loss_stderr": result["test_loss_stderr"],
                 "loss_star": result["gd_steps_loss"],
                 "loss_star_stderr": result.get("gd_steps_loss_stderr") or 0.0}
    verdict = judge(reference, linear=sparse)
    verdict["verdict"] = verdict["verdict"].replace("L*", "the optimal L-step GD")
    verdict["verdict_reference"] = "the optimal L-step GD loss (gd_steps_loss)"
    return verdict
