"""The lab's explorers: their pure drawing data, and that changing a control changes it.

The explorers are built for real (ipywidgets work without a kernel, matplotlib draws on Agg);
a control is changed by assigning its `.value`, as the frontend would.
"""

from __future__ import annotations

import base64
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import kernellab as kl
import kernellab.language as tl
from kernellab.lab.widgets import access
from kernellab.lab.widgets import layout_explorer as layout
from kernellab.lab.widgets import swizzle_explorer as swizzle
from kernellab.lab.widgets import tile_order_explorer as tile_order


def assert_snapshot(explorer) -> None:
    """The bundle has the live widget and a static HTML snapshot with an inline PNG."""
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html = bundle["text/html"]
    marker = "<img src='data:image/png;base64,"
    assert marker in html
    data = html.split(marker, 1)[1].split("'", 1)[0]
    assert base64.b64decode(data).startswith(b"\x89PNG")
    assert explorer.caption(explorer.data).splitlines()[0].replace("<", "&lt;")[:20] in html
    assert bundle["text/plain"].startswith("<")


# -- tile order ------------------------------------------------------------------------------


def test_seed_example_90_block_loads_row_major_54_grouped():
    # 9 x 9 tiles of C, K in 9 blocks, the first 9 programs (Triton's matmul tutorial)
    assert tile_order.block_loads(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, 9) == {
        "row-major": 90,
        "grouped": 54,
    }
    rm = tile_order.tile_order_data(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, 9, grouped=False)
    g = tile_order.tile_order_data(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, 9, grouped=True)
    assert (rm.a_blocks, rm.b_blocks, g.a_blocks, g.b_blocks) == (9, 81, 27, 27)
    assert g.block_loads_without_reuse == 162


def test_grouped_order_follows_tritons_formula():
    order = tile_order.program_order(5, 3, group_size_m=2, grouped=True)
    # groups of 2 rows walked column by column; the last group has one row
    expected = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
                (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2),
                (4, 0), (4, 1), (4, 2)]  # fmt: skip
    assert [tuple(p) for p in order] == expected
    assert [tuple(p) for p in tile_order.program_order(2, 3, 2, grouped=False)] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]  # fmt: skip
    rng = np.random.default_rng()
    m, n, gs = (int(v) for v in rng.integers(1, 12, 3))
    tiles = tile_order.program_order(m, n, gs)
    assert sorted(map(tuple, tiles)) == [
        (i, j) for i in range(m) for j in range(n)
    ]  # each tile once


def test_l2_hit_rate_is_higher_for_grouped_order_at_a_realistic_size():
    args = (8192, 8192, 8192, 128, 128, 64, 8)
    row_major = tile_order.simulate_l2(*args, grouped=False, l2_bytes=50 * 2**20, num_sms=132)
    grouped = tile_order.simulate_l2(*args, grouped=True, l2_bytes=50 * 2**20, num_sms=132)
    assert row_major.accesses == grouped.accesses == 64 * 64 * 128 * 2
    assert 0 < row_major.hit_rate < grouped.hit_rate < 1
    assert grouped.dram_bytes < row_major.dram_bytes
    assert "hit rate" in str(grouped)


