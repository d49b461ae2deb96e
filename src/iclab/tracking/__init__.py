"""Experiment tracking as options (``iclab train --track NAME``), never required: TensorBoard,
MLflow and Weights & Biases, each an optional extra imported only when asked for.

``make_tracking`` checks the names (and that each library is installed) before any work;
``Tracking.session`` opens the trackers on a run folder, and the training loop reports every
metrics line through the session's one hook (``Session.log_metrics``).
"""

from iclab.tracking.base import TRACKERS, Session, Tracker, Tracking, make_tracking

__all__ = ["TRACKERS", "Session", "Tracker", "Tracking", "make_tracking"]
