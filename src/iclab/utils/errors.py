"""The exception types the command line turns into a one-line message: ConfigError (exit 2)
and NotFiniteError (exit 1)."""


class ConfigError(ValueError):
    """A value given by the user is not allowed; the message names the value and what is."""


class NotFiniteError(ArithmeticError):
    """A number iclab was about to write or print is NaN or infinite: nothing is written."""
