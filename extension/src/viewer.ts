/**
 * The compiled-kernel viewer: a JupyterLab mime renderer for the kernellab bundle.
 *
 *   header      kernel(signature; constexprs)  target  cache  [JSON]
 *   notes       why stages are missing, etc.
 *   tabs        TTIR TTGIR LLIR PTX SASS | Passes Resources Timings
 *   stage tab   source (left) | the stage's text (right), line-linked both ways
 *   Passes      the pass list; the selected pass as a side-by-side diff against the one before
 *
 * Everything from the bundle reaches the DOM as text nodes (never as HTML), so the renderer
 * is safe for untrusted notebooks.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Language } from '@codemirror/language';
import type { Highlighter } from '@lezer/highlight';
import { renderHTML } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import {
  MIME_TYPE,
  SUPPORTED_VERSIONS,
  parseBundle,
  passLanguage,
  splitLines,
  stageFileExtension,
  type IKernelBundle,
  type IPassRecord,
  type IStage
} from './bundle';
import { diffLines, diffStats, foldUnchanged, sideBySide, type ISideBySideRow } from './diff';
import { renderSegments, segmentLines, tokenize } from './highlight';
import { LineMap } from './linemap';

/** How the viewer finds a CodeMirror language by name ('mlir', 'python', ...). */
export interface IHighlighting {
  language(name: string): Promise<Language | null>;
  highlighter: Highlighter;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function button(label: string, title: string, onClick: () => void, className = ''): HTMLButtonElement {
  const b = el('button', `kl-button ${className}`.trim(), label);
  b.type = 'button';
  b.title = title;
  b.addEventListener('click', e => {
    e.stopPropagation();
    onClick();
  });
  return b;
}

function formatMs(seconds: number): string {
  const ms = seconds * 1e3;
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 1 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

function formatBytes(n: number): string {
  return n >= 1024 ? `${n} B (${(n / 1024).toFixed(1)} KiB)` : `${n} B`;
}

async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the textarea route
  }
  const area = el('textarea');
  area.value = text;
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

function download(filename: string, text: string, type = 'text/plain'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a');
  a.href = url;
  a.download = filename;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Copy and download buttons for a text. */
function textTools(getText: () => string, filename: () => string): HTMLElement {
  const box = el('span', 'kl-tools');
  const copy = button('Copy', 'Copy this text to the clipboard', async () => {
    const ok = await copyText(getText());
    copy.textContent = ok ? 'Copied' : 'Copy failed';
    copy.classList.toggle('kl-done', ok);
    setTimeout(() => {
      copy.textContent = 'Copy';
      copy.classList.remove('kl-done');
    }, 1500);
  }, 'kl-copy');
  const save = button('Download', 'Download this text as a file', () =>
    download(filename(), getText()), 'kl-download');
  box.append(copy, save);
  return box;
}

/** Scroll `row` into the middle third of its scrolling `container`, if it is not visible. */
function reveal(container: HTMLElement, row: HTMLElement | undefined): void {
  if (!row) {
    return;
  }
  const top = row.offsetTop;
  const bottom = top + row.offsetHeight;
  if (top < container.scrollTop || bottom > container.scrollTop + container.clientHeight) {
    container.scrollTop = Math.max(0, top - container.clientHeight / 3);
  }
}

/** A scrolling block of code, one element per line, with line numbers. */
class CodeView {
  readonly node: HTMLElement;
  readonly rows: HTMLElement[] = [];
  readonly lines: string[];

  constructor(
    readonly text: string,
    readonly language: string,
    numbers: (number | null)[] | null,
    className: string
  ) {
    this.node = el('div', `kl-code ${className}`);
    this.node.setAttribute('data-language', language);
    this.lines = splitLines(text);
    this.lines.forEach((line, i) => {
      const row = el('div', 'kl-line');
      row.dataset.row = String(i);
      const n = numbers ? numbers[i] : i + 1;
      row.appendChild(el('span', 'kl-ln', n === null || n === undefined ? '' : String(n)));
      row.appendChild(el('span', 'kl-text', line));
      this.node.appendChild(row);
      this.rows.push(row);
    });
    if (this.lines.length === 0) {
      this.node.appendChild(el('div', 'kl-empty', '(empty)'));
    }
  }

  /** Replace the plain text of every line by its highlighted form. */
  async highlight(highlighting: IHighlighting | null): Promise<void> {
    if (!highlighting || this._highlighted) {
      return;
    }
    this._highlighted = true;
    const language = await highlighting.language(this.language);
    if (!language) {
      return;
    }
    const segments = segmentLines(this.text, tokenize(this.text, language, highlighting.highlighter));
    this.rows.forEach((row, i) => {
      const cell = row.querySelector('.kl-text') as HTMLElement;
      cell.textContent = '';
      renderSegments(cell, segments[i] ?? []);
    });
    this.node.classList.add('kl-highlighted');
  }

  /** The row index of an event's target line, or null. */
  rowOf(target: EventTarget | null): number | null {
    const line = (target as HTMLElement | null)?.closest?.('.kl-line') as HTMLElement | null;
    if (!line || !this.node.contains(line)) {
      return null;
    }
    const r = Number(line.dataset.row);
    return Number.isInteger(r) ? r : null;
  }

  private _highlighted = false;
}

interface IStageView {
  stage: IStage;
  view: CodeView;
  map: LineMap;
  panel: HTMLElement;
}

export class KernelViewer extends Widget implements IRenderMime.IRenderer {
  constructor(
    private _options: IRenderMime.IRendererOptions,
    private _highlighting: IHighlighting | null
  ) {
    super();
    this.addClass('kl-viewer');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[this._options.mimeType || MIME_TYPE];
    this.node.textContent = '';
    let bundle: IKernelBundle;
    try {
      bundle = parseBundle(data);
    } catch (e) {
      this.node.appendChild(el('div', 'kl-error', `Cannot show this kernel: ${(e as Error).message}`));
      return;
    }
    if (!SUPPORTED_VERSIONS.includes(bundle.version) && typeof model.data['text/html'] === 'string') {
      // A schema this renderer does not know: show the bundle's own HTML, as SCHEMA.md asks.
      await this._renderFallback(model);
      return;
    }
    this._bundle = bundle;
    this._stages.clear();
    this._panels.clear();
    this._tabs = [];
    this._pinned = null;
    this._passSelect = null;
    this._build(bundle);
    await this._select(this._tabs[0]?.dataset.tab ?? '');
  }

  private async _renderFallback(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.appendChild(
      el('div', 'kl-note', 'This kernel was saved by another kernellab version; showing its static view.')
    );
    const host = el('div', 'kl-fallback');
    this.node.appendChild(host);
    await renderHTML({
      host,
      source: model.data['text/html'] as string,
      trusted: model.trusted,
      sanitizer: this._options.sanitizer,
      resolver: this._options.resolver,
      linkHandler: this._options.linkHandler,
      latexTypesetter: null,
      shouldTypeset: false,
      translator: this._options.translator
    });
  }

  // -- layout ----------------------------------------------------------------------------

  private _build(b: IKernelBundle): void {
    this.node.appendChild(this._header(b));
    if (b.notes.length) {
      const notes = el('div', 'kl-notes');
      for (const n of b.notes) {
        notes.appendChild(el('div', 'kl-note', n));
      }
      this.node.appendChild(notes);
    }
    const sourceStage =
      b.stages.find(s => s.name === 'source') ??
      ({
        name: 'source',
        title: 'Source',
        language: 'python',
        text: b.source.text,
        lines: splitLines(b.source.text).map((_, i) => b.source.first_line + i)
      } as IStage);
    this._source = new CodeView(sourceStage.text, sourceStage.language || 'python', sourceStage.lines, 'kl-source');
    this._sourceLines = sourceStage.lines;

    const tabbar = el('div', 'kl-tabbar');
    tabbar.setAttribute('role', 'tablist');
    const body = el('div', 'kl-body');
    const addTab = (id: string, title: string, panel: HTMLElement, extra = '') => {
      const tab = el('button', `kl-tab ${extra}`.trim(), title);
      tab.type = 'button';
      tab.dataset.tab = id;
      tab.setAttribute('role', 'tab');
      tab.addEventListener('click', () => void this._select(id));
      tabbar.appendChild(tab);
      this._tabs.push(tab);
      panel.dataset.panel = id;
      panel.classList.add('kl-panel');
      panel.hidden = true;
      body.appendChild(panel);
      this._panels.set(id, panel);
    };

    // The source pane is shared by every stage tab: it moves into the selected one.
    this._sourcePane = el('div', 'kl-pane kl-pane-source');
    const sourceHead = el('div', 'kl-pane-head');
    sourceHead.appendChild(el('span', 'kl-pane-title', b.source.filename ? `Source · ${b.source.filename}` : 'Source'));
    sourceHead.appendChild(textTools(() => sourceStage.text, () => `${b.name}.py`));
    this._sourcePane.append(sourceHead, this._source.node);
    this._wireSource();

    for (const stage of b.stages) {
      if (stage.name === 'source') {
        continue;
      }
      const view = new CodeView(stage.text, stage.language, null, 'kl-ir');
      const map = new LineMap(this._sourceLines, stage.lines);
      const panel = el('div', 'kl-split');
      const pane = el('div', 'kl-pane kl-pane-ir');
      const head = el('div', 'kl-pane-head');
      head.appendChild(el('span', 'kl-pane-title', stage.title));
      head.appendChild(
        el(
          'span',
          'kl-pane-hint',
          map.hasLinks
            ? 'hover a line to see where it came from; click to pin'
            : 'this stage carries no source line information'
        )
      );
      head.appendChild(textTools(() => stage.text, () => `${b.name}.${stageFileExtension(stage.name)}`));
      pane.append(head, view.node);
      panel.appendChild(pane);
      const sv: IStageView = { stage, view, map, panel };
      this._stages.set(stage.name, sv);
      this._wireStage(sv);
      addTab(stage.name, stage.title, panel, 'kl-tab-stage');
    }
    if (!this._stages.size) {
      const panel = el('div', 'kl-split');
      addTab('source', 'Source', panel, 'kl-tab-stage');
    }
    addTab('passes', `Passes (${b.passes.length})`, this._passesPanel(b), 'kl-tab-passes');
    addTab('resources', 'Resources', this._resourcesPanel(b), 'kl-tab-resources');
    addTab('timings', 'Timings', this._timingsPanel(b), 'kl-tab-timings');
    this.node.append(tabbar, body);
  }

  private _header(b: IKernelBundle): HTMLElement {
    const head = el('div', 'kl-header');
    const md = b.metadata;
    const consts = Object.entries(md.constexprs ?? {})
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(', ');
    const sig = `${md.signature ?? ''}${consts ? `; ${consts}` : ''}`;
    head.appendChild(el('span', 'kl-name', b.name));
    head.appendChild(el('span', 'kl-signature', `(${sig})`));
    if (b.target) {
      head.appendChild(el('span', 'kl-badge kl-target', b.target));
    }
    head.appendChild(
      el('span', `kl-badge ${b.timings.cache_hit ? 'kl-cache-hit' : 'kl-cache-miss'}`,
        b.timings.cache_hit ? 'cached' : `compiled in ${formatMs(b.timings.total)}`)
    );
    const spacer = el('span', 'kl-spacer');
    head.appendChild(spacer);
    head.appendChild(
      button('JSON', 'Download this compiled kernel (all stages, passes, metadata) as JSON', () =>
        download(`${b.name}.kernellab.json`, JSON.stringify(b, null, 1), 'application/json'),
        'kl-download-json')
    );
    return head;
  }

  private async _select(id: string): Promise<void> {
    this._current = id;
    for (const tab of this._tabs) {
      const on = tab.dataset.tab === id;
      tab.classList.toggle('kl-active', on);
      tab.setAttribute('aria-selected', on ? 'true' : 'false');
    }
    for (const [key, panel] of this._panels) {
      panel.hidden = key !== id;
    }
    this._clear('kl-hover');
    this._clear('kl-linked');
    const sv = this._stages.get(id);
    const panel = this._panels.get(id);
    if (panel && (sv || id === 'source')) {
      panel.insertBefore(this._sourcePane, panel.firstChild);
      this._markLinkedSourceRows(sv ?? null);
      this._restoreSelection();
      await Promise.all([this._source.highlight(this._highlighting), sv?.view.highlight(this._highlighting)]);
    }
    if (id === 'passes' && this._passSelect) {
      await this._passSelect();
    }
  }

  // -- line linking --------------------------------------------------------------------

  private _markLinkedSourceRows(sv: IStageView | null): void {
    const linked = new Set(sv ? sv.map.linkedSourceRows() : []);
    this._source.rows.forEach((row, i) => row.classList.toggle('kl-has-links', linked.has(i)));
  }

  private _clear(cls: string): void {
    for (const node of Array.from(this.node.querySelectorAll(`.${cls}`))) {
      node.classList.remove(cls);
    }
  }

  private _wireSource(): void {
    const view = this._source;
    view.node.addEventListener('mouseover', e => {
      const row = view.rowOf(e.target);
      const sv = this._stages.get(this._current);
      if (row === null || !sv) {
        return;
      }
      this._clear('kl-hover');
      this._clear('kl-linked');
      view.rows[row].classList.add('kl-hover');
      const irRows = sv.map.stageRowsFor(row);
      for (const r of irRows) {
        sv.view.rows[r].classList.add('kl-linked');
      }
      reveal(sv.view.node, sv.view.rows[irRows[0]]);
    });
    view.node.addEventListener('mouseleave', () => {
      this._clear('kl-hover');
      this._clear('kl-linked');
    });
    view.node.addEventListener('click', e => {
      const row = view.rowOf(e.target);
      if (row !== null) {
        this._pin(row === this._pinned ? null : row);
      }
    });
  }

  private _wireStage(sv: IStageView): void {
    const view = sv.view;
    view.node.addEventListener('mouseover', e => {
      const row = view.rowOf(e.target);
      if (row === null) {
        return;
      }
      this._clear('kl-hover');
      this._clear('kl-linked');
      view.rows[row].classList.add('kl-hover');
      for (const r of sv.map.siblingsOf(row)) {
        view.rows[r].classList.add('kl-linked');
      }
      const src = sv.map.sourceRowFor(row);
      if (src !== null) {
        this._source.rows[src].classList.add('kl-linked');
        reveal(this._source.node, this._source.rows[src]);
      }
    });
    view.node.addEventListener('mouseleave', () => {
      this._clear('kl-hover');
      this._clear('kl-linked');
    });
    view.node.addEventListener('click', e => {
      const row = view.rowOf(e.target);
      if (row === null) {
        return;
      }
      const src = sv.map.sourceRowFor(row);
      this._pin(src === this._pinned ? null : src);
      if (src !== null) {
        reveal(this._source.node, this._source.rows[src]);
      }
    });
  }

  /** Pin (or unpin, with null) a source row: it and its lines in every stage stay lit. */
  private _pin(sourceRow: number | null): void {
    this._pinned = sourceRow;
    this._restoreSelection();
  }

  private _restoreSelection(): void {
    this._clear('kl-selected');
    const row = this._pinned;
    if (row === null) {
      return;
    }
    this._source.rows[row]?.classList.add('kl-selected');
    const sv = this._stages.get(this._current);
    if (sv) {
      const irRows = sv.map.stageRowsFor(row);
      for (const r of irRows) {
        sv.view.rows[r].classList.add('kl-selected');
      }
      reveal(sv.view.node, sv.view.rows[irRows[0]]);
    }
  }

  // -- passes --------------------------------------------------------------------------

  private _passesPanel(b: IKernelBundle): HTMLElement {
    const panel = el('div', 'kl-passes');
    if (!b.passes.length) {
      panel.appendChild(el('div', 'kl-empty', 'No passes were recorded for this kernel.'));
      return panel;
    }
    const side = el('div', 'kl-pass-side');
    const filter = el('label', 'kl-pass-filter');
    const onlyChanged = el('input');
    onlyChanged.type = 'checkbox';
    filter.append(onlyChanged, document.createTextNode(' only passes that changed the IR'));
    const list = el('ol', 'kl-pass-list');
    const detail = el('div', 'kl-pass-detail');
    side.append(filter, list);
    panel.append(side, detail);

    const items: HTMLElement[] = [];
    let selected = b.passes.findIndex(p => p.changed);
    if (selected < 0) {
      selected = 0;
    }
    const show = async (i: number) => {
      selected = i;
      items.forEach((item, j) => item.classList.toggle('kl-active', j === i));
      await this._showPass(detail, b, i);
    };
    b.passes.forEach((p, i) => {
      const item = el('li', `kl-pass ${p.changed ? 'kl-changed' : 'kl-unchanged'}`);
      item.dataset.index = String(i);
      item.tabIndex = 0;
      item.appendChild(el('span', 'kl-pass-mark', p.changed ? '●' : '○'));
      item.appendChild(el('span', 'kl-pass-name', p.name));
      item.appendChild(el('span', 'kl-pass-stage', p.stage));
      item.appendChild(el('span', 'kl-pass-time', formatMs(p.seconds)));
      if (p.summary) {
        item.title = p.summary;
      }
      item.addEventListener('click', () => void show(i));
      item.addEventListener('keydown', e => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          void show(i);
        }
      });
      items.push(item);
      list.appendChild(item);
    });
    onlyChanged.addEventListener('change', () => {
      items.forEach((item, i) => {
        item.hidden = onlyChanged.checked && !b.passes[i].changed;
      });
    });
    this._passSelect = () => show(selected);
    return panel;
  }

