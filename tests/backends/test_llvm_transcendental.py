"""The lowering core's own fp64 transcendental functions (backends/llvm/transcendental.py, what
the GPU targets run; the CPU target calls libm), measured on the host: each is JIT-compiled
alone by llvmlite and compared with Python's math on dense random grids, in ulps. A GPU test
samples a few hundred points; these sample a hundred thousand (the fp64 erf's Maclaurin series
was 32 ulps off near 2.5, and only one GPU run in several drew such a point)."""

import ctypes
import math

import llvmlite.ir as ir
import numpy as np
import pytest

from kernellab.backends.llvm import transcendental
from kernellab.backends.llvm.types import F64
from tests.backends.llvm_jit import jit_function


class _Emitter:
    """What the functions use of the lowering's context: a builder and intrinsic calls."""

    def __init__(self, module, builder):
        self.module, self.b = module, builder

    def call(self, name, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, [a.type for a in args]), name)
        return self.b.call(fn, args)


def compiled(name: str):
    module = ir.Module(name)
    fn = ir.Function(module, ir.FunctionType(F64, [F64]), "f")
    builder = ir.IRBuilder(fn.append_basic_block())
    builder.ret(getattr(transcendental, name)(_Emitter(module, builder), fn.args[0]))
    return jit_function(module, "f", ctypes.c_double)


def _ulps(got: float, want: float) -> float:
    return abs(got - want) / math.ulp(want) if want else abs(got) / math.ulp(0.0)


def _exp_spread(rng, n, lo, hi):
    return np.exp(rng.uniform(math.log(lo), math.log(hi), n))


# name: (reference, sampler, most ulps allowed)
CASES = {
    "erf_f64": (math.erf, lambda rng, n: np.concatenate([rng.uniform(-6, 6, n), rng.uniform(1.9, 2.6, n)]), 2),
    "exp_f64": (math.exp, lambda rng, n: rng.uniform(-700, 700, n), 1),
    "exp2_f64": (lambda v: 2.0**v, lambda rng, n: rng.uniform(-1000, 1000, n), 1),
    "log_f64": (math.log, lambda rng, n: _exp_spread(rng, n, 1e-300, 1e300), 1),
    "log2_f64": (math.log2, lambda rng, n: _exp_spread(rng, n, 1e-300, 1e300), 1),
    "sin_f64": (math.sin, lambda rng, n: rng.uniform(-100, 100, n), 2),
    "cos_f64": (math.cos, lambda rng, n: rng.uniform(-100, 100, n), 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fp64_function_within_its_ulps(name):
    reference, sample, allowed = CASES[name]
    fn = compiled(name)
    xs = sample(np.random.default_rng(), 40_000)
    errors = np.array([_ulps(fn(float(x)), reference(float(x))) for x in xs])
    worst = int(np.argmax(errors))
    assert errors[worst] <= allowed, f"{name}({xs[worst]!r}) is {errors[worst]:.0f} ulps off (allowed {allowed})"
