"""What a study adds to ``iclab theory``: a mode of its own, or an addition to the one-layer
optimum's output.

A ``TheoryMode`` (``--asymptotic``, ``--task-pool``) gives click options (added to the
command's), ``active`` (whether the command's options ask for it) and a ``run`` that is
handed the command's options (a dict it pops its own options from), the seed and ``--json``:
it prints its result and returns True. The command refuses the one-layer optimum's options
and the additions' given with an active mode (``iclab.cli.theory.applicable``); a mode refuses
its own options given without its flag, and the task options it does not use, with one line
(ConfigError).

A ``TheoryAddition`` (``--shift``) adds rows to the one-layer optimum's output: ``take`` pops
its options and returns its checked request (None when not asked) before the family is built,
``check`` refuses a family it cannot apply to before any work, and ``run`` returns the text
printed below the optimum and the keys added to its JSON object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from iclab.tasks.base import TaskFamily

ModeRunner = Callable[[dict[str, Any], int, bool], bool]
"""(the command's options, seed, as_json) -> whether the mode handled the invocation."""
Options = Callable[[], Sequence[Callable[[Any], Any]]]
"""-> the click options (decorators) added to the command's."""


@dataclass(frozen=True)
class TheoryMode:
    """One study's mode of ``iclab theory``."""

    name: str
    options: Options
    active: Callable[[dict[str, Any]], bool]
    """Whether the command's options ask for this mode (its flag is given)."""
    run: ModeRunner


@dataclass(frozen=True)
class TheoryAddition:
    """One study's addition to the one-layer optimum's output."""

    name: str
    options: Options
    take: Callable[[dict[str, Any]], Any]
    """Pop the addition's options from the command's; its checked request, or None."""
    check: Callable[[Any, TaskFamily], None]
    """(request, family): ConfigError when the addition cannot apply, before any work."""
    run: Callable[[Any, TaskFamily, int, int], tuple[str, dict[str, Any]]]
    """(request, family, bayes_prompts, seed) -> (text, JSON keys)."""
