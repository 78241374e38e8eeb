"""Text for layouts: bases listed like Triton's LinearLayout::toString, and the named layouts
in the syntax of Triton's `#ttg.*` attributes, so what the lab prints matches TTGIR."""

from __future__ import annotations


def _list(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def describe_blocked(size_per_thread, threads_per_warp, warps_per_cta, order) -> str:
    return (
        f"#ttg.blocked<{{sizePerThread = {_list(size_per_thread)}, "
        f"threadsPerWarp = {_list(threads_per_warp)}, warpsPerCTA = {_list(warps_per_cta)}, "
        f"order = {_list(order)}}}>"
    )


def describe_slice(dim: int, parent: str) -> str:
    return f"#ttg.slice<{{dim = {int(dim)}, parent = {parent}}}>"


def describe_mma(version_major, version_minor, warps_per_cta, instr_shape) -> str:
    return (
        f"#ttg.nvidia_mma<{{versionMajor = {int(version_major)}, "
        f"versionMinor = {int(version_minor)}, warpsPerCTA = {_list(warps_per_cta)}, "
        f"instrShape = {_list(instr_shape)}}}>"
    )


def describe_dot_operand(op_idx: int, parent: str, k_width: int) -> str:
    k = f", kWidth = {int(k_width)}" if k_width else ""
    return f"#ttg.dot_op<{{opIdx = {int(op_idx)}, parent = {parent}{k}}}>"


def describe_swizzled_shared(vec, per_phase, max_phase, order) -> str:
    return (
        f"#ttg.swizzled_shared<{{vec = {int(vec)}, perPhase = {int(per_phase)}, "
        f"maxPhase = {int(max_phase)}, order = {_list(order)}}}>"
    )


def format_layout(layout) -> str:
    """One line per basis, grouped by in-dim, then the out-dims and their sizes:

     - register=1 -> (0, 1)
       register=2 -> (0, 2)
     - lane=1 -> (0, 8)
     - block is a size 1 dimension
    where out dims are: [dim0 (size 128), dim1 (size 32)]
    """
    lines = [str(layout.encoding)] if layout.encoding is not None else []
    for name, rows in layout.bases.items():
        if not rows:
            lines.append(f" - {name} is a size 1 dimension")
            continue
        for i, basis in enumerate(rows):
            lead = " - " if i == 0 else "   "
            lines.append(f"{lead}{name}={1 << i} -> ({', '.join(str(v) for v in basis)})")
    outs = ", ".join(f"{n} (size {s})" for n, s in zip(layout.out_dims, layout.out_shape))
    lines.append(f"where out dims are: [{outs}]")
    return "\n".join(lines)
