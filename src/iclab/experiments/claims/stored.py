"""Theory the report's driver computes, kept in the sweep folder so that a report made again
(a resumed or re-run ``iclab reproduce``) reads it back instead of computing it again.

The claims, figures and measurements of a report share Monte Carlo numbers that no run holds
(a site's Bayes risk, the shifted test laws' Bayes risks, the finite-d simulations of Lu et
al.'s asymptotics): seconds each, minutes in all. ``StoredValues`` is a mapping from a key (a
tuple of the inputs: numbers, strings, bytes) to such a value, kept in memory for one report
and, in a sweep folder, as one JSON file per key in ``OUT/theory-cache/``. A file is bound to
what made it, like a run's files to its config: it holds the key, a digest of the source of
the module whose code computed the value (``code``) and a checksum of the value. A file whose
key, code digest or checksum does not match (edited, damaged, or written by other code) is not
read: the value is computed again and the file replaced, atomically. Without a folder (claims
checked on records alone) the values stay in memory.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from iclab.utils.io import atomic_write_text

FOLDER = "theory-cache"
"""The sweep folder's subfolder that holds the stored values."""
FORMAT = "iclab-theory-cache-1"

Value = TypeVar("Value")


Code = Callable[..., Any] | tuple[Callable[..., Any], ...]
"""The function that computes stored values, or the functions (a value drawn by one module's
rule from another's draws depends on both)."""


def code_digest(code: Code) -> str:
    """A digest of the source files of the modules that define ``code`` (32 hex digits)."""
    data = b""
    for function in code if isinstance(code, tuple) else (code,):
        source = inspect.getsourcefile(function)
        data += Path(source).read_bytes() if source is not None else repr(function).encode()
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _checksum(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, allow_nan=False)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class StoredValues(MutableMapping[tuple[Any, ...], Value], Generic[Value]):
    """Values by key, in memory and (with ``folder``) in ``folder/theory-cache``.

    name: what the values are (a file name's prefix: lower-case letters, digits, '-');
    code: the function that computes them, or the functions (their modules' sources bind the
    files);
    encode / decode: the value to and from JSON numbers, lists and dicts (floats round-trip
    exactly through JSON)."""

    def __init__(self, folder: Path | None, name: str, code: Code,
                 encode: Callable[[Value], Any], decode: Callable[[Any], Value]) -> None:
        self._folder = None if folder is None else Path(folder) / FOLDER
        self._name, self._code = name, code_digest(code)
        self._encode, self._decode = encode, decode
        self._memory: dict[tuple[Any, ...], Value] = {}

    def path(self, key: tuple[Any, ...]) -> Path | None:
        """The file that holds ``key``'s value (None without a folder)."""
        if self._folder is None:
            return None
        digest = hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()
        return self._folder / f"{self._name}-{digest}.json"

    def _read(self, key: tuple[Any, ...]) -> Value | None:
        path = self.path(key)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            bound = (isinstance(data, dict) and data.get("format") == FORMAT
                     and data.get("key") == repr(key) and data.get("code") == self._code
                     and data.get("checksum") == _checksum(data.get("value")))
            return self._decode(data["value"]) if bound else None
        except (OSError, ValueError, KeyError, TypeError):  # damaged: computed again
            return None

    def __getitem__(self, key: tuple[Any, ...]) -> Value:
        if key not in self._memory:
            value = self._read(key)
            if value is None:
                raise KeyError(key)
            self._memory[key] = value
        return self._memory[key]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __setitem__(self, key: tuple[Any, ...], value: Value) -> None:
        self._memory[key] = value
        path = self.path(key)
        if path is not None:
            encoded = self._encode(value)
            record = {"format": FORMAT, "name": self._name, "key": repr(key),
                      "code": self._code, "checksum": _checksum(encoded), "value": encoded}
            atomic_write_text(path, json.dumps(record, indent=1, allow_nan=False) + "\n")

    def __delitem__(self, key: tuple[Any, ...]) -> None:
        del self._memory[key]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._memory)

    def __len__(self) -> int:
        return len(self._memory)
