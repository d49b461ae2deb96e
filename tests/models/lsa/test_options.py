"""The ``lsa`` options: depth bounded where it is declared by the theory's own limit, and the
depth every stage reads declared once on the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.theory.depth.multistep import MAX_LAYERS
from iclab.utils.errors import ConfigError


def test_a_depth_beyond_the_theory_exits_2_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "DIR"
    code = main(["train", "--layers", str(MAX_LAYERS + 1), "--d", "3", "--n", "5",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"<= {MAX_LAYERS}" in err and f"got {MAX_LAYERS + 1}" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_deepest_allowed_model_is_one_the_theory_judges() -> None:
    deepest = TrainConfig.from_json({"d": 3, "n": 5, "layers": MAX_LAYERS}).validate()
    assert deepest.depth() == MAX_LAYERS
    with pytest.raises(ConfigError, match=f"<= {MAX_LAYERS}"):
        TrainConfig.from_json({"d": 3, "n": 5, "layers": MAX_LAYERS + 1}).validate()


@pytest.mark.parametrize(("options", "depth"), [
    ({}, None), ({"layers": 3}, 3), ({"parameterisation": "sparse"}, 1),
    ({"layers": 2, "looped": True}, 2), ({"model": "softmax"}, None),
])
def test_the_declared_depth_decides_which_optimum_a_run_is_judged_against(
        options: dict[str, object], depth: int | None) -> None:
    """One-layer runs are judged against L*, L-layer stacks (sparse and looped ones at any L)
    against the optimal L-step GD: the result of a short run says which."""
    from iclab.runs.pipeline import run_training

    config = TrainConfig.from_json({"d": 2, "n": 4, "sigma": 0.5, "steps": 2, "batch": 64,
                                    "eval_prompts": 200, **options}).validate()
    assert config.depth() == depth
    if depth is None:
        return
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        result = run_training(config, Path(folder) / "run", progress=False)
    assert result["layers"] == depth and len(result["gd_steps_etas"]) == depth
    assert result["verdict_reference"] == "the optimal L-step GD loss (gd_steps_loss)"
