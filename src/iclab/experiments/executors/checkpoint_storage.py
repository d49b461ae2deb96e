"""Mid-run checkpoints on shared storage (``--storage URI``), so a run outlives its node.

Any fsspec URI works: ``s3://bucket/prefix`` (needs s3fs), ``gs://bucket/prefix`` (gcsfs), a
folder every node mounts, or a local folder (tests, one machine). While a Ray task trains, a
``CheckpointMirror`` copies the run's resume files to ``URI/runs/<config hash>/`` each time the
training loop writes a new checkpoint; when the task is retried on another node (its node
died) or the sweep is run again (its driver died), the run resumes from there. Each file is
written under a temporary name and then moved into place, the checkpoint last, so the stored
metrics always cover the stored checkpoint's steps. The driver removes a run's copy once the
finished run is in the sweep folder.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from iclab.experiments.executors.run_files import CHECKPOINT, CONFIG, RESUME_FILES, RunFiles
from iclab.utils.errors import ConfigError

MIRROR_POLL_SECONDS = 1.0


def _fsspec() -> Any:
    try:
        import fsspec  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - torch depends on fsspec
        raise ConfigError("--storage needs fsspec; run: pip install fsspec") from None
    return fsspec


def resolve_storage(uri: str) -> str:
    """``uri`` checked on the driver: a known, installed fsspec protocol; a local path absolute.

    A relative folder would otherwise be resolved in each node's own working directory.
    """
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(f"--storage must be a URI or a folder, got {uri!r}")
    fsspec = _fsspec()
    protocol, path = fsspec.core.split_protocol(uri)
    if protocol in (None, "file", "local"):
        return os.path.abspath(os.path.expanduser(str(path)))
    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        raise ConfigError(f"--storage {uri!r}: unknown protocol {protocol!r}; use s3://, "
                          "gs://, another fsspec protocol, or a folder") from None
    except ImportError as error:
        raise ConfigError(f"--storage {uri!r}: the {protocol!r} file system is not installed "
                          f"({error}); install it on the driver and on every node") from None
    return uri


class CheckpointStorage:
    """The runs' resume files under ``URI/runs/<run id>/`` on an fsspec file system."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._fs, root = _fsspec().core.url_to_fs(uri)
        self._root = str(root).rstrip("/")

    def folder(self, run_id: str) -> str:
        """Where run ``run_id``'s files live."""
        return f"{self._root}/runs/{run_id}"

    def load(self, run_id: str) -> RunFiles:
        """The stored resume files of ``run_id`` ({} unless a config and a checkpoint)."""
        files: RunFiles = {}
        for name in RESUME_FILES:
            path = f"{self.folder(run_id)}/{name}"
            try:
                files[name] = bytes(self._fs.cat_file(path))
            except FileNotFoundError:
                continue
        return files if CHECKPOINT in files and CONFIG in files else {}

    def save(self, run_id: str, files: Mapping[str, bytes]) -> None:
        """Store ``files``, each under a temporary name then moved into place, checkpoint last."""
        folder = self.folder(run_id)
        self._fs.makedirs(folder, exist_ok=True)
        for name in sorted(files, key=lambda name: (name == CHECKPOINT, name)):
            temporary = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
            self._fs.pipe_file(temporary, bytes(files[name]))
            self._fs.mv(temporary, f"{folder}/{name}")

    def remove(self, run_id: str) -> None:
        """Delete ``run_id``'s stored files, if any."""
        folder = self.folder(run_id)
        if self._fs.exists(folder):
            self._fs.rm(folder, recursive=True)


class CheckpointMirror:
    """While open, copies ``folder``'s resume files to ``storage`` whenever its checkpoint
    changes (checked every ``poll`` seconds).

    A failure to store is kept in ``error`` (the run goes on without it).
    """

    def __init__(self, storage: CheckpointStorage, run_id: str, folder: Path,
                 poll: float = MIRROR_POLL_SECONDS) -> None:
        self.storage, self.run_id, self.folder, self.poll = storage, run_id, Path(folder), poll
        self.error: str | None = None
        self._seen: tuple[int, int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"mirror-{run_id}", daemon=True)

    def __enter__(self) -> CheckpointMirror:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            self.sync()

    def sync(self) -> bool:
        """Store the resume files if the checkpoint changed since the last call; True if so."""
        checkpoint = self.folder / CHECKPOINT
        if not (self.folder / CONFIG).is_file():
            return False
        try:
            stat = checkpoint.stat()
            seen = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            if seen == self._seen:
                return False
            files = {CHECKPOINT: checkpoint.read_bytes()}  # replaced atomically: always whole
            for name in RESUME_FILES:  # read after the checkpoint: they cover its steps
                if name != CHECKPOINT and (self.folder / name).is_file():
                    files[name] = (self.folder / name).read_bytes()
            self.storage.save(self.run_id, files)
        except FileNotFoundError:
            return False
        except Exception as error:  # storage trouble must not stop the training
            self.error = f"{type(error).__name__}: {error}"
            return False
        self._seen = seen
        return True