  private async _showPass(detail: HTMLElement, b: IKernelBundle, i: number): Promise<void> {
    const p = b.passes[i];
    const prev: IPassRecord | undefined = b.passes[i - 1];
    detail.textContent = '';
    const head = el('div', 'kl-pane-head');
    head.appendChild(el('span', 'kl-pane-title', prev ? `${prev.name} → ${p.name}` : p.name));
    const after = splitLines(p.ir);
    const language = passLanguage(p.ir, p.stage);
    if (!prev) {
      head.appendChild(el('span', 'kl-pane-hint', 'first pass: the IR before it is not recorded'));
      head.appendChild(textTools(() => p.ir, () => `${b.name}.${i}-${p.name}.${stageFileExtension(p.stage)}`));
      detail.appendChild(head);
      const view = new CodeView(p.ir, language, null, 'kl-ir kl-pass-ir');
      detail.appendChild(view.node);
      await view.highlight(this._highlighting);
      return;
    }
    const before = splitLines(prev.ir);
    const ops = diffLines(before, after);
    const stats = diffStats(ops);
    head.appendChild(
      el('span', 'kl-pane-hint kl-diff-stats',
        stats.added || stats.removed ? `+${stats.added} −${stats.removed}` : 'no change')
    );
    if (p.summary) {
      head.appendChild(el('span', 'kl-pane-hint', p.summary));
    }
    head.appendChild(textTools(() => p.ir, () => `${b.name}.${i}-${p.name}.${stageFileExtension(p.stage)}`));
    detail.appendChild(head);

    const [hlBefore, hlAfter] = await Promise.all([
      this._segments(prev.ir, passLanguage(prev.ir, prev.stage)),
      this._segments(p.ir, language)
    ]);
    const table = el('table', 'kl-diff');
    const cols = el('colgroup');
    for (const cls of ['kl-col-ln', 'kl-col-code', 'kl-col-ln', 'kl-col-code']) {
      cols.appendChild(el('col', cls));
    }
    const thead = el('thead');
    const hr = el('tr');
    const th1 = el('th', '', `before (after ${prev.name})`);
    th1.colSpan = 2;
    const th2 = el('th', '', `after ${p.name}`);
    th2.colSpan = 2;
    hr.append(th1, th2);
    thead.appendChild(hr);
    const tbody = el('tbody');
    table.append(cols, thead, tbody);

    const rowOf = (r: ISideBySideRow): HTMLTableRowElement => {
      const tr = el('tr', `kl-diff-row kl-diff-${r.kind}`);
      const side = (s: typeof r.left, segs: [string, string][][] | null, cls: string) => {
        const ln = el('td', `kl-ln ${cls}`, s ? String(s.index + 1) : '');
        const code = el('td', `kl-diff-code ${cls}`);
        if (s) {
          if (segs && segs[s.index]) {
            renderSegments(code, segs[s.index]);
          } else {
            code.textContent = s.text;
          }
        } else {
          code.classList.add('kl-diff-blank');
        }
        tr.append(ln, code);
      };
      side(r.left, hlBefore, 'kl-left');
      side(r.right, hlAfter, 'kl-right');
      return tr;
    };
    for (const hunk of foldUnchanged(sideBySide(before, after, ops))) {
      if (hunk.kind === 'rows') {
        for (const r of hunk.rows) {
          tbody.appendChild(rowOf(r));
        }
      } else {
        const tr = el('tr', 'kl-diff-fold');
        const td = el('td');
        td.colSpan = 4;
        const open = button(`⋯ ${hunk.rows.length} unchanged lines`, 'Show these lines', () => {
          const frag = document.createDocumentFragment();
          for (const r of hunk.rows) {
            frag.appendChild(rowOf(r));
          }
          tr.replaceWith(frag);
        }, 'kl-unfold');
        td.appendChild(open);
        tr.appendChild(td);
        tbody.appendChild(tr);
      }
    }
    const scroller = el('div', 'kl-diff-scroll');
    scroller.appendChild(table);
    detail.appendChild(scroller);
  }

