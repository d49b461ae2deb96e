"""The exception types the command line turns into a one-line message: ConfigError (exit 2)
and NotFiniteError (exit 1), both kinds of ``Error`` (``iclab.Error``), the one type the
Python API (``iclab.api``) raises with the command line's one-line messages."""


class Error(Exception):
    """A one-line error of iclab (``iclab.Error``): bad input, a run that failed, a number that
    is not finite. The message is the line the command line prints after ``iclab: error:``."""


class ConfigError(Error, ValueError):
    """A value given by the user is not allowed; the message names the value and what is."""


class NotFiniteError(Error, ArithmeticError):
    """A number iclab was about to write or print is NaN or infinite: nothing is written."""
