"""A run folder as bytes: what a remote task sends back, and how the driver writes it.

A Ray task trains its run in a temporary folder of its own node and returns every file the
run wrote, ``{relative path: bytes}`` (the files of ``iclab.training.run_folder``: a few KB to
a few MB). The driver writes them into
``DIR/runs/<config hash>/`` atomically and result.json last, so a folder holding result.json
is always complete. An unfinished folder's resume files travel the other way, so a run resumes
from its checkpoint on whichever node it is scheduled.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from iclab.training.run_folder import CHECKPOINT, CONFIG, RESULT, RESUME_FILES
from iclab.utils.errors import ConfigError
from iclab.utils.io import atomic_write

__all__ = ["CHECKPOINT", "CONFIG", "RESULT", "RESUME_FILES", "RunFiles", "checkpoint_step",
           "read_run_files", "resume_files", "write_run_files"]

RunFiles = dict[str, bytes]


def _check_name(name: str) -> PurePosixPath:
    """``name`` as a relative path inside a run folder, or a ConfigError."""
    path = PurePosixPath(name)
    if not isinstance(name, str) or any(part in ("", ".", "..") for part in name.split("/")):
        raise ConfigError(f"a run file must be a relative path inside its folder, got {name!r}")
    return path


def read_run_files(folder: Path) -> RunFiles:
    """Every file under ``folder`` (relative POSIX path -> bytes), temporary files left out."""
    folder = Path(folder)
    files: RunFiles = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            files[relative.as_posix()] = path.read_bytes()
    return files


def write_run_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` into ``folder``, each atomically, result.json last."""
    folder = Path(folder)
    names = sorted(files, key=lambda name: (name == RESULT, name))
    targets = [(folder / _check_name(name), files[name]) for name in names]
    for target, data in targets:
        _atomic_write_bytes(target, data)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    atomic_write(path, write)


def resume_files(folder: Path) -> RunFiles:
    """The resume files of an unfinished run in ``folder``; {} if finished or never started."""
    folder = Path(folder)
    if (folder / RESULT).exists() or not (folder / CONFIG).exists():
        return {}
    return {name: (folder / name).read_bytes() for name in RESUME_FILES
            if (folder / name).is_file()}


def checkpoint_step(files: Mapping[str, bytes]) -> int:
    """The number of completed steps in ``files``' checkpoint (0 if none or unreadable).

    Read from the safetensors header (8 bytes little-endian length, then JSON whose
    ``__metadata__`` holds the step), without loading any tensor.
    """
    data = files.get(CHECKPOINT)
    if data is None or len(data) < 8:
        return 0
    (length,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8:8 + length])
        return max(0, int(header["__metadata__"]["step"]))
    except (ValueError, KeyError, TypeError):
        return 0
