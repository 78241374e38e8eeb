/**
 * The compiled-kernel viewer's behaviour, for the markup that kernellab/lab/viewer renders.
 *
 * One script for both places the viewer appears: the static text/html inlines it (a classic
 * script there: kernellab/lab/viewer/page.py drops the `export`), and the JupyterLab extension
 * imports it and calls attachViewer on the same markup. It adds what markup alone cannot do:
 *
 *   tabs         one per [data-kl-panel] section (the source pane moves beside the selected stage)
 *   line links   hover a line: its source line and every line made from it light up; click pins
 *   diff folds   long unchanged stretches of a pass diff fold behind a "⋯ N unchanged lines" button
 *   passes       a filter for the passes that changed the IR; the pass opened last is kl-current
 *   copy/download  for every pane whose head carries data-kl-filename
 *
 * `options.styles` (class → inline CSS) is for pages without the extension's stylesheet: the
 * elements and states added here get those styles inline. `options.onShow(element)` is called
 * when a panel or a pass becomes visible (the extension highlights its code then).
 */
export function attachViewer(root, options) {
  const styles = (options && options.styles) || null;
  const onShow = (options && options.onShow) || function () {};
  if (!root || root.getAttribute('data-kl-ready')) {
    return;
  }
  root.setAttribute('data-kl-ready', '1');
  const all = (node, selector) => Array.prototype.slice.call(node.querySelectorAll(selector));

  // -- classes, and their inline styles where there is no stylesheet ----------------------------
  const baseStyle = new WeakMap();
  function restyle(node) {
    if (!styles) {
      return;
    }
    if (!baseStyle.has(node)) {
      baseStyle.set(node, node.getAttribute('style') || '');
    }
    const states = ['kl-active', 'kl-done', 'kl-linked', 'kl-hover', 'kl-selected'];
    const extra = states.filter(c => node.classList.contains(c)).map(c => styles[c] || '');
    node.setAttribute('style', [baseStyle.get(node)].concat(extra).join(';'));
  }
  function mark(node, cls, on) {
    if (node.classList.contains(cls) !== on) {
      node.classList.toggle(cls, on);
      restyle(node);
    }
  }
  function make(tag, classes, text) {
    const node = document.createElement(tag);
    node.className = classes;
    if (text !== undefined) {
      node.textContent = text;
    }
    if (styles) {
      node.setAttribute('style', classes.split(' ').map(c => styles[c] || '').join(';'));
    }
    return node;
  }
  function clear(cls) {
    all(root, '.' + cls).forEach(node => mark(node, cls, false));
  }

  // -- bars: their width comes from data (inline styles may have been stripped) -----------------
  all(root, '[data-kl-fraction]').forEach(node => {
    node.style.width = `${100 * Number(node.getAttribute('data-kl-fraction'))}%`;
  });

  // -- copy and download -------------------------------------------------------------------------
  function textOf(container) {
    const right = all(container, 'td.kl-right.kl-diff-code:not(.kl-diff-blank)');
    const cells = right.length ? right : all(container, '.kl-line .kl-text');
    return cells.map(c => c.textContent).join('\n') + '\n';
  }
  async function copyText(text) {
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        return true;
      }
    } catch (e) {
      // fall through to the textarea route
    }
    const area = document.createElement('textarea');
    area.value = text;
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch (e) {
      ok = false;
    }
    area.remove();
    return ok;
  }
  function button(label, classes, title, onClick) {
    const b = make('button', `kl-button ${classes}`, label);
    b.type = 'button';
    b.title = title;
    b.addEventListener('click', event => {
      event.stopPropagation();
      event.preventDefault();
      onClick();
    });
    return b;
  }
  all(root, '[data-kl-filename]').forEach(head => {
    const container = head.parentNode;
    const tools = make('span', 'kl-tools');
    const copy = button('Copy', 'kl-copy', 'Copy this text to the clipboard', async () => {
      const ok = await copyText(textOf(container));
      copy.textContent = ok ? 'Copied' : 'Copy failed';
      mark(copy, 'kl-done', ok);
      setTimeout(() => {
        copy.textContent = 'Copy';
        mark(copy, 'kl-done', false);
      }, 1500);
    });
    const save = button('Download', 'kl-download', 'Download this text as a file', () =>
      download(head.getAttribute('data-kl-filename'), textOf(container))
    );
    tools.append(copy, save);
    head.appendChild(tools);
  });

  // -- diff folds ----------------------------------------------------------------------------------
  all(root, 'tbody.kl-diff-fold').forEach(fold => {
    const count = fold.getAttribute('data-kl-fold');
    const holder = make('tbody', 'kl-diff-unfold');
    const row = make('tr', 'kl-diff-fold-row');
    const cell = make('td', 'kl-diff-fold-cell');
    cell.colSpan = 4;
    cell.appendChild(
      button(`⋯ ${count} unchanged lines`, 'kl-unfold', 'Show these lines', () => {
        fold.hidden = false;
        holder.remove();
      })
    );
    row.appendChild(cell);
    holder.appendChild(row);
    fold.hidden = true;
    fold.parentNode.insertBefore(holder, fold);
  });

  // -- passes ----------------------------------------------------------------------------------------
  const passes = all(root, 'details.kl-pass');
  const firstOpen = passes.find(pass => pass.open);
  if (firstOpen) {
    mark(firstOpen, 'kl-current', true);
  }
  passes.forEach(pass => {
    pass.addEventListener('toggle', () => {
      if (pass.open) {
        passes.forEach(other => mark(other, 'kl-current', other === pass));
        onShow(pass);
      }
    });
  });
  const passList = root.querySelector('.kl-passes');
  if (passList && passes.some(p => p.classList.contains('kl-unchanged'))) {
    const filter = make('label', 'kl-pass-filter');
    const onlyChanged = document.createElement('input');
    onlyChanged.type = 'checkbox';
    onlyChanged.addEventListener('change', () => {
      passes.forEach(p => {
        p.hidden = onlyChanged.checked && p.classList.contains('kl-unchanged');
      });
    });
    filter.append(onlyChanged, document.createTextNode(' only passes that changed the IR'));
    passList.parentNode.insertBefore(filter, passList);
  }

  // -- tabs ------------------------------------------------------------------------------------------
  const panels = all(root, '[data-kl-panel]');
  if (!panels.length) {
    return;
  }
  const keyOf = panel => panel.getAttribute('data-kl-panel');
  const sourcePanel = panels.find(p => keyOf(p) === 'source') || null;
  const sourcePane = sourcePanel && sourcePanel.querySelector('.kl-pane-source');
  const sourceCode = sourcePane && sourcePane.querySelector('.kl-code');
  const isStage = panel => panel.querySelector('.kl-split') !== null;
  const hasStages = panels.some(isStage);
  const tabbed = panels.filter(p => !(hasStages && p === sourcePanel));
  if (hasStages && sourcePanel) {
    sourcePanel.hidden = true;
  }
  const bar = make('div', 'kl-tabbar');
  bar.setAttribute('role', 'tablist');
  const tabs = tabbed.map(panel => {
    const key = keyOf(panel);
    const kind = isStage(panel) || key === 'source' ? 'stage' : key;
    const tab = make('button', `kl-tab kl-tab-${kind}`, panel.getAttribute('data-kl-title'));
    tab.type = 'button';
    tab.setAttribute('role', 'tab');
    tab.setAttribute('data-tab', key);
    tab.addEventListener('click', () => select(key));
    bar.appendChild(tab);
    const heading = panel.querySelector('[data-kl-heading]');
    if (heading) {
      heading.hidden = true;
    }
    return tab;
  });
  panels[0].parentNode.insertBefore(bar, panels[0]);

  let current = null; // the selected panel
  let pinned = null; // the pinned source line (a string, as in data-src-line)
  const stageCode = () => (current && isStage(current) ? current.querySelector('.kl-pane-ir .kl-code') : null);
  const rowsOf = (code, line) => (code && line ? all(code, `.kl-line[data-src-line="${line}"]`) : []);

  function reveal(code, row) {
    if (!code || !row) {
      return;
    }
    const top = row.offsetTop;
    if (top < code.scrollTop || top + row.offsetHeight > code.scrollTop + code.clientHeight) {
      code.scrollTop = Math.max(0, top - code.clientHeight / 3);
    }
  }
  function showPinned() {
    clear('kl-selected');
    const rows = rowsOf(stageCode(), pinned);
    rowsOf(sourceCode, pinned).concat(rows).forEach(row => mark(row, 'kl-selected', true));
    reveal(stageCode(), rows[0]);
  }
  function select(key) {
    current = tabbed.find(p => keyOf(p) === key) || tabbed[0];
    tabs.forEach(tab => {
      const on = tab.getAttribute('data-tab') === keyOf(current);
      mark(tab, 'kl-active', on);
      tab.setAttribute('aria-selected', on ? 'true' : 'false');
    });
    tabbed.forEach(panel => {
      panel.hidden = panel !== current;
    });
    clear('kl-hover');
    clear('kl-linked');
    if (isStage(current) && sourcePane) {
      const split = current.querySelector('.kl-split');
      split.insertBefore(sourcePane, split.firstChild);
      const linked = new Set(all(stageCode(), '.kl-line[data-src-line]').map(r => r.getAttribute('data-src-line')));
      all(sourceCode, '.kl-line').forEach(row => mark(row, 'kl-has-links', linked.has(row.getAttribute('data-src-line'))));
    }
    showPinned();
    onShow(current);
  }

  // -- line links ----------------------------------------------------------------------------------
  const lineOf = event => {
    const row = event.target && event.target.closest ? event.target.closest('.kl-line') : null;
    return row && root.contains(row) ? row : null;
  };
  function hover(row, fromSource) {
    clear('kl-hover');
    clear('kl-linked');
    mark(row, 'kl-hover', true);
    const line = row.getAttribute('data-src-line');
    const code = stageCode();
    if (fromSource) {
      const rows = rowsOf(code, line);
      rows.forEach(r => mark(r, 'kl-linked', true));
      reveal(code, rows[0]);
    } else {
      rowsOf(code, line).forEach(r => r !== row && mark(r, 'kl-linked', true));
      const sources = rowsOf(sourceCode, line);
      sources.forEach(r => mark(r, 'kl-linked', true));
      reveal(sourceCode, sources[0]);
    }
  }
  function listen(code, fromSource) {
    code.addEventListener('mouseover', event => {
      const row = lineOf(event);
      if (row && (fromSource || code === stageCode())) {
        hover(row, fromSource);
      }
    });
    code.addEventListener('mouseleave', () => {
      clear('kl-hover');
      clear('kl-linked');
    });
    code.addEventListener('click', event => {
      const row = lineOf(event);
      const line = row && row.getAttribute('data-src-line');
      if (row && (fromSource || code === stageCode())) {
        pinned = line === pinned ? null : line;
        showPinned();
        reveal(sourceCode, rowsOf(sourceCode, pinned)[0]);
      }
    });
  }
  if (sourceCode && hasStages) {
    listen(sourceCode, true);
    tabbed.filter(isStage).forEach(panel => listen(panel.querySelector('.kl-pane-ir .kl-code'), false));
  }
  select(keyOf(tabbed[0]));
}

/** Save `text` as a file named `filename` through the browser's download. */
export function download(filename, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type: type || 'text/plain' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
