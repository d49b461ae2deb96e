"""The asymptotic study: Lu et al.'s asymptotic theory of ridge-fitted linear attention
(declared in ``study``)."""