  private async _segments(text: string, language: string): Promise<[string, string][][] | null> {
    if (!this._highlighting) {
      return null;
    }
    const lang = await this._highlighting.language(language);
    return lang ? segmentLines(text, tokenize(text, lang, this._highlighting.highlighter)) : null;
  }

  // -- resources and timings -----------------------------------------------------------

  private _resourcesPanel(b: IKernelBundle): HTMLElement {
    const panel = el('div', 'kl-resources');
    const md = b.metadata;
    const table = el('table', 'kl-table');
    const add = (label: string, value: string, hint = '') => {
      const tr = el('tr');
      tr.appendChild(el('th', '', label));
      tr.appendChild(el('td', '', value));
      tr.appendChild(el('td', 'kl-hint', hint));
      table.appendChild(tr);
    };
    const known = (v: unknown) => typeof v === 'number' && isFinite(v);
    const gpu = b.target !== 'interpreter';
    const missing = gpu ? 'not reported' : 'n/a (interpreter)';
    add('target', b.target || '?');
    add('registers / thread', known(md.registers) ? String(md.registers) : missing,
      known(md.registers) ? '' : 'known once the kernel is linked to a cubin');
    add('spills', known(md.spills) ? formatBytes(md.spills as number) : missing);
    add('shared memory / block', known(md.shared) ? formatBytes(md.shared as number) : missing);
    add('threads / block', known(md.threads_per_block) ? String(md.threads_per_block) : '?',
      known(md.num_warps) ? `${md.num_warps} warps` : '');
    add('num_stages', known(md.num_stages) ? String(md.num_stages) : '?');
    add('num_ctas', known(md.num_ctas) ? String(md.num_ctas) : '?');
    panel.appendChild(table);

    const occ = md.occupancy;
    if (occ && typeof occ === 'object' && known(occ.occupancy)) {
      const box = el('div', 'kl-occupancy');
      const pct = Math.round((occ.occupancy as number) * 100);
      box.appendChild(el('div', 'kl-subtitle',
        `Occupancy ≈ ${pct}% on ${occ.device ?? b.target}` +
        (occ.registers_known === false ? ' (upper bound: registers not known yet)' : '')));
      const bar = el('div', 'kl-bar');
      const fill = el('div', 'kl-bar-fill');
      fill.style.width = `${Math.max(0, Math.min(100, pct))}%`;
      bar.appendChild(fill);
      box.appendChild(bar);
      box.appendChild(el('div', 'kl-hint',
        `${occ.blocks_per_sm ?? '?'} blocks/SM, ${occ.warps_per_sm ?? '?'} of ${occ.max_warps_per_sm ?? '?'} warps; ` +
        `limited by ${occ.limited_by ?? '?'}`));
      if (occ.limits && typeof occ.limits === 'object') {
        const lt = el('table', 'kl-table kl-limits');
        const hr = el('tr');
        hr.append(el('th', '', 'limit'), el('th', '', 'blocks / SM'));
        lt.appendChild(hr);
        for (const [k, v] of Object.entries(occ.limits)) {
          const tr = el('tr', k === occ.limited_by ? 'kl-limiting' : '');
          tr.append(el('td', '', k), el('td', '', String(v)));
          lt.appendChild(tr);
        }
        box.appendChild(lt);
      }
      panel.appendChild(box);
    } else if (!gpu) {
      panel.appendChild(el('div', 'kl-hint',
        'Compiled for the interpreter: registers, shared memory and occupancy come with a GPU target (sm_80 / sm_90).'));
    }
    return panel;
  }

