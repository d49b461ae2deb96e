"""The Probes section (claim kind ``probe``): it joins both built-in sets (the quick one
without the transformer's claims); on a small sweep the LSA claims hold, and each claim fails
when its theory is patched by an amount the field cares about: the one-step GD target swapped
for least squares' prediction (the LSA is GD, not OLS), the transformer's margin over the
random initialisation raised from 0.25 to 0.6, its best layer moved off the last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.experiments.claims.registry import evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec, load_spec
from iclab.experiments.specs.results import load_records, run_dir
from iclab.experiments.specs.sweep import measure_runs
from iclab.studies.probes.claims import ProbeMeasurement

pytestmark = pytest.mark.usefixtures("one_thread")

GROUPS = """name = "probes-test"
[defaults]
d = 3
eval_prompts = 1000
[[groups]]
name = "lsa"
seeds = [0]
n = 10
sigma = 0.0
steps = 300
[[groups]]
name = "tf"
model = "transformer"
layers = 2
width = 16
max_examples = 16
seeds = [0]
n = 8
sigma = 0.0
steps = 5
"""

CLAIMS = {
    "gd": ('compare = "at-least"\ngroup = "lsa"\nhook = "attn"\ntarget = "gd1_pred"\n'
           'threshold = 0.99\nprompts = 400'),
    "init": ('compare = "init-below"\ngroup = "lsa"\nhook = "attn"\ntarget = "gd1_pred"\n'
             'threshold = 0.5\nprompts = 400'),
    "above": ('compare = "above-init"\ngroup = "tf"\nhook = "resid"\ntarget = "w_ols"\n'
              'threshold = 0.25\nprompts = 200'),
    "deepest": ('compare = "deepest-highest"\ngroup = "tf"\nhook = "resid"\n'
                'target = "w_ols"\nprompts = 200'),
}


def spec_text(**patched: str) -> str:
    claims = {**CLAIMS, **patched}
    return GROUPS + "".join(f'[[claims]]\nsection = "Probes"\nkind = "probe"\n{body}\n'
                            f'tolerance = 4\nsource = "test"\n' for body in claims.values())


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("claims")
    (root / "spec.toml").write_text(spec_text())
    assert main(["sweep", str(root / "spec.toml"), "--out", str(root / "out"), "--quiet",
                 "--workers", "1"]) in (0, 1)
    return root


def verdicts(sweep: Path, text: str, transformer_rows: list[tuple[int, float, float]]
             ) -> list[bool]:
    """The claims of ``text`` on the sweep's runs, the transformer's probe.json replaced by
    ``transformer_rows`` (layer, trained R^2, init R^2; standard errors 0.01)."""
    registries = Registries()
    (sweep / "patched.toml").write_text(text)
    spec = load_spec(sweep / "patched.toml", registries)
    out = sweep / "out"
    measure_runs(spec, out)
    (point,) = spec.group("tf").points
    claim = next(c for c in spec.claims if c.group == "tf")
    folder = ProbeMeasurement(claim.parameters).folder(run_dir(out, point.run_id))
    rows = [{"layer": layer, "control": control, "target": "w_ols", "r2": r2,
             "r2_stderr": 0.01} for layer, trained, init in transformer_rows
            for control, r2 in (("trained", trained), ("init", init))]
    (folder / "probe.json").write_text(json.dumps({"rows": rows}))
    claims = evaluate_claims(spec, load_records(spec, out), registries.claims, out_dir=out)
    return [claim.holds for claim in claims]


AKYUREK_LIKE = [(0, 0.0, 0.0), (1, 0.35, 0.0), (2, 0.48, 0.01)]


def test_the_claims_hold_on_the_sweep(sweep: Path) -> None:
    assert verdicts(sweep, spec_text(), AKYUREK_LIKE) == [True, True, True, True]


def test_each_claim_fails_when_its_theory_is_patched(sweep: Path) -> None:
    ols = CLAIMS["gd"].replace('"gd1_pred"', '"w_ols_pred"')
    margin = CLAIMS["above"].replace("0.25", "0.6")
    held = verdicts(sweep, spec_text(gd=ols, above=margin), AKYUREK_LIKE)
    assert held == [False, True, False, True]
    middle = [(0, 0.0, 0.0), (1, 0.48, 0.0), (2, 0.35, 0.01)]      # best before the end
    assert verdicts(sweep, spec_text(), middle) == [True, True, True, False]


def test_the_random_initialisation_control_fails_past_its_threshold(sweep: Path) -> None:
    """The init control's R^2 is about 0 here: a threshold of -0.5 cannot hold."""
    below = CLAIMS["init"].replace("0.5", "-0.5")
    assert verdicts(sweep, spec_text(init=below), AKYUREK_LIKE)[1] is False


def test_the_section_joins_both_sets() -> None:
    full, quick = (builtin_spec(name, Registries()) for name in
                   ("reproduce", "reproduce-quick"))
    full_probes = [(c.group, c.options["compare"]) for c in full.claims
                   if c.section == "Probes"]
    assert full_probes == [("theorem1-sigma", "at-least"), ("theorem1-sigma", "init-below"),
                           ("transformers", "deepest-highest"), ("transformers", "above-init")]
    assert [c.group for c in quick.claims if c.section == "Probes"] == ["theorem1-sigma"] * 2
    assert full.budgets["Probes"].driver <= 8 and quick.budgets["Probes"].driver <= 2
    assert all(c.source for c in full.claims if c.section == "Probes")
