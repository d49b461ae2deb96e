"""Try a user's claim kinds on a synthetic result set before any run folder is made.

A claim kind is interface-checked when it is registered (``plugin_check.check_claim_kind``),
but its ``check`` runs only once the sweep's runs are written. ``probe_claim_kinds`` runs it
first, in memory: every claim of the spec whose kind is a user's gets its group's points,
each with a synthetic result shaped like a real result.json (``synthetic_result``: the keys
``iclab.analysis.evaluate`` writes for that run's model, with plausible finite numbers, a
verdict and timings), and ``checked_claims`` checks what the kind returns (a list of Claim
objects with finite numbers). The kind's ``figure_key`` and ``figure_covers`` are tried too.
Anything that raises, or returns anything else, is one ConfigError line naming the kind,
before anything is written. The context has no sweep folder (``out_dir`` is None): a kind
that reads the files the sweep writes (its measurements) stops the probe where it asks for
them (``ClaimContext.sweep`` raises ``NoSweepFolderError``), and is checked again after the runs.
iclab's own kinds (tested by the suite) are not probed.
"""

from __future__ import annotations

from typing import Any

from iclab.experiments.claims.kind import ClaimContext, KindLookup, NoSweepFolderError
from iclab.experiments.claims.plugin_check import checked_claims, is_builtin_kind
from iclab.experiments.specs.groups import Point
from iclab.experiments.specs.results import RunRecord, sites
from iclab.experiments.specs.spec import Spec
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import error_line


def _identity(d: int, scale: float) -> list[list[float]]:
    return [[scale if i == j else 0.0 for j in range(d)] for i in range(d)]


def synthetic_result(point: Point) -> dict[str, Any]:
    """A result.json of ``point``'s run as the evaluation would write it (the one-layer keys,
    the read-out's where the model has one, the depth keys where the model declares a depth),
    with made-up finite numbers (a model 1 % above its optimum). Keys a real result has only
    in some runs (a Monte Carlo optimum's standard errors, n_eff) are there in all, so that a
    kind reading them is not refused for a key its real runs would have."""
    config = point.config
    d, n, sigma = config.task.d, config.task.n, float(config.task.sigma)
    eta = 1.0 / (n + d + 1 + sigma**2)
    loss_star = 1.0 + sigma**2
    measures = {"mean_abs_prediction_difference": 0.01, "sensitivity_cosine": 0.999}
    result: dict[str, Any] = {
        "eta_star": eta, "gamma_star": _identity(d, eta), "gamma_star_isotropic": True,
        "test_loss": 1.01 * loss_star, "test_loss_stderr": 0.001 * loss_star,
        "loss_star": loss_star, "vs_optimal_gd": dict(measures), "eta_star_stderr": 0.0,
        "loss_star_stderr": 0.0, "n_eff": float(n),
    }
    depth = config.depth()
    if depth is None:
        result.update({
            "eta_hat": 1.01 * eta, "eta_rel_err": 0.01, "isotropy_err": 0.01,
            "gamma": _identity(d, 1.01 * eta),
            "gamma_parts": {"uy_Mx": _identity(d, 1.01 * eta), "my_ux": _identity(d, 0.0)},
            "gamma_rel_err": 0.01, "nuisance": {"x_x": 0.001, "y_y": 0.001, "query": 0.0},
        })
    else:
        etas = [eta * (1.0 + layer) / depth for layer in range(depth)]
        gd_loss = loss_star / (1.0 + depth)
        result.update({
            "layers": depth, "gd_steps_layers": depth,
            "parameterisation": str(getattr(config.model, "parameterisation", "sparse")),
            "gd_steps_etas": etas, "gd_steps_loss": gd_loss, "gd_steps_loss_stderr": 0.0,
            "gd_steps_method": "exact", "krylov_loss": gd_loss, "krylov_loss_stderr": 0.0,
            "krylov_attained": True, "layer_steps": [1.01 * e for e in etas],
            "layer_steps_rel_err": 0.01, "layer_isotropy_err": [0.01] * depth,
            "layer_steps_tolerance": 0.04, "layer_steps_loss": 1.001 * gd_loss,
            "vs_optimal_gd_steps": dict(measures), "vs_ridge": dict(measures),
            "test_loss": 1.01 * gd_loss, "test_loss_stderr": 0.001 * gd_loss,
        })
    result.update({"verdict": "optimal", "excess_z": 1.0, "verdict_reference": "synthetic",
                   "verdict_evidence": {"reason": "a synthetic result (the claim probe)"},
                   "verdict_needs": "", "wall_seconds": 1.0, "cpu_seconds": 1.0,
                   "threads": 1})
    return result


def synthetic_records(spec: Spec) -> dict[str, RunRecord]:
    """run_id -> a record with a ``synthetic_result`` for every point of ``spec``."""
    return {point.run_id: RunRecord(point, synthetic_result(point)) for point in spec.points()}


def _call(label: str, what: str, function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except ConfigError:
        raise
    except (Exception, SystemExit) as error:  # the user's code: reported, not raised
        raise ConfigError(f"claim kind {label!r}: {what} failed on a synthetic result set, "
                          f"before any run ({error_line(error)})") from None


def probe_claim_kinds(spec: Spec, kinds: KindLookup) -> None:
    """Try every user claim kind of ``spec`` (by ``kinds.get``, a ``ClaimRegistry``) on a
    synthetic result set of the spec's points (module docstring); ConfigError, one line
    naming the kind, if one fails. Nothing is written."""
    tried = [(claim, kinds.get(claim.kind)) for claim in spec.claims]
    tried = [(claim, kind) for claim, kind in tried if not is_builtin_kind(kind)]
    if not tried:
        return
    records = synthetic_records(spec)
    context = ClaimContext(out_dir=None, spec=spec, records=records, kinds=kinds)
    for claim, kind in tried:
        label = kind.name if claim.kind == kind.name else f"{kind.name} ({claim.kind})"
        key = _call(label, "figure_key(claim)", kind.figure_key, claim)
        if key is not None and not (isinstance(key, tuple) and len(key) == 2
                                    and all(isinstance(part, str) for part in key)):
            raise ConfigError(f"claim kind {label!r}: figure_key(claim) must return None "
                              f"or a pair of strings, got {key!r}")
        _call(label, "figure_covers([claim])", kind.figure_covers, [claim])
        group_sites = sites(spec, records, claim.group) if claim.group else []
        try:
            checked_claims(kind, claim, group_sites, context, when="on a synthetic result "
                                                                  "set, before any run")
        except NoSweepFolderError:
            continue  # it reads the sweep's files: checked again after the runs