  private _timingsPanel(b: IKernelBundle): HTMLElement {
    const panel = el('div', 'kl-timings');
    const entries = Object.entries(b.timings.stages);
    const max = Math.max(1e-12, ...entries.map(([, v]) => v));
    const table = el('table', 'kl-table');
    const hr = el('tr');
    hr.append(el('th', '', 'stage'), el('th', '', 'time'), el('th', ''));
    table.appendChild(hr);
    for (const [stage, seconds] of entries) {
      const tr = el('tr');
      tr.append(el('td', '', stage), el('td', 'kl-num', formatMs(seconds)));
      const td = el('td', 'kl-bar-cell');
      const bar = el('div', 'kl-bar-fill');
      bar.style.width = `${(100 * seconds) / max}%`;
      td.appendChild(bar);
      tr.appendChild(td);
      table.appendChild(tr);
    }
    const total = el('tr', 'kl-total');
    total.append(el('td', '', 'total'), el('td', 'kl-num', formatMs(b.timings.total)), el('td', ''));
    table.appendChild(total);
    panel.appendChild(table);
    const passTime = b.passes.reduce((s, p) => s + p.seconds, 0);
    panel.appendChild(el('div', 'kl-hint',
      `${b.timings.cache_hit ? 'Cache hit: loaded from the kernel cache.' : 'Cache miss: compiled now.'} ` +
      `${b.passes.length} passes took ${formatMs(passTime)} in all.`));
    return panel;
  }

  private _bundle: IKernelBundle | null = null;
  private _source!: CodeView;
  private _sourceLines: (number | null)[] = [];
  private _sourcePane!: HTMLElement;
  private _stages = new Map<string, IStageView>();
  private _tabs: HTMLButtonElement[] = [];
  private _panels = new Map<string, HTMLElement>();
  private _current = '';
  private _pinned: number | null = null;
  private _passSelect: (() => Promise<void>) | null = null;

  /** The bundle being shown (for tests and commands). */
  get bundle(): IKernelBundle | null {
    return this._bundle;
  }
}
