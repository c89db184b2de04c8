"""rowsum: out[r] = the sum of row r of a float32 matrix x (rows x cols)."""

from cudabench.op import Geometry, Op, Scalar, Tensor, check_grid


def warp_groups(at):
    """ROWS rows a warp (a kernel parameter), BLOCK / 32 warps a block, every row covered."""
    rows_a_block = at.value("ROWS", 1) * (at.block // 32)
    grid = -(-at.dims.rows // rows_a_block)
    check_grid(grid)
    return Geometry(grid, at.block)


class RowSum(Op):
    about = "out[r] = sum over c of x[r, c], float32"
    dims = ("rows", "cols")
    ranks = (2,)
    example = "442368x128"
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows"),)
    scalars = (Scalar("rows", "int"), Scalar("cols", "int"))
    rules = {"warp_groups": warp_groups}
    library = {"cupy": lambda x: x.sum(axis=-1)}

    def reference(self, xp, x):
        return x.sum(axis=-1)
