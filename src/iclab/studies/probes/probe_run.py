"""``iclab probe RUN_DIR``: ridge probes from each hook point of a finished run's model to the
exact targets of one seeded prompt set (``targets``), with two controls.

For each hook point (``iclab.models.hooks``) and position (``query``: T-1; ``context``: T-2,
the last context token, where the hook point has one), a probe is fitted per target
(``linear_probes.fit_probes``) on three sets of features:

- ``trained``: the run's model;
- ``init``: the same model at its random initialisation, rebuilt from the run's config and
  seed as training built it (``make_generator(seed, "init")``, ``prepare_for_task``);
- ``shuffled``: the trained model's features with the targets permuted across prompts
  (seeded), whose R^2 must be about 0 (a probe that finds structure in noise would not).

The models run in float32, the precision they train in (the targets and the probes are
float64). Everything is checked before any work (targets the family can give, hook points the model
has, the layers asked for), and nothing is written on an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclab.models.base import Model
from iclab.models.hooks import cache, check_hook_names, hook_names
from iclab.runs.folder import load_trained_model, read_finished_run
from iclab.studies.probes import targets as exact
from iclab.studies.probes.linear_probes import fit_probes
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

CONTROLS = ("trained", "init", "shuffled")
POSITIONS = ("query", "context")
MAX_PROMPTS = 20_000
"""The most prompts ``iclab probe`` reads: every hook point of both models is held at once
(the 3-layer transformer of width 64 at n = 20: about 1.5 GB at this count)."""


@dataclass(frozen=True)
class ProbeSettings:
    """What ``iclab probe`` fits: targets, hook points (None: all), layers (None: all),
    positions, prompts, folds, seed and the ridge target's penalty (None: sigma^2)."""

    targets: tuple[str, ...] = exact.DEFAULT_TARGETS
    hooks: tuple[str, ...] | None = None
    layers: tuple[int, ...] | None = None
    positions: tuple[str, ...] = POSITIONS
    prompts: int = 2000
    folds: int = 5
    seed: int = 0
    ridge_lambda: float | None = None

    def check(self) -> None:
        if not 100 <= self.prompts <= MAX_PROMPTS:
            raise ConfigError(f"prompts must be an integer >= 100 and <= {MAX_PROMPTS}, got "
                              f"{self.prompts}")
        if not 2 <= self.folds <= 20:
            raise ConfigError(f"folds must be an integer >= 2 and <= 20, got {self.folds}")
        for position in self.positions:
            if position not in POSITIONS:
                raise ConfigError(f"unknown position {position!r}; allowed: "
                                  f"{', '.join(POSITIONS)}")
        if not self.positions:
            raise ConfigError(f"give at least one position: {', '.join(POSITIONS)}")


def parse_list(text: str, what: str) -> tuple[str, ...]:
    """'a,b,c' -> ('a', 'b', 'c'); an empty item is one line."""
    items = tuple(item.strip() for item in text.split(","))
    if not all(items):
        raise ConfigError(f"{what} must be a comma-separated list without empty items, got "
                          f"{text!r}")
    return items


def parse_layers(text: str) -> tuple[int, ...] | None:
    """'all' -> None; '0,2,3' -> (0, 2, 3)."""
    if text.strip() == "all":
        return None
    try:
        return tuple(int(item) for item in parse_list(text, "--layers"))
    except ValueError:
        raise ConfigError(f"--layers must be 'all' or comma-separated layer numbers, got "
                          f"{text!r}") from None


def selected_hooks(model: Model, hooks: Sequence[str] | None,
                   layers: Sequence[int] | None) -> tuple[str, ...]:
    """The hook point names to probe: those named (a full name or a kind such as ``resid``)
    at the layers asked for; ConfigError (one line) for an unknown name or layer."""
    check_hook_names(model, ())  # one line if the model declares none
    known = hook_names(model)
    kinds = {name.split(".")[0] for name in known}
    chosen = list(known)
    if hooks is not None:
        for hook in hooks:
            if hook not in kinds:
                check_hook_names(model, [hook])
        chosen = [name for name in known if name in hooks or name.split(".")[0] in hooks]
    if layers is not None:
        present = {layer_of(name) for name in chosen}
        for layer in layers:
            if layer not in present:
                raise ConfigError(f"layer {layer} has no hook point of model {model.name!r}; "
                                  f"its layers: {', '.join(map(str, sorted(present)))}")
        chosen = [name for name in chosen if layer_of(name) in layers]
    return tuple(chosen)


