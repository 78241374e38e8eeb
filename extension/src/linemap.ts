/**
 * Line linking between the kernel's source and one stage's text.
 *
 * The bundle gives, for the source view, the file line number of each displayed row, and for
 * each stage, the file line number each of its rows came from (or null). A LineMap turns that
 * into row ↔ row links in both directions. Pure logic, no DOM: unit-tested in tests/.
 */

export class LineMap {
  /**
   * @param sourceLines file line number shown on each source row (row = index)
   * @param stageLines file line number each stage row came from, or null
   */
  constructor(sourceLines: (number | null)[], stageLines: (number | null)[]) {
    this._stageToSource = new Array(stageLines.length).fill(null);
    const rowOfLine = new Map<number, number>();
    sourceLines.forEach((line, row) => {
      if (line !== null && !rowOfLine.has(line)) {
        rowOfLine.set(line, row);
      }
    });
    stageLines.forEach((line, irRow) => {
      if (line === null) {
        return;
      }
      const srcRow = rowOfLine.get(line);
      if (srcRow === undefined) {
        return; // a line of another file, or outside the shown source
      }
      this._stageToSource[irRow] = srcRow;
      let rows = this._sourceToStage.get(srcRow);
      if (!rows) {
        rows = [];
        this._sourceToStage.set(srcRow, rows);
      }
      rows.push(irRow);
    });
  }

  /** Whether any row of the stage is linked to a source row. */
  get hasLinks(): boolean {
    return this._sourceToStage.size > 0;
  }

  /** Number of stage rows linked to some source row. */
  get linkedRowCount(): number {
    return this._stageToSource.filter(r => r !== null).length;
  }

  /** Stage rows produced by a source row, in order (empty when none). */
  stageRowsFor(sourceRow: number): number[] {
    return [...(this._sourceToStage.get(sourceRow) ?? [])];
  }

  /** The source row a stage row came from, or null. */
  sourceRowFor(stageRow: number): number | null {
    return this._stageToSource[stageRow] ?? null;
  }

  /** Stage rows that came from the same source row as `stageRow` (itself included). */
  siblingsOf(stageRow: number): number[] {
    const src = this.sourceRowFor(stageRow);
    return src === null ? [] : this.stageRowsFor(src);
  }

  /** Source rows that produced at least one stage row, ascending. */
  linkedSourceRows(): number[] {
    return [...this._sourceToStage.keys()].sort((a, b) => a - b);
  }

  /**
   * Contiguous runs of stage rows, as [first, last] pairs, in the given rows (sorted, deduped).
   * Used to scroll to and outline a block of linked lines rather than each line separately.
   */
  static runs(rows: number[]): [number, number][] {
    const sorted = [...new Set(rows)].sort((a, b) => a - b);
    const out: [number, number][] = [];
    for (const r of sorted) {
      const last = out[out.length - 1];
      if (last && r === last[1] + 1) {
        last[1] = r;
      } else {
        out.push([r, r]);
      }
    }
    return out;
  }

  private _stageToSource: (number | null)[];
  private _sourceToStage = new Map<number, number[]>();
}
