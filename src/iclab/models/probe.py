"""Try a user's model on a tiny input before any work: every failure is one line, not later.

A model plug-in (``--model file.py:CLASS``, or a class registered in Python) is built at the
run's d, prepared for the run's task, run forward and backward on two prompts and, when it
declares a read-out, read out at the run's n. Any exception, a prediction of the wrong shape or
with non-finite values, a model without trainable parameters, predictions that do not change
with the parameters, or a read-out of the wrong shape raises ConfigError naming the model and
what is wrong. iclab's own models (tested by the conformance suite) are not probed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from iclab.models.base import Model
from iclab.models.readout import LinearReadout
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import error_line, is_builtin_code
from iclab.utils.seeding import make_generator

PROBE_PROMPTS = 2
"""Prompts a user's model is tried on before any work."""
UNCHANGED = 1e-9
"""Predictions count as unchanged by a step of the weights when they move by less than this,
relative to their size: float64 rounding (x + s - s), not a dependence on the weights."""


def is_builtin(model_class: type[Model]) -> bool:
    """Whether ``model_class`` is one of iclab's own models."""
    return is_builtin_code(model_class)


def _call(name: str, what: str, function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except (Exception, SystemExit) as error:  # the user's code: reported, not raised
        raise ConfigError(f"model {name!r}: {what} failed ({error_line(error)})") from None


def probe_plugins(model_class: type[Model], name: str, d: int, n: int, options: Any,
                  task: Any, seed: int) -> None:
    """Try the run's plug-ins before any work: the task's own ``probe`` (a user family's draw
    function), then a user's model (``probe_model``) on PROBE_PROMPTS of ``task``'s prompts
    drawn from the run's ``seed``; iclab's own models pass unprobed."""
    task.probe(seed)
    if is_builtin(model_class):
        return
    prompts = task.sample_prompts(PROBE_PROMPTS, make_generator(seed, "probe"), torch.float64)
    probe_model(model_class, name, d, n, options, task, prompts,
                make_generator(seed, "probe-init"))


def probe_model(model_class: type[Model], name: str, d: int, n: int, options: Any,
                task: Any, prompts: Any, generator: torch.Generator) -> None:
    """Build ``model_class`` at ``d`` (float64), prepare it for ``task`` and check it on
    ``prompts`` (X: (B, n, d), y: (B, n), x_q: (B, d), y_q: (B,)); ConfigError otherwise."""
    model = _call(name, "create(d, options, generator, dtype)", model_class.create, d, options,
                  generator, torch.float64)
    if not isinstance(model, Model):
        raise ConfigError(f"model {name!r}: create() must return an iclab Model, got "
                          f"{type(model).__name__}")
    _call(name, "prepare_for_task(task)", model.prepare_for_task, task)
    parameters = [p for p in model.parameters() if p.requires_grad]
    if not parameters:
        raise ConfigError(f"model {name!r} has no trainable parameters (torch.nn.Parameter): "
                          f"there is nothing to train")
    if not all(bool(torch.isfinite(p).all()) for p in parameters):
        raise ConfigError(f"model {name!r}: create() gave non-finite initial weights")
    batch = int(prompts.X.shape[0])
    with torch.enable_grad():
        output = _call(name, "forward(X, y, x_q)", model, prompts.X, prompts.y, prompts.x_q)
        if not isinstance(output, torch.Tensor) or tuple(output.shape) != (batch,):
            shape = tuple(output.shape) if isinstance(output, torch.Tensor) else \
                type(output).__name__
            raise ConfigError(f"model {name!r}: forward(X, y, x_q) must return one prediction "
                              f"per prompt, shape ({batch},), got {shape}")
        if output.is_complex() or not bool(torch.isfinite(output).all()):
            raise ConfigError(f"model {name!r}: forward(X, y, x_q) returned non-finite or "
                              f"complex predictions")
        loss = ((output - prompts.y_q) ** 2).mean()
        if not loss.requires_grad:
            raise ConfigError(f"model {name!r}: its predictions do not depend on its "
                              f"parameters (no gradient): there is nothing to train")
        _call(name, "backward through forward", loss.backward)
    if not all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in parameters):
        raise ConfigError(f"model {name!r}: the gradient of its loss is not finite")
    if all(p.grad is None or not bool(p.grad.any()) for p in parameters):
        _check_depends_on_parameters(model, name, parameters, prompts, output, generator)
    if model.has_readout:
        _check_readout(model, name, d, n)


def _check_depends_on_parameters(model: Model, name: str, parameters: Sequence[torch.Tensor],
                                 prompts: Any, output: torch.Tensor,
                                 generator: torch.Generator) -> None:
    """A zero gradient is allowed (a saddle such as the all-zero start of an LSA), but the
    predictions must change when the parameters do: each parameter is moved by a seeded
    random step of its own size (or 1), the model run again, and the parameters restored.
    Predictions that move by no more than rounding (UNCHANGED) are refused."""
    saved = [p.detach().clone() for p in parameters]
    with torch.no_grad():
        for p in parameters:
            scale = max(float(p.abs().max()), 1.0)
            p.add_(scale * torch.randn(p.shape, generator=generator, dtype=p.dtype))
        moved = _call(name, "forward(X, y, x_q)", model, prompts.X, prompts.y, prompts.x_q)
        for p, value in zip(parameters, saved, strict=True):
            p.copy_(value)
    if not isinstance(moved, torch.Tensor) or moved.shape != output.shape:
        return  # the prediction's own checks above cover this model's outputs
    change = float((moved.detach() - output.detach()).abs().max())
    if change <= UNCHANGED * max(1.0, float(output.detach().abs().max())):
        raise ConfigError(f"model {name!r}: its predictions do not change when its parameters "
                          f"do (zero gradient, and the same predictions at other weights): "
                          f"there is nothing to train")


def _check_readout(model: Model, name: str, d: int, n: int) -> None:
    readout = _call(name, "readout(n)", model.readout, n)
    if not isinstance(readout, LinearReadout):
        raise ConfigError(f"model {name!r}: readout(n) must return an iclab LinearReadout, "
                          f"got {type(readout).__name__}")
    u, M = np.asarray(readout.u), np.asarray(readout.M)
    if u.shape != (d + 1,) or M.shape != (d + 1, d):
        raise ConfigError(f"model {name!r}: readout(n) must hold u of shape ({d + 1},) and M "
                          f"of shape ({d + 1}, {d}) for d = {d}, got {u.shape} and {M.shape}")
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(M))):
        raise ConfigError(f"model {name!r}: readout(n) holds non-finite numbers")
