"""What a looped transformer run (``--model transformer --loops T``; Yang et al., ICLR 2024)
adds to result.json and to ``iclab train``'s table: its parameter count beside the non-looped
transformers' (docs/theory.md section 21.3). The looped model applies its ``layers`` blocks T
times with shared weights, so it holds the parameters of ``layers`` blocks and computes as
deeply as ``layers`` x T of them.

The ``looped`` claim kind states that weight tying adds no parameters, beside the looped and
non-looped test losses as a measurement.

Keys: parameter_count (the looped model), parameter_count_unlooped_same_depth (``layers`` x T
blocks without loops: the same compute), loop_rows (the rows ``iclab train`` prints). The same
weights unlooped are the transformer of ``layers`` blocks (the looped model's own count).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import Need
from iclab.experiments.claims.parameters import ClaimParameter
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site, sites
from iclab.models.base import Model
from iclab.runs.outputs import RunOutput
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.options import TransformerOptions
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError


def loop_counts(options: TransformerOptions, d: int) -> dict[str, Any]:
    """The result keys of the module docstring for a looped transformer's options."""
    loops = options.loops or 1
    unlooped = dataclasses.replace(options, layers=options.layers * loops, loops=None)
    own = Transformer.parameter_count(options, d)
    deep = Transformer.parameter_count(unlooped, d)
    return {"loops": loops, "parameter_count": own,
            "parameter_count_unlooped_same_depth": deep,
            "loop_rows": [[f"parameters ({options.layers} blocks x {loops} loops)", str(own)],
                          [f"parameters, non-looped: {options.layers} blocks",
                           f"{own} (the same weights)"],
                          [f"parameters, non-looped: {options.layers * loops} blocks",
                           str(deep)]]}


class LoopOutput(RunOutput):
    """The parameter counts of every transformer run with ``--loops``."""

    name = "looped transformer"

    def applies(self, model: Model, task: TaskFamily) -> bool:
        return isinstance(model, Transformer) and model.options.loops is not None

    def write(self, model: Model, task: TaskFamily, config: TrainConfig,
              path: Path) -> dict[str, Any]:
        assert isinstance(model, Transformer)
        return loop_counts(model.options, model.d)


def _has_loops(config: TrainConfig, task: TaskFamily) -> bool:
    model = config.model_type
    return model is not None and issubclass(model, Transformer) and \
        config.model.loops is not None


LOOPED = Need("a looped transformer (--model transformer --loops T)", _has_loops)


def _group_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"must be a group name, got {value!r}")
    return value


def _count(site: Site) -> int:
    config = site.records[0].point.config
    if not issubclass(config.model_class(), Transformer):
        raise ConfigError(f"the looped claim compares transformers; site {site.label!r} is "
                          f"model {config.model_name!r}")
    return Transformer.parameter_count(config.model, config.task.d)


def _loss(site: Site) -> str:
    value = site.mean("test_loss")
    return f"{value:.4f} ± {site.mean_stderr('test_loss'):.4f}"


class LoopedClaim(ClaimKind):
    """``looped`` (parameter ``than``: a group of non-looped transformers): the looped model
    holds exactly the parameters of the non-looped one of its blocks (weight tying: Yang et
    al. 2024), value = its count, theory = the other's, holds when equal (tolerance 0, as a
    relative difference). The two test losses are a stated measurement, in the metric's text,
    not claimed."""

    name = "looped"
    requires = (LOOPED,)
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "than": ClaimParameter("the group of non-looped transformers set beside it",
                               _group_name, required=True)}
    statements: ClassVar[dict[str, str]] = {
        "": "the looped transformer holds as many parameters as the non-looped one of group "
            "{than}"}

    def check_groups(self, parameters: dict[str, Any], group: str, groups: set[str],
                     where: str) -> None:
        if parameters["than"] not in groups - {group}:
            raise ConfigError(f"{where}: than must be another group, one of "
                              f"{sorted(groups - {group})}; got {parameters['than']!r}")

    def statement(self, spec: ClaimSpec) -> str:
        return spec.statement or self.statements[""].format(than=spec.parameters["than"])

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        if context.spec is None or context.records is None:
            raise ConfigError(f"the looped claim on group {spec.group!r} needs the spec and "
                              f"the records of the sweep")
        others = sites(context.spec, context.records, spec.parameters["than"])
        claims = []
        for site, other in zip(group_sites, others, strict=False):
            mine, theirs = _count(site), _count(other)
            claims.append(self.claim(
                spec, site, abs(mine / theirs - 1) <= spec.tolerance,
                f"parameters of the looped model vs group {spec.parameters['than']}'s; holds "
                f"when |value / theory - 1| <= tolerance. Measured, not claimed: test loss "
                f"{_loss(site)} looped, {_loss(other)} non-looped ({seeds_phrase(site)})",
                mine, theirs))
        return claims


LOOP_KINDS: tuple[type[ClaimKind], ...] = (LoopedClaim,)
