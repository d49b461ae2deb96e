"""Conformance: every registered model x every registered family, asked what they support.

A new model or family registered on these registries gets every test here for free:
shapes, seeded bit-for-bit determinism, the read-out against the model's own predictions
(the part of yhat that is odd in y is exactly x_q^T Gamma X^T y), the sufficient-statistic
path equal in law to whole prompts, training steps on every path that applies, and one-line
errors for the paths that do not apply.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from iclab.config.train import TrainConfig
from iclab.models.base import Model
from iclab.models.registry import ModelRegistry
from iclab.studies.covariates.linear_law import linear_family
from iclab.tasks.base import TaskFamily
from iclab.tasks.family_entry import FamilyEntry
from iclab.tasks.registry import FamilyRegistry
from iclab.training.objective import make_objective
from iclab.utils.batches import STATISTICS_SAMPLERS, shared_statistics_kind
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import load_plugin
from iclab.utils.seeding import make_generator
from iclab.utils.studies import load_study

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "custom_model.py")
EXAMPLE_STUDY = str(Path(__file__).resolve().parents[1] / "examples" / "odd_power_study.py")
D, N = 3, 6


def cubic(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A user family: f(x) = (u.x)^3 / 3, u uniform on the sphere (one per row)."""
    u = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator, dtype=inputs.dtype)
    u = u / u.norm(dim=-1, keepdim=True)
    return torch.einsum("bkd,bd->bk", inputs, u) ** 3 / 3


# The L-layer model is ``lsa`` with options: tested as variants of the registered model.
VARIANTS = {"lsa-2-sparse": ("lsa", {"layers": 2, "parameterisation": "sparse"}),
            "lsa-3-full-looped": ("lsa", {"layers": 3, "looped": True}),
            "lsa-heads-separate": ("lsa", {"kq": "separate", "heads": 2, "rank": 1}),
            "lsa-heads-merged": ("lsa", {"heads": 3})}


def models() -> ModelRegistry:
    registry = ModelRegistry()
    registry.register(load_plugin(f"{EXAMPLE}:CustomModel", "model"), "custom-example")
    return registry


def families() -> FamilyRegistry:
    registry = FamilyRegistry()
    registry.register_family("cubic", cubic, rotation_invariant=True, sign_symmetric=True)
    # the linear family's parts that train on whole prompts: a covariate law, AR(1) contexts
    for name, parameters in (("linear-laplace", {"x_law": "laplace"}),
                             ("linear-ar1", {"context_correlation": 0.5})):
        registry.register(FamilyEntry(
            name, lambda d, n, sigma, options, p=parameters: linear_family(d, n, sigma, **p),
            name))
    registry.add_study(load_study(f"{EXAMPLE_STUDY}:STUDY"))  # a user's study's family
    return registry


MODEL_NAMES = (*models().names, *VARIANTS)
FAMILY_NAMES = families().names
PAIRS = [(m, f) for m in MODEL_NAMES for f in FAMILY_NAMES]


def make(model_name: str, seed: int = 0, dtype: torch.dtype = torch.float64) -> Model:
    registered, overrides = VARIANTS.get(model_name, (model_name, {}))
    model_class = models().get(registered)
    options = model_class.options_class(**overrides)
    model = model_class.create(D, options, make_generator(seed, "conformance"), dtype)
    # O(1) weights exercise every term of a one-layer prediction; at depth the products of
    # L such layers overflow float32, so the variants get a tenth of that
    scale = 0.1 if model_name in VARIANTS else 1.0
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(scale * torch.randn(parameter.shape, dtype=dtype,
                                               generator=make_generator(seed, "w")))
    return model


def family(name: str, n: int = N) -> TaskFamily:
    return families().make_family(name, D, n, 0.5)


