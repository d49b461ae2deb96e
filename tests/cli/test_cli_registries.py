"""One registry context per command: a family registered in Python reaches ``iclab theory``
through ``main(..., registries=...)``, and gives the answer the theory predicts for it."""

from __future__ import annotations

import json

import pytest
import torch

from iclab.cli.main import main
from iclab.experiments.registries import Registries


def linear_draw(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """f(x) = u^T x with u ~ N(0, I): (B, k, d) -> (B, k)."""
    u = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator,
                    dtype=inputs.dtype, device=inputs.device)
    return torch.einsum("bkd,bd->bk", inputs, u)


def test_a_family_registered_in_python_is_a_theory_family(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Registered under a new name, the linear family is a user family to iclab (Monte Carlo
    optimum); its eta must agree with Theorem 1's 1/(n+d+1+sigma^2) within 4 standard errors."""
    registries = Registries()
    registries.families.register_family("my-linear", linear_draw, rotation_invariant=True,
                                        sign_symmetric=True)
    argv = ["theory", "--family", "my-linear", "--d", "3", "--n", "6", "--sigma", "0.5",
            "--precision", "0.01", "--json"]
    assert main(argv, registries=registries) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["family"] == "my-linear" and record["method"] == "monte-carlo"
    theorem1 = 1 / (6 + 3 + 1 + 0.25)
    assert abs(record["eta"] - theorem1) <= 4 * record["stderr"]["eta"]
    assert main(argv) == 2  # the built-in registries do not know it
    err = capsys.readouterr().err
    assert "unknown family 'my-linear'" in err and len(err.strip().splitlines()) == 1
