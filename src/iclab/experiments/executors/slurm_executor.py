"""Running a sweep's runs as SLURM jobs through submitit (the optional extra ``iclab[slurm]``).

One job per run, submitted as one job array (``--array-parallelism``: SLURM's ``%N``, the most
array jobs running at once). Each job trains its run in place, in the sweep folder (the one
file system every node must see: the output folder), with the run's lock held as a local
worker does (``local.execute_run``), so a finished run is skipped and an interrupted one
resumes from its checkpoint exactly as with the local and Ray executors; the results are the
same, byte for byte. submitit keeps its job files and each job's log in OUT/slurm/.

The options are declared here (``SLURM_OPTIONS``), read by the command line, and refused with
the other executors. ``--cluster local`` (or ``debug``) runs the same jobs through submitit's
local executor (processes on this machine; ``debug``: in this process), for testing without a
SLURM installation. Ctrl-C cancels every job of the sweep that has not finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iclab.experiments.executors.local import RunOutcome, RunTask, execute_run
from iclab.utils.errors import ConfigError
from iclab.utils.threads import check_threads

CLUSTERS = ("slurm", "local", "debug")
"""submitit's executors: SLURM itself, local processes, this process."""

POLL_SECONDS = 1.0
"""How often the driver asks whether a job has finished (submitit rate-limits SLURM's)."""

LOG_FOLDER = "slurm"
"""submitit's folder (job files, logs) inside the sweep folder."""


@dataclass(frozen=True)
class SlurmOption:
    """One option of ``--executor slurm``: its flag, its keyword, its type and its help."""

    flag: str
    key: str
    kind: type
    help: str


SLURM_OPTIONS = (
    SlurmOption("--partition", "partition", str,
                "With --executor slurm: the partition to submit to [default: the cluster's]."),
    SlurmOption("--time", "time", int,
                "With --executor slurm: minutes each job may run [default: 60]; a run cut "
                "off resumes from its checkpoint when the sweep is run again."),
    SlurmOption("--cpus", "cpus", int,
                "With --executor slurm: CPUs each job asks for [default: --threads, or 1]."),
    SlurmOption("--mem", "mem", int,
                "With --executor slurm: GB of memory each job asks for [default: the "
                "partition's]."),
    SlurmOption("--array-parallelism", "array_parallelism", int,
                "With --executor slurm: the most jobs of the sweep's array running at once "
                "(SLURM's %N) [default: 256]."),
    SlurmOption("--cluster", "cluster", str,
                "With --executor slurm: slurm, or submitit's local (processes on this "
                "machine) or debug (this process) executor, to test without SLURM "
                "[default: slurm]."),
)

DEFAULT_TIME_MINUTES = 60
DEFAULT_ARRAY_PARALLELISM = 256


def refuse_slurm_options(values: Mapping[str, Any] | None) -> None:
    """ConfigError naming the first ``--executor slurm`` option given (not None)."""
    for option in SLURM_OPTIONS:
        if (values or {}).get(option.key) is not None:
            raise ConfigError(f"{option.flag} applies only to --executor slurm")


def import_submitit() -> Any:
    """The submitit module, or ConfigError naming the pip command."""
    try:
        import submitit
    except ImportError:
        raise ConfigError("--executor slurm needs submitit, which is not installed: "
                          "pip install 'iclab[slurm]'") from None
    return submitit


def _positive(option: str, value: Any, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{option} must be an integer >= 1, got {value!r}")
    return value


def run_job(task: RunTask, threads: int) -> RunOutcome:
    """What one SLURM job does: train (or resume, or skip) its run in place with ``threads``
    threads (torch and BLAS), under the run's lock; never raises."""
    return execute_run(task, threads)


class SlurmExecutor:
    """Runs tasks as one SLURM job array through submitit; options: ``SLURM_OPTIONS``.

    ``threads``: the threads each job uses (default: its CPUs, ``--cpus``, default 1).
    """

    def __init__(self, threads: int | None = None, options: Mapping[str, Any] | None = None
                 ) -> None:
        values = dict(options or {})
        asked = check_threads(threads)
        self.cpus = _positive("--cpus", values.get("cpus"), asked or 1) or 1
        self.threads = asked or self.cpus
        self.time = _positive("--time", values.get("time"), DEFAULT_TIME_MINUTES)
        self.mem = _positive("--mem", values.get("mem"), None)
        self.array_parallelism = _positive("--array-parallelism",
                                           values.get("array_parallelism"),
                                           DEFAULT_ARRAY_PARALLELISM)
        partition = values.get("partition")
        if partition is not None and (not isinstance(partition, str) or not partition.strip()):
            raise ConfigError(f"--partition must name a partition, got {partition!r}")
        self.partition: str | None = partition
        cluster = values.get("cluster") or "slurm"
        if cluster not in CLUSTERS:
            raise ConfigError(f"--cluster must be one of {', '.join(CLUSTERS)}, got "
                              f"{cluster!r}")
        self.cluster: str = cluster
        self.submitit = import_submitit()

    def parameters(self) -> dict[str, Any]:
        """submitit's parameters of every job (``AutoExecutor.update_parameters``)."""
        parameters: dict[str, Any] = {
            "name": "iclab", "timeout_min": self.time, "cpus_per_task": self.cpus,
            "slurm_array_parallelism": self.array_parallelism}
        if self.mem is not None:
            parameters["mem_gb"] = self.mem
        if self.partition is not None:
            parameters["slurm_partition"] = self.partition
        return parameters

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        if not tasks:
            return
        folder = Path(tasks[0].run_dir).parent.parent / LOG_FOLDER  # OUT/runs/<id> -> OUT
        executor = self.submitit.AutoExecutor(folder=str(folder), cluster=self.cluster)
        executor.update_parameters(**self.parameters())
        jobs = executor.map_array(run_job, list(tasks), [self.threads] * len(tasks))
        pending = list(zip(jobs, tasks, strict=True))
        try:
            while pending:
                waiting = []
                for job, task in pending:
                    if job.done():
                        on_done(self._outcome(job, task))
                    else:
                        waiting.append((job, task))
                pending = waiting
                if pending:
                    time.sleep(POLL_SECONDS)
        except BaseException:
            for job, _ in pending:
                job.cancel(check=False)
            raise

    def _outcome(self, job: Any, task: RunTask) -> RunOutcome:
        """The finished job's outcome; a failure (timed out, killed, cancelled) as one line
        naming its log."""
        try:
            outcome: RunOutcome = job.result()
        except Exception as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            first = lines[0] if lines else type(error).__name__
            return RunOutcome(task.run_id, f"SLURM job {job.job_id}: {first} (log: "
                              f"{job.paths.stderr})", 0.0)
        return outcome
