/**
 * Static snapshots for kernellab's explorers where the live widget cannot be shown.
 *
 * An explorer's output carries the live widget (application/vnd.jupyter.widget-view+json) and
 * a text/html snapshot of its picture. JupyterLab prefers the widget, so a saved notebook
 * reopened with a new kernel (whose widget models are gone) shows "Error displaying widget:
 * model not found", and one without a kernel stays at "Loading widget...". This plugin watches
 * the outputs of every notebook: while a kernellab explorer's widget renderer holds no live
 * view, it shows the snapshot's picture and caption instead; when the live view arrives, the
 * widget renderer replaces the snapshot itself.
 *
 * The snapshot is rebuilt from its parts (the PNG data URI, the title and the caption as text),
 * never inserted as HTML, so an untrusted notebook cannot inject markup through it.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Widget } from '@lumino/widgets';

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const SNAPSHOT_CLASS = 'kernellab-snapshot';
const WATCHED = 'klSnapshotWatched';
const PNG_PREFIX = 'data:image/png;base64,';

/** The parts of an explorer's text/html snapshot, or null when the HTML is not one. */
export interface ISnapshotParts {
  title: string;
  png: string;
  caption: string;
}

export function snapshotParts(html: string): ISnapshotParts | null {
  if (!html.includes(SNAPSHOT_CLASS)) {
    return null;
  }
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const root = doc.querySelector(`.${SNAPSHOT_CLASS}`);
  const img = root?.querySelector('img');
  const src = img?.getAttribute('src') ?? '';
  if (!root || !src.startsWith(PNG_PREFIX)) {
    return null;
  }
  const divs = Array.from(root.querySelectorAll(':scope > div'));
  const title = divs.length > 1 ? (divs[0].textContent ?? '') : '';
  const caption = divs.length ? (divs[divs.length - 1].textContent ?? '') : '';
  return { title, png: src, caption };
}

/** The snapshot as DOM, built from its parts. */
export function snapshotElement(parts: ISnapshotParts): HTMLElement {
  const box = document.createElement('div');
  box.className = 'kl-widget-snapshot';
  const note = document.createElement('div');
  note.className = 'kl-widget-snapshot-note';
  note.textContent =
    `${parts.title ? parts.title + ': ' : ''}static snapshot saved with the notebook ` +
    '(run the cell to get the live controls)';
  const img = document.createElement('img');
  img.className = 'kl-explorer-image';
  img.src = parts.png;
  img.alt = parts.title || 'kernellab explorer';
  const caption = document.createElement('div');
  caption.className = 'kl-widget-snapshot-caption';
  caption.textContent = parts.caption;
  box.append(note, img, caption);
  return box;
}

/** Whether a widget renderer's node holds a live view (anything but text and our snapshot). */
function isLive(node: HTMLElement): boolean {
  return Array.from(node.children).some(child => !child.classList.contains('kl-widget-snapshot'));
}

/** Show the snapshot in `node` whenever the widget renderer in it has no live view. */
export function watchRenderer(node: HTMLElement, parts: ISnapshotParts): void {
  if (node.dataset[WATCHED]) {
    return;
  }
  node.dataset[WATCHED] = '1';
  const update = () => {
    if (isLive(node) || node.querySelector(':scope > .kl-widget-snapshot')) {
      return;
    }
    observer.disconnect();
    node.textContent = '';
    node.appendChild(snapshotElement(parts));
    observer.observe(node, { childList: true, characterData: true, subtree: false });
  };
  const observer = new MutationObserver(update);
  observer.observe(node, { childList: true, characterData: true, subtree: false });
  update();
}

interface IOutputModelLike {
  data: Record<string, unknown>;
}
interface IOutputAreaLike {
  widgets: readonly Widget[];
  model: { length: number; get(index: number): IOutputModelLike; changed: { connect(fn: () => void): void } };
}

/** Every explorer output of a notebook panel gets its snapshot watcher. */
function scanPanel(panel: Widget): void {
  const cells = (panel as unknown as { content?: { widgets?: readonly Widget[] } }).content?.widgets ?? [];
  for (const cell of cells) {
    const area = (cell as unknown as { outputArea?: IOutputAreaLike }).outputArea;
    if (!area) {
      continue;
    }
    const connected = area as unknown as { [WATCHED]?: boolean };
    if (!connected[WATCHED]) {
      connected[WATCHED] = true;
      area.model.changed.connect(() => requestAnimationFrame(() => scanPanel(panel)));
    }
    area.widgets.forEach((child, i) => {
      if (i >= area.model.length) {
        return;
      }
      const node = child.node.querySelector<HTMLElement>('.jp-OutputArea-output');
      const data = area.model.get(i).data;
      const html = data['text/html'];
      if (!node || node.dataset[WATCHED] || !(WIDGET_MIME in data) || typeof html !== 'string') {
        return;
      }
      const parts = snapshotParts(html);
      if (parts) {
        watchRenderer(node, parts);
      }
    });
  }
}

/** Watch every notebook the shell shows, now and as they open or change. */
export function watchNotebooks(app: JupyterFrontEnd): void {
  const seen = new WeakSet<Widget>();
  const scanAll = () => {
    for (const widget of app.shell.widgets('main')) {
      const content = (widget as unknown as { content?: { modelContentChanged?: { connect(fn: () => void): void } } })
        .content;
      if (!content?.modelContentChanged) {
        continue;
      }
      if (!seen.has(widget)) {
        seen.add(widget);
        content.modelContentChanged.connect(() => requestAnimationFrame(() => scanPanel(widget)));
      }
      scanPanel(widget);
    }
  };
  const shell = app.shell as unknown as { layoutModified?: { connect(fn: () => void): void } };
  shell.layoutModified?.connect(() => requestAnimationFrame(scanAll));
  app.restored.then(scanAll).catch(() => undefined);
}
