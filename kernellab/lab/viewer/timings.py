"""The timings panel: seconds per compile stage, the cache, and the passes' share."""

from __future__ import annotations

from html import escape

from kernellab.lab.viewer.markup import bar, fmt_ms, plain, table


def timings_panel(data: dict) -> str:
    t = data["timings"]
    stages = t["stages"]
    if not stages:
        return plain("div", "kl-hint", "No stage timings were recorded.")
    longest = max(stages.values()) or 1.0
    rows = [("", [escape(k), fmt_ms(v), bar(v / longest)]) for k, v in stages.items()]
    rows.append(("kl-total", ["total", fmt_ms(t["total"]), ""]))
    cache = "cache hit: compiled earlier, reused" if t["cache_hit"] else "cache miss: compiled now"
    passes = data["passes"]
    pass_time = fmt_ms(sum(p["seconds"] for p in passes))
    return table(["stage", "time", ""], rows, numeric=(1,)) + plain(
        "div", "kl-hint", f"{cache}; {len(passes)} passes took {pass_time} in all."
    )
