"""Spec files a hostile user might write: not UTF-8, nested without end, a grid too large, a
family whose function is broken; and the sweep folder's own parts taken by files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import iclab.experiments.specs.groups as groups_module
import iclab.experiments.specs.spec as spec_module
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import load_spec
from iclab.experiments.specs.spec import parse_spec
from iclab.experiments.specs.sweep import check_sweep_dir, prepare_sweep_dir
from iclab.utils.errors import ConfigError

GROUP = 'name = "g"\nd = 2\nn = 5\nsigma = 0.5\n'


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_text_that_is_not_utf8_is_one_line(tmp_path: Path, suffix: str) -> None:
    good = f"[[groups]]\n{GROUP}" if suffix == ".toml" else json.dumps(
        {"groups": [{"name": "g", "d": 2, "n": 5, "sigma": 0.5}]})
    assert len(load_spec(write(tmp_path, "ok" + suffix, good), Registries()).points()) == 1
    bad = write(tmp_path, "bad" + suffix, good.encode().replace(b"g", b"\xff", 1))
    with pytest.raises(ConfigError, match=r"must be UTF-8 text; byte \d+ is not"):
        load_spec(bad, Registries())


@pytest.mark.parametrize(("suffix", "text"), [
    (".json", "[" * 100_000 + "]" * 100_000),
    (".json", '{"a":' * 100_000 + "1" + "}" * 100_000),
    (".toml", "a = " + "[" * 100_000 + "]" * 100_000),
    (".toml", "a = " + "{b = " * 20_000 + "1" + "}" * 20_000),
])
def test_nesting_without_end_is_one_line(tmp_path: Path, suffix: str, text: str) -> None:
    with pytest.raises(ConfigError, match="nests too deeply") as error:
        load_spec(write(tmp_path, "deep" + suffix, text), Registries())
    assert "\n" not in str(error.value)
    shallow = "[" * 50 + "]" * 50 if suffix == ".json" else "a = " + "[" * 50 + "]" * 50
    with pytest.raises(ConfigError) as error:            # parsed, then refused as a spec
        load_spec(write(tmp_path, "shallow" + suffix, shallow), Registries())
    assert "nests too deeply" not in str(error.value)


def grid(count: int) -> dict[str, Any]:
    return {"groups": [{"name": "g", "d": 2, "sigma": 0.5, "n": list(range(1, count + 1))}]}


def test_a_grid_beyond_the_limit_is_refused_before_it_is_expanded(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spec_module, "MAX_POINTS", 6)  # the spec's total
    monkeypatch.setattr(groups_module, "MAX_POINTS", 6)  # the message's limit
    assert len(parse_spec(grid(6), "t", Registries()).points()) == 6
    with pytest.raises(ConfigError, match=r"the group has 7 runs .* at most 6 in all"):
        parse_spec(grid(7), "t", Registries())
    two = {"groups": [{**grid(4)["groups"][0]}, {**grid(3)["groups"][0], "name": "h",
                                                  "sigma": 0.25}]}
    with pytest.raises(ConfigError, match="group 'h'"):   # 4 + 3 > 6: the limit is the spec's
        parse_spec(two, "t", Registries())


def test_the_default_limit_refuses_a_million_runs_at_once() -> None:
    data = {"groups": [{"name": "g", "d": 2, "n": list(range(1, 101)),
                        "sigma": [i / 100 for i in range(100)],
                        "lr": [0.001 * (i + 1) for i in range(100)]}]}
    with pytest.raises(ConfigError, match="the group has 1000000 runs"):
        parse_spec(data, "t", Registries())


def test_a_broken_user_family_fails_when_the_spec_loads(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fam.py").write_text("def draw(x, g):\n    return x[..., 0]\n"
                                     "def broken(x, g):\n    raise ValueError('no')\n")
    good = {"groups": [{"name": "g", "d": 2, "n": 5, "sigma": 0.5, "family": "fam.py:draw"}]}
    assert len(parse_spec(good, "t", Registries()).points()) == 1
    bad = {"groups": [{**good["groups"][0], "family": "fam.py:broken"}]}
    with pytest.raises(ConfigError, match=r"draw\(inputs, generator\) failed \(ValueError: no\)"):
        parse_spec(bad, "t", Registries())


@pytest.mark.parametrize("taken", ["sw", "sw/runs", "sw/runs/.locks"])
def test_a_sweep_folder_whose_parts_are_files_is_refused(tmp_path: Path, taken: str) -> None:
    (tmp_path / taken).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / taken).write_text("x")
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        check_sweep_dir(tmp_path / "sw")
    (tmp_path / taken).unlink()
    assert prepare_sweep_dir(tmp_path / "sw") == tmp_path / "sw"
    assert (tmp_path / "sw" / "runs" / ".locks").is_dir()


def test_an_empty_out_is_refused() -> None:
    with pytest.raises(ConfigError, match="--out must name a folder"):
        check_sweep_dir("")
