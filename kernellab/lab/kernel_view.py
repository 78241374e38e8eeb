"""`kl.lab.show` / `kl.lab.view`: the viewer for a kernel, as a displayable KernelView."""

from __future__ import annotations

from kernellab.lab.bundle import MIME, ViewInput, build_bundle
from kernellab.lab.compiling import compile_for_view


class KernelView:
    """A displayable compiled kernel: `display(KernelView(ck))` shows the viewer.

    `.data` is the JSON payload, `.bundle` the whole MIME bundle.
    """

    def __init__(self, ck, **kwargs):
        self.input = kwargs.pop("view", None) or ViewInput(ck, **kwargs)
        self._bundle = None

    @property
    def bundle(self) -> dict:
        if self._bundle is None:
            self._bundle = build_bundle(self.input)
        return self._bundle

    @property
    def data(self) -> dict:
        return self.bundle[MIME]

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.bundle

    def __repr__(self) -> str:
        return self.bundle["text/plain"]


def view(kernel, stages=None, **compile_kwargs) -> KernelView:
    """A KernelView of `kernel`: a CompiledKernel as is; a @kl.jit kernel compiled with
    `compile_kwargs` (signature=, constexprs=, target=, num_warps=, ...) or, without them, its
    last compiled specialization. `stages` picks the stage tabs ("ttir", "ptx", ...)."""
    from kernellab.compiler import CompiledKernel
    from kernellab.language.core import KernelFunction

    if isinstance(kernel, CompiledKernel):
        if compile_kwargs:
            raise TypeError("a CompiledKernel is already compiled: pass no compile options")
        return KernelView(kernel, stages=_stage_list(stages))
    from kernellab.triton_compat import from_triton, is_triton_kernel

    fn = from_triton(kernel) if is_triton_kernel(kernel) else kernel
    while not isinstance(fn, KernelFunction) and getattr(fn, "fn", None) is not None:
        fn = fn.fn  # autotune / heuristics wrappers
    if not isinstance(fn, KernelFunction):
        raise TypeError(
            f"kl.lab.show takes a CompiledKernel, a @kl.jit kernel or a @triton.jit one, not {type(kernel).__name__}"
        )
    if compile_kwargs:
        ck, notes = compile_for_view(fn, **compile_kwargs)
        return KernelView(ck, fn=fn, notes=notes, stages=_stage_list(stages))
    ck = getattr(fn, "_kl_lab_last", None)
    cache = getattr(fn, "cache", None) or {}
    if cache:
        ck = list(cache.values())[-1] if ck is None else ck
    if ck is None:
        raise TypeError(
            f"{fn.__name__} has not been compiled yet: launch it once, or pass "
            'signature="..." and constexprs={...} to kl.lab.show'
        )
    return KernelView(ck, fn=fn, cache_hit=True, stages=_stage_list(stages))


def _stage_list(stages):
    if stages is None:
        return None
    names = [s.strip() for s in (stages.split(",") if isinstance(stages, str) else stages)]
    return ["source"] + [s for s in names if s != "source"]


def show(kernel, stages=None, **compile_kwargs) -> None:
    """Display the compiled-kernel viewer for `kernel` (see `view`) in the notebook.

    Outside IPython, prints the text/plain summary instead.
    """
    v = view(kernel, stages=stages, **compile_kwargs)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(v.bundle["text/plain"])
        return
    if get_ipython() is None:
        print(v.bundle["text/plain"])
        return
    display(v)


__all__ = ["KernelView", "show", "view"]
