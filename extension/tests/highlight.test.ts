import { describe, expect, it } from 'vitest';
import { StreamLanguage } from '@codemirror/language';
import { classHighlighter } from '@lezer/highlight';
import { LANGUAGES } from '../src/languages';
import { segmentLines, tokenize } from '../src/highlight';

function language(name: string) {
  const spec = LANGUAGES.find(l => l.name === name)!;
  return StreamLanguage.define(spec.parser());
}

/** The classes of the first token whose text is exactly `text` on the given line. */
function classOf(code: string, name: string, text: string, lineNo = 0): string | undefined {
  const lines = segmentLines(code, tokenize(code, language(name), classHighlighter));
  return lines[lineNo].find(([t]) => t === text)?.[1];
}

describe('segmentLines', () => {
  it('keeps every character, one entry per line', () => {
    const code = '%x = tt.load %6, %mask : tensor<1024x!tt.ptr<f32>>\n  tt.return\n';
    const lines = segmentLines(code, tokenize(code, language('mlir'), classHighlighter));
    expect(lines).toHaveLength(2);
    expect(lines.map(l => l.map(([t]) => t).join(''))).toEqual([
      '%x = tt.load %6, %mask : tensor<1024x!tt.ptr<f32>>',
      '  tt.return'
    ]);
  });

  it('splits tokens that span lines (block comments)', () => {
    const code = 'mov.u32 %r1, %tid.x; /* a\nb */ ret;';
    const lines = segmentLines(code, tokenize(code, language('ptx'), classHighlighter));
    expect(lines).toHaveLength(2);
    expect(lines[1][0]).toEqual(['b */', 'tok-comment']);
    expect(lines.map(l => l.map(([t]) => t).join('')).join('\n')).toBe(code);
  });

  it('handles unknown languages and empty text', () => {
    expect(segmentLines('a\nb', tokenize('a\nb', null, classHighlighter))).toEqual([
      [['a', '']],
      [['b', '']]
    ]);
    expect(segmentLines('', [])).toEqual([]);
  });
});

describe('stage languages', () => {
  it('MLIR: ops, SSA values, types, symbols, attributes', () => {
    const line = '%x = tt.load %6, %mask : tensor<1024x!tt.ptr<f32>> loc(#loc3)';
    expect(classOf(line, 'mlir', 'tt.load')).toBe('tok-keyword');
    expect(classOf(line, 'mlir', '%mask')).toContain('tok-variableName');
    expect(classOf(line, 'mlir', 'tensor')).toBe('tok-typeName');
    expect(classOf(line, 'mlir', '!tt.ptr')).toBe('tok-typeName');
    expect(classOf(line, 'mlir', 'f32')).toBe('tok-typeName');
    expect(classOf(line, 'mlir', '#loc3')).toBe('tok-propertyName'); // attributeName under classHighlighter
    expect(classOf('tt.func public @add_kernel(', 'mlir', '@add_kernel')).toContain(
      'tok-definition'
    );
    expect(classOf('#blocked = #ttg.blocked<{sizePerThread = [4]}>', 'mlir', '#ttg.blocked')).toBe(
      'tok-propertyName'
    );
  });

  it('LLVM IR: instructions, locals, globals, metadata, comments', () => {
    const code =
      'define void @k(ptr %0) {\nentry:\n  %1 = getelementptr float, ptr %0, i32 4, !dbg !7 ; c\n}';
    expect(classOf(code, 'llvm', 'define')).toBe('tok-atom');
    expect(classOf(code, 'llvm', '@k')).toContain('tok-definition');
    expect(classOf(code, 'llvm', 'entry:', 1)).toBe('tok-labelName');
    expect(classOf(code, 'llvm', 'getelementptr', 2)).toBe('tok-keyword');
    expect(classOf(code, 'llvm', 'float', 2)).toBe('tok-typeName');
    expect(classOf(code, 'llvm', '!7', 2)).toBe('tok-meta');
    expect(classOf(code, 'llvm', '; c', 2)).toBe('tok-comment');
  });

  it('PTX: directives, instructions, registers, predicates, labels', () => {
    const code =
      '.visible .entry add_kernel(\n@%p1 ld.global.v4.b32 { %r1, %r2 }, [ %rd1 + 0 ];\n$L__BB0_2:';
    expect(classOf(code, 'ptx', '.entry')).toBe('tok-meta');
    expect(classOf(code, 'ptx', '@%p1', 1)).toBe('tok-atom');
    expect(classOf(code, 'ptx', 'ld.global.v4.b32', 1)).toBe('tok-keyword');
    expect(classOf(code, 'ptx', '%rd1', 1)).toContain('tok-variableName');
    expect(classOf(code, 'ptx', '$L__BB0_2:', 2)).toBe('tok-labelName');
  });

  it('SASS: opcodes, registers, predicates, constant banks', () => {
    const code =
      '        /*0010*/  @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x000000040204a981 */\n        /*0020*/  MOV R1, c[0x0][0x28] ;';
    expect(classOf(code, 'sass', '/*0010*/')).toBe('tok-comment');
    expect(classOf(code, 'sass', '@!P0')).toBe('tok-atom');
    expect(classOf(code, 'sass', 'LDG.E.128')).toBe('tok-keyword');
    expect(classOf(code, 'sass', 'R4')).toContain('tok-variableName');
    expect(classOf(code, 'sass', 'c[0x0]', 1)).toBe('tok-propertyName');
  });
});
