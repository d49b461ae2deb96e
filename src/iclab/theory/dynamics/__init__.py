"""Training dynamics on the exact population loss (docs/theory.md section 18): the heads'
parameters as raw float64 arrays and the exact loss and gradient in them (``heads``), an
adaptive Dormand-Prince integrator of gradient flow (``flow``), and the plateau theory: the
best rank-k losses, the plateaus of a curve and the merged heads' analytic drop time
(``plateaus``)."""
