"""The ``softmax`` study: one layer of softmax attention read out at the query token
(``model``), judged by its predictions against one-step GD, ridge and least squares. Its one
declaration, ``STUDY``, is listed under the ``iclab.studies`` entry points like a user's
installed study."""

from __future__ import annotations

from iclab.studies.softmax.model import SoftmaxAttention
from iclab.utils.studies import Study

STUDY = Study(
    "softmax",
    "one layer of softmax attention beside the optimal one-step GD",
    models=lambda: (SoftmaxAttention,),
)
