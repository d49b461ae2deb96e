"""Models: the interface every model implements, the registry, and the built-in ``lsa``."""

from iclab.models.base import Model, NoOptions, capabilities_of
from iclab.models.readout import LinearReadout
from iclab.models.registry import ModelRegistry

__all__ = ["LinearReadout", "Model", "ModelRegistry", "NoOptions", "capabilities_of"]
