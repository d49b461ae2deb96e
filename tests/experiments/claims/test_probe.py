"""The claim probe's synthetic results have every key a real run's result.json has (so a
kind that reads a real key is never refused for it), with finite numbers; iclab's own kinds
are not probed, and the probe writes nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from iclab.config.train import TrainConfig
from iclab.experiments.claims.probe import probe_claim_kinds, synthetic_result
from iclab.experiments.claims.registry import ClaimRegistry
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.groups import Point
from iclab.runs import run_training


def numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in numbers(v)]
    return [float(value)] if isinstance(value, int | float) else []


@pytest.mark.parametrize("options", [{}, {"layers": 2, "parameterisation": "sparse"}])
def test_a_synthetic_result_has_every_key_of_a_real_one(options: dict[str, Any],
                                                        tmp_path: Path) -> None:
    config = TrainConfig.flat(d=2, n=4, sigma=0.5, steps=3, eval_prompts=200, **options)
    real = run_training(config, tmp_path, progress=False)
    synthetic = synthetic_result(Point(config, config.hash(), ("g",), "I", "I"))
    missing = set(real) - set(synthetic) - {"binding", "sampler"}
    missing -= {key for key, value in real.items() if value is None}
    assert not missing
    for key, value in synthetic.items():  # the same types where both have the key
        if key in real and real[key] is not None:
            assert type(value) is type(real[key]) or {type(value), type(real[key])} <= \
                {int, float}, key
    assert all(math.isfinite(x) for x in numbers(synthetic))
    json.dumps(synthetic, allow_nan=False)


def test_iclabs_own_kinds_are_not_probed(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    registries = Registries()
    spec = builtin_spec("reproduce-quick", registries)
    called = []
    monkeypatch.setattr("iclab.experiments.claims.probe.synthetic_records",
                        lambda spec: called.append(spec) or {})
    probe_claim_kinds(spec, ClaimRegistry())
    assert called == [] and list(tmp_path.iterdir()) == []
