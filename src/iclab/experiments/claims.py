"""Verdicts: each claim of a spec checked against its group's results with an explicit tolerance.

A claim reads result.json numbers (and the run's config) only. Kinds, per site of the group
(a site = the runs that differ only in their seed), unless said otherwise:

- ``eta``: the mean over seeds of eta_hat against eta* (``reference = "optimum"``: result.json's
  eta_star; ``"theorem1"``: 1/(n+d+1+sigma^2)); holds when |value/theory - 1| <= tolerance.
- ``isotropy`` (one claim per group): the largest isotropy error ||Gamma - eta_hat I||_F /
  ||Gamma||_F over all runs; the theory's is 0; holds when value <= tolerance.
- ``gamma``: the largest ||Gamma - target||_F / ||target||_F over seeds, target Gamma*
  (``target = "optimum"``) or eta* Sigma_x^-1 with eta* = 1/(n+d+1+sigma^2)
  (``"preconditioned"``, Theorem 2); the theory's is 0; holds when value <= tolerance.
- ``not-multiple``: the smallest relative distance min_c ||Gamma - c R||_F / ||Gamma||_F over
  seeds, R = I or Sigma_x^-1 (``of``); theory: the same distance for Gamma*; holds when
  value >= separation x tolerance ("clearly", default separation 5).
- ``test-loss``: the mean test loss over seeds against L*; holds when |value/theory - 1| <=
  tolerance.
- ``above-bayes``: the mean test loss against the Bayes-optimal (ridge) risk (Monte Carlo,
  linear Gaussian only); holds when value >= (1 + separation x tolerance) x theory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from iclab.errors import ConfigError
from iclab.experiments.results import RunRecord, Site, sites
from iclab.experiments.spec import ClaimSpec, Spec
from iclab.theory.bayes import bayes_risk
from iclab.theory.gaussian import eta_star_isotropic

BAYES_PROMPTS = 20_000
BayesRisks = dict[tuple[str, str], tuple[float, float]]
"""(group, site label) -> (Bayes risk, its Monte Carlo standard error)."""

STATEMENTS = {
    ("eta", "theorem1"): "the learned step size eta_hat equals 1/(n+d+1+sigma^2)",
    ("eta", "optimum"): "the learned step size eta_hat equals the optimum's eta*",
    ("isotropy", ""): "the learned Gamma is a multiple of the identity (plain one-step GD)",
    ("gamma", "optimum"): "the learned Gamma equals the optimal Gamma*",
    ("gamma", "preconditioned"): "the learned Gamma equals eta* Sigma_x^-1 "
                                 "(one step of GD preconditioned by Sigma_x^-1)",
    ("not-multiple", "identity"): "the learned Gamma is clearly not a multiple of the identity",
    ("not-multiple", "inverse-cov-x"): "the learned Gamma is clearly not a multiple of "
                                       "Sigma_x^-1",
    ("test-loss", ""): "the trained LSA's test loss equals the optimal LSA loss L*",
    ("above-bayes", ""): "the trained LSA's test loss stays clearly above the Bayes-optimal "
                         "(ridge) loss",
}


class ClaimsNotHeldError(RuntimeError):
    """Some claims do not hold; the message says how many and where the report is."""


@dataclass(frozen=True)
class Claim:
    """One verdict; ``to_json`` gives claims.json's {claim, holds, metric, value, theory,
    tolerance}. ``section``, ``group`` and ``site`` place it in the report."""

    claim: str
    holds: bool
    metric: str
    value: float
    theory: float
    tolerance: float
    section: str
    group: str
    site: str

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "holds": self.holds, "metric": self.metric,
                "value": self.value, "theory": self.theory, "tolerance": self.tolerance}


def _option(spec: ClaimSpec) -> str:
    return next(iter(spec.options.values()), "")


def describe(site: Site) -> str:
    """The setting of a site in words: family, d, n, sigma and non-identity covariances."""
    config, point = site.config, site.records[0].point
    parts = [str(config["family"]), f"d={config['d']}", f"n={config['n']}",
             f"sigma={config['sigma']}"]
    if config.get("width") is not None:
        parts.append(f"width={config['width']}")
    parts += [f"{name}={label}" for name, label in
              (("Sigma_x", point.cov_x_label), ("Sigma_w", point.cov_w_label)) if label != "I"]
    return ", ".join(parts) + f"; {len(site.records)} seed{'s' * (len(site.records) > 1)}"


def inverse_cov_x(record: RunRecord) -> np.ndarray:
    """Sigma_x^-1 of a run: (d, d)."""
    task = record.point.config.task
    if task.cov_x is None:
        return np.eye(task.d)
    return np.linalg.inv(np.asarray(task.cov_x, dtype=np.float64))


def theorem1_eta(record: RunRecord) -> float:
    task = record.point.config.task
    return eta_star_isotropic(task.n, task.d, task.sigma)


def gamma_target(record: RunRecord, target: str) -> np.ndarray:
    """Gamma* from result.json, or eta* Sigma_x^-1 (Theorem 2's closed form): (d, d)."""
    if target == "optimum":
        return record.gamma_star
    return theorem1_eta(record) * inverse_cov_x(record)


def relative_error(gamma: np.ndarray, target: np.ndarray) -> float:
    return float(np.linalg.norm(gamma - target) / np.linalg.norm(target))


def distance_from_multiple(gamma: np.ndarray, reference: np.ndarray) -> float:
    """min_c ||gamma - c reference||_F / ||gamma||_F (0 when gamma is a multiple)."""
    c = float(np.sum(gamma * reference) / np.sum(reference * reference))
    return float(np.linalg.norm(gamma - c * reference) / np.linalg.norm(gamma))


def multiple_reference(record: RunRecord, of: str) -> np.ndarray:
    return np.eye(record.point.config.task.d) if of == "identity" else inverse_cov_x(record)


def site_bayes(group: str, site: Site, cache: BayesRisks) -> tuple[float, float]:
    """The Bayes risk of a linear Gaussian site (Monte Carlo, cached in ``cache``)."""
    key = (group, site.label)
    if key not in cache:
        config = site.records[0].point.config
        task = config.make_task()
        if not task.gaussian:
            raise ConfigError(f"group {group!r}: the Bayes risk needs linear Gaussian runs, "
                              f"not {config.task.family!r}")
        sigma_x, sigma_w = getattr(task, "sigma_x"), getattr(task, "sigma_w")  # noqa: B009
        cache[key] = bayes_risk(task.n, task.sigma, sigma_x, sigma_w,
                                prompts=BAYES_PROMPTS, seed=0)
    return cache[key]


def _relative_claim(spec: ClaimSpec, site: Site, text: str, metric: str, value: float,
                    theory: float) -> Claim:
    holds = abs(value / theory - 1.0) <= spec.tolerance
    return Claim(text, bool(holds), f"{metric}; holds when |value/theory - 1| <= tolerance",
                 value, theory, spec.tolerance, spec.section, spec.group, site.label)


def _site_claim(spec: ClaimSpec, site: Site, bayes: BayesRisks) -> Claim:
    option = _option(spec)
    statement = spec.statement or STATEMENTS[(spec.kind, option)]
    text = f"{spec.section}: {statement} [{describe(site)}]"
    seeds = f"over {len(site.records)} seed{'s' * (len(site.records) > 1)}"
    tol, records = spec.tolerance, site.records
    if spec.kind == "eta":
        theory = (float(np.mean([theorem1_eta(r) for r in records])) if option == "theorem1"
                  else site.mean("eta_star"))
        reference = "1/(n+d+1+sigma^2)" if option == "theorem1" else "the optimum's eta*"
        stderr = records[0].result.get("eta_star_stderr")
        if option == "optimum" and stderr:
            reference += f" (Monte Carlo, standard error {stderr:.2g})"
        return _relative_claim(spec, site, text, f"mean {seeds} of eta_hat vs {reference}",
                               site.mean("eta_hat"), theory)
    if spec.kind == "test-loss":
        return _relative_claim(spec, site, text, f"mean {seeds} of the test loss vs L*",
                               site.mean("test_loss"), site.mean("loss_star"))
    if spec.kind == "gamma":
        value = max(relative_error(r.gamma, gamma_target(r, option)) for r in records)
        name = "Gamma*" if option == "optimum" else "eta* Sigma_x^-1"
        return Claim(text, value <= tol, f"largest {seeds} of ||Gamma - {name}||_F / "
                     f"||{name}||_F; holds when value <= tolerance", value, 0.0, tol,
                     spec.section, spec.group, site.label)
    if spec.kind == "not-multiple":
        name = "I" if option == "identity" else "Sigma_x^-1"
        value = min(distance_from_multiple(r.gamma, multiple_reference(r, option))
                    for r in records)
        theory = distance_from_multiple(records[0].gamma_star,
                                        multiple_reference(records[0], option))
        return Claim(text, value >= spec.separation * tol,
                     f"smallest {seeds} of min_c ||Gamma - c {name}||_F / ||Gamma||_F (theory: "
                     f"Gamma*'s); holds when value >= {spec.separation:g} x tolerance",
                     value, theory, tol, spec.section, spec.group, site.label)
    if spec.kind == "above-bayes":
        risk, _ = site_bayes(spec.group, site, bayes)
        value = site.mean("test_loss")
        return Claim(text, value >= (1 + spec.separation * tol) * risk,
                     f"mean {seeds} of the test loss vs the Bayes risk (Monte Carlo, "
                     f"{BAYES_PROMPTS} prompts); holds when value >= "
                     f"(1 + {spec.separation:g} x tolerance) x theory",
                     value, risk, tol, spec.section, spec.group, site.label)
    raise ConfigError(f"claim kind {spec.kind!r} is not checked per site")


def _isotropy_claim(spec: ClaimSpec, group_sites: list[Site]) -> Claim:
    records = [r for site in group_sites for r in site.records]
    value = max(float(r.result["isotropy_err"]) for r in records)
    statement = spec.statement or STATEMENTS[("isotropy", "")]
    return Claim(f"{spec.section}: {statement} [group {spec.group}: {len(records)} runs]",
                 value <= spec.tolerance,
                 "largest over runs of ||Gamma - eta_hat I||_F / ||Gamma||_F; "
                 "holds when value <= tolerance",
                 value, 0.0, spec.tolerance, spec.section, spec.group, "")


def evaluate_claims(
    spec: Spec, records: dict[str, RunRecord], bayes: BayesRisks | None = None
) -> list[Claim]:
    """Every claim of ``spec`` on the finished ``records``, in spec order."""
    cache: BayesRisks = {} if bayes is None else bayes
    claims: list[Claim] = []
    for claim_spec in spec.claims:
        group_sites = sites(spec, records, claim_spec.group)
        if claim_spec.kind == "isotropy":
            claims.append(_isotropy_claim(claim_spec, group_sites))
        else:
            claims.extend(_site_claim(claim_spec, site, cache) for site in group_sites)
    return claims
