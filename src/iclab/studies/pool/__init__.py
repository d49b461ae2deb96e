"""The pool study: task diversity, a finite pool of tasks (declared in ``study``)."""
