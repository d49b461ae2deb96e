"""Claim kinds of the Dynamics section (``dynamics``): SGD beside the exact gradient flow,
the plateaus of separate keys and queries, the merged heads' drop time, the end point."""
