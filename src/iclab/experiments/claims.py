"""Verdicts: each claim of a spec checked against its group's results with an explicit tolerance.

A claim kind is a small class (``ClaimKind``) with its own options, statements and tolerance
semantics; kinds live in a ``ClaimRegistry`` (built-ins in ``iclab.experiments.claim_kinds``,
registered exactly as a new kind would be), so a new report section is a new class, not a
branch. Claims read result.json numbers (and the run's config) only, never live objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from iclab.errors import ConfigError
from iclab.experiments.claim_parameters import ClaimParameter, check_parameters
from iclab.experiments.results import RunRecord, Site, axis_value, sites
from iclab.experiments.spec import ClaimSpec, Spec


class ClaimsNotHeldError(RuntimeError):
    """Some claims do not hold; the message says how many and where the report is."""


@dataclass(frozen=True)
class Claim:
    """One verdict; ``to_json`` gives claims.json's {claim, holds, metric, value, theory,
    tolerance, source}. ``section``, ``group`` and ``site`` place it in the report;
    ``tolerance_label`` says how the report shows the tolerance ("" for a relative one: "2%");
    ``source``: where the claim comes from (the spec's, "" where it gives none)."""

    claim: str
    holds: bool
    metric: str
    value: float
    theory: float
    tolerance: float
    section: str
    group: str
    site: str
    tolerance_label: str = ""
    source: str = ""

    @property
    def tolerance_text(self) -> str:
        """The tolerance as the report shows it: the label, or a percentage."""
        return self.tolerance_label or f"{100 * self.tolerance:g}%"

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "holds": self.holds, "metric": self.metric,
                "value": self.value, "theory": self.theory, "tolerance": self.tolerance,
                "source": self.source}


class ClaimContext:
    """What a claim may need beyond its group's results: a cache shared by the claims of
    one evaluation (the Monte Carlo Bayes risk of a site, say), the sweep folder
    ``out_dir`` (None when the claims are checked on records alone), where run ``run_id``'s
    folder is ``out_dir/runs/<run_id>``, and the spec and all records (for claims that
    compare groups; None outside ``evaluate_claims``)."""

    def __init__(self, cache: dict[Any, Any] | None = None,
                 out_dir: str | Path | None = None, spec: Spec | None = None,
                 records: dict[str, RunRecord] | None = None) -> None:
        self.cache: dict[Any, Any] = {} if cache is None else cache
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.spec = spec
        self.records = records


DEPTH_KEYS = ("layers", "parameterisation", "looped")
"""Model options of the L-layer lsa that ``describe`` names when a run sets them."""


def describe(site: Site, depth: bool = False, omit: str = "") -> str:
    """The setting of a site in words: family, d, n, sigma, a covariate law or AR(1) rho where
    set, non-identity covariances; the L-layer options where a run sets them or the group
    sweeps them, or always (layers, parameterisation, looped when true) with ``depth``;
    ``omit``: a key to leave out."""
    config, point = site.config, site.records[0].point
    config = {**config, **{k: v for k, v in site.values.items() if k in DEPTH_KEYS}}
    if depth:
        config = {**config, **{key: axis_value(point, key) for key in DEPTH_KEYS[:2]}}
    parts = [str(config["family"]), f"d={config['d']}", f"n={config['n']}",
             f"sigma={config['sigma']}"]
    parts += [f"{key}={config[key]}" for key in ("x_law", "context_correlation")
              if config.get(key) is not None]
    if config.get("width") is not None:
        parts.append(f"width={config['width']}")
    if config.get("model") is not None:
        parts.append(f"model={config['model']}")
    parts += [f"{key}={config[key]}" for key in DEPTH_KEYS if config.get(key) not in
              (None, False)]
    parts += [f"{name}={label}" for name, label in
              (("Sigma_x", point.cov_x_label), ("Sigma_w", point.cov_w_label)) if label != "I"]
    parts = [part for part in parts if not (omit and part.startswith(f"{omit}="))]
    return ", ".join(parts) + f"; {len(site.records)} seed{'s' * (len(site.records) > 1)}"


