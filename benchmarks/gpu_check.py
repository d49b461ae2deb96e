"""The body of benchmarks/gpu_check.sh (run it through the script, which skips without CUDA).

1. Agreement: the model of each configuration is built from one seed on the CPU and copied to
   cuda; both take the same STEPS_COMPARED Adam steps on the same prompts (drawn on the CPU,
   moved through pinned memory), TF32 off; every step's loss must agree to RELATIVE_TOLERANCE.
2. Speed: iclab's own training step (``make_train_step``: prompts drawn on the device, no
   host copy) for TIMED_STEPS steps on cuda, in float32 and, for the transformer, with
   bfloat16 autocast; steps per second.
"""

from __future__ import annotations

import copy
import sys
import time

import torch

from iclab.config.train import TrainConfig
from iclab.training.loop import build_model, make_train_step
from iclab.training.objective import make_objective
from iclab.utils.seeding import make_generator

STEPS_COMPARED = 5
RELATIVE_TOLERANCE = 1e-3
"""float32 on two devices: the kernels sum in different orders (about 1e-6 relative per
operation); Adam amplifies the differences a little over 5 steps, far below 1e-3."""
TIMED_STEPS = 300
GARG = {"model": "transformer", "layers": 12, "heads": 8, "width": 256, "d": 20, "n": 40,
        "batch": 64, "sigma": 0.0, "lr": 1e-4, "warmup": 0}
LSA = {"d": 20, "n": 40, "batch": 2048, "sigma": 0.5, "sampler": "prompts"}


def _losses(config: TrainConfig, device: torch.device, model: torch.nn.Module) -> list[float]:
    task = config.make_task()
    model = copy.deepcopy(model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.optim.lr)
    out = []
    for step in range(STEPS_COMPARED):
        prompts = task.sample_prompts(config.optim.batch, make_generator(0, "check", step))
        X = prompts.X.pin_memory().to(device, non_blocking=True) \
            if device.type == "cuda" else prompts.X
        y, x_q, y_q = (t.to(device, non_blocking=True) for t in
                       (prompts.y, prompts.x_q, prompts.y_q))
        if getattr(model, "has_prefix_predictions", False):
            X_all = torch.cat([X, x_q[:, None]], 1)
            y_all = torch.cat([y, y_q[:, None]], 1)
            loss = (model.predict_prefixes(X_all, y_all) - y_all).square().mean()
        else:
            loss = (model(X, y, x_q) - y_q).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(float(loss))
    return out


def _speed(config: TrainConfig) -> float:
    device = torch.device("cuda")
    task = config.make_task()
    model, optimizer = build_model(config, task, device)
    objective = make_objective(task, model, config.resolved_sampler(task), config.optim.batch,
                               config.run.seed, device)
    step = make_train_step(config, optimizer, objective)
    for s in range(10):
        step(s)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for s in range(10, 10 + TIMED_STEPS):
        step(s)
    torch.cuda.synchronize()
    return TIMED_STEPS / (time.perf_counter() - started)


def main() -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    failed = False
    for label, values in (("transformer (Garg: 12 x 8 x 256, d=20, n=40)", GARG),
                          ("lsa (d=20, n=40)", LSA)):
        config = TrainConfig.flat(**values, steps=TIMED_STEPS + 10)
        model, _ = build_model(config, config.make_task(), torch.device("cpu"))
        cpu = _losses(config, torch.device("cpu"), model)
        gpu = _losses(config, torch.device("cuda"), model)
        worst = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(cpu, gpu, strict=True))
        ok = worst <= RELATIVE_TOLERANCE
        failed |= not ok
        print(f"{label}: cpu losses {[f'{v:.6g}' for v in cpu]}")
        print(f"{label}: cuda losses {[f'{v:.6g}' for v in gpu]}")
        print(f"{label}: largest relative difference {worst:.2e} "
              f"(tolerance {RELATIVE_TOLERANCE:g}): {'ok' if ok else 'FAILED'}")
        print(f"{label}: {_speed(config):.1f} steps/s on cuda (float32)")
        if values is GARG:
            fast = TrainConfig.flat(**values, steps=TIMED_STEPS + 10, bfloat16=True)
            print(f"{label}: {_speed(fast):.1f} steps/s on cuda (bfloat16 autocast)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
