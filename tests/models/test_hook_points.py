"""Hook points (iclab.models.hooks) for every registered model of the conformance test:
declared, returned with their documented shapes, the prediction bit-identical with and
without a recorder, and each model's last hook point giving back its prediction by the
model's own read-out (an independent path: the read-out's weights applied by hand)."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional

from iclab.models.base import Model
from iclab.models.hooks import Activations, cache, hook_names
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.test_conformance import MODEL_NAMES, D, N, family, make

BUILT_IN = [name for name in MODEL_NAMES if name != "custom-example"]


def prompts_and_cache(model_name: str) -> tuple[Model, tuple[torch.Tensor, ...], Activations]:
    model = make(model_name)
    prompts = family("linear-gaussian").sample_prompts(16, make_generator(5, "p"),
                                                       torch.float64)
    batch = (prompts.X, prompts.y, prompts.x_q)
    return model, batch, cache(model, *batch)


@pytest.mark.parametrize("model_name", BUILT_IN)
def test_every_hook_point_is_returned_and_the_prediction_is_bit_identical(
        model_name: str) -> None:
    model, batch, activations = prompts_and_cache(model_name)
    assert type(model).hook_points, f"{model_name} declares no hook points"
    assert activations.names == hook_names(model)
    with torch.no_grad():
        plain = model(*batch)
    assert torch.equal(activations.prediction, plain)
    assert model.hook_record is None and model.training
    for name, shape in activations.shapes.items():
        assert len(shape) == 3 and shape[0] == 16, (name, shape)
        # the documented position counts: the query only, e_1..e_n, e_q, or x_1, y_1..x_q
        assert shape[1] in (1, N + 1, 2 * N + 1), (name, shape)


@pytest.mark.parametrize("model_name", BUILT_IN)
def test_the_last_position_is_the_query(model_name: str) -> None:
    """Changing the query alone changes no hook tensor but at position T-1."""
    model, (X, y, x_q), activations = prompts_and_cache(model_name)
    moved = cache(model, X, y, x_q + 1.0)
    query_last = {point.name: point.query_last for point in type(model).hook_points}
    for name in activations.names:
        before, after = activations[name], moved[name]
        assert torch.equal(before[:, :-1], after[:, :-1]), name
        if query_last.get(name, query_last.get(name.split(".")[0], True)):
            assert not torch.equal(before[:, -1], after[:, -1]), name
        else:  # written before the query is read (lsa-cot's estimates): the query is not in it
            assert torch.equal(before, after), name


def readout(model: Model, activations: Activations, x_q: torch.Tensor) -> torch.Tensor:
    """The prediction from the model's last hook point, by its read-out written here."""
    kind = type(model).__name__
    if kind == "LSACoT":
        return (activations["estimates"][:, -1] * x_q).sum(-1)
    if kind == "LinearSelfAttention":
        return activations["attn.1"][:, 0] @ model.h
    if kind == "MultiHeadLinearAttention":
        return activations["attn.1"][:, 0] @ model.v
    if kind == "DeepLinearSelfAttention":
        return -activations[f"resid.{model.hook_depth()}"][:, -1, D]
    if kind == "SoftmaxAttention":
        return activations["resid.1"][:, 0, D]
    if kind == "H3":
        return activations["attn.1"][:, 0] @ model.head
    if kind == "GatedLinearAttention":
        return activations["attn.1"][:, 0].sum(-1)
    last = activations[f"resid.{model.hook_depth()}"][:, -1]
    if kind == "Transformer":
        return model.read_out(model.ln_f(last))[..., 0]
    norm = last * torch.rsqrt(last.square().mean(-1, keepdim=True) + 1e-6) * model.norm
    return norm @ model.read_out + model.read_out_bias


@pytest.mark.parametrize("model_name", BUILT_IN)
def test_the_last_hook_point_gives_the_prediction(model_name: str) -> None:
    model, batch, activations = prompts_and_cache(model_name)
    with torch.no_grad():
        torch.testing.assert_close(readout(model, activations, batch[2]),
                                   activations.prediction,
                                   rtol=1e-9, atol=1e-9)


def test_the_transformer_attention_output_is_its_residual_step() -> None:
    """resid.l = resid.(l-1) + attn.l + MLP(LN(resid.(l-1) + attn.l)) for its first block."""
    model, _, activations = prompts_and_cache("transformer")
    block = model.blocks[0]
    mid = activations["resid.0"] + activations["attn.1"]
    with torch.no_grad():
        expected = mid + block.out(functional.gelu(block.fc(block.ln_2(mid))))
    torch.testing.assert_close(activations["resid.1"], expected, rtol=1e-9, atol=1e-9)


def test_an_unknown_hook_point_is_one_line() -> None:
    model, batch, _ = prompts_and_cache("lsa")
    with pytest.raises(ConfigError, match=r"unknown hook point 'resid\.2'.*resid\.0, attn\.1"):
        cache(model, *batch, names=["resid.2"])
    assert cache(model, *batch, names=["attn.1"]).names == ("attn.1",)


def test_a_model_without_hook_points_is_refused() -> None:
    model, batch = make("custom-example"), None
    prompts = family("linear-gaussian").sample_prompts(4, make_generator(5, "p"),
                                                       torch.float64)
    batch = (prompts.X, prompts.y, prompts.x_q)
    with pytest.raises(ConfigError, match="declares no hook points"):
        cache(model, *batch)


def test_iclab_models_lists_the_hook_points() -> None:
    from iclab.cli.catalogue import model_rows
    from iclab.models.registry import ModelRegistry

    rows = {row["name"]: row["hook_points"] for row in model_rows(ModelRegistry())}
    assert [hook["name"] for hook in rows["transformer"]] == ["resid", "attn"]
    assert rows["transformer"][0]["shape"] == "(B, 2n+1, width)"
    assert all(rows.values())