def test_l2_large_enough_to_hold_everything_reads_each_block_once():
    M, N, K, bm, bn, bk = 512, 384, 256, 64, 64, 32
    r = tile_order.simulate_l2(
        M, N, K, bm, bn, bk, 2, grouped=False, elem_bytes=2, l2_bytes=1 << 30, num_sms=7
    )
    assert r.dram_bytes == r.min_bytes == (M * K + K * N) * 2
    blocks = (M // bm) * (K // bk) + (K // bk) * (N // bn)
    assert r.accesses - r.hits == blocks


def test_tile_order_explorer_redraws_on_step_and_group_size():
    e = tile_order.tile_order(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, step=9, simulate=False)
    assert (e.data.row_major.blocks, e.data.grouped.blocks) == (90, 54)
    first_png = e.png
    e.controls["step"].value = 20
    assert e.data.grouped.step == 20 and e.data.grouped.blocks == 27 + 63
    assert e.png != first_png
    e.controls["GROUP_SIZE_M"].value = 9
    assert e.data.grouped.a_blocks == 9 * 9  # 20 programs walk all 9 rows of the first column band
    e.controls["M"].value = 4 * 64  # a smaller grid: the step slider is clamped to the programs
    assert e.controls["step"].max == 4 * 9 and e.data.grouped.step == 20
    assert_snapshot(e)


def test_saved_snapshot_follows_the_controls():
    """The displayed bundle keeps the text/html snapshot (nbconvert, GitHub); the root widget's
    synced `_kl_snapshot` trait holds the current snapshot, which the JupyterLab extension
    writes into the saved output. Moving a control refreshes the trait and sends no display
    message (an update_display would make JupyterLab rebuild the live view)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    e = tile_order.tile_order(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, step=9, simulate=False)
    with capture_output() as shown:
        display(e)
    (first,) = shown.outputs
    assert "application/vnd.jupyter.widget-view+json" in first.data
    assert "GROUP_SIZE_M=3" in first.data["text/html"]
    assert e.widget._kl_snapshot == first.data["text/html"]
    # a synced trait: part of the state the front end's model gets
    assert e.widget.trait_metadata("_kl_snapshot", "sync")
    assert e.widget.get_state()["_kl_snapshot"] == first.data["text/html"]
    with capture_output() as moved:
        e.controls["GROUP_SIZE_M"].value = 9
    assert moved.outputs == [] and moved.stdout == ""  # no display update
    now = e.widget._kl_snapshot
    assert "GROUP_SIZE_M=9" in now and "GROUP_SIZE_M=3" not in now
    assert e.widget._kl_snapshot == e.snapshot()


def test_snapshot_updates_wait_for_the_controls_to_rest(monkeypatch):
    """Under an event loop (a kernel), moves in quick succession refresh the trait once, with
    the last state, after the controls rest; nothing is displayed again."""
    pytest.importorskip("IPython")
    import asyncio

    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    from kernellab.lab.widgets import base

    InteractiveShell.instance()
    monkeypatch.setattr(base, "SNAPSHOT_DELAY_S", 0.05)
    e = tile_order.tile_order(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, step=9, simulate=False)
    changes = []

    async def move():
        display(e)
        e.widget.observe(lambda change: changes.append(change["new"]), names="_kl_snapshot")
        for value in (4, 5, 6):
            e.controls["GROUP_SIZE_M"].value = value
        await asyncio.sleep(0.01)
        assert changes == [] and "GROUP_SIZE_M=3" in e.widget._kl_snapshot  # not yet
        await asyncio.sleep(0.2)

    with capture_output() as captured:
        asyncio.run(move())
    assert len(captured.outputs) == 1  # the display only: no update_display
    assert len(changes) == 1 and "GROUP_SIZE_M=6" in changes[0]
    assert e.widget._kl_snapshot == e.snapshot()


def test_tile_order_defaults_exceed_l2_so_the_orders_differ():
    """The defaults are the tutorial's sizes: A and B larger than L2, grouped order wins."""
    e = tile_order.tile_order()
    rm, g = e.data.l2
    assert rm.min_bytes > 50 * 2**20
    assert g.hit_rate > rm.hit_rate + 0.05 and g.dram_bytes < rm.dram_bytes
    assert "exceed the 50.0 MiB L2: row-major order moves" in e.caption(e.data)


def test_tile_order_says_when_l2_holds_everything():
    e = tile_order.tile_order(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, step=9)
    rm, g = e.data.l2
    assert rm.hit_rate == g.hit_rate and rm.dram_bytes == g.dram_bytes == rm.min_bytes
    assert "L2 holds everything" in e.caption(e.data)
    e.controls["l2_mb"].value = 0.25  # a smaller L2 than A and B: the verdict changes with it
    assert "L2 holds everything" not in e.caption(e.data)


def test_tile_order_explorer_reports_l2_simulation():
    e = tile_order.tile_order(8192, 8192, 8192, 128, 128, 64, 8, step=132, l2_mb=50, num_sms=132)
    rm, g = e.data.l2
    assert g.hit_rate > rm.hit_rate
    assert "L2 hit rate" in e.caption(e.data)


# -- layouts -------------------------------------------------------------------------------


def test_seed_layout_thread_0_owns_two_runs_of_eight():
    ll = layout.blocked_layout([1, 8], [8, 4], [8, 1], [1, 0], [128, 32])
    pic = layout.layout_table(ll)
    assert pic.elements_of_thread(0) == [(0, c) for c in range(8)] + [(64, c) for c in range(8)]
    assert (pic.num_registers, pic.num_lanes, pic.num_warps) == (16, 32, 8)
    assert (pic.owners == 1).all() and pic.duplicated == 0
    assert pic.warp[64, 0] == 0 and pic.register[64, 3] == 11 and pic.lane[0, 8] == 1
    assert pic.thread[127, 31] == 255
    assert "sizePerThread = [1, 8]" in pic.description


def test_broadcast_layouts_say_which_threads_share_an_element():
    from kernellab.layouts import blocked, slice_layout

    parent = blocked([1, 4], [8, 4], [4, 1], [1, 0], [32, 32])
    rows = layout.layout_table(slice_layout(parent, 1))  # a row sum: 4 lanes hold each row
    assert rows.threads_holding(0) == [0, 1, 2, 3] and rows.duplicated == 32
    assert "element (0,) by threads 0, 1, 2, 3" in layout._caption(rows)
    cols = layout.layout_table(slice_layout(parent, 0))  # every warp holds the same columns
    assert set(np.unique(cols.warp)) == {0}
    e = layout.layout(slice_layout(parent, 0), "columns")
    from kernellab.lab.widgets.base import new_figure

    fig = new_figure(*e.figsize(e.data))
    e.draw(e.data, fig)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "warp 0" in legend and "warp 1" not in legend  # warps 1-3 hold copies only
    assert "3 more warps hold copies only" in legend
    labels = [t.get_text() for t in ax.texts]
    assert labels and all("×" in t for t in labels) and not ax.collections[1:]  # no crosses


def test_default_layout_picture_has_readable_labels():
    from kernellab.lab.widgets.base import new_figure

    e = layout.layout()
    assert e.data.tensor_shape == (64, 32)  # one pass of the 8 warps: every thread once
    fig = new_figure(*e.figsize(e.data))
    e.draw(e.data, fig)
    sizes = [t.get_fontsize() for t in fig.axes[0].texts]
    assert len(sizes) == 256 and min(sizes) >= 6


def test_layout_table_agrees_with_the_layout_object():
    rng = np.random.default_rng()
    ll = layout.blocked_layout([2, 2], [4, 8], [2, 2], [0, 1], [64, 64])
    pic = layout.layout_table(ll)
    for _ in range(50):
        r, ln, w = (int(rng.integers(0, n)) for n in (ll.num_registers, 32, 4))
        i, j = ll.apply(register=r, lane=ln, warp=w)
        assert (pic.register[i, j], pic.lane[i, j], pic.warp[i, j]) == (r, ln, w)


def test_layout_rejects_invalid_combinations():
    with pytest.raises(ValueError, match="multiply to 32"):
        layout.blocked_layout([1, 1], [4, 4], [1, 1], [1, 0], [16, 16])
    with pytest.raises(ValueError, match="power of two"):
        layout.blocked_layout([3, 1], [8, 4], [1, 1], [1, 0], [16, 16])
    with pytest.raises(ValueError, match="permutation"):
        layout.blocked_layout([1, 1], [8, 4], [1, 1], [1, 1], [16, 16])


def test_layout_explorer_changes_with_its_controls():
    e = layout.layout()
    assert e.data.elements_of_thread(0)[:8] == [(0, c) for c in range(8)]
    before = e.data.thread.copy()
    e.controls["spt1"].value = 4  # sizePerThread [1, 4]: thread 0 now holds 4-element runs
    assert e.data.elements_of_thread(0)[:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 16)]
    assert not np.array_equal(before, e.data.thread)
    e.controls["tpw0"].value = 32  # threadsPerWarp [32, 1]
    assert e.data.lane[:32, 0].tolist() == list(range(32))
    e.controls["warps"].value = 2  # warpsPerCTA[0] options follow num_warps
    assert list(e.controls["wpc0"].options) == [1, 2] and e.data.num_warps == 2
    e.controls["order"].value = (0, 1)
    assert "order = [0, 1]" in e.data.description
    # the controls read as whole values: each menu names its entry, the readout the full lists
    assert all("[" not in c.description and c.description != "," for c in e.controls.values())
    assert "sizePerThread = [1, 4], threadsPerWarp = [32, 1], warpsPerCTA = [2, 1]" in e._derived.value
    e.controls["rows"].value = 16  # smaller than the layout's tile: elements are broadcast
    assert e.data.duplicated > 0 and e.data.owners.max() > 1
    assert_snapshot(e)


