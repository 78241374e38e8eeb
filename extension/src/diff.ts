/**
 * Line diff (Myers' O(ND) algorithm) and its side-by-side layout, for the pass list: the IR
 * before a pass on the left, after it on the right. Pure logic, no DOM: unit-tested in tests/.
 */

export type DiffOp =
  | { kind: 'equal'; a: number; b: number }
  | { kind: 'delete'; a: number }
  | { kind: 'insert'; b: number };

/** One side of a side-by-side row: a line number (0-based index) and its text, or empty. */
export interface ISide {
  index: number;
  text: string;
}

export type RowKind = 'equal' | 'change' | 'delete' | 'insert';

export interface ISideBySideRow {
  kind: RowKind;
  left: ISide | null;
  right: ISide | null;
}

/** Past this many edits the diff gives up looking for the shortest script and replaces all. */
export const MAX_EDIT_DISTANCE = 3000;

/**
 * Shortest edit script turning `a` into `b`, as a list of equal/delete/insert operations in
 * order. Common prefix and suffix are matched first; the middle goes through Myers' greedy
 * algorithm. When the middle needs more than `maxEdits` edits, the middle is reported as a
 * deletion of all of it followed by an insertion (still a correct, if not minimal, script).
 */
export function diffLines(
  a: string[],
  b: string[],
  maxEdits: number = MAX_EDIT_DISTANCE
): DiffOp[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) {
    start++;
  }
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: DiffOp[] = [];
  for (let i = 0; i < start; i++) {
    ops.push({ kind: 'equal', a: i, b: i });
  }
  ops.push(...myers(a, b, start, endA, start, endB, maxEdits));
  for (let i = 0; endA + i < a.length; i++) {
    ops.push({ kind: 'equal', a: endA + i, b: endB + i });
  }
  return ops;
}

function myers(
  a: string[],
  b: string[],
  a0: number,
  a1: number,
  b0: number,
  b1: number,
  maxEdits: number
): DiffOp[] {
  const n = a1 - a0;
  const m = b1 - b0;
  const replaceAll = (): DiffOp[] => {
    const out: DiffOp[] = [];
    for (let i = a0; i < a1; i++) {
      out.push({ kind: 'delete', a: i });
    }
    for (let j = b0; j < b1; j++) {
      out.push({ kind: 'insert', b: j });
    }
    return out;
  };
  if (n === 0 || m === 0) {
    return replaceAll();
  }
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2)); // v[k] for |k| <= d + 1
    const next = v;
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])) {
        x = v[offset + k + 1]; // down: insertion
      } else {
        x = v[offset + k - 1] + 1; // right: deletion
      }
      let y = x - k;
      while (x < n && y < m && a[a0 + x] === b[b0 + y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    v = next;
    if (found >= 0) {
      break;
    }
  }
  if (found < 0) {
    return replaceAll();
  }
  // Walk the trace backwards to recover the path.
  const reversed: DiffOp[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d];
    const at = (k: number) => vd[k + d + 1];
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      reversed.push({ kind: 'equal', a: a0 + x, b: b0 + y });
    }
    if (down) {
      y--;
      reversed.push({ kind: 'insert', b: b0 + y });
    } else {
      x--;
      reversed.push({ kind: 'delete', a: a0 + x });
    }
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    reversed.push({ kind: 'equal', a: a0 + x, b: b0 + y });
  }
  return reversed.reverse();
}

/**
 * Lay a diff out in two columns. Within each run of consecutive deletions and insertions the
 * k-th deleted line is paired with the k-th inserted line (a changed row); the leftovers get a
 * row with one empty side.
 */
export function sideBySide(
  a: string[],
  b: string[],
  ops: DiffOp[] = diffLines(a, b)
): ISideBySideRow[] {
  const rows: ISideBySideRow[] = [];
  let dels: number[] = [];
  let ins: number[] = [];
  const flush = () => {
    const n = Math.max(dels.length, ins.length);
    for (let i = 0; i < n; i++) {
      const l = i < dels.length ? { index: dels[i], text: a[dels[i]] } : null;
      const r = i < ins.length ? { index: ins[i], text: b[ins[i]] } : null;
      rows.push({ kind: l && r ? 'change' : l ? 'delete' : 'insert', left: l, right: r });
    }
    dels = [];
    ins = [];
  };
  for (const op of ops) {
    if (op.kind === 'equal') {
      flush();
      rows.push({
        kind: 'equal',
        left: { index: op.a, text: a[op.a] },
        right: { index: op.b, text: b[op.b] }
      });
    } else if (op.kind === 'delete') {
      dels.push(op.a);
    } else {
      ins.push(op.b);
    }
  }
  flush();
  return rows;
}

export interface IDiffStats {
  added: number;
  removed: number;
  unchanged: number;
}

export function diffStats(ops: DiffOp[]): IDiffStats {
  const s = { added: 0, removed: 0, unchanged: 0 };
  for (const op of ops) {
    if (op.kind === 'equal') {
      s.unchanged++;
    } else if (op.kind === 'delete') {
      s.removed++;
    } else {
      s.added++;
    }
  }
  return s;
}

/** A stretch of the side-by-side rows: shown, or folded away as unchanged context. */
export type Hunk =
  | { kind: 'rows'; rows: ISideBySideRow[] }
  | { kind: 'folded'; rows: ISideBySideRow[] };

/**
 * Fold long runs of unchanged rows, keeping `context` rows next to each change. A run is only
 * folded when that hides more than `minFold` rows.
 */
export function foldUnchanged(
  rows: ISideBySideRow[],
  context = 3,
  minFold = 4
): Hunk[] {
  const hunks: Hunk[] = [];
  const push = (kind: 'rows' | 'folded', slice: ISideBySideRow[]) => {
    if (slice.length === 0) {
      return;
    }
    const last = hunks[hunks.length - 1];
    if (last && last.kind === kind) {
      last.rows.push(...slice);
    } else {
      hunks.push({ kind, rows: [...slice] });
    }
  };
  let i = 0;
  while (i < rows.length) {
    if (rows[i].kind !== 'equal') {
      push('rows', [rows[i]]);
      i++;
      continue;
    }
    let j = i;
    while (j < rows.length && rows[j].kind === 'equal') {
      j++;
    }
    const run = rows.slice(i, j);
    const keepBefore = i === 0 ? 0 : context; // context after the previous change
    const keepAfter = j === rows.length ? 0 : context; // context before the next change
    if (run.length - keepBefore - keepAfter > minFold) {
      push('rows', run.slice(0, keepBefore));
      push('folded', run.slice(keepBefore, run.length - keepAfter));
      push('rows', run.slice(run.length - keepAfter));
    } else {
      push('rows', run);
    }
    i = j;
  }
  return hunks;
}
