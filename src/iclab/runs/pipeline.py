"""``run_training``: validate → train → evaluate → read out → judge → result.json.

Everything is validated before anything is written; a finished run is not re-run (its
result is returned); an interrupted one resumes from its checkpoint. result.json is written
atomically and last, so a folder with result.json is a finished run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import torch

from iclab.analysis.depth_verdict import judge_depth
from iclab.analysis.evaluate import evaluate
from iclab.analysis.verdict import judge
from iclab.config.task_section import option_values
from iclab.config.train import TrainConfig
from iclab.models.probe import is_builtin
from iclab.models.registry import ModelRegistry
from iclab.runs.folder import check_out_dir, prepare_run_dir, read_result
from iclab.runs.outputs import RunOutput
from iclab.tasks.base import TaskFamily
from iclab.tasks.registry import FamilyRegistry
from iclab.tracking import Tracking
from iclab.training.loop import MetricsHook, TrainingDivergedError, fit, resolve_device
from iclab.training.run_folder import RunFolder
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference
from iclab.utils.studies import Study, check_studies, installed_studies, load_study


class RunRegistries(Protocol):
    """What a run needs of its command's registries (``iclab.experiments.registries``): the
    families its config names and the outputs the studies add to a finished run (the model
    class was resolved when the config was made)."""

    @property
    def families(self) -> FamilyRegistry: ...

    @property
    def run_outputs(self) -> Sequence[RunOutput]: ...


def run_training(
    config: TrainConfig,
    out_dir: str | Path,
    progress: bool = True,
    restart: bool = False,
    registries: RunRegistries | None = None,
    tracking: Tracking | None = None,
) -> dict[str, Any]:
    """Train (or resume, or skip if finished) the run of ``config`` in ``out_dir``; return
    the result written to result.json. ``registries``: the command's (default: the core and
    every installed study, built here). ``tracking``: the experiment trackers to log the
    config, every metrics line, the result and the figures to (``iclab.tracking``; a
    finished run is read back and logs nothing).

    Everything is checked before the folder is touched: the config (a user's draw function is
    called once, on two prompts), the device and the folder itself. The family is built once.
    """
    path = check_out_dir(out_dir)
    registries = registries or run_registries()
    task = config.checked_task(registries.families)
    resolve_device(config.run.device)
    if prepare_run_dir(config, path, restart, registries.families):
        return read_result(path, config=config)
    pool = task.task_pool
    if pool is not None:  # the tasks of a pooled run, beside its config
        RunFolder(path).write_pool(pool)
    with (tracking or Tracking()).session(path, config.to_json()) as session:
        result = _train_and_judge(config, task, path, progress, registries,
                                  session.log_metrics)
        session.finish(result, path)
    return result


def _train_and_judge(config: TrainConfig, task: TaskFamily, path: Path, progress: bool,
                     registries: RunRegistries, on_record: MetricsHook) -> dict[str, Any]:
    """Train, evaluate, judge and write result.json (the checks and the folder are done)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    threads = torch.get_num_threads()  # the process's (a sweep worker's: its share of cores)
    plugins = _uses_plugins(config, registries.families)
    try:
        with _plugin_failures(plugins, path, "training"):
            trained = fit(config, task, path, progress, on_record)
    except OSError as error:  # the folder changed under us: a file became a folder, disk full
        name = f" {error.filename}" if error.filename else ""
        raise ConfigError(f"{path}: cannot write the run's files{name} "
                          f"({error.strerror or type(error).__name__})") from None
    depth = config.depth()
    with _plugin_failures(plugins, path, "evaluating the trained model"):
        result = evaluate(trained.model, task, config.run.eval_prompts, config.run.seed,
                          depth)
        for output in registries.run_outputs:  # what the studies add (prefix curves, ...)
            if output.applies(trained.model, task):
                result.update(output.write(trained.model, task, config, path))
    result.update(judge(result, linear=trained.model.bounded_by_lsa_optimum(task)))
    if depth is not None:  # an L-layer stack: judged against the optimal L-step GD
        result.update(judge_depth(result, sparse="layer_steps" in result))
    result["wall_seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = time.process_time() - cpu_started  # this process, all threads
    result["threads"] = threads
    result["sampler"] = trained.sampler
    try:
        return RunFolder(path).write_result(result, config.hash(), trained.checksum)
    except OSError as error:  # a full disk: atomic_write has removed its temporary file
        raise ConfigError(f"{path}: cannot write the result "
                          f"({error.strerror or type(error).__name__})") from None
    except ValueError:  # JSON holds no NaN: the model did not train (weights underflowed to 0)
        bad = [key for key, value in result.items() if not _finite(value)]
        raise TrainingDivergedError(
            f"the trained model's {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not "
            f"finite, so no result is written; check --init-scale and --lr (rerun with "
            f"--restart)") from None


class _Builtins:
    """The models, families and run outputs of the core and of ``studies``."""

    def __init__(self, studies: Sequence[Study]) -> None:
        self.models = ModelRegistry(studies=studies)
        self.families = FamilyRegistry(studies=studies)
        self.run_outputs = [output for study in studies for output in study.run_outputs()]


def run_registries(study_references: Sequence[str] = ()) -> _Builtins:
    """The registries of a run made outside a command (a sweep's worker, a caller that gives
    none): the core's, every installed study's and those of the studies named by reference
    (``FILE.py:STUDY``, ``MODULE:STUDY``)."""
    studies = check_studies((*installed_studies(),
                             *(load_study(reference) for reference in study_references)))
    return _Builtins(studies)


def _uses_plugins(config: TrainConfig, families: FamilyRegistry) -> bool:
    """Whether the run's model, family or covariate law is a user's plug-in."""
    return (not is_builtin(config.model_class()) or families.is_plugin(config.task.family)
            or any(is_plugin_reference(value) for value in option_values(config.task).values()))


@contextmanager
def _plugin_failures(plugins: bool, path: Path, stage: str) -> Iterator[None]:
    """A user's plug-in failing later than its probe (``TrainConfig.validate``): one
    ConfigError line; iclab's own errors pass through."""
    try:
        yield
    except (ConfigError, OSError, MemoryError, TrainingDivergedError):
        raise
    except Exception as error:
        if not plugins:
            raise
        text = " ".join(str(error).split())[:160]
        raise ConfigError(f"{path}: {stage} failed in a plug-in ({type(error).__name__}: "
                          f"{text}); no result is written") from None


def _finite(value: Any) -> bool:
    """Whether ``value`` holds only finite numbers (JSON can write it)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True
