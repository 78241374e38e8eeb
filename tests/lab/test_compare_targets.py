"""kl.lab.compare_targets: one kernel's source lines next to PTX, host assembly and AMDGCN."""

import kernellab as kl
from kernellab.examples import add_kernel

ALIGNED = {name: {"tt.divisibility": 16} for name in ("x_ptr", "y_ptr", "output_ptr", "n_elements")}


def test_the_same_load_is_a_16_byte_load_on_each_target():
    view = kl.lab.compare_targets(add_kernel, signature="*fp32,*fp32,*fp32,i32",
                                  constexprs={"BLOCK_SIZE": 1024}, attrs=ALIGNED)  # fmt: skip
    load_line = next(n for n, text, _ in view.rows if "x = tl.load" in text)
    cells = view.instructions(load_line)
    assert any("ld.global.v4.b32" in i for i in cells["sm_90"])
    assert any(i.startswith(("vmovups", "vmaskmovps", "movups", "ldr", "ldp", "ld1")) for i in cells["cpu"]), cells["cpu"]
    assert any("global_load_dwordx4" in i for i in cells["gfx942"])
    html = view._repr_html_()
    assert "x = tl.load" in html and "AMD gfx942" in html and "<script" not in html
