"""Vector shared-memory accesses: the run finder (`vector_run`, `Lay.contiguous_run`) against a
brute force over every thread's element offsets, and the lowering's LLVM IR and PTX: vector
stores and loads where the layouts keep runs contiguous, aligned and inside one swizzle group,
scalar ones where they don't. A conversion's staging (`staged` offsets, stmatrix rows) against
the staging layout itself, by brute force over every thread and register."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from test_lowering import blocked_lay
from xdsl.dialects.builtin import f16, f32

import kernellab as kl
from kernellab.backends.llvm.layout import Lay, coords_of
from kernellab.backends.llvm.convert import staging_for
from kernellab.backends.llvm.remap import staged
from kernellab.backends.llvm.shared_buffers import vector_run
from kernellab.backends.llvm.types import SmemBuf
from kernellab.backends.nvidia.lowering import make_llir
from kernellab.examples import matmul_kernel
from kernellab.ir import parse_module
from kernellab.layouts import blocked, conversion_plan, nvidia_mma_v2, nvidia_mma_v3


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


def _hardware(lay: Lay):
    """Every (register, lane, warp) of `lay` and the coordinates it holds."""
    linear = lay.linear
    for w in range(linear.num_warps):
        for ln in range(linear.num_lanes):
            for r in range(linear.num_registers):
                yield r, ln, w, linear.apply(register=r, lane=ln, warp=w)


def _thread_value(lay: Lay, r: int, ln: int, w: int) -> int:
    value = lay.reg_flat[r]
    for i, b in enumerate(lay.lane):
        value ^= b if ln >> i & 1 else 0
    for i, b in enumerate(lay.warp):
        value ^= b if w >> i & 1 else 0
    return value


# (source, destination) of the conversions an epilogue makes: MMA accumulators to the store's layout
EPILOGUES = {
    "v3-128x64-w8": (nvidia_mma_v3([8, 1], [16, 64, 16], [128, 64]), blocked([1, 8], [4, 8], [8, 1], [1, 0], [128, 64])),
    "v3-64x128-w4": (nvidia_mma_v3([4, 1], [16, 128, 16], [64, 128]), blocked([1, 8], [2, 16], [4, 1], [1, 0], [64, 128])),
    "v2-64x64-w4": (nvidia_mma_v2([2, 2], [64, 64]), blocked([1, 8], [4, 8], [4, 1], [1, 0], [64, 64])),
    "v2-32x16-w4": (nvidia_mma_v2([4, 1], [32, 16]), blocked([1, 2], [4, 8], [4, 1], [1, 0], [32, 16])),
    "v2-16x64-w2": (nvidia_mma_v2([1, 2], [16, 64]), blocked([1, 4], [2, 16], [2, 1], [1, 0], [16, 64])),
    "v2-batched-2x32x32-w4": (nvidia_mma_v2([2, 2, 1], [2, 32, 32]), blocked([1, 1, 4], [1, 4, 8], [2, 2, 1], [2, 1, 0], [2, 32, 32])),
}  # fmt: skip


@pytest.mark.parametrize("name", EPILOGUES)
@pytest.mark.parametrize("matrix_stores", [False, True])
def test_staged_offsets_are_where_the_staging_layout_puts_each_element(name, matrix_stores):
    src, dst = (Lay(x) for x in EPILOGUES[name])
    staging, rows = staging_for(src, dst, f16, matrix_stores)
    assert (rows is not None) == matrix_stores  # every accumulator here has stmatrix's fragment
    table = {staging.apply(offset=o): o for o in range(src.numel)}
    assert len(table) == src.numel  # a bijection: the scratch is exactly the tensor
    for lay in (src, dst):
        offsets = staged(lay, staging)
        for r, ln, w, coords in _hardware(lay):
            assert _thread_value(offsets, r, ln, w) == table[coords]


@pytest.mark.parametrize("name", EPILOGUES)
def test_stmatrix_rows_put_every_element_where_the_staging_layout_does(name):
    """stmatrix.x4 as the PTX ISA defines it, simulated: lane 8j+i gives the address of row i
    of matrix j; lane t's word j (source registers 8k+2j, 8k+2j+1) lands at elements 2(t%4),
    2(t%4)+1 of row t/4 of matrix j. Every source element must land at its staging offset,
    each 16-byte row aligned."""
    src_linear, dst_linear = EPILOGUES[name]
    src = Lay(src_linear)
    staging, rows = staging_for(src, Lay(dst_linear), f16, True)
    table = {staging.apply(offset=o): o for o in range(src.numel)}
    row_offsets = staged(rows, staging)
    written = {}
    for w in range(src_linear.num_warps):
        for k in range(rows.nregs):
            address = [_thread_value(row_offsets, k, ln, w) for ln in range(32)]
            assert all(a % 8 == 0 for a in address)  # 16-byte rows
            for t in range(32):
                for j in range(4):
                    for h in range(2):
                        r = 8 * k + 2 * j + h
                        at = address[8 * j + t // 4] + 2 * (t % 4) + h
                        coords = src_linear.apply(register=r, lane=t, warp=w)
                        assert at == table[coords], (w, k, t, j, h)
                        written[at] = coords
    assert len(written) == src.numel


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


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_matmul_ptx_uses_vector_shared_accesses(target):
    """The tutorial matmul (128x128x32, 4 warps, not pipelined): operand stores into the swizzled
    buffers are vectors; the epilogue's conversion (fp16 MMA accumulator -> the store's layout)
    writes four 8x8 matrices per stmatrix.x4 on sm_90, packed pairs on sm_80, and reads 16-byte
    vectors; no scalar 16-bit shared access remains."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}  # fmt: skip
    ck = kl.compile(
        matmul_kernel, signature=sig, attrs={k: {"tt.divisibility": 16} for k in sig},
        constexprs=dict(stride_ak=1, stride_bn=1, stride_cn=1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128,
                        BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION=""),
        target=target, num_warps=4, num_stages=1,  # operands through registers, not cp.async
    )  # fmt: skip
    forms = Counter(re.findall(r"\b((?:st|ld)\.shared(?:\.v\d)?\.\w+|stmatrix[\w.]*)", ck.asm["ptx"]))
    assert forms["st.shared.v4.b32"] == 8 and forms["ld.shared.v4.b32"] == 16
    # the epilogue: 128x128 halves over 128 threads, 128 each: 16 x (4 pairs) or 64 pairs
    if target == "sm_90":
        assert forms["stmatrix.sync.aligned.m8n8.x4.shared.b16"] == 16
    else:
        assert forms["stmatrix.sync.aligned.m8n8.x4.shared.b16"] == 0
        assert forms["st.shared.v2.b16"] + forms["st.shared.b32"] == 64
    assert forms["st.shared.b16"] == 0 and forms["ld.shared.b16"] == 0


@pytest.mark.parametrize("name", EPILOGUES)
@pytest.mark.parametrize("matrix_stores", [False, True])
def test_the_lab_sees_the_staging_the_lowering_uses(name, matrix_stores):
    """conversion_plan (what the lab and the notebooks show) and the lowering's staging_for
    are one choice: the same shared layout, stmatrix rows exactly when the lowering uses them."""
    src_linear, dst_linear = EPILOGUES[name]
    staging, rows = staging_for(Lay(src_linear), Lay(dst_linear), f16, matrix_stores)
    plan = conversion_plan(src_linear, dst_linear, 2, matrix_stores=matrix_stores)
    assert plan.kind == "shared"
    assert plan.shared == staging
    assert (plan.matrix_rows is not None) == (rows is not None)
    assert ("stmatrix" in str(plan)) == (rows is not None)
