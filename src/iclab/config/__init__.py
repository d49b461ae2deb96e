"""Typed configuration: field declarations (``fields``) and the training run's config
(``train``). Each field is declared once, with its type, default, allowed range and help; the
CLI options, spec keys, CSV columns and validation messages are generated from them."""
