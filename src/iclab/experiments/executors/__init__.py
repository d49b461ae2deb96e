"""Executors: where a sweep's runs are trained. ``local`` (spawned processes on this
machine), ``ray_executor`` (a Ray cluster or a private local instance, connected by
``ray_connect``), ``slurm_executor`` (a SLURM job array through submitit), ``remote_run``
(what a Ray task does on its node), ``run_files`` (a run folder as bytes, and its file names)
and ``checkpoint_storage`` (mid-run checkpoints on shared storage). Nothing here reads a spec
or a claim.
"""
