"""Specs, sweeps and results: a spec file read and checked (``spec``, ``claim_spec``,
``extends``, ``covariances``), run as a sweep of run folders (``sweep``), and read back as
records and sites (``results``). The built-in specs (reproduce.toml, reproduce-quick.toml)
live beside these modules.
"""
