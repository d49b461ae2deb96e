"""iclab's follow-up studies, one folder each. Each folder declares what it adds with one
``Study`` object (``iclab.utils.studies``) in its ``study`` module, listed under the
``iclab.studies`` entry points in pyproject.toml exactly as a user's installed study is; the
core imports no study."""
