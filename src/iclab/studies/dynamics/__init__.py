"""The dynamics study: SGD beside the exact gradient flow of multi-head linear attention
(declared in ``study``)."""
