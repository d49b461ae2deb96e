"""``iclab theory`` never drops an option: every option of the family optimum given with
--asymptotic or with a task pool, --seed outside 0 to 2**62 in every mode, and --seed where the
method draws nothing, is refused with one line naming it (exit 2, nothing on stdout); the
edges are accepted."""

from __future__ import annotations

import json

import pytest

from iclab.cli.main import main

ASYMPTOTIC = ["--asymptotic", "--tau", "0.5"]
POOL = ["--tasks", "2", "--d", "2", "--n", "4", "--sigma", "0.5"]
FAMILY = ["--d", "2", "--n", "4"]
FAMILY_ONLY = [(["--monte-carlo"], "--monte-carlo"), (["--precision", "0.1"], "--precision"),
               (["--bayes-prompts", "100"], "--bayes-prompts"), (["--layers", "2"], "--layers"),
               (["--layers", "2", "--preconditioned"], "--layers"),
               (["--shift", "w-scale", "--values", "1"], "--shift"),
               (["--precision", "0.01"], "--precision")]


def refused(argv: list[str], name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["theory", *argv])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert (code, out) == (2, ""), (argv, out, err)
    assert len(lines) == 1 and name in lines[0], lines


@pytest.mark.parametrize("mode", [ASYMPTOTIC, POOL], ids=["asymptotic", "pool"])
@pytest.mark.parametrize("extra, name", FAMILY_ONLY)
def test_family_options_are_refused_in_the_other_modes(
        mode: list[str], extra: list[str], name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    refused([*mode, *extra], name, capsys)


@pytest.mark.parametrize("mode", [[*ASYMPTOTIC, "--simulate-d", "3", "--repeats", "1"],
                                  POOL, [*FAMILY, "--sigma", "0.5"]],
                         ids=["asymptotic", "pool", "family"])  # each draws from the seed
def test_seed_range_both_ways(mode: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    for seed in ("-1", str(2**62 + 1)):
        refused([*mode, "--seed", seed], "--seed", capsys)
    for seed in ("0", str(2**62)):
        assert main(["theory", *mode, "--seed", seed, "--json"]) == 0
        json.loads(capsys.readouterr().out)


def test_seed_without_a_simulation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    refused([*ASYMPTOTIC, "--seed", "3"], "--seed", capsys)


def test_family_mode_still_takes_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", *FAMILY, "--layers", "2", "--shift", "w-scale", "--values",
                 "1", "--bayes-prompts", "0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["shift"] == "w-scale" and len(record["gd_steps_etas"]) == 2


@pytest.mark.parametrize("argv, name", [
    (["--precision", "0.1"], "--precision"),  # closed form
    (["--family", "two-layer-relu", "--precision", "0.5"], "--precision"),  # closed moments
    (["--x-law", "student-t:5", "--precision", "0.5"], "--precision"),  # fixed draws
    (["--x-law", "student-t:5", "--bayes-prompts", "100"], "--bayes-prompts"),
    (["--context-correlation", "0.5", "--bayes-prompts", "100"], "--bayes-prompts"),
    (["--family", "two-layer-relu", "--bayes-prompts", "100"], "--bayes-prompts"),
])
def test_family_options_its_method_does_not_use(argv: list[str], name: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    refused([*FAMILY, *argv], name, capsys)


@pytest.mark.parametrize("argv", [
    ["--family", "two-layer-relu", "--monte-carlo", "--precision", "0.5"],
    ["--family", "two-layer-relu", "--bayes-prompts", "0"],
    ["--bayes-prompts", "100"],
])
def test_family_options_where_they_apply(argv: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", *FAMILY, *argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["method"] == ("monte-carlo" if "--monte-carlo" in argv else "closed-form")


@pytest.mark.parametrize("argv", [
    ["--bayes-prompts", "0"],                               # Gamma* in closed form, no risk
    ["--sigma", "0"],                                        # the Bayes risk is exactly 0
    ["--sigma", "0.5", "--bayes-prompts", "0", "--layers", "2"],  # the L-step GD closed form
    ["--family", "two-layer-relu", "--bayes-prompts", "0"],  # closed moments
])
def test_seed_where_the_method_draws_nothing_is_refused(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Without --seed the same command prints its closed form; with it, one line."""
    assert main(["theory", *FAMILY, *argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "closed-form"
    refused([*FAMILY, *argv, "--seed", "0", "--json"], "--seed 0 does not apply", capsys)


@pytest.mark.parametrize("argv", [
    ["--sigma", "0.5"],                                      # the Bayes risk's Monte Carlo
    ["--bayes-prompts", "0", "--monte-carlo"],               # the span fit
    ["--family", "two-layer-relu", "--monte-carlo", "--bayes-prompts", "0"],
])
def test_seed_where_the_method_draws_is_taken(argv: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", *FAMILY, *argv, "--seed", "7", "--json"]) == 0
    first = capsys.readouterr().out
    assert main(["theory", *FAMILY, *argv, "--seed", "8", "--json"]) == 0
    assert json.loads(first) != json.loads(capsys.readouterr().out)  # the seed matters
