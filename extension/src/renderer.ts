/**
 * The compiled-kernel viewer: a JupyterLab mime renderer for the kernellab bundle.
 *
 * It shows the panels kernellab renders into the bundle's text/html (kernellab/lab/viewer), so
 * the extension and the static HTML cannot drift apart: the markup is sanitized (markup.ts),
 * given the same behaviour script the static page inlines (tabs, line links, diff folds,
 * copy/download), highlighted with CodeMirror when a panel is shown, and given a button that
 * downloads the bundle's JSON. A bundle of a schema or markup version this extension does not
 * know shows its text/html as JupyterLab shows any HTML.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { renderHTML } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { attachViewer, download } from '../../kernellab/lab/viewer/behaviour.js';
import { MIME_TYPE, SUPPORTED_VERSIONS, readBundle, type IBundleHead } from './bundle';
import { highlightCode, type IHighlighting } from './highlight';
import { viewerRoot } from './markup';

function message(className: string, text: string): HTMLElement {
  const node = document.createElement('div');
  node.className = className;
  node.textContent = text;
  return node;
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
    const html = model.data['text/html'];
    this.node.textContent = '';
    this.node.removeAttribute('data-kl-ready');
    let head: IBundleHead;
    try {
      head = readBundle(data);
    } catch (e) {
      this.node.appendChild(message('kl-error', `Cannot show this kernel: ${(e as Error).message}`));
      return;
    }
    if (typeof html !== 'string') {
      this.node.appendChild(message('kl-error', 'Cannot show this kernel: the output has no text/html panels.'));
      return;
    }
    const root = SUPPORTED_VERSIONS.includes(head.version) ? viewerRoot(html, this._options.sanitizer) : null;
    if (!root) {
      await this._renderFallback(model, html);
      return;
    }
    this.node.append(...Array.from(root.childNodes));
    this._addJsonButton(head, data);
    attachViewer(this.node, { onShow: element => void highlightCode(element, this._highlighting) });
  }

  /** A header button that downloads the whole bundle (all stages, passes, metadata). */
  private _addJsonButton(head: IBundleHead, data: unknown): void {
    const header = this.node.querySelector('.kl-header');
    if (!header) {
      return;
    }
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'kl-button kl-download-json';
    button.textContent = 'JSON';
    button.title = 'Download this compiled kernel (all stages, passes, metadata) as JSON';
    button.addEventListener('click', () =>
      download(`${head.name}.kernellab.json`, JSON.stringify(data, null, 1), 'application/json')
    );
    header.appendChild(button);
  }

  private async _renderFallback(model: IRenderMime.IMimeModel, html: string): Promise<void> {
    this.node.appendChild(
      message('kl-note', 'This kernel was saved by another kernellab version; showing its static view.')
    );
    const host = message('kl-fallback', '');
    this.node.appendChild(host);
    await renderHTML({
      host,
      source: html,
      trusted: model.trusted,
      sanitizer: this._options.sanitizer,
      resolver: this._options.resolver,
      linkHandler: this._options.linkHandler,
      latexTypesetter: null,
      shouldTypeset: false,
      translator: this._options.translator
    });
  }
}
