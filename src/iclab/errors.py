"""The one exception type the command line turns into a one-line message and exit code 2."""


class ConfigError(ValueError):
    """A value given by the user is not allowed; the message names the value and what is."""
