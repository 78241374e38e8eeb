"""`KernelMetadata`: what is known about one compiled kernel, filled stage by stage.

The compiler sets the specialization (name, target, options, signature, constexprs, attrs,
hash, times); each stage reports its facts in `StageOutput.metadata` and `record` stores them
in the typed fields (the lowering: shared bytes, threads; PTX: parameters, version; ptxas:
registers, spills, ...). Facts a backend has no field for stay in `extra`.

The lab and Triton-style code read it both ways: as attributes (`md.num_warps`, typed:
`md.signature` is a `Signature`) and as a mapping of plain values (`md["shared"]`,
`md.get("registers")`, `"x" in md`, `md.items()`; the signature as its text), which is also
what the disk cache stores as JSON. A field that was never set is absent from the mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields

from kernellab.backends.options import CompileOptions
from kernellab.language.signature import Signature


@dataclass(eq=False)
class KernelMetadata(Mapping):
    # the specialization (set by the compiler)
    name: str = "kernel"
    target: str = ""
    options: CompileOptions = field(default_factory=CompileOptions)
    signature: Signature = field(default_factory=Signature)
    constexprs: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    hash: str | None = None
    times: dict = field(default_factory=dict)  # stage → seconds (on a cache hit: {"cache": s})
    kernellab_version: str | None = None
    # launch facts (the lowering, the PTX stage)
    shared: int | None = None  # dynamic shared memory, bytes
    threads_per_block: int | None = None
    bar_syncs: int | None = None
    params: list | None = None  # PTX parameter types
    # per host TensorDescriptor copied with TMA (sm_90a): TmaDescriptor.as_dict(), in the order
    # of the by-value tensor-map parameters that follow the signature's
    tma_descriptors: list | None = None
    # global memory the launch gives each program (tensor maps the kernel builds), in bytes,
    # passed as the hidden last parameter (Triton's names)
    global_scratch_size: int | None = None
    global_scratch_align: int | None = None
    ptx_version: str | None = None
    # resources (ptxas)
    registers: int | None = None
    barriers: int | None = None
    stack_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    spills: int | None = None
    static_shared: int | None = None
    shared_total: int | None = None
    local_bytes: int | None = None
    constant_bytes: int | None = None
    max_threads: int | None = None
    linker: str | None = None
    sass: str | None = None  # how SASS is made, or why it can't be
    # the disk cache
    cache_hit: bool | None = None
    cache_key: str | None = None
    compile_times: dict | None = None  # on a cache hit: the stage times of the original compile
    # a partial compile (a stage failed)
    failed_stage: str | None = None
    error: str | None = None
    extra: dict = field(default_factory=dict)  # a backend's facts without a field here

    def record(self, facts: Mapping) -> None:
        """Store one stage's facts: known names in their fields, others in `extra`. The
        options and the target are the compiler's: a stage repeating them changes nothing."""
        for key, value in facts.items():
            if key in _OWN or key == "options":
                continue
            if key in _FIELDS:
                setattr(self, key, value)
            elif key not in self.options.as_dict():
                self.extra[key] = value

    # -- attribute reads of the options (Triton's `metadata.num_warps`) ----------------------

    def __getattr__(self, name: str):
        if name.startswith("_") or name in _FIELDS:
            raise AttributeError(name)
        options = self.__dict__.get("options")
        if options is not None and name in options.as_dict():
            return getattr(options, name)
        extra = self.__dict__.get("extra") or {}
        if name in extra:
            return extra[name]
        raise AttributeError(f"metadata has no {name!r}; keys: {', '.join(self)}")

    # -- the mapping of plain values ----------------------------------------------------------

    def as_dict(self) -> dict:
        """Every set entry as plain values, in a stable order (the options after the target)."""
        out = {"name": self.name, "target": self.target}
        out.update((k, v) for k, v in self.options.as_dict().items() if k != "target")
        for f in _ORDERED:
            value = getattr(self, f)
            if value is not None:
                out[f] = str(value) if f == "signature" else value
        out.update(self.extra)
        return out

    def __getitem__(self, key: str):
        try:
            return self.as_dict()[key]
        except KeyError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())

    def __contains__(self, key) -> bool:
        return key in self.as_dict()

    def __repr__(self) -> str:
        return f"KernelMetadata({self.as_dict()!r})"


@dataclass(frozen=True)
class TmaDescriptor:
    """What the launcher needs to encode one host descriptor's CUtensorMap, as the compiler
    chose it: the kernel parameter (`param`), where base, shape and strides come from (each
    ("arg", index into the signature) or ("value", the constant it was specialized to)), the
    box (elements, tensor dims outermost first; the tile's rows and one swizzle-wide panel of
    its columns), the swizzle (bytes: 32, 64 or 128), the fill of reads outside the
    tensor ("zero" or "nan"), and whether the kernel reads or writes through it ("load" or
    "store": a map serves one of them, so that a map of an empty tensor can point at memory of
    its own, see tensor_maps.py)."""

    param: str
    base: tuple
    shape: tuple
    strides: tuple
    box: tuple
    swizzle: int
    fill: str
    access: str

    def as_dict(self) -> dict:
        return {"param": self.param, "base": list(self.base), "shape": [list(s) for s in self.shape],
                "strides": [list(s) for s in self.strides], "box": list(self.box),
                "swizzle": self.swizzle, "fill": self.fill, "access": self.access}  # fmt: skip

    @staticmethod
    def of(d: Mapping) -> TmaDescriptor:
        return TmaDescriptor(
            d["param"], tuple(d["base"]), tuple(tuple(s) for s in d["shape"]),
            tuple(tuple(s) for s in d["strides"]), tuple(d["box"]), int(d["swizzle"]), d["fill"],
            d["access"],
        )  # fmt: skip


_FIELDS = frozenset(f.name for f in fields(KernelMetadata))
_OWN = frozenset({"target", "extra"})
_ORDERED = [f.name for f in fields(KernelMetadata) if f.name not in ("name", "target", "options", "extra")]

__all__ = ["KernelMetadata", "TmaDescriptor"]
