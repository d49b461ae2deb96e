"""The ``sequence`` study: attention-free in-context learners (an H3-like state-space layer,
gated linear attention) as weighted preconditioned GD, the ``drifting-linear`` family where
weighting pays, its Kalman-filter Bayes predictor and the exact WPGD optimum."""
