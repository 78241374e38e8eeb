/** Types of behaviour.js for the JupyterLab extension, which imports it (see behaviour.js). */

export interface IViewerOptions {
  /** class → inline CSS, for pages without the extension's stylesheet */
  styles?: { [className: string]: string } | null;
  /** called when a panel or a pass becomes visible */
  onShow?: (element: HTMLElement) => void;
}

/** Tabs, line links, diff folds, the pass filter, copy and download, on the viewer's markup. */
export function attachViewer(root: HTMLElement, options?: IViewerOptions): void;

/** Save `text` as a file named `filename` through the browser's download. */
export function download(filename: string, text: string, type?: string): void;
