import math

import pytest
import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import ReluTask, TwoLayerReluTask
from iclab.theory.population import PopulationLoss
from iclab.training.objective import make_objective
from iclab.utils.seeding import make_generator

CPU = torch.device("cpu")


def _model(d: int) -> LinearSelfAttention:
    return LinearSelfAttention(d, LSAOptions(init_scale=0.4, init="random"),
                               make_generator(0, "init"), dtype=torch.float64)


def test_a_step_s_batch_depends_on_the_step_only() -> None:
    task = LinearGaussian(3, 6, 0.5)
    model = _model(3).float()
    objective = make_objective(task, model, "prompts", 64, seed=2, device=CPU)
    again = make_objective(task, model, "prompts", 64, seed=2, device=CPU)
    other_seed = make_objective(task, model, "prompts", 64, seed=3, device=CPU)
    with torch.no_grad():
        assert float(objective(5)) == float(again(5))
        assert float(objective(5)) != float(objective(6))
        assert float(objective(5)) != float(other_seed(5))


def test_every_objective_estimates_the_exact_population_loss() -> None:
    """Sampled losses average to the exact loss (float32 batches of the float64 model)."""
    task = LinearGaussian(3, 6, 0.5)
    model64 = _model(3)
    with torch.no_grad():
        exact = make_objective(task, model64, "exact", 0, seed=0, device=CPU)(0)
        expected = PopulationLoss.from_task(task)(*model64.effective(), False, False)
    assert float(exact) == pytest.approx(float(expected), rel=1e-12)
    model = _model(3).float()
    for sampler in ("statistics", "prompts"):
        objective = make_objective(task, model, sampler, 4096, seed=1, device=CPU)
        with torch.no_grad():
            losses = torch.stack([objective(step) for step in range(40)]).double()
        stderr = float(losses.std()) / math.sqrt(len(losses))
        assert abs(float(losses.mean()) - float(expected)) < 4 * stderr + 1e-3 * float(expected)


def test_the_statistics_sampler_and_exact_loss_need_a_family_that_draws_them() -> None:
    model = _model(3)
    for sampler in ("statistics", "exact"):
        with pytest.raises(ValueError, match="needs a"):
            make_objective(TwoLayerReluTask(3, 5, 0.1), model, sampler, 8, seed=0, device=CPU)
    with pytest.raises(ValueError, match="needs a"):
        make_objective(ReluTask(3, 5, 0.1), model, "exact", 8, seed=0, device=CPU)
    loss = make_objective(ReluTask(3, 5, 0.1), model, "statistics", 8, seed=0, device=CPU)(0)
    assert loss.shape == () and float(loss.detach()) > 0  # relu draws the Z statistics lsa reads
    with pytest.raises(ValueError, match="unknown sampler"):
        make_objective(LinearGaussian(3, 5, 0.1), model, "magic", 8, seed=0, device=CPU)
