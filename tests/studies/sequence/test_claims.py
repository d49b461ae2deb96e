"""The Sequence models section (the sequence study's part of iclab reproduce, claim kind
``wpgd``): the section's claims each have a source and judge the groups they need; it joins
the default set and leaves the quick one; a claim on a model without a WPGD read-out is refused
before any run; the section alone, as a sweep, holds every claim (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec, load_spec
from iclab.utils.errors import ConfigError

FRAGMENT = (Path(__file__).resolve().parents[3] / "src" / "iclab" / "studies" / "sequence"
            / "reproduce.toml")
DEFAULTS = 'name = "sequence"\n[defaults]\nd = 5\nsteps = 2000\nlr = 0.01\neval_prompts = 100000\n'


def section_spec(tmp_path: Path, text: str | None = None) -> Path:
    """The section alone as a spec file: reproduce's defaults beside its fragment."""
    path = tmp_path / "sequence.toml"
    path.write_text(DEFAULTS + (FRAGMENT.read_text() if text is None else text))
    return path


def test_the_section_joins_the_default_set_and_leaves_the_quick_one() -> None:
    full, quick = (builtin_spec(name, Registries()) for name in ("reproduce", "reproduce-quick"))
    assert {c.section for c in full.claims if c.kind == "wpgd"} == {"Sequence models"}
    sections = [claim.section for claim in full.claims]  # the studies' after the core's
    assert sections.index("Sequence models") > max(i for i, s in enumerate(sections)
                                                   if s in ("Theorem 1", "Depth", "Context"))
    assert "Sequence models" in full.budgets and "Sequence models" in full.sections
    assert not any(c.section == "Sequence models" for c in quick.claims)
    assert "Sequence models" not in quick.budgets


def test_the_spec_states_its_claims_with_sources(tmp_path: Path) -> None:
    spec = load_spec(section_spec(tmp_path), Registries())
    assert {claim.section for claim in spec.claims} == {"Sequence models"}
    assert all(claim.source.strip() for claim in spec.claims)
    compares = {(claim.group, claim.options["compare"]) for claim in spec.claims}
    assert {("seq-h3-iid", "at-optimum"), ("seq-h3-drift", "below-lsa"),
            ("seq-gla-drift", "at-optimum"), ("seq-gla-drift", "weights")} <= compares
    families = {p.config.task.family for p in spec.group("seq-gla-drift").points}
    assert families == {"drifting-linear"}


def test_a_wpgd_claim_on_a_model_without_the_readout_is_refused(tmp_path: Path) -> None:
    text = FRAGMENT.read_text().replace('name = "seq-h3-iid"\nmodel = "h3"',
                                        'name = "seq-h3-iid"\nmodel = "lsa"')
    with pytest.raises(ConfigError, match="needs a model with a WPGD read-out"):
        load_spec(section_spec(tmp_path, text), Registries())


@pytest.mark.slow
def test_the_sweep_holds_every_claim(tmp_path: Path) -> None:
    out = tmp_path / "sequence"
    assert main(["sweep", str(section_spec(tmp_path)), "--out", str(out), "--quiet"]) == 0
    claims = json.loads((out / "claims.json").read_text())
    assert len(claims) == 8 and all(claim["holds"] is True for claim in claims)
