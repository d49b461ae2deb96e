"""The shift study's claim kinds (``shift``, ``shift-growth``), their figures and the
``[[measurements]]`` tables the ``shift`` kind makes and reports."""
