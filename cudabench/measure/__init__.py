"""One case on one GPU, inside a worker process: its inputs, reference and tolerance
(problem.py), a variant made a validated call (prepare.py), the samples (sampling.py), the
row's figures (throughput.py) and telemetry (telemetry.py), and the loop over a case's variants
that makes every outcome a row (runner.py). May import core, ops, build and backends."""
