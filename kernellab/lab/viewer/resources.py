"""The resources panel: registers, spills, shared memory, threads, and the occupancy estimate."""

from __future__ import annotations

from html import escape

from kernellab.lab.viewer.markup import bar, element, fmt_bytes, plain, table


def resources_panel(data: dict) -> str:
    md = data["metadata"]
    gpu = md.get("target") != "interpreter"
    unknown = plain("span", "kl-hint", "— (known once the cubin is built)" if gpu else "n/a (interpreter)")

    def known(key, show=str):
        return unknown if md.get(key) is None else escape(show(md[key]))

    spills = md.get("spills")
    rows = [
        ["Target", escape(str(md.get("target") or "?"))],
        ["Registers per thread", known("registers")],
        ["Spills", plain("span", "kl-spills", spills) if spills else known("spills")],
        ["Shared memory per block", known("shared", fmt_bytes)],
        ["Threads per block", escape(f"{md['threads_per_block']} ({md['num_warps']} warps)")],
    ]
    for key, label in (("num_stages", "Pipeline stages"), ("num_ctas", "CTAs per cluster")):
        if md.get(key) is not None:
            rows.append([label, escape(str(md[key]))])
    html = table(["", ""], [("", r) for r in rows])
    occ = md.get("occupancy")
    if occ:
        bound = "" if occ["registers_known"] else " (an upper bound: the register count is not known yet)"
        limits = [
            ("kl-limiting" if name == occ["limited_by"] else "", [escape(name), str(blocks)])
            for name, blocks in occ["limits"].items()
        ]
        html += element("div", "kl-occupancy",
            plain("div", "kl-subtitle", f"Occupancy estimate on {occ['device']}")
            + element("div", "kl-occupancy-line",
                f"{bar(occ['occupancy'])} <b>{occ['occupancy']:.0%}</b> — {occ['warps_per_sm']} of "
                f"{occ['max_warps_per_sm']} warps per SM ({occ['blocks_per_sm']} blocks), limited by "
                f"<b>{escape(occ['limited_by'])}</b>{escape(bound)}.")
            + table(["limit", "blocks per SM"], limits, numeric=(1,)),
        )  # fmt: skip
    elif not gpu:
        html += plain(
            "div", "kl-hint",
            "Registers, spills, shared memory and occupancy come from a GPU target (sm_80, sm_90); "
            "this kernel was compiled for the interpreter.",
        )  # fmt: skip
    return html
