// Browser test of what a saved notebook shows: an explorer's live widget, a control moved
// (the live view is never rebuilt: no "Loading widget", the control keeps focus), then its
// static snapshot, with the moved control's value, once the notebook is saved and reopened
// with a new kernel (no widget models); the
// viewer of kl.lab.show(CompiledKernel) with its source lines linked; a dataflow graph drawn
// without Graphviz's `dot` (tests/extension/test_extension.py hides it from the server's PATH);
// the explorer pictures in the dark theme. Same environment as viewer.test.mjs (KL_NOTEBOOK is
// explorers.ipynb); exit status 0 when every step passed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const env = name => {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
};
const base = env('KL_LAB_URL').replace(/\/$/, '');
const token = env('KL_TOKEN');
const notebook = env('KL_NOTEBOOK');
const artifacts = env('KL_ARTIFACTS');
const executablePath = process.env.KL_CHROMIUM || '/usr/bin/chromium';

fs.mkdirSync(artifacts, { recursive: true });
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run']
});
const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
const consoleErrors = [];
page.on('pageerror', err => consoleErrors.push(String(err)));

let failed = 0;
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok - ${name} (${Date.now() - t0} ms)`);
  } catch (err) {
    failed++;
    console.log(`not ok - ${name}\n  ${String(err?.stack || err).split('\n').join('\n  ')}`);
    await page.screenshot({ path: path.join(artifacts, `explorers-failure-${failed}.png`), fullPage: true }).catch(() => {});
    throw err;
  }
}

const cellWith = text => page.locator('.jp-CodeCell').filter({ hasText: text }).first();

async function kernelIdle() {
  await page.waitForFunction(
    () => {
      const panel = window.jupyterapp.shell.currentWidget;
      const kernel = panel?.sessionContext?.session?.kernel;
      return panel?.sessionContext?.isReady && kernel?.status === 'idle';
    },
    null,
    { timeout: 90000 }
  );
}

async function openNotebook() {
  // a workspace of its own: only this notebook open, whatever other tests left open
  await page.goto(`${base}/lab/workspaces/kl-explorers/tree/${notebook}?token=${token}&reset`);
  await page.locator('.jp-NotebookPanel .jp-Notebook').first().waitFor({ timeout: 90000 });
  await page.waitForFunction(() => window.jupyterapp !== undefined, null, { timeout: 30000 });
  await page.waitForFunction(
    name => window.jupyterapp.shell.currentWidget?.context?.path === name,
    notebook,
    { timeout: 30000 }
  );
  await page.locator('.jp-NotebookPanel:visible .jp-Cell').first().click();
  await kernelIdle();
}

try {
  await step('running the notebook shows the live explorer, the viewer and the graph', async () => {
    await openNotebook();
    const ran = await page.evaluate(() =>
      window.jupyterapp.commands.execute('notebook:run-all-cells').then(r => r !== false)
    );
    assert.ok(ran, 'notebook:run-all-cells did not run');
    const live = cellWith('kl.lab.tile_order').locator('.jp-OutputArea img.kl-explorer-image');
    await live.waitFor({ timeout: 180000 });
    assert.equal(await cellWith('kl.lab.tile_order').locator('.kl-widget-snapshot').count(), 0);
    await cellWith('kl.lab.show(ck)').locator('.kl-viewer[data-kl-ready="1"]').waitFor({ timeout: 180000 });
    await cellWith('dataflow_graph').locator('.jp-RenderedSVG').waitFor({ timeout: 180000 });
    await kernelIdle();
  });

  await step('kl.lab.show(CompiledKernel) shows the source and links its lines', async () => {
    const viewer = cellWith('kl.lab.show(ck)').locator('.kl-viewer').first();
    await viewer.locator('.kl-tab[data-tab="ttgir"]').click();
    const panel = viewer.locator('.kl-panel[data-kl-panel="ttgir"]');
    await panel.waitFor({ state: 'visible' });
    const row = panel.locator('.kl-pane-source .kl-line', { hasText: 'x = tl.load(x_ptr' });
    assert.equal(await row.count(), 1, 'the source pane does not show the kernel');
    await row.hover();
    const linked = panel.locator('.kl-pane-ir .kl-line.kl-linked');
    await linked.first().waitFor({ timeout: 5000 });
    const texts = await linked.allTextContents();
    assert.ok(texts.some(t => t.includes('tt.load')), `lit lines: ${texts.join(' | ')}`);
    assert.doesNotMatch(await viewer.textContent(), /carries no source line information/);
    await page.mouse.move(0, 0);
  });

  await step('the dataflow graph is drawn without Graphviz', async () => {
    const svg = cellWith('dataflow_graph').locator('.jp-RenderedSVG').first();
    const markup = await svg.evaluate(n => n.querySelector('img')?.src ?? n.innerHTML);
    const text = markup.startsWith('data:') ? decodeURIComponent(markup.split(',', 2)[1]) : markup;
    assert.match(text, /class="kernellab-graph"/, 'not the lab\'s own SVG layout: was dot on PATH?');
    assert.match(text, /tt\.load/);
    await svg.screenshot({ path: path.join(artifacts, 'dataflow-graph-without-dot.png') });
  });

  await step('moving a control redraws the live view in place: no rebuild, focus kept', async () => {
    const output = cellWith('kl.lab.tile_order').locator('.jp-OutputArea-output').first();
    // watch the output: any "Loading widget" text, and whether the explorer's root view is replaced
    await output.evaluate(node => {
      window.klLoadingSeen = false;
      const root = node.querySelector('.widget-vbox');
      root.dataset.klProbe = '1';
      window.klProbeRoot = root;
      window.klObserver = new MutationObserver(() => {
        if (/Loading widget|Error displaying widget/.test(node.textContent)) {
          window.klLoadingSeen = true;
        }
      });
      window.klObserver.observe(node, { childList: true, subtree: true, characterData: true });
    });
    const input = output.locator('.widget-text', { hasText: 'GROUP_SIZE_M' }).locator('input');
    await input.click();
    await input.fill('9');
    await input.press('Enter');
    await output.locator('.widget-html', { hasText: 'grouped (GROUP_SIZE_M=9)' }).waitFor({ timeout: 60000 });
    await page.waitForTimeout(2500); // past the kernel's one-second wait before it refreshes the snapshot trait
    await kernelIdle();
    const state = await output.evaluate(node => ({
      loading: window.klLoadingSeen,
      sameRoot: window.klProbeRoot.isConnected && node.querySelector('.widget-vbox') === window.klProbeRoot,
      focused: document.activeElement?.tagName === 'INPUT' &&
        document.activeElement.closest('.widget-text')?.textContent.includes('GROUP_SIZE_M'),
      snapshotShown: node.querySelector('.kl-widget-snapshot') !== null
    }));
    await output.evaluate(() => window.klObserver.disconnect());
    assert.deepEqual(state, { loading: false, sameRoot: true, focused: true, snapshotShown: false });
    assert.equal(await input.inputValue(), '9');
    await output.screenshot({ path: path.join(artifacts, 'explorer-control-moved.png') });
  });

  await step('saved, then reopened with a new kernel: the explorer shows its last state', async () => {
    await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
    await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.context.model.dirty, null, { timeout: 30000 });
    // the file on the server holds the snapshot of the moved control, not the first one
    const saved = await page.evaluate(async ([name, tok]) => {
      const r = await fetch(`/api/contents/${name}?content=1&token=${tok}`);
      const nb = (await r.json()).content;
      const cell = nb.cells.find(c => c.source.includes('kl.lab.tile_order'));
      return cell.outputs.map(o => o.data?.['text/html'] ?? '').join('')
        .replace(/data:image\/png;base64,[^'"]*/g, 'data:image/png;base64,...');
    }, [notebook, token]);
    assert.match(saved, /grouped \(GROUP_SIZE_M=9\)/);
    assert.doesNotMatch(saved, /GROUP_SIZE_M=3/);
    await page.evaluate(() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart());
    await openNotebook();
    const output = cellWith('kl.lab.tile_order').locator('.jp-OutputArea-output').first();
    const snapshot = output.locator('.kl-widget-snapshot');
    await snapshot.waitFor({ timeout: 60000 });
    assert.match(await snapshot.textContent(), /static snapshot/);
    assert.match(await snapshot.textContent(), /row-major loads 90 distinct blocks/);
    assert.match(await snapshot.textContent(), /grouped \(GROUP_SIZE_M=9\)/, 'the snapshot is not the last state');
    const size = await snapshot.locator('img').evaluate(img => img.naturalWidth);
    assert.ok(size > 100, 'the snapshot picture did not load');
    assert.doesNotMatch(await output.textContent(), /Error displaying widget|Loading widget/);
    await output.screenshot({ path: path.join(artifacts, 'explorer-snapshot-reopened.png') });
  });

  await step('in the dark theme the explorer pictures are inverted', async () => {
    await page.evaluate(() =>
      window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' })
    );
    await page.waitForFunction(() => document.body.dataset.jpThemeLight === 'false', null, { timeout: 30000 });
    // queried afresh each time: the style applies once the theme's stylesheets are in
    await page.waitForFunction(
      () => {
        const img = document.querySelector('.jp-OutputArea .kl-widget-snapshot img');
        return img !== null && getComputedStyle(img).filter.includes('invert');
      },
      null,
      { timeout: 60000 }
    );
    await cellWith('kl.lab.tile_order').screenshot({ path: path.join(artifacts, 'explorer-dark.png') });
    await page.evaluate(() =>
      window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Light' })
    );
  });

  await step('no errors from the extension in the browser console', async () => {
    assert.deepEqual(consoleErrors.filter(e => /kernellab|kl-/i.test(e)), []);
  });
} catch {
  // already reported by step()
} finally {
  await browser.close();
}
console.log(failed ? `# FAILED (${failed})` : '# all steps passed');
process.exit(failed ? 1 : 0);