def _fake_kernel(ttgir: str | None):
    asm = {"ttir": "builtin.module {}\n"}
    if ttgir is not None:
        asm["ttgir"] = ttgir
    return SimpleNamespace(asm=asm, passes=[], metadata={"target": "sm_90", "times": {}}, name="k")


TTGIR = """
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @k(%x_ptr: !tt.ptr<f16>, %out_ptr: !tt.ptr<f16>) {
    %rows = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #blocked}>>
    %offs = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked1>
    %r2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<64x1xi32, #blocked>
    %rb = tt.broadcast %r2 : tensor<64x1xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %p = tt.splat %x_ptr : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #blocked>
    %pa = tt.addptr %p, %rb : tensor<64x64x!tt.ptr<f16>, #blocked>, tensor<64x64xi32, #blocked>
    %a = tt.load %pa : tensor<64x64x!tt.ptr<f16>, #blocked>
    %s = ttg.local_alloc %a : (tensor<64x64xf16, #blocked>) -> !ttg.memdesc<64x64xf16, #shared, #smem>
    %op = ttg.local_load %s : !ttg.memdesc<64x64xf16, #shared, #smem> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>>
    %c = ttg.convert_layout %a : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #mma>
    tt.return
  }
}
"""


def test_layout_of_a_compiled_kernels_values():
    ck = _fake_kernel(TTGIR)
    view = layout.layout(ck, "%offs")
    assert set(layout.tensor_values(ck)) == {
        "%rows",
        "%offs",
        "%r2",
        "%rb",
        "%p",
        "%pa",
        "%a",
        "%op",
        "%c",
    }
    assert view.data.elements_of_thread(0) == [(0,), (1,), (2,), (3,)]
    assert "#blocked1" in view.data.description
    view.controls["value"].value = "%rows"  # a slice: the 4 lanes along dim 1 hold the same rows
    assert view.data.tensor_shape == (64,) and view.data.duplicated == 64
    view.controls[
        "value"
    ].value = "%c"  # MMA v2: lane 0 of warp 0 holds (0, 0), (0, 1), (8, 0), (8, 1) first
    assert view.data.elements_of_thread(0)[:4] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    view.controls["value"].value = "%op"
    assert "dot_op" in view.data.description and view.data.num_warps == 4
    assert_snapshot(view)


