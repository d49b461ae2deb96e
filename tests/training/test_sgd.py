"""Plain SGD: one step is theta - lr g; with momentum it matches torch.optim.SGD."""

from __future__ import annotations

import torch

from iclab.training.sgd import SGD


def _quadratic(params: list[torch.nn.Parameter], target: torch.Tensor) -> torch.Tensor:
    return sum(((p - target) ** 2 * (i + 1)).sum() for i, p in enumerate(params))  # type: ignore[return-value]


def test_a_step_is_theta_minus_lr_g_and_momentum_matches_torch() -> None:
    target = torch.tensor([0.5, -1.0], dtype=torch.float64)
    for momentum in (0.0, 0.9):
        ours = [torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64)),
                torch.nn.Parameter(torch.tensor([-3.0, 0.0], dtype=torch.float64))]
        theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
        mine = SGD(ours, lr=0.05, momentum=momentum)
        reference = torch.optim.SGD(theirs, lr=0.05, momentum=momentum)
        for _ in range(5):
            before = [p.detach().clone() for p in ours]
            mine.zero_grad()
            _quadratic(ours, target).backward()  # type: ignore[no-untyped-call]
            grads = [p.grad.clone() for p in ours if p.grad is not None]
            mine.step()
            reference.zero_grad()
            _quadratic(theirs, target).backward()  # type: ignore[no-untyped-call]
            reference.step()
            if momentum == 0.0:
                for p, b, g in zip(ours, before, grads, strict=True):
                    torch.testing.assert_close(p.detach(), b - 0.05 * g, rtol=1e-15, atol=0)
            for p, q in zip(ours, theirs, strict=True):
                torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-15, atol=1e-15)
        state = mine.state_dict()
        again = SGD(ours, lr=0.05, momentum=momentum)
        again.load_state_dict(state)
        assert again.param_groups[0]["momentum"] == momentum
