"""Searching a variant's launch parameters: what a search may propose (strategies.py) and the
search itself, rounds of configurations on a sweep (search.py). May import run and below."""
