"""The viewer's text/html (classes with their inline styles, panels, line links, side-by-side
pass diffs, the no-script reading) and the lexers."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.lab import bundle as B
from kernellab.lab.kernel_resources import occupancy

pytest.importorskip("pygments")

from pygments.token import Comment, Error, Keyword, Name

from kernellab.lab.viewer import highlight_lines, render
from kernellab.lab.viewer.markup import SCRIPT_STYLES, STYLES
from kernellab.lab.viewer.passes import fold_unchanged, side_by_side
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
        self.src_lines, self.titles, self.elements = [], [], []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "style" in attrs:
            self.styles.append(attrs["style"])
        self.elements.append((tag, attrs))
        if "data-kl-panel" in attrs:
            self.panels.append(attrs["data-kl-panel"])
            self.titles.append(attrs["data-kl-title"])
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


def test_every_class_carries_its_style_inline(html):
    """The extension styles the classes; pages without a stylesheet get the same look inline."""
    o = outline(html)
    assert "style" not in o.tags and "link" not in o.tags
    assert o.tags.count("script") == 1
    styled = [(tag, attrs) for tag, attrs in o.elements if attrs.get("class")]
    assert len(styled) > 100
    for tag, attrs in styled:
        for cls in attrs["class"].split():
            assert cls.startswith("kl-"), (tag, cls)
            if STYLES.get(cls):
                assert STYLES[cls] in attrs.get("style", ""), (tag, cls)
    assert any("color" in s for s in o.styles)


def test_panels_in_order_with_their_titles(html, data):
    o = outline(html)
    assert o.panels == ["source", "ttir", "passes", "resources", "timings"]
    assert o.titles == ["Source", "TTIR", f"Passes ({len(data['passes'])})", "Resources", "Timings"]


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
    viewer_id = re.search(r'<div class="kl-viewer"[^>]* id="(kl-[0-9a-f]+)"', html).group(1)
    script = re.search(r"<script>(.*?)</script>", html, re.DOTALL).group(1)
    assert f'attachViewer(document.getElementById("{viewer_id}"), ' in script
    assert "export " not in script  # a classic script: behaviour.js's export is dropped
    assert "</" not in script  # nothing in it can close the script element early
    assert json.dumps({"styles": SCRIPT_STYLES}) in script
    assert "data-src-line" in script
    assert render(_minimal()) != render(_minimal())  # every viewer gets its own id


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


class DiffTables(HTMLParser):
    """Per pass (details data-index): the text of its left and right diff columns, row kinds."""

    def __init__(self):
        super().__init__()
        self.passes, self.pass_index, self.cell, self.open = {}, None, None, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "details" and "kl-pass" in classes:
            self.pass_index = int(attrs["data-index"])
            self.passes[self.pass_index] = {"left": [], "right": [], "kinds": [], "folds": []}
            if "open" in attrs:
                self.open.append(self.pass_index)
        elif tag == "tr" and "kl-diff-row" in classes:
            self.passes[self.pass_index]["kinds"].append(classes[-1].removeprefix("kl-diff-"))
        elif tag == "tbody" and "kl-diff-fold" in classes:
            self.passes[self.pass_index]["folds"].append(int(attrs["data-kl-fold"]))
        elif tag == "td" and "kl-diff-code" in classes and "kl-diff-blank" not in classes:
            self.cell = ("left" if "kl-left" in classes else "right", [])

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            side, parts = self.cell
            self.passes[self.pass_index][side].append("".join(parts))
            self.cell = None

    def handle_data(self, text):
        if self.cell is not None:
            self.cell[1].append(text)


def test_passes_show_side_by_side_diffs_of_the_ir(data):
    """Each changed pass: the left column is the IR before it, line for line, the right column
    the IR after it; the first changed pass is open."""
    passes = data["passes"]
    assert any(p["changed"] for p in passes), "the softmax kernel's TTIR passes change something"
    parser = DiffTables()
    parser.feed(render(data))
    assert sorted(parser.passes) == list(range(len(passes)))
    assert parser.open == [next(i for i, p in enumerate(passes) if p["changed"])]
    diffs = 0
    for i in range(1, len(passes)):
        before, after, shown = passes[i - 1]["ir"], passes[i]["ir"], parser.passes[i]
        if before == after:
            assert not shown["kinds"]
            continue
        diffs += 1
        assert shown["left"] == before.splitlines() and shown["right"] == after.splitlines()
        assert {"change", "insert", "delete"} & set(shown["kinds"])
    assert diffs == sum(p["changed"] for p in passes[1:])


def test_side_by_side_pairs_changed_lines_and_keeps_both_texts():
    a = ["a", "b", "c", "d", "e"]
    b = ["a", "B", "c", "e", "f", "g"]
    rows = side_by_side(a, b)
    assert [r[0] for r in rows] == ["equal", "change", "equal", "delete", "equal", "insert", "insert"]
    assert rows[1] == ("change", (1, "b"), (1, "B"))
    assert [r[1][1] for r in rows if r[1]] == a and [r[2][1] for r in rows if r[2]] == b
    assert side_by_side([], ["x"]) == [("insert", None, (0, "x"))]


def test_folding_keeps_context_next_to_changes():
    rows = side_by_side([str(i) for i in range(30)], [str(i) for i in range(30)][:15] + ["x"] + [str(i) for i in range(15, 30)])
    stretches = fold_unchanged(rows, context=3, min_fold=4)
    assert [(folded, len(r)) for folded, r in stretches] == [(True, 12), (False, 7), (True, 12)]
    assert sum(len(r) for _, r in stretches) == len(rows)  # nothing lost
    short = side_by_side(list("abcdefgh"), list("abcXefgh"))
    assert all(not folded for folded, _ in fold_unchanged(short))  # too short to fold


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