def test_layout_of_a_kernel_names_the_problem():
    with pytest.raises(KeyError, match="similar: %offs"):
        layout.layout(_fake_kernel(TTGIR), "%off")
    with pytest.raises(ValueError, match="target='sm_90'"):
        layout.layout(_fake_kernel(None), "%offs")


# -- swizzling -------------------------------------------------------------------------------


def test_column_read_conflicts_8_ways_until_swizzled():
    pic = swizzle.swizzle_data(8, 1, 8, (1, 0), (32, 64), 2, "column", 16)
    # rows of 64 fp16 = 128 bytes: every row's first 16 bytes are in banks 0-3
    assert pic.before.ways == 8 and pic.after.ways == 1
    assert pic.before.wavefronts > pic.after.wavefronts
    assert pic.best_ways == 1 and "maxPhase" in pic.best
    rows, cols = np.meshgrid(np.arange(32), np.arange(64), indexing="ij")
    np.testing.assert_array_equal(pic.before.bank, (rows * 64 + cols) * 2 // 4 % 32)
    # the swizzle moves row r's first chunk to chunk (r % 8): banks 4 * (r % 8) ...
    assert pic.after.bank[:8, 0].tolist() == [4 * r for r in range(8)]
    lanes = pic.before.lane[:, :8]
    assert (lanes == np.arange(32)[:, None]).all()  # lane r reads row r's first vector


def test_ldmatrix_and_row_patterns():
    ld = swizzle.swizzle_data(8, 1, 8, (1, 0), (64, 64), 2, "ldmatrix")
    assert ld.before.ways == 8 and ld.after.ways == 1
    row = swizzle.swizzle_data(8, 1, 8, (1, 0), (64, 64), 2, "row")
    assert row.before.ways == 1 and row.after.ways == 1  # a warp along a row never conflicts
    with pytest.raises(ValueError, match="exceeds"):
        swizzle.swizzle_data(8, 1, 16, (1, 0), (32, 64), 2, "column")


def test_swizzle_explorer_changes_with_its_controls():
    e = swizzle.swizzle()
    assert (e.data.before.ways, e.data.after.ways) == (8, 1)
    e.controls["max_phase"].value = 2  # only two phases: conflicts drop to 4-way, not 1
    assert e.data.after.ways == 4
    e.controls["max_phase"].value = 1  # no swizzle at all: after == before
    np.testing.assert_array_equal(e.data.after.bank, e.data.before.bank)
    # the slider counts instructions from 1, as the picture's title does
    assert e.controls["instruction"].max == e.data.num_instructions > 1
    e.controls["instruction"].value = 2  # the second instruction reads the second column chunk
    assert e.data.instruction == 1 and "instruction 2 of" in _title(e)
    labels = _texts(e)  # one lane/bank label per lane the instruction reads, all readable
    assert len(labels) == 32 and min(size for _, size in labels) >= swizzle.MIN_LABEL_POINTS
    assert (e.data.before.lane[:, 8:16] >= 0).all() and (e.data.before.lane[:, :8] < 0).all()
    e.controls["max_phase"].value = 8
    column_total = e.data.after.wavefronts
    e.controls["pattern"].value = "ldmatrix"
    # ldmatrix covers the whole 32 x 64 tile too (8 instructions of 16 x 16): totals compare
    assert e.data.pattern == "ldmatrix" and e.data.num_instructions == 8
    assert (e.data.before.lane >= 0).sum() == 16 * 16
    assert e.data.after.wavefronts == column_total == 32 * 64 * 2 // 128
    assert e.controls["instruction"].max == 8
    assert_snapshot(e)


def _drawn(explorer):
    from kernellab.lab.widgets.base import new_figure

    fig = new_figure(*explorer.figsize(explorer.data))
    explorer.draw(explorer.data, fig)
    return fig


def _title(explorer) -> str:
    return _drawn(explorer)._suptitle.get_text()


def _texts(explorer) -> list[tuple[str, float]]:
    """(text, font size) of the labels on the 'before' picture."""
    return [(t.get_text(), t.get_fontsize()) for t in _drawn(explorer).axes[0].texts]


# -- memory access ---------------------------------------------------------------------------


@kl.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs,
        tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
        mask=mask,
    )


