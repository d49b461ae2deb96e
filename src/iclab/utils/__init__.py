"""The small modules every package uses and none of them owns: the one error type the command
line turns into one line and exit code 2 (``errors``), the batches models read (``batches``),
config field declarations (``fields``), atomic file writes (``io``), plug-in loading
(``plugins``), seeded generators (``seeding``), holding Ctrl-C back (``signals``) and torch's
thread count (``threads``). They import nothing of iclab outside this package."""
