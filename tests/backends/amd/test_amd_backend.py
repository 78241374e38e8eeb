"""The AMD target (compile-only): gfx942 and gfx950 through LLVM AMDGPU, wave64."""

import re

import numpy as np
import pytest

import kernellab as kl
from kernellab.examples import add_kernel, softmax_kernel

ALIGNED = {name: {"tt.divisibility": 16} for name in ("x_ptr", "y_ptr", "output_ptr", "n_elements")}


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_vector_add_compiles_to_wave64_amdgcn_with_16_byte_global_accesses(arch):
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024},
                    attrs=ALIGNED, target=arch)  # fmt: skip
    assert list(ck.asm) == ["ttir", "ttgir", "llir", "amdgcn"]
    assert '"ttg.threads-per-warp" = 64' in ck.asm["ttgir"] and f'"hip:{arch}"' in ck.asm["ttgir"]
    assert "amdgpu_kernel" in ck.asm["llir"]
    text = ck.asm["amdgcn"]
    assert f".amdgcn_target \"amdgcn-amd-amdhsa--{arch}" in text
    assert "global_load_dwordx4" in text and "global_store_dwordx4" in text
    assert re.search(r"\.wavefront_size:\s+64", text)


def test_a_reduction_exchanges_lanes_with_ds_bpermute_and_meets_at_a_barrier():
    ck = kl.compile(softmax_kernel, signature="*fp32,*fp32,i32,i32,i32", constexprs={"BLOCK_SIZE": 1024}, target="gfx942")
    text = ck.asm["amdgcn"]
    assert "ds_bpermute_b32" in text and "s_barrier" in text and "v_exp_f32" in text


def test_amd_kernels_compile_but_do_not_launch():
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 256}, target="gfx942")
    with pytest.raises(RuntimeError, match="compile for but not run"):
        ck[(1,)](np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32), 4)
    with pytest.raises(ValueError, match="at most 1024 threads"):
        kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 256}, target="gfx942", num_warps=32)
