"""Vector shared-memory accesses: the run finder (`vector_run`, `Lay.contiguous_run`) against a
brute force over every thread's element offsets, and the lowering's LLVM IR and PTX: vector
stores and loads where the layouts keep runs contiguous, aligned and inside one swizzle group,
scalar ones where they don't."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from test_lowering import blocked_lay
from xdsl.dialects.builtin import f16, f32

import kernellab as kl
from kernellab.backends.llvm.layout import Lay, coords_of
from kernellab.backends.llvm.remap import staging_pad
from kernellab.backends.llvm.shared_buffers import vector_run
from kernellab.backends.llvm.types import SmemBuf
from kernellab.backends.nvidia.lowering import make_llir
from kernellab.examples import matmul_kernel
from kernellab.ir import parse_module


def _swizzled_offset(coords, shape, order, vec, per_phase, max_phase) -> int:
    """Element offset of `coords` in a #ttg.swizzled_shared buffer, written out from the
    encoding's definition (rank 2)."""
    col, row = coords[order[0]], coords[order[1]]
    col ^= ((row // per_phase) % max_phase) * vec
    return row * shape[order[0]] + col


def _thread_offsets(lay: Lay, buf: SmemBuf):
    """Per thread (lane, warp), the element offset of each register."""
    for lane in range(1 << len(lay.lane)):
        for warp in range(1 << len(lay.warp)):
            t = 0
            for i, b in enumerate(lay.lane):
                t ^= b if lane >> i & 1 else 0
            for i, b in enumerate(lay.warp):
                t ^= b if warp >> i & 1 else 0
            yield [
                _swizzled_offset(coords_of(f ^ t, lay.shape), buf.shape, buf.order, buf.vec,
                                 buf.per_phase, buf.max_phase)  # fmt: skip
                for f in lay.reg_flat
            ]


def _brute_run(lay: Lay, buf: SmemBuf, nbytes: int) -> int:
    """The longest power-of-two run (≤ 16 bytes, ≤ one row) whose registers sit at consecutive
    offsets with an aligned start, in every thread."""
    best, v = 1, 2
    limit = min(16 // nbytes, buf.shape[buf.order[0]])
    offsets = list(_thread_offsets(lay, buf))
    while v <= limit and v <= lay.nregs:
        ok = all(
            (buf.offset + offs[r] * nbytes) % (v * nbytes) == 0
            and all(offs[r + j] == offs[r] + j for j in range(v))
            for offs in offsets
            for r in range(0, lay.nregs, v)
        )
        if ok:
            best = v
        v *= 2
    return best


LAYOUTS = [  # (shape, sizePerThread, threadsPerWarp, warpsPerCTA, order)
    ((128, 32), [1, 8], [8, 4], [4, 1], [1, 0]),
    ((32, 128), [1, 8], [2, 16], [4, 1], [1, 0]),
    ((64, 64), [1, 4], [4, 8], [2, 2], [1, 0]),
    ((64, 64), [2, 2], [8, 4], [1, 4], [1, 0]),
    ((16, 2), [1, 2], [16, 2], [1, 1], [1, 0]),
    ((64, 32), [8, 1], [4, 8], [2, 2], [0, 1]),
    ((32, 64), [1, 16], [32, 1], [1, 4], [1, 0]),
]
SWIZZLES = [  # (order, vec, per_phase, max_phase)
    ((1, 0), 1, 1, 1),
    ((1, 0), 8, 2, 4),
    ((1, 0), 8, 1, 8),
    ((1, 0), 4, 1, 8),
    ((1, 0), 1, 1, 8),
    ((1, 0), 2, 4, 4),
    ((0, 1), 8, 1, 8),
    ((0, 1), 1, 1, 1),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-{x[1]}-{x[4]}")
@pytest.mark.parametrize("swizzle", SWIZZLES, ids=str)
@pytest.mark.parametrize("elem,nbytes", [(f16, 2), (f32, 4)], ids=["f16", "f32"])
@pytest.mark.parametrize("offset", [0, 4])
def test_vector_run_matches_brute_force(layout, swizzle, elem, nbytes, offset):
    shape, spt, tpw, wpc, order = layout
    lay = blocked_lay(shape, spt, tpw, wpc, order)
    buf = SmemBuf(offset, shape, elem, *swizzle)
    assert vector_run(lay, buf) == _brute_run(lay, buf, nbytes)


def test_staging_pad_is_the_longer_run():
    rows = blocked_lay((32, 128), [1, 8], [2, 16], [4, 1], [1, 0])
    cols = blocked_lay((32, 128), [4, 1], [8, 4], [1, 4], [0, 1])
    assert staging_pad(rows, cols, f16) == 8 and staging_pad(cols, cols, f16) == 1
    assert staging_pad(rows, rows, f32) == 4


_ALLOC = """#blocked = #ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = [4, 1], order = {order}}}>
#shared = #ttg.swizzled_shared<{{vec = {vec}, perPhase = {per_phase}, maxPhase = {max_phase}, order = {sorder}}}>
#smem = #ttg.shared_memory
builtin.module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @stage(%y: !tt.ptr<f16>) {{
    %v = arith.constant dense<1.0> : tensor<{m}x{n}xf16, #blocked>
    %s = ttg.local_alloc %v : (tensor<{m}x{n}xf16, #blocked>) -> !ttg.memdesc<{m}x{n}xf16, #shared, #smem>
    %w = ttg.local_load %s : !ttg.memdesc<{m}x{n}xf16, #shared, #smem> -> tensor<{m}x{n}xf16, #blocked>
    tt.return
  }}
}}
"""


def _shared_accesses(llir: str) -> Counter:
    """LLVM IR shared-memory accesses by kind and type ('store <4 x i32>', 'load half', ...)."""
    value = r'(?: (?:%"?[\w.]+"?|0x\w+|[-\d.e+]+))?'
    found = re.findall(rf"\b(store|load) ([^,]+?){value}, ptr addrspace\(3\)", llir)
    return Counter(f"{op} {ty.strip()}" for op, ty in found)


def _alloc_llir(m=64, n=64, spt="[1, 8]", tpw="[4, 8]", order="[1, 0]", vec=8, per_phase=1,
                max_phase=8, sorder="[1, 0]") -> Counter:  # fmt: skip
    text = _ALLOC.format(m=m, n=n, spt=spt, tpw=tpw, order=order, vec=vec, per_phase=per_phase,
                         max_phase=max_phase, sorder=sorder)  # fmt: skip
    llir, _ = make_llir(parse_module(text), None)
    return _shared_accesses(llir)


def test_aligned_rows_store_and_load_16_bytes():
    acc = _alloc_llir()
    # 64x64 f16 over 128 threads: 32 elements each, 4 runs of 8
    assert acc == Counter({"store <4 x i32>": 4, "load <4 x i32>": 4})


@pytest.mark.parametrize(
    "kw,expected",
    [
        (dict(vec=1, max_phase=8), {"store half": 32, "load half": 32}),  # vec=1 swizzle
        (dict(vec=2, max_phase=8), {"store i32": 16, "load i32": 16}),  # 2-element groups
        (dict(sorder="[0, 1]"), {"store half": 32, "load half": 32}),  # transposed order
        (dict(m=256, n=2, spt="[1, 2]", tpw="[16, 2]"), {"store i32": 4, "load i32": 4}),
        (dict(spt="[8, 1]", tpw="[8, 4]", order="[0, 1]"), {"store half": 128, "load half": 128}),
        (dict(vec=1, max_phase=1), {"store <4 x i32>": 4, "load <4 x i32>": 4}),  # no swizzle
    ],
    ids=["vec1", "vec2", "transposed-order", "narrow", "column-layout", "unswizzled"],
)
def test_broken_runs_stay_narrow(kw, expected):
    assert _alloc_llir(**kw) == Counter(expected)


def test_matmul_ptx_uses_vector_shared_accesses():
    """The tutorial matmul (128x128x32, 4 warps, not pipelined): operand stores into the swizzled buffers and
    the epilogue's conversion are vectors; no scalar 16-bit shared access remains."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}  # fmt: skip
    ck = kl.compile(
        matmul_kernel, signature=sig, attrs={k: {"tt.divisibility": 16} for k in sig},
        constexprs=dict(stride_ak=1, stride_bn=1, stride_cn=1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128,
                        BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION=""),
        target="sm_90", num_warps=4, num_stages=1,  # operands through registers, not cp.async
    )  # fmt: skip
    forms = Counter(re.findall(r"\b((?:st|ld)\.shared(?:\.v\d)?\.\w+)", ck.asm["ptx"]))
    assert forms["st.shared.v4.b32"] == 8 and forms["ld.shared.v4.b32"] == 16
    assert forms["st.shared.b16"] == 0 and forms["ld.shared.b16"] == 0
