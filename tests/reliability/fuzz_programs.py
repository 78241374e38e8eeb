"""Random block programs for the fuzzer (test_fuzz.py): what a program is, a Hypothesis strategy
that draws one, its kernel source, and its reference computed with numpy.

A program loads up to three inputs of mixed dtypes (int32, float16, float32) under a mask with
an `other` value, combines them through a random elementwise expression (arithmetic, maximum,
minimum, abs, negation, where, casts, Python constants, all with Triton's type promotion), and
finishes one way: store the values, reduce along an axis (tl.sum/max/min, or tl.reduce with a
combine function), or scan along an axis (tl.cumsum, or tl.associative_scan with a combine
function). A separate program kind checks tl.swizzle2d. Outputs are stored as float64, which
holds every intermediate value exactly, so results compare in float64.

The reference follows the kernel's dtypes step by step (numpy's float16 and float32 arithmetic
rounds like the hardware's), so elementwise results should agree to the last bit; reductions
and scans, whose order of operations is the implementation's, get a bound of n·eps·Σ|x|.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

DTYPES = {"int32": np.int32, "float16": np.float16, "float32": np.float32}
_RANK = {"int32": 0, "float16": 1, "float32": 2}
EPS = {"int32": 0.0, "float16": 2.0**-10, "float32": 2.0**-23}


def promote(a: str, b: str) -> str:
    """Triton's result dtype of a binary op on int32 / float16 / float32 tensors."""
    return a if _RANK[a] >= _RANK[b] else b


def promote_constant(tensor: str, constant) -> str:
    """A Python float with an int32 tensor gives float32; anything else keeps the tensor's."""
    return "float32" if tensor == "int32" and isinstance(constant, float) else tensor


@dataclass
class Node:
    """One expression node: op (`load`, `const`, `cast`, `add`, `sub`, `mul`, `maximum`, `minimum`,
    `abs`, `neg`, `where`), its children, its dtype and, for leaves, which input or constant."""

    op: str
    dtype: str
    children: list = field(default_factory=list)
    value: object = None

    def source(self) -> str:
        c = [k.source() for k in self.children]
        if self.op == "load":
            return self.value
        if self.op == "const":
            return repr(self.value)
        if self.op == "cast":
            return f"({c[0]}).to(tl.{self.dtype})"
        if self.op in ("add", "sub", "mul"):
            return f"({c[0]} {dict(add='+', sub='-', mul='*')[self.op]} {c[1]})"
        if self.op in ("maximum", "minimum"):
            return f"tl.{self.op}({c[0]}, {c[1]})"
        if self.op == "abs":
            return f"tl.abs({c[0]})"
        if self.op == "neg":
            return f"(-{c[0]})"
        return f"tl.where({c[0]} > {c[1]}, {c[2]}, {c[3]})"  # where

    def evaluate(self, inputs: dict) -> np.ndarray:
        """The node's value with numpy, in the node's dtype."""
        dt = DTYPES[self.dtype]
        if self.op == "load":
            return inputs[self.value]
        if self.op == "const":
            return np.array(self.value, dt)
        v = [k.evaluate(inputs) for k in self.children]
        if self.op == "cast":
            return v[0].astype(dt)
        if self.op == "where":
            cmp = promote(self.children[0].dtype, self.children[1].dtype)
            cond = v[0].astype(DTYPES[cmp]) > v[1].astype(DTYPES[cmp])
            return np.where(cond, v[2].astype(dt), v[3].astype(dt))
        v = [x.astype(dt) for x in v]
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
              "minimum": np.minimum, "abs": np.abs, "neg": np.negative}[self.op]  # fmt: skip
        return fn(*v).astype(dt)


@st.composite
def expressions(draw, leaves: list[Node], depth: int) -> Node:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.sampled_from(leaves))
        if leaf.dtype != "int32" and draw(st.integers(0, 5)) == 0:  # float → int on a load only
            return Node("cast", "int32", [leaf])
        return leaf
    op = draw(st.sampled_from(["add", "sub", "mul", "maximum", "minimum", "abs", "neg", "where", "cast", "const"]))
    sub = expressions(leaves, depth - 1)
    if op in ("abs", "neg"):
        child = draw(sub)
        return Node(op, child.dtype, [child])
    if op == "cast":
        child = draw(sub)
        target = draw(st.sampled_from(["float16", "float32"]))  # int → float and between floats
        return Node("cast", target, [child])
    if op == "where":
        a, b, x, y = draw(sub), draw(sub), draw(sub), draw(sub)
        return Node("where", promote(x.dtype, y.dtype), [a, b, x, y])
    if op == "const":  # a binary op with a Python constant on the right
        child = draw(sub)
        constant = draw(st.sampled_from([2, -1, 3, 0.5, -1.5, 0.25]))
        bop = draw(st.sampled_from(["add", "sub", "mul", "maximum", "minimum"]))
        dtype = promote_constant(child.dtype, constant)
        return Node(bop, dtype, [child, Node("const", dtype, value=constant)])
    a, b = draw(sub), draw(sub)
    return Node(op, promote(a.dtype, b.dtype), [a, b])


