"""The transformer: causal prefix predictions, the query prediction, seeding, chunking, options."""

from __future__ import annotations

import pytest
import torch

from iclab.models.registry import ModelRegistry
from iclab.studies.transformer.model import EVAL_CHUNK, Transformer
from iclab.studies.transformer.options import TransformerOptions
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

D = 3


def _model(seed: int = 0, **options: object) -> Transformer:
    return Transformer.create(D, TransformerOptions(**options),  # type: ignore[arg-type]
                              make_generator(seed, "test"), torch.float64)


def _prompt(batch: int, n: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = make_generator(seed, "prompt")
    X = torch.randn(batch, n, D, generator=generator, dtype=torch.float64)
    y = torch.randn(batch, n, generator=generator, dtype=torch.float64)
    return X, y


def test_prediction_i_reads_only_the_examples_before_i_and_x_i() -> None:
    model = _model(init_scale=0.3)
    X, y = _prompt(4, 6)
    base = model.predict_prefixes(X, y)
    assert base.shape == (4, 6)
    for i in range(6):
        X2, y2 = X.clone(), y.clone()
        y2[:, i:] += 5.0               # y_i and later labels: unseen by prediction i
        X2[:, i + 1:] -= 3.0           # later inputs: unseen too
        changed = model.predict_prefixes(X2, y2)
        assert torch.equal(changed[:, : i + 1], base[:, : i + 1])
        if i > 0:                      # an earlier label does change prediction i
            y3 = y.clone()
            y3[:, i - 1] += 5.0
            assert not torch.allclose(model.predict_prefixes(X, y3)[:, i], base[:, i])


def test_forward_is_the_last_prefix_with_the_query_appended() -> None:
    model = _model(init_scale=0.3)
    X, y = _prompt(5, 4)
    x_q = torch.randn(5, D, generator=make_generator(2, "q"), dtype=torch.float64)
    full = model.predict_prefixes(torch.cat([X, x_q[:, None]], 1),
                                  torch.cat([y, torch.zeros(5, 1, dtype=torch.float64)], 1))
    assert torch.allclose(model(X, y, x_q), full[:, -1], rtol=0, atol=1e-12)
    assert torch.allclose(full[:, :4], model.predict_prefixes(X, y), rtol=0, atol=1e-12)


def test_seeded_and_chunked_evaluation_agree() -> None:
    a, b, c = _model(0), _model(0), _model(1)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.positions, c.positions)
    X, y = _prompt(EVAL_CHUNK + 3, 2)
    with torch.no_grad():
        chunked = a.predict_prefixes(X, y)
    whole = a.predict_prefixes(X, y)  # with gradients: one pass
    assert torch.allclose(chunked, whole.detach(), rtol=0, atol=1e-12)


def test_options_are_checked_in_one_line() -> None:
    with pytest.raises(ConfigError, match="divisible by heads"):
        _model(width=10, heads=3)
    with pytest.raises(ConfigError, match="max_examples"):
        Transformer.check_prompt_length(TransformerOptions(max_examples=8), 8)
    Transformer.check_prompt_length(TransformerOptions(max_examples=8), 7)
    assert TransformerOptions(width=16).hidden() == 64
    assert TransformerOptions(width=16, mlp_width=5).hidden() == 5


def test_registered_with_honest_capabilities() -> None:
    model_class = ModelRegistry().get("transformer")
    assert model_class is Transformer
    caps = _model().capabilities()
    assert caps == {"readout": False, "statistics": False, "exact_loss": False,
                    "prefix_predictions": True}


def test_dropout_is_seeded_and_off_in_eval() -> None:
    X, y = _prompt(3, 4)
    a, b = _model(0, dropout=0.5), _model(0, dropout=0.5)
    assert torch.equal(a.predict_prefixes(X, y), b.predict_prefixes(X, y))
    a.eval()
    with torch.no_grad():
        assert torch.equal(a.predict_prefixes(X, y), _model(0).eval().predict_prefixes(X, y))
