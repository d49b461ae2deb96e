"""CPU seconds of Garg et al.'s family baselines over every prefix k = 0..n.

    python benchmarks/family_baselines.py [--d 10] [--n 40] [--prompts 64] [--json]

For each of ``sparse-linear``, ``decision-tree`` and ``relu-network`` (sigma = 0), draws
``--prompts`` prompts and runs the family's own baselines
(``iclab.studies.transformer.family_baselines``) on every prefix, as a prefix evaluation
does; prints each baseline's CPU seconds in all, per prompt and prefix, and its mean squared
error at k = n. One intra-op thread.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from iclab.studies.transformer.family_baselines import family_baselines
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with intra_op_threads(1), torch.no_grad():
        for name in ("sparse-linear", "decision-tree", "relu-network"):
            task = FamilyRegistry().make_family(name, args.d, args.n, 0.0)
            prompts = task.sample_prompts(args.prompts, make_generator(0, "benchmark"))
            for predictor in family_baselines(task, 0):
                started = time.process_time()
                for k in range(args.n + 1):
                    yhat = predictor(prompts.X[:, :k], prompts.y[:, :k], prompts.x_q)
                seconds = time.process_time() - started
                rows.append({"family": name, "baseline": predictor.name, "cpu_seconds": seconds,
                             "ms_per_prompt_prefix": 1e3 * seconds / (args.prompts * (args.n + 1)),
                             "mse_at_n": float((yhat - prompts.y_q).square().mean())})
    if args.json:
        print(json.dumps(rows))
        return
    for row in rows:
        print(f"{row['family']:<14} {row['baseline']:<18} {row['cpu_seconds']:7.2f} s CPU  "
              f"{row['ms_per_prompt_prefix']:6.2f} ms per prompt and prefix  "
              f"mse at k = n: {row['mse_at_n']:.3f}")


if __name__ == "__main__":
    main()
