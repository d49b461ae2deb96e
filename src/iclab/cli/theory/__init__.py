"""``iclab theory``: the command (``command``) and the tables of its modes (``shift``: the
exact losses under shifted test laws)."""

from iclab.cli.theory.command import make_theory_command

__all__ = ["make_theory_command"]
