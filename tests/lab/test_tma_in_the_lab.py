"""The lab on a Hopper kernel that copies its operands with TMA: the swizzle explorer lists data
buffers only (not the ring of mbarriers beside them), the dataflow graph colours the TMA
copies as shared-memory traffic, and the viewer shows a tensor map the kernel builds."""

from __future__ import annotations

import pytest

from kernellab.lab.kernel_layouts import shared_buffers


@pytest.fixture(scope="module")
def descriptor_matmul():
    from tests.backends.nvidia.test_tma import compile_matmul

    return compile_matmul()


def test_the_barrier_ring_is_not_a_buffer_to_swizzle(descriptor_matmul):
    ttgir = descriptor_matmul.asm["ttgir"]
    assert "ttng.init_barrier" in ttgir and "!ttg.memdesc<4x1xi64" in ttgir  # the ring is there
    assert all(b.elem_bytes != 8 for b in shared_buffers(descriptor_matmul))


def test_tma_copies_are_shared_memory_traffic_in_the_dataflow_graph(descriptor_matmul):
    pytest.importorskip("graphviz")
    from kernellab.lab import graphs

    assert graphs._kind("ttng.async_tma_copy_global_to_local") == "shared"
    assert graphs._kind("ttng.async_tma_copy_local_to_global") == "shared"
    info = graphs.dataflow_graph(descriptor_matmul).nodes_info
    tma = [kind for kind, name in info.values() if "async_tma_copy" in name]
    assert len(tma) >= 2 and set(tma) == {"shared"}


def test_the_viewer_shows_a_tensor_map_the_kernel_builds():
    import numpy as np

    from kernellab.lab import bundle
    from tests.backends.nvidia.test_tma import compiled, computed_descriptor_kernel

    a = np.zeros((64, 64), np.float16)
    ck = compiled(computed_descriptor_kernel, (a, 64, 64), {"BM": 32, "BN": 64})
    data = bundle.compile_data(bundle.ViewInput(ck))
    tma = next(p for p in data["passes"] if p["name"] == "tma")
    assert "tensormap-create" in tma["summary"]
    ttgir = next(s for s in data["stages"] if s["name"] == "ttgir")
    assert "ttng.tensormap_create" in ttgir["text"]
