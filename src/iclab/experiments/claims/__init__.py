"""Claims: what a spec states about its runs, checked with explicit tolerances.

``kind`` (``Claim``, ``ClaimKind``, ``ClaimContext``), ``parameters`` (the typed keys a kind
declares), one module per family of kinds (``theorems``, ``shift``, ``depth``,
``covariates``), and ``registry`` (``ClaimRegistry``, ``evaluate_claims``). A kind checks
result files and draws its own figures; it never trains or evaluates a model.
"""
