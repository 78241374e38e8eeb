import { describe, expect, it } from 'vitest';
import { isKernelMagicLine, magicLineParts } from '../src/kernelcell';

describe('%%kernel magic line', () => {
  it('recognizes the magic and nothing else', () => {
    expect(isKernelMagicLine('%%kernel')).toBe(true);
    expect(isKernelMagicLine('%%kernel --signature "*fp32"')).toBe(true);
    expect(isKernelMagicLine('%%kernels')).toBe(false);
    expect(isKernelMagicLine(' %%kernel')).toBe(false);
    expect(isKernelMagicLine('%%time')).toBe(false);
    expect(isKernelMagicLine('def kernel():')).toBe(false);
  });

  it('splits the line into name, flags, values and strings', () => {
    const line = '%%kernel --signature "*fp32,*fp32,*fp32,i32" --constexprs BLOCK=1024 -f';
    const parts = magicLineParts(line).map(p => [line.slice(p.from, p.to), p.part]);
    expect(parts).toEqual([
      ['%%kernel', 'name'],
      ['--signature', 'flag'],
      ['"*fp32,*fp32,*fp32,i32"', 'string'],
      ['--constexprs', 'flag'],
      ['BLOCK=1024', 'value'],
      ['-f', 'flag']
    ]);
    expect(magicLineParts('x = 1')).toEqual([]);
  });
});
