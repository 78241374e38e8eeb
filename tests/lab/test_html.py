"""The viewer's text/html (inline styles, tabs, line links, no-script fallback) and the lexers."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.lab import bundle as B
from kernellab.lab.occupancy import occupancy

pytest.importorskip("pygments")

from pygments.token import Comment, Error, Keyword, Name

from kernellab.lab.html import highlight_lines, render
from kernellab.lab.lexers import MlirLexer, SassLexer, lexer_for


@kl.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@pytest.fixture(scope="module")
def data():
    ck = kl.compile(
        softmax_kernel,
        signature="*fp32,*fp32,i32,i32",
        constexprs={"BLOCK": 128},
        target="interpreter",
    )
    return B.compile_data(B.ViewInput(ck, fn=softmax_kernel, notes=["a note for <the> reader"]))


@pytest.fixture(scope="module")
def html(data):
    return render(data)


class Outline(HTMLParser):
    """Tags, style attributes, panels, and the visible text of an HTML fragment."""

    def __init__(self):
        super().__init__()
        self.tags, self.styles, self.text, self.panels = [], [], [], []
        self.src_lines = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "style" in attrs:
            self.styles.append(attrs["style"])
        if "data-kl-panel" in attrs:
            self.panels.append(attrs["data-kl-panel"])
        if "data-src-line" in attrs:
            self.src_lines.append(int(attrs["data-src-line"]))
        if tag == "script":
            self._skip += 1

    def handle_endtag(self, tag):
        if tag == "script":
            self._skip -= 1

    def handle_data(self, text):
        if not self._skip:
            self.text.append(text)


def outline(html: str) -> Outline:
    parser = Outline()
    parser.feed(html)
    return parser


def without_script(html: str) -> str:
    return re.sub(r"<script\b.*?</script>", "", html, flags=re.DOTALL)


def test_inline_styles_only(html):
    o = outline(html)
    assert "style" not in o.tags and "link" not in o.tags
    assert 'class="' not in re.sub(
        r'class="kernellab-viewer"', "", html
    )  # colours never depend on classes
    assert len(o.styles) > 100 and any("color" in s for s in o.styles)
    assert o.tags.count("script") == 1


def test_tabs_present_as_panels(html, data):
    o = outline(html)
    assert o.panels == ["source", "ttir", "passes", "resources", "timings"]
    for title in ("Source", "TTIR", "Passes", "Resources", "Timings"):
        assert f'data-kl-title="{title}"' in html


def test_lines_carry_source_lines(html, data):
    o = outline(html)
    ttir = next(s for s in data["stages"] if s["name"] == "ttir")
    mapped = {v for v in ttir["lines"] if v is not None}
    source = data["stages"][0]
    assert mapped and mapped <= set(source["lines"])
    assert set(o.src_lines) == set(source["lines"]) | mapped
    load = next(i for i, line in enumerate(ttir["text"].splitlines()) if "tt.load" in line)
    line = ttir["lines"][load]
    # the source line and the IR line both carry it, so one can find the other
    assert html.count(f'data-src-line="{line}"') >= 2


def test_no_script_fallback_is_readable(html, data):
    plain = without_script(html)
    o = outline(plain)
    visible = "".join(o.text)
    # every section has its heading, and nothing is hidden without the script
    for heading in ("Source", "TTIR", "Passes", "Resources", "Timings"):
        assert heading in visible
    assert "display:none" not in plain.replace(" ", "")
    assert "tt.load" in visible and "tt.reduce" in visible and "def softmax_kernel(" in visible
    assert "a note for <the> reader" in visible  # escaped in the markup, readable as text
    assert "<the>" not in plain
    assert "mask=cols < n_cols" in visible
    assert "cache miss" in visible and "interpreter" in visible
    for p in data["passes"]:
        assert p["name"] in visible


def test_script_is_scoped_to_its_viewer(html):
    viewer_id = re.search(r'<div id="(kl-[0-9a-f]+)"', html).group(1)
    script = re.search(r"<script>(.*?)</script>", html, re.DOTALL).group(1)
    assert f'getElementById("{viewer_id}")' in script
    assert "data-src-line" in script
    assert render.__module__ and render({**_minimal(), "name": "k"}) != render(
        {**_minimal(), "name": "k"}
    )


def _minimal() -> dict:
    return {
        "version": 1, "name": "k", "target": "sm_90", "notes": [],
        "source": {"text": "def k():\n    pass\n", "filename": "<x>", "first_line": 1},
        "stages": [{"name": "source", "title": "Source", "language": "python",
                    "text": "def k():\n    pass\n", "lines": [1, 2]}],
        "passes": [],
        "metadata": {"name": "k", "signature": "", "constexprs": {}, "num_warps": 4,
                     "threads_per_block": 128, "target": "sm_90", "registers": 40, "spills": 0,
                     "shared": 2048,
                     "occupancy": occupancy("sm_90", 4, registers=40, shared=2048)},
        "timings": {"stages": {}, "total": 0.0, "cache_hit": True},
    }  # fmt: skip


def test_resources_panel_shows_occupancy_for_gpu_targets():
    text = "".join(outline(render(_minimal())).text)
    assert "Registers per thread" in text and "40" in text
    assert "Occupancy estimate on H100" in text and "2048 B" in text
    assert "cache hit" in text


def test_passes_show_diffs(data):
    changed = [p for p in data["passes"] if p["changed"]]
    assert changed, "the softmax kernel's TTIR passes change something"
    html = render(data)
    assert html.count("<details") >= len(data["passes"])
    assert "Diff against the previous pass" in html
    assert "@@" in "".join(outline(html).text)  # unified diff hunks


SAMPLE_TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
#loc = loc("/tmp/k.py":3:0)
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, "ttg.target" = "cuda:90"} {
  tt.func public @k(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) attributes {noinline = false} {
    %0 = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32, #blocked> loc(#loc)
    %1 = ttg.convert_layout %0 : tensor<1024xi32, #blocked> -> tensor<1024xi32, #ttg.slice<{dim = 1, parent = #blocked1}>>
    %2 = ttg.local_alloc %a : (tensor<64x64xf16, #blocked1>) -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    %cst = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #mma>
    %3:2 = tt.split %j : tensor<128x2xf32> -> tensor<128xf32>
    %4 = arith.cmpf olt, %3#0, %cst : tensor<128x64xf32, #mma>
    %5 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %m = arith.maxnumf %a, %b : f32
      tt.reduce.return %m : f32
    }) : (tensor<1024xf32>) -> f32
    %6 = arith.constant 0x7F800000 : f32
    %7 = arith.constant -1.5e-03 : f64 // a comment
    tt.return loc(callsite("/tmp/k.py":4:5 at fused["/tmp/k.py":6:0, #loc]))
  } loc(#loc)
} loc(unknown)
"""

