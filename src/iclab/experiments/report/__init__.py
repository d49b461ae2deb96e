"""The report of a finished sweep: claims.json, the claim kinds' figures, report.md and
report.html (``write``, ``render``). Imports matplotlib: import it only to write a report.
"""
