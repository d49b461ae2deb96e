"""The local learning coefficient (LLC) of a trained model, estimated by SGLD.

Lau, Furman, Wang, Murfet and Wei ("The local learning coefficient: a singularity-aware
complexity measure", 2023, arXiv 2308.12108) estimate the LLC at a local minimum w* of the
empirical loss L_n as

    lambda_hat(w*) = n beta (E_w[L_n(w)] - L_n(w*)),   beta = 1 / log n,

the expectation over the tempered posterior localised at w*,
p(w) ~ exp(-n beta L_n(w) - gamma / 2 |w - w*|^2), sampled with stochastic gradient Langevin
dynamics (Welling and Teh 2011):

    w <- w + eps / 2 (-n beta grad L_n(w) - gamma (w - w*)) + N(0, eps I).

For a regular model (a nondegenerate minimum of p parameters) the posterior is Gaussian with
precision n beta H and n beta E[L_n(w) - L_n(w*)] = p / 2 whatever the scale of the loss, the
exact LLC; the error terms are gamma's pull (a factor about n beta h / (n beta h + gamma) on
each curvature h) and the step's (about 1 + eps n beta h / 4). iclab's own implementation (the
devinterp library's, ``llc_devinterp``, is the optional cross-check): full-batch
gradients on a fixed set of n prompts, ``chains`` independent chains from w*, each
``burn_in`` steps then ``draws`` recorded losses; the estimate is the mean over chains and its
standard error the chains' spread / sqrt(chains).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from iclab.studies.development.llc_devinterp import check_devinterp, devinterp_llc
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

ESTIMATORS = ("iclab", "devinterp")
"""Whose SGLD chains estimate the LLC (``ChainSettings.estimator``)."""


@dataclass(frozen=True)
class ChainSettings:
    """SGLD's settings (the defaults are those the regular-model check in
    tests/studies/development/test_llc.py passes with; docs/guide/development.md)."""

    samples: int = 1024
    """n: the fixed data set's size (prompts); beta = 1 / log n."""
    chains: int = 8
    burn_in: int = 200
    draws: int = 800
    step: float = 1e-4
    """eps, SGLD's step."""
    localisation: float = 1.0
    """gamma, the pull towards w*."""
    estimator: str = "iclab"
    """Whose chains: iclab's own (``estimate_llc``) or the devinterp library's
    (``llc_devinterp``, the optional extra ``iclab[devinterp]``)."""

    def check(self) -> ChainSettings:
        """Self, or ConfigError naming the first setting out of range (or devinterp missing
        where it is asked for)."""
        if self.estimator not in ESTIMATORS:
            raise ConfigError(f"llc estimator must be one of {', '.join(ESTIMATORS)}, got "
                              f"{self.estimator!r}")
        if self.estimator == "devinterp":
            check_devinterp()
        for name, low in (("samples", 2), ("chains", 2), ("burn_in", 0), ("draws", 1)):
            value = getattr(self, name)
            if not (isinstance(value, int) and low <= value <= 10_000_000):
                raise ConfigError(f"llc {name} must be an integer >= {low}, got {value!r}")
        for name in ("step", "localisation"):
            value = getattr(self, name)
            if not (math.isfinite(value) and (value > 0 if name == "step" else value >= 0)):
                raise ConfigError(f"llc {name} must be a finite number "
                                  f"{'> 0' if name == 'step' else '>= 0'}, got {value!r}")
        return self

    @property
    def beta(self) -> float:
        return 1.0 / math.log(self.samples)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "beta": self.beta, "method": "n beta (E[L_n] - L_n(w*)), "
                "localised SGLD, full-batch gradients (Lau et al. 2023)"}


def estimate_llc(params: list[torch.nn.Parameter], loss: Callable[[], torch.Tensor],
                 settings: ChainSettings, seed: int) -> dict[str, Any]:
    """The LLC at the current values of ``params`` (w*), ``loss()`` being L_n at the current
    values (a mean over the ``settings.samples`` points); the parameters are restored after.
    Returns {"llc", "llc_stderr", "llc_chains", "loss_star"}."""
    start = [param.detach().clone() for param in params]
    nbeta = settings.samples * settings.beta
    eps = settings.step
    with torch.no_grad():
        loss_star = float(loss())
    per_chain = []
    try:
        for chain in range(settings.chains):
            generator = make_generator(seed, "llc", chain)
            with torch.no_grad():
                for param, value in zip(params, start, strict=True):
                    param.copy_(value)
            total = 0.0
            for index in range(settings.burn_in + settings.draws):
                value = loss()
                grads = torch.autograd.grad(value, params)
                if index >= settings.burn_in:
                    total += float(value.detach())
                with torch.no_grad():
                    for param, grad, anchor in zip(params, grads, start, strict=True):
                        drift = nbeta * grad + settings.localisation * (param - anchor)
                        noise = torch.randn(param.shape, generator=generator,
                                            dtype=param.dtype)
                        param.add_(-0.5 * eps * drift + math.sqrt(eps) * noise)
                if not math.isfinite(float(value.detach())):
                    raise ConfigError("the SGLD chain diverged (a non-finite loss); lower "
                                      "the llc step")
            per_chain.append(nbeta * (total / settings.draws - loss_star))
    finally:
        with torch.no_grad():
            for param, value in zip(params, start, strict=True):
                param.copy_(value)
    mean = sum(per_chain) / len(per_chain)
    spread = math.sqrt(sum((x - mean) ** 2 for x in per_chain) / (len(per_chain) - 1))
    return {"llc": mean, "llc_stderr": spread / math.sqrt(len(per_chain)),
            "llc_chains": per_chain, "loss_star": loss_star}


def model_llc(model: torch.nn.Module, prompts: Any, settings: ChainSettings,
              seed: int) -> dict[str, Any]:
    """The LLC of ``model`` (float64) on ``prompts`` (its ``settings.samples`` prompts):
    L_n the mean squared error of the query predictions."""
    if settings.estimator == "devinterp":
        return devinterp_llc(model, prompts, settings.samples, settings.chains,
                             settings.burn_in, settings.draws, settings.step,
                             settings.localisation, seed)
    params = [param for param in model.parameters() if param.requires_grad]

    def loss() -> torch.Tensor:
        yhat: torch.Tensor = model(prompts.X, prompts.y, prompts.x_q)
        value: torch.Tensor = (yhat - prompts.y_q).square().mean()
        return value

    return estimate_llc(params, loss, settings, seed)
