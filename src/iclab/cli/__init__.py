"""The ``iclab`` command line: thin wrappers that parse, validate and call the library."""
