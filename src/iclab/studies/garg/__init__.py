"""The garg study: Garg et al.'s function classes with their own baselines (declared in
``study``)."""
