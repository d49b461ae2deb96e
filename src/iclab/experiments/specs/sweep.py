"""Running a spec: every point is a run folder DIR/runs/<config hash>/, finished ones skipped.

``run_sweep`` hands the unfinished runs to an executor (local processes, Ray or SLURM), shows one
progress bar for the whole sweep, makes the measurements the spec's claims need beyond
result.json (``ClaimSpec.measurements``: the shift claims' shifted test laws) in the run
folders, and writes results.csv and timings.csv from the run folders.
A sweep killed at any moment and started again resumes every unfinished run from its
checkpoint and ends with the same results as an uninterrupted one.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm import tqdm

from iclab.config.train import TrainConfig
from iclab.experiments.executors.local import Executor, LocalExecutor, RunOutcome, RunTask
from iclab.experiments.executors.slurm_executor import refuse_slurm_options
from iclab.experiments.specs.groups import Point
from iclab.experiments.specs.results import (
    RunRecord,
    is_finished,
    load_records,
    run_dir,
    write_tables,
)
from iclab.experiments.specs.spec import Spec
from iclab.training.loop import resolve_device
from iclab.training.run_folder import RunFolder
from iclab.utils.errors import ConfigError, Error

EXECUTORS = ("local", "ray", "slurm")


class SweepError(Error, RuntimeError):
    """Some runs failed; the message names how many and the first failure."""


def estimated_cost(config: TrainConfig) -> float:
    """A rough relative cost of a run: training draws plus the test-loss prompts."""
    n = config.task.n
    per_prompt = 1.0 if config.resolved_sampler() == "statistics" else 0.3 * (n + 1)
    return (config.optim.steps * config.optim.batch * per_prompt
            + 0.5 * config.run.eval_prompts * (n + 1))


def make_executor(name: str, workers: int | None = None, address: str | None = None,
                  storage: str | None = None, connect_timeout: float | None = None,
                  threads: int | None = None, slurm: Mapping[str, Any] | None = None
                  ) -> Executor:
    """The executor called ``name`` ("local", "ray" or "slurm"); ``address``, ``storage`` and
    ``connect_timeout`` apply to Ray only (see ``iclab.experiments.executors.ray_executor``),
    ``slurm`` (keyword -> value, None: not given) to SLURM only (``SLURM_OPTIONS``);
    ``threads``: each worker's (or Ray task's, or SLURM job's) threads, None for the default."""
    if name not in EXECUTORS:
        raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}; got {name!r}")
    ray_only = (("--address", address), ("--storage", storage),
                ("--connect-timeout", connect_timeout))
    if name != "ray":
        for option, value in ray_only:
            if value is not None:
                raise ConfigError(f"{option} applies only to --executor ray")
    if name != "slurm":
        refuse_slurm_options(slurm)
    if name == "local":
        return LocalExecutor(workers, threads)
    if name == "ray":
        from iclab.experiments.executors.ray_executor import RayExecutor

        return RayExecutor(address, workers, storage, connect_timeout, threads=threads)
    if workers is not None:
        raise ConfigError("--workers applies to --executor local and ray; with --executor "
                          "slurm, --array-parallelism limits the jobs running at once")
    from iclab.experiments.executors.slurm_executor import SlurmExecutor

    return SlurmExecutor(threads, slurm)


def check_sweep_dir(out_dir: str | Path) -> Path:
    """``out_dir`` as a Path if a sweep folder can be created or reused there (it and its
    runs/ and runs/.locks are folders or absent, not below a file); ConfigError otherwise."""
    if str(out_dir).strip() == "":
        raise ConfigError("--out must name a folder, got an empty string")
    out_dir = Path(out_dir)
    try:
        for path in (out_dir, out_dir / "runs", out_dir / "runs" / ".locks"):
            if path.exists() and not path.is_dir():
                raise ConfigError(f"{path} exists and is not a folder")
        ancestor = out_dir
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise ConfigError(f"--out {out_dir}: {ancestor} is a file, not a folder")
    except OSError as error:  # a name too long, a loop of links
        raise ConfigError(f"--out {out_dir}: {error.strerror or type(error).__name__}") \
            from None
    return out_dir


def prepare_sweep_dir(out_dir: str | Path) -> Path:
    """Create OUT/runs/.locks after ``check_sweep_dir``; ConfigError if that fails."""
    out_dir = check_sweep_dir(out_dir)
    try:
        (out_dir / "runs" / ".locks").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"--out {out_dir}: cannot create the sweep folder "
                          f"({error.strerror or type(error).__name__})") from None
    return out_dir


