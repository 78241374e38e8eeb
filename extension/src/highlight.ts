/**
 * Syntax highlighting of a whole text into one DOM element per line, so the viewer can link,
 * light up and scroll individual lines. The parse runs over the whole text (multi-line
 * comments and strings stay correct); the token ranges are then cut at line breaks.
 */
import type { Language } from '@codemirror/language';
import { highlightTree, type Highlighter } from '@lezer/highlight';

/** How the viewer finds a CodeMirror language by name ('mlir', 'python', ...). */
export interface IHighlighting {
  language(name: string): Promise<Language | null>;
  highlighter: Highlighter;
}

/** A token range [from, to) with the CSS classes the highlighter gave it. */
export interface IToken {
  from: number;
  to: number;
  classes: string;
}

/** Styled tokens of `code` in `language` (none when the language is unknown). */
export function tokenize(
  code: string,
  language: Language | null,
  highlighter: Highlighter
): IToken[] {
  if (!language) {
    return [];
  }
  const tokens: IToken[] = [];
  const tree = language.parser.parse(code);
  highlightTree(tree, highlighter, (from, to, classes) => {
    tokens.push({ from, to, classes });
  });
  return tokens;
}

/**
 * Cut `code` into lines of styled segments. Each line is a list of [text, classes] pairs
 * (classes '' for unstyled text); the line breaks themselves are dropped. A trailing newline
 * does not produce an empty last line (like Python's splitlines).
 */
export function segmentLines(
  code: string,
  tokens: IToken[]
): [string, string][][] {
  const lines: [string, string][][] = [[]];
  const put = (text: string, classes: string) => {
    const parts = text.split('\n');
    parts.forEach((part, i) => {
      if (i > 0) {
        lines.push([]);
      }
      if (part.length > 0) {
        lines[lines.length - 1].push([part.replace(/\r$/, ''), classes]);
      }
    });
  };
  let pos = 0;
  for (const t of tokens) {
    if (t.from > pos) {
      put(code.slice(pos, t.from), '');
    }
    if (t.to > t.from) {
      put(code.slice(Math.max(t.from, pos), t.to), t.classes);
    }
    pos = Math.max(pos, t.to);
  }
  if (pos < code.length) {
    put(code.slice(pos), '');
  }
  if (code.endsWith('\n')) {
    lines.pop();
  }
  if (code.length === 0) {
    return [];
  }
  return lines;
}

/** Fill `el` with the segments of one line (text nodes only: never parsed as HTML). */
export function renderSegments(el: HTMLElement, segments: [string, string][]): void {
  for (const [text, classes] of segments) {
    if (classes) {
      const span = document.createElement('span');
      span.className = classes;
      span.textContent = text;
      el.appendChild(span);
    } else {
      el.appendChild(document.createTextNode(text));
    }
  }
}

/**
 * Highlight, in CodeMirror's theme colours, the code in `container` not highlighted yet: each
 * code block (`.kl-code`, one `.kl-text` per line) and each column of each pass diff
 * (`.kl-diff`), in the language their `data-kl-language` names.
 */
export async function highlightCode(container: HTMLElement, highlighting: IHighlighting | null): Promise<void> {
  if (!highlighting) {
    return;
  }
  const blocks = Array.from(container.querySelectorAll<HTMLElement>('[data-kl-language]:not(.kl-highlighted)'));
  for (const block of blocks) {
    block.classList.add('kl-highlighted');
    const language = await highlighting.language(block.getAttribute('data-kl-language') ?? '');
    if (!language) {
      continue;
    }
    const columns = block.classList.contains('kl-diff')
      ? ['td.kl-left.kl-diff-code:not(.kl-diff-blank)', 'td.kl-right.kl-diff-code:not(.kl-diff-blank)']
      : ['.kl-line .kl-text'];
    for (const selector of columns) {
      const cells = Array.from(block.querySelectorAll<HTMLElement>(selector));
      const text = cells.map(cell => cell.textContent ?? '').join('\n');
      const segments = segmentLines(text, tokenize(text, language, highlighting.highlighter));
      cells.forEach((cell, i) => {
        cell.textContent = '';
        renderSegments(cell, segments[i] ?? []);
      });
    }
  }
}
