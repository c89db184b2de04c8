"""The op API, as users import it: `from cudabench.op import Op, Tensor, Scalar, variant`.

Everything lives in `cudabench.ops.api` (the `Op` base class) and the modules it draws on;
this module is the stable name op files and variant files use. docs/guide/ops.md describes
every declaration.
"""

from cudabench.ops.api import *  # noqa: F403
from cudabench.ops.api import __all__  # noqa: F401
