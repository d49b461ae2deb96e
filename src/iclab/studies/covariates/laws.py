"""Laws of the covariates' coordinates: standardised draws (mean 0, variance 1) and mu4.

A linear task with a covariate law draws z with coordinates from the law and sets
x = Sigma_x^(1/2) z (``iclab.studies.covariates.linear_law``). Each law here declares

- ``sample_standard(shape, generator, dtype)``: a tensor of ``shape`` (the last axis is the
  coordinate axis) of standardised draws, drawn only from ``generator``;
- ``fourth_moment``: mu4 = E[z_k^4] of one standardised coordinate (None where unknown);
- ``product``: whether the coordinates are independent (then with mu4 the optimum has a closed
  form, see ``iclab.studies.covariates.optimum``);
- ``spec``: the text ``parse_law`` reads it back from;
- optionally ``iid = True``: the coordinates are independent and identically distributed,
  so a draw's axes may be arranged in any order (every built-in law; samplers then draw in
  the layout they compute in).

Built in (``LAW_NAMES``), with their standardised fourth moments:

    gaussian         N(0, 1)                                mu4 = 3
    uniform          U(-sqrt 3, sqrt 3)                     mu4 = 9/5
    rademacher       +-1 with probability 1/2 each          mu4 = 1
    laplace          density exp(-sqrt 2 |z|) / sqrt 2      mu4 = 6
    student-t:NU     t_NU * sqrt((NU - 2) / NU), NU > 4     mu4 = 3 (NU - 2) / (NU - 4)

A Student-t with NU <= 4 has no finite fourth moment, so no optimum; it is refused. So is NU
above ``MAX_STUDENT_NU`` (1e6): its chi-squares (drawn in float32) overflow past about 1e38, and
past 1e6 the law is the Gaussian to within 6e-6 in mu4: use gaussian.

A user law is ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION``, a function
``draw(shape, generator, dtype)`` of standardised draws with an optional ``fourth_moment``
attribute (``iclab.studies.covariates.user_law``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from iclab.studies.covariates.user_law import UserLaw, is_user_spec, load_user_law
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import numpy_generator

__all__ = [
    "DEFAULT_LAW", "LAW_NAMES", "CovariateLaw", "GaussianLaw", "LaplaceLaw", "RademacherLaw",
    "StudentTLaw", "UniformLaw", "UserLaw", "allowed_laws", "load_user_law", "parse_law",
]

LAW_NAMES = ("gaussian", "uniform", "rademacher", "laplace", "student-t:NU")
DEFAULT_LAW = "gaussian"
MAX_STUDENT_NU = 1e6
"""The largest degrees of freedom of ``student-t:NU`` (module docstring)."""
"""The covariate law a linear family has unless given another: its name, the one value of
the default wherever a law is declared, passed or stored."""


class CovariateLaw(Protocol):
    """A law of standardised covariate coordinates (see the module docstring)."""

    @property
    def spec(self) -> str: ...

    @property
    def fourth_moment(self) -> float | None: ...

    @property
    def product(self) -> bool: ...

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        """Standardised draws of ``shape``, drawn only from ``generator``."""
        ...


def allowed_laws() -> str:
    """The allowed law names, for error messages."""
    return ", ".join((*LAW_NAMES, "MODULE:FUNCTION", "PATH.py:FUNCTION"))


@dataclass(frozen=True)
class GaussianLaw:
    """z ~ N(0, 1) coordinates: mu4 = 3."""

    spec: str = field(default="gaussian", init=False)
    fourth_moment: float = field(default=3.0, init=False)
    product: bool = field(default=True, init=False)
    iid = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        return torch.randn(shape, generator=generator, dtype=dtype, device=generator.device)


@dataclass(frozen=True)
class UniformLaw:
    """z ~ U(-sqrt 3, sqrt 3) coordinates: mu4 = 9/5."""

    spec: str = field(default="uniform", init=False)
    fourth_moment: float = field(default=9.0 / 5.0, init=False)
    product: bool = field(default=True, init=False)
    iid = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        u = torch.rand(shape, generator=generator, dtype=dtype, device=generator.device)
        return u.mul_(2 * math.sqrt(3.0)).sub_(math.sqrt(3.0))     # (2 u - 1) sqrt 3


@dataclass(frozen=True)
class RademacherLaw:
    """z = +-1 with probability 1/2 each: mu4 = 1."""

    spec: str = field(default="rademacher", init=False)
    fourth_moment: float = field(default=1.0, init=False)
    product: bool = field(default=True, init=False)
    iid = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        bits = torch.randint(0, 2, shape, generator=generator, device=generator.device)
        return (2 * bits - 1).to(dtype)


@dataclass(frozen=True)
class LaplaceLaw:
    """z = (E1 - E2) / sqrt 2 with E1, E2 ~ Exp(1) independent: variance 1, mu4 = 6."""

    spec: str = field(default="laplace", init=False)
    fourth_moment: float = field(default=6.0, init=False)
    product: bool = field(default=True, init=False)
    iid = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        u = torch.rand((2, *shape), generator=generator, dtype=dtype, device=generator.device)
        exponentials = -torch.log1p(-u)                       # 1 - u in (0, 1]: finite
        return (exponentials[0] - exponentials[1]) / math.sqrt(2.0)


@dataclass(frozen=True)
class StudentTLaw:
    """z = t_nu sqrt((nu - 2) / nu), t_nu = g / sqrt(V / nu), g ~ N(0, 1), V ~ chi2_nu.

    nu > 4 (finite fourth moment): mu4 = 3 (nu - 2) / (nu - 4) = 3 + 6 / (nu - 4).
    """

    nu: float

    def __post_init__(self) -> None:
        if isinstance(self.nu, bool) or not isinstance(self.nu, int | float) \
                or not math.isfinite(self.nu) or not 4 < self.nu <= MAX_STUDENT_NU:
            raise ConfigError(
                f"student-t needs degrees of freedom 4 < NU <= {MAX_STUDENT_NU:g} (a finite "
                f"fourth moment; above, use gaussian), got {self.nu!r}"
            )

    @property
    def spec(self) -> str:
        return f"student-t:{self.nu:g}"

    @property
    def fourth_moment(self) -> float:
        return 3.0 + 6.0 / (self.nu - 4.0)              # = 3 (nu - 2) / (nu - 4)

    @property
    def product(self) -> bool:
        return True

    iid = True

    def sample_standard(
        self, shape: tuple[int, ...], generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        device = generator.device
        g = torch.randn(shape, generator=generator, dtype=dtype, device=device)
        # the chi-squares from NumPy's gamma: 2.5 times faster than torch's on a CPU, and
        # they were most of a student-t batch's cost (benchmarks/README.md)
        gammas = numpy_generator(generator).standard_gamma(self.nu / 2, size=shape,
                                                           dtype=np.float32)
        chi2 = torch.from_numpy(gammas).to(device=device, dtype=dtype).mul_(2)
        return g * torch.sqrt((self.nu - 2.0) / chi2)


def _parse_student_t(text: str) -> StudentTLaw:
    value = text.split(":", 1)[1]
    try:
        nu = float(value)
    except ValueError:
        raise ConfigError(
            f"covariate law {text!r}: NU must be a number in (4, 1e6], got {value!r}"
        ) from None
    if not math.isfinite(nu) or not 4 < nu <= MAX_STUDENT_NU:
        raise ConfigError(
            f"covariate law {text!r}: student-t needs 4 < NU <= {MAX_STUDENT_NU:g} (a finite "
            f"fourth moment; above {MAX_STUDENT_NU:g} the law is Gaussian to 6e-6 in mu4: use "
            f"gaussian), got {value!r}"
        )
    return StudentTLaw(nu)


def parse_law(text: str) -> CovariateLaw:
    """The law named by ``text``: a built-in name, student-t:NU, MODULE:FUNCTION or
    PATH.py:FUNCTION. Anything else raises ConfigError with one line."""
    if not isinstance(text, str):
        raise ConfigError(f"covariate law must be a name, got {text!r}; allowed: "
                          f"{allowed_laws()}")
    builtin: dict[str, CovariateLaw] = {
        "gaussian": GaussianLaw(), "uniform": UniformLaw(), "rademacher": RademacherLaw(),
        "laplace": LaplaceLaw(),
    }
    if text in builtin:
        return builtin[text]
    if text == "student-t":
        raise ConfigError("covariate law 'student-t' needs its degrees of freedom: "
                          "student-t:NU with 4 < NU <= 1e6")
    if text.startswith("student-t:"):
        return _parse_student_t(text)
    if is_user_spec(text):
        return load_user_law(text)
    raise ConfigError(f"unknown covariate law {text!r}; allowed: {allowed_laws()}")
