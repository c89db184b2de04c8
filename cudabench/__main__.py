"""`python -m cudabench ...` runs the same CLI as the `cudabench` script."""

from cudabench import _command

_command()
