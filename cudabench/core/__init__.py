"""The bottom layer: records passed between modules (records.py), errors, element types,
shapes, names and paths, YAML with line numbers, the version. Imports nothing of cudabench."""
