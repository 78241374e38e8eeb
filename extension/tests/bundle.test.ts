import { describe, expect, it } from 'vitest';
import { readBundle, SUPPORTED_VERSIONS } from '../src/bundle';

describe('readBundle', () => {
  it('reads the version and the kernel name', () => {
    expect(readBundle({ version: 1, name: 'add_kernel', stages: [] })).toEqual({ version: 1, name: 'add_kernel' });
    expect(SUPPORTED_VERSIONS).toContain(1);
  });

  it('treats mistyped fields as absent', () => {
    expect(readBundle({ version: '1', name: 7 })).toEqual({ version: 0, name: 'kernel' });
    expect(readBundle({ version: 1.5, name: '' })).toEqual({ version: 0, name: 'kernel' });
  });

  it('rejects what is not an object', () => {
    for (const bad of ['text', null, [1], 3]) {
      expect(() => readBundle(bad)).toThrow(/expected a JSON object/);
    }
  });
});
