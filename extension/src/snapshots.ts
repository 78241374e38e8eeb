/**
 * Static snapshots for kernellab's explorers where the live widget cannot be shown, and kept
 * up to date in the saved file.
 *
 * An explorer's output carries the live widget (application/vnd.jupyter.widget-view+json) and
 * a text/html snapshot of its picture. JupyterLab prefers the widget, so a saved notebook
 * reopened with a new kernel (whose widget models are gone) shows "Error displaying widget:
 * model not found", and one without a kernel stays at "Loading widget...". This plugin watches
 * the outputs of every notebook: while a kernellab explorer's widget renderer holds no live
 * view, it shows the snapshot's picture and caption instead; when the live view arrives, the
 * widget renderer replaces the snapshot itself.
 *
 * The text/html in the output is the snapshot taken when the cell ran. The explorer's root
 * widget model keeps the current one in its `_kl_snapshot` trait (the kernel refreshes it once
 * the controls rest). When a notebook starts saving, the trait's value is written into the
 * output's text/html in the notebook's shared model, with the 'silent-change' origin: the cell
 * model is not told, so the output area does not re-render and the live view (its focus, a drag
 * in progress) is left alone, while the saved file gets the last state the user saw.
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
/** The explorer root widget's synced trait holding its current snapshot HTML. */
export const SNAPSHOT_TRAIT = '_kl_snapshot';

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

/** What this module uses of a widget model (a Backbone model of @jupyter-widgets/base). */
export interface IWidgetModelLike {
  get(name: string): unknown;
}

/** The widget models of the explorers on screen, by model id: read when a notebook saves. */
const explorerModels = new Map<string, IWidgetModelLike>();

/** An explorer's current snapshot HTML from its model, or null when it has none. */
function modelSnapshot(model: IWidgetModelLike | undefined): string | null {
  const html = model?.get(SNAPSHOT_TRAIT);
  return typeof html === 'string' && html.includes(SNAPSHOT_CLASS) ? html : null;
}

function modelId(data: Record<string, unknown>): string | null {
  const view = data[WIDGET_MIME] as { model_id?: unknown } | undefined;
  return typeof view?.model_id === 'string' && view.model_id ? view.model_id : null;
}

interface IWidgetRendererLike {
  mimeType?: string;
  _manager?: { promise: Promise<{ get_model(id: string): Promise<IWidgetModelLike> }> };
}

/** Remember the widget model behind an explorer output once its renderer has a manager
 * (ipywidgets' WidgetRenderer: a Panel with `mimeType` and a `_manager` PromiseDelegate). */
function trackModel(child: Widget, id: string): void {
  if (explorerModels.has(id)) {
    return;
  }
  const widgets = (child as unknown as { widgets?: readonly Widget[] }).widgets ?? [];
  const renderer = widgets.find(w => (w as IWidgetRendererLike).mimeType === WIDGET_MIME) as
    | IWidgetRendererLike
    | undefined;
  renderer?._manager?.promise
    .then(manager => manager.get_model(id))
    .then(model => {
      if (model && model.get(SNAPSHOT_TRAIT) !== undefined) {
        explorerModels.set(id, model);
        // closed (the cell cleared or re-run, the kernel restarted): forget it
        (model as { once?(event: string, fn: () => void): void }).once?.('destroy', () =>
          explorerModels.delete(id)
        );
      }
    })
    .catch(() => undefined); // no such model (a new kernel): the saved snapshot stays
}

/** What this module uses of a code cell's shared model (@jupyter/ydoc's YCodeCell). */
export interface ISharedCodeCellLike {
  getOutputs(): Array<Record<string, unknown>>;
  updateOutputs(start: number, end: number, outputs: Array<Record<string, unknown>>, origin?: unknown): void;
}

/**
 * Write each explorer's current snapshot (`models`, by widget model id) into its output's
 * text/html in the cells' shared models, silently: the notebook's JSON (what a save writes)
 * changes, the output areas are not told, so no live view re-renders. Returns how many
 * outputs changed.
 */
export function writeSnapshots(
  cells: Iterable<{ type: string; sharedModel: unknown }>,
  models: ReadonlyMap<string, IWidgetModelLike>
): number {
  let written = 0;
  for (const cell of cells) {
    if (cell.type !== 'code') {
      continue;
    }
    const shared = cell.sharedModel as ISharedCodeCellLike;
    const outputs = shared.getOutputs?.() ?? [];
    outputs.forEach((output, index) => {
      const data = output.data as Record<string, unknown> | undefined;
      const id = data ? modelId(data) : null;
      const html = id ? modelSnapshot(models.get(id)) : null;
      if (!data || html === null || data['text/html'] === html) {
        return;
      }
      const updated = { ...output, data: { ...data, 'text/html': html } };
      shared.updateOutputs(index, index + 1, [updated], 'silent-change');
      written++;
    });
  }
  return written;
}

/** The cells of a notebook model (a CellList: length and get). */
function cellsOf(panel: Widget): Array<{ type: string; sharedModel: unknown }> {
  const cells = (panel as unknown as {
    content?: { model?: { cells?: { length: number; get(i: number): { type: string; sharedModel: unknown } } } };
  }).content?.model?.cells;
  const list = [];
  for (let i = 0; cells && i < cells.length; i++) {
    list.push(cells.get(i));
  }
  return list;
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
      const id = modelId(data);
      if (!node || !id || typeof html !== 'string') {
        return;
      }
      const parts = snapshotParts(html);
      if (!parts) {
        return;
      }
      trackModel(child, id);
      watchRenderer(node, parts); // the saved (latest) snapshot where the model is gone
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
        // 'started' is emitted just before the context serializes the model: synchronously
        // here, the saved JSON gets each explorer's current snapshot
        const context = (widget as unknown as {
          context?: { saveState?: { connect(fn: (sender: unknown, state: string) => void): void } };
        }).context;
        context?.saveState?.connect((_sender, state) => {
          if (state === 'started') {
            try {
              writeSnapshots(cellsOf(widget), explorerModels);
            } catch (err) {
              console.warn('kernellab: explorer snapshots not written', err);
            }
          }
        });
      }
      scanPanel(widget);
    }
  };
  const shell = app.shell as unknown as { layoutModified?: { connect(fn: () => void): void } };
  shell.layoutModified?.connect(() => requestAnimationFrame(scanAll));
  app.restored.then(scanAll).catch(() => undefined);
}
