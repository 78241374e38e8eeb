"""The compiled-kernel viewer's panels, rendered once, in Python, from the bundle's JSON.

    page       the whole viewer: header, notes, a section per panel, the behaviour script
    stages     the source and one panel per stage, every line marked with its source line
    passes     side-by-side diffs of each pass against the one before
    resources  registers, spills, shared memory, occupancy
    timings    seconds per stage
    markup     elements with `kl-` classes plus inline styles, highlighted code blocks
    behaviour.js  tabs, line linking, diff folding, copy/download: inlined in the static HTML
               and imported by the JupyterLab extension, which displays the same markup
"""

from kernellab.lab.viewer.markup import code_block, highlight_lines
from kernellab.lab.viewer.page import panels, render

__all__ = ["code_block", "highlight_lines", "panels", "render"]
