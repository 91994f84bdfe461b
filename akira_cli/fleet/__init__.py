"""The fleet (docs/design.md): task files on a durable DBOS queue, worked by workers on many machines.
`database.py` the queue's database and akira's two tables beside it, `runs.py` what a run is
and how it is added, listed and cancelled, `worker.py` the worker, `loop_run.py` one run's
clone, setup and loop on a worker, `branch.py` the run's task branch. Nothing here is
imported until a fleet command runs."""
