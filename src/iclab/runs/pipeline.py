"""``run_training``: validate → train → evaluate → read out → judge → result.json.

Everything is validated before anything is written; a finished run is not re-run (its
result is returned); an interrupted one resumes from its checkpoint. result.json is written
atomically and last, so a folder with result.json is a finished run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from iclab.analysis.depth_verdict import judge_depth
from iclab.analysis.evaluate import evaluate
from iclab.analysis.prefix.curves import PREFIX_PROMPTS, prefix_curves, prefix_summary
from iclab.analysis.prefix.outputs import write_prefix_outputs
from iclab.analysis.verdict import judge
from iclab.config.train import TrainConfig
from iclab.models.probe import is_builtin
from iclab.runs.folder import check_out_dir, prepare_run_dir, read_result
from iclab.tasks.registry import FAMILY_NAMES, FamilyRegistry
from iclab.training.loop import TrainingDivergedError, fit, resolve_device
from iclab.training.run_folder import RunFolder
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference


def run_training(
    config: TrainConfig,
    out_dir: str | Path,
    progress: bool = True,
    restart: bool = False,
    families: FamilyRegistry | None = None,
) -> dict[str, Any]:
    """Train (or resume, or skip if finished) the run of ``config`` in ``out_dir``; return
    the result written to result.json.

    Everything is checked before the folder is touched: the config (a user's draw function is
    called once, on two prompts), the device and the folder itself.
    """
    path = check_out_dir(out_dir)
    config.validate(families)
    resolve_device(config.run.device)
    task = config.make_task(families)
    if prepare_run_dir(config, path, restart):
        return read_result(path, config=config)
    pool = getattr(task, "task_pool", None)
    if pool is not None:  # the tasks of a pooled run, beside its config
        RunFolder(path).write_pool(pool)
    started, cpu_started = time.perf_counter(), time.process_time()
    threads = torch.get_num_threads()  # the process's (a sweep worker's: its share of cores)
    plugins = _uses_plugins(config)
    try:
        with _plugin_failures(plugins, path, "training"):
            trained = fit(config, task, path, progress)
    except OSError as error:  # the folder changed under us: a file became a folder, disk full
        name = f" {error.filename}" if error.filename else ""
        raise ConfigError(f"{path}: cannot write the run's files{name} "
                          f"({error.strerror or type(error).__name__})") from None
    depth = config.depth()
    with _plugin_failures(plugins, path, "evaluating the trained model"):
        result = evaluate(trained.model, task, config.run.eval_prompts, config.run.seed,
                          depth)
        if trained.model.has_prefix_predictions:  # the error at every k = 0..n
            curves = prefix_curves(trained.model, task,
                                   min(PREFIX_PROMPTS, config.run.eval_prompts), config.run.seed)
            write_prefix_outputs(RunFolder(path).prefix_files, curves,
                                 title=f"{config.model_name}, {config.task.family}")
            result.update(prefix_summary(curves))
    result.update(judge(result, linear=trained.model.has_readout))
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


def _uses_plugins(config: TrainConfig) -> bool:
    """Whether the run's model, family or covariate law is a user's plug-in."""
    return (not is_builtin(config.model_class()) or config.task.family not in FAMILY_NAMES
            or is_plugin_reference(config.task.x_law))


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
