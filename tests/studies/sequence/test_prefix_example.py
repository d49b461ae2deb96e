"""examples/sequence-prefix.toml: the Mamba-style model beside the transformer on two
families, every group with prefix claims, read by the spec loader as a user's spec is."""

from __future__ import annotations

from pathlib import Path

from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import load_spec

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sequence-prefix.toml"


def test_the_example_pairs_mamba_with_the_transformer_on_both_families() -> None:
    spec = load_spec(EXAMPLE, Registries())
    pairs = {(p.config.model_name, p.config.task.family) for group in spec.groups
             for p in group.points}
    assert pairs == {(model, family) for model in ("mamba", "transformer")
                     for family in ("linear-gaussian", "sparse-linear")}
    claimed = {(claim.group, claim.options["compare"]) for claim in spec.claims}
    assert claimed == {(group.name, compare) for group in spec.groups
                       for compare in ("falls", "below-averaging")}
    assert all(claim.kind == "prefix" and claim.source for claim in spec.claims)
