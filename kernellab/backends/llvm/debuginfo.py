"""Debug info for the lowered kernel: a compile unit and subprogram for the kernel function and
a DILocation per source position, so the assembler's `.loc` lines map the code back to the
kernel's source (the viewer's source map for the LLIR and PTX stages)."""

from __future__ import annotations

import os

import llvmlite.ir as ir
from xdsl.dialects.builtin import FileLineColLoc

from kernellab.backends.llvm.types import I32


class DebugInfo:
    def __init__(self, mod: ir.Module, fn: ir.Function, func, name: str):
        self.mod = mod
        self._locations: dict = {}
        filename, line = _source_of(func)
        self.func_line = line
        self.filename = filename
        directory, base = os.path.split(filename)
        di_file = mod.add_debug_info("DIFile", {"filename": base or filename, "directory": directory})
        cu = mod.add_debug_info(
            "DICompileUnit",
            {
                "language": ir.DIToken("DW_LANG_C"),
                "file": di_file,
                "producer": "kernellab",
                "isOptimized": True,
                "runtimeVersion": 0,
                "emissionKind": ir.DIToken("DebugDirectivesOnly"),
            },
            is_distinct=True,
        )
        self._file, self._unit = di_file, cu
        self._sp_type = mod.add_debug_info("DISubroutineType", {"types": mod.add_metadata([])})
        self.subprogram = self._subprogram(name, line)
        mod.add_named_metadata("llvm.dbg.cu", cu)
        mod.add_named_metadata(
            "llvm.module.flags", mod.add_metadata([I32(2), "Debug Info Version", I32(3)])
        )
        mod.add_named_metadata(
            "llvm.module.flags", mod.add_metadata([I32(2), "Dwarf Version", I32(4)])
        )
        fn.set_metadata("dbg", self.subprogram)

    def _subprogram(self, name: str, line: int):
        return self.mod.add_debug_info(
            "DISubprogram",
            {
                "name": name,
                "scope": self._file,
                "file": self._file,
                "line": line,
                "type": self._sp_type,
                "scopeLine": line,
                "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
                "unit": self._unit,
            },
            is_distinct=True,
        )

    def wrapper_location(self, fn: ir.Function):
        """Give `fn`, a function a target wraps around the kernel (the CPU's grid loop), its
        own subprogram, and return a location in it for its calls: the kernel's lines survive
        inlining into it only so."""
        sp = self._subprogram(fn.name, self.func_line)
        fn.set_metadata("dbg", sp)
        return self.mod.add_debug_info("DILocation", {"line": self.func_line, "column": 0, "scope": sp})

    def location(self, line: int, col: int):
        """The DILocation of (line, column), made once."""
        key = (line, col)
        d = self._locations.get(key)
        if d is None:
            d = self.mod.add_debug_info("DILocation", {"line": line, "column": col, "scope": self.subprogram})
            self._locations[key] = d
        return d

    def location_of(self, op):
        """The DILocation of `op` (None when it comes from another file or has no position)."""
        loc = op.location
        if isinstance(loc, FileLineColLoc) and loc.filename.data == self.filename:
            return self.location(loc.line.data, loc.column.data + 1)
        return None


def _source_of(func) -> tuple[str, int]:
    """(file, line) of the kernel: its own location, else its first op's, else "<kernel>"."""
    loc = func.location
    if isinstance(loc, FileLineColLoc):
        return loc.filename.data, loc.line.data
    for op in func.walk():
        if isinstance(op.location, FileLineColLoc):
            return op.location.filename.data, op.location.line.data
    return "<kernel>", 1
