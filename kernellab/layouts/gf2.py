"""Linear algebra over GF(2) on bit-packed vectors: all the arithmetic linear layouts need.

A vector is a Python int whose bits are its coordinates; adding two vectors is XOR.
"""

from __future__ import annotations


class Span:
    """An echelon basis of the span of the vectors added so far.

    Each row remembers which inputs (a bit mask over the order in which vectors were added)
    XOR to it. Inputs are only ever combined with earlier inputs, so `solve` returns the
    preimage that uses the earliest inputs: numerically the smallest one. Layouts add their
    bases register bits first, so that preimage prefers register 0, lane 0, warp 0.
    """

    def __init__(self) -> None:
        self._rows: dict[int, tuple[int, int]] = {}  # leading bit -> (vector, combination)

    def _reduce(self, vector: int, combination: int) -> tuple[int, int]:
        while vector:
            row = self._rows.get(vector.bit_length() - 1)
            if row is None:
                break
            vector ^= row[0]
            combination ^= row[1]
        return vector, combination

    def add(self, vector: int, combination: int) -> bool:
        """Add `vector` (made of the inputs in `combination`); False if it was already spanned."""
        vector, combination = self._reduce(vector, combination)
        if not vector:
            return False
        self._rows[vector.bit_length() - 1] = (vector, combination)
        return True

    def solve(self, target: int) -> int | None:
        """The smallest combination of inputs that XORs to `target`, or None if none does."""
        vector, combination = self._reduce(target, 0)
        return None if vector else combination

    @property
    def rank(self) -> int:
        return len(self._rows)


def span_of(vectors) -> tuple[Span, int]:
    """The span of `vectors` (input i is vector i) and the mask of inputs that added nothing."""
    span, dependent = Span(), 0
    for i, vector in enumerate(vectors):
        if not span.add(vector, 1 << i):
            dependent |= 1 << i
    return span, dependent
