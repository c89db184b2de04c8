"""What a run leaves behind and how runs are judged: results files (results.py, schema.py),
the history database (history.py), fingerprints (fingerprint.py), A/B verdicts (compare.py),
the card's ceilings (ceilings.py) and the tuning file (tuning_file.py). No GPU; may import core
and ops."""
