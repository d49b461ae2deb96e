"""A user's claim kind, checked when it is registered and held to one line when it fails.

``check_claim_kind`` runs when a kind is registered (a spec naming ``file.py:Class`` registers
it while the spec is read, before any run): what the kind declares must be well formed.
``checked_claims`` runs a kind's ``check``: a user's kind that raises, or returns anything but
claims, is one ConfigError line, not a traceback.
"""

from __future__ import annotations

import math
from typing import Any

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.parameters import ClaimParameter
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import error_line, is_builtin_code


def check_claim_kind(kind: Any) -> None:
    """ConfigError with one line unless ``kind`` is a ClaimKind instance with a name, options
    of allowed string values, a statement for each option value (unless it words its own
    ``statement``), ClaimParameter parameters and its own ``check`` or ``check_site``."""
    if not isinstance(kind, ClaimKind):
        raise ConfigError(f"a claim kind must be a ClaimKind instance, got {kind!r}")
    name = kind.name
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"claim kind {name!r}: its name must be a non-empty string")
    options, statements = kind.options, kind.statements
    if not isinstance(options, dict) or not all(
            isinstance(key, str) and isinstance(values, tuple) and values
            and all(isinstance(v, str) for v in values) for key, values in options.items()):
        raise ConfigError(f"claim kind {name!r}: options must map names to non-empty tuples "
                          f"of strings")
    wanted = [value for values in options.values() for value in values] or [""]
    own = type(kind)
    if own.statement is ClaimKind.statement and (not isinstance(statements, dict) or not all(
            isinstance(statements.get(value), str) for value in wanted)):
        raise ConfigError(f"claim kind {name!r}: statements must hold a string for each of "
                          f"{wanted}")
    if not isinstance(kind.parameters, dict) or not all(
            isinstance(p, ClaimParameter) for p in kind.parameters.values()):
        raise ConfigError(f"claim kind {name!r}: parameters must map names to "
                          f"ClaimParameter objects")
    if own.check is ClaimKind.check and own.check_site is ClaimKind.check_site:
        raise ConfigError(f"claim kind {name!r} must define check_site (one claim per site) "
                          f"or check (claims over the whole group)")


def is_builtin_kind(kind: ClaimKind) -> bool:
    """Whether ``kind`` is one of iclab's own claim kinds."""
    return is_builtin_code(type(kind))


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def checked_claims(kind: ClaimKind, spec: ClaimSpec, group_sites: list[Site],
                   context: ClaimContext, when: str = "") -> list[Claim]:
    """``kind.check(...)``; a user's kind that raises or returns anything but a list of
    claims, each with a string claim, a bool verdict and finite value, theory and tolerance,
    is one ConfigError line naming it (``when``: words saying when, for the probe)."""
    where = f"on group {spec.group!r}" + (f" {when}" if when else "")
    label = kind.name if spec.kind == kind.name else f"{kind.name} ({spec.kind})"
    try:
        claims = kind.check(spec, group_sites, context)
    except ConfigError:
        raise
    except (Exception, SystemExit) as error:  # a user's kind: reported in one line
        if is_builtin_kind(kind):
            raise
        raise ConfigError(f"claim kind {label!r} failed {where} ({error_line(error)})") from None
    if not isinstance(claims, list) or not all(isinstance(c, Claim) for c in claims):
        raise ConfigError(f"claim kind {label!r} {where}: check must return a list of Claim "
                          f"objects, got {type(claims).__name__}")
    for claim in [] if is_builtin_kind(kind) else claims:  # iclab's own: tested by the suite
        numbers = {"value": claim.value, "theory": claim.theory, "tolerance": claim.tolerance}
        bad = [f"{key} {value!r}" for key, value in numbers.items() if not _finite(value)]
        if bad or not isinstance(claim.holds, bool) or not isinstance(claim.claim, str):
            what = ", ".join(bad) or "holds must be a bool and claim a string"
            raise ConfigError(f"claim kind {label!r} {where}: a claim must hold finite "
                              f"numbers (value, theory, tolerance), a bool verdict and a "
                              f"string; got {what}")
    return claims
