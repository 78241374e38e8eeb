/**
 * `%%kernel` cells: the body is Python (the notebook's own highlighting does it), and the magic
 * line gets its own look: the magic name, its --options and their values styled distinctly,
 * on a tinted line. An editor extension, so it applies to every cell editor and acts only when
 * the document's first line starts with `%%kernel`.
 */
import { RangeSetBuilder, type Extension } from '@codemirror/state';
import {
  Decoration,
  type DecorationSet,
  EditorView,
  ViewPlugin,
  type ViewUpdate
} from '@codemirror/view';

export const MAGIC = '%%kernel';

export type MagicPart = 'name' | 'flag' | 'value' | 'string';

/** Spans [from, to) of the parts of a `%%kernel ...` line (positions within the line). */
export function magicLineParts(line: string): { from: number; to: number; part: MagicPart }[] {
  if (!isKernelMagicLine(line)) {
    return [];
  }
  const parts: { from: number; to: number; part: MagicPart }[] = [
    { from: 0, to: MAGIC.length, part: 'name' }
  ];
  const re = /"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|--?[A-Za-z][\w-]*|[^\s"']+/g;
  re.lastIndex = MAGIC.length;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line)) !== null) {
    const text = m[0];
    const part: MagicPart =
      text[0] === '"' || text[0] === "'" ? 'string' : /^--?[A-Za-z]/.test(text) ? 'flag' : 'value';
    parts.push({ from: m.index, to: m.index + text.length, part });
  }
  return parts;
}

/** Whether a cell's first line is the `%%kernel` magic (not e.g. `%%kernelfoo`). */
export function isKernelMagicLine(line: string): boolean {
  return line.startsWith(MAGIC) && (line.length === MAGIC.length || /\s/.test(line[MAGIC.length]));
}

const lineDeco = Decoration.line({ class: 'kl-kernel-magic-line' });
const bodyDeco = Decoration.line({ class: 'kl-kernel-body-line' });
const marks: { [P in MagicPart]: Decoration } = {
  name: Decoration.mark({ class: 'kl-magic-name' }),
  flag: Decoration.mark({ class: 'kl-magic-flag' }),
  value: Decoration.mark({ class: 'kl-magic-value' }),
  string: Decoration.mark({ class: 'kl-magic-string' })
};

function decorations(view: EditorView): DecorationSet {
  const builder = new RangeSetBuilder<Decoration>();
  const doc = view.state.doc;
  const first = doc.line(1);
  if (!isKernelMagicLine(first.text)) {
    return builder.finish();
  }
  builder.add(first.from, first.from, lineDeco);
  for (const p of magicLineParts(first.text)) {
    builder.add(first.from + p.from, first.from + p.to, marks[p.part]);
  }
  // Mark the body lines in view, so themes can set the kernel body apart if they like.
  for (const { from, to } of view.visibleRanges) {
    let pos = from;
    while (pos <= to) {
      const line = doc.lineAt(pos);
      if (line.number > 1) {
        builder.add(line.from, line.from, bodyDeco);
      }
      pos = line.to + 1;
    }
  }
  return builder.finish();
}

/** The editor extension: decorations kept up to date as the cell is edited or scrolled. */
export function kernelMagicExtension(): Extension {
  return ViewPlugin.fromClass(
    class {
      decorations: DecorationSet;
      constructor(view: EditorView) {
        this.decorations = decorations(view);
      }
      update(update: ViewUpdate) {
        if (update.docChanged || update.viewportChanged) {
          this.decorations = decorations(update.view);
        }
      }
    },
    { decorations: v => v.decorations }
  );
}
