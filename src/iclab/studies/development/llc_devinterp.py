"""The LLC through the devinterp library (Timaeus; ``pip install 'iclab[devinterp]'``), the
same estimator as ``iclab.studies.development.llc`` written by others: a cross-check of
iclab's own chains (tests/studies/development/test_llc.py runs both on a regular model).

devinterp's ``estimate_learning_coeff_with_summary`` samples ``chains`` localised SGLD chains
(its ``SGLD``: step eps, localisation gamma, inverse temperature n beta) on the full batch of
``samples`` prompts and returns n beta (mean loss of the draws - L_n(w*)) per chain. It seeds
the global torch generator per chain (``seed + chain``); here it runs inside
``torch.random.fork_rng`` so that the caller's global state is left as it was and the numbers
depend on ``seed`` alone. devinterp computes in the model's dtype (float64 here) but returns
float32 numbers.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from iclab.utils.errors import ConfigError

INSTALL = "pip install 'iclab[devinterp]'"


def check_devinterp() -> None:
    """ConfigError (one line naming the pip command) unless devinterp is installed."""
    if importlib.util.find_spec("devinterp") is None:
        raise ConfigError(f"--llc-estimator devinterp needs the devinterp library: {INSTALL}")


def devinterp_llc(model: torch.nn.Module, prompts: Any, samples: int, chains: int,
                  burn_in: int, draws: int, step: float, localisation: float,
                  seed: int) -> dict[str, Any]:
    """{"llc", "llc_stderr", "llc_chains", "loss_star"} of ``model`` on ``prompts`` (its
    ``samples`` prompts; L_n the mean squared error of the query predictions), by devinterp."""
    check_devinterp()
    from devinterp.optim.sgld import SGLD
    from devinterp.slt.sampler import estimate_learning_coeff_with_summary

    data = TensorDataset(prompts.X, prompts.y, prompts.x_q, prompts.y_q)
    loader = DataLoader(data, batch_size=len(data), shuffle=False)

    def evaluate(sampled: torch.nn.Module, batch: Any) -> torch.Tensor:
        X, y, x_q, y_q = batch
        loss: torch.Tensor = (sampled(X, y, x_q) - y_q).square().mean()
        return loss

    with torch.no_grad():
        loss_star = float(evaluate(model, (prompts.X, prompts.y, prompts.x_q, prompts.y_q)))
    nbeta = samples / math.log(samples)
    with torch.random.fork_rng(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # devinterp's deprecation notes about its SGLD
        summary = estimate_learning_coeff_with_summary(
            model, loader, evaluate=evaluate, sampling_method=SGLD,
            optimizer_kwargs={"lr": step, "localization": localisation, "nbeta": nbeta},
            num_chains=chains, num_draws=draws, num_burnin_steps=burn_in, seed=seed,
            device="cpu", verbose=False)
    per_chain = [float(summary[f"llc-chain/{chain}"]) for chain in range(chains)]
    mean = sum(per_chain) / chains
    spread = math.sqrt(sum((x - mean) ** 2 for x in per_chain) / (chains - 1))
    return {"llc": mean, "llc_stderr": spread / math.sqrt(chains), "llc_chains": per_chain,
            "loss_star": loss_star}
