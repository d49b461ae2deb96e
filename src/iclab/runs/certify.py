"""``certify_run``: a finished run folder against the span bound of its task family."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclab.analysis.certify import certify_model
from iclab.runs.folder import load_trained_model, read_finished_run
from iclab.theory.span import MAX_D, TEST_PROMPTS, check_prompt_counts
from iclab.utils.errors import ConfigError


def certify_run(
    run_dir: Path, fit_prompts: int | None = None, test_prompts: int = TEST_PROMPTS,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare the run in ``run_dir`` with the span bound of its task family; every input is
    checked before any work (``iclab.analysis.certify`` has the method)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**62:
        raise ConfigError(f"--seed must be an integer from 0 to 2**62, got {seed!r}")
    config, result = read_finished_run(Path(run_dir))
    task = config.make_task()
    if task.task_pool is not None:
        raise ConfigError("iclab certify's span bound is not attained by a one-layer LSA on a "
                          "task pool (docs/theory.md section 15); the run's result.json "
                          "compares it with the pool's exact optimum, loss_star")
    if config.task.d > MAX_D:
        raise ConfigError(f"the span optimum is limited to d <= {MAX_D}; the run has "
                          f"d = {config.task.d}")
    model = load_trained_model(run_dir, config, result=result)
    query_cubic = model.attends_query()
    check_prompt_counts(config.task.d, fit_prompts, test_prompts, query_cubic, config.task.n)
    task = config.make_task()
    report = certify_model(model, task, result, fit_prompts, test_prompts, seed, query_cubic)
    return {"run": str(run_dir), "family": config.task.family, **report}
