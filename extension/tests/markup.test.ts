import { describe, expect, it } from 'vitest';
// JupyterLab's own sanitizer (what the renderer gets as options.sanitizer)
import { Sanitizer } from '@jupyterlab/apputils/lib/sanitizer';
import { SANITIZE_OPTIONS } from '../src/markup';

// The shape of kernellab/lab/viewer's markup, with things no viewer markup has mixed in.
const MARKUP = `<div class="kl-viewer" style="color:#000" id="kl-1" data-kl-viewer="1">
<section class="kl-panel" style="margin:4px" data-kl-panel="ttir" data-kl-title="TTIR">
<pre class="kl-code" data-kl-language="mlir"><span class="kl-line" data-ln="1" data-src-line="5"><span class="kl-ln">1</span><span class="kl-text"><span style="color:#008000">tt.load</span></span></span></pre>
<details class="kl-pass kl-changed" data-index="0" open=""><summary class="kl-pass-head" title="+1 op">cse</summary>
<table class="kl-diff"><colgroup><col class="kl-diff-ln-col"><col></colgroup><thead><tr><th class="kl-diff-head" colspan="2">before</th></tr></thead>
<tbody class="kl-diff-fold" data-kl-fold="12"><tr class="kl-diff-row kl-diff-equal"><td class="kl-diff-code kl-left" data-ln="3">x</td></tr></tbody></table></details>
<img src="x" onerror="alert(1)"><a href="javascript:alert(2)">link</a><iframe src="https://example.com"></iframe>
<span class="kl-bar-fill" data-kl-fraction="0.5" style="width:50%" onclick="alert(3)"></span>
</section></div><script>alert(4)</script>`;

describe('the viewer markup through the sanitizer', () => {
  const clean = new Sanitizer().sanitize(MARKUP, SANITIZE_OPTIONS);

  it('keeps what the behaviour script and the stylesheet need', () => {
    for (const kept of [
      'data-kl-viewer="1"', 'data-kl-panel="ttir"', 'data-kl-title="TTIR"', 'data-kl-language="mlir"',
      'data-ln="1"', 'data-src-line="5"', 'data-kl-fold="12"', 'data-kl-fraction="0.5"', 'data-index="0"',
      'class="kl-pass kl-changed"', '<details', 'open', '<summary', 'title="+1 op"', 'colspan="2"',
      '<col class="kl-diff-ln-col"', '<section', 'tt.load'
    ]) {
      expect(clean).toContain(kept);
    }
  });

  it('drops scripts, handlers, links, frames, images and inline styles', () => {
    for (const dropped of ['<script', 'alert', 'onerror', 'onclick', 'javascript:', '<iframe', '<img', 'style=', '<a ']) {
      expect(clean).not.toContain(dropped);
    }
    expect(clean).toContain('link'); // the text of a dropped element stays, as text
  });
});
