"""results.csv: config columns from the declarations, matrices summarised by their labels."""

from __future__ import annotations

import numpy as np

from iclab.experiments.registries import Registries
from iclab.experiments.specs.results import RunRecord, results_rows, stderr_of_mean
from iclab.experiments.specs.spec import parse_spec

RESULT = {"eta_hat": 0.1, "eta_star": 0.1, "test_loss": 1.0, "test_loss_stderr": 0.01,
          "loss_star": 1.0}


def test_a_position_covariance_is_one_labelled_column() -> None:
    R = (0.5 * np.eye(6) + 0.5).tolist()
    data = {"defaults": {"d": 2, "n": 5, "sigma": 0.5}, "covariances": {"R": R},
            "groups": [{"name": "g", "x_law": ["gaussian", "laplace"]},
                       {"name": "h", "context_covariance": "R"}]}
    points = parse_spec(data, "t", Registries()).points()
    records = {p.run_id: RunRecord(p, RESULT) for p in points}
    header, *rows = results_rows(records)
    assert header.count("context_covariance") == 1 and "x_law" in header
    column = header.index("context_covariance")
    law = header.index("x_law")
    assert [row[column] for row in rows] == ["", "", "R"]
    assert [row[law] for row in rows] == ["gaussian", "laplace", "gaussian"]
    plain = {p.run_id: RunRecord(p, RESULT) for p in points[:1]}
    assert "context_covariance" not in results_rows(plain)[0]        # absent when unused


def test_the_standard_error_of_a_mean_over_independent_seeds() -> None:
    assert stderr_of_mean([3.0, 4.0]) == 2.5        # sqrt(9 + 16) / 2
    assert stderr_of_mean([0.2]) == 0.2
    assert stderr_of_mean([1.0] * 4) == 0.5         # falls like 1 / sqrt(count)
