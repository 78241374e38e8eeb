"""TTIR inputs shared by the TTGIR tests (written as the frontend prints them)."""

from __future__ import annotations

from kernellab.ir import parse_module


def vector_add(aligned: bool = True, block: int = 1024, elem: str = "f32") -> str:
    """out = x + y over `block` elements per program, masked with `offs < n`."""
    div = " {tt.divisibility = 16 : i32}" if aligned else ""
    p = f"!tt.ptr<{elem}>"
    t = f"tensor<{block}x!tt.ptr<{elem}>>"
    return f"""builtin.module {{
  tt.func public @add(%x: {p}{div}, %y: {p}{div}, %out: {p}{div}, %n: i32{div}) {{
    %pid = tt.get_program_id x : i32
    %c = arith.constant {block} : i32
    %start = arith.muli %pid, %c : i32
    %range = tt.make_range {{end = {block} : i32, start = 0 : i32}} : tensor<{block}xi32>
    %base = tt.splat %start : i32 -> tensor<{block}xi32>
    %offs = arith.addi %base, %range : tensor<{block}xi32>
    %nn = tt.splat %n : i32 -> tensor<{block}xi32>
    %mask = arith.cmpi slt, %offs, %nn : tensor<{block}xi32>
    %xs = tt.splat %x : {p} -> {t}
    %xp = tt.addptr %xs, %offs : {t}, tensor<{block}xi32>
    %a = tt.load %xp, %mask : {t}
    %ys = tt.splat %y : {p} -> {t}
    %yp = tt.addptr %ys, %offs : {t}, tensor<{block}xi32>
    %b = tt.load %yp, %mask : {t}
    %sum = arith.addf %a, %b : tensor<{block}x{elem}>
    %os = tt.splat %out : {p} -> {t}
    %op = tt.addptr %os, %offs : {t}, tensor<{block}xi32>
    tt.store %op, %sum, %mask : {t}
    tt.return
  }}
}}
"""


SOFTMAX_ROWS = """builtin.module {
  tt.func public @softmax(%out: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %in: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n_cols: i32 {tt.divisibility = 16 : i32}) {
    %pid = tt.get_program_id x : i32
    %c4 = arith.constant 4 : i32
    %r0 = arith.muli %pid, %c4 : i32
    %rr = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %rs = tt.splat %r0 : i32 -> tensor<4xi32>
    %rows = arith.addi %rs, %rr : tensor<4xi32>
    %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
    %ncs = tt.splat %n_cols : i32 -> tensor<4x1xi32>
    %rowoff = arith.muli %rows2, %ncs : tensor<4x1xi32>
    %cols = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %cols2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %rb = tt.broadcast %rowoff : tensor<4x1xi32> -> tensor<4x256xi32>
    %cb = tt.broadcast %cols2 : tensor<1x256xi32> -> tensor<4x256xi32>
    %offs = arith.addi %rb, %cb : tensor<4x256xi32>
    %ncs1 = tt.splat %n_cols : i32 -> tensor<1x256xi32>
    %m1 = arith.cmpi slt, %cols2, %ncs1 : tensor<1x256xi32>
    %mask = tt.broadcast %m1 : tensor<1x256xi1> -> tensor<4x256xi1>
    %ins = tt.splat %in : !tt.ptr<f32> -> tensor<4x256x!tt.ptr<f32>>
    %inp = tt.addptr %ins, %offs : tensor<4x256x!tt.ptr<f32>>, tensor<4x256xi32>
    %ninf = arith.constant dense<0xff800000> : tensor<4x256xf32>
    %x = tt.load %inp, %mask, %ninf : tensor<4x256x!tt.ptr<f32>>
    %max = "tt.reduce"(%x) <{axis = 1 : i32}> ({
    ^bb0(%l: f32, %r: f32):
      %m = arith.maxnumf %l, %r : f32
      tt.reduce.return %m : f32
    }) : (tensor<4x256xf32>) -> tensor<4xf32>
    %max2 = tt.expand_dims %max {axis = 1 : i32} : tensor<4xf32> -> tensor<4x1xf32>
    %maxb = tt.broadcast %max2 : tensor<4x1xf32> -> tensor<4x256xf32>
    %xs = arith.subf %x, %maxb : tensor<4x256xf32>
    %e = math.exp %xs : tensor<4x256xf32>
    %outs = tt.splat %out : !tt.ptr<f32> -> tensor<4x256x!tt.ptr<f32>>
    %outp = tt.addptr %outs, %offs : tensor<4x256x!tt.ptr<f32>>, tensor<4x256xi32>
    tt.store %outp, %e, %mask : tensor<4x256x!tt.ptr<f32>>
    tt.return
  }
}
"""


DOT = """builtin.module {
  tt.func public @mm(%a: tensor<32x16xf16>, %b: tensor<16x64xf16>, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
    %acc = arith.constant dense<0.000000e+00> : tensor<32x64xf32>
    %d = tt.dot %a, %b, %acc {input_precision = "ieee", max_num_imprecise_acc = 0 : i32} : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
    %s = tt.splat %out : !tt.ptr<f32> -> tensor<32x64x!tt.ptr<f32>>
    tt.store %s, %d : tensor<32x64x!tt.ptr<f32>>
    tt.return
  }
}
"""


def parse(text: str):
    module = parse_module(text)
    module.verify()
    return module


DOT_BATCHED = """builtin.module {
  tt.func public @bmm(%a: tensor<2x16x32xf32>, %b: tensor<2x32x16xf32>, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
    %acc = arith.constant dense<0.000000e+00> : tensor<2x16x16xf32>
    %d = tt.dot %a, %b, %acc {input_precision = "ieee", max_num_imprecise_acc = 0 : i32} : tensor<2x16x32xf32> * tensor<2x32x16xf32> -> tensor<2x16x16xf32>
    %s = tt.splat %out : !tt.ptr<f32> -> tensor<2x16x16x!tt.ptr<f32>>
    tt.store %s, %d : tensor<2x16x16x!tt.ptr<f32>>
    tt.return
  }
}
"""
