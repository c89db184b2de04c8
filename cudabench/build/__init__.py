"""Building kernels without a GPU: nvcc to a cached cubin (compile.py), each entry point's
parameters against the op's argument list (abi.py), and `cudabench new op` (scaffold.py).
May import core and ops."""
