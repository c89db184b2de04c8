"""cudabench: is my CUDA kernel right, how fast is it against the hardware and the vendor
library, and why.

Importing the package needs neither CuPy nor a GPU: the GPU backend is imported only when a
command actually runs kernels.
"""

__version__ = "0.1.0"
