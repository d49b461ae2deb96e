"""Specs that extend each other: merge rules, errors, cycles."""

from pathlib import Path

import pytest

from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import load_spec
from iclab.utils.errors import ConfigError

BASE = """
name = "base"
[defaults]
d = 2
steps = 10
[[groups]]
name = "a"
seeds = [0]
n = [3, 4]
[[groups]]
name = "b"
seeds = [0]
n = 5
[[claims]]
kind = "eta"
group = "a"
tolerance = 0.02
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_an_extending_spec_updates_groups_defaults_and_claims(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    child = write(tmp_path, "child.toml", """
extends = "base.toml"
name = "child"
[defaults]
steps = 20
[override_groups]
seeds = [0, 1]
[override_claims]
tolerance = 0.05
[[groups]]
name = "a"
n = [3]
[[groups]]
name = "b"
drop = true
[[groups]]
name = "c"
n = 7
[[claims]]
kind = "isotropy"
group = "c"
tolerance = 0.1
""")
    spec = load_spec(child, Registries())
    assert spec.name == "child" and [g.name for g in spec.groups] == ["a", "c"]
    configs = [p.config for p in spec.points()]
    assert {c.optim.steps for c in configs} == {20} and {c.task.d for c in configs} == {2}
    assert sorted((c.task.n, c.run.seed) for c in configs) == [(3, 0), (3, 1), (7, 0), (7, 1)]
    assert [(c.kind, c.tolerance) for c in spec.claims] == [("eta", 0.05), ("isotropy", 0.1)]


def test_extending_nothing_changes_nothing(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    child = write(tmp_path, "child.toml", 'extends = "base.toml"\nname = "base"\n')
    a, b = load_spec(tmp_path / "base.toml", Registries()), load_spec(child, Registries())
    assert [p.run_id for p in a.points()] == [p.run_id for p in b.points()]
    assert a.claims == b.claims


def test_a_built_in_spec_can_be_extended(tmp_path: Path) -> None:
    child = write(tmp_path, "mine.toml", 'extends = "reproduce-quick.toml"\nname = "mine"\n'
                  '[override_groups]\nseeds = [7]\n')
    spec = load_spec(child, Registries())
    assert spec.name == "mine" and {p.config.run.seed for p in spec.points()} == {7}


@pytest.mark.parametrize(("files", "message"), [
    ({"a.toml": 'extends = "b.toml"\n', "b.toml": 'extends = "a.toml"\n'}, "cycle"),
    ({"a.toml": 'extends = "nowhere.toml"\n'}, "no such spec beside it"),
    ({"a.toml": "extends = 3\n"}, "extends must name a spec file"),
    ({"a.toml": BASE + '[override_groups]\nseeds = [1]\n'}, "need extends"),
    ({"a.toml": 'extends = "base.toml"\n[[groups]]\nname = "zzz"\ndrop = true\n',
      "base.toml": BASE}, "cannot drop group 'zzz'"),
])
def test_bad_extends_are_one_line_errors(tmp_path: Path, files: dict[str, str],
                                        message: str) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=message) as info:
        load_spec(tmp_path / "a.toml", Registries())
    assert "\n" not in str(info.value)


def test_extends_depth_is_bounded(tmp_path: Path) -> None:
    write(tmp_path, "s0.toml", BASE)
    for level in range(1, 11):
        write(tmp_path, f"s{level}.toml", f'extends = "s{level - 1}.toml"\n')
    load_spec(tmp_path / "s8.toml", Registries())
    with pytest.raises(ConfigError, match="deeper than 8"):
        load_spec(tmp_path / "s10.toml", Registries())


def test_claim_overrides_can_name_the_kinds_they_apply_to(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE + '[[claims]]\nkind = "isotropy"\ngroup = "b"\n'
          'tolerance = 0.02\n')
    child = write(tmp_path, "child.toml", """
extends = "base.toml"
[[override_claims]]
kinds = ["isotropy"]
tolerance = 0.1
[[override_claims]]
separation = 3
""")
    spec = load_spec(child, Registries())
    assert [(c.kind, c.tolerance, c.separation) for c in spec.claims] == [
        ("eta", 0.02, 3.0), ("isotropy", 0.1, 3.0)]


def test_a_groups_own_keys_win_over_override_groups(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    child = write(tmp_path, "child.toml", 'extends = "base.toml"\n[override_groups]\n'
                  'seeds = [0, 1]\n[[groups]]\nname = "b"\nseeds = [5]\n[[groups]]\nname = "c"\n'
                  'n = 6\nseeds = [7]\n')
    spec = load_spec(child, Registries())
    assert {g.name: sorted({p.config.run.seed for p in g.points}) for g in spec.groups} == {
        "a": [0, 1], "b": [5], "c": [7]}


@pytest.mark.parametrize(("override", "message"), [
    ('[[override_claims]]\nkinds = ["gamma"]\ntolerance = 0.1\n', "kinds must list kinds"),
    ('[[override_claims]]\nkinds = "eta"\ntolerance = 0.1\n', "kinds must list kinds"),
    ("override_claims = 3\n", "override_claims must be a table or a list of tables"),
])
def test_bad_claim_overrides_are_one_line_errors(tmp_path: Path, override: str,
                                                 message: str) -> None:
    write(tmp_path, "base.toml", BASE)
    child = write(tmp_path, "child.toml", 'extends = "base.toml"\n' + override)
    with pytest.raises(ConfigError, match=message) as info:
        load_spec(child, Registries())
    assert "\n" not in str(info.value)
