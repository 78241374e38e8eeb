// Browser test of the kernellab JupyterLab extension, driven by playwright-core on Debian's
// chromium (never a downloaded browser). tests/extension/test_extension.py starts JupyterLab
// and runs this script; it can also be run by hand against any server:
//
//   KL_LAB_URL=http://127.0.0.1:8888 KL_TOKEN=... KL_NOTEBOOK=vector_add.ipynb \
//   KL_ARTIFACTS=../test-artifacts/extension node ui-tests/viewer.test.mjs
//
// Environment: KL_LAB_URL, KL_TOKEN, KL_NOTEBOOK (path relative to the server's root),
// KL_ARTIFACTS (screenshots go there), KL_EXPORTED_HTML (optional: an nbconvert HTML export of
// the notebook, checked for the text/html fallback), KL_CHROMIUM (default /usr/bin/chromium).
// Exit status 0 when every step passed; each step prints "ok - ..." or "not ok - ...".
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
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
const exportedHtml = process.env.KL_EXPORTED_HTML || '';
const executablePath = process.env.KL_CHROMIUM || '/usr/bin/chromium';
const MIME = 'application/vnd.kernellab.compile+json';

fs.mkdirSync(artifacts, { recursive: true });

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run'
  ]
});
const context = await browser.newContext({
  viewport: { width: 1400, height: 1000 },
  acceptDownloads: true
});
await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
const page = await context.newPage();
const consoleErrors = [];
page.on('console', msg => {
  if (msg.type() === 'error') {
    consoleErrors.push(msg.text());
  }
});
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
    const shot = path.join(artifacts, `failure-${failed}.png`);
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    console.log(`  screenshot: ${shot}`);
    throw err;
  }
}

const viewer = page.locator('.jp-OutputArea .kl-viewer').first();
const irPane = viewer.locator('.kl-pane-ir:visible');
const sourceRows = viewer.locator('.kl-pane-source .kl-line');

/** Click a stage tab and wait for its pane. */
async function openTab(id) {
  await viewer.locator(`.kl-tab[data-tab="${id}"]`).click();
  await viewer.locator(`.kl-panel[data-kl-panel="${id}"]`).waitFor({ state: 'visible' });
}

