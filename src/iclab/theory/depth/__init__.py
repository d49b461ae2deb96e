"""The optimal L-step GD behind the L-layer LSA (docs/theory.md section 10): its exact loss
through Wishart moments (``wishart_moments``, ``polynomial_exact``), Monte Carlo
(``multistep_mc``), the search over step sizes and preconditioners (``step_search``,
``preconditioned_steps``), and ``multistep``, which picks among them (``MAX_LAYERS``)."""
