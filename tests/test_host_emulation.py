"""GPU-free checks of the 16-bit kernels' index arithmetic (issue 35): nvcc builds small host
programs that include the kernel sources (their index helpers are __host__ __device__) and
run them on the CPU. tests/host/rows16_span.cu: softmax rows16.cuh's split of a row into a
scalar head, 16-byte packs and a scalar tail, for every offset; tests/host/transpose_pack16.cu:
transpose pack16's two phases, emulated block by block and thread by thread, against the
exact transpose on odd shapes."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOST = Path(__file__).parent / "host"


def build_and_run(source: Path, tmp_path: Path, *defines: str) -> str:
    exe = tmp_path / source.stem
    cmd = [
        "nvcc",
        "-std=c++17",
        "-arch=sm_90",
        f"-I{ROOT / 'kernels'}",
        *defines,
        "-o",
        str(exe),
        str(source),
    ]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["__nv_bfloat16", "__half"])
def test_rows16_head_packs_and_tail_cover_every_row_once(tmp_path, dtype):
    out = build_and_run(HOST / "rows16_span.cu", tmp_path, f"-DCB_T={dtype}")
    assert out.strip().endswith(", 0 bad"), out


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "tile, block, group",
    [
        (128, 256, 0),
        (64, 64, 8),
        (64, 32, 16),
        (128, 256, 8),
        (128, 128, 0),
    ],
)
def test_transpose_pack16_emulated_is_the_exact_transpose(tmp_path, tile, block, group):
    out = build_and_run(
        HOST / "transpose_pack16.cu",
        tmp_path,
        "-DCB_T=__half",
        f"-DTILE={tile}",
        f"-DBLOCK={block}",
        f"-DGROUP={group}",
    )
    assert out.strip().endswith(", 0 bad"), out
