"""The Task diversity section's asymptotic claims (Lu et al.): the ``lu-asymptotic`` kind
(``kinds``), computed from its parameters without training runs, and its figure
(``figure``)."""
