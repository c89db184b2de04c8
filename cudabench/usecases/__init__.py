"""Use cases: one call each (run, tune, profile, ceilings, compare, history), typed in and
typed out, under both the CLI and the Python API."""