COMBINES = {
    "add": "return a + b",
    "max": "return tl.maximum(a, b)",
    "maxabs": "return tl.maximum(tl.abs(a), tl.abs(b))",
}
FINISHES = ["store", "sum", "max", "min", "reduce_add", "reduce_max", "reduce_maxabs", "cumsum", "scan_add",
            "scan_max", "scan_maxabs"]  # fmt: skip


@dataclass
class Program:
    shape: tuple[int, ...]  # the block: (BLOCK,) or (M, N)
    valid: tuple[int, ...]  # the mask keeps indices below these, per dim
    inputs: dict  # name → dtype
    others: dict  # name → the `other` of its masked load
    expr: Node
    finish: str
    axis: int

    def source(self, name: str) -> str:
        names = list(self.inputs)
        params = ", ".join([*(f"{n}_ptr" for n in names), "out_ptr", *(f"v{d}" for d in range(len(self.shape))),
                            *(f"B{d}: tl.constexpr" for d in range(len(self.shape)))])  # fmt: skip
        if len(self.shape) == 1:
            body = ["offs = tl.arange(0, B0)", "mask = offs < v0"]
        else:
            body = ["rows = tl.arange(0, B0)[:, None]", "cols = tl.arange(0, B1)[None, :]",
                    "offs = rows * B1 + cols", "mask = (rows < v0) & (cols < v1)"]  # fmt: skip
        body += [f"{n} = tl.load({n}_ptr + offs, mask=mask, other={self.others[n]!r})" for n in names]
        body += [f"value = {self.expr.source()}", self._finish_source()]
        lines = ["import kernellab as kl", "import kernellab.language as tl", ""]
        for kind, combine in COMBINES.items():
            lines += ["", "@kl.jit", f"def combine_{kind}(a, b):", f"    {combine}", ""]
        lines += ["", "@kl.jit", f"def {name}({params}):", *(f"    {line}" for line in body)]
        return "\n".join(lines) + "\n"

    def _finish_source(self) -> str:
        f, axis = self.finish, self.axis
        if f == "store":
            return "tl.store(out_ptr + offs, value, mask=mask)"
        if f in ("sum", "max", "min"):
            result = f"tl.{f}(value, axis={axis})"
        elif f.startswith("reduce_"):
            result = f"tl.reduce(value, {axis}, combine_{f[7:]})"
        elif f == "cumsum":
            return f"tl.store(out_ptr + offs, tl.cumsum(value, axis={axis}))"
        else:
            return f"tl.store(out_ptr + offs, tl.associative_scan(value, {axis}, combine_{f[5:]}))"
        if len(self.shape) == 1:
            return f"tl.store(out_ptr, {result})"
        kept = "tl.arange(0, B1)" if axis == 0 else "tl.arange(0, B0)"
        return f"tl.store(out_ptr + {kept}, {result})"

    def finest_eps(self) -> float:
        """The machine epsilon of the least precise float type anywhere in the program."""
        dtypes, stack = set(self.inputs.values()), [self.expr]
        while stack:
            node = stack.pop()
            dtypes.add(node.dtype)
            stack += node.children
        return max((EPS[d] for d in dtypes if d != "int32"), default=0.0)

    def out_shape(self) -> tuple[int, ...]:
        if self.finish in ("store", "cumsum") or self.finish.startswith("scan_"):
            return self.shape
        return (1,) if len(self.shape) == 1 else (self.shape[1 - self.axis],)

    def masked_inputs(self, arrays: dict) -> dict:
        """The values the loads produce: each input where the mask holds, its `other` elsewhere."""
        mask = self.mask()
        return {n: np.where(mask, a, np.array(self.others[n]).astype(a.dtype)) for n, a in arrays.items()}

    def mask(self) -> np.ndarray:
        grids = np.meshgrid(*[np.arange(s) for s in self.shape], indexing="ij")
        return np.logical_and.reduce([g < v for g, v in zip(grids, self.valid)])

    def reference(self, arrays: dict) -> tuple[np.ndarray, np.ndarray]:
        """(expected float64 output, per-element tolerance); NaN where nothing is written."""
        value = np.broadcast_to(self.expr.evaluate(self.masked_inputs(arrays)), self.shape)
        exact = value.astype(np.float64)
        eps = EPS[self.expr.dtype]
        f, axis = self.finish, self.axis
        if f == "store":
            return np.where(self.mask(), exact, np.nan), np.zeros(self.shape)
        magnitude = np.abs(exact)
        n = self.shape[axis]
        if f in ("sum", "reduce_add"):
            out = exact.sum(axis=axis)
            tol = (n + 2) * eps * magnitude.sum(axis=axis)
        elif f in ("max", "reduce_max", "min"):
            out = exact.max(axis=axis) if f != "min" else exact.min(axis=axis)
            tol = np.zeros_like(out)
        elif f == "reduce_maxabs":
            out, tol = magnitude.max(axis=axis), np.zeros(magnitude.max(axis=axis).shape)
        elif f in ("cumsum", "scan_add"):
            out = np.cumsum(exact, axis=axis)
            tol = (n + 2) * eps * np.cumsum(magnitude, axis=axis)
        elif f == "scan_max":
            out, tol = np.maximum.accumulate(exact, axis=axis), np.zeros(self.shape)
        else:  # scan_maxabs: the first element passes through unchanged
            out = np.maximum.accumulate(magnitude, axis=axis)
            first = [slice(None)] * len(self.shape)
            first[axis] = 0
            out[tuple(first)] = exact[tuple(first)]
            tol = np.zeros(self.shape)
        return np.reshape(out, self.out_shape()), np.reshape(tol, self.out_shape())


