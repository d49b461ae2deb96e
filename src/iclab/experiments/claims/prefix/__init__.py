"""Claim kinds that read a run's prefix curves (prefix.json, ``iclab.analysis.prefix``)."""
