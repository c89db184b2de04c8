"""cudabench's version: in every results file's metadata and the run's fingerprint."""

__version__ = "0.1.0"
