"""The Sequence models section (examples/sequence.toml, claim kind ``wpgd``): the spec's
claims each have a source and judge the groups they need; a claim on a model without a WPGD
read-out is refused before any run; the sweep holds every claim (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.experiments.registries import Registries
from iclab.experiments.specs.spec import load_spec
from iclab.utils.errors import ConfigError

SPEC = Path(__file__).resolve().parents[3] / "examples" / "sequence.toml"


def test_the_spec_states_its_claims_with_sources() -> None:
    spec = load_spec(SPEC, Registries())
    assert {claim.section for claim in spec.claims} == {"Sequence models"}
    assert all(claim.source.strip() for claim in spec.claims)
    compares = {(claim.group, claim.options["compare"]) for claim in spec.claims}
    assert {("seq-h3-iid", "at-optimum"), ("seq-h3-drift", "below-lsa"),
            ("seq-gla-drift", "at-optimum"), ("seq-gla-drift", "weights")} <= compares
    families = {p.config.task.family for p in spec.group("seq-gla-drift").points}
    assert families == {"drifting-linear"}


def test_a_wpgd_claim_on_a_model_without_the_readout_is_refused(tmp_path: Path) -> None:
    text = SPEC.read_text().replace('name = "seq-h3-iid"\nmodel = "h3"',
                                    'name = "seq-h3-iid"\nmodel = "lsa"')
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="needs a model with a WPGD read-out"):
        load_spec(path, Registries())


@pytest.mark.slow
def test_the_sweep_holds_every_claim(tmp_path: Path) -> None:
    out = tmp_path / "sequence"
    assert main(["sweep", str(SPEC), "--out", str(out), "--quiet"]) == 0
    claims = json.loads((out / "claims.json").read_text())
    assert len(claims) == 8 and all(claim["holds"] is True for claim in claims)
