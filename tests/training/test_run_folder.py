"""The run-folder contract: one module names the files, and a finished folder cannot be edited
into a lie (config, model and result bound); a full disk leaves nothing half-written."""

from __future__ import annotations

import ast
import errno
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.runs import run_training
from iclab.runs.folder import load_trained_model, read_finished_run
from iclab.utils.errors import ConfigError

SOURCE = Path(__file__).resolve().parents[2] / "src" / "iclab"
FILE_NAMES = ("config.json", "metrics.jsonl", "model.safetensors", "result.json",
              "checkpoint.safetensors")
QUICK = {"d": 2, "n": 4, "sigma": 0.3, "steps": 6, "batch": 64, "eval_prompts": 400,
         "log_every": 3}


def test_the_file_names_are_string_literals_in_exactly_one_module() -> None:
    holders: dict[str, set[str]] = {name: set() for name in FILE_NAMES}
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in holders:
                holders[node.value].add(str(path.relative_to(SOURCE)))
    assert {name: sorted(where) for name, where in holders.items()} == {
        name: ["training/run_folder.py"] for name in FILE_NAMES}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / "run"
    run_training(TrainConfig.flat(**QUICK), folder, progress=False)
    return folder


def copy_of(finished: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    shutil.copytree(finished, folder)
    return folder


def test_a_finished_folder_reads_back_bound(finished: Path) -> None:
    config, result = read_finished_run(finished)
    assert config == TrainConfig.flat(**QUICK)
    assert result["binding"]["config_hash"] == config.hash()
    load_trained_model(finished, config, result=result)  # the weights it judged


@pytest.mark.parametrize(("key", "value"), [("n", 5), ("sigma", 0.4), ("family", "anisotropic"),
                                            ("seed", 1)])
def test_an_edited_config_is_refused_by_every_reader(finished: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     key: str, value: object) -> None:
    folder = copy_of(finished, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    before = sorted(p.name for p in folder.rglob("*"))
    with pytest.raises(ConfigError, match=r"config\.json was edited since the run finished"):
        read_finished_run(folder)
    with pytest.raises(ConfigError, match=r"config\.json was edited"):  # resume: the same config
        run_training(TrainConfig.from_json(config), folder, progress=False)
    for argv in (["certify", str(folder)], ["shift", str(folder), "--kind", "sigma",
                                            "--values", "0,1", "--prompts", "200"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "computed for another config" in err
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_an_edited_result_and_replaced_weights_are_refused(finished: Path,
                                                           tmp_path: Path) -> None:
    folder = copy_of(finished, tmp_path)
    result = json.loads((folder / "result.json").read_text())
    (folder / "result.json").write_text(json.dumps({**result, "test_loss": 0.5}))
    with pytest.raises(ConfigError, match=r"result\.json was edited"):
        read_finished_run(folder)
    (folder / "result.json").write_text(json.dumps({**result, "wall_seconds": 1.0}))
    config, read = read_finished_run(folder)  # the timing is not a result
    other = tmp_path / "other"
    run_training(TrainConfig.flat(**{**QUICK, "init_scale": 0.03}), other, progress=False)
    shutil.copy(other / "model.safetensors", folder / "model.safetensors")
    with pytest.raises(ConfigError, match="trained on another config"):
        load_trained_model(folder, config, result=read)
    (folder / "config.json").write_text((other / "config.json").read_text())
    with pytest.raises(ConfigError, match=r"config\.json was edited"):
        read_finished_run(folder)


def test_rerunning_a_finished_run_checks_the_weights_it_reports(finished: Path,
                                                                tmp_path: Path) -> None:
    """The same train command on a finished folder reports its result only while the weights
    are the ones that result judged: replaced or damaged weights are refused, nothing written."""
    config = TrainConfig.flat(**QUICK)
    assert run_training(config, copy_of(finished, tmp_path), progress=False)["test_loss"] == \
        json.loads((finished / "result.json").read_text())["test_loss"]
    other = tmp_path / "other"
    run_training(TrainConfig.flat(**{**QUICK, "seed": 1}), other, progress=False)
    for damage, match in ((lambda f: shutil.copy(other / "model.safetensors", f),
                           "trained on another config"),
                          (lambda f: f.write_bytes(f.read_bytes()[:100]),
                           "cannot load the model")):
        folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        shutil.copytree(finished, folder)
        damage(folder / "model.safetensors")
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        with pytest.raises(ConfigError, match=match):
            run_training(config, folder, progress=False)
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_folder_without_a_binding_still_reads(finished: Path, tmp_path: Path) -> None:
    """Folders of iclab 0.1 (and later ones before the binding): no binding, no metadata."""
    folder = copy_of(finished, tmp_path)
    result = json.loads((folder / "result.json").read_text())
    del result["binding"]
    (folder / "result.json").write_text(json.dumps(result))
    config, read = read_finished_run(folder)
    assert read["test_loss"] == result["test_loss"]
    load_trained_model(folder, config, result=read)


def test_a_full_disk_during_a_checkpoint_is_one_line_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    real = Path.write_bytes

    def full(self: Path, data: bytes) -> int:  # type: ignore[override]
        if self.name.startswith(".checkpoint.safetensors."):
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    out = tmp_path / "run"
    argv = ["train", "--d", "2", "--n", "4", "--steps", "6", "--batch", "64",
            "--checkpoint-every", "3", "--eval-prompts", "400", "--quiet", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "metrics.jsonl"]
    monkeypatch.setattr(Path, "write_bytes", real)
    assert main(argv) == 0  # space again: the same command trains the run to its end
    assert (out / "result.json").is_file() and not list(out.glob(".*"))


EDITS = st.one_of(
    st.tuples(st.just("n"), st.integers(1, 50).filter(lambda n: n != QUICK["n"])),
    st.tuples(st.just("d"), st.integers(1, 4).filter(lambda d: d != QUICK["d"])),
    st.tuples(st.just("sigma"), st.floats(0, 5).filter(lambda s: s != QUICK["sigma"])),
    st.tuples(st.just("family"), st.sampled_from(["relu", "anisotropic", "two-layer-relu"])),
    st.tuples(st.just("steps"), st.integers(1, 100).filter(lambda s: s != QUICK["steps"])),
    st.tuples(st.just("lr"), st.floats(1e-4, 1.0).filter(lambda lr: lr != 0.005)),
    st.tuples(st.just("eval_prompts"), st.integers(2, 10_000).filter(lambda e: e != 400)),
    st.tuples(st.just("x_law"), st.sampled_from(["uniform", "laplace", "rademacher"])),
)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=EDITS)
def test_any_edit_of_a_finished_config_is_refused(finished: Path, tmp_path: Path,
                                                  edit: tuple[str, object]) -> None:
    key, value = edit
    folder = tmp_path / f"edit-{key}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(finished, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, key: value}))
    with pytest.raises(ConfigError) as error:
        read_finished_run(folder)
    assert "\n" not in str(error.value)