try {
  await step('JupyterLab opens the notebook', async () => {
    await page.goto(`${base}/lab/tree/${notebook}?token=${token}`);
    await page.locator('.jp-NotebookPanel .jp-Notebook').first().waitFor({ timeout: 90000 });
    await page.waitForFunction(() => window.jupyterapp !== undefined, null, { timeout: 30000 });
  });

  await step('the %%kernel cell shows its magic line apart from the Python body', async () => {
    const cell = page.locator('.jp-CodeCell').filter({ hasText: '%%kernel' }).first();
    const magic = cell.locator('.cm-line.kl-kernel-magic-line');
    await magic.waitFor({ timeout: 30000 });
    assert.equal(await cell.locator('.kl-magic-name').first().textContent(), '%%kernel');
    const flags = await cell.locator('.kl-magic-flag').allTextContents();
    assert.deepEqual(flags, ['--signature', '--constexprs']);
    // the body is highlighted as Python: `def` is a styled keyword token, like in any cell
    const defLine = cell.locator('.cm-line', { hasText: 'def add_kernel' });
    const defToken = defLine.locator('span', { hasText: /^def$/ }).first();
    assert.ok((await defToken.getAttribute('class'))?.length, 'def is not highlighted');
    assert.equal(await defLine.evaluate(n => n.classList.contains('kl-kernel-magic-line')), false);
    const magicColor = await magic.evaluate(n => getComputedStyle(n).backgroundColor);
    const bodyColor = await defLine.evaluate(n => getComputedStyle(n).backgroundColor);
    assert.notEqual(magicColor, bodyColor, 'the magic line is not styled apart');
    await cell.screenshot({ path: path.join(artifacts, 'kernel-cell.png') });
  });

  await step('Markdown fences ```mlir / ```ptx / ```llvm are highlighted', async () => {
    const md = page.locator('.jp-MarkdownCell .jp-RenderedMarkdown').first();
    await md.waitFor();
    for (const [lang, word] of [
      ['mlir', 'tt.load'],
      ['ptx', 'ld.global.v4.b32'],
      ['llvm', 'getelementptr']
    ]) {
      const token = md.locator('pre code span', { hasText: new RegExp(`^${word.replace(/\./g, '\\.')}$`) });
      await token.first().waitFor({ timeout: 20000 }).catch(() => {
        throw new Error(`no highlighted "${word}" token in the \`\`\`${lang} fence`);
      });
      assert.ok((await token.first().getAttribute('class'))?.length, `${word} has no class`);
    }
  });

  await step('running the notebook renders the viewer, not the HTML fallback', async () => {
    // wait for the notebook's kernel, then run every cell (the command runs the current one)
    await page.waitForFunction(
      () => {
        const panel = window.jupyterapp.shell.currentWidget;
        const kernel = panel?.sessionContext?.session?.kernel;
        return panel?.sessionContext?.isReady && kernel?.status === 'idle';
      },
      null,
      { timeout: 90000 }
    );
    const ran = await page.evaluate(() =>
      window.jupyterapp.commands.execute('notebook:run-all-cells').then(r => r !== false)
    );
    assert.ok(ran, 'notebook:run-all-cells did not run');
    await viewer.waitFor({ timeout: 180000 });
    const cell = page.locator('.jp-CodeCell').filter({ hasText: '%%kernel' });
    // one output, rendered by our renderer for our MIME type; no text/html fallback in it
    assert.equal(await cell.locator('.jp-OutputArea-child').count(), 1);
    assert.equal(await cell.locator('.jp-OutputArea-output.kl-viewer').count(), 1);
    // the output's data does carry the text/html fallback: the renderer won on rank
    const keys = await page.evaluate(() => {
      const nb = window.jupyterapp.shell.currentWidget.content;
      const cell = nb.widgets.find(c => c.model.sharedModel.getSource().startsWith('%%kernel'));
      return Object.keys(cell.model.outputs.get(0).data);
    });
    assert.ok(keys.includes(MIME) && keys.includes('text/html'), `output data: ${keys}`);
    assert.equal(await cell.locator('.jp-OutputArea .kl-fallback').count(), 0, 'the fallback rendered');
    assert.equal(await cell.locator('.jp-RenderedHTMLCommon').count(), 0, 'an HTML output rendered');
    // the panels are the bundle's own markup, sanitized: no script, no inline style but the
    // bar widths the behaviour script sets, and the behaviour script attached to them
    assert.equal(await viewer.locator('[data-kl-panel="ttir"]').count(), 1);
    assert.equal(await viewer.locator('script').count(), 0);
    const styled = await viewer.locator('[style]').evaluateAll(ns => ns.map(n => n.className));
    assert.ok(styled.every(c => c === 'kl-bar-fill'), `inline styles left on: ${styled.join(', ')}`);
    assert.equal(await viewer.getAttribute('data-kl-ready'), '1');
    assert.equal(await viewer.locator('.kl-header .kl-download-json').count(), 1);
    assert.match(await viewer.locator('.kl-name').textContent(), /add_kernel/);
  });

  const stages = await viewer.locator('.kl-tab-stage').evaluateAll(ts => ts.map(t => t.dataset.tab));
  console.log(`# stages in the bundle: ${stages.join(', ')}`);

  await step('the TTIR tab shows highlighted TTIR', async () => {
    assert.ok(stages.includes('ttir'), 'no TTIR tab');
    await openTab('ttir');
    const text = await irPane.locator('.kl-code').textContent();
    assert.match(text, /tt\.load/);
    assert.match(text, /tt\.store/);
    // CodeMirror's token spans carry classes (the markup's own spans lost their styles)
    const op = irPane.locator('.kl-text span[class]', { hasText: /^tt\.load$/ }).first();
    await op.waitFor({ timeout: 10000 });
    assert.ok((await op.getAttribute('class'))?.length, 'tt.load is not highlighted');
  });

  await step('hovering a source line lights up its TTIR lines', async () => {
    const row = sourceRows.filter({ hasText: 'x = tl.load(x_ptr' });
    await row.hover();
    await viewer.locator('.kl-pane-ir .kl-line.kl-linked').first().waitFor({ timeout: 5000 });
    const linked = await irPane.locator('.kl-line.kl-linked').allTextContents();
    assert.ok(linked.length >= 1, 'no IR line lit');
    assert.ok(linked.some(l => l.includes('tt.load')), `lit lines: ${linked.join(' | ')}`);
    assert.ok(linked.every(l => !l.includes('tt.store')), 'a line of another statement lit');
    assert.ok(await row.evaluate(n => n.classList.contains('kl-hover')));
  });

  await step('clicking an IR line lights up its source line', async () => {
    await irPane.locator('.kl-line', { hasText: 'tt.store' }).first().click();
    const selected = viewer.locator('.kl-pane-source .kl-line.kl-selected');
    await selected.first().waitFor({ timeout: 5000 });
    assert.match(await selected.first().textContent(), /tl\.store\(out_ptr/);
    await page.mouse.move(0, 0);
  });

  await step('copy and download give the stage text', async () => {
    await irPane.locator('.kl-copy').click();
    await irPane.locator('.kl-copy.kl-done').waitFor({ timeout: 5000 });
    const clip = await page.evaluate(() => navigator.clipboard.readText());
    assert.match(clip, /tt\.func public @add_kernel/);
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 10000 }),
      irPane.locator('.kl-download').click()
    ]);
    assert.equal(download.suggestedFilename(), 'add_kernel.ttir');
    const saved = path.join(artifacts, download.suggestedFilename());
    await download.saveAs(saved);
    assert.equal(fs.readFileSync(saved, 'utf8'), clip);
  });

  await step('the PTX tab shows .entry (when the bundle has a PTX stage)', async () => {
    if (!stages.includes('ptx')) {
      console.log('# no ptx stage in this bundle (no NVIDIA backend): skipped');
      return;
    }
    await openTab('ptx');
    const text = await irPane.locator('.kl-code').textContent();
    assert.match(text, /\.entry\s+add_kernel/);
    const row = sourceRows.filter({ hasText: 'x = tl.load(x_ptr' });
    await row.hover();
    const linked = await irPane.locator('.kl-line.kl-linked').allTextContents();
    assert.ok(linked.some(l => /ld\.global/.test(l)), `lit PTX lines: ${linked.join(' | ')}`);
    await page.mouse.move(0, 0);
  });

  await step('screenshot of the viewer', async () => {
    await openTab(stages.includes('ptx') ? 'ptx' : 'ttir');
    await viewer.scrollIntoViewIfNeeded();
    await sourceRows.filter({ hasText: 'x = tl.load(x_ptr' }).hover();
    await viewer.screenshot({ path: path.join(artifacts, 'kernel-viewer.png') });
    await page.mouse.move(0, 0);
  });

  await step('the pass list opens a side-by-side diff', async () => {
    await openTab('passes');
    const passes = viewer.locator('.kl-pass');
    assert.ok((await passes.count()) >= 2, 'fewer than two passes listed');
    const changed = viewer.locator('.kl-pass.kl-changed');
    assert.ok((await changed.count()) >= 1, 'no pass changed the IR');
    // a changed pass with a pass before it (the first pass has nothing to diff against)
    const pick = viewer.locator('.kl-pass.kl-changed:not([data-index="0"])').first();
    const summary = pick.locator('summary');
    if (await pick.evaluate(n => n.open)) {
      await summary.click(); // open by default: close it, then open it again below
    }
    await summary.click();
    assert.ok(await pick.evaluate(n => n.open && n.classList.contains('kl-current')));
    assert.equal(await viewer.locator('.kl-pass.kl-current').count(), 1);
    const diff = pick.locator('.kl-diff');
    await diff.waitFor({ timeout: 10000 });
    assert.equal(await diff.locator('thead th').count(), 2);
    const edits = await diff.locator('tr.kl-diff-change, tr.kl-diff-insert, tr.kl-diff-delete').count();
    assert.ok(edits > 0, 'a pass that changed the IR shows no changed line');
    const unfold = pick.locator('.kl-unfold');
    if ((await unfold.count()) > 0) {
      const before = await diff.locator('tr.kl-diff-row:visible').count();
      await unfold.first().click();
      const after = await diff.locator('tr.kl-diff-row:visible').count();
      assert.ok(after > before, `unfolding showed no rows (${before} → ${after})`);
    }
    const right = diff.locator('td.kl-right.kl-diff-code:visible span[class]').first();
    await right.waitFor({ timeout: 10000 }); // the diff is highlighted too
    await viewer.screenshot({ path: path.join(artifacts, 'kernel-viewer-passes.png') });
  });

  await step('resources and timings panels', async () => {
    await openTab('resources');
    const res = await viewer.locator('.kl-panel[data-kl-panel="resources"]').textContent();
    assert.match(res, /Threads per block/);
    assert.match(res, /128/);
    await openTab('timings');
    const tim = await viewer.locator('.kl-panel[data-kl-panel="timings"]').textContent();
    assert.match(tim, /total/);
    assert.match(tim, /ttir/);
  });

  if (exportedHtml) {
    await step('nbconvert HTML export: the same panels, with the same behaviour script', async () => {
      const exported = await context.newPage();
      exported.on('pageerror', err => consoleErrors.push(`nbconvert page: ${err}`));
      await exported.goto(pathToFileURL(path.resolve(exportedHtml)).href);
      const root = exported.locator('.kl-viewer[data-kl-ready="1"]').first();
      await root.waitFor({ state: 'attached', timeout: 20000 });
      assert.equal(await root.locator('.kl-download-json').count(), 0, 'the extension rendered it');
      const panel = root.locator('[data-kl-panel="ttir"]');
      assert.match(await panel.textContent(), /tt\.load/);
      // tabs, and the source beside the selected stage, as in the extension
      await root.locator('.kl-tab[data-tab="ttir"]').click();
      await panel.waitFor({ state: 'visible' });
      const row = panel.locator('.kl-pane-source .kl-line', { hasText: 'x = tl.load(x_ptr' });
      await row.hover();
      const linked = panel.locator('.kl-pane-ir .kl-line.kl-linked');
      const texts = await linked.allTextContents();
      assert.ok(texts.some(t => t.includes('tt.load')), `lit lines: ${texts.join(' | ')}`);
      assert.ok(texts.every(t => !t.includes('tt.store')), 'a line of another statement lit');
      const lit = await linked.first().evaluate(n => getComputedStyle(n).backgroundColor);
      assert.notEqual(lit, 'rgba(0, 0, 0, 0)', 'a linked line has no background on the static page');
      await exported.screenshot({ path: path.join(artifacts, 'nbconvert-viewer.png'), fullPage: true });
      await exported.close();
    });
  }

  await step('a bundle of an unknown schema version shows its text/html', async () => {
    const cell = page.locator('.jp-CodeCell').filter({ hasText: 'future schema version' });
    const shown = cell.locator('.jp-OutputArea .kl-viewer .kl-fallback .kl-test-future');
    await shown.waitFor({ timeout: 30000 });
    assert.equal(await shown.textContent(), 'static view of future_kernel');
  });

  await step('no errors from the extension in the browser console', async () => {
    const ours = consoleErrors.filter(e => /kernellab|kl-/i.test(e));
    assert.deepEqual(ours, []);
  });
} catch {
  // already reported by step()
} finally {
  await browser.close();
}
if (consoleErrors.length) {
  console.log(`# browser console errors (all):\n#   ${consoleErrors.join('\n#   ')}`);
}
console.log(failed ? `# FAILED (${failed})` : '# all steps passed');
process.exit(failed ? 1 : 0);
