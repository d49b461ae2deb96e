"""Atomic file writes: a reader sees the old file or the whole new one, never half of it."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from iclab.utils.errors import NotFiniteError


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, fsync it, then rename it over."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp: Path | None = None
    try:  # the temporary file is removed on every way out: an error, Ctrl-C, SIGTERM (the CLI)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        tmp = Path(tmp_name)
        os.close(fd)
        write(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""

    def write(tmp: Path) -> None:
        tmp.write_text(text)

    atomic_write(path, write)


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically; NotFiniteError, and no file, if
    it holds a NaN or an infinity (JSON has neither)."""
    try:
        text = json.dumps(data, indent=2, sort_keys=False, allow_nan=False)
    except ValueError:
        raise NotFiniteError(f"{path}: a number to be written is not finite (NaN or "
                             f"infinity), so nothing is written") from None
    atomic_write_text(path, text + "\n")


def _bytes_writer(body: bytes) -> Callable[[Path], None]:
    def write(tmp: Path) -> None:
        tmp.write_bytes(body)

    return write


def write_files(folder: Path, contents: Sequence[tuple[str, str | bytes]]) -> None:
    """Write each (name, text or bytes) of ``contents`` into ``folder`` atomically, all or
    none: on any failure (a full disk, Ctrl-C) the files this call created and the folders it
    made are removed again (files it replaced keep their new or old whole content)."""
    folder = Path(folder)
    missing = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    created: list[Path] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in contents:
            path = folder / name
            existed = path.exists()
            if isinstance(content, bytes):
                atomic_write(path, _bytes_writer(content))
            else:
                atomic_write_text(path, content)
            if not existed:
                created.append(path)
    except BaseException:
        for path in created:
            path.unlink(missing_ok=True)
        for made in missing:  # deepest first
            try:
                made.rmdir()
            except OSError:
                break
        raise


def read_json(path: Path) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text())


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """The CSV text of ``rows``: a header of every key (first seen first), then one line per
    row, numbers as ``repr`` (exact floats) and missing or None values as empty cells."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(key) is None else repr(row[key]) for key in columns])
    return buffer.getvalue()
