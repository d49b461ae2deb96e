"""``iclab models``, ``iclab families`` and ``iclab studies``: what can be trained, on what,
and which studies added them (each from the command's registries)."""

from __future__ import annotations

import json
from typing import Any

import click

from iclab.experiments.registries import Registries
from iclab.models.hooks import describe as describe_hooks
from iclab.models.registry import ModelRegistry
from iclab.tasks.base import TaskFamily
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.fields import default_of, describe_allowed, field_infos


def model_rows(registry: ModelRegistry) -> list[dict[str, Any]]:
    """One JSON-ready description per registered model: name, description, options,
    capabilities."""
    rows = []
    for model_class in registry.models():
        options = {}
        for name, (f, info) in field_infos(model_class.options_class).items():
            default = default_of(f)
            options[name] = {"default": default, "allowed": describe_allowed(info),
                             "help": info.help}
        rows.append({"name": model_class.name, "description": model_class.description,
                     "options": options,
                     "capabilities": {"readout": model_class.has_readout,
                                      "statistics": model_class.has_statistics,
                                      "exact_loss": model_class.has_exact_loss,
                                      "prefix_predictions":
                                          model_class.has_prefix_predictions},
                     "hook_points": describe_hooks(model_class)})
    return rows


def _probe(registry: FamilyRegistry, name: str) -> Any:
    """A small instance of the family, to ask its capabilities."""
    return registry.make_family(name, 2, 2, 0.5)


def family_rows(families: FamilyRegistry, models: ModelRegistry) -> list[dict[str, Any]]:
    """One JSON-ready description per family: name, description, parameters, capabilities,
    and which models, samplers and exact paths apply."""
    rows = []
    for entry in families.entries():
        task = _probe(families, entry.name)
        samplers = ["prompts"]
        statistic_models = [m.name for m in models.models() if m.has_statistics]
        if task.statistics and statistic_models:
            samplers.insert(0, "statistics")
        exact_models = [m.name for m in models.models() if m.has_exact_loss] \
            if task.gaussian else []
        options = {name: info.help for cls in families.option_owners(entry.name)
                   for name, (_, info) in field_infos(cls).items()}
        rows.append({
            "name": entry.name, "description": entry.description,
            "parameters": options,
            "capabilities": {"statistics": task.statistics, "gaussian": task.gaussian,
                             "rotation_invariant": bool(task.rotation_invariant),
                             "sign_symmetric": bool(task.sign_symmetric)},
            "optimum": "the family's own" if type(task).own_optimum is not
                TaskFamily.own_optimum else "closed form" if task.gaussian or (
                task.rotation_invariant and task.gd_moments()
                is not None) else "Monte Carlo",
            "models": list(models.names), "samplers": samplers, "exact": exact_models,
        })
    return rows


@click.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@click.pass_obj
def models_command(registries: Registries, as_json: bool) -> None:
    """List the registered models with their options and capabilities.

    A model of your own is named MODULE:CLASS or path/to/file.py:CLASS on iclab train.
    """
    rows = model_rows(registries.models)
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        caps = ", ".join(name for name, has in row["capabilities"].items() if has) or "none"
        click.echo(f"{row['name']}: {row['description']}\n  capabilities: {caps}")
        hooks = ", ".join(f"{hook['name']}{'.l' if hook['per_layer'] else ''} {hook['shape']}"
                          for hook in row["hook_points"]) or "none"
        click.echo(f"  hook points: {hooks}")
        for name, option in row["options"].items():
            click.echo(f"  --{name.replace('_', '-'):<16} {option['allowed']}; default "
                       f"{option['default']}. {option['help']}")
    click.echo("Your own: --model MODULE:CLASS or --model path/to/file.py:CLASS "
               "(a subclass of iclab.models.Model).")


@click.command("families")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@click.pass_obj
def families_command(registries: Registries, as_json: bool) -> None:
    """List the task families that iclab train --family accepts, with their parameters and
    which models, samplers and exact paths apply."""
    rows = family_rows(registries.families, registries.models)
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(f"{row['name']}: {row['description']}")
        for name, text in row["parameters"].items():
            click.echo(f"  --{name.replace('_', '-'):<10} {text}")
        caps = ", ".join(name for name, has in row["capabilities"].items() if has) or "none"
        click.echo(f"  capabilities: {caps}; optimum: {row['optimum']}; samplers: "
                   f"{', '.join(row['samplers'])}; exact training: "
                   f"{', '.join(row['exact']) or 'no'}; models: {', '.join(row['models'])}")
    click.echo("Your own: --family MODULE:FUNCTION or --family path/to/file.py:FUNCTION.")


def study_rows(registries: Registries) -> list[dict[str, Any]]:
    """One JSON-ready description per study of the command: name, description, the studies
    it requires, and what it adds (models, families, claim kinds, commands, theory modes, run
    outputs)."""
    rows = []
    for study in registries.studies:
        rows.append({
            "name": study.name, "description": study.description,
            "requires": list(study.requires),
            "models": [m.name for m in study.models()],
            "families": [entry.name for entry in study.families()],
            "family_extensions": [f"{e.name} ({', '.join(e.families)})"
                                  for e in study.family_extensions()],
            "claim_kinds": [kind.name for kind in study.claim_kinds()],
            "commands": len(study.commands()),
            "theory_modes": [mode.name for mode in study.theory_modes()],
            "theory_additions": [addition.name for addition in study.theory_additions()],
            "run_outputs": [output.name for output in study.run_outputs()],
        })
    return rows


@click.command("studies")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@click.pass_obj
def studies_command(registries: Registries, as_json: bool) -> None:
    """List the studies this command has (iclab's own and the installed or --study ones),
    with what each adds."""
    rows = study_rows(registries)
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(f"{row['name']}: {row['description']}")
        for key in ("requires", "models", "families", "family_extensions", "claim_kinds",
                    "theory_modes", "theory_additions", "run_outputs"):
            if row[key]:
                click.echo(f"  {key.replace('_', ' ')}: {', '.join(row[key])}")
    click.echo("Your own: iclab --study FILE.py:STUDY COMMAND ..., or an installed package "
               "listing it under the iclab.studies entry points.")
