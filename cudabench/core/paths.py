"""Where cudabench finds what ships with it: the built-in catalogue of ops and kernels."""

from __future__ import annotations

from pathlib import Path

# kernels/<op>/op.py and its .cu variants, beside the package in a checkout (pip install -e)
BUILTIN_KERNELS = Path(__file__).resolve().parents[2] / "kernels"
# configs/<op>.yaml (each op's default shapes) and the suites (configs/seeds.yaml)
BUILTIN_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# the package's own folder and the folder that holds it (what a worker process puts on sys.path)
PACKAGE_DIR = Path(__file__).resolve().parents[1]
