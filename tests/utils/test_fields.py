"""Field declarations (iclab.utils.fields): read once per class, read only."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from iclab.utils.fields import field_infos, setting


@dataclass(frozen=True)
class Options:
    width: int = setting(8, "hidden width", minimum=1)
    act: str = setting("relu", "activation", choices=("relu", "tanh"))
    note: str = field(default="")  # not declared: not an option


def test_declared_fields_are_read_once_and_cannot_be_changed() -> None:
    infos = field_infos(Options)
    assert list(infos) == ["width", "act"]
    assert infos["width"][1].kind == "int" and infos["width"][1].minimum == 1
    assert infos["act"][1].choices == ("relu", "tanh")
    assert field_infos(Options) is infos  # the same declarations, not read again
    with pytest.raises(TypeError):
        infos["width"] = infos["act"]  # type: ignore[index]


def test_an_undeclarable_type_is_refused_every_time() -> None:
    @dataclass(frozen=True)
    class Bad:
        value: complex = setting(1j, "a complex number")

    for _ in range(2):
        with pytest.raises(TypeError, match="unsupported config field type"):
            field_infos(Bad)
