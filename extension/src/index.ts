/**
 * kernellab's JupyterLab extension: three plugins.
 *
 *  - languages: MLIR (TTIR/TTGIR), LLVM IR, PTX and SASS in JupyterLab's language registry
 *    (editors, files, Markdown fences ```mlir / ```llvm / ```ptx / ```sass);
 *  - viewer: the renderer of `application/vnd.kernellab.compile+json` at rank 0, so it wins
 *    over the bundle's own text/html fallback wherever this extension is installed;
 *  - kernel-magic: `%%kernel` cells get their magic line styled apart from the Python body;
 *  - widget-snapshots: an explorer whose live widget can't be shown (a saved notebook reopened
 *    with a new kernel, or without one) shows its saved static snapshot instead; saving a
 *    notebook writes each explorer's current snapshot (its widget model's `_kl_snapshot`) into
 *    the saved output, without re-rendering the live view.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import {
  EditorExtensionRegistry,
  EditorLanguageRegistry,
  IEditorExtensionRegistry,
  IEditorLanguageRegistry,
  jupyterHighlightStyle
} from '@jupyterlab/codemirror';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { StyleModule } from 'style-mod';

import { MIME_TYPE } from './bundle';
import { kernelMagicExtension } from './kernelcell';
import { LANGUAGES } from './languages';
import { type IHighlighting } from './highlight';
import { KernelViewer } from './renderer';
import { watchNotebooks } from './snapshots';

export { MIME_TYPE } from './bundle';

const languagesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'kernellab:languages',
  description: 'MLIR (TTIR/TTGIR), LLVM IR, PTX and SASS highlighting.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (_app: JupyterFrontEnd, languages: IEditorLanguageRegistry) => {
    for (const spec of LANGUAGES) {
      try {
        languages.addLanguage({
          name: spec.name,
          displayName: spec.displayName,
          alias: spec.alias,
          mime: spec.mime,
          extensions: spec.extensions,
          load: async () => EditorLanguageRegistry.legacy(spec.parser())
        });
      } catch (e) {
        // Another extension registered this name or mime first: keep theirs.
        console.warn(`kernellab: language ${spec.name} not registered: ${(e as Error).message}`);
      }
    }
  }
};

/** Renderer factory for the bundle; `highlighting` is null where no registry is available. */
export function rendererFactory(highlighting: IHighlighting | null): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: 0,
    createRenderer: options => new KernelViewer(options, highlighting)
  };
}

const viewerPlugin: JupyterFrontEndPlugin<void> = {
  id: 'kernellab:viewer',
  description: 'Renders compiled kernels: stages, line links, pass diffs, resources, timings.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [IEditorLanguageRegistry],
  activate: (
    _app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    languages: IEditorLanguageRegistry | null
  ) => {
    let highlighting: IHighlighting | null = null;
    if (languages) {
      if (jupyterHighlightStyle.module) {
        StyleModule.mount(document, jupyterHighlightStyle.module);
      }
      highlighting = {
        highlighter: jupyterHighlightStyle,
        language: async name => {
          const spec = name === 'text' ? null : languages.findBest(name, false);
          if (!spec) {
            return null;
          }
          const loaded = await languages.getLanguage(spec);
          return loaded?.support?.language ?? null;
        }
      };
    }
    rendermime.addFactory(rendererFactory(highlighting), 0);
  }
};

const kernelMagicPlugin: JupyterFrontEndPlugin<void> = {
  id: 'kernellab:kernel-magic',
  description: 'Styles the %%kernel magic line of notebook cells.',
  autoStart: true,
  requires: [IEditorExtensionRegistry],
  activate: (_app: JupyterFrontEnd, extensions: IEditorExtensionRegistry) => {
    extensions.addExtension({
      name: 'kernellab:kernel-magic',
      factory: options =>
        options.inline
          ? EditorExtensionRegistry.createImmutableExtension(kernelMagicExtension())
          : null
    });
  }
};

const widgetSnapshotsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'kernellab:widget-snapshots',
  description: "Saves an explorer's current snapshot and shows it where its live widget is gone.",
  autoStart: true,
  activate: (app: JupyterFrontEnd) => watchNotebooks(app)
};

export default [languagesPlugin, viewerPlugin, kernelMagicPlugin, widgetSnapshotsPlugin];
