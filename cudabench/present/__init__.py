"""What a person reads: rich tables, failure summaries and exports (tables.py) and
matplotlib figures (plots.py). Prints nothing itself; may import every layer below."""
