"""Certify a trained run: how far its loss is above the span bound (THEORY.md section 2).

The span optimum (``iclab.theory.span``) is a lower bound on the loss of every one-layer LSA on
the run's task family. Two comparisons with it:

- combined: the run's ``test_loss`` (result.json, its own "eval" prompts) minus the span loss
  (independent "span-test" prompts), in units of sqrt(se_model^2 + se_span^2);
- paired: both predictors on the same fresh "certify" prompts; the mean difference of their
  squared errors and its standard error, far more sensitive than the combined one.

The fitted span coefficients' loss exceeds the exact bound by their estimation error (about
p / fit_prompts relatively, p features); both comparisons subtract the span's estimate of it
(``estimation_excess``), so a run at the optimum sits about 0 standard errors above the bound
and a clearly positive z says the model is not the optimal LSA.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from iclab.errors import ConfigError
from iclab.io import read_json
from iclab.models.lsa import LinearSelfAttention
from iclab.seeding import make_generator
from iclab.theory.span import TEST_PROMPTS, SpanOptimum, span_optimum
from iclab.training.config import TrainConfig

RESULT_KEYS = ("test_loss", "test_loss_stderr")
ELEMENTS_PER_CHUNK = 4_000_000


def read_run(run_dir: Path) -> tuple[TrainConfig, dict[str, Any]]:
    """The config and result of a finished run; ConfigError with one line otherwise."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.json").is_file() or not (run_dir / "result.json").is_file():
        raise ConfigError(f"{run_dir} is not a finished iclab run (needs config.json and "
                          f"result.json)")
    try:
        config = TrainConfig.from_json(read_json(run_dir / "config.json")).validate()
        result = read_json(run_dir / "result.json")
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{run_dir}: cannot read the run's config.json/result.json ({error})") \
            from None
    if not isinstance(result, dict) or any(key not in result for key in RESULT_KEYS):
        raise ConfigError(f"{run_dir}/result.json lacks {', '.join(RESULT_KEYS)}")
    return config, result


def load_model(run_dir: Path, config: TrainConfig) -> LinearSelfAttention:
    """The run's trained weights as a float64 LSA on the CPU."""
    path = Path(run_dir) / "model.safetensors"
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a finished iclab run (no model.safetensors)")
    model = LinearSelfAttention(config.model_options(), dtype=torch.float64)
    try:
        state = load_file(str(path))
        model.load_state_dict({name: t.to(torch.float64) for name, t in state.items()})
    except (RuntimeError, OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot load the model ({error})") from None
    return model


def paired_excess(
    model: LinearSelfAttention, span: SpanOptimum, config: TrainConfig, prompts: int, seed: int
) -> tuple[float, float]:
    """Mean of (model - y_q)^2 - (span - y_q)^2 on shared fresh prompts, and its stderr."""
    task = config.task()
    chunk = max(1, ELEMENTS_PER_CHUNK // max(span.features, (task.n + 1) * (task.d + 1)))
    total, total_sq, done, index = 0.0, 0.0, 0, 0
    with torch.no_grad():
        while done < prompts:
            size = min(chunk, prompts - done)
            batch = task.sample_prompts(size, make_generator(seed, "certify", index),
                                        torch.float64)
            model_error = (model(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
            span_error = (span.predict(batch) - batch.y_q) ** 2
            difference = model_error - span_error
            total += float(difference.sum())
            total_sq += float((difference**2).sum())
            done, index = done + size, index + 1
    mean = total / prompts
    variance = max(total_sq / prompts - mean**2, 0.0) * prompts / (prompts - 1)
    return mean, math.sqrt(variance / prompts)


def _ratio(value: float, stderr: float) -> float:
    return value / stderr if stderr > 0 else (0.0 if value == 0 else math.copysign(math.inf, value))


def certify_run(
    run_dir: Path,
    fit_prompts: int | None = None,
    test_prompts: int = TEST_PROMPTS,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare the run in ``run_dir`` with the span bound of its task family (see module doc)."""
    config, result = read_run(run_dir)
    model = load_model(run_dir, config)
    span = span_optimum(config.task(), fit_prompts, test_prompts, seed,
                        query_cubic=config.attend_query)
    excess = float(result["test_loss"]) - span.loss
    excess_se = math.hypot(float(result["test_loss_stderr"]), span.loss_stderr)
    paired, paired_se = paired_excess(model, span, config, test_prompts, seed)
    paired += span.estimation_excess
    return {
        "run": str(run_dir),
        "family": config.family,
        "test_loss": float(result["test_loss"]),
        "test_loss_stderr": float(result["test_loss_stderr"]),
        "bound": span.loss,
        "bound_stderr": span.loss_stderr,
        "bound_heldout_loss": span.heldout_loss,
        "bound_estimation_excess": span.estimation_excess,
        "bound_fit_loss": span.fit_loss,
        "excess": excess,
        "excess_stderr": excess_se,
        "z": _ratio(excess, excess_se),
        "paired_excess": paired,
        "paired_excess_stderr": paired_se,
        "z_paired": _ratio(paired, paired_se),
        "loss_star": result.get("loss_star"),
        "span": {
            "gamma": span.gamma.tolist(), "eta": span.eta, "eta_stderr": span.eta_stderr,
            "isotropy_err": span.isotropy_err, "nuisance": span.nuisance,
            "features": span.features, "fit_prompts": span.fit_prompts,
            "test_prompts": span.test_prompts, "query_cubic": span.query_cubic,
        },
    }