def seeds_phrase(site: Site) -> str:
    return f"over {len(site.records)} seed{'s' * (len(site.records) > 1)}"


class ClaimKind:
    """A kind of claim. Subclasses set ``name``, ``options`` (option -> allowed values, the
    first the default), ``statements`` (the chosen option's value, or "" -> the default
    wording) and implement ``check_site`` (one claim per site) or override ``check`` (claims
    over the whole group). A kind may also declare ``parameters``: extra keys of any type
    (numbers, lists, ...), each checked by its ``ClaimParameter``; ``validate_parameters``
    may add checks across them."""

    name: ClassVar[str] = ""
    figure: ClassVar[str | None] = None
    """The report figure the kind's group gets: "eta", "gamma", "loss", "shift", or None."""
    options: ClassVar[dict[str, tuple[str, ...]]] = {}
    statements: ClassVar[dict[str, str]] = {}
    parameters: ClassVar[dict[str, ClaimParameter]] = {}

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        """The checked values of the declared parameters from a claim's raw table (defaults
        filled in); ConfigError, one line starting with ``where``, on a bad value."""
        return check_parameters(self.parameters, raw, where)

    def check_groups(self, parameters: dict[str, Any], group: str, groups: set[str],
                     where: str) -> None:
        """Checks of the checked ``parameters`` against the spec's group names (a parameter
        naming another group, say); ConfigError, one line starting with ``where``."""

    def option(self, spec: ClaimSpec) -> str:
        """The value of the kind's option ("" for kinds without one)."""
        return next(iter(spec.options.values()), "")

    def statement(self, spec: ClaimSpec) -> str:
        return spec.statement or self.statements[self.option(spec)]

    def text(self, spec: ClaimSpec, site: Site) -> str:
        return f"{spec.section}: {self.statement(spec)} [{describe(site)}]"

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        return [self.check_site(spec, site, context) for site in group_sites]

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        raise NotImplementedError(f"claim kind {self.name} is not checked per site")

    def claim(self, spec: ClaimSpec, site: Site, holds: bool, metric: str, value: float,
              theory: float, tolerance_label: str = "") -> Claim:
        """A Claim of this kind at ``site`` (the text from the statement and the site)."""
        return Claim(self.text(spec, site), bool(holds), metric, float(value), float(theory),
                     spec.tolerance, spec.section, spec.group, site.label, tolerance_label,
                     spec.source)


class ClaimRegistry:
    """Claim kinds by name: the built-ins (unless ``builtins=False``) and those registered."""

    def __init__(self, builtins: bool = True) -> None:
        self._kinds: dict[str, ClaimKind] = {}
        if builtins:
            from iclab.experiments.claim_kinds import register_builtin_claims

            register_builtin_claims(self)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    def register(self, kind: ClaimKind) -> None:
        if not kind.name or kind.name in self._kinds:
            raise ConfigError(f"claim kind {kind.name!r} is empty or already registered")
        self._kinds[kind.name] = kind

    def get(self, name: str) -> ClaimKind:
        kind = self._kinds.get(name)
        if kind is None:
            raise ConfigError(f"kind must be one of {', '.join(self._kinds)}; got {name!r}")
        return kind


def evaluate_claims(
    spec: Spec, records: dict[str, RunRecord], cache: dict[Any, Any] | None = None,
    registry: ClaimRegistry | None = None, out_dir: str | Path | None = None,
) -> list[Claim]:
    """Every claim of ``spec`` on the finished ``records``, in spec order; ``out_dir`` is the
    sweep folder, for kinds that read or write files in the runs' folders."""
    kinds = registry or ClaimRegistry()
    context = ClaimContext(cache, out_dir, spec, records)
    claims: list[Claim] = []
    for claim_spec in spec.claims:
        group_sites = sites(spec, records, claim_spec.group)
        claims.extend(kinds.get(claim_spec.kind).check(claim_spec, group_sites, context))
    return claims