def layer_of(name: str) -> int:
    """The layer of hook point ``name`` (``resid.2`` -> 2; a name without one: 1)."""
    tail = name.rsplit(".", 1)[-1]
    return int(tail) if "." in name and tail.isdigit() else 1


def initial_model(config: Any, task: Any) -> Model:
    """The run's model at its random initialisation, in float32, as training built it."""
    model: Model = config.model_class().create(
        config.task.d, config.model, make_generator(config.run.seed, "init"), torch.float32)
    model.prepare_for_task(task)
    return model


def probe_run(run_dir: str | Path, settings: ProbeSettings, registries: Any) -> dict[str, Any]:
    """probe.json's content for the finished run in ``run_dir`` (module docstring), worked
    out on one thread (torch and BLAS): many small products, which on a busy or shared
    machine run many times slower on a pool of threads."""
    from threadpoolctl import threadpool_limits

    with intra_op_threads(1), threadpool_limits(limits=1):
        return _probe_run(run_dir, settings, registries)


def _probe_run(run_dir: str | Path, settings: ProbeSettings, registries: Any
               ) -> dict[str, Any]:
    settings.check()
    path = Path(run_dir)
    config, result = read_finished_run(path, registries.models, registries.families)
    task = config.checked_task(registries.families)
    names = exact.check_targets(settings.targets, task)
    lam = exact.ridge_lambda(task, settings.ridge_lambda)
    model = load_trained_model(path, config, registries.models, result).float()
    hooks = selected_hooks(model, settings.hooks, settings.layers)
    drawn = exact.draw_prompts(task, settings.prompts, settings.seed)
    values = exact.compute_targets(drawn, names, task, lam)
    permutation = np.random.default_rng([settings.seed, 0x5AFF1E]).permutation(
        settings.prompts)
    shuffled = {name: value[permutation] for name, value in values.items()}
    prompts = (drawn.prompts.X.float(), drawn.prompts.y.float(), drawn.prompts.x_q.float())
    trained = cache(model, *prompts, names=hooks)
    if settings.positions == ("context",) and all(trained[h].shape[1] < 2 for h in hooks):
        raise ConfigError(f"no hook point of {', '.join(hooks)} has a context position (they "
                          f"hold the query only); use --positions query")
    init = cache(initial_model(config, task), *prompts, names=hooks)
    rows: list[dict[str, Any]] = []
    for hook in hooks:
        for position in settings.positions:
            if position == "context" and trained[hook].shape[1] < 2:
                continue
            index = -1 if position == "query" else -2
            for control, acts, goal in (("trained", trained, values),
                                        ("init", init, values),
                                        ("shuffled", trained, shuffled)):
                features = acts[hook][:, index].numpy().astype(np.float64)
                scores = fit_probes(features, goal, settings.folds, settings.seed)
                rows.extend({"hook": hook, "kind": hook.split(".")[0], "layer": layer_of(hook),
                             "position": position, "control": control, "target": name,
                             "r2": score.r2, "r2_stderr": score.se, "penalty": score.penalty}
                            for name, score in scores.items())
    return {
        "run": str(path), "model": config.model_name, "family": task.name, "d": task.d,
        "n": task.n, "sigma": float(task.sigma), "prompts": settings.prompts,
        "folds": settings.folds, "seed": settings.seed, "ridge_lambda": lam,
        "gd_steps": ({k: list(v) for k, v in exact.gd_steps(task).items()}
                     if exact.linear_family(task) else None),
        "targets": {name: int(value.shape[1]) for name, value in values.items()},
        "hooks": {name: list(trained[name].shape[1:]) for name in hooks},
        "controls": list(CONTROLS), "rows": rows,
    }
