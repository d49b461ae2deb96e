"""Claims: what a spec states about its runs, checked with explicit tolerances.

``kind`` (``Claim``, ``ClaimKind``, ``ClaimContext``), ``parameters`` (the typed keys a kind
declares), one module per family of kinds (``theorems``, ``shift``, ``depth``,
``covariates``), ``registry`` (``ClaimRegistry``, ``evaluate_claims``) and ``plugin_check``
(a user's kind checked when registered, and held to one line when it fails). A kind checks
result files and draws its own figures; it never trains or evaluates a model.
"""
