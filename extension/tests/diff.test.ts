import { describe, expect, it } from 'vitest';
import {
  diffLines,
  diffStats,
  foldUnchanged,
  sideBySide,
  type DiffOp
} from '../src/diff';

/** Replay a script: the equal and delete ops walk `a`, the equal and insert ops build `b`. */
function replay(a: string[], b: string[], ops: DiffOp[]): string[] {
  const out: string[] = [];
  let i = 0;
  let j = 0;
  for (const op of ops) {
    if (op.kind === 'equal') {
      expect(op.a).toBe(i);
      expect(op.b).toBe(j);
      expect(a[op.a]).toBe(b[op.b]);
      out.push(a[op.a]);
      i++;
      j++;
    } else if (op.kind === 'delete') {
      expect(op.a).toBe(i);
      i++;
    } else {
      expect(op.b).toBe(j);
      out.push(b[op.b]);
      j++;
    }
  }
  expect(i).toBe(a.length);
  expect(j).toBe(b.length);
  return out;
}

/** Length of the longest common subsequence, by dynamic programming (the reference). */
function lcs(a: string[], b: string[]): number {
  const dp = Array.from({ length: a.length + 1 }, () =>
    new Array<number>(b.length + 1).fill(0)
  );
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      dp[i][j] =
        a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    }
  }
  return dp[0][0];
}

function randomLines(n: number, alphabet: number): string[] {
  return Array.from(
    { length: n },
    () => `%${Math.floor(Math.random() * alphabet)} = arith.addi`
  );
}

describe('diffLines', () => {
  it('finds the one changed line of a pass', () => {
    const before = [
      '%0 = arith.constant 1024 : i32',
      '%1 = arith.muli %pid, %0 : i32',
      '%2 = arith.muli %pid, %0 : i32',
      'tt.return'
    ];
    const after = [
      '%0 = arith.constant 1024 : i32',
      '%1 = arith.muli %pid, %0 : i32',
      'tt.return'
    ];
    const ops = diffLines(before, after);
    expect(ops.map(o => o.kind)).toEqual(['equal', 'equal', 'delete', 'equal']);
    expect(diffStats(ops)).toEqual({ added: 0, removed: 1, unchanged: 3 });
  });

  it('handles empty sides', () => {
    expect(diffLines([], [])).toEqual([]);
    expect(diffLines(['x'], []).map(o => o.kind)).toEqual(['delete']);
    expect(diffLines([], ['x', 'y']).map(o => o.kind)).toEqual(['insert', 'insert']);
  });

  it('is a correct and minimal edit script on random inputs', () => {
    for (let trial = 0; trial < 300; trial++) {
      const a = randomLines(Math.floor(Math.random() * 30), 6);
      const b = randomLines(Math.floor(Math.random() * 30), 6);
      const ops = diffLines(a, b);
      expect(replay(a, b, ops)).toEqual(b);
      const s = diffStats(ops);
      // minimal: every line not in a longest common subsequence is edited, no more
      expect(s.unchanged).toBe(lcs(a, b));
      expect(s.removed).toBe(a.length - s.unchanged);
      expect(s.added).toBe(b.length - s.unchanged);
    }
  });

  it('stays correct (not minimal) past the edit budget', () => {
    const a = randomLines(200, 50);
    const b = randomLines(200, 50);
    const ops = diffLines(a, b, 5);
    expect(replay(a, b, ops)).toEqual(b);
  });

  it('is fast on a large IR with a few edits', () => {
    const a = Array.from({ length: 20000 }, (_, i) => `  %${i} = tt.splat %x : tensor<1024xi32>`);
    const b = [...a];
    b.splice(5000, 3, 'tt.load', 'tt.store');
    b.splice(15000, 0, 'arith.addf');
    const ops = diffLines(a, b);
    expect(diffStats(ops)).toEqual({ added: 3, removed: 3, unchanged: 19997 });
  });
});

describe('sideBySide', () => {
  it('pairs deletions with insertions and keeps leftovers one-sided', () => {
    const a = ['keep', 'old1', 'old2', 'old3', 'tail'];
    const b = ['keep', 'new1', 'tail', 'extra'];
    const rows = sideBySide(a, b);
    expect(rows.map(r => r.kind)).toEqual([
      'equal',
      'change',
      'delete',
      'delete',
      'equal',
      'insert'
    ]);
    expect(rows[1].left?.text).toBe('old1');
    expect(rows[1].right?.text).toBe('new1');
    expect(rows[2].right).toBeNull();
    expect(rows[5].left).toBeNull();
    expect(rows[5].right).toEqual({ index: 3, text: 'extra' });
  });

  it('shows every line of both sides exactly once, in order', () => {
    for (let trial = 0; trial < 100; trial++) {
      const a = randomLines(Math.floor(Math.random() * 25), 5);
      const b = randomLines(Math.floor(Math.random() * 25), 5);
      const rows = sideBySide(a, b);
      expect(rows.filter(r => r.left).map(r => r.left!.index)).toEqual(a.map((_, i) => i));
      expect(rows.filter(r => r.right).map(r => r.right!.index)).toEqual(b.map((_, i) => i));
      for (const r of rows) {
        if (r.left) {
          expect(r.left.text).toBe(a[r.left.index]);
        }
        if (r.right) {
          expect(r.right.text).toBe(b[r.right.index]);
        }
      }
    }
  });
});

describe('foldUnchanged', () => {
  it('folds long unchanged runs but keeps context around changes', () => {
    const a = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    const b = [...a];
    b[20] = 'changed';
    const hunks = foldUnchanged(sideBySide(a, b), 3);
    expect(hunks.map(h => [h.kind, h.rows.length])).toEqual([
      ['folded', 17],
      ['rows', 7],
      ['folded', 16]
    ]);
    const shown = hunks[1].rows;
    expect(shown[3].kind).toBe('change');
    expect(shown[0].left?.index).toBe(17);
    // nothing lost: all rows are in some hunk, in order
    const all = hunks.flatMap(h => h.rows).map(r => r.left!.index);
    expect(all).toEqual(a.map((_, i) => i));
  });

  it('does not fold short runs', () => {
    const a = ['a', 'b', 'c', 'd', 'e'];
    const b = ['a', 'b', 'X', 'd', 'e'];
    const hunks = foldUnchanged(sideBySide(a, b));
    expect(hunks).toHaveLength(1);
    expect(hunks[0].kind).toBe('rows');
  });
});
