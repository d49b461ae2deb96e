"""``iclab models`` lists the transformer with its options and its capability."""

from __future__ import annotations

import pytest

from iclab.cli.main import main


def test_models_lists_the_transformer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("transformer:"):]
    assert "capabilities: prefix_predictions" in block
    for option in ("--layers", "--heads", "--width", "--mlp-width", "--dropout", "--bfloat16"):
        assert option in block
