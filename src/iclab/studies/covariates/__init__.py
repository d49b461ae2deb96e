"""The covariates study: non-Gaussian covariate laws and correlated contexts (declared in
``study``)."""
