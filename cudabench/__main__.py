"""`python -m cudabench ...` runs the same CLI as the `cudabench` script."""

from cudabench.cli import main

main()
