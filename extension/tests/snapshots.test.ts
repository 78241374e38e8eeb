import { describe, expect, it } from 'vitest';
import { SNAPSHOT_TRAIT, WIDGET_MIME, writeSnapshots } from '../src/snapshots';

const snapshot = (caption: string) =>
  `<div class='kernellab-snapshot'><img src='data:image/png;base64,AAAA'/><div>${caption}</div></div>`;

/** A code cell's shared model as @jupyter/ydoc's YCodeCell shows it to the plugin. */
function sharedCell(outputs: Array<Record<string, unknown>>) {
  const calls: Array<{ start: number; end: number; outputs: unknown[]; origin: unknown }> = [];
  return {
    calls,
    outputs,
    getOutputs: () => JSON.parse(JSON.stringify(outputs)),
    updateOutputs(start: number, end: number, replacement: Array<Record<string, unknown>>, origin?: unknown) {
      calls.push({ start, end, outputs: replacement, origin });
      outputs.splice(start, end - start, ...replacement);
    }
  };
}

const explorerOutput = (id: string, html: string) => ({
  output_type: 'display_data',
  metadata: {},
  data: { [WIDGET_MIME]: { model_id: id, version_major: 2, version_minor: 0 }, 'text/html': html, 'text/plain': '<tile order>' }
});

describe('writing explorer snapshots into a notebook about to be saved', () => {
  it("replaces an explorer output's text/html with its model's current snapshot, silently", () => {
    const shared = sharedCell([{ output_type: 'stream', name: 'stdout', text: 'hi\n' }, explorerOutput('m1', snapshot('GROUP_SIZE_M=3'))]);
    const models = new Map([['m1', { get: (name: string) => (name === SNAPSHOT_TRAIT ? snapshot('GROUP_SIZE_M=9') : undefined) }]]);
    const written = writeSnapshots([{ type: 'markdown', sharedModel: {} }, { type: 'code', sharedModel: shared }], models);
    expect(written).toBe(1);
    expect(shared.calls).toHaveLength(1);
    const [call] = shared.calls;
    expect([call.start, call.end, call.origin]).toEqual([1, 2, 'silent-change']);
    const data = shared.outputs[1].data as Record<string, unknown>;
    expect(data['text/html']).toContain('GROUP_SIZE_M=9');
    expect(data[WIDGET_MIME]).toEqual({ model_id: 'm1', version_major: 2, version_minor: 0 });
    expect(data['text/plain']).toBe('<tile order>');
    expect(shared.outputs[0]).toEqual({ output_type: 'stream', name: 'stdout', text: 'hi\n' });
  });

  it('leaves outputs alone when nothing changed, the model is unknown, or it has no snapshot', () => {
    const same = snapshot('GROUP_SIZE_M=3');
    const shared = sharedCell([explorerOutput('m1', same), explorerOutput('m2', same), explorerOutput('m3', same)]);
    const models = new Map([
      ['m1', { get: () => same }],
      ['m3', { get: () => '<b>not a snapshot</b>' }]
    ]);
    expect(writeSnapshots([{ type: 'code', sharedModel: shared }], models)).toBe(0);
    expect(shared.calls).toEqual([]);
  });
});