@kl.jit
def _unmasked_store(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2)


@kl.jit
def _copy_tile(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (r[:, None] < M) & (c[None, :] < N)
    p = r[:, None] * N + c[None, :]
    tl.store(out_ptr + p, tl.load(x_ptr + p, mask=m), mask=m)


def test_access_view_counts_elements_programs_and_masked_lanes():
    rng = np.random.default_rng()
    n = int(rng.integers(700, 1000))
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    view = access.access_view(_add, (4,), x, y, out, n, BLOCK=256)
    assert np.isnan(out).all()  # ran on copies
    pic = view.data
    assert pic.arg == "x_ptr" and pic.size == n and pic.shape == (-(-n // 64), 64)
    assert pic.loads.ravel()[:n].tolist() == [1] * n and pic.stores.sum() == 0
    assert pic.first_program.ravel()[:n].tolist() == (np.arange(n) // 256).tolist()
    assert [s.kind for s in pic.sites] == ["load"] and pic.masked == 1024 - n
    # the masked lanes are drawn where they pointed: the cells past the end of the buffer
    masked = pic.masked_lanes.ravel()
    assert masked[:n].sum() == 0 and masked[n:].tolist() == [1] * (pic.shape[0] * 64 - n)
    # the menus start on a value, not blank (an ipywidgets Dropdown shows None as no selection)
    assert view.controls["program"].value == access.ALL and view.controls["program"].index == 0
    assert view.controls["site"].value == access.EVERY_SITE and view.controls["site"].index == 0
    view.controls["arg"].value = "out_ptr"
    assert view.data.stores.ravel()[:n].sum() == n and view.data.loads.sum() == 0
    view.controls["program"].value = (1, 0, 0)
    touched = np.nonzero(view.data.stores.ravel())[0]
    assert touched.tolist() == list(range(256, 512)) and view.data.masked == 0
    for program in (2, 3):  # the last programs' lanes past n are masked (all of them when n <= 768)
        view.controls["program"].value = (program, 0, 0)
        assert view.data.masked == 256 - min(256, max(0, n - 256 * program))
        # drawn: the masked lanes of this program that point into the padding after the buffer
        padded = pic.shape[0] * 64
        assert view.data.masked_lanes.sum() == max(0, min(256 * program + 256, padded) - max(256 * program, n))
    view.controls["program"].value = access.ALL
    assert view.data.program is None and view.data.stores.ravel()[:n].sum() == n
    assert_snapshot(view)


def test_access_view_2d_and_per_site():
    rng = np.random.default_rng()
    a = rng.standard_normal((20, 30), dtype=np.float32)
    b = np.full_like(a, np.nan)
    view = access.access_view(_copy_tile, (3, 2), a, b, 20, 30, BM=8, BN=16)
    pic = view.data
    assert pic.shape == (20, 30) and (pic.loads == 1).all()
    expected = (np.arange(20)[:, None] // 8) + 3 * (
        np.arange(30)[None, :] // 16
    )  # linear program id
    np.testing.assert_array_equal(pic.first_program, expected)
    assert pic.masked == 3 * 2 * 8 * 16 - 600


def test_access_view_shows_an_out_of_bounds_store():
    rng = np.random.default_rng()
    x = rng.standard_normal(1000, dtype=np.float32)
    out = np.full(1000, np.nan, np.float32)
    view = access.access_view(_unmasked_store, (4,), x, out, 1000, BLOCK=256)
    pic = view.data
    assert pic.arg == "out_ptr"  # opens on the argument the error names
    assert pic.error_program == (3, 0, 0) and pic.error_index == 1000
    assert "out-of-bounds store" in view.caption(pic) and "program (3, 0, 0)" in view.caption(pic)
    view.controls["arg"].value = "x_ptr"  # the load before it was masked and recorded
    assert view.data.loads.ravel()[:1000].sum() == 1000 and view.data.error_index is None


def test_access_view_from_a_trace():
    from kernellab.backends.interpreter import AccessTrace

    rng = np.random.default_rng()
    x, y = rng.standard_normal(128, dtype=np.float32), rng.standard_normal(128, dtype=np.float32)
    out = np.full(128, np.nan, np.float32)
    ck = kl.compile(_add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 64})
    trace = AccessTrace()
    ck.run((2,), x, y, out, 128, trace=trace)
    np.testing.assert_allclose(out, x + y)
    view = access.access_view(trace, shapes={"y_ptr": (8, 16)})
    view.controls["arg"].value = "y_ptr"
    assert view.data.shape == (8, 16) and (view.data.loads == 1).all()
    summary = access.access_summary(trace, "out_ptr", program=1)
    assert np.nonzero(summary.stores.ravel())[0].tolist() == list(range(64, 128))


# -- the explorers on a compiled kernel (the layouts and swizzles the compiler chose) --------


@pytest.fixture(scope="module")
def compiled_matmul():
    """Triton's tutorial matmul compiled for sm_80 (no GPU needed), blocks kept small."""
    from kernellab.examples import matmul_kernel
    from kernellab.lab.compiling import nvidia_available

    if not nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    aligned = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    return kl.compile(
        matmul_kernel, signature="*fp16,*fp16,*fp16," + ",".join(["i32"] * 9),
        constexprs=dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION=""),
        attrs={n: {"tt.divisibility": 16} for n in aligned}, target="sm_80", num_warps=4,
    )  # fmt: skip


def test_kernel_layouts_lists_every_layout_of_the_ttgir(compiled_matmul):
    from kernellab.layouts import from_encoding
    from kernellab.lab.kernel_layouts import kernel_layouts

    found = kernel_layouts(compiled_matmul)
    kinds = {item.kind for item in found}
    assert {"blocked", "slice", "nvidia_mma", "dot_op", "swizzled_shared"} <= kinds
    ttgir = compiled_matmul.asm["ttgir"]
    for item in found:  # every layout is named as the TTGIR names it, and used there
        assert item.name in ttgir and item.values and item.shapes
        assert item.linear_layout().out_shape == tuple(item.shape) or item.shared
        if not item.shared:
            assert item.linear_layout() == from_encoding(item.encoding, item.shape)
    mma = next(item for item in found if item.kind == "nvidia_mma")
    assert "versionMajor = 2" in mma.text
    assert len({item.name for item in found}) == len(found)  # distinct


def test_shared_buffers_carry_the_compilers_swizzle_and_its_accesses(compiled_matmul):
    """Each local_alloc's swizzle is the one best_swizzle picks for the accesses the lab shows
    (one rule), and it serves the ldmatrix read in fewer wavefronts than no swizzle."""
    from kernellab.layouts import best_swizzle
    from kernellab.lab.kernel_layouts import shared_buffers

    buffers = shared_buffers(compiled_matmul)
    assert len(buffers) == 2 and all(b.elem_bytes == 2 and b.stages >= 1 for b in buffers)
    for b in buffers:
        assert [a.what.split(":")[0] for a in b.accesses] == ["write", "read"]
        best, _ = best_swizzle([a.layout for a in b.accesses], b.elem_bytes)
        record = best.encoding
        assert (record.vec, record.per_phase, record.max_phase, tuple(record.order)) == tuple(b.params.values())
        (_, w0, w1), (read, r0, r1) = swizzle.buffer_conflicts(b)
        assert "ldmatrix" in read and r1 < r0 and w1 <= w0


def test_swizzle_explorer_opens_on_a_compiled_kernel(compiled_matmul):
    view = kl.lab.swizzle(compiled_matmul)
    names = list(view.buffers)
    caption = view.caption(view.data)
    assert "wavefronts unswizzled" in caption and view.buffers[names[0]].encoding_name in caption
    first_png = view.png
    view.controls["access"].value = 1  # the ldmatrix read
    assert view.data.pattern.startswith("read: ldmatrix")
    assert view.data.before.wavefronts > view.data.after.wavefronts
    view.controls["buffer"].value = names[1]
    assert view.controls["access"].value == 0 and view.data.params["buffer"] == names[1]
    assert view.png != first_png
    assert_snapshot(view)
    with pytest.raises(KeyError, match="no shared buffer"):
        kl.lab.swizzle(compiled_matmul, "%nope")


def test_layouts_explorer_draws_every_layout_of_a_compiled_kernel(compiled_matmul):
    view = kl.lab.layouts(compiled_matmul)
    pngs = set()
    for name, item in view.layouts.items():
        view.controls["layout"].value = name
        assert name in view.caption(view.data)
        if item.shared:
            assert isinstance(view.data, swizzle.SwizzlePicture)
        else:
            assert view.data.tensor_shape == item.shape
        pngs.add(view.png)
    assert len(pngs) == len(view.layouts)
    assert_snapshot(view)
    with pytest.raises(ValueError, match="target='sm_90'"):
        kl.lab.layouts(kl.compile(compiled_matmul.function, signature="*fp16,*fp16,*fp16," + ",".join(["i32"] * 9),
                                  constexprs=dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16,
                                                  GROUP_SIZE_M=1, ACTIVATION="")))  # fmt: skip


def test_saved_notebook_without_widget_state_exports_the_snapshot():
    """nbconvert (and any renderer without the widget's kernel) shows the explorer's snapshot."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    e = tile_order.tile_order(9 * 64, 9 * 64, 9 * 64, 64, 64, 64, 3, step=9)
    bundle = e._repr_mimebundle_()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("kl.lab.tile_order(...)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)  # no widget state saved
    assert "kernellab-snapshot" in html and "data:image/png;base64," in html
    assert "row-major loads 90 distinct blocks" in html
