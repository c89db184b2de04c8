"""Running a sweep: a target and options made a plan (plan.py, config.py), the session below
every front door (session.py), where jobs run (executors.py: pool.py and worker.py on this host,
cluster.py on Dask), the sweep that records each row as it ends (sweep.py), the ceilings a run
uses (calibration.py), and ncu's command line and report (ncu.py). May import every layer
below: core, ops, build, backends, measure, record."""
