"""Seconds per training step: iclab's real step against a plain PyTorch eager loop.

    python benchmarks/train_speed.py --d 10 --n 20 --batch 2048 [--steps 200] [--json]
    python benchmarks/train_speed.py --family relu --d 5 --n 20 --batch 2048
    python benchmarks/train_speed.py --x-law uniform --d 10 --n 10 --batch 2048

Times, in one process and interleaved:

- iclab: the step ``iclab train`` runs (``iclab.training.loop.make_train_step``: scheduled
  learning rate, a fresh batch from the run's sampler, the loss, backward, fused Adam), with the
  intra-op threads ``iclab train`` uses;
- plain: the same model and task written as one would without iclab: whole prompts drawn
  every step (torch.randn inputs; with ``--x-law`` the law's own draw of the coordinates; with
  ``--family`` the family's own ``draw_values`` on the inputs), the Gram-free forward
  yhat = sum_i (u.e_i)(e_i.M x_q) with u = W_V^T h and M = (W_K^T W_Q)[:, :d] from the four
  parameter matrices, autograd, torch.optim.Adam. It runs twice, with torch's default number
  of threads and with one thread, and the speed-up is taken against the faster of the two.

``--family`` (a built-in family) and ``--x-law`` (the linear family's covariate law) choose
the task; iclab then trains on whole prompts (its sampler is asked of the family), the plain
loop draws the same law, and a third runner times drawing the prompts' random numbers alone
(``draws_step``): no whole-prompt step that draws them from torch's generator can beat the
plain loop by more than the ratio of the two (``speedup_bound``).

For relu (trained on statistics: X^T y for the default nuisance-free model, else Z) two more
runners time a floor: only the random numbers that sampler draws, and the update on one batch
drawn once (loss, gradients, Adam, learning rate). Their sum bounds any step that draws those
numbers and takes that update (``statistics_speedup_bound``).

Each timing is the median over ``--steps`` x ``--repeats`` steps after ``--warmup`` steps; the
runners take turns every ten steps, so that a change in the machine's load hits all of them
alike. ``--ratio-n N2`` also times iclab's step at n = N2 and prints time(N2) / time(N).
``--table`` prints the README's table instead.
With ``--json`` the last line is a JSON object holding ``median_step_seconds`` (iclab's).

``--layers L`` times the L-layer LSA (``iclab.models.lsa.deep``, ``--parameterisation
full|sparse``) instead: iclab's step draws Z = sum_i e_i e_i^T with the n-independent Wishart
sampler (``iclab.tasks.wishart``), runs ``forward_statistics`` (hand-written backward) and the
fused Adam with the cosine learning rate; the plain loop draws whole prompts with torch.randn
and runs the same L layers token by token (Z^(l) = E^T E, E <- E + E (W_PV Z^(l) W_KQ / n)^T
and the same for the query), autograd and torch.optim.Adam.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

import torch

from iclab.config.train import TrainConfig
from iclab.studies.covariates.laws import parse_law
from iclab.tasks.registry import FamilyRegistry
from iclab.tasks.relu_statistics import relu_z_random_numbers
from iclab.tasks.relu_xy_statistics import relu_xy_random_numbers
from iclab.training.loop import TRAIN_THREADS, build_model, make_train_step
from iclab.training.objective import loss_on_statistics, make_objective
from iclab.utils.batches import STATISTICS_SAMPLERS, shared_statistics_kind
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

Step = Callable[[int], object]


def task_keys(family: str, x_law: str) -> dict[str, Any]:
    """The config keys of the task (left out at their defaults)."""
    keys: dict[str, Any] = {}
    if family != "linear-gaussian":
        keys["family"] = family
    if x_law != "gaussian":
        keys["x_law"] = x_law
    return keys


def iclab_step(d: int, n: int, batch: int, sigma: float, steps: int,
               family: str = "linear-gaussian",
               x_law: str = "gaussian") -> Step:
    """iclab's training step for this size and task, on the CPU, with its default sampler."""
    return config_step(TrainConfig.flat(d=d, n=n, sigma=sigma, batch=batch, steps=steps,
                                        **task_keys(family, x_law)))


