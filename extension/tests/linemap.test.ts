import { describe, expect, it } from 'vitest';
import { parseBundle, splitLines } from '../src/bundle';
import { LineMap } from '../src/linemap';

// A vector-add kernel as the bundle describes it: source rows show file lines 4..11; each TTIR
// row carries the file line it came from (null: module/func plumbing).
const SOURCE_LINES = [4, 5, 6, 7, 8, 9, 10, 11];
const TTIR_LINES = [null, 5, 6, 7, 7, 7, 7, 7, 8, 8, 9, 9, 9, 10, 10, 10, 11, 11, 11, 11, 5, 5, null];

describe('LineMap', () => {
  const map = new LineMap(SOURCE_LINES, TTIR_LINES);

  it('links a source row to every IR row it produced', () => {
    expect(map.stageRowsFor(3)).toEqual([3, 4, 5, 6, 7]); // file line 7: offs = ...
    expect(map.stageRowsFor(5)).toEqual([10, 11, 12]); // file line 9: x = tl.load(...)
    expect(map.stageRowsFor(1)).toEqual([1, 20, 21]); // def line: args and return
    expect(map.stageRowsFor(0)).toEqual([]); // the decorator made nothing
  });

  it('links an IR row back to its source row', () => {
    expect(map.sourceRowFor(12)).toBe(5);
    expect(map.sourceRowFor(0)).toBeNull();
    expect(map.sourceRowFor(22)).toBeNull();
    expect(map.sourceRowFor(999)).toBeNull();
  });

  it('is consistent in both directions', () => {
    TTIR_LINES.forEach((line, irRow) => {
      const src = map.sourceRowFor(irRow);
      if (line === null) {
        expect(src).toBeNull();
      } else {
        expect(SOURCE_LINES[src!]).toBe(line);
        expect(map.stageRowsFor(src!)).toContain(irRow);
        expect(map.siblingsOf(irRow)).toContain(irRow);
      }
    });
    expect(map.linkedRowCount).toBe(TTIR_LINES.filter(l => l !== null).length);
    expect(map.linkedSourceRows()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('ignores lines outside the shown source (other files, other functions)', () => {
    const m = new LineMap([10, 11], [10, 99, 11, 3, null]);
    expect(m.sourceRowFor(1)).toBeNull();
    expect(m.sourceRowFor(3)).toBeNull();
    expect(m.stageRowsFor(0)).toEqual([0]);
    expect(m.stageRowsFor(1)).toEqual([2]);
  });

  it('reports a stage without line information', () => {
    const m = new LineMap(SOURCE_LINES, [null, null, null]);
    expect(m.hasLinks).toBe(false);
    expect(m.stageRowsFor(3)).toEqual([]);
    expect(map.hasLinks).toBe(true);
  });

  it('random mappings round-trip', () => {
    for (let trial = 0; trial < 50; trial++) {
      const first = 1 + Math.floor(Math.random() * 50);
      const src = Array.from({ length: 1 + Math.floor(Math.random() * 20) }, (_, i) => first + i);
      const ir = Array.from({ length: Math.floor(Math.random() * 60) }, () =>
        Math.random() < 0.2 ? null : first - 3 + Math.floor(Math.random() * (src.length + 6))
      );
      const m = new LineMap(src, ir);
      src.forEach((line, row) => {
        const expected = ir.flatMap((l, i) => (l === line ? [i] : []));
        expect(m.stageRowsFor(row)).toEqual(expected);
      });
      ir.forEach((line, i) => {
        const row = line === null ? -1 : src.indexOf(line);
        expect(m.sourceRowFor(i)).toBe(row < 0 ? null : row);
      });
    }
  });

  it('groups rows into contiguous runs', () => {
    expect(LineMap.runs([7, 3, 4, 5, 9, 10, 4])).toEqual([
      [3, 5],
      [7, 7],
      [9, 10]
    ]);
    expect(LineMap.runs([])).toEqual([]);
  });
});

describe('parseBundle', () => {
  it('normalizes a bundle and pads or trims line lists to the text', () => {
    const b = parseBundle({
      version: 1,
      name: 'add_kernel',
      target: 'sm_90',
      source: { text: 'a\nb\n', filename: 'k.py', first_line: 4 },
      stages: [
        { name: 'source', title: 'Source', language: 'python', text: 'a\nb\n', lines: [4, 5] },
        { name: 'ptx', title: 'PTX', language: 'ptx', text: 'x\ny\nz', lines: [5, 'bad', 4, 7] },
        { title: 'no name' },
        'junk'
      ],
      passes: [{ name: 'cse', ir: 'x', changed: true, seconds: 0.5 }, null],
      metadata: { registers: 32 },
      timings: { stages: { ttir: 0.25, ptx: 'x' }, cache_hit: true },
      notes: ['hello', 3]
    });
    expect(b.stages.map(s => s.name)).toEqual(['source', 'ptx']);
    expect(b.stages[1].lines).toEqual([5, null, 4]);
    expect(b.passes).toHaveLength(1);
    expect(b.passes[0]).toMatchObject({ name: 'cse', stage: 'ttir', changed: true });
    expect(b.timings).toEqual({ stages: { ttir: 0.25 }, total: 0.25, cache_hit: true });
    expect(b.notes).toEqual(['hello']);
  });

  it('rejects what is not an object', () => {
    expect(() => parseBundle('text')).toThrow();
    expect(() => parseBundle(null)).toThrow();
  });

  it('splits lines like Python splitlines', () => {
    expect(splitLines('')).toEqual([]);
    expect(splitLines('a\n')).toEqual(['a']);
    expect(splitLines('a\r\nb')).toEqual(['a', 'b']);
    expect(splitLines('a\n\n')).toEqual(['a', '']);
  });
});
