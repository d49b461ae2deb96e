"""The family registry: built-in names, user families, MODULE:FUNCTION and its errors."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.studies.covariates.linear_law import LinearLawTask
from iclab.tasks.nonlinear import FunctionTask
from iclab.tasks.registry import FAMILY_NAMES, FamilyRegistry, make_family
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos
from iclab.utils.seeding import make_generator


def cubic(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """f(x) = (u.x)^3 with u ~ N(0, I): one u per row."""
    u = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator, dtype=inputs.dtype)
    return torch.einsum("bkd,bd->bk", inputs, u) ** 3


def label_power(family_name: str, d: int, **parameters: object) -> tuple[float, float]:
    """E[y_q^2] of a built-in family by Monte Carlo: (mean, standard error)."""
    task = make_family(family_name, d, 5, 0.1, **parameters)  # type: ignore[arg-type]
    y_q = task.sample_prompts(40_000, make_generator(0, "power"), torch.float64).y_q ** 2
    return float(y_q.mean()), float(y_q.std() / math.sqrt(y_q.numel()))


def test_each_built_in_name_draws_the_law_it_names() -> None:
    """E[y_q^2] = tr(Sigma_w Sigma_x) + sigma^2 for the linear families: I (d = 3), the given
    Sigma_x, and the anisotropic family's Sigma_w = diag(1/4, 4); ``width`` reaches the
    two-layer relu family (its draws change with it); the listing order of iclab families."""
    assert FAMILY_NAMES == ("linear-gaussian", "relu", "two-layer-relu", "anisotropic")
    names = FamilyRegistry().names  # the studies' follow the core's
    assert names[:len(FAMILY_NAMES)] == FAMILY_NAMES
    assert {"sparse-linear", "decision-tree", "relu-network"} <= set(names[len(FAMILY_NAMES):])
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    for name, d, parameters, power in (("linear-gaussian", 3, {}, 3.0),
                                       ("linear-gaussian", 2, {"cov_x": cov}, 3.0),
                                       ("anisotropic", 2, {}, 4.25)):
        mean, stderr = label_power(name, d, **parameters)
        assert abs(mean - (power + 0.01)) <= 4 * stderr, (name, parameters)
    narrow = make_family("two-layer-relu", 3, 5, 0.1).sample_prompts(8, make_generator(0, "w"))
    wide = make_family("two-layer-relu", 3, 5, 0.1, width=20).sample_prompts(
        8, make_generator(0, "w"))
    assert torch.equal(narrow.X, wide.X) and not torch.equal(narrow.y, wide.y)


def test_options_that_do_not_apply_are_refused() -> None:
    with pytest.raises(ConfigError, match="width applies only to family two-layer-relu"):
        make_family("relu", 3, 5, 0.1, width=4)
    with pytest.raises(ConfigError, match="only to family linear-gaussian"):
        make_family("anisotropic", 2, 5, 0.1, cov_w=np.eye(2))
    with pytest.raises(ConfigError, match="width must be an integer >= 1"):
        make_family("two-layer-relu", 3, 5, 0.1, width=0)


def test_covariate_laws_and_correlations_are_parameters_of_the_linear_family() -> None:
    registry = FamilyRegistry()
    declared = {name for cls in registry.option_owners("linear-gaussian")
                for name in field_infos(cls)}  # the covariates study's extension
    assert {"x_law", "context_correlation", "context_covariance"} <= declared
    task = registry.make_family("linear-gaussian", 3, 5, 0.1, x_law="laplace")
    assert isinstance(task, LinearLawTask) and task.covariate_law.spec == "laplace"
    correlated = registry.make_family("linear-gaussian", 3, 5, 0.1,
                                      context_covariance=2 * np.eye(6))
    assert isinstance(correlated, LinearLawTask) and correlated.correlated
    for family in ("relu", "two-layer-relu", "anisotropic"):
        for key, value in (("x_law", "uniform"), ("context_correlation", 0.5)):
            with pytest.raises(ConfigError) as error:
                registry.make_family(family, 3, 5, 0.1, **{key: value})
            assert str(error.value) == (f"{key} applies only to family linear-gaussian, "
                                        f"not {family!r}")


def test_registering_a_user_family() -> None:
    registry = FamilyRegistry()
    registry.register_family("cubic", cubic, rotation_invariant=True)
    assert registry.names[-1] == "cubic"
    task = registry.make_family("cubic", 2, 4, 0.0)
    assert isinstance(task, FunctionTask) and task.rotation_invariant
    p = task.sample_prompts(3, make_generator(0, "c"), torch.float64)
    assert p.X.shape == (3, 4, 2) and p.y_q.shape == (3,)
    with pytest.raises(ConfigError, match="already exists"):
        registry.register_family("cubic", cubic)
    with pytest.raises(ConfigError, match="already exists"):
        registry.register_family("relu", cubic)
    with pytest.raises(ConfigError, match="name"):
        registry.register_family("Bad Name", cubic)
    with pytest.raises(ConfigError, match="unknown family 'cubic'"):
        make_family("cubic", 2, 4, 0.0)  # registries are not global


def test_module_function_names_are_imported(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_families.py").write_text(textwrap.dedent("""
        import torch

        def linear(inputs, generator):
            w = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator,
                            dtype=inputs.dtype)
            return torch.einsum("bkd,bd->bk", inputs, w)

        linear.rotation_invariant = True
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    task = make_family("my_families:linear", 3, 5, 0.0)
    assert isinstance(task, FunctionTask) and task.rotation_invariant
    p = task.sample_prompts(4, make_generator(1, "m"), torch.float64)
    w = torch.linalg.lstsq(p.X, p.y[..., None]).solution.squeeze(-1)
    torch.testing.assert_close((w * p.x_q).sum(-1), p.y_q)    # sigma = 0: one w per prompt
    with pytest.raises(ConfigError, match="has no function 'missing'"):
        make_family("my_families:missing", 3, 5, 0.0)
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module_xyz'"):
        make_family("no_such_module_xyz:f", 3, 5, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=0, max_size=20).filter(lambda s: s not in FAMILY_NAMES and ":" not in s))
def test_unknown_names_name_the_allowed_ones(name: str) -> None:
    with pytest.raises(ConfigError, match="allowed: linear-gaussian, relu, two-layer-relu"):
        make_family(name, 2, 3, 0.1)
    with pytest.raises(ConfigError, match="unknown family"):
        FamilyRegistry().check_name(name)


def test_module_in_the_working_directory_is_found(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd_family_mod.py").write_text(
        "def zero(inputs, generator):\n    return inputs.sum(-1) * 0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    task = make_family("cwd_family_mod:zero", 2, 3, 0.0)
    assert isinstance(task, FunctionTask) and not task.rotation_invariant
    assert str(tmp_path) not in sys.path                     # the search path is restored
