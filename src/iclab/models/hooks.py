"""Hook points: the named activations a model declares, and how they are read.

A model lists its hook points in the ``Model.hook_points`` ClassVar (as ``has_readout`` is
declared): each a ``HookPoint`` with a name, the documented shape and what it holds. A hook
point that exists once per layer is named ``<name>.<layer>`` (``resid.0`` the stream entering
the first block, ``resid.l`` after block l, ``attn.l`` the attention output of block l); its
layers run from ``first_layer`` to the model's ``hook_depth()``.

Every hook tensor is (B, T, F): B prompts, T positions, F features. Position T-1 is the
prediction position of ``forward`` (the query, except in a hook point declared with
``query_last`` False); where T >= 2, position T-2 is the last context token (e_n for models on
[x_i; y_i] tokens, y_n for the transformer, whose tokens alternate x_i, y_i). A hook point the
model computes at the query only has T = 1.

The model's forward records each hook point by calling ``self.record(name, tensor)``, a
no-op unless ``recording(model)`` is active, so the recorded tensors are the ones the forward
computed and the prediction is the same arithmetic with or without a recorder (the
conformance test checks it bit for bit). ``cache(model, prompts)`` runs the forward once in
evaluation mode under a recorder and returns every hook point (``Activations``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch

from iclab.utils.errors import ConfigError


@dataclass(frozen=True)
class HookPoint:
    """One named activation: ``name`` (``resid``, ``attn``, ``state``, ...), its ``shape``
    as documentation (``"(B, T, width)"``), what it holds, and whether it exists once per
    layer (then named ``name.<layer>`` for layers ``first_layer..hook_depth()``)."""

    name: str
    shape: str
    description: str
    per_layer: bool = True
    first_layer: int = 1
    patchable: bool = False
    """Whether the forward lets ``patching`` replace this hook point's tensor."""
    query_last: bool = True
    """Whether position T-1 is the query's (the rule above). False for a hook point that holds
    only what the model computes before it reads the query (``lsa-cot``'s estimates w_1..w_K:
    its T-1 is the answer w_K, which x_q then reads); such a tensor does not change with
    x_q."""

    def names(self, depth: int) -> tuple[str, ...]:
        """The concrete names of this hook point in a model of ``depth`` layers."""
        if not self.per_layer:
            return (self.name,)
        return tuple(f"{self.name}.{layer}" for layer in range(self.first_layer, depth + 1))


class Model(Protocol):
    """What this module asks of an ``iclab.models.Model`` (which imports this module)."""

    name: ClassVar[str]
    hook_points: ClassVar[tuple[HookPoint, ...]]
    __call__: Callable[..., Any]
    training: bool
    hook_record: dict[str, list[torch.Tensor]] | None
    hook_patches: dict[str, Callable[[torch.Tensor], torch.Tensor]] | None

    def hook_depth(self) -> int: ...

    def eval(self) -> Any: ...

    def train(self, mode: bool = True) -> Any: ...


@dataclass(frozen=True)
class Activations:
    """What ``cache`` returns: the prediction (B,) of ``forward`` and every hook point's
    tensor (B, T, F) by name, in declaration order, detached."""

    prediction: torch.Tensor
    tensors: dict[str, torch.Tensor]

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self.tensors:
            raise ConfigError(f"unknown hook point {name!r}; the model has "
                              f"{', '.join(self.tensors)}")
        return self.tensors[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.tensors)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(tensor.shape) for name, tensor in self.tensors.items()}


def hook_names(model: Model) -> tuple[str, ...]:
    """Every concrete hook point name of ``model`` (its declared points expanded over its
    layers), in declaration order."""
    depth = model.hook_depth()
    return tuple(name for point in type(model).hook_points for name in point.names(depth))


def check_hook_names(model: Model, names: Sequence[str]) -> tuple[str, ...]:
    """``names`` if each is a hook point of ``model``; ConfigError (one line) naming the
    first that is not and the ones that are, or naming the model if it declares none."""
    known = hook_names(model)
    if not known:
        raise ConfigError(f"model {model.name!r} declares no hook points "
                          f"(Model.hook_points); it cannot be cached or probed")
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown hook point {name!r} of model {model.name!r}; it has "
                              f"{', '.join(known)}")
    return tuple(names)


@contextmanager
def recording(model: Model) -> Iterator[dict[str, list[torch.Tensor]]]:
    """While active, ``model.record(name, tensor)`` appends the detached tensor to the
    yielded dict (a forward that runs in chunks records one tensor per chunk)."""
    record: dict[str, list[torch.Tensor]] = {}
    previous = model.hook_record
    model.hook_record = record
    try:
        yield record
    finally:
        model.hook_record = previous


def patchable_names(model: Model) -> tuple[str, ...]:
    """The concrete names of ``model``'s hook points declared ``patchable``."""
    depth = model.hook_depth()
    return tuple(name for point in type(model).hook_points if point.patchable
                 for name in point.names(depth))


@contextmanager
def patching(model: Model, patches: dict[str, Callable[[torch.Tensor], torch.Tensor]]
             ) -> Iterator[None]:
    """While active, the forward replaces each patchable hook point named in ``patches`` by
    ``patch(tensor)`` (same shape (B, T, F)); ConfigError (one line) for a name that is not
    a patchable hook point of ``model``."""
    allowed = patchable_names(model)
    for name in patches:
        if name not in allowed:
            raise ConfigError(f"hook point {name!r} of model {model.name!r} cannot be patched; "
                              f"patchable: {', '.join(allowed) or 'none'}")
    previous = model.hook_patches
    model.hook_patches = dict(patches)
    try:
        yield
    finally:
        model.hook_patches = previous


def cache(model: Model, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
          names: Sequence[str] | None = None) -> Activations:
    """Run ``model(X, y, x_q)`` once without gradients, in evaluation mode (restored after),
    and return its prediction with the hook points ``names`` (default: all). ConfigError
    (one line) for a name the model does not have; RuntimeError if the forward did not
    record a hook point the model declares (a model's bug)."""
    wanted = check_hook_names(model, hook_names(model) if names is None else names)
    training = model.training
    model.eval()
    try:
        with recording(model) as record, torch.no_grad():
            prediction = model(X, y, x_q)
    finally:
        model.train(training)
    missing = [name for name in wanted if name not in record]
    if missing:
        raise RuntimeError(f"model {model.name!r} declares hook points it did not record: "
                           f"{', '.join(missing)}")
    tensors = {name: _joined(name, record[name], X.shape[0]) for name in wanted}
    return Activations(prediction.detach(), tensors)


def _joined(name: str, parts: list[torch.Tensor], batch: int) -> torch.Tensor:
    """The parts a forward recorded (one per chunk of prompts), joined along the batch;
    RuntimeError unless they make one (B, T, F) tensor of ``batch`` prompts (a hook point
    recorded twice in one forward, say, by a block applied twice under one name)."""
    joined = parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)
    if joined.dim() != 3 or joined.shape[0] != batch:
        raise RuntimeError(f"hook point {name!r} recorded shape {tuple(joined.shape)} for "
                           f"{batch} prompts; hook tensors are (B, T, F), recorded once per "
                           f"prompt")
    return joined


def describe(model_class: type[Any]) -> list[dict[str, Any]]:
    """The declared hook points of a model class as plain rows (name, shape, description,
    per_layer, first_layer), for ``iclab models`` and the docs."""
    return [{"name": point.name, "shape": point.shape, "description": point.description,
             "per_layer": point.per_layer, "first_layer": point.first_layer}
            for point in model_class.hook_points]