def config_step(config: TrainConfig) -> Step:
    """The training step ``iclab train`` runs for ``config``, on the CPU."""
    device = torch.device("cpu")
    task = config.make_task()
    model, optimizer = build_model(config, task, device)
    objective = make_objective(task, model, config.resolved_sampler(task), config.optim.batch,
                               config.run.seed, device)
    return make_train_step(config, optimizer, objective, model.gradient_masks())


def fixed_batch_step(config: TrainConfig) -> tuple[Step, str]:
    """iclab's step for ``config`` on one batch of statistics drawn once: the update (loss,
    gradients, masks, Adam, learning rate) without the sampler; and the kind of statistics."""
    device = torch.device("cpu")
    task = config.make_task()
    model, optimizer = build_model(config, task, device)
    kind = shared_statistics_kind(task, model)
    if kind is None:
        raise ConfigError(f"{task.name!r} and {model.name!r} share no statistics")
    stats = getattr(task, STATISTICS_SAMPLERS[kind])(
        config.optim.batch, make_generator(config.run.seed, "train", 0, device))
    return make_train_step(config, optimizer, lambda _: loss_on_statistics(model, stats),
                           model.gradient_masks()), kind


def relu_draws_step(d: int, n: int, batch: int, sigma: float, kind: str) -> Step:
    """Only the random numbers relu's sampler of statistics of ``kind`` draws: "xy"
    (``relu_xy_random_numbers``: its normals and the noise's chi-square) or "wishart"
    (``relu_z_random_numbers``: its normals, Bartlett's factor and the noise's chi-square)."""
    generator = torch.Generator().manual_seed(0)
    draw = relu_xy_random_numbers if kind == "xy" else relu_z_random_numbers
    return lambda _: draw(d, n, sigma, batch, generator)


PromptDraw = Callable[[torch.Generator], tuple[torch.Tensor, ...]]
"""generator -> (X (B, n, d), y (B, n), x_q (B, d), y_q (B,)) as a plain loop draws them."""


