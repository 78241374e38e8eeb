"""kl.lab.check and the puzzles: every solution passes its puzzle, and wrong kernels fail with a
diff that says what is wrong (never written, wrong values, out of bounds, order, compile errors).

Each check draws fresh random inputs (no seed), so a solution that only works on some inputs
fails sooner or later.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import kernellab as kl  # noqa: E402
import kernellab.language as tl  # noqa: E402
from kernellab.lab.checks import check  # noqa: E402
from kernellab.lab.puzzles import PUZZLES, grouped_tile, puzzle  # noqa: E402

SOLUTIONS_FILE = Path(__file__).resolve().parents[2] / "notebooks" / "exercises" / "solutions.py"


def load_solutions() -> dict:
    spec = importlib.util.spec_from_file_location("exercise_solutions", SOLUTIONS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SOLUTIONS


SOLUTIONS = load_solutions()


def test_every_puzzle_has_a_solution():
    assert list(SOLUTIONS) == list(PUZZLES)


@pytest.mark.parametrize("name", list(PUZZLES))
def test_solution_passes(name):
    result = check(SOLUTIONS[name], name)
    assert result.passed, result.text()
    assert result.where == "interpreter"
    assert result.text().startswith("PASS")
    for diff in result.outputs:
        assert diff.right.all() and diff.expected.size > 0
    assert result.access is not None  # the access view of the learner's loads and stores
    page = result._repr_html_()
    assert "PASS" in page and "data:image/png;base64," in page and "<b>hint:</b>" not in page


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(PUZZLES))
def test_solution_passes_on_the_gpu(name):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    result = check(SOLUTIONS[name], name, device="cuda")
    assert result.passed, result.text()
    assert result.where == "GPU"


def test_a_kernel_that_writes_nothing_fails_with_every_element_unwritten():
    @kl.jit
    def load_block(x_ptr, z_ptr, BLOCK: tl.constexpr):
        tl.load(x_ptr + tl.arange(0, BLOCK))

    result = check(load_block, "load_block")
    assert not result.passed
    assert "z_ptr: 0 of 128 elements right, 0 wrong, 128 never written" in result.text()
    page = result._repr_html_()
    assert "FAIL" in page and "<b>hint:</b>" in page and page.count("data:image/png;base64,") == 2


def test_a_missing_mask_is_an_out_of_bounds_error_in_the_access_view():
    @kl.jit
    def masks(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(z_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))

    result = check(masks, "masks")
    assert not result.passed
    assert "out-of-bounds load from argument 'x_ptr' in program (3, 0, 0)" in result.error
    assert result.access.data.arg == "x_ptr" and result.access.data.error_index == 1000
    assert "mask=" in result.text()  # the hint


def test_wrong_values_name_the_worst_element():
    @kl.jit
    def row_max(x_ptr, z_ptr, N, stride_x, BLOCK_N: tl.constexpr):
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + tl.program_id(0) * stride_x + cols, mask=cols < N, other=0.0)
        tl.store(z_ptr + tl.program_id(0), tl.max(x, axis=0))

    result = check(row_max, "row_max")
    assert not result.passed
    (diff,) = result.outputs
    assert diff.wrong.all()  # every row of negative numbers has maximum 0 from the masked lanes
    assert "0 of 40 elements right, 40 wrong" in result.text() and "got 0, expected -" in result.text()


def test_a_computed_nan_is_wrong_not_unwritten():
    @kl.jit
    def softmax(x_ptr, z_ptr, N, stride_x, stride_z, BLOCK_N: tl.constexpr):
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + tl.program_id(0) * stride_x + cols, mask=cols < N, other=-float("inf"))
        e = tl.exp(x)  # no maximum subtracted: exp overflows to inf, inf / inf is NaN
        tl.store(z_ptr + tl.program_id(0) * stride_z + cols, e / tl.sum(e, axis=0), mask=cols < N)

    result = check(softmax, "softmax")
    (diff,) = result.outputs
    assert not result.passed and not diff.unwritten.any() and diff.wrong.any()
    assert "wrong elements are NaN" in result.text()


def test_row_major_order_fails_the_grouped_matmul_although_the_values_are_right():
    @kl.jit
    def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):  # fmt: skip
        pid = tl.program_id(0)
        tiles_n = tl.cdiv(N, BLOCK_N)
        rm = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :], mask=rn[None, :] < N, other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    result = check(grouped_matmul, "grouped_matmul")
    assert result.outputs[0].right.all()
    assert not result.passed
    assert "program 1 computed C tile (0, 1), but the grouped order (GROUP_M=2) gives it tile (1, 0)" in result.text()


def test_grouped_tile_walks_down_a_group_first():
    order = [grouped_tile(pid, 5, 5, 2) for pid in range(25)]
    assert order[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert order[20:] == [(4, c) for c in range(5)]  # the last group has one tile row
    assert sorted(order) == [(m, n) for m in range(5) for n in range(5)]


def test_a_compile_error_is_a_result_with_its_caret():
    @kl.jit
    def load_block(x_ptr, z_ptr, BLOCK: tl.constexpr):
        tl.store(z_ptr + tl.arange(0, BLOCK), tl.lod(x_ptr + tl.arange(0, BLOCK)))

    result = check(load_block, "load_block")
    assert not result.passed and result.outputs == []
    assert "CompilationError" in result.error and "^" in result.error and "did you mean tl.load" in result.error


def test_a_kernel_with_other_parameters_is_told_the_signature():
    @kl.jit
    def load_block(x_ptr, BLOCK: tl.constexpr):
        pass

    result = check(load_block, "load_block")
    assert not result.passed
    assert "start from:\n    def load_block(x_ptr, z_ptr, BLOCK: tl.constexpr):" in result.text()


def test_bad_puzzle_and_device_say_what_exists():
    with pytest.raises(KeyError, match="the puzzles are load_block, masks"):
        puzzle("softmaxx")
    with pytest.raises(ValueError, match="'cuda'"):
        check(SOLUTIONS["load_block"], "load_block", device="gpu")


def test_the_lab_exports_check():
    assert kl.lab.check is check
    assert kl.lab.puzzle("softmax") is PUZZLES["softmax"]
