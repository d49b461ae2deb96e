"""The optimiser of a run and one optimisation step: Adam on fresh batches, or, for
``iclab train --exact``, L-BFGS on the exact population loss (float64, no sampling).

``ExactLBFGS`` takes one L-BFGS iteration per training step on the loss divided by the zero
predictor's loss tr(Sigma_x Sigma_w) + sigma^2 (scale-free). Gamma* is ill-conditioned in
some directions (the loss's Hessian in Gamma is n K (x) Sigma_x), so a loss-only line search
stops at a Gamma error of about sqrt(eps cond), near 1e-6: the float64 loss cannot tell closer
points apart. The gradient can: a step whose loss is equal to within roundoff is accepted when
it lowers the gradient's norm, which takes Gamma to about 1e-12. Steps that would move the
parameters by less than 1e-13 relative are not taken.

- Backtracking from the quasi-Newton step, the product with the inverse-Hessian estimate in
  the compact form of Byrd, Nocedal and Schnabel (a few matrix products whatever the memory);
  curvature pairs are kept when s.y > 1e-10 |s||y|.
- The history restarts every ``restart_every`` steps (the checkpoint interval), so a
  checkpoint, taken at those boundaries, needs no history and resuming is bit-identical.
- An iteration that finds no acceptable step restarts the history; one that fails from an
  empty history means the optimum is reached in float64, and the steps up to the next restart
  boundary cost nothing.

It is a plain object, not a ``torch.optim.Optimizer`` (whose construction imports
torch._dynamo, a second of start-up): it has the ``param_groups``, ``state_dict`` and
``load_state_dict`` that the loop and checkpoints use.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from iclab.config.train import TrainConfig
from iclab.models.base import Model
from iclab.tasks.base import TaskFamily
from iclab.training.adam import Adam
from iclab.training.objective import Objective
from iclab.training.sgd import SGD
from iclab.utils.errors import ConfigError

Masks = Sequence[tuple[torch.nn.Parameter, torch.Tensor]]
"""(parameter, 0/1 mask) pairs whose masked entries no update may move."""

HISTORY = 100
BACKTRACKS = 30
ARMIJO = 1e-4
CURVATURE = 1e-10
ROUNDOFF = 1e-13
NEGLIGIBLE = 1e-13


class ExactLBFGS:
    """L-BFGS on a deterministic objective, one iteration per ``iterate`` call."""

    def __init__(self, params: Iterable[torch.nn.Parameter], scale: float,
                 restart_every: int, masks: Masks = ()) -> None:
        self.params = list(params)
        by_id = {id(param): mask for param, mask in masks}
        self.masks = [by_id.get(id(param)) for param in self.params]
        self.param_groups: list[dict[str, Any]] = [
            {"lr": 1.0, "params": list(range(len(self.params)))}
        ]
        self.scale = float(scale)
        self.restart_every = int(restart_every)
        self._steps = torch.empty(0)     # S: (m, P), the steps s_i, oldest first
        self._changes = torch.empty(0)   # Y: (m, P), the gradient's change y_i over s_i
        self._sy = torch.empty(0)        # S Y^T: (m, m)
        self._yy = torch.empty(0)        # Y Y^T: (m, m)
        self._current: tuple[float, torch.Tensor] | None = None  # (f, g) at the parameters
        self._converged: torch.Tensor | None = None
        # torch.triu is slow on a busy machine with several threads; a fixed mask is not.
        self._upper = torch.ones(HISTORY, HISTORY, dtype=torch.bool).triu()

    def state_dict(self) -> dict[str, Any]:
        """Only the hyper-parameters: checkpoints are taken where the history restarts."""
        return {"state": {}, "param_groups": [dict(group) for group in self.param_groups]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if state_dict.get("state"):
            raise ValueError("an ExactLBFGS checkpoint holds no optimiser state")
        self.param_groups = [dict(group) for group in state_dict["param_groups"]]

    def _forget(self) -> None:
        self._steps = self._changes = self._sy = self._yy = torch.empty(0)

    def _evaluate(self, objective: Objective, step: int) -> tuple[float, torch.Tensor]:
        """(scaled loss, flat gradient) at the current parameters."""
        with torch.enable_grad():
            loss = objective(step) / self.scale
            grads = torch.autograd.grad(loss, self.params)
        grads = tuple(g if mask is None else g * mask
                      for g, mask in zip(grads, self.masks, strict=True))
        return float(loss.detach()), torch.cat([g.reshape(-1) for g in grads])

    def _direction(self, g: torch.Tensor) -> torch.Tensor:
        """-H g, H the L-BFGS inverse-Hessian estimate in compact form (scaled steepest
        descent without history): H = c I + [S, cY] N [S, cY]^T with c = s.y / y.y of the
        newest pair, R = triu(S^T Y), D = diag(S^T Y) and
        N = [[R^-T (D + c Y^T Y) R^-1, -R^-T], [-R^-1, 0]]."""
        if not self._steps.numel():
            return -g * min(1.0, 1.0 / float(g.abs().sum()))
        S, Y, SY = self._steps, self._changes, self._sy
        m = SY.shape[0]
        R = torch.where(self._upper[:m, :m].to(SY.device), SY, 0.0)
        c = SY[-1, -1] / self._yy[-1, -1]
        p = torch.linalg.solve_triangular(R, (S @ g)[:, None], upper=True)
        inner = torch.diag(torch.diagonal(SY)) + c * self._yy
        top = torch.linalg.solve_triangular(R.T, inner @ p - c * (Y @ g)[:, None], upper=False)
        direction: torch.Tensor = -(c * g + S.T @ top[:, 0] - c * (Y.T @ p[:, 0]))
        return direction

    def _remember(self, s: torch.Tensor, y: torch.Tensor) -> None:
        """Add the pair (s, y) if its curvature is positive; keep the newest HISTORY pairs.

        The Gram matrices grow by matrix-vector products only: no matrix-matrix product,
        which would be multi-threaded (and slow on a busy machine) at these sizes."""
        sy = s @ y
        if not float(sy) > CURVATURE * float(s.norm() * y.norm()):
            return
        if not self._steps.numel():
            S, Y = s[None], y[None]
            SY, YY = sy.reshape(1, 1), (y @ y).reshape(1, 1)
        else:
            S, Y = torch.cat([self._steps, s[None]]), torch.cat([self._changes, y[None]])
            Sy, Ys, Yy = S @ y, Y[:-1] @ s, Y @ y          # (m+1,), (m,), (m+1,)
            SY = torch.cat([torch.cat([self._sy, Ys[None]]), Sy[:, None]], 1)
            YY = torch.cat([torch.cat([self._yy, Yy[None, :-1]]), Yy[:, None]], 1)
        keep = slice(-HISTORY, None)
        self._steps, self._changes = S[keep], Y[keep]
        self._sy, self._yy = SY[keep, keep], YY[keep, keep]

    def iterate(self, objective: Objective, step: int) -> torch.Tensor:
        """One L-BFGS iteration on ``objective``; returns the loss before it (detached)."""
        if step % self.restart_every == 0:
            self._forget()
            self._current, self._converged = None, None
        if self._converged is not None:
            return self._converged
        if self._current is None:
            self._current = self._evaluate(objective, step)
        f, g = self._current
        before = torch.tensor(f * self.scale, dtype=torch.float64)
        direction = self._direction(g)
        slope = float(g @ direction)
        if not slope < 0:
            self._forget()
            direction = self._direction(g)
            slope = float(g @ direction)
        x = parameters_to_vector(self.params).detach()
        t = float(self.param_groups[0]["lr"])  # the first trial step, 1 for L-BFGS
        with torch.no_grad():
            for _ in range(BACKTRACKS):
                if t * direction.abs().max() <= NEGLIGIBLE * x.abs().max():
                    break  # the parameters would not move in float64 terms
                vector_to_parameters(x + t * direction, self.params)
                f_new, g_new = self._evaluate(objective, step)
                decrease = f_new <= f + ARMIJO * t * slope
                polish = f_new <= f + ROUNDOFF * abs(f) and g_new.norm() < g.norm()
                if decrease or polish:
                    self._remember(t * direction, g_new - g)
                    self._current = (f_new, g_new)
                    return before
                t /= 2
            vector_to_parameters(x, self.params)
        if not self._steps.numel():
            self._converged = before
        self._forget()
        return before


Optimiser = Adam | SGD | ExactLBFGS


def make_optimizer(model: Model, config: TrainConfig, task: TaskFamily) -> Optimiser:
    """Adam(lr) or SGD(lr, momentum) for sampled training; ExactLBFGS for
    ``config.optim.exact``."""
    if not config.optim.exact:
        if config.optim.optimizer == "sgd":
            return SGD(model.parameters(), lr=config.optim.lr, momentum=config.optim.momentum,
                       weight_decay=config.optim.weight_decay)
        return Adam(model.parameters(), lr=config.optim.lr,
                    weight_decay=config.optim.weight_decay)
    if not task.gaussian:
        raise ConfigError(f"exact training needs a linear Gaussian family, got {task.name!r}")
    sigma_x, sigma_w = getattr(task, "sigma_x"), getattr(task, "sigma_w")  # noqa: B009
    zero_loss = float((sigma_x * sigma_w).sum()) + task.sigma**2
    return ExactLBFGS(model.parameters(), zero_loss, config.run.checkpoint_every,
                      model.gradient_masks())


def take_step(optimizer: Optimiser, objective: Objective, step: int,
              clip_grad: float | None = None, masks: Masks = ()) -> torch.Tensor:
    """One optimisation step at ``step``; returns the loss it started from (detached).

    The gradients are cleared, then the objective runs: its loss is backpropagated, unless it
    comes detached with the gradients already stored (``iclab.training.objective``).

    ``clip_grad``: rescale the gradient to at most this Euclidean norm before Adam's update
    (deep models meet rare prompts with huge gradients; None: no clipping)."""
    if isinstance(optimizer, ExactLBFGS):
        return optimizer.iterate(objective, step)
    optimizer.zero_grad(set_to_none=True)
    loss: torch.Tensor = objective(step)
    if loss.requires_grad:     # else the objective has stored the gradients itself
        loss.backward()  # type: ignore[no-untyped-call]
    for param, mask in masks:  # in place: cheaper than a hook in the autograd graph
        if param.grad is not None:
            param.grad.mul_(mask)
    if clip_grad is not None:
        torch.nn.utils.clip_grad_norm_(optimizer.params, clip_grad)
    optimizer.step()
    return loss.detach()