def plain_prompts(d: int, n: int, batch: int, sigma: float, family: str,
                  x_law: str) -> PromptDraw:
    """Whole prompts of the task drawn as one would without iclab: batch-major tensors."""
    if family != "linear-gaussian":
        task: Any = FamilyRegistry().make_family(family, d, n, sigma)

        def nonlinear(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
            inputs = torch.randn(batch, n + 1, d, generator=generator)
            labels = task.draw_values(inputs, generator)
            labels = labels + sigma * torch.randn(batch, n + 1, generator=generator)
            return inputs[:, :n], labels[:, :n], inputs[:, n], labels[:, n]

        return nonlinear
    law = parse_law(x_law)

    def linear(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        if x_law == "gaussian":
            X = torch.randn(batch, n, d, generator=generator)
            x_q = torch.randn(batch, d, generator=generator)
        else:
            X = law.sample_standard((batch, n, d), generator)
            x_q = law.sample_standard((batch, d), generator)
        w = torch.randn(batch, d, generator=generator)
        y = torch.einsum("bnd,bd->bn", X, w) + sigma * torch.randn(batch, n, generator=generator)
        y_q = (x_q * w).sum(-1) + sigma * torch.randn(batch, generator=generator)
        return X, y, x_q, y_q

    return linear


def draws_step(d: int, n: int, batch: int, sigma: float, family: str = "linear-gaussian",
               x_law: str = "gaussian") -> Step:
    """Only the random numbers a batch of whole prompts needs: the n + 1 inputs (the law's
    coordinates), the noise, and the task's own draw (w, or relu's direction u; another
    family's ``draw_values``, its arithmetic included). Any whole-prompt sampler drawing these
    numbers from torch's generator pays at least this."""
    generator = torch.Generator().manual_seed(0)
    law = parse_law(x_law)
    task: Any = FamilyRegistry().make_family(family, d, n, sigma) \
        if family not in ("linear-gaussian", "relu") else None

    def step(_: int) -> object:
        inputs = law.sample_standard((batch, n + 1, d), generator)
        noise = torch.randn(batch, n + 1, generator=generator)
        if task is None:
            return inputs, noise, torch.randn(batch, d, generator=generator)
        return inputs, noise, task.draw_values(inputs, generator)

    return step


def plain_step(d: int, n: int, batch: int, sigma: float, family: str = "linear-gaussian",
               x_law: str = "gaussian") -> Step:
    """A plain eager loop: whole prompts (``plain_prompts``), Gram-free forward, Adam."""
    generator = torch.Generator().manual_seed(0)
    shapes = {"W_K": (d + 1, d + 1), "W_Q": (d + 1, d + 1), "W_V": (d + 1, d + 1), "h": (d + 1,)}
    params = {name: torch.nn.Parameter(0.1 * torch.randn(*shape, generator=generator))
              for name, shape in shapes.items()}
    optimizer = torch.optim.Adam(params.values(), lr=0.01)
    draw = plain_prompts(d, n, batch, sigma, family, x_law)

    def step(_: int) -> object:
        X, y, x_q, y_q = draw(generator)
        u = params["W_V"].T @ params["h"]
        M = params["W_K"].T @ params["W_Q"][:, :d]
        Mx_q = x_q @ M.T
        a = X @ u[:d] + y * u[d]                                     # u . e_i
        b = torch.bmm(X, Mx_q[:, :d, None]).squeeze(-1) + y * Mx_q[:, d, None]  # e_i . M x_q
        loss = ((a * b).sum(-1) - y_q).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        return loss

    return step


DEEP_LR = 0.002


def deep_iclab_step(
    d: int, n: int, batch: int, sigma: float, steps: int, layers: int, parameterisation: str
) -> Step:
    """iclab's step for the L-layer LSA, exactly as ``iclab train --layers L`` runs it: the Z
    sampler, forward_statistics with its hand-written backward, gradient clipping, fused Adam
    and the cosine schedule, at the deep model's default learning rate."""
    return config_step(TrainConfig.flat(d=d, n=n, sigma=sigma, batch=batch, steps=steps,
                                        layers=layers, parameterisation=parameterisation))


def deep_plain_step(d: int, n: int, batch: int, sigma: float, layers: int) -> Step:
    """A plain eager loop of the L-layer LSA on whole prompts: token updates, autograd, Adam."""
    generator = torch.Generator().manual_seed(0)
    W_PV = torch.nn.Parameter(0.1 * torch.randn(layers, d + 1, d + 1, generator=generator))
    W_KQ = torch.nn.Parameter(0.1 * torch.randn(layers, d + 1, d + 1, generator=generator))
    optimizer = torch.optim.Adam([W_PV, W_KQ], lr=DEEP_LR)

    def step(_: int) -> object:
        X = torch.randn(batch, n, d, generator=generator)
        w = torch.randn(batch, d, generator=generator)
        x_q = torch.randn(batch, d, generator=generator)
        y = torch.einsum("bnd,bd->bn", X, w) + sigma * torch.randn(batch, n, generator=generator)
        y_q = (x_q * w).sum(-1) + sigma * torch.randn(batch, generator=generator)
        tokens = torch.cat([X, y[..., None]], -1)                       # (B, n, d+1)
        query = torch.cat([x_q, torch.zeros(batch, 1)], -1)             # (B, d+1)
        for layer in range(layers):
            Z = tokens.transpose(1, 2) @ tokens
            update = W_PV[layer] @ Z @ W_KQ[layer] / n
            tokens = tokens + tokens @ update.transpose(1, 2)
            query = query + (update @ query[..., None]).squeeze(-1)
        loss = (-query[:, d] - y_q).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        return loss

    return step


def time_steps(step: Step, first: int, count: int, threads: int) -> list[float]:
    """Wall seconds of steps first .. first+count-1, each timed on its own."""
    times = []
    with intra_op_threads(threads):
        for index in range(first, first + count):
            start = time.perf_counter()
            step(index)
            times.append(time.perf_counter() - start)
    return times


BLOCK, REWARM = 10, 2
"""Runners take turns in blocks of BLOCK timed steps, each block after REWARM untimed ones (so
no runner pays for the caches the previous one emptied): load changes on a shared machine hit
every runner alike."""


def measure(
    runners: dict[str, tuple[Step, int]], steps: int, warmup: int, repeats: int
) -> dict[str, float]:
    """Median seconds per step of each runner over steps x repeats timed steps."""
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for step, threads in runners.values():
        time_steps(step, 0, warmup, threads)
    index, wanted = warmup, steps * repeats
    while len(samples[next(iter(runners))]) < wanted:
        count = min(BLOCK, wanted - len(samples[next(iter(runners))]))
        for name, (step, threads) in runners.items():
            time_steps(step, index, REWARM, threads)
            samples[name] += time_steps(step, index + REWARM, count, threads)
        index += REWARM + count
    return {name: statistics.median(values) for name, values in samples.items()}


def machine() -> dict[str, Any]:
    model = platform.processor() or "unknown"
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next((line.split(":", 1)[1].strip() for line in lines.splitlines()
                      if line.startswith("Model name")), model)
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"cpu": model, "cores": os.cpu_count(), "torch": torch.__version__,
            "default_threads": torch.get_num_threads(), "load_average": os.getloadavg()[0]}


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    d, n, batch, sigma = args.d, args.n, args.batch, args.sigma
    task = {"family": args.family, "x_law": args.x_law}
    blocks = args.steps * args.repeats // BLOCK + 1
    total = args.warmup + (REWARM + BLOCK) * blocks      # steps each runner takes, at most
    default_threads = torch.get_num_threads()
    threads = TRAIN_THREADS if args.threads is None else args.threads
    layers, parameterisation = args.layers, args.parameterisation
    if args.ratio_n is None and layers is not None:
        args.ratio_n = 10 * n       # the n-independence check, by default for depth

    def ours(size: int) -> Step:
        if layers is None:
            return iclab_step(d, size, batch, sigma, total, **task)
        return deep_iclab_step(d, size, batch, sigma, total, layers, parameterisation)

    def plain() -> Step:
        if layers is None:
            return plain_step(d, n, batch, sigma, **task)
        return deep_plain_step(d, n, batch, sigma, layers)

    runners: dict[str, tuple[Step, int]] = {
        "iclab": (ours(n), threads),
        "plain": (plain(), default_threads),
    }
    if default_threads != 1:
        runners["plain_1_thread"] = (plain(), 1)
    if args.ratio_n is not None:
        runners["iclab_ratio_n"] = (ours(args.ratio_n), threads)
    whole_prompts = layers is None and (args.family != "linear-gaussian"
                                        or args.x_law != "gaussian")
    if whole_prompts:
        runners["draws"] = (draws_step(d, n, batch, sigma, **task), 1)
    relu_statistics = layers is None and args.family == "relu" and args.x_law == "gaussian"
    if relu_statistics:
        fixed, kind = fixed_batch_step(TrainConfig.flat(d=d, n=n, sigma=sigma, batch=batch,
                                                        steps=total, family="relu"))
        runners["statistics_draws"] = (relu_draws_step(d, n, batch, sigma, kind), threads)
        runners["fixed_batch"] = (fixed, threads)
    before = machine()
    medians = measure(runners, args.steps, args.warmup, args.repeats)
    plain_best = min(value for name, value in medians.items()
                     if name in ("plain", "plain_1_thread"))
    result: dict[str, Any] = {
        "d": d, "n": n, "batch": batch, "sigma": sigma, **task, "steps": args.steps,
        "repeats": args.repeats, "layers": layers,
        "parameterisation": None if layers is None else parameterisation,
        "median_step_seconds": medians["iclab"],
        "plain_median_step_seconds": medians["plain"],
        "plain_1_thread_median_step_seconds": medians.get("plain_1_thread", medians["plain"]),
        "speedup": plain_best / medians["iclab"],
        "iclab_threads": threads,
        "machine": before,
        "load_average_after": os.getloadavg()[0],
    }
    if args.ratio_n is not None:
        result["ratio_n"] = args.ratio_n
        result["ratio_n_median_step_seconds"] = medians["iclab_ratio_n"]
        result["ratio_n_time_ratio"] = medians["iclab_ratio_n"] / medians["iclab"]
    if whole_prompts:
        result["plain_draws_median_step_seconds"] = medians["draws"]
        result["speedup_bound"] = plain_best / medians["draws"]
    if relu_statistics:
        result["statistics_kind"] = kind
        floor = medians["statistics_draws"] + medians["fixed_batch"]
        result["statistics_draws_median_step_seconds"] = medians["statistics_draws"]
        result["fixed_batch_median_step_seconds"] = medians["fixed_batch"]
        result["statistics_speedup_bound"] = plain_best / floor
    return result


def report(result: dict[str, Any]) -> str:
    ms = 1e3
    model = "one-layer LSA" if result["layers"] is None else \
        f"{result['layers']}-layer LSA ({result['parameterisation']})"
    lines = [
        f"{model}, {result['family']}, x law {result['x_law']}, d={result['d']} "
        f"n={result['n']} batch={result['batch']} sigma={result['sigma']:g}: median of "
        f"{result['steps']} x {result['repeats']} steps after warm-up",
        f"  iclab step            {ms * result['median_step_seconds']:8.3f} ms"
        f"  ({result['iclab_threads']} thread(s))",
        f"  plain loop            {ms * result['plain_median_step_seconds']:8.3f} ms"
        f"  ({result['machine']['default_threads']} threads, torch default)",
        f"  plain loop, 1 thread  {ms * result['plain_1_thread_median_step_seconds']:8.3f} ms",
        f"  speed-up vs the faster plain loop: {result['speedup']:.1f}x",
    ]
    if "plain_draws_median_step_seconds" in result:
        draws = ms * result["plain_draws_median_step_seconds"]
        lines.append(f"  random numbers only   {draws:8.3f} ms  (a whole-prompt step drawing "
                     f"them can be at most {result['speedup_bound']:.1f}x faster)")
    if "statistics_draws_median_step_seconds" in result:
        draws = ms * result["statistics_draws_median_step_seconds"]
        fixed = ms * result["fixed_batch_median_step_seconds"]
        lines.append(f"  the {result['statistics_kind']} sampler's random numbers only "
                     f"{draws:.3f} ms + the update on a "
                     f"fixed batch {fixed:.3f} ms (a step drawing those numbers and taking "
                     f"that update can be at most {result['statistics_speedup_bound']:.1f}x "
                     f"faster)")
    if "ratio_n" in result:
        lines.append(f"  iclab step at n={result['ratio_n']}  "
                     f"{ms * result['ratio_n_median_step_seconds']:8.3f} ms"
                     f"  (x{result['ratio_n_time_ratio']:.2f} of n={result['n']})")
    info = result["machine"]
    lines.append(f"  machine: {info['cpu']}, {info['cores']} cores, torch {info['torch']}, "
                 f"load average {info['load_average']:.2f} -> {result['load_average_after']:.2f}")
    return "\n".join(lines)


def table(args: argparse.Namespace) -> str:
    rows = ["| d | n | iclab ms/step | plain ms/step (default threads) | plain ms/step (1 thread) "
            "| speed-up |", "| --- | --- | --- | --- | --- | --- |"]
    for d in (5, 10, 20):
        for n in (10, 20, 100, 1000):
            args.d, args.n = d, n
            result = benchmark(args)
            rows.append(
                f"| {d} | {n} | {1e3 * result['median_step_seconds']:.2f} "
                f"| {1e3 * result['plain_median_step_seconds']:.2f} "
                f"| {1e3 * result['plain_1_thread_median_step_seconds']:.2f} "
                f"| {result['speedup']:.1f}x |"
            )
            print(rows[-1], flush=True)
    return "\n".join(rows)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--sigma", type=float, default=0.5)
    parser.add_argument("--family", default="linear-gaussian",
                        help="a built-in family (iclab families) [default: linear-gaussian]")
    parser.add_argument("--x-law", default="gaussian",
                        help="the linear family's covariate law [default: gaussian]")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds")
    parser.add_argument("--ratio-n", type=int, default=None,
                        help="also time iclab's step at this n and print the ratio")
    parser.add_argument("--threads", type=int, default=None,
                        help=f"intra-op threads for iclab's step [default: {TRAIN_THREADS}, "
                             "as iclab train]")
    parser.add_argument("--table", action="store_true",
                        help="time d in {5, 10, 20} x n in {10, 20, 100, 1000}")
    parser.add_argument("--layers", type=int, default=None,
                        help="time the L-layer LSA and its Z sampler [default: the one-layer "
                             "LSA of iclab train]")
    parser.add_argument("--parameterisation", choices=("full", "sparse"), default="full",
                        help="with --layers: the L-layer model's parameterisation")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    for name in ("d", "n", "batch", "steps", "warmup", "repeats", "threads", "ratio_n",
                 "layers"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")
    try:
        TrainConfig.flat(d=args.d, n=args.n, sigma=args.sigma,
                         **task_keys(args.family, args.x_law)).validate()
    except ConfigError as error:
        parser.error(str(error))
    if args.layers is not None and task_keys(args.family, args.x_law):
        parser.error("--layers times the linear Gaussian task; leave out --family and --x-law")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.table:
        print(table(args))
        return
    result = benchmark(args)
    print(report(result))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
