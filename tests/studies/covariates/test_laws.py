"""Covariate laws: standardised draws, fourth moments from the densities, parsing, user laws."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from pathlib import Path

import mpmath as mp
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.studies.covariates.laws import (
    LAW_NAMES,
    GaussianLaw,
    StudentTLaw,
    UserLaw,
    load_user_law,
    parse_law,
)
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

DRAWS = 400_000
SQRT3 = mp.sqrt(3)


def _student_density(nu: float) -> Callable[[mp.mpf], mp.mpf]:
    """The density of t_nu * sqrt((nu - 2) / nu) (unit variance)."""
    nu_m = mp.mpf(nu)
    scale = mp.sqrt((nu_m - 2) / nu_m)
    constant = mp.gamma((nu_m + 1) / 2) / (mp.sqrt(nu_m * mp.pi) * mp.gamma(nu_m / 2))

    def density(z: mp.mpf) -> mp.mpf:
        t = z / scale
        return constant * (1 + t * t / nu_m) ** (-(nu_m + 1) / 2) / scale

    return density


# The standardised densities, written from the laws' textbook definitions (not the code).
DENSITIES: dict[str, tuple[Callable[[mp.mpf], mp.mpf], list[mp.mpf]]] = {
    "gaussian": (lambda z: mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi), [-mp.inf, 0, mp.inf]),
    "uniform": (lambda z: 1 / (2 * SQRT3), [-SQRT3, SQRT3]),
    "laplace": (lambda z: mp.exp(-mp.sqrt(2) * abs(z)) / mp.sqrt(2), [-mp.inf, 0, mp.inf]),
    "student-t:5": (_student_density(5), [-mp.inf, 0, mp.inf]),
    "student-t:12": (_student_density(12), [-mp.inf, 0, mp.inf]),
}


def _moment(spec: str, k: int) -> float:
    density, interval = DENSITIES[spec]
    return float(mp.quad(lambda z: z**k * density(z), interval))


def _cdf(spec: str, q: float) -> float:
    density, interval = DENSITIES[spec]
    return float(mp.quad(density, [interval[0], min(mp.mpf(q), interval[-1])]))


def _draws(spec: str, seed: int = 0, count: int = DRAWS) -> torch.Tensor:
    law = parse_law(spec)
    return law.sample_standard((count,), make_generator(seed, "test-law"), torch.float64)


@pytest.mark.parametrize("spec", list(DENSITIES))
def test_fourth_moment_equals_the_densitys(spec: str) -> None:
    assert _moment(spec, 0) == pytest.approx(1, abs=1e-12)
    assert _moment(spec, 2) == pytest.approx(1, abs=1e-10)
    assert parse_law(spec).fourth_moment == pytest.approx(_moment(spec, 4), rel=1e-10)


def test_rademacher_fourth_moment_and_values() -> None:
    z = _draws("rademacher", count=10_000)
    assert set(z.unique().tolist()) == {-1.0, 1.0}
    assert parse_law("rademacher").fourth_moment == 1.0          # z^4 = 1 for every draw


@pytest.mark.parametrize("spec", ["gaussian", "uniform", "rademacher", "laplace", "student-t:12"])
def test_draws_have_mean_zero_variance_one_and_the_fourth_moment(spec: str) -> None:
    z = _draws(spec)
    n = z.numel()
    for power, expected in ((1, 0.0), (2, 1.0), (4, parse_law(spec).fourth_moment)):
        values = z**power
        se = float(values.std()) / math.sqrt(n)
        assert abs(float(values.mean()) - expected) <= 4 * se, (spec, power)


@pytest.mark.parametrize("spec", list(DENSITIES))
def test_draws_follow_the_density(spec: str) -> None:
    z = _draws(spec, seed=1, count=200_000)
    for q in (-1.5, -0.5, 0.3, 1.2):
        p = _cdf(spec, q)
        se = math.sqrt(p * (1 - p) / z.numel())
        assert abs(float((z <= q).double().mean()) - p) <= 4 * se, (spec, q)


@pytest.mark.parametrize("spec", ["gaussian", "uniform", "rademacher", "laplace", "student-t:5"])
def test_draws_are_reproducible_and_typed(spec: str) -> None:
    law = parse_law(spec)
    a = law.sample_standard((3, 4, 5), make_generator(7, "x"))
    b = law.sample_standard((3, 4, 5), make_generator(7, "x"))
    c = law.sample_standard((3, 4, 5), make_generator(8, "x"))
    assert a.shape == (3, 4, 5) and a.dtype == torch.float32
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.isfinite(a).all()
    assert law.product and parse_law(law.spec) == law


def test_uniform_draws_fill_the_standardised_interval() -> None:
    z = _draws("uniform", count=100_000)
    assert float(z.abs().max()) <= math.sqrt(3)
    assert float(z.abs().max()) > 0.999 * math.sqrt(3)


def test_builtin_names_parse() -> None:
    assert isinstance(parse_law("gaussian"), GaussianLaw)
    law = parse_law("student-t:5")
    assert isinstance(law, StudentTLaw) and law.nu == 5.0 and law.spec == "student-t:5"
    assert "student-t:NU" in LAW_NAMES


@pytest.mark.parametrize("spec", ["student-t:3", "student-t:4", "student-t:-1", "student-t:inf",
                                  "student-t:nan", "student-t:five", "student-t:", "student-t"])
def test_student_t_without_finite_fourth_moment_is_refused(spec: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_law(spec)
    assert "\n" not in str(error.value) and "student-t" in str(error.value)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_student_t_accepts_exactly_nu_in_four_to_a_million(nu: float) -> None:
    if math.isfinite(nu) and 4 < nu <= 1e6:
        law = parse_law(f"student-t:{nu!r}")
        assert law.fourth_moment is not None and law.fourth_moment >= 3
    else:
        with pytest.raises(ConfigError) as error:
            parse_law(f"student-t:{nu!r}")
        assert "\n" not in str(error.value)


def test_student_t_at_its_largest_nu_draws_finite_unit_variance_and_beyond_is_refused() -> None:
    """NU = 1e6 (the edge) draws finite coordinates with variance 1 and mu4 about 3; 1e6 + 1 and
    1e300 (drawn as NaN before the bound) are one line naming the range."""
    z = parse_law("student-t:1e6").sample_standard((400_000,), torch.Generator().manual_seed(0),
                                                 torch.float64)
    assert bool(torch.isfinite(z).all())
    assert abs(float(z.var()) - 1.0) < 0.01                       # 400k draws: sd about 0.0022
    assert abs(float(z.pow(4).mean()) - 3.0) < 0.1                 # sd about 0.02
    for spec in ("student-t:1000001", "student-t:1e300"):
        with pytest.raises(ConfigError, match=r"4 < NU <= 1e\+06") as error:
            parse_law(spec)
        assert "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="NU <= 1e"):
        StudentTLaw(1e300)


@given(st.text(max_size=30).filter(lambda s: ":" not in s))
def test_unknown_names_are_refused_with_one_line(text: str) -> None:
    if text in ("gaussian", "uniform", "rademacher", "laplace"):
        assert parse_law(text).spec == text
        return
    with pytest.raises(ConfigError) as error:
        parse_law(text)
    assert "\n" not in str(error.value)


@given(st.from_regex(r"\A[a-z]{1,8}\.py:[0-9][a-z]{0,3}\Z"))
def test_malformed_user_specs_are_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_law(text)


USER_MODULE = textwrap.dedent(
    """
    import math
    import torch

    def two_point(shape, generator, dtype):
        # +-1 law written another way: sign of a uniform draw
        u = torch.rand(shape, generator=generator, dtype=dtype)
        return torch.where(u < 0.5, -1.0, 1.0).to(dtype)

    two_point.fourth_moment = 1.0

    def unknown(shape, generator, dtype):
        u = torch.rand(shape, generator=generator, dtype=dtype)
        return (2 * u - 1) * math.sqrt(3.0)

    def wrong_shape(shape, generator, dtype):
        return torch.zeros(3)

    def bad_moment(shape, generator, dtype):
        return torch.zeros(shape)

    bad_moment.fourth_moment = 0.5
    """
)


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "iclab_test_user_law.py"
    path.write_text(USER_MODULE)
    return path


def test_user_law_from_a_path(user_file: Path) -> None:
    law = parse_law(f"{user_file}:two_point")
    assert isinstance(law, UserLaw) and law.fourth_moment == 1.0 and law.product
    z = law.sample_standard((1000,), make_generator(0, "u"), torch.float64)
    assert set(z.unique().tolist()) == {-1.0, 1.0}
    assert parse_law(f"{user_file}:unknown").fourth_moment is None


def test_user_law_from_a_module(user_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(user_file.parent)
    law = load_user_law("iclab_test_user_law:unknown")
    z = law.sample_standard((200_000,), make_generator(0, "u"), torch.float64)
    assert abs(float(z.mean())) < 4 / math.sqrt(z.numel())
    assert abs(float((z**4).mean()) - 1.8) < 4 * float((z**4).std()) / math.sqrt(z.numel())


@pytest.mark.parametrize("suffix", ["missing_function", "bad_moment"])
def test_bad_user_laws_are_refused(user_file: Path, suffix: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_law(f"{user_file}:{suffix}")
    assert "\n" not in str(error.value)


def test_user_law_with_wrong_shape_is_refused_when_loaded(user_file: Path) -> None:
    with pytest.raises(ConfigError, match=r"must return a tensor of shape \(4, 3, 2\)"):
        parse_law(f"{user_file}:wrong_shape")


def test_missing_module_and_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot import"):
        parse_law("iclab_no_such_module_xyz:draw")
    with pytest.raises(ConfigError, match="no such file"):
        parse_law(f"{tmp_path / 'nothing.py'}:draw")


def test_user_file_that_fails_to_load_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken_law.py"
    path.write_text("def draw(shape, generator, dtype)\n    return None\n")
    with pytest.raises(ConfigError, match=r"importing .* failed .SyntaxError") as error:
        parse_law(f"{path}:draw")
    assert "\n" not in str(error.value)
