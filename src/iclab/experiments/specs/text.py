"""A spec's text: a .toml or .json file read as UTF-8 and parsed, each failure one line
naming the file (``ConfigError``)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from iclab.utils.errors import ConfigError


def parse_text(text: str, source: str, suffix: str) -> Any:
    """The data of a spec's ``text`` (JSON for a .json ``suffix``, else TOML)."""
    kind = "JSON" if suffix == ".json" else "TOML"
    try:
        return json.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{source}: not valid {kind}: {error}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not a spec: its {kind} nests too deeply") from None


def read_spec_file(path: Path) -> Any:
    """The parsed data of the spec file ``path``."""
    if path.suffix not in (".toml", ".json"):
        raise ConfigError(f"{path}: a spec must be a .toml or .json file")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read spec ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: a spec must be UTF-8 text; byte {error.start} is "
                          f"not") from None
    return parse_text(text, str(path), path.suffix)
