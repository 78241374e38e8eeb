"""`kl.lab.check(kernel, puzzle)`: run a learner's kernel on a puzzle and show what it got wrong.

    result = kl.lab.check(my_softmax, "softmax")   # the interpreter; device="cuda" for the GPU
    result.passed, result.problems, result.access  # the access view, to explore interactively

Each check makes fresh random inputs, poisons the outputs (NaN), runs the kernel (on the
interpreter with an access trace, or on the GPU with torch tensors), and compares every output
element with the puzzle's float64 numpy reference within its tolerances. The result displays
as pass/fail, a picture per output (expected, got, and a map of right / wrong / never-written
elements), the access view of the learner's loads and stores (out-of-bounds and masked lanes
marked), and the puzzle's hint when it failed. Errors the kernel raises (a compile error with
its caret, an out-of-bounds access) are results too, never a crash of the cell.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from kernellab.lab.puzzles import Puzzle, puzzle as find_puzzle
from kernellab.lab.widgets.base import figure_png, new_figure, snapshot_html

_RIGHT, _WRONG, _UNWRITTEN = (0.35, 0.75, 0.4), (0.85, 0.15, 0.15), (0.75, 0.75, 0.75)


@dataclass
class OutputDiff:
    """One output compared with the reference, element by element."""

    name: str
    expected: np.ndarray  # float64, the output's shape
    got: np.ndarray  # float64 (NaN where never written)
    right: np.ndarray  # bool
    unwritten: np.ndarray  # bool

    @property
    def wrong(self) -> np.ndarray:
        return ~self.right & ~self.unwritten

    def summary(self) -> str:
        n = self.expected.size
        text = (f"{self.name}: {int(self.right.sum())} of {n} elements right, "
                f"{int(self.wrong.sum())} wrong, {int(self.unwritten.sum())} never written")  # fmt: skip
        if self.wrong.any():
            error = np.where(self.wrong, np.abs(self.got - self.expected), -1.0)
            where = np.unravel_index(int(np.nanargmax(error)), error.shape)
            at = tuple(int(i) for i in where)
            text += (f"; worst at {at if len(at) > 1 else at[0]}: got {self.got[where]:.6g}, "
                     f"expected {self.expected[where]:.6g}")  # fmt: skip
            nans = int(np.isnan(self.got[self.wrong]).sum())
            if nans:
                text += f"; {nans} wrong elements are NaN (inf - inf, 0/0 or inf/inf)"
        return text


@dataclass
class CheckResult:
    """What `check` found: `passed`, the `problems` in words, per-output diffs, the error the
    kernel raised (if any), and the access view of its loads/stores (interpreter runs)."""

    puzzle: Puzzle
    where: str  # "interpreter" or "GPU"
    problems: list[str] = field(default_factory=list)
    outputs: list[OutputDiff] = field(default_factory=list)
    error: str | None = None
    access: object | None = None  # an AccessView (lab/widgets/access.py)

    @property
    def passed(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.passed

    def text(self) -> str:
        head = f"{'PASS' if self.passed else 'FAIL'}: {self.puzzle.title} (on the {self.where})"
        lines = [head, *(d.summary() for d in self.outputs), *self.problems]
        if not self.passed:
            lines.append(f"hint: {self.puzzle.hint}")
        return "\n".join(dict.fromkeys(lines))

    def __repr__(self) -> str:
        return self.text()

    @property
    def png(self) -> bytes | None:
        """The outputs' picture: expected, got, and which elements are right."""
        if not self.outputs:
            return None
        fig = new_figure(11.0, 2.6 * len(self.outputs) + 0.4)
        draw_diffs(self.outputs, fig)
        return figure_png(fig)

    def _repr_html_(self) -> str:
        color, word = ("#1a7f37", "PASS") if self.passed else ("#cf222e", "FAIL")
        parts = [
            f"<div style='font-family:sans-serif;font-size:14px;margin:4px 0'>"
            f"<span style='background:{color};color:white;padding:1px 8px;border-radius:4px;"
            f"font-weight:bold'>{word}</span> {html.escape(self.puzzle.title)} "
            f"<span style='color:#656d76'>(on the {self.where})</span></div>"
        ]
        details = [d.summary() for d in self.outputs] + self.problems
        if details:
            parts.append("<pre style='font-size:12px;white-space:pre-wrap;margin:4px 0'>"
                         + html.escape("\n".join(dict.fromkeys(details))) + "</pre>")  # fmt: skip
        png = self.png
        if png:
            parts.append(snapshot_html(png, "left: the reference; middle: your kernel's output "
                                            "(grey: no number: never written, or NaN); right: green right, red wrong"))  # fmt: skip
        if self.access is not None:
            parts.append(self.access.snapshot())
            parts.append("<div style='color:#656d76;font-size:12px'>result.access is this view as "
                         "a widget: pick another argument, program or load/store.</div>")  # fmt: skip
        if not self.passed:
            parts.append("<div style='font-family:sans-serif;font-size:13px;margin-top:6px'>"
                         f"<b>hint:</b> {html.escape(self.puzzle.hint)}</div>")  # fmt: skip
        return "<div class='kernellab-check'>" + "".join(parts) + "</div>"


