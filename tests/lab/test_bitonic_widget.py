"""The bitonic-network explorer: the network it draws is the one tl.sort builds, and each
column's holder (register, lane, warp) is the layout's."""

from __future__ import annotations

import base64

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import kernellab as kl
from kernellab.lab.widgets import bitonic_explorer as bitonic


def test_columns_follow_the_layout():
    layout = bitonic.default_layout(1024, 2, 4)  # registers: bit 0; lanes: 1-5; warps: 6-7
    columns = bitonic.bitonic_columns(1024, layout)
    assert len(columns) == 10 * 11 // 2
    holder = {c.distance: c.holder for c in columns}
    assert holder[1] == "register"
    assert all(holder[2**j] == "lane" for j in range(1, 6))
    assert holder[64] == holder[128] == "warp"
    assert holder[256] == holder[512] == "register"  # the tile repeats in registers


def test_the_network_sorts(rng):
    """Running the drawn network on random values sorts them (ascending, then descending)."""
    layout = bitonic.default_layout(64, 1, 2)
    for descending in (False, True):
        values = rng.standard_normal(64)
        for column in bitonic.bitonic_columns(64, layout, descending):
            for low, high, down in column.pairs:
                if (values[low] > values[high]) != down:
                    values[low], values[high] = values[high], values[low]
        expected = np.sort(values)
        assert np.array_equal(values, expected[::-1] if descending else expected)


def test_bad_sizes_are_explained():
    with pytest.raises(ValueError, match="power of two"):
        bitonic.bitonic_columns(48, bitonic.default_layout(64, 1, 1))


def test_explorer_draws_and_reacts():
    e = kl.lab.bitonic(n=16, size_per_thread=2, num_warps=1)
    assert "10 columns for 16 elements" in e.caption(e.data)
    first = e.png
    assert first.startswith(b"\x89PNG")
    e.controls["size_per_thread"].value = 4
    assert e.data.counts()["register"] == 7  # distance 1 in all 4 stages, 2 in the last 3
    assert e.png != first
    html = e._repr_mimebundle_()["text/html"]
    assert base64.b64decode(html.split("base64,", 1)[1].split("'", 1)[0]).startswith(b"\x89PNG")