@st.composite
def programs(draw) -> Program:
    rank = draw(st.sampled_from([1, 2]))
    if rank == 1:
        shape = (2 ** draw(st.integers(1, 10)),)
    else:
        shape = (2 ** draw(st.integers(1, 5)), 2 ** draw(st.integers(1, 5)))
    valid = tuple(draw(st.integers(1, s)) for s in shape)
    count = draw(st.integers(1, 3))
    inputs = {name: draw(st.sampled_from(list(DTYPES))) for name in ["a", "b", "c"][:count]}
    others = {name: (draw(st.sampled_from([0, 1, -2])) if dt == "int32" else draw(st.sampled_from([0.0, 1.5, -2.0])))
              for name, dt in inputs.items()}  # fmt: skip
    leaves = [Node("load", dt, value=name) for name, dt in inputs.items()]
    expr = draw(expressions(leaves, draw(st.integers(1, 3))))
    finish = draw(st.sampled_from(FINISHES))
    axis = draw(st.integers(0, rank - 1))
    return Program(shape, valid, inputs, others, expr, finish, axis)


def random_inputs(program: Program, rng: np.random.Generator) -> dict:
    """Fresh inputs: small integers, and floats in [-2, 2] (products of a few stay in fp16's range)."""
    arrays = {}
    for name, dt in program.inputs.items():
        if dt == "int32":
            arrays[name] = rng.integers(-8, 9, program.shape).astype(np.int32)
        else:
            arrays[name] = rng.uniform(-2, 2, program.shape).astype(DTYPES[dt])
    return arrays


def swizzle2d_reference(size_i: int, size_j: int, size_g: int) -> tuple[np.ndarray, np.ndarray]:
    """Where tl.swizzle2d sends every (i, j) of a size_i × size_j grid: groups of size_g rows
    are walked column by column, the last group being as many rows as remain."""
    i, j = np.meshgrid(np.arange(size_i), np.arange(size_j), indexing="ij")
    linear = i * size_j + j
    group = linear // (size_g * size_j)
    first_row = group * size_g
    rows = np.minimum(size_i - first_row, size_g)
    within = linear - group * size_g * size_j
    return first_row + within % rows, within // rows


SWIZZLE_SOURCE = """
import kernellab as kl
import kernellab.language as tl


@kl.jit
def swizzle(out_i, out_j, M: tl.constexpr, N: tl.constexpr, G: tl.constexpr):
    i = tl.arange(0, M)[:, None] + tl.zeros([M, N], tl.int32)
    j = tl.arange(0, N)[None, :] + tl.zeros([M, N], tl.int32)
    new_i, new_j = tl.swizzle2d(i, j, M, N, G)
    tl.store(out_i + i * N + j, new_i)
    tl.store(out_j + i * N + j, new_j)
"""
