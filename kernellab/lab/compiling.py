"""Compiling a kernel for the viewer: the NVIDIA stages where the backend exists (no GPU is
needed), else TTIR alone with a note saying why; a later stage that fails leaves the stages that
compiled, with a note. A CompilationError in the user's kernel is never swallowed."""

from __future__ import annotations

from kernellab.lab.bundle import IR_STAGES, STAGE_TITLES


def nvidia_available() -> bool:
    """Whether this build has the NVIDIA backend (compiling needs no GPU)."""
    from kernellab.backends import get_backend

    try:
        get_backend("sm_90")
    except Exception:
        return False
    return True


def compile_for_view(fn, signature=None, constexprs=None, attrs=None, target=None, **options):
    """Compile `fn` for the viewer: returns (CompiledKernel, notes).

    `target=None` means sm_90 where the NVIDIA backend exists, else the interpreter (TTIR only).
    A GPU target that is missing or whose later stages fail falls back to TTIR with a note.
    """
    import kernellab as kl
    from kernellab.frontend.errors import CompilationError

    notes: list[str] = []
    if target in (None, "auto"):
        if nvidia_available():
            target = "sm_90"
        else:
            target = "interpreter"
            notes.append(
                "The NVIDIA backend is not in this build, so only TTIR is shown "
                "(TTGIR, LLIR, PTX and SASS come with it; no GPU is needed to compile them)."
            )
    elif target != "interpreter" and not nvidia_available():
        notes.append(
            f"target {target}: the NVIDIA backend is not in this build, so only TTIR is shown."
        )
        target = "interpreter"
    if not options.get("force") or not _accepts(kl.compile, "force"):
        options.pop("force", None)
    kwargs = dict(signature=signature, constexprs=constexprs, attrs=attrs, **options)
    if target != "interpreter":
        try:
            return kl.compile(fn, target=target, **kwargs), notes
        except CompilationError:
            raise
        except Exception as e:  # a later stage failed: show the stages that did compile
            partial = getattr(e, "partial", None)
            done = [s for s in getattr(partial, "asm", {}) if s in IR_STAGES]
            if done:
                failed = partial.metadata.failed_stage
                titles = ", ".join(STAGE_TITLES.get(s, s) for s in done)
                notes.append(
                    f"Compiling for {target} failed in the {STAGE_TITLES.get(failed, failed)} stage "
                    f"({type(e).__name__}: {_one_line(e)}); shown: the stages that compiled ({titles})."
                )
                return partial, notes
            notes.append(
                f"Compiling for {target} failed after TTIR ({type(e).__name__}: {_one_line(e)}); "
                "only TTIR is shown."
            )
    return kl.compile(fn, target="interpreter", **kwargs), notes


def _accepts(fn, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 300 else text[:297] + "..."
