"""The interface every model implements, built-in or a user's.

A model is a ``torch.nn.Module`` subclass of ``Model`` that maps prompts to predictions,

    forward(X: (B, n, d), y: (B, n), x_q: (B, d)) -> yhat: (B,),

is built by the seeded constructor ``create(d, options, generator, dtype)`` from a typed
options object (a frozen dataclass whose fields are declared with
``iclab.utils.fields.setting``: they become ``iclab train`` options, spec keys and CSV
columns), and declares what else it can do, like ``torch.distributions`` declares
``has_rsample``; callers ask, never assume:

- ``has_readout``: ``readout(n)`` returns the linear algorithm it implements
  (``iclab.models.readout.LinearReadout``: u, M, Gamma and its parts);
- ``has_statistics``: ``forward_statistics(stats)`` predicts from a family's sufficient
  statistics instead of whole prompts (``iclab.utils.batches``: ``GaussianStatistics``, the
  n-independent sampler of linear Gaussian tasks, or ``ZStatistics``, drawn by linear Gaussian
  and relu families), of the kinds named by ``statistics_kind`` / ``statistics_kinds`` (an
  instance's ``statistics_kinds_now()`` may add kinds its state allows), and
  ``statistics_loss(stats)`` is the training loss on them (by default from
  ``forward_statistics``);
- ``has_exact_loss``: ``exact_loss(task)`` is the exact population loss on a Gaussian family
  (a differentiable float64 scalar), so ``iclab train --exact`` applies;
- ``has_prefix_predictions``: ``predict_prefixes(X, y)`` gives, for a prompt of n examples,
  the n predictions of y_i from the examples before i and x_i, in one pass (the
  ``transformer``); training then averages the loss over every prefix, and ``iclab train``
  writes the prefix curves (``iclab.studies.transformer.prefix_curves``);
- ``has_prompt_loss``: ``prompt_loss(prompts)`` is the model's own training loss on a batch
  of whole prompts, used instead of the mean of (yhat - y_q)^2 (the ``cot`` study's
  ``lsa-cot``, trained on the estimates it writes, teacher-forced);

- ``has_export``: ``exported()`` gives the model as plain PyTorch and NumPy sources, its
  constructor arguments and its float64 state dict (``ExportedModel``), which ``iclab export``
  writes out (the ``transformer``; the one-layer ``lsa`` is exported by ``iclab.runs.export``
  itself);
- ``hook_points``: the named activations the forward records (``iclab.models.hooks``:
  ``HookPoint`` rows with documented shapes, per layer up to ``hook_depth()``), read by
  ``iclab.cache(model, prompts)`` through ``record(name, tensor)``, a no-op outside a
  recorder; empty for a model that declares none (it cannot be cached or probed);

and ``prepare_for_task(task)`` is called once by the trainer before the first step (the
``lsa`` model uses it to keep its nuisance weights at 0 where the family's optimum provably
has none).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from iclab.models.hooks import HookPoint
from iclab.models.readout import LinearReadout
from iclab.utils.batches import statistics_kinds_read


@dataclass(frozen=True)
class ExportedModel:
    """A model as files other tools open without iclab (``Model.exported``): ``torch_source``,
    a module file defining the model as a plain ``torch.nn.Module`` and ``load()`` (reading
    model.pt beside it: {"state_dict", "config"}, ``torch.load(weights_only=True)``);
    ``numpy_source``, a module defining ``load()`` that reads weights.npz (the state dict's
    arrays by name and ``config_json``) and returns a NumPy predictor; ``config``, the
    constructor's keyword arguments (plain numbers); ``state_dict``, float64 tensors."""

    torch_source: str
    numpy_source: str
    config: dict[str, Any]
    state_dict: dict[str, torch.Tensor]


@dataclass(frozen=True)
class NoOptions:
    """Options of a model that has none."""


