import numpy as np
import torch

from iclab.algorithms.gd import OneStepGD, PreconditionedGD
from tests.helpers import prompts


def test_one_step_gd_is_a_gradient_step_on_the_prompt_loss() -> None:
    batch = prompts(4, 7, batch=5)
    eta = 0.037
    w = torch.zeros(5, 4, dtype=torch.float64, requires_grad=True)
    loss = 0.5 * ((batch.y - torch.einsum("bnd,bd->bn", batch.X, w)) ** 2).sum()
    (gradient,) = torch.autograd.grad(loss, w)
    torch.testing.assert_close(OneStepGD(eta).fit(batch.X, batch.y), -eta * gradient)
    expected = ((-eta * gradient) * batch.x_q).sum(-1)
    torch.testing.assert_close(OneStepGD(eta)(batch.X, batch.y, batch.x_q), expected)


def test_preconditioned_gd_with_eta_identity_is_plain_gd() -> None:
    batch = prompts(3, 9, batch=11)
    plain = OneStepGD(0.05)(batch.X, batch.y, batch.x_q)
    pre = PreconditionedGD(0.05 * np.eye(3))(batch.X, batch.y, batch.x_q)
    torch.testing.assert_close(plain, pre, rtol=1e-14, atol=1e-14)


def test_preconditioned_prediction_is_xq_gamma_Xty() -> None:
    batch = prompts(3, 4, batch=6)
    gamma = np.random.default_rng(0).standard_normal((3, 3))
    Xty = torch.einsum("bnd,bn->bd", batch.X, batch.y)
    expected = torch.einsum("bi,ij,bj->b", batch.x_q, torch.as_tensor(gamma), Xty)
    torch.testing.assert_close(PreconditionedGD(gamma)(batch.X, batch.y, batch.x_q), expected)
