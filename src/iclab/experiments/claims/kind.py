"""Verdicts: each claim of a spec checked against its group's results with an explicit tolerance.

A claim kind is a small class (``ClaimKind``) with its own options, statements, tolerance
semantics and figures; kinds live in a ``ClaimRegistry`` (``iclab.experiments.claims.registry``:
the built-ins registered exactly as a new kind would be), so a new report section is a new
class, not a branch. Claims read result.json numbers, the run's config and the files the sweep
wrote for them (``measurements``) only: checking a claim never trains or evaluates a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from iclab.config.train import TrainConfig
from iclab.experiments.claims.needs import Need, first_unmet
from iclab.experiments.claims.parameters import ClaimParameter, check_parameters
from iclab.experiments.claims.stored import Code, StoredValues
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.figures.measurement_table import Measurement
from iclab.experiments.specs.claim_spec import ClaimSpec, RunMeasurement
from iclab.experiments.specs.measurement_spec import MeasurementSpec
from iclab.experiments.specs.results import RunRecord, Site, axis_value
from iclab.experiments.specs.spec import Spec
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError, Error
from iclab.utils.fields import default_of, field_infos


class ClaimsNotHeldError(Error, RuntimeError):
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


class NoSweepFolderError(ConfigError):
    """A claim asked for the sweep folder where there is none (claims checked on records
    alone, as the claim probe does before any run)."""


class KindLookup(Protocol):
    """Claim kinds by name (a ``ClaimRegistry``)."""

    def get(self, name: str) -> ClaimKind:
        """The kind called ``name``."""


class ClaimContext:
    """What a claim may need beyond its group's results: a cache shared by the claims of
    one evaluation (the Monte Carlo Bayes risk of a site, say), the sweep folder
    ``out_dir`` (None when the claims are checked on records alone), where run ``run_id``'s
    folder is ``out_dir/runs/<run_id>``, the spec and all records (for claims that compare
    groups, and for figures; None outside ``evaluate_claims``), and the claim kinds
    (``kinds``, for a figure that shows several kinds' claims). Before any run the claim
    probe (``iclab.experiments.claims.probe``) checks a user's kind on synthetic records
    with no sweep folder: a kind that reads the sweep's files asks for them through
    ``sweep``, which then raises ``NoSweepFolderError``."""

    def __init__(self, cache: dict[Any, Any] | None = None,
                 out_dir: str | Path | None = None, spec: Spec | None = None,
                 records: dict[str, RunRecord] | None = None,
                 kinds: KindLookup | None = None) -> None:
        self.cache: dict[Any, Any] = {} if cache is None else cache
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.spec = spec
        self.records = records
        self.kinds = kinds

    def sweep(self, what: str) -> tuple[Spec, dict[str, RunRecord], Path]:
        """The spec, the records and the sweep folder; ConfigError saying that ``what`` needs
        them when the context lacks one."""
        if self.spec is None or self.records is None or self.out_dir is None:
            raise NoSweepFolderError(f"{what} needs the spec, the records and the sweep folder")
        return self.spec, self.records, self.out_dir

    def stored(self, name: str, code: Code, encode: Callable[[Any], Any],
               decode: Callable[[Any], Any]) -> StoredValues[Any]:
        """The values called ``name`` that ``code`` (a function, or a tuple of the functions
        whose modules' code the values depend on) computes, shared by this evaluation's
        claims and kept in the sweep folder (``iclab.experiments.claims.stored``): a report
        made again reads them back."""
        key = ("stored-values", name)
        if key not in self.cache:
            self.cache[key] = StoredValues(self.out_dir, name, code, encode, decode)
        values: StoredValues[Any] = self.cache[key]
        return values

    def kind(self, name: str) -> ClaimKind:
        """The claim kind called ``name`` (ConfigError without ``kinds``)."""
        if self.kinds is None:
            raise ConfigError(f"claim kind {name!r}: the context has no claim kinds")
        return self.kinds.get(name)


DEPTH_KEYS = ("layers", "parameterisation", "looped")
"""Model options of the L-layer lsa that ``describe`` names when a run sets them."""


def _family_options(point: Any) -> list[tuple[str, Any]]:
    """The family's (and its extensions') scalar options a run sets away from their
    defaults, by option name (the covariances are shown by their labels)."""
    task = point.config.task
    shown = []
    for key, name in type(task).option_keys.items():
        f, info = field_infos(type(task))[key]
        value = getattr(task, key)
        if info.kind != "matrix" and value is not None and value != default_of(f):
            shown.append((name, value))
    return shown


def describe(site: Site, depth: bool = False, omit: str = "") -> str:
    """The setting of a site in words: family, d, n, sigma, the family's own options where
    set (a covariate law, an AR(1) rho, a width, ...), non-identity covariances; the L-layer
    options where a run sets them or the group sweeps them, or always (layers,
    parameterisation, looped when true) with ``depth``; ``omit``: a key to leave out."""
    config, point = site.config, site.records[0].point
    config = {**config, **{k: v for k, v in site.values.items() if k in DEPTH_KEYS}}
    if depth:
        config = {**config, **{key: axis_value(point, key) for key in DEPTH_KEYS[:2]}}
    parts = [str(config["family"]), f"d={config['d']}", f"n={config['n']}",
             f"sigma={config['sigma']}"]
    parts += [f"{name}={value}" for name, value in _family_options(point)]
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
    may add checks across them. ``requires`` declares what every run of a claim's group
    must be (``iclab.experiments.claims.needs``), checked when the spec is loaded; a kind whose
    needs depend on its options or parameters adds them in ``unmet``."""

    name: ClassVar[str] = ""
    needs_runs: ClassVar[bool] = True
    """False: the kind computes what it checks from its parameters alone (no training runs);
    its claims may then omit ``group``, and ``check`` gets no sites."""
    options: ClassVar[dict[str, tuple[str, ...]]] = {}
    statements: ClassVar[dict[str, str]] = {}
    parameters: ClassVar[dict[str, ClaimParameter]] = {}
    requires: ClassVar[tuple[Need, ...]] = ()

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        """What the claim ``spec`` needs of the run of ``config`` (``task``: its family) that
        the run lacks, in words, or None: the first of ``requires`` not met by default. The
        spec loader asks it of every run of the claim's group before any run."""
        return first_unmet(self.requires, config, task)

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        """The checked values of the declared parameters from a claim's raw table (defaults
        filled in); ConfigError, one line starting with ``where``, on a bad value."""
        return check_parameters(self.parameters, raw, where)

    def check_groups(self, parameters: dict[str, Any], group: str, groups: set[str],
                     where: str) -> None:
        """Checks of the checked ``parameters`` against the spec's group names (a parameter
        naming another group, say); ConfigError, one line starting with ``where``."""

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        """What each run of the claim's group must be measured on beyond result.json (the
        checked ``parameters`` say what): the sweep makes these measurements after training
        and writes them into the run folders; the kind's checks read them. None by default."""
        return ()

    measurement_key: ClassVar[str | None] = None
    """The key that makes a spec's ``[[measurements]]`` table this kind's (None: the kind makes
    no measurement tables); it then implements ``parse_measurement`` and
    ``report_measurement``."""

    def parse_measurement(self, table: dict[str, Any], where: str) -> dict[str, Any]:
        """The checked parameters of a measurement table's own keys (``section`` and
        ``groups`` taken out); ConfigError, one line starting with ``where``."""
        raise ConfigError(f"{where}: claim kind {self.name!r} makes no measurements")

    def report_measurement(self, measurement: MeasurementSpec, index: int,
                           context: ClaimContext) -> Measurement:
        """The table and figure (written into the sweep folder) of the ``index``-th
        measurement of the spec, from the run folders the sweep measured."""
        raise ConfigError(f"claim kind {self.name!r} makes no measurements")

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        """The figure the claim appears in: the claims of a spec with the same key share one,
        drawn by the first one's kind (``draw_figures``); None: the claim has no figure."""
        return None

    def figure_covers(self, claims: list[ClaimSpec]) -> set[tuple[str, str]]:
        """The keys of other figures that this kind's figure of ``claims`` shows as well, so
        the report leaves them out (none by default)."""
        return set()

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        """Draw the figure of ``claims`` (one key; the first is this kind's) into the sweep
        folder and return its files; the context holds the spec, records and folder."""
        return []

    def reference_loss(self, spec: ClaimSpec, site: Site,
                       context: ClaimContext) -> float | None:
        """The loss a figure of test losses draws beside the site's (the Bayes risk, say), or
        None (the default)."""
        return None

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
