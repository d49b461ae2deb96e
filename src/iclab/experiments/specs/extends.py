"""Specs that extend each other: ``extends = "base.toml"`` and a few overriding keys.

A spec with ``extends`` starts from its base (a file beside it, or a spec shipped with iclab
such as ``reproduce.toml``) and changes it:

- ``name``, ``description``: the extending spec's, where given;
- ``[defaults]``, ``[covariances]``, ``[sections]``, ``[budgets]``: merged key by key, the
  extending spec's keys winning;
- ``[[groups]]``: a group whose name is in the base updates that group key by key (``drop =
  true`` removes it, and the base's claims on it); a new name is added;
  ``[override_groups]`` sets keys in every group,
  except the keys the extending spec gives for that group itself;
- ``[[claims]]``: the base's claims, each updated by ``[override_claims]`` (a tolerance, say),
  then the extending spec's own claims. ``override_claims`` is a table, or a list of tables
  (``[[override_claims]]``) applied in order; a table with ``kinds = [...]`` applies only to
  the inherited claims of those kinds;
- ``[[measurements]]``: the extending spec's list where it gives one, else the base's, each
  updated by ``[override_measurements]`` (a table of keys: ``prompts = 5000``, say).

A base may itself extend another spec (at most ``MAX_DEPTH`` levels, no cycles).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iclab.utils.errors import ConfigError

MAX_DEPTH = 8
MERGED_TABLES = ("defaults", "covariances", "sections", "budgets")
EXTENSION_KEYS = ("extends", "override_groups", "override_claims", "override_measurements")

Reader = Callable[[str, str], tuple[Any, str]]
"""(reference, the extending spec's source) -> (the base's parsed data, its source name)."""


def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: {key} must be a table")
    return value


def _list_of_tables(data: dict[str, Any], key: str, source: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ConfigError(f"{source}: {key} must be a list of tables ([[{key}]])")
    return value


def _merge_groups(base: list[dict[str, Any]], child: list[dict[str, Any]],
                  override: dict[str, Any], source: str) -> list[dict[str, Any]]:
    groups = {str(g.get("name")): dict(g) for g in base}
    own: dict[str, dict[str, Any]] = {}
    for group in child:
        name = str(group.get("name"))
        if group.get("drop") is True:
            if name not in groups:
                raise ConfigError(f"{source}: cannot drop group {name!r}: the base has none")
            del groups[name]
        elif name in groups:
            groups[name].update(group)
        else:
            groups[name] = dict(group)
        own[name] = group
    return [{**group, **override, **own.get(name, {})} for name, group in groups.items()]


def _claim_overrides(child: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """``override_claims`` as a list of tables (a single table is a list of one)."""
    value = child.get("override_claims", [])
    tables = [value] if isinstance(value, dict) else value
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{source}: override_claims must be a table or a list of tables")
    return tables


def _override_claims(claims: list[dict[str, Any]], overrides: list[dict[str, Any]],
                     source: str) -> list[dict[str, Any]]:
    """The base's claims with each override applied in order (to the kinds it names)."""
    claims = [dict(claim) for claim in claims]
    present = {str(claim.get("kind")) for claim in claims}
    for override in overrides:
        kinds = override.get("kinds")
        if kinds is not None and (not isinstance(kinds, list) or not kinds or not all(
                isinstance(k, str) and k in present for k in kinds)):
            raise ConfigError(f"{source}: override_claims kinds must list kinds of the base's "
                              f"claims ({', '.join(sorted(present))}), got {kinds!r}")
        keys = {key: value for key, value in override.items() if key != "kinds"}
        for claim in claims:
            if kinds is None or claim.get("kind") in kinds:
                claim.update(keys)
    return claims


def merge(base: dict[str, Any], child: dict[str, Any], source: str) -> dict[str, Any]:
    """The spec data of ``child`` applied to ``base`` (both already resolved)."""
    merged: dict[str, Any] = {key: value for key, value in base.items()
                              if key not in EXTENSION_KEYS}
    for key, value in child.items():
        if key in MERGED_TABLES:
            merged[key] = {**_table(base, key, source), **_table(child, key, source)}
        elif key in ("groups", "claims", *EXTENSION_KEYS):
            continue
        else:
            merged[key] = value
    merged["groups"] = _merge_groups(_list_of_tables(base, "groups", source),
                                     _list_of_tables(child, "groups", source),
                                     _table(child, "override_groups", source), source)
    kept = {str(group.get("name")) for group in merged["groups"]}
    inherited = [claim for claim in _list_of_tables(base, "claims", source)
                 if claim.get("group") is None or str(claim.get("group")) in kept]
    # a dropped group's claims go with it; a claim without a group (no runs) stays
    merged["claims"] = _override_claims(inherited, _claim_overrides(child, source), source)
    merged["claims"] += _list_of_tables(child, "claims", source)
    if "budgets" in merged:  # a dropped group's section goes with its claims
        sections = {str(claim.get("section")) for claim in merged["claims"]}
        merged["budgets"] = {key: value for key, value in merged["budgets"].items()
                             if key in sections}
    if "measurements" in merged:
        override = _table(child, "override_measurements", source)
        merged["measurements"] = [{**table, **override}
                                  for table in _list_of_tables(merged, "measurements", source)]
    return merged


def resolve_extends(data: Any, source: str, read: Reader,
                    chain: tuple[str, ...] = ()) -> Any:
    """``data`` with its ``extends`` chain applied (unchanged when it extends nothing)."""
    if not isinstance(data, dict) or "extends" not in data:
        if isinstance(data, dict) and (set(data) & set(EXTENSION_KEYS[1:])):
            raise ConfigError(f"{source}: override_groups, override_claims and "
                              "override_measurements need extends")
        return data
    reference = data["extends"]
    if not isinstance(reference, str) or not reference:
        raise ConfigError(f"{source}: extends must name a spec file, got {reference!r}")
    if len(chain) >= MAX_DEPTH:
        raise ConfigError(f"{source}: extends is nested deeper than {MAX_DEPTH} levels")
    base_data, base_source = read(reference, source)
    if base_source in (*chain, source):
        raise ConfigError(f"{source}: extends forms a cycle through {base_source}")
    base = resolve_extends(base_data, base_source, read, (*chain, source))
    if not isinstance(base, dict):
        raise ConfigError(f"{base_source}: a spec must be a table at the top level")
    return merge(base, data, source)