class Model(nn.Module):
    """Base class of iclab's models; see the module docstring for the contract."""

    name: ClassVar[str] = "model"
    description: ClassVar[str] = ""
    options_class: ClassVar[type[Any]] = NoOptions
    has_readout: ClassVar[bool] = False
    has_statistics: ClassVar[bool] = False
    statistics_kind: ClassVar[str] = "bartlett"
    """Which sufficient statistics ``forward_statistics`` reads: "bartlett" (the one-layer
    LSA's 2d+3 numbers, ``GaussianStatistics``) or "wishart" (Z = sum_i e_i e_i^T,
    ``ZStatistics``); a family lists the kinds it can draw in ``statistics_kinds``."""
    statistics_kinds: ClassVar[tuple[str, ...]] = ()
    """Every kind ``forward_statistics`` reads, in order of preference, for a model that reads
    more than one (empty: ``statistics_kind`` alone); the trainer draws the first kind the
    family can (``iclab.utils.batches.shared_statistics_kind``)."""
    has_exact_loss: ClassVar[bool] = False
    has_prefix_predictions: ClassVar[bool] = False
    has_export: ClassVar[bool] = False
    hook_points: ClassVar[tuple[HookPoint, ...]] = ()
    """The named activations ``forward`` records (``iclab.models.hooks``)."""
    hook_record: dict[str, list[torch.Tensor]] | None = None
    """Set by ``iclab.models.hooks.recording`` while a forward is cached; None otherwise."""
    hook_patches: dict[str, Callable[[torch.Tensor], torch.Tensor]] | None = None
    """Set by ``iclab.models.hooks.patching``: replacements of patchable hook points."""
    has_prompt_loss: ClassVar[bool] = False
    selected_by: ClassVar[tuple[str, ...]] = ()
    """Options of this model that choose it when a command names no model (``lsa-cot``'s
    ``target``: ``iclab train --target weights``); empty by default."""

    @classmethod
    def create(
        cls, d: int, options: Any, generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Model:
        """A freshly initialised model for inputs of dimension d (weights drawn from
        ``generator``)."""
        raise NotImplementedError(f"model {cls.name} does not define create()")

    @classmethod
    def built_class(cls, options: Any) -> type[Model]:
        """The class ``create(d, options, ...)`` returns (whose capabilities apply): this one,
        unless the model builds another for some options (``lsa`` with several layers)."""
        return cls

    @classmethod
    def depth_of(cls, options: Any) -> int | None:
        """The model's depth for ``options``, declared here once (as ``has_readout`` is): L
        when ``create`` builds an L-layer stack that is judged against the optimal L-step GD
        (its result.json then holds the depth keys, ``iclab.analysis.depth``); None for a
        model judged as one layer (the default). Evaluation, the verdict, a sweep's results
        and the claims read depth from here (``TrainConfig.depth``)."""
        return None

    @classmethod
    def training_defaults(cls, options: Any) -> dict[str, Any]:
        """Optimiser settings (``iclab.config.train.OptimConfig`` keys: steps, batch, lr, ...,
        and ``eval_prompts`` of ``RunConfig``) that suit this model better than the global
        defaults; a user's explicit setting always wins. Empty by default."""
        return {}

    @classmethod
    def check_options(cls, options: Any, d: int) -> None:
        """ConfigError (one line) unless ``create(d, options)`` builds a model: everything the
        constructor would refuse, asked by ``TrainConfig.validate`` before any file is written
        (iclab's models declare theirs; a user's model is built by its probe). Nothing by
        default."""

    @classmethod
    def parameter_count(cls, options: Any, d: int) -> int:
        """How many numbers ``create(d, options)`` would hold (0: not declared): a run refuses
        options whose weights, gradients and optimiser state pass its memory limit before it
        builds the model."""
        return 0

    @classmethod
    def token_width(cls, options: Any, d: int) -> int:
        """The widest vector the model of ``options`` holds per token for inputs of dimension
        d (a key, a value or the token itself): the memory check before a run
        (``iclab.config.checks``) reads it. d+1, the token, by default."""
        return d + 1

    @classmethod
    def check_prompt_length(cls, options: Any, n: int) -> None:
        """ConfigError (one line) if the model of ``options`` cannot read prompts of n
        examples (a model with learned positions); nothing by default."""

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,)."""
        raise NotImplementedError

    def predict_prefixes(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> (B, n): entry i predicts y_i from the examples before
        i and x_i (``has_prefix_predictions`` models)."""
        raise NotImplementedError(f"model {self.name} has no prefix predictions")

    def prompt_loss(self, prompts: Any) -> torch.Tensor:
        """The training loss on a batch of whole prompts (``iclab.utils.batches.Prompts``), a
        scalar (``has_prompt_loss`` models)."""
        raise NotImplementedError(f"model {self.name} has no loss of its own")

    def attends_query(self) -> bool:
        """Whether the query token attends to itself, adding to the read-out's prediction the
        term (u_x . x_q)(x_q . M_x x_q) cubic in x_q (the one-layer ``lsa``'s
        ``attend_query``): the nuisance shares then count it. False by default."""
        return False

    def readout(self, n: int) -> LinearReadout:
        """The linear algorithm implemented at prompt length n (``has_readout`` models)."""
        raise NotImplementedError(f"model {self.name} has no linear read-out")

    def forward_statistics(self, stats: Any) -> torch.Tensor:
        """The prediction from sufficient statistics: (B,) (``has_statistics`` models)."""
        raise NotImplementedError(f"model {self.name} cannot predict from statistics")

    def statistics_kinds_now(self) -> tuple[str, ...]:
        """The kinds of statistics this model reads in its present state, in order of
        preference (``iclab.utils.batches.shared_statistics_kind`` asks an instance this): its
        declared kinds by default; a model may read more once prepared for a task."""
        return statistics_kinds_read(self)

    def statistics_loss(self, stats: Any) -> torch.Tensor:
        """The training loss on a batch of statistics: the mean of (yhat - y_q)^2 over it, a
        scalar (``has_statistics`` models). This default uses ``forward_statistics``; a model
        may compute the same number and its gradients faster (the one-layer ``lsa`` on Z)."""
        loss: torch.Tensor = (self.forward_statistics(stats) - stats.y_q).square().mean()
        return loss

    def statistics_loss_and_gradients(
        self, stats: Any
    ) -> tuple[torch.Tensor, list[tuple[nn.Parameter, torch.Tensor]]] | None:
        """``statistics_loss`` (detached) and the gradient of each parameter, worked out
        without autograd, or None (the default) where the model leaves them to autograd. The
        trainer asks this first and backpropagates ``statistics_loss`` only on None."""
        return None

    def exact_loss(self, task: Any) -> torch.Tensor:
        """The exact population loss on a Gaussian family (``has_exact_loss`` models)."""
        raise NotImplementedError(f"model {self.name} has no exact population loss")

    def bounded_by_lsa_optimum(self, task: Any) -> bool:
        """Whether the optimal one-layer LSA loss L* on ``task`` provably bounds this model's
        expected loss from below, so that its verdict against L* says "optimal" or "not
        optimal" (otherwise "at", "above" or "below L*"). By default: the models with a linear
        read-out (``has_readout``); a model whose predictors provably include no better one on
        some families (the ``h3`` layer on i.i.d. isotropic prompts) says so here."""
        return self.has_readout

    def prepare_for_task(self, task: Any) -> None:
        """Called by the trainer before the first step with the family trained on."""

    def gradient_masks(self) -> list[tuple[torch.nn.Parameter, torch.Tensor]]:
        """(parameter, 0/1 mask of its shape): the trainer multiplies each gradient by its
        mask before every update, so masked weights never move. None by default."""
        return []

    def exported(self) -> ExportedModel:
        """The model as plain PyTorch and NumPy sources and float64 weights (``has_export``)."""
        raise NotImplementedError(f"{type(self).__name__} declares no export")
    def hook_depth(self) -> int:
        """How many layers the per-layer hook points run over (1 by default)."""
        return 1

    def recording_hooks(self) -> bool:
        """Whether a recorder is active (a forward computes what only a hook point needs
        only then)."""
        return self.hook_record is not None

    def record(self, name: str, tensor: torch.Tensor) -> None:
        """Record hook point ``name`` (B, T, F) when a recorder is active; nothing
        otherwise."""
        if self.hook_record is not None:
            self.hook_record.setdefault(name, []).append(tensor.detach())

    def patched(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` (B, T, F), replaced by the patch of hook point ``name`` inside
        ``iclab.models.hooks.patching`` (a hook point declared ``patchable``); itself
        otherwise."""
        if self.hook_patches is None or name not in self.hook_patches:
            return tensor
        return self.hook_patches[name](tensor)

    def capabilities(self) -> dict[str, bool]:
        return capabilities_of(type(self))


def capabilities_of(model_class: type[Model]) -> dict[str, bool]:
    """The capability flags a model class declares, by name."""
    return {
        "readout": bool(model_class.has_readout),
        "statistics": bool(model_class.has_statistics),
        "exact_loss": bool(model_class.has_exact_loss),
        "prefix_predictions": bool(model_class.has_prefix_predictions),
    }


def progress_metrics(model: Model, n: int) -> dict[str, float]:
    """What the training log shows of a model besides its loss: eta_hat and isotropy error
    for models with a read-out, nothing otherwise."""
    if not model.has_readout:
        return {}
    with torch.no_grad():
        readout = model.readout(n)
    return {"eta_hat": readout.eta_hat, "isotropy_err": readout.isotropy_err}
