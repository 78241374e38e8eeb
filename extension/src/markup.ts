/**
 * The viewer's markup, which kernellab/lab/viewer renders into the bundle's text/html, made safe
 * to display in any notebook, trusted or not: JupyterLab's sanitizer keeps only the elements and
 * attributes the viewer uses. Scripts go (the extension runs the same behaviour script itself)
 * and so do inline styles (the extension's stylesheet styles the `kl-` classes in the theme's
 * colours).
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

/** `data-kl-viewer` values (markup versions) whose behaviour this extension knows. */
export const MARKUP_VERSIONS = ['1'];

export const SANITIZE_OPTIONS: IRenderMime.ISanitizerOptions = {
  allowedTags: [
    'b', 'col', 'colgroup', 'details', 'div', 'pre', 'section', 'span', 'summary', 'table',
    'tbody', 'td', 'th', 'thead', 'tr'
  ],
  allowedAttributes: {
    '*': ['class', 'title', 'data-*'],
    details: ['open'],
    td: ['colspan'],
    th: ['colspan']
  }
};

/**
 * The viewer's root element in `html` after sanitizing (detached: move its children where they
 * belong), or null when `html` holds no viewer markup of a version this extension knows.
 */
export function viewerRoot(html: string, sanitizer: IRenderMime.ISanitizer): HTMLElement | null {
  const template = document.createElement('template');
  template.innerHTML = sanitizer.sanitize(html, SANITIZE_OPTIONS);
  const root = template.content.querySelector<HTMLElement>('[data-kl-viewer]');
  return root && MARKUP_VERSIONS.includes(root.getAttribute('data-kl-viewer') ?? '') ? root : null;
}
