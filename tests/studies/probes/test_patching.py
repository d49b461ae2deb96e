"""Patching (iclab.models.hooks.patching) and task vectors (iclab patch): an identity patch
leaves the prediction bit-identical, replacing the last layer's query residual by the source
prompt's gives the source prediction exactly (moved fraction 1), the embedding layer carries
no task (its task vectors differ by nothing: fraction 0), and bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from iclab.cli.main import main
from iclab.models.hooks import cache, patching
from iclab.studies.probes.patching import task_prompts
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.options import TransformerOptions
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

pytestmark = pytest.mark.usefixtures("one_thread")


def small() -> Transformer:
    options = TransformerOptions(layers=2, heads=2, width=16, max_examples=16)
    return Transformer(3, options, make_generator(0, "t"), torch.float64)


def prompts() -> tuple[torch.Tensor, ...]:
    g = make_generator(1, "p")
    return (torch.randn(8, 6, 3, generator=g, dtype=torch.float64),
            torch.randn(8, 6, generator=g, dtype=torch.float64),
            torch.randn(8, 3, generator=g, dtype=torch.float64))


def test_an_identity_patch_changes_nothing_and_a_replacement_moves_all_the_way() -> None:
    model, batch = small(), prompts()
    plain = cache(model, *batch)
    with patching(model, {"resid.1": lambda t: t}), torch.no_grad():
        assert torch.equal(model(*batch), plain.prediction)
    other = (batch[0].flip(0), batch[1].flip(0), batch[2])      # same queries, other contexts
    source = cache(model, *other)

    def replace(tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.clone()
        out[:, -1] = source["resid.2"][:, -1]
        return out

    with patching(model, {"resid.2": replace}), torch.no_grad():
        torch.testing.assert_close(model(*batch), source.prediction, rtol=1e-12, atol=1e-12)
    assert model.hook_patches is None


def test_only_patchable_hook_points_can_be_patched() -> None:
    model = small()
    with pytest.raises(ConfigError, match=r"hook point 'attn\.1' .* cannot be patched; "
                                          r"patchable: resid\.0, resid\.1, resid\.2"), \
            patching(model, {"attn.1": lambda t: t}):
        pass


def test_task_prompts_share_w_within_a_task_and_queries_across() -> None:
    task = FamilyRegistry().make_family("linear-gaussian", 3, 10, 0.0)
    a, b = task_prompts(task, pairs=3, prompts=5, seed=0)
    assert torch.equal(a.x_q, b.x_q)
    for p in (a, b):
        w = torch.linalg.lstsq(p.X, p.y[..., None]).solution[..., 0]     # exact at sigma 0
        torch.testing.assert_close(w[:5], w[:1].expand(5, 3))
        assert not torch.allclose(w[0], w[5])


@pytest.fixture(scope="module")
def transformer_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("patch") / "t"
    assert main(["train", "--model", "transformer", "--layers", "2", "--width", "16",
                 "--max-examples", "16", "--d", "3", "--n", "8", "--sigma", "0",
                 "--steps", "5", "--eval-prompts", "100", "--quiet", "--out", str(out)]) == 0
    return out


def test_iclab_patch_reports_each_layer(transformer_run: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["patch", str(transformer_run), "--pairs", "4", "--prompts", "8",
                 "--out", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [row["hook"] for row in data["rows"]] == ["resid.0", "resid.1", "resid.2"]
    # the embedding of the query token does not see the context: no task vector at layer 0
    assert data["rows"][0]["moved_fraction"] == 0.0
    assert json.loads((tmp_path / "patch.json").read_text()) == data


@pytest.mark.parametrize(("argv", "message"), [
    (["--layers", "3"], "layer 3 has no patchable hook point"),
    (["--pairs", "1"], "pairs must be an integer >= 2"),
    (["--prompts", "1"], "prompts must be an integer >= 2"),
])
def test_bad_options_are_one_line(transformer_run: Path, tmp_path: Path, argv: list[str],
                                  message: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["patch", str(transformer_run), *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not out.exists()