SAMPLE_SASS = """	code for sm_90
		Function : add_kernel
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
	//## File "/tmp/k.py", line 6
        /*0010*/                   S2R R0, SR_CTAID.X ;
        /*0020*/              @!P0 BRA `(.L_x_1) ;
        /*0030*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0040*/                   FADD R4, R4, -R8 ;
        /*0050*/                   ISETP.GE.AND P0, PT, R0, 0x3ff, PT ;
.L_x_1:
        /*0060*/                   EXIT ;
"""


def _tokens(lexer, text):
    return [(t, v) for t, v in lexer.get_tokens(text)]


def test_mlir_lexer_has_no_error_tokens_on_sample_modules(data):
    ttir = next(s for s in data["stages"] if s["name"] == "ttir")["text"]
    for text in (ttir, SAMPLE_TTGIR, *(p["ir"] for p in data["passes"])):
        errors = [(t, v) for t, v in _tokens(MlirLexer(), text) if t in Error]
        assert not errors, errors[:5]


def test_mlir_lexer_token_kinds():
    kinds = {v: t for t, v in _tokens(MlirLexer(), SAMPLE_TTGIR)}
    assert kinds["tt.make_range"] in Name.Builtin and kinds["ttg.convert_layout"] in Name.Builtin
    assert kinds["%0"] in Name.Variable and kinds["%3#0"] in Name.Variable
    assert kinds["#blocked1"] in Name.Constant and kinds["#ttg.blocked"] in Name.Constant
    assert kinds["!tt.ptr"] in Keyword.Type and kinds["!ttg.memdesc"] in Keyword.Type
    assert kinds["@k"] in Name.Function and kinds["^bb0"] in Name.Label
    assert kinds["f32"] in Keyword.Type and kinds["sizePerThread"] in Name.Attribute
    assert kinds['loc("/tmp/k.py":3:0)'] in Comment.Special
    assert kinds["// a comment"] in Comment.Single


def test_sass_lexer_has_no_error_tokens():
    toks = _tokens(SassLexer(), SAMPLE_SASS)
    assert not [(t, v) for t, v in toks if t in Error]
    kinds = {v: t for t, v in toks}
    assert kinds["LDG.E.128"] in Name.Builtin and kinds["R4"] in Name.Variable
    assert kinds["@!P0"] in Keyword.Pseudo and kinds['//## File "/tmp/k.py", line 6'] in Comment


def test_pygments_lexers_for_llvm_and_ptx():
    assert "llvm" in type(lexer_for("llvm")).__name__.lower()
    assert "ptx" in type(lexer_for("ptx")).__name__.lower()
    ptx = ".version 8.0\n.target sm_90\n.visible .entry k(\n  .param .u64 p\n)\n{\n  ld.global.f32 %f1, [%rd1];\n  ret;\n}\n"
    lines = highlight_lines(ptx, "ptx")
    assert len(lines) == len(ptx.splitlines())
    assert [re.sub(r"<[^>]+>", "", line) for line in lines] == ptx.splitlines()
    assert "color" in lines[6]


def test_highlight_lines_keeps_one_entry_per_line_and_hides_error_tokens():
    text = "%0 = tt.load %p : tensor<4x!tt.ptr<f32>>\n\n  § weird\n"
    lines = highlight_lines(text, "mlir")
    assert len(lines) == 3 and lines[1] == ""
    assert "border" not in "".join(lines)  # Pygments draws Error tokens with a red border
    assert "&lt;" in lines[0]
