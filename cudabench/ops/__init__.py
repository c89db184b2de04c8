"""Ops: the op API (api.py, `cudabench.op` to users; arguments.py its kernel argument list),
what an op declares (declarations.py, rules.py, checks.py), the runner's protocol
(protocol.py), where ops and their variants are found (registry.py, discovery.py, header.py,
pyvariants.py, space.py), and what the catalogue's op files share (reductions.py,
elementwise.py, stream.py, matrix.py, torch_baselines.py)."""