def _task(point: Point, out_dir: Path, studies: tuple[str, ...]) -> RunTask:
    return RunTask(run_id=point.run_id, config=point.config.to_json(),
                   run_dir=str(run_dir(out_dir, point.run_id)),
                   lock_path=str(out_dir / "runs" / ".locks" / f"{point.run_id}.lock"),
                   studies=studies)


def failure_message(failures: list[RunOutcome], total: int, shown: int = 5) -> str:
    """One line: how many runs failed, which (the first ``shown``), the first error, and that
    running again retries them (finished runs are kept)."""
    names = ", ".join(f.run_id for f in failures[:shown])
    more = f" and {len(failures) - shown} more" if len(failures) > shown else ""
    return (f"{len(failures)} of {total} runs failed ({names}{more}; first error: "
            f"{failures[0].error}); run the same command again to retry them, finished runs "
            "are kept")


def _check_writable(out_dir: Path) -> None:
    """ConfigError unless ``out_dir`` is a folder, or can be created, and can be written."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} exists and is not a folder")
    existing = out_dir.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write the sweep folder {out_dir}: {existing} is not a "
                          "writable folder")
    try:  # permissions can lie (root, special file systems): try, and leave nothing behind
        os.rmdir(tempfile.mkdtemp(prefix=".iclab-probe-", dir=existing))
    except OSError as error:
        raise ConfigError(f"cannot write the sweep folder {out_dir}: {existing} is not a "
                          f"writable folder ({error.strerror or type(error).__name__})") from None


def check_devices(spec: Spec) -> None:
    """ConfigError (one line, naming the group) unless the device of every run of ``spec``
    is available on this machine (``device = "cuda"`` without CUDA): before any run."""
    for group in spec.groups:
        for device in dict.fromkeys(point.config.run.device for point in group.points):
            try:
                resolve_device(device)
            except ConfigError as error:
                raise ConfigError(f"{spec.source}: group {group.name!r}: {error}") from None


def run_sweep(
    spec: Spec, out_dir: Path, executor: Executor, progress: bool = True,
    studies: tuple[str, ...] = (), seconds: dict[str, float] | None = None,
) -> dict[str, RunRecord]:
    """Run every unfinished point of ``spec`` under ``out_dir``; return all records.
    ``studies``: the references of the studies the command added (``--study``), which every
    run's worker loads too; ``seconds``: the seconds (wall) of the measurements are added to it,
    by section.

    Raises SweepError when a run fails (the others still finish; run again to retry).
    """
    out_dir = check_sweep_dir(out_dir)
    if isinstance(executor, LocalExecutor):  # its runs train here: their devices must exist
        check_devices(spec)
    _check_writable(out_dir)  # created as runs finish: a sweep that cannot start leaves none
    points = spec.points()
    pending = [p for p in points if not is_finished(out_dir, p.run_id)]
    unfinished = {p.run_id for p in pending}
    for point in points:  # a finished run edited since is refused before any work
        if point.run_id not in unfinished:
            RunFolder(run_dir(out_dir, point.run_id)).read_result((), point.config.hash())
    pending.sort(key=lambda p: -estimated_cost(p.config))  # longest first: a shorter sweep
    failures: list[RunOutcome] = []
    bar = tqdm(total=len(points), initial=len(points) - len(pending), unit="run",
               desc=f"sweep {spec.name}", disable=not progress, dynamic_ncols=True)

    def on_done(outcome: RunOutcome) -> None:
        bar.update(1)
        if outcome.error is not None:
            failures.append(outcome)
            bar.write(f"run {outcome.run_id} failed: {outcome.error}")

    try:
        executor.run([_task(p, out_dir, studies) for p in pending], on_done)
    finally:
        bar.close()
    if failures:
        raise SweepError(failure_message(failures, len(points)))
    records = load_records(spec, out_dir)
    for section, used in measure_runs(spec, out_dir).items():
        if seconds is not None:
            seconds[section] = seconds.get(section, 0.0) + used
    write_tables(records, out_dir)
    return records


def measure_runs(spec: Spec, out_dir: Path) -> dict[str, float]:
    """Make every measurement the spec's claims and ``[[measurements]]`` need on the finished
    runs of their groups (in spec order, each run once per measurement; those already made are
    kept); return the seconds (wall) they took, by the section of the claim or table."""
    wanted = [(claim.section, claim.group, measurement) for claim in spec.claims
              for measurement in claim.measurements]
    wanted += [(table.section, group, measurement) for table in spec.measurements
               for group in table.groups for measurement in table.run_measurements]
    seconds: dict[str, float] = {}
    for section, group, measurement in wanted:
        started = time.perf_counter()
        for point in spec.group(group).points:
            folder = run_dir(out_dir, point.run_id)
            if not measurement.is_done(folder):
                measurement.measure(folder)
        seconds[section] = seconds.get(section, 0.0) + time.perf_counter() - started
    return seconds
