"""The report: claims.json, PNG figures, a self-contained report.html and report.md."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from iclab.experiments.claims.registry import ClaimRegistry
from iclab.experiments.registries import Registries
from iclab.experiments.report.write import write_report
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.theory.gaussian import gaussian_optimum

PNG = b"\x89PNG\r\n\x1a\n"


def make_spec() -> Spec:
    def claim(section: str, kind: str, group: str, **options: Any) -> dict[str, Any]:
        return {"section": section, "kind": kind, "group": group, "tolerance": 0.02, **options}

    return parse_spec({
        "name": "demo", "description": "A demo <sweep> & report.",
        "defaults": {"d": 2, "steps": 10},
        "covariances": {"S": [[1.25, 0.75], [0.75, 1.25]]},
        "sections": {"Theorem 1": "The isotropic case."},
        "groups": [
            {"name": "sig", "seeds": [0, 1], "n": 6, "sigma": [0.0, 0.5, 1.0]},
            {"name": "fam", "seeds": [0, 1], "n": 6, "sigma": 0.5,
             "lr_schedule": ["cosine", "constant"]},
            {"name": "idw", "n": 4, "sigma": 0.5, "cov_x": "S"},
            {"name": "ns", "seeds": [0], "n": [4, 8], "sigma": 0.5},
        ],
        "claims": [
            claim("Theorem 1", "eta", "sig", reference="theorem1"),
            claim("Theorem 1", "isotropy", "sig"),
            claim("Theorem 3", "eta", "fam"),
            claim("Theorem 2", "gamma", "idw"),
            claim("Theorem 2", "not-multiple", "idw", of="inverse-cov-x"),
            claim("Context", "test-loss", "ns"),
            claim("Context", "above-bayes", "ns"),
        ],
    }, "demo.toml", Registries())


def records(spec: Spec) -> dict[str, RunRecord]:
    """Results of models that learned exactly the optimum, with a 0.5% seed-dependent wobble."""
    out = {}
    for point in spec.points():
        config, task = point.config, point.config.make_task()
        optimum = gaussian_optimum(config.task.n, config.task.sigma, task.sigma_x, task.sigma_w)
        gamma = optimum.gamma * (1 + 0.005 * config.run.seed)
        eta = float(np.trace(gamma) / 2)
        out[point.run_id] = RunRecord(point, {
            "eta_hat": eta, "eta_star": optimum.eta, "gamma": gamma.tolist(),
            "gamma_star": optimum.gamma.tolist(), "isotropy_err": 0.001,
            "test_loss": optimum.loss, "test_loss_stderr": 0.01, "loss_star": optimum.loss,
            "wall_seconds": 2.0})
    return out


def test_report_files(tmp_path: Path) -> None:
    spec = make_spec()
    claims = write_report(spec, records(spec), tmp_path, ClaimRegistry())
    assert all(claim.holds for claim in claims)
    saved = json.loads((tmp_path / "claims.json").read_text())
    assert saved == [claim.to_json() for claim in claims]
    names = {"sig_eta.png", "fam_eta.png", "idw_gamma.png", "ns_loss.png"}
    assert names <= {p.name for p in tmp_path.glob("*.png")}
    for name in names:
        assert (tmp_path / name).read_bytes().startswith(PNG)

    html = (tmp_path / "report.html").read_text()
    embedded = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(embedded) == len(names)
    assert {base64.b64decode(data) for data in embedded} == \
        {(tmp_path / name).read_bytes() for name in names}
    assert not re.search(r"(src|href)=['\"](?!data:)", html)  # nothing to fetch: self-contained
    assert "A demo &lt;sweep&gt; &amp; report." in html
    assert html.count("class='holds'") == len(claims)

    markdown = (tmp_path / "report.md").read_text()
    for name in names:
        assert f"]({name})" in markdown
    assert "## Theorem 1" in markdown and "The isotropic case." in markdown
    assert f"All {len(claims)} claims hold." in markdown


def test_a_failed_claim_shows_in_the_report(tmp_path: Path) -> None:
    spec = make_spec()
    recs = records(spec)
    for record in recs.values():
        if record.point.groups == ("idw",):
            record.result["gamma"] = (1.1 * np.asarray(record.result["gamma"])).tolist()
    claims = write_report(spec, recs, tmp_path, ClaimRegistry())
    failed = [c for c in claims if not c.holds]
    assert len(failed) == 1 and failed[0].value > 0.02
    assert "1 of" in (tmp_path / "report.md").read_text()
    assert "class='fails'" in (tmp_path / "report.html").read_text()
    assert "Training diagnostics" not in (tmp_path / "report.md").read_text()


def test_runs_far_from_the_optimum_are_listed(tmp_path: Path) -> None:
    spec = make_spec()
    recs = records(spec)
    stuck = next(r for r in recs.values() if r.point.groups == ("idw",))
    stuck.result["gamma_rel_err"] = 0.9
    write_report(spec, recs, tmp_path, ClaimRegistry())
    for name in ("report.md", "report.html"):
        text = (tmp_path / name).read_text()
        assert "Training diagnostics" in text and f"run {stuck.point.run_id}" in text
