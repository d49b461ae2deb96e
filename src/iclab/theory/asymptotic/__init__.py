"""Lu et al.'s asymptotic theory of the ridge-fitted reduced linear attention on finite
pretraining data (docs/theory.md section 16): the closed forms (``formulas``) and the
finite-d simulation they are the limit of (``simulation``)."""
