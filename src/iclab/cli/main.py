"""Entry point: the ``iclab`` command group and its one-line error handling.

Every bad input (unknown option, bad value, bad file) ends with one line on stderr naming the
value and what is allowed, and exit code 2; no traceback is shown. Ctrl-C (SIGINT) and SIGTERM,
at any moment from the first import on, end with one line and exit code 130 (143 for
SIGTERM): the heavy imports happen inside ``main``, with both signals held back until they
are done (``iclab.utils.signals``), and SIGTERM is turned into the same interrupt, so files
being written atomically are cleaned up and an interrupted run resumes when the same command
is run again.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from iclab.utils.signals import stop_signals_deferred

if TYPE_CHECKING:
    from iclab.experiments.registries import Registries

RESUMABLE = ("train", "sweep", "reproduce")
OUT_OF_MEMORY = ("out of memory: this machine cannot hold what was asked for; lower the sizes "
                 "(d, n, batch, --eval-prompts, widths)")
"""Commands that resume where an interrupted invocation stopped."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _study_arguments(args: list[str]) -> tuple[list[str], list[str]]:
    """The ``--study REFERENCE`` options before the command's name, and the rest of
    ``args``."""
    studies, index = [], 0
    while index < len(args) and (args[index] == "--study" or args[index].startswith("--study=")):
        if args[index] == "--study":
            if index + 1 == len(args):
                from iclab.utils.errors import ConfigError
                raise ConfigError("--study needs a value: FILE.py:STUDY or MODULE:STUDY")
            studies.append(args[index + 1])
            index += 2
        else:
            studies.append(args[index].split("=", 1)[1])
            index += 1
    return studies, args[index:]


def build_cli(args: list[str], registries: Registries | None = None) -> Any:
    """The ``iclab`` command group (a ``click.Group``) with the command's ``registries`` (the
    core and every installed study unless given) as its context object (``click.pass_obj``).
    The studies' commands join the group. A plug-in model named on the command line joins the
    model registry first, so that its options are ``iclab train`` options."""
    import click

    from iclab import __version__
    from iclab.cli.catalogue import families_command, models_command, studies_command
    from iclab.cli.certify import certify_command
    from iclab.cli.export import export_command
    from iclab.cli.reproduce import reproduce_command
    from iclab.cli.run_options import option_argument
    from iclab.cli.sweep import sweep_command
    from iclab.cli.theory import make_theory_command
    from iclab.cli.train import make_train_command
    from iclab.experiments.registries import Registries
    from iclab.utils.plugins import is_plugin_reference

    registries = Registries() if registries is None else registries
    models = registries.models
    reference = option_argument(args, "--model") if args[:1] == ["train"] else None
    if reference is not None and is_plugin_reference(reference) \
            and reference not in models.names:
        models.register(models.get(reference), reference)
    family = option_argument(args, "--family")

    @click.group(context_settings={"help_option_names": ["-h", "--help"], "obj": registries})
    @click.version_option(__version__, prog_name="iclab")
    @click.option("--study", "studies", multiple=True, metavar="FILE.py:STUDY",
                  help="Add a study (a Study object in a file or module) to this command; "
                       "repeatable; give it before the command's name.")
    def cli(studies: tuple[str, ...]) -> None:
        """iclab: train attention models on in-context regression and check them against
        the theory."""

    for command in (make_train_command(registries, reference, family),
                    make_theory_command(registries, family),
                    certify_command, export_command, sweep_command, reproduce_command,
                    models_command, families_command, studies_command):
        cli.add_command(command)
    for factory in registries.commands:  # the studies' own commands
        cli.add_command(factory(registries, args))
    return cli


def _fail(message: str, code: int) -> int:
    line = " ".join(message.split())  # one line, whatever the message holds
    sys.stderr.write(f"iclab: error: {line}\n")
    sys.stderr.flush()
    return code


def _interrupted(args: list[str], terminated: bool) -> int:
    """One line, and 130 (Ctrl-C) or 143 (SIGTERM); further interrupts are ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    what = "terminated" if terminated else "interrupted"
    hint = ("; run the same command again to resume" if args[:1] and args[0] in RESUMABLE
            else "")
    sys.stdout.flush()
    return _fail(what + hint, 143 if terminated else 130)


def main(argv: Sequence[str] | None = None, registries: Registries | None = None) -> int:
    """Run the CLI; return (and, from the console script, exit with) the exit code.
    ``registries``: the models, families and claim kinds the commands use (default: the
    built-ins), so that kinds and families registered in Python reach ``iclab sweep`` and
    ``iclab theory``."""
    args = list(sys.argv[1:] if argv is None else argv)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave SIGTERM alone
        previous = None
    try:
        return _run(args, registries)
    except KeyboardInterrupt as error:  # Ctrl-C or SIGTERM during the imports
        return _interrupted(args, isinstance(error, Terminated))
    finally:
        if argv is None:  # the program is ending: a late signal must not become a traceback
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        elif previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _import_libraries() -> None:
    """Import iclab's commands and the libraries under them (torch, numpy, click) with Ctrl-C
    and SIGTERM held back (``iclab.utils.signals``): one arriving meanwhile is handled right
    after."""
    with stop_signals_deferred():
        import iclab.cli.catalogue
        import iclab.cli.certify
        import iclab.cli.export
        import iclab.cli.reproduce
        import iclab.cli.sweep
        import iclab.cli.theory
        import iclab.cli.train  # noqa: F401


def _registries(args: list[str], registries: Registries | None) -> Registries:
    """The command's registries (built here once when not given), with the studies named by
    ``--study`` added."""
    from iclab.experiments.registries import Registries
    from iclab.utils.studies import load_study

    registries = Registries() if registries is None else registries
    for reference in _study_arguments(args)[0]:
        registries.add_study(load_study(reference), reference)
    return registries


def _run(args: list[str], registries: Registries | None) -> int:
    _import_libraries()
    import click

    from iclab.experiments.claims.kind import ClaimsNotHeldError
    from iclab.experiments.specs.sweep import SweepError
    from iclab.training.loop import TrainingDivergedError
    from iclab.utils.errors import ConfigError, NotFiniteError

    try:
        registries = _registries(args, registries)
        build_cli(_study_arguments(args)[1], registries).main(
            args=args, prog_name="iclab", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.ctx.get_help() if error.ctx else str(error))
        return 2
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx else "iclab"
        click.echo(f"{command}: error: {error.format_message()}", err=True)
        return 2
    except ConfigError as error:
        return _fail(str(error), 2)
    except (TrainingDivergedError, SweepError, ClaimsNotHeldError, NotFiniteError) as error:
        return _fail(str(error), 1)
    except click.exceptions.Abort as error:  # click turns Ctrl-C into Abort
        context = error.__context__
        return _interrupted(args, isinstance(context, Terminated))
    except KeyboardInterrupt as error:
        return _interrupted(args, isinstance(error, Terminated))
    except click.exceptions.Exit as error:
        return int(error.exit_code)
    except MemoryError:
        return _fail(OUT_OF_MEMORY, 2)
    except RuntimeError as error:  # torch's allocator raises RuntimeError
        if "can't allocate memory" not in str(error) and "out of memory" not in str(error):
            raise
        return _fail(OUT_OF_MEMORY, 2)
    except click.ClickException as error:
        return _fail(error.format_message(), error.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
