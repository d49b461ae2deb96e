"""Experiments: declarative specs, sweeps over them (local processes or Ray), claims, report.

``iclab sweep SPEC --out DIR`` runs a spec; ``iclab reproduce`` runs the built-in spec of the
paper's claims. Subpackages, each with one job: ``specs`` (the spec format, sweeps, results
read back), ``executors`` (local processes, Ray, remote runs, checkpoint storage), ``claims``
(claim kinds and their verdicts), ``figures`` (the drawings) and ``report`` (claims.json,
report.md, report.html; it imports matplotlib, so it is imported only where a report is
written). ``registries.Registries`` is the one object a command passes down.
"""
