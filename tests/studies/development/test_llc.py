"""The SGLD estimate of the LLC against the exact value of a regular model: linear regression
with p parameters at its (nondegenerate) least-squares minimum has LLC p / 2."""

from __future__ import annotations

import pytest
import torch

from iclab.studies.development.llc import ChainSettings, estimate_llc
from iclab.utils.errors import ConfigError


def regression(p: int, n: int) -> tuple[torch.nn.Parameter, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(11)
    X = torch.randn(n, p, generator=generator, dtype=torch.float64)
    y = X @ torch.randn(p, generator=generator, dtype=torch.float64) \
        + 0.5 * torch.randn(n, generator=generator, dtype=torch.float64)
    w_star = torch.linalg.lstsq(X, y[:, None]).solution[:, 0]    # grad L_n(w*) = 0
    return torch.nn.Parameter(w_star.clone()), X, y


@pytest.mark.parametrize("p", [4, 12])
def test_the_estimate_is_within_its_error_of_half_the_parameters(p: int) -> None:
    settings = ChainSettings()
    w, X, y = regression(p, settings.samples)
    before = w.detach().clone()
    out = estimate_llc([w], lambda: (X @ w - y).square().mean(), settings, seed=0)
    assert abs(out["llc"] - p / 2) <= 3 * out["llc_stderr"], out
    assert out["llc_stderr"] < 0.15 * p / 2                     # and the error is small
    assert torch.equal(w.detach(), before)                      # w* restored


def test_a_model_with_twice_the_parameters_is_told_apart() -> None:
    """The estimate can fail: p = 4's estimate is many errors from 12 / 2."""
    settings = ChainSettings()
    w, X, y = regression(4, settings.samples)
    out = estimate_llc([w], lambda: (X @ w - y).square().mean(), settings, seed=1)
    assert abs(out["llc"] - 6) > 5 * out["llc_stderr"]


@pytest.mark.parametrize(("change", "word"), [({"chains": 1}, "chains"),
                                              ({"step": 0.0}, "step"),
                                              ({"localisation": -1.0}, "localisation")])
def test_settings_out_of_range_are_refused(change: dict[str, float], word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        ChainSettings(**change).check()  # type: ignore[arg-type]
    edge = {"chains": 2, "step": 1e-12, "localisation": 0.0}[word]
    ChainSettings(**{word: edge}).check()  # type: ignore[arg-type]


def test_a_degenerate_minimum_has_half_of_one_not_half_of_two() -> None:
    """f(x) = a b x at a b = c != 0: the minimum is a curve, the loss (a b - c)^2 E[x^2] is
    quadratic in one direction and flat along the curve, so the LLC is 1/2, not p/2 = 1."""
    generator = torch.Generator().manual_seed(3)
    n = ChainSettings().samples
    x = torch.randn(n, generator=generator, dtype=torch.float64)
    y = x + 0.5 * torch.randn(n, generator=generator, dtype=torch.float64)
    root = float((x @ y) / (x @ x)) ** 0.5                      # a = b = sqrt(c_hat)
    a, b = (torch.nn.Parameter(torch.tensor(root, dtype=torch.float64)) for _ in range(2))
    out = estimate_llc([a, b], lambda: (y - a * b * x).square().mean(), ChainSettings(), 0)
    assert abs(out["llc"] - 0.5) <= 3 * out["llc_stderr"], out
    assert abs(out["llc"] - 1.0) > 5 * out["llc_stderr"], out


def test_devinterp_s_chains_agree_with_the_exact_value_and_with_iclab_s() -> None:
    """The cross-check: the devinterp library's estimator (iclab[devinterp]) on the same
    regular model, within its error of p / 2 and of iclab's own estimate."""
    pytest.importorskip("devinterp")
    from iclab.studies.development.llc_devinterp import devinterp_llc

    p, settings = 4, ChainSettings()
    w, X, y = regression(p, settings.samples)
    model = torch.nn.Linear(p, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(w.detach()[None])

    class Prompts:  # the four fields devinterp_llc reads; the model ignores y and x_q
        def __init__(self) -> None:
            self.X, self.y, self.x_q, self.y_q = X, y, X, y

    class Regression(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = model

        def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.linear(x_q)[:, 0]
            return out

    state = torch.get_rng_state()
    theirs = devinterp_llc(Regression(), Prompts(), settings.samples, settings.chains,
                           settings.burn_in, settings.draws, settings.step,
                           settings.localisation, seed=0)
    assert torch.equal(torch.get_rng_state(), state)           # the global generator kept
    ours = estimate_llc([w], lambda: (X @ w - y).square().mean(), settings, seed=0)
    assert abs(theirs["llc"] - p / 2) <= 3 * theirs["llc_stderr"], theirs
    assert abs(theirs["llc"] - 6) > 5 * theirs["llc_stderr"]   # and it can fail
    both = (theirs["llc_stderr"] ** 2 + ours["llc_stderr"] ** 2) ** 0.5
    assert abs(theirs["llc"] - ours["llc"]) <= 4 * both


def test_devinterp_asked_without_the_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("iclab.studies.development.llc_devinterp.importlib.util.find_spec",
                        lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install 'iclab\[devinterp\]'"):
        ChainSettings(estimator="devinterp").check()
    ChainSettings(estimator="iclab").check()                    # iclab's own needs nothing
    with pytest.raises(ConfigError, match="llc estimator must be one of iclab, devinterp"):
        ChainSettings(estimator="other").check()
