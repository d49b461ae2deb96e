"""iclab: in-context learning of one-layer linear self-attention, checked against theory.

Importing the package does no work: every computation is behind an explicit call.
"""

__version__ = "0.1.0"
