"""The fuzzer (issue 14, item 11): Hypothesis draws random block programs (fuzz_programs.py:
elementwise chains over mixed dtypes with casts and constants, masks with `other`, reductions
and scans with built-in and user combine functions, swizzle2d) and checks every element of
each result: the interpreter against numpy, and on the device (`-m gpu`) the GPU against the
interpreter and numpy.

KL_FUZZ_EXAMPLES sets the number of programs per test (default 30: a few seconds on the CPU).
KL_FUZZ_SEED picks Hypothesis' seed (default: derandomized, the same programs every run), so a
long device run can be split over processes that each draw other programs, e.g. 16 x 625:
  for s in $(seq 1 16); do KL_FUZZ_SEED=$s KL_FUZZ_EXAMPLES=625 pytest -q -m gpu \
      -k gpu tests/reliability/test_fuzz.py & done; wait
A failure prints the program's source; its seed replays it.
"""

import importlib.util
import itertools
import os

import numpy as np
import pytest
from .fuzz_programs import SWIZZLE_SOURCE, Node, Program, programs, random_inputs, swizzle2d_reference
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("KL_FUZZ_EXAMPLES", "30"))
SEED = int(os.environ.get("KL_FUZZ_SEED", "0")) or None
_counter = itertools.count()


def fuzz_settings(fn):
    configured = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=SEED is None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])(fn)  # fmt: skip
    return seed(SEED)(configured) if SEED is not None else configured


def _load(tmp_dir, source: str):
    """The generated kernel as a module of its own (the frontend reads its source file)."""
    name = f"fuzz_program_{os.getpid()}_{next(_counter)}"
    path = os.path.join(tmp_dir, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(program, kernel, arrays: dict, to_device=None, **launch):
    out = np.full(program.out_shape(), np.nan)  # poisoned: every element the kernel writes is checked
    args = [arrays[n] for n in program.inputs] + [out]
    if to_device is not None:
        args = [to_device(a) for a in args]
    kernel[(1,)](*args, *program.valid, *program.shape, **launch)
    return np.asarray(args[-1].cpu()) if to_device is not None else out


def _check(program, actual, expected, tolerance, what: str):
    written = ~np.isnan(expected)
    assert np.array_equal(np.isnan(actual), ~written), f"{what}: elements written where they should not be (or not)"
    diff = np.abs(actual[written] - expected[written])
    bad = ~(diff <= tolerance[written])
    if bad.any():
        k = int(np.argmax(bad))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {int(written.sum())} elements differ; first: got "
            f"{actual[written][k]!r}, expected {expected[written][k]!r} (tolerance {tolerance[written][k]!r})\n"
            f"program ({program.finish}, shape {program.shape}, valid {program.valid}):\n"
            + program.source("fuzz_kernel")
        )


@fuzz_settings
@given(program=programs(), data=st.data())
def test_random_block_programs_match_numpy_on_the_interpreter(tmp_path_factory, program, data):
    module = _load(str(tmp_path_factory.getbasetemp()), program.source("fuzz_kernel"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="input seed"))
    arrays = random_inputs(program, rng)
    expected, tolerance = program.reference(arrays)
    _check(program, _run(program, module.fuzz_kernel, arrays), expected, tolerance, "interpreter vs numpy")


@fuzz_settings
@given(m=st.integers(0, 5), n=st.integers(0, 5), g=st.integers(1, 40))
def test_swizzle2d_matches_its_definition(tmp_path_factory, m, n, g):
    module = _load(str(tmp_path_factory.getbasetemp()), SWIZZLE_SOURCE)
    M, N = 2**m, 2**n
    out_i, out_j = np.full((M, N), -1, np.int32), np.full((M, N), -1, np.int32)
    module.swizzle[(1,)](out_i, out_j, M=M, N=N, G=g)
    want_i, want_j = swizzle2d_reference(M, N, g)
    np.testing.assert_array_equal(out_i, want_i)
    np.testing.assert_array_equal(out_j, want_j)


