"""The ``lu-asymptotic`` claim kind: Lu et al.'s asymptotic theory of ridge-fitted linear
attention (docs/theory.md section 16) against the finite-d simulation, without training runs.

The kind computes everything from its parameters (``needs_runs`` false: its claims name no
group): the closed forms of ``iclab.studies.asymptotic.formulas`` and the seeded finite-d
simulations of ``iclab.studies.asymptotic.simulation``, cached in the claim context so that the
figure reuses them. One option, ``measure``:

- ``double-descent``: the simulated e_ICL at dimension ``d`` and a small ``lam`` over the
  ``taus`` grid peaks at tau within ``tolerance`` of the tau where the asymptotic e_ICL at the
  same lam peaks over the grid (1 on a grid holding 1: Result 1, lam -> 0, diverges there).
  One rule; a theory whose peak moved by twice the tolerance fails.
- ``kappa-transition``: over the ``kappas`` grid at dimension ``d``: at the smallest kappa
  (the pool is memorised: e_IDG well below e_ICL) and at the largest (the two meet), the
  simulated e_IDG / e_ICL is within ``tolerance`` of the asymptotic ratio at that kappa.
- ``convergence``: for each of ``points`` ([tau, alpha, kappa, rho, lam]), e_ICL and e_IDG
  simulated at each of ``dims`` over ``repeats`` pretraining sets (at least 2: the standard
  errors are the spread between sets) are extrapolated to d -> inf as e + b/d (``rules``);
  the claim holds when both extrapolations are within ``tolerance`` of the theory. With
  ``stderr``, sets are added at each d until both standard errors are at most it
  (``simulate_to_stderr``; ``repeats`` is then the least number of sets), and the claim holds
  only where they reached it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.parameters import ClaimParameter, integer, number_list
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.studies.asymptotic.claim_simulations import Point, gap, reached, simulated
from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.formulas import check_inputs
from iclab.studies.asymptotic.rules import converges, ratio_matches
from iclab.studies.asymptotic.simulation import check_simulation, most_repeats
from iclab.utils.errors import ConfigError


def _number(low: float, high: float) -> Any:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                low <= value <= high):
            raise ConfigError(f"must be a number from {low:g} to {high:g}, got {value!r}")
        return float(value)
    return check


def _kappa(value: Any) -> float:
    if value == "inf":
        return math.inf
    return float(_number(1e-6, 1e6)(value))


def _points(value: Any) -> tuple[Point, ...]:
    """A list of 1 to 8 [tau, alpha, kappa, rho, lam] lists (kappa may be "inf")."""
    if not isinstance(value, list) or not 1 <= len(value) <= 8 or not all(
            isinstance(p, list) and len(p) == 5 for p in value):
        raise ConfigError(f"must be a list of 1 to 8 [tau, alpha, kappa, rho, lam] lists, got "
                          f"{value!r}")
    out = []
    for raw in value:
        point = (float(_number(0, 1e6)(raw[0])), float(_number(0, 1e6)(raw[1])),
                 _kappa(raw[2]), float(_number(0, 1e6)(raw[3])), float(_number(0, 1e6)(raw[4])))
        asymptotic_errors(*point)  # checks the values; refuses tau = 1 with lam = 0
        out.append(point)
    return tuple(out)


class LuAsymptoticClaim(ClaimKind):
    name = "lu-asymptotic"
    needs_runs = False
    options: ClassVar[dict[str, tuple[str, ...]]] = {
        "measure": ("convergence", "double-descent", "kappa-transition")}
    statements: ClassVar[dict[str, str]] = {
        "convergence": "the finite-d ridge fit's held-out errors approach the asymptotic ones "
                       "as d grows",
        "double-descent": "e_ICL peaks at tau = 1 (n = d^2 prompts) at small lambda",
        "kappa-transition": "small task diversity: e_IDG well below e_ICL (the pool is "
                            "memorised); large: the two meet",
    }
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "points": ClaimParameter("convergence: [tau, alpha, kappa, rho, lam] lists", _points),
        "dims": ClaimParameter("convergence: the dimensions d, increasing",
                               number_list(2, 4), (20, 40)),
        "repeats": ClaimParameter("pretraining sets per simulation (convergence: at least 2, "
                                  "or a list, one per d in order, cut to the length of dims; "
                                  "with stderr, the least)", lambda v: v, 2),
        "stderr": ClaimParameter("convergence: draw pretraining sets until the standard "
                                 "errors of e_ICL and e_IDG at each d are at most this",
                                 _number(1e-6, 1.0)),
        "taus": ClaimParameter("double-descent: the tau grid", number_list(3, 20)),
        "kappas": ClaimParameter("kappa-transition: the kappa grid", number_list(2, 20)),
        "tau": ClaimParameter("kappa-transition: tau", _number(1e-3, 1e3), 2.0),
        "alpha": ClaimParameter("alpha (N = alpha d)", _number(1e-3, 1e3), 1.0),
        "kappa": ClaimParameter("double-descent: kappa (or \"inf\")", _kappa, math.inf),
        "rho": ClaimParameter("label noise variance", _number(0, 1e3), 0.1),
        "lam": ClaimParameter("ridge penalty", _number(0, 1e3), 0.0),
        "d": ClaimParameter("double-descent, kappa-transition: the simulated d",
                            integer(2, 200), 40),
        "seed": ClaimParameter("seed of the simulations", integer(0, 2**62), 0),
        "test_prompts": ClaimParameter("held-out prompts per error", integer(100, 10**6),
                                       4000),
    }

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        """The declared checks, then, at load (before any run of a sweep): the measure's
        required grid or points, its repeats (convergence: at least 2 per d) and every
        simulation's work bound (``check_simulation``)."""
        p = super().validate_parameters(raw, where)
        measure = raw.get("measure", self.options["measure"][0])
        if measure not in self.options["measure"]:
            return p  # the option's own check names it
        key = {"convergence": "points", "double-descent": "taus",
               "kappa-transition": "kappas"}[measure]
        if p[key] is None:
            raise ConfigError(f"{where}: lu-asymptotic {measure} needs {key}")
        dims = [int(d) for d in p["dims"]] if measure == "convergence" else [int(p["d"])]
        if dims != sorted(dims) or not all(float(d).is_integer() and d >= 2 for d in p["dims"]):
            raise ConfigError(f"{where}: dims must be increasing integers >= 2, got "
                              f"{list(p['dims'])}")
        if p["stderr"] is not None and measure != "convergence":
            raise ConfigError(f"{where}: stderr applies to measure convergence only, not "
                              f"{measure} (its simulations use repeats as given)")
        least, count = (2, len(dims)) if measure == "convergence" else (1, 1)
        raw_repeats = p["repeats"]
        values = [raw_repeats] * count if isinstance(raw_repeats, int) else list(
            raw_repeats)[:count] if isinstance(raw_repeats, list) else []
        if len(values) != count or not all(
                isinstance(v, int) and not isinstance(v, bool) and least <= v <= 4096
                for v in values):
            raise ConfigError(f"{where}: repeats must be an integer from {least} to 4096 or a "
                              f"list of {count} of them, got {raw_repeats!r}")
        points: list[Point] = list(p["points"]) if measure == "convergence" else [
            (float(x), p["alpha"], p["kappa"], p["rho"], p["lam"]) if measure ==
            "double-descent" else (p["tau"], p["alpha"], float(x), p["rho"], p["lam"])
            for x in p[key]]
        for point in points:
            try:
                check_inputs(*point)
            except ConfigError as error:
                raise ConfigError(f"{where}: {str(error).removeprefix('--')}") from None
            for d, repeats in zip(dims, values, strict=True):
                try:
                    check_simulation(d, point[0], point[1], point[2], repeats,
                                     p["test_prompts"])
                except ConfigError as error:
                    raise ConfigError(f"{where}: {error}") from None
                most = most_repeats(d, point[0], point[1], point[2], p["test_prompts"])
                if p["stderr"] is not None and repeats > most:
                    raise ConfigError(f"{where}: repeats {repeats} at d = {d}: with stderr "
                                      f"the least sets must be at most {most}")
        return p

    def _claim(self, spec: ClaimSpec, what: str, holds: bool, metric: str, value: float,
               theory: float, label: str) -> Claim:
        return Claim(f"{spec.section}: {self.statement(spec)} [{what}]", bool(holds), metric,
                     float(value), float(theory), spec.tolerance, spec.section, spec.group,
                     what, label, spec.source)

    def _repeats(self, spec: ClaimSpec, count: int, least: int = 1) -> list[int]:
        raw = spec.parameters["repeats"]
        values = [raw] * count if isinstance(raw, int) else list(raw)[:count]
        if len(values) != count or not all(
                isinstance(v, int) and least <= v <= 4096 for v in values):
            raise ConfigError(f"lu-asymptotic: repeats must be an integer from {least} to 4096 "
                              f"or a list of {count} of them, got {raw!r}")
        return values

    def curves(self, spec: ClaimSpec, context: ClaimContext) -> dict[str, Any]:
        """The numbers the claim and the figure read (simulations cached)."""
        p = spec.parameters
        measure, seed, prompts = self.option(spec), p["seed"], p["test_prompts"]
        if measure == "convergence":
            if p["points"] is None:
                raise ConfigError("lu-asymptotic convergence: points is required")
            dims = [int(d) for d in p["dims"]]
            repeats = self._repeats(spec, len(dims), least=2)  # the spread between sets
            rows = []
            for point in p["points"]:
                sims = [simulated(context, point, d, r, seed, prompts, p["stderr"])
                        for d, r in zip(dims, repeats, strict=True)]
                rows.append((point, [gap(point, s) for s in sims], sims))
            return {"dims": dims, "rows": rows}
        grid_key = "taus" if measure == "double-descent" else "kappas"
        if p[grid_key] is None:
            raise ConfigError(f"lu-asymptotic {measure}: {grid_key} is required")
        grid = sorted(float(v) for v in p[grid_key])
        (count,) = self._repeats(spec, 1)
        points: list[Point] = [
            (x, p["alpha"], p["kappa"], p["rho"], p["lam"]) if measure == "double-descent"
            else (p["tau"], p["alpha"], x, p["rho"], p["lam"]) for x in grid]
        for point in points:
            check_inputs(*point)
        sims = [simulated(context, point, p["d"], count, seed, prompts) for point in points]
        return {"grid": grid, "points": points, "sims": sims}

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        data, measure, p = self.curves(spec, context), self.option(spec), spec.parameters
        if measure == "convergence":
            dims, claims = data["dims"], []
            for point, _, sims in data["rows"]:
                theory = asymptotic_errors(*point)
                checks = [(name, *converges(
                    dims, [getattr(sim, f"e_{name}") for sim in sims],
                    [getattr(sim, f"e_{name}_stderr") for sim in sims], value,
                    spec.tolerance), value) for name, value in (("icl", theory.e_icl),
                                                                 ("idg", theory.e_idg))]
                name, _, estimate, stderr, value = max(
                    checks, key=lambda check: abs(check[2] - check[4]))
                kappa = "inf" if math.isinf(point[2]) else f"{point[2]:g}"
                what = (f"tau={point[0]:g}, alpha={point[1]:g}, kappa={kappa}, "
                        f"rho={point[3]:g}, lam={point[4]:g}; d={', '.join(map(str, dims))}")
                sets = ", ".join(str(sim.repeats) for sim in sims)
                asked, precise = p["stderr"], all(reached(sim, p["stderr"]) for sim in sims)
                sized = "" if asked is None else (
                    f"; each d's standard errors {'at most' if precise else 'NOT within'} "
                    f"{asked:g}, the stderr asked for")
                claims.append(self._claim(
                    spec, what, all(check[1] for check in checks) and precise,
                    f"e_{name.upper()} extrapolated to d -> inf as e + b/d (the worse of e_ICL "
                    f"and e_IDG; standard error {stderr:.2g}, over {sets} pretraining sets"
                    f"{sized}); holds when both are within tolerance of the theory", estimate,
                    value, f"|e_hat - theory| <= {spec.tolerance:g}"))
            return claims
        grid, sims = data["grid"], data["sims"]
        if measure == "double-descent":
            peak = grid[max(range(len(grid)), key=lambda i: sims[i].e_icl)]
            exact = [asymptotic_errors(*point).e_icl for point in data["points"]]
            theory_peak = grid[max(range(len(grid)), key=lambda i: exact[i])]
            what = (f"d={p['d']}, lam={p['lam']:g}, alpha={p['alpha']:g}, kappa="
                    f"{p['kappa']:g}, rho={p['rho']:g}; taus {grid[0]:g} to {grid[-1]:g}")
            return [self._claim(
                spec, what, abs(peak - theory_peak) <= spec.tolerance,
                "tau of the simulated e_ICL's peak over the grid; theory: the tau of the "
                "asymptotic e_ICL's peak over the same grid at the same lam (Result 1 "
                "diverges at tau = 1 as lam -> 0); holds when |value - theory| <= tolerance",
                peak, theory_peak, f"|tau - theory| <= {spec.tolerance:g}")]
        what = f"d={p['d']}, tau={p['tau']:g}, alpha={p['alpha']:g}, rho={p['rho']:g}, " \
               f"lam={p['lam']:g}"
        claims = []
        for index in (0, len(grid) - 1):
            theory = asymptotic_errors(*data["points"][index])
            expected = theory.e_idg / theory.e_icl
            value = sims[index].e_idg / sims[index].e_icl
            claims.append(self._claim(
                spec, f"{what}; kappa={grid[index]:g}",
                ratio_matches(value, expected, spec.tolerance),
                "e_IDG / e_ICL simulated (theory: the asymptotic ratio at this kappa); holds "
                "when within tolerance of it", value, expected, f"{spec.tolerance:g}"))
        return claims

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.section, self.name

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        from iclab.studies.asymptotic.figure import draw

        _, _, out_dir = context.sweep("the lu-asymptotic figure")
        panels = [(self.option(spec), spec, self.curves(spec, context)) for spec in claims]
        return draw(panels, claims[0].section, out_dir)