def _wrapped(a: np.ndarray) -> np.ndarray:
    """A picture-friendly 2-D view: 2-D stays, 1-D is wrapped into rows of 64."""
    if a.ndim == 2:
        return a
    flat = a.reshape(-1)
    width = min(64, max(flat.size, 1))
    rows = -(-flat.size // width)
    out = np.full(rows * width, np.nan)
    out[: flat.size] = flat
    return out.reshape(rows, width)


def draw_diffs(outputs: list[OutputDiff], fig) -> None:
    """Per output, three panels: the reference, the kernel's output, the right/wrong map."""
    from matplotlib import colormaps

    axes = fig.subplots(len(outputs), 3, squeeze=False)
    for row, diff in zip(axes, outputs):
        expected, got = _wrapped(diff.expected), _wrapped(diff.got)
        finite = expected[np.isfinite(expected)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        for ax, data, title in ((row[0], expected, "reference"), (row[1], got, "your kernel")):
            cmap = colormaps["viridis"].with_extremes(bad=_UNWRITTEN)
            ax.imshow(np.ma.masked_invalid(data), vmin=low, vmax=high, cmap=cmap,
                      interpolation="nearest", aspect="auto")  # fmt: skip
            ax.set_title(f"{diff.name}: {title}", fontsize=9)
        status = np.zeros(expected.shape + (3,))
        status[:] = 1.0  # padding of a wrapped 1-D output
        right, unwritten = _wrapped(diff.right.astype(float)), _wrapped(diff.unwritten.astype(float))
        wrong = _wrapped(diff.wrong.astype(float))
        status[right == 1] = _RIGHT
        status[wrong == 1] = _WRONG
        status[unwritten == 1] = _UNWRITTEN
        row[2].imshow(status, interpolation="nearest", aspect="auto")
        row[2].set_title(f"{int(diff.right.sum())} right, {int(diff.wrong.sum())} wrong, "
                         f"{int(diff.unwritten.sum())} never written", fontsize=9)  # fmt: skip
        for ax in row:
            ax.tick_params(labelsize=7)


# A NaN with a payload no arithmetic makes: an element still holding it was never written (a
# NaN the kernel computed, such as inf/inf, is a wrong value, not a missing one).
_POISON_BITS = {2: np.uint16(0x7E5A), 4: np.uint32(0x7FC0DEAD), 8: np.uint64(0x7FF8DEADDEADBEEF)}


def _poisoned(value: np.ndarray) -> np.ndarray:
    """A fresh output buffer filled with the poison (the integer minimum for integer outputs)."""
    out = np.empty_like(value)
    if np.issubdtype(out.dtype, np.floating):
        bits = _POISON_BITS[out.dtype.itemsize]
        out.view(bits.dtype)[...] = bits
    else:
        out[...] = np.iinfo(out.dtype).min
    return out


def _never_written(raw: np.ndarray) -> np.ndarray:
    if np.issubdtype(raw.dtype, np.floating):
        bits = _POISON_BITS[raw.dtype.itemsize]
        return np.ascontiguousarray(raw).view(bits.dtype) == bits
    return raw == np.iinfo(raw.dtype).min


def _float64(args: dict) -> dict:
    return {k: v.astype(np.float64) if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating) else v
            for k, v in args.items()}  # fmt: skip


def _compare(p: Puzzle, name: str, raw: np.ndarray, expected: np.ndarray) -> OutputDiff:
    unwritten = _never_written(raw).reshape(expected.shape)
    got = np.where(unwritten, np.nan, np.asarray(raw, dtype=np.float64).reshape(expected.shape))
    right = np.isclose(got, expected, atol=p.atol, rtol=p.rtol) & ~unwritten
    return OutputDiff(name, expected, got, right, unwritten)


def _signature_problem(kernel, p: Puzzle, args: dict) -> str | None:
    binder = getattr(kernel, "binder", None)
    if binder is None:
        return f"check takes a @kl.jit kernel, not {type(kernel).__name__}"
    wanted = [*args, *p.meta]
    if len(binder.names) != len(wanted) or set(binder.names[len(args):]) != set(p.meta):
        return (f"the puzzle calls {p.signature.split('(')[0][4:]}({', '.join(wanted)}), but your "
                f"kernel is {kernel.__name__}({', '.join(binder.names)}); start from:\n    {p.signature}")  # fmt: skip
    return None


def _run_on_interpreter(kernel, p: Puzzle, args: dict, result: CheckResult) -> dict | None:
    """Run with an access trace; returns the written outputs by puzzle name (None if it failed
    before running)."""
    from kernellab.lab.widgets.access import AccessView, run_traced

    names = list(args)
    try:
        trace, arrays, grid3, error = run_traced(kernel, p.grid(args), *args.values(), **p.meta)
    except Exception as e:  # the learner's kernel did not compile or bind: that is the result
        result.error = f"{type(e).__name__}: {e}"
        result.problems.append(result.error)
        return None
    learner = kernel.binder.names
    if error:
        result.error = error
        result.problems.append(error)
    focus = next((learner[names.index(o)] for o in p.outputs), None)
    if error:
        from kernellab.lab.widgets.access import parse_out_of_bounds

        focus = parse_out_of_bounds(error)[0] or focus
    result.access = AccessView(trace, arrays, None, grid3, error, arg=focus)
    if p.also is not None and not error:
        problem = p.also(trace, {n: args[n] for n in names}, p.meta)
        if problem:
            result.problems.append(problem)
    return {o: arrays[learner[names.index(o)]] for o in p.outputs}


def _run_on_gpu(kernel, p: Puzzle, args: dict, result: CheckResult) -> dict | None:
    import torch

    on_gpu = {k: torch.from_numpy(v).cuda() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    try:
        kernel[p.grid(args)](*on_gpu.values(), **p.meta)
        torch.cuda.synchronize()
    except Exception as e:
        result.error = f"{type(e).__name__}: {e}"
        result.problems.append(result.error)
        return None
    return {o: on_gpu[o].cpu().numpy() for o in p.outputs}


def check(kernel, puzzle, device: str | None = None, seed: int | None = None) -> CheckResult:
    """Run `kernel` (a @kl.jit kernel) on `puzzle` (a Puzzle or its name) with fresh random
    inputs and compare every output element with the numpy reference. `device="cuda"` runs it
    on the GPU (torch CUDA tensors); the default is the interpreter, which also records the
    access view. `seed` repeats a run's inputs."""
    p = puzzle if isinstance(puzzle, Puzzle) else find_puzzle(puzzle)
    if device not in (None, "cpu", "interpreter", "cuda"):
        raise ValueError(f"device={device!r}: use None (the interpreter) or 'cuda' (the GPU)")
    on_gpu = device == "cuda"
    result = CheckResult(p, "GPU" if on_gpu else "interpreter")
    rng = np.random.default_rng(seed)
    args = p.make(rng)
    for name in p.outputs:
        args[name] = _poisoned(args[name])
    expected = p.reference(_float64({k: v for k, v in args.items() if k not in p.outputs}))
    problem = _signature_problem(kernel, p, args)
    if problem:
        result.problems.append(problem)
        return result
    outputs = (_run_on_gpu if on_gpu else _run_on_interpreter)(kernel, p, args, result)
    if outputs is None:
        return result
    for name in p.outputs:
        diff = _compare(p, name, outputs[name], np.asarray(expected[name], dtype=np.float64))
        result.outputs.append(diff)
        if not diff.right.all():
            result.problems.append(diff.summary())
    return result


__all__ = ["CheckResult", "OutputDiff", "check", "draw_diffs"]