@pytest.mark.gpu
@fuzz_settings
@given(program=programs(), data=st.data())
def test_random_block_programs_match_the_interpreter_on_the_gpu(tmp_path_factory, program, data):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    module = _load(str(tmp_path_factory.getbasetemp()), program.source("fuzz_kernel"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="input seed"))
    arrays = random_inputs(program, rng)
    expected, tolerance = program.reference(arrays)
    interpreted = _run(program, module.fuzz_kernel, arrays)
    def to_device(a):
        return torch.from_numpy(np.ascontiguousarray(a)).cuda()

    on_gpu = _run(program, module.fuzz_kernel, arrays, to_device=to_device)
    # the GPU may contract a*b+c into one fma (one rounding fewer): a few ulps of the magnitude
    slack = tolerance + 4 * program.finest_eps() * np.abs(np.nan_to_num(expected))
    _check(program, interpreted, expected, tolerance, "interpreter vs numpy")
    _check(program, on_gpu, interpreted, slack, "GPU vs interpreter")


# -- programs a device run found wrong, kept as regressions ------------------------------------


def _negated_chain(op: str, shape: tuple, valid: tuple) -> Program:
    """op(a, op(b, -a)) on int32 inputs masked with other=0, stored: the fuzzer's own form."""
    a, b = Node("load", "int32", value="a"), Node("load", "int32", value="b")
    expr = Node(op, "int32", [a, Node(op, "int32", [b, Node("neg", "int32", [a])])])
    return Program(shape, valid, {"a": "int32", "b": "int32"}, {"a": 0, "b": 0}, expr, "store", 0)


# min(a, min(b, -a)) with one valid element of two gave 0 on the GPU where the interpreter gave
# -6 (a = 6, b = 0): ptxas fused the two min into one VIMNMX3 and dropped the negation
# (the ptxas-workarounds pass, backends/nvidia/ptxas_workarounds.py).
FOUND = [_negated_chain(op, shape, valid) for op in ("minimum", "maximum")
         for shape, valid in (((2,), (1,)), ((1024,), (1000,)))]  # fmt: skip
_FOUND_IDS = [f"{p.expr.op}-{p.shape[0]}-valid{p.valid[0]}" for p in FOUND]


def _found_inputs(program, rng, trial: int) -> dict:
    """The fuzzer's small integers, then the whole int32 range; the found values and int32's
    edges at the front."""
    arrays = random_inputs(program, rng)
    if trial % 2:
        arrays = {n: rng.integers(-(2**31), 2**31, program.shape).astype(np.int32) for n in arrays}
    a, b = arrays["a"], arrays["b"]
    a[0], b[0] = (6, 0) if program.expr.op == "minimum" else (-6, 0)
    edges = np.array([2**31 - 1, -(2**31), -(2**31) + 1, -1, 1, 0], np.int32)
    if program.shape[0] > edges.size:
        a[1 : 1 + edges.size], b[1 : 1 + edges.size] = edges, edges[::-1]
    return arrays


@pytest.mark.parametrize("program", FOUND, ids=_FOUND_IDS)
def test_found_programs_match_numpy_on_the_interpreter_and_the_cpu(tmp_path_factory, program):
    module = _load(str(tmp_path_factory.getbasetemp()), program.source("fuzz_kernel"))
    rng = np.random.default_rng()
    for trial in range(4):
        arrays = _found_inputs(program, rng, trial)
        expected, tolerance = program.reference(arrays)
        _check(program, _run(program, module.fuzz_kernel, arrays), expected, tolerance, "interpreter vs numpy")
        on_cpu = _run(program, module.fuzz_kernel, arrays, target="cpu")
        _check(program, on_cpu, expected, tolerance, "CPU backend vs numpy")


@pytest.mark.gpu
@pytest.mark.parametrize("program", FOUND, ids=_FOUND_IDS)
def test_found_programs_match_the_interpreter_on_the_gpu(tmp_path_factory, program):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    module = _load(str(tmp_path_factory.getbasetemp()), program.source("fuzz_kernel"))
    rng = np.random.default_rng()
    for trial in range(4):
        arrays = _found_inputs(program, rng, trial)
        expected, tolerance = program.reference(arrays)
        interpreted = _run(program, module.fuzz_kernel, arrays)
        on_gpu = _run(program, module.fuzz_kernel, arrays,
                      to_device=lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda())  # fmt: skip
        _check(program, interpreted, expected, tolerance, "interpreter vs numpy")
        _check(program, on_gpu, interpreted, tolerance, "GPU vs interpreter")
