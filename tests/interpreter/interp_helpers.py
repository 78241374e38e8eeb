"""Helpers for interpreter tests: build small TTIR kernels as text and run them."""

from __future__ import annotations

import numpy as np

from kernellab.backends.interpreter import prepare
from kernellab.ir import parse_module


def run(text: str, args, grid, trace=None):
    kernel = prepare(parse_module(text))
    kernel.run(args, grid, trace)
    return kernel


def elementwise(body: str, in_types: list[str], out_type: str, n: int) -> str:
    """A kernel loading inputs %x0, %x1, ... (tensor<n x T>) at offset pid*n, running `body`
    (which defines %out of tensor<n x out_type>) and storing %out."""
    params, loads = [], []
    for k, t in enumerate(in_types):
        params.append(f"%p{k}: !tt.ptr<{t}>")
        loads.append(f"""
    %s{k} = tt.splat %p{k} : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %a{k} = tt.addptr %s{k}, %offs : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    %x{k} = tt.load %a{k} : tensor<{n}x!tt.ptr<{t}>>""")
    return f"""
builtin.module {{
  tt.func public @k({", ".join(params)}, %out_ptr: !tt.ptr<{out_type}>) {{
    %pid = tt.get_program_id x : i32
    %n = arith.constant {n} : i32
    %start = arith.muli %pid, %n : i32
    %start_s = tt.splat %start : i32 -> tensor<{n}xi32>
    %range = tt.make_range {{start = 0 : i32, end = {n} : i32}} : tensor<{n}xi32>
    %offs = arith.addi %start_s, %range : tensor<{n}xi32>{"".join(loads)}
    {body}
    %os = tt.splat %out_ptr : !tt.ptr<{out_type}> -> tensor<{n}x!tt.ptr<{out_type}>>
    %oa = tt.addptr %os, %offs : tensor<{n}x!tt.ptr<{out_type}>>, tensor<{n}xi32>
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
    %pid = tt.get_program_id x : i32
    %n = arith.constant {n} : i32
    %start = arith.muli %pid, %n : i32
    %start_s = tt.splat %start : i32 -> tensor<{n}xi32>
    %range = tt.make_range {{start = 0 : i32, end = {n} : i32}} : tensor<{n}xi32>
    %offs = arith.addi %start_s, %range : tensor<{n}xi32>
    %ps = tt.splat %in_ptr : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %pa = tt.addptr %ps, %offs : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    %flat = tt.load %pa : tensor<{n}x!tt.ptr<{t}>>
    %x = tt.reshape %flat : tensor<{n}x{t}> -> tensor<{rows}x{cols}x{t}>
    {body}
    %m = arith.constant {out_len} : i32
    %ostart = arith.muli %pid, %m : i32
    %ostart_s = tt.splat %ostart : i32 -> tensor<{out_len}xi32>
    %orange = tt.make_range {{start = 0 : i32, end = {out_len} : i32}} : tensor<{out_len}xi32>
    %ooffs = arith.addi %ostart_s, %orange : tensor<{out_len}xi32>
    %os = tt.splat %out_ptr : !tt.ptr<{out_t}> -> tensor<{out_len}x!tt.ptr<{out_t}>>
    %oa = tt.addptr %os, %ooffs : tensor<{out_len}x!tt.ptr<{out_t}>>, tensor<{out_len}xi32>
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
