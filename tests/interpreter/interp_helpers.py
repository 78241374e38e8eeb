"""Helpers for interpreter tests: build small TTIR kernels as text and run them."""

from __future__ import annotations

import numpy as np

from kernellab.backends.interpreter import prepare
from kernellab.ir import parse_module


def run(text: str, args, grid, trace=None):
    kernel = prepare(parse_module(text))
    kernel.run(args, grid, trace)
    return kernel


def program_offsets(n: int, prefix: str = "") -> str:
    """TTIR lines defining `%<prefix>offs = pid * n + [0, n)` (tensor<n x i32>); needs %pid."""
    p = prefix
    return f"""
    %{p}n = arith.constant {n} : i32
    %{p}start = arith.muli %pid, %{p}n : i32
    %{p}start_s = tt.splat %{p}start : i32 -> tensor<{n}xi32>
    %{p}range = tt.make_range {{start = 0 : i32, end = {n} : i32}} : tensor<{n}xi32>
    %{p}offs = arith.addi %{p}start_s, %{p}range : tensor<{n}xi32>"""


def pointers(name: str, ptr: str, t: str, n: int, offs: str) -> str:
    """TTIR lines defining `%<name> = %<ptr> + %<offs>`, a tensor<n x !tt.ptr<t>>."""
    return f"""
    %{name}_s = tt.splat %{ptr} : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %{name} = tt.addptr %{name}_s, %{offs} : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>"""


def elementwise(body: str, in_types: list[str], out_type: str, n: int) -> str:
    """A kernel loading inputs %x0, %x1, ... (tensor<n x T>) at offset pid*n, running `body`
    (which defines %out of tensor<n x out_type>) and storing %out."""
    params = [f"%p{k}: !tt.ptr<{t}>" for k, t in enumerate(in_types)]
    loads = "".join(
        pointers(f"a{k}", f"p{k}", t, n, "offs")
        + f"\n    %x{k} = tt.load %a{k} : tensor<{n}x!tt.ptr<{t}>>"
        for k, t in enumerate(in_types)
    )
    return f"""
builtin.module {{
  tt.func public @k({", ".join(params)}, %out_ptr: !tt.ptr<{out_type}>) {{
    %pid = tt.get_program_id x : i32{program_offsets(n)}{loads}
    {body}{pointers("oa", "out_ptr", out_type, n, "offs")}
    tt.store %oa, %out : tensor<{n}x!tt.ptr<{out_type}>>
    tt.return
  }}
}}
"""


def poisoned(shape, dtype) -> np.ndarray:
    """An output buffer filled with NaN (floats) or a sentinel (ints) so unwritten elements show."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.kind == "V":
        return np.full(shape, np.nan, dtype)
    if dtype == np.bool_:
        return np.zeros(shape, bool)
    return np.full(shape, np.iinfo(dtype).min + 7, dtype)


def run_elementwise(body, inputs, in_types, out_type, out_dtype, programs=4):
    """Run `body` over `inputs` (flat arrays of length programs * n); return the output."""
    n = inputs[0].size // programs
    out = poisoned(inputs[0].size, out_dtype)
    run(elementwise(body, in_types, out_type, n), [*inputs, out], (programs,))
    return out


def tile_io(t: str, rows: int, cols: int, out_t: str, out_len: int, body: str) -> str:
    """A kernel loading a rows x cols tile %x (row-major, program p at p*rows*cols), running
    `body`, which defines %out of tensor<out_len x out_t>, and storing it at p*out_len."""
    n = rows * cols
    return f"""
builtin.module {{
  tt.func public @k(%in_ptr: !tt.ptr<{t}>, %out_ptr: !tt.ptr<{out_t}>) {{
    %pid = tt.get_program_id x : i32{program_offsets(n)}{pointers("pa", "in_ptr", t, n, "offs")}
    %flat = tt.load %pa : tensor<{n}x!tt.ptr<{t}>>
    %x = tt.reshape %flat : tensor<{n}x{t}> -> tensor<{rows}x{cols}x{t}>
    {body}{program_offsets(out_len, "o")}{pointers("oa", "out_ptr", out_t, out_len, "ooffs")}
    tt.store %oa, %out : tensor<{out_len}x!tt.ptr<{out_t}>>
    tt.return
  }}
}}
"""


def reduce_region(op: str, t: str, ret: str = "tt.reduce.return") -> str:
    return f"""({{
    ^bb0(%a: {t}, %b: {t}):
      %c = arith.{op} %a, %b : {t}
      {ret} %c : {t}
    }})"""
