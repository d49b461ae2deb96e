"""Seconds per training step of the transformer and the sequence models, beside a plain
PyTorch loop of the same model, in one process.

    python benchmarks/model_speed.py [--steps 30] [--repeats 2] [--warmup 5] [--json]

For each model (``transformer`` on its prefix loss, ``h3``, ``gla``, ``mamba``) at d = 5,
n = 20 and the batch its reproduce section or guide uses, it times iclab's real training step
(``iclab.training.loop.make_train_step``, what ``iclab train`` runs: scheduled learning rate,
a fresh batch from the family's sampler, the loss, iclab's Adam) against a plain loop written
here around the same ``nn.Module``: prompts from the same family, the same loss (every prefix
for a model that predicts at every prefix, else the query's), ``torch.optim.Adam``. Both run
with one intra-op thread, as a sweep's worker does, and take turns every ten steps
(``train_speed.measure``), so the machine's load hits both alike. Prints each model's median
ms per step and the ratio iclab / plain (below 1: iclab's step is the faster).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from iclab.config.train import TrainConfig
from iclab.utils.seeding import make_generator
from train_speed import Step, config_step, measure

MODELS: dict[str, dict[str, Any]] = {
    "transformer": {"model": "transformer", "batch": 64, "lr": 0.0005},
    "h3": {"model": "h3", "batch": 1024, "lr": 0.01},
    "gla": {"model": "gla", "batch": 1024, "lr": 0.01},
    "mamba": {"model": "mamba", "batch": 256, "lr": 0.001},
}
"""The models and their training settings (a reproduce section's or the guide's)."""


def plain_step(config: TrainConfig) -> Step:
    """A plain PyTorch loop around the same module: the family's prompts, the same loss,
    torch.optim.Adam."""
    task = config.make_task()
    model = config.model_class().create(config.task.d, config.model,
                                        make_generator(config.run.seed, "init"), torch.float32)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.optim.lr)
    batch = config.optim.batch

    def step(index: int) -> object:
        prompts = task.sample_prompts(batch, make_generator(config.run.seed, "plain", index))
        optimizer.zero_grad(set_to_none=True)
        if model.has_prefix_predictions:
            X = torch.cat([prompts.X, prompts.x_q[:, None]], dim=1)
            y = torch.cat([prompts.y, prompts.y_q[:, None]], dim=1)
            loss = (model.predict_prefixes(X, y) - y).square().mean()
        else:
            loss = (model(prompts.X, prompts.y, prompts.x_q) - prompts.y_q).square().mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, settings in MODELS.items():
        config = TrainConfig.flat(d=5, n=20, sigma=0.5, steps=10_000, **settings)
        medians = measure({"iclab": (config_step(config), 1), "plain": (plain_step(config), 1)},
                          args.steps, args.warmup, args.repeats)
        out[name] = {"iclab_ms": 1e3 * medians["iclab"], "plain_ms": 1e3 * medians["plain"],
                     "ratio": medians["iclab"] / medians["plain"]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = benchmark(args)
    for name, row in result.items():
        print(f"{name:12s} iclab {row['iclab_ms']:8.2f} ms/step   plain {row['plain_ms']:8.2f} "
              f"ms/step   ratio {row['ratio']:.2f}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
