"""Studies in dependency order (iclab.utils.studies.dependency_order): a study's reproduce
sections come after those of the studies it requires, so a run is counted in the section that
trains it (the Probes claims read the Transformers run)."""

from __future__ import annotations

import pytest

from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec
from iclab.utils.errors import ConfigError
from iclab.utils.studies import Study, dependency_order


def names(studies: tuple[Study, ...]) -> list[str]:
    return [study.name for study in studies]


def test_each_study_follows_what_it_requires_and_the_rest_keep_their_order() -> None:
    a, b, c = Study("a", "", requires=("c",)), Study("b", ""), Study("c", "")
    assert names(dependency_order([a, b, c])) == ["c", "a", "b"]
    assert names(dependency_order([b, c, a])) == ["b", "c", "a"]   # already in order
    assert names(dependency_order([Study("x", "", requires=("absent",))])) == ["x"]


def test_a_cycle_is_one_line() -> None:
    a, b = Study("a", "", requires=("b",)), Study("b", "", requires=("a",))
    with pytest.raises(ConfigError, match="cycle: a -> b -> a"):
        dependency_order([a, b])


def test_the_transformers_section_comes_before_the_sections_that_read_its_run() -> None:
    spec = builtin_spec("reproduce", Registries())
    order = list(dict.fromkeys(claim.section for claim in spec.claims))
    assert order.index("Transformers") < order.index("Probes")
    assert order.index("Transformers") < order.index("Chain of thought")
