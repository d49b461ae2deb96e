"""``iclab theory --task-pool FILE.npy`` (or ``--tasks K``): the optimal one-layer LSA of a
finite task pool, nuisance terms included, beside the nuisance-free optimum
(``iclab.studies.pool.optimum``, docs/theory.md section 15)."""

from __future__ import annotations

import json
from typing import Any

import click
import numpy as np
import torch

from iclab.cli.options import flag_name
from iclab.config.sections import TaskConfig
from iclab.studies.pool.cost import check_pool_work
from iclab.studies.pool.loss import PoolLoss
from iclab.studies.pool.optimum import DEFAULT_STARTS, pool_optimum
from iclab.studies.pool.pool import PoolOptions, draw_pool, load_pool
from iclab.tasks.covariance import covariance_or_identity, load_covariance
from iclab.theory.population import PopulationLoss
from iclab.utils.errors import ConfigError
from iclab.utils.fields import check_value, coerce, field_infos

OTHERS = ("family", "relu_width", "sparsity", "tree_depth", "network_width", "x_law",
          "context_correlation", "context_covariance")
"""Task options a pool does not take (its family is linear-gaussian with Gaussian x)."""


def pool_mode(options: dict[str, Any], seed: int, as_json: bool) -> bool:
    """``iclab theory`` with --tasks or --task-pool: the pool's optimum (True); else False."""
    if options.get("task_pool") is None and options.get("tasks") is None:
        return False
    pool_theory(options, seed, as_json)
    return True


def pool_theory(given: dict[str, Any], seed: int, as_json: bool) -> None:
    """Print the pool's optimum: loss_star, loss_star_nuisance_free, loss_star_fresh (the
    optimum's exact loss on fresh tasks w ~ N(0, Sigma_w)), Gamma, u, M and the nuisance
    parts u_x, m_y, u_y; the inputs; the search's starts."""
    infos = {**field_infos(TaskConfig), **field_infos(PoolOptions)}
    given = {key: value for key, value in given.items() if value is not None}
    for name in ("d", "n"):
        if name not in given:
            raise ConfigError(f"{flag_name(name)} is required")
    for name in ("d", "n", "sigma", "tasks"):
        if name in given:
            check_value(name, coerce(given[name], infos[name][1]), infos[name][1])
    extra = [flag_name(key) for key in OTHERS if (key in given and key != "family")
             or (key == "family" and given.get(key, "linear-gaussian") != "linear-gaussian")]
    if extra:
        verb = "does" if len(extra) == 1 else "do"
        raise ConfigError(f"{', '.join(extra)} {verb} not apply to a task pool (linear-gaussian "
                          f"tasks with Gaussian x)")
    if "tasks" in given and "task_pool" in given:
        raise ConfigError("give --tasks or --task-pool, not both")
    d, n, sigma = int(given["d"]), int(given["n"]), float(given.get("sigma", 0.0))
    if "tasks" in given:
        check_pool_work(int(given["tasks"]), d, DEFAULT_STARTS)
    cov = {key: covariance_or_identity(load_covariance(given[key], d) if key in given
                                       else None, d) for key in ("cov_x", "cov_w")}
    pool = load_pool(given["task_pool"], d) if "task_pool" in given else \
        draw_pool(int(given["tasks"]), cov["cov_w"], seed)
    check_pool_work(len(pool), d, DEFAULT_STARTS, "--task-pool with K =")
    optimum = pool_optimum(PoolLoss(pool, n, sigma, cov["cov_x"]), seed=seed)
    fresh = PopulationLoss(n, sigma, torch.as_tensor(cov["cov_x"]),
                           torch.as_tensor(cov["cov_w"]))
    record: dict[str, Any] = {"d": d, "n": n, "sigma": sigma, "tasks": len(pool),
                              **optimum.to_json(),
                              "loss_star_fresh": float(fresh(torch.as_tensor(optimum.u),
                                                             torch.as_tensor(optimum.M)))}
    if as_json:
        click.echo(json.dumps(record, allow_nan=False))
        return
    rows = [("d, n, sigma, tasks K", f"{d}, {n}, {sigma:g}, {len(pool)}"),
            ("optimal LSA loss on the pool", f"{optimum.loss:.6g}"),
            ("nuisance-free optimum's loss", f"{optimum.loss_nuisance_free:.6g}"),
            ("the optimum's loss on fresh tasks", f"{record['loss_star_fresh']:.6g}"),
            ("u_x (nuisance)", _vector(optimum.nuisance["u_x"])),
            ("m_y (nuisance)", _vector(optimum.nuisance["m_y"])),
            ("u_y", f"{optimum.u[-1]:.6g}"),
            ("search: starts at the best", f"{optimum.starts_at_best} of {optimum.starts}")]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append("Gamma = u_y M_x^T + m_y u_x^T =")
    lines.extend("  " + "  ".join(f"{entry: .6f}" for entry in row) for row in optimum.gamma)
    click.echo("\n".join(lines))


def _vector(values: np.ndarray) -> str:
    return ", ".join(f"{value:.6g}" for value in values)