@pytest.mark.parametrize(("model_name", "family_name"), PAIRS)
def test_shapes_and_seeded_determinism(model_name: str, family_name: str) -> None:
    task = family(family_name)
    prompts = task.sample_prompts(32, make_generator(1, "p"), torch.float64)
    again = task.sample_prompts(32, make_generator(1, "p"), torch.float64)
    assert torch.equal(prompts.X, again.X) and torch.equal(prompts.y_q, again.y_q)
    a, b = make(model_name), make(model_name)
    with torch.no_grad():
        yhat = a(prompts.X, prompts.y, prompts.x_q)
        assert yhat.shape == (32,) and torch.equal(yhat, b(prompts.X, prompts.y, prompts.x_q))
    other = make(model_name, seed=1)
    assert any(not torch.equal(p, q) for p, q in zip(a.parameters(), other.parameters(),
                                                     strict=True))


@pytest.mark.parametrize("model_name", MODEL_NAMES)
def test_the_readout_is_the_part_of_the_prediction_odd_in_y(model_name: str) -> None:
    model = make(model_name)
    if not model.has_readout:
        pytest.skip(f"model {model_name} declares no read-out")
    prompts = family("linear-gaussian").sample_prompts(64, make_generator(2, "p"), torch.float64)
    gamma = torch.as_tensor(model.readout(N).gamma)
    with torch.no_grad():
        odd = (model(prompts.X, prompts.y, prompts.x_q)
               - model(prompts.X, -prompts.y, prompts.x_q)) / 2
    linear = ((prompts.x_q @ gamma) * torch.einsum("bnd,bn->bd", prompts.X, prompts.y)).sum(-1)
    torch.testing.assert_close(odd, linear, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("model_name", "family_name"), PAIRS)
def test_statistics_equal_whole_prompts_in_law(model_name: str, family_name: str) -> None:
    task, model = family(family_name, n=4), make(model_name)
    kind = shared_statistics_kind(task, model)
    if kind is None:
        pytest.skip("no sufficient-statistic path for this pair")
    count = 200_000
    stats = getattr(task, STATISTICS_SAMPLERS[kind])(count, make_generator(3, "s"),
                                                     torch.float64)
    prompts = task.sample_prompts(count, make_generator(4, "p"), torch.float64)
    with torch.no_grad():
        a = (model.forward_statistics(stats) - stats.y_q) ** 2
        b = (model(prompts.X, prompts.y, prompts.x_q) - prompts.y_q) ** 2
    se = math.sqrt(float(a.var()) / count + float(b.var()) / count)
    assert abs(float(a.mean()) - float(b.mean())) < 4 * se


@pytest.mark.parametrize(("model_name", "family_name"), PAIRS)
def test_every_path_that_applies_trains_and_the_others_are_refused(
    model_name: str, family_name: str
) -> None:
    task, model = family(family_name), make(model_name, dtype=torch.float32)
    cpu = torch.device("cpu")
    supported = {"prompts": True,
                 "statistics": shared_statistics_kind(task, model) is not None,
                 "exact": task.gaussian and model.has_exact_loss}
    for sampler, ok in supported.items():
        if not ok:
            with pytest.raises(ConfigError, match="needs a"):
                make_objective(task, model, sampler, 16, 0, cpu)
            continue
        if sampler == "exact":
            model = make(model_name, dtype=torch.float64)
        loss = make_objective(task, model, sampler, 16, 0, cpu)(0)
        assert loss.shape == () and math.isfinite(float(loss.detach()))
        if loss.requires_grad:       # else the objective stored the model's own gradients
            loss.backward()  # type: ignore[no-untyped-call]
        assert all(p.grad is not None for p in model.parameters())
        model.zero_grad()


@pytest.mark.parametrize("family_name", ["linear-gaussian", "relu", "two-layer-relu",
                                         "anisotropic"])
def test_every_built_in_family_is_a_valid_config_with_every_built_in_model(
    family_name: str
) -> None:
    for model_name in ModelRegistry().names:
        config = TrainConfig.flat(d=D, n=N, sigma=0.5, family=family_name, model=model_name)
        assert config.validate().make_task().name == family_name
