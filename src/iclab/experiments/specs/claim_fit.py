"""Every claim of a spec checked against every run of its group when the spec is loaded.

A claim kind declares what it needs of a run (``ClaimKindSchema.unmet``: a model with a
read-out, a task pool, sigma > 0, ...; ``iclab.experiments.claims.needs``). A claim put on a
group it cannot judge is refused here, in one line naming the claim, the group, the run and
what is missing, before any run folder exists: not after every run of the sweep is trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from iclab.config.train import TrainConfig
from iclab.experiments.specs.claim_spec import ClaimKinds, ClaimSpec
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import error_line, is_builtin_code


class Point(Protocol):
    """A run of a group (``iclab.experiments.specs.spec.Point``)."""

    @property
    def config(self) -> TrainConfig: ...

    @property
    def run_id(self) -> str: ...


class GroupSpec(Protocol):
    """A group of runs (``iclab.experiments.specs.spec.GroupSpec``)."""

    @property
    def name(self) -> str: ...

    @property
    def points(self) -> Sequence[Point]: ...

    @property
    def axes(self) -> Sequence[str]: ...


def _where(group: GroupSpec, point: Point) -> str:
    """The run in words: the group's axis values and seed."""
    config = point.config
    flat = {key: value for section in (config.task, config.optim, config.run, config.model)
            for key, value in vars(section).items()}
    values = [f"{axis}={flat.get(axis)!r}" for axis in group.axes]
    return ", ".join([*values, f"seed={point.config.run.seed}"])


def check_claims_fit(claims: Sequence[ClaimSpec], groups: Sequence[GroupSpec],
                     kinds: ClaimKinds, source: str) -> None:
    """ConfigError (one line) at the first claim whose kind cannot judge a run of its group;
    a user's kind whose ``unmet`` raises or returns anything but None or a string is one line
    too. Each run's task family is built once."""
    by_name = {group.name: group for group in groups}
    tasks: dict[str, Any] = {}
    for index, claim in enumerate(claims):
        if not claim.group:
            continue
        kind = kinds.get(claim.kind)
        group = by_name[claim.group]
        label = f"{source}: claims[{index}] (kind {claim.kind}) on group {claim.group!r}"
        for point in group.points:
            if point.run_id not in tasks:
                tasks[point.run_id] = point.config.make_task()
            try:
                missing = kind.unmet(claim, point.config, tasks[point.run_id])
            except ConfigError:
                raise
            except (Exception, SystemExit) as error:  # a user's kind: one line
                if is_builtin_code(type(kind)):
                    raise
                raise ConfigError(f"{label}: the kind's unmet failed "
                                  f"({error_line(error)})") from None
            if missing is None:
                continue
            if not isinstance(missing, str):
                raise ConfigError(f"{label}: the kind's unmet must return None or a string, "
                                  f"got {type(missing).__name__}")
            raise ConfigError(f"{label} cannot judge its run {_where(group, point)}: the "
                              f"claim needs {missing}")
