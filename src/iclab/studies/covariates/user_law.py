"""User covariate laws: ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION``.

The function draws standardised coordinates (mean 0, identity covariance along the last axis):

    def draw(shape: tuple[int, ...], generator: torch.Generator,
             dtype: torch.dtype) -> torch.Tensor:
        # draws of ``shape`` from ``generator`` only

with optional attributes ``draw.fourth_moment = mu4`` (a float >= 1: it declares a product law
with that mu4 unless ``draw.product = False``) and ``draw.product`` (bool, default True).
``MODULE`` is importable or a file MODULE.py in the working directory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference, load_plugin

LawFunction = Callable[[tuple[int, ...], torch.Generator, torch.dtype], torch.Tensor]
"""(shape, generator, dtype) -> standardised draws of ``shape``."""


def is_user_spec(text: str) -> bool:
    """Whether ``text`` has the form MODULE:FUNCTION or PATH.py:FUNCTION."""
    return is_plugin_reference(text)


@dataclass(frozen=True)
class UserLaw:
    """A user function's law: ``function(shape, generator, dtype)`` returns standardised draws."""

    spec: str
    function: LawFunction = field(compare=False)
    fourth_moment: float | None = None
    product: bool = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        values = self.function(tuple(shape), generator, dtype)
        if not isinstance(values, torch.Tensor) or tuple(values.shape) != tuple(shape):
            got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values)
            raise ConfigError(
                f"covariate law {self.spec}: the function must return a tensor of shape "
                f"{tuple(shape)}, got {got}"
            )
        if values.is_complex() or not values.dtype.is_floating_point:
            raise ConfigError(f"covariate law {self.spec}: draw must return real floating-point "
                              f"numbers, got dtype {values.dtype}")
        return values.to(dtype)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def load_user_law(spec: str) -> UserLaw:
    """Import ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION`` (``iclab.utils.plugins``, the one
    loader of every plug-in) as a ``UserLaw``, checked on a seeded sample (``check_law``)."""
    if not is_user_spec(spec):
        raise ConfigError(
            f"covariate law {spec!r}: a user law is MODULE:FUNCTION or PATH.py:FUNCTION"
        )
    function = load_plugin(spec, "covariate law")
    if not callable(function):
        raise ConfigError(f"covariate law {spec!r}: {function!r} is not a function")
    mu4 = getattr(function, "fourth_moment", None)
    if mu4 is not None and (isinstance(mu4, bool) or not isinstance(mu4, int | float)
                            or not math.isfinite(mu4) or mu4 < 1):
        raise ConfigError(
            f"covariate law {spec!r}: fourth_moment must be a finite number >= 1 "
            f"(E z^4 >= (E z^2)^2 = 1), got {mu4!r}"
        )
    product = getattr(function, "product", True)
    if not isinstance(product, bool):
        raise ConfigError(f"covariate law {spec!r}: product must be True or False, got "
                          f"{product!r}")
    law = UserLaw(spec, function, None if mu4 is None else float(mu4), product)
    check_law(law)
    return law


PROBE_SHAPE = (16_384, 2, 2)
"""The seeded sample a user law is checked on: 65,536 draws, 4 coordinates per draw."""
PROBE_Z = 5.0
"""Standard errors a sample moment may stray from its declared value (a false alarm 1 in
1.7 million per check for a law that keeps its promise; the sample is seeded: deterministic)."""
MAX_FOURTH_MOMENT = 1000.0
"""The largest sample fourth moment a user law may show. Its checks' tolerances come from its
higher moments, which a law without a finite fourth moment (Cauchy, Student-t with NU <= 4)
does not have: its sample fourth moment grows without bound with the sample (about 8e10 for
65,536 Cauchy draws); a law with a finite one shows about its mu4."""


def check_law(law: UserLaw) -> None:
    """Draw a seeded sample of PROBE_SHAPE (float64, and a small float32 one) and check what
    a standardised law declares: the shape, finite real values, each coordinate's mean 0 and
    variance 1, uncorrelated coordinates, a finite fourth moment, and the declared mu4, each
    within PROBE_Z standard errors of the sample; ConfigError with one line otherwise."""
    from iclab.utils.seeding import make_generator

    name = f"covariate law {law.spec}"
    for shape, dtype in (((4, 3, 2), torch.float32), (PROBE_SHAPE, torch.float64)):
        try:
            values = law.sample_standard(shape, make_generator(0, "law-probe", fixed=True), dtype)
        except ConfigError:
            raise
        except (Exception, SystemExit) as error:  # the user's code: reported, not raised
            raise ConfigError(f"{name}: draw(shape, generator, dtype) failed "
                              f"({type(error).__name__}: {_one_line(error)[:160]})") from None
        if not bool(torch.isfinite(values).all()):
            raise ConfigError(f"{name}: draw returned non-finite values (NaN or infinity)")
    z = values.reshape(-1, PROBE_SHAPE[-1]).to(torch.float64)    # (N, k)
    _check_moments(name, z, law.fourth_moment)


def _check_moments(name: str, z: torch.Tensor, declared_mu4: float | None) -> None:
    count = z.shape[0]
    mean = z.mean(0)
    second = (z**2).mean(0)
    fourth = (z**4).mean(0)
    worst = float(fourth.max())
    if not worst <= MAX_FOURTH_MOMENT:
        raise ConfigError(f"{name}: the sample fourth moment is {worst:.3g}, more than "
                          f"{MAX_FOURTH_MOMENT:g}: the law has no finite fourth moment (or "
                          f"not one iclab can check); a covariate law needs E z^4 finite")
    mean_se = torch.sqrt(second / count)
    bad = (mean.abs() > PROBE_Z * mean_se).nonzero()
    if bad.numel():
        k = int(bad[0, 0])
        raise ConfigError(f"{name}: coordinate {k} has sample mean {float(mean[k]):.4g}, "
                          f"more than {PROBE_Z:g} standard errors ({float(mean_se[k]):.2g}) "
                          f"from 0: a covariate law must be standardised (mean 0, variance 1)")
    variance_se = torch.sqrt(torch.clamp(fourth - second**2, min=0.0) / count)
    bad = ((second - 1).abs() > PROBE_Z * variance_se + 1e-12).nonzero()
    if bad.numel():
        k = int(bad[0, 0])
        raise ConfigError(f"{name}: coordinate {k} has sample variance {float(second[k]):.4g},"
                          f" not 1 within {PROBE_Z:g} standard errors "
                          f"({float(variance_se[k]):.2g}): a covariate law must be "
                          f"standardised (mean 0, variance 1)")
    cross = (z.T @ z) / count                                      # (k, k)
    cross_se = torch.sqrt((z.T**2 @ z**2) / count / count)
    off = ~torch.eye(z.shape[1], dtype=torch.bool)
    if bool(((cross.abs() > PROBE_Z * cross_se) & off).any()):
        raise ConfigError(f"{name}: its coordinates are correlated (sample E z_j z_k up to "
                          f"{float((cross.abs() * off).max()):.3g}): a covariate law's "
                          f"coordinates must have identity covariance")
    if declared_mu4 is not None:
        eighth = (z**8).mean()
        mu4 = float(fourth.mean())
        se = float(torch.sqrt(torch.clamp(eighth - fourth.mean() ** 2, min=0.0) /
                              z.numel()))
        if abs(mu4 - declared_mu4) > PROBE_Z * se + 1e-12:
            raise ConfigError(f"{name}: declares fourth_moment = {declared_mu4:g} but its "
                              f"sample fourth moment is {mu4:.4g} (standard error {se:.2g})")
