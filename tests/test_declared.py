"""Capabilities are declared, not probed (issue 29, item 2): a family subclasses
``iclab.tasks.base.TaskFamily`` and a model ``iclab.models.base.Model``, both of which declare
every capability with its default, so nothing in src/iclab asks ``getattr(x, "...", None)``
whether an attribute exists."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from iclab.algorithms.base import InContextPredictor
from iclab.models.base import Model
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.tasks.base import Prompts, TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.registry import FamilyEntry, FamilyRegistry
from iclab.utils.batches import shared_statistics_kind
from iclab.utils.errors import ConfigError

SOURCE = Path(__file__).resolve().parents[1] / "src" / "iclab"
ALLOWED_PROBES = {
    ("utils/plugins.py", "attr"): "a plug-in's module attribute, named by the user: "
                                  "absent is reported with one line",
    ("studies/covariates/user_law.py", "fourth_moment"):
        "an optional attribute a user's covariate law function may carry (a plain function, "
        "no class)",
    ("experiments/executors/local.py", "_processes"): "ProcessPoolExecutor's private worker "
                                                      "table, gone after shutdown",
}
"""The only ``getattr(x, name, None)`` calls left in src/iclab, none on a family, a model,
its options or a predictor: (file, attribute) -> why it stays."""


def none_default_probes(source: Path = SOURCE) -> set[tuple[str, str]]:
    """(file relative to ``source``, attribute name or variable) of every call
    ``getattr(x, name, None)`` in ``source``."""
    found: set[tuple[str, str]] = set()
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "getattr" and len(node.args) == 3 \
                    and isinstance(node.args[2], ast.Constant) and node.args[2].value is None:
                name = node.args[1]
                label = name.value if isinstance(name, ast.Constant) else ast.unparse(name)
                found.add((path.relative_to(source).as_posix(), str(label)))
    return found


def test_no_capability_is_probed_with_getattr_none() -> None:
    assert none_default_probes() == set(ALLOWED_PROBES)


def test_the_grep_finds_a_probe_where_there_is_one(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text('law = getattr(task, "covariate_law", None)\n'
                                       'kept = getattr(task, "gaussian", False)\n'
                                       'moments = task.gd_moments()\n')
    assert none_default_probes(tmp_path) == {("probe.py", "covariate_law")}


@dataclass(frozen=True)
class Minimal(TaskFamily):
    """A family that declares nothing beyond what every family must give."""

    d: int = 2
    n: int = 3
    sigma: float = 0.0
    name: str = "minimal"

    def sample_prompts(self, batch: int, generator: torch.Generator,
                       dtype: torch.dtype = torch.float32) -> Prompts:
        inputs = torch.randn(batch, self.n + 1, self.d, generator=generator, dtype=dtype)
        labels = inputs.sum(-1)
        return Prompts(X=inputs[:, :self.n], y=labels[:, :self.n], x_q=inputs[:, self.n],
                       y_q=labels[:, self.n])


def test_a_minimal_family_declares_that_it_can_do_nothing_more() -> None:
    family = Minimal()
    assert (family.statistics, family.gaussian, family.rotation_invariant,
            family.sign_symmetric, family.has_draw_values) == (False,) * 5
    assert family.covariate_law is None and family.task_pool is None
    assert family.baselines == () and family.statistics_kinds == ("bartlett",)
    assert family.gd_moments() is None
    assert family.probe(0) is None
    with pytest.raises(NotImplementedError, match="minimal"):
        family.draw_values(torch.zeros(1, 2, 2), torch.Generator())
    assert shared_statistics_kind(family, LinearGaussianReader) is None


def test_a_family_field_overrides_its_declaration() -> None:
    @dataclass(frozen=True)
    class Claims(Minimal):
        rotation_invariant: bool = False
        covariate_law: Any = None

    assert Claims(rotation_invariant=True).rotation_invariant
    assert not Claims().rotation_invariant
    assert Claims(covariate_law="law").covariate_law == "law"
    # LinearGaussian computes it: Sigma_w = 2 I is rotation-invariant, diag(1, 2) is not.
    assert LinearGaussian(2, 3, 0.0, cov_w=2 * np.eye(2)).rotation_invariant
    assert not LinearGaussian(2, 3, 0.0, cov_w=np.diag([1.0, 2.0])).rotation_invariant


class LinearGaussianReader(Model):
    """A model that reads "bartlett" statistics (and nothing else declared)."""

    name = "reader"
    has_statistics = True


def test_a_minimal_model_and_predictor_declare_their_defaults() -> None:
    assert Model.token_width(None, 5) == 6
    assert Model().attends_query() is False
    assert Model().gradient_masks() == []

    class Fixed(InContextPredictor):
        def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
            return x_q.sum(-1)

    assert Fixed().max_prompts is None
    assert shared_statistics_kind(LinearGaussian(2, 3, 0.0), LinearGaussianReader) == "bartlett"


def test_lsa_declares_its_width_and_query_term() -> None:
    lsa = LinearSelfAttention
    options = lsa.options_class()
    assert lsa.token_width(options, 4) == 5
    wide = lsa.options_class(key_dim=9, value_dim=7)
    assert lsa.token_width(wide, 4) == 9
    assert lsa.token_width(lsa.options_class(value_dim=11), 4) == 11
    model = lsa.create(3, lsa.options_class(attend_query=True), torch.Generator().manual_seed(0))
    assert model.attends_query()
    assert not lsa.create(3, options, torch.Generator().manual_seed(0)).attends_query()


def test_a_family_that_is_not_a_task_family_is_refused_with_one_line() -> None:
    registry = FamilyRegistry(builtins=False)

    @dataclass(frozen=True)
    class Lookalike:       # every attribute a family has, but not a TaskFamily
        d: int
        n: int
        sigma: float
        name: str = "lookalike"
        statistics = gaussian = rotation_invariant = sign_symmetric = False

    registry.register(FamilyEntry("lookalike", Lookalike, "not a TaskFamily"))
    registry.register(FamilyEntry("minimal", lambda d, n, sigma, options: Minimal(d, n, sigma),
                                  "a TaskFamily"))
    with pytest.raises(ConfigError) as refused:
        registry.make_family("lookalike", 2, 3, 0.0)
    message = str(refused.value)
    assert "\n" not in message and "'lookalike'" in message and "TaskFamily" in message
    assert "Lookalike" in message
    assert isinstance(registry.make_family("minimal", 2, 3, 0.0), Minimal)
