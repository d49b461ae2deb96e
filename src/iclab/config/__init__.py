"""Typed configuration: the run's fixed sections (``sections``: task, optimiser, run) and the
training run's config (``train``), with field declarations from ``iclab.utils.fields``. Each
field is declared once, with its type, default, allowed range and help; the CLI options, spec
keys, CSV columns and validation messages are generated from them."""
