from iclab.experiments.registries import Registries
from iclab.experiments.report.section_times import PhaseTimer, section_seconds, timing_text
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import parse_spec

SPEC = {"name": "t", "defaults": {"d": 2, "steps": 10},
        "groups": [{"name": "a", "seeds": [0, 1], "n": 4},
                   {"name": "b", "seeds": [0], "n": [4, 8], "layers": 2,
                    "parameterisation": "sparse"},
                   {"name": "c", "seeds": [0], "n": 4, "layers": 2, "looped": True,
                    "parameterisation": "sparse"}],
        "claims": [{"section": "One", "kind": "eta", "group": "a", "tolerance": 0.1},
                   {"section": "Two", "kind": "test-loss", "group": "a", "tolerance": 0.1},
                   {"section": "Two", "kind": "loss-below", "group": "b", "than": "c",
                    "tolerance": 3}]}


def test_each_section_sums_the_runs_its_claims_read_shared_runs_in_both() -> None:
    spec = parse_spec(SPEC, "t", Registries())
    seconds = {"a": [1.0, 2.0], "b": [10.0, 20.0], "c": [100.0]}
    records = {}
    for name, values in seconds.items():
        for point, value in zip(spec.group(name).points, values, strict=True):
            records[point.run_id] = RunRecord(point, {"wall_seconds": value,
                                                      "cpu_seconds": value / 2})
    assert section_seconds(spec, records) == {"One": (2, 3.0, 1.5), "Two": (5, 133.0, 66.5)}
    timer = PhaseTimer()
    with timer.phase("claims"):
        pass
    text = timing_text(spec, records, timer)
    assert "One 3 / 2 s (2 runs), Two 133 / 66 s (5 runs)" in text and "claims 0 s" in text
