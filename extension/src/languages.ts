/**
 * CodeMirror 6 languages for the compiler's stages, as legacy "simple modes": MLIR (TTIR and
 * TTGIR), LLVM IR, PTX and NVIDIA SASS. Registered in JupyterLab's language registry, they
 * highlight the viewer's tabs, files with these extensions, and Markdown fences such as
 * ```mlir / ```llvm / ```ptx / ```sass.
 *
 * Token names are Lezer highlight tag names, so JupyterLab's highlight style colours them
 * with the theme's editor colours.
 */
import { simpleMode } from '@codemirror/legacy-modes/mode/simple-mode';
import type { StreamParser } from '@codemirror/language';

type Rule = {
  regex: RegExp;
  token: string | null;
  sol?: boolean;
  next?: string;
};

const NUMBER = /-?(?:0x[0-9a-fA-F]+|\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)\b/;
const STRING = /"(?:[^"\\]|\\.)*"?/;

/** MLIR generic syntax plus the Triton dialects' custom forms (TTIR, TTGIR). */
export const mlirRules: Rule[] = [
  { regex: /\/\/.*/, token: 'comment' },
  { regex: STRING, token: 'string' },
  { regex: /%[\w$.-]+(?:#\d+)?/, token: 'variable-2' },
  { regex: /@[\w$.-]+|@"(?:[^"\\]|\\.)*"/, token: 'def' },
  { regex: /\^[\w$.-]+/, token: 'labelName' },
  { regex: /#[\w$.-]+/, token: 'attributeName' },
  { regex: /![\w$.-]+/, token: 'typeName' },
  { regex: /(?:\d+|\?)x(?=[\w!?])/, token: 'number' }, // shape dims: 1024x, ?x
  {
    regex:
      /(?:tensor|memref|vector|index|none|complex|tuple|bf16|f16|f32|f64|f80|f128|tf32|f8E\w+|[isu]\d+)\b/,
    token: 'typeName'
  },
  { regex: /(?:builtin\.)?module\b/, token: 'keyword' },
  { regex: /[a-z_][\w]*\.[\w.]+/, token: 'keyword' }, // dialect.op
  {
    regex:
      /(?:loc|attributes|dense|true|false|unit|to|step|iter_args|public|private|nested|x|y|z)\b/,
    token: 'atom'
  },
  { regex: NUMBER, token: 'number' },
  { regex: /->|=|:|\*/, token: 'operator' },
  { regex: /[{}()[\]<>]/, token: 'bracket' },
  { regex: /[a-zA-Z_][\w]*/, token: 'variableName' }
];

const LLVM_KEYWORDS = [
  'define', 'declare', 'global', 'constant', 'private', 'internal', 'external', 'linkonce',
  'linkonce_odr', 'weak', 'weak_odr', 'common', 'appending', 'extern_weak', 'dso_local',
  'unnamed_addr', 'local_unnamed_addr', 'addrspace', 'align', 'section', 'target',
  'datalayout', 'triple', 'source_filename', 'attributes', 'personality', 'type', 'to',
  'nuw', 'nsw', 'exact', 'fast', 'nnan', 'ninf', 'nsz', 'arcp', 'contract', 'afn', 'reassoc',
  'inbounds', 'volatile', 'atomic', 'unordered', 'monotonic', 'acquire', 'release', 'acq_rel',
  'seq_cst', 'syncscope', 'tail', 'musttail', 'notail', 'noundef', 'nonnull', 'readonly',
  'writeonly', 'nocapture', 'noalias', 'zeroinitializer', 'undef', 'poison', 'null', 'true',
  'false', 'eq', 'ne', 'ugt', 'uge', 'ult', 'ule', 'sgt', 'sge', 'slt', 'sle', 'oeq', 'ogt',
  'oge', 'olt', 'ole', 'one', 'ord', 'ueq', 'une', 'uno', 'x', 'asm', 'sideeffect', 'ptx_kernel'
];
const LLVM_INSTRUCTIONS = [
  'ret', 'br', 'switch', 'indirectbr', 'invoke', 'resume', 'unreachable', 'fneg', 'add',
  'fadd', 'sub', 'fsub', 'mul', 'fmul', 'udiv', 'sdiv', 'fdiv', 'urem', 'srem', 'frem', 'shl',
  'lshr', 'ashr', 'and', 'or', 'xor', 'extractelement', 'insertelement', 'shufflevector',
  'extractvalue', 'insertvalue', 'alloca', 'load', 'store', 'fence', 'cmpxchg', 'atomicrmw',
  'getelementptr', 'trunc', 'zext', 'sext', 'fptrunc', 'fpext', 'fptoui', 'fptosi', 'uitofp',
  'sitofp', 'ptrtoint', 'inttoptr', 'bitcast', 'addrspacecast', 'icmp', 'fcmp', 'phi',
  'select', 'call', 'freeze'
];

function words(list: string[]): RegExp {
  return new RegExp(`(?:${list.join('|')})\\b`);
}

/** LLVM IR as llvmlite prints it. */
export const llvmRules: Rule[] = [
  { regex: /;.*/, token: 'comment' },
  { regex: /c?"(?:[^"\\]|\\.)*"?/, token: 'string' },
  { regex: /^[\w.$-]+:/, sol: true, token: 'labelName' },
  { regex: /%(?:[-a-zA-Z$._][\w$.-]*|\d+|"(?:[^"\\]|\\.)*")/, token: 'variable-2' },
  { regex: /@(?:[-a-zA-Z$._][\w$.-]*|\d+|"(?:[^"\\]|\\.)*")/, token: 'def' },
  { regex: /!(?:[a-zA-Z$._][\w$.-]*|\d+)/, token: 'meta' },
  { regex: /#\d+/, token: 'attributeName' },
  {
    regex: /(?:i\d+|half|bfloat|float|double|fp128|x86_fp80|ppc_fp128|void|ptr|label|metadata|token|opaque)\b/,
    token: 'typeName'
  },
  { regex: words(LLVM_INSTRUCTIONS), token: 'keyword' },
  { regex: words(LLVM_KEYWORDS), token: 'atom' },
  { regex: /0x[KLMHR]?[0-9A-Fa-f]+/, token: 'number' },
  { regex: NUMBER, token: 'number' },
  { regex: /=|\*/, token: 'operator' },
  { regex: /[{}()[\]<>]/, token: 'bracket' },
  { regex: /[a-zA-Z_][\w.]*/, token: 'variableName' }
];

/** NVIDIA PTX. */
export const ptxRules: Rule[] = [
  { regex: /\/\/.*/, token: 'comment' },
  { regex: /\/\*/, token: 'comment', next: 'comment' },
  { regex: STRING, token: 'string' },
  { regex: /^\s*[$\w]+:/, sol: true, token: 'labelName' },
  { regex: /@!?%[\w.]+/, token: 'atom' }, // predicate guard
  { regex: /\.[a-zA-Z_][\w]*/, token: 'meta' }, // directive or state space (.reg, .entry, .loc)
  { regex: /%[\w.$]+/, token: 'variable-2' }, // registers, %tid.x
  { regex: /\$[\w$]+/, token: 'labelName' },
  { regex: /0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}/, token: 'number' }, // float literals
  { regex: NUMBER, token: 'number' },
  { regex: /[a-z][a-z0-9_]*(?:\.[\w]+)+/, token: 'keyword' }, // ld.global.v4.f32
  {
    regex: /(?:mov|add|sub|mul|mad|fma|div|rem|abs|neg|min|max|and|or|xor|not|shl|shr|setp|selp|set|cvt|cvta|ld|st|bra|ret|exit|bar|call|atom|red|vote|shfl|prmt|brev|clz|popc|sqrt|rsqrt|rcp|ex2|lg2|sin|cos|tanh|mma|wgmma|ldmatrix|cp|membar|fence|trap)\b/,
    token: 'keyword'
  },
  { regex: /[{}()[\]<>;,]/, token: 'bracket' },
  { regex: /[a-zA-Z_][\w]*/, token: 'variableName' }
];
const ptxComment: Rule[] = [
  { regex: /.*?\*\//, token: 'comment', next: 'start' },
  { regex: /.*/, token: 'comment' }
];

/** NVIDIA SASS as nvdisasm prints it. */
export const sassRules: Rule[] = [
  { regex: /\/\*[0-9a-fA-F]{4,}\*\//, token: 'comment' }, // instruction address
  { regex: /\/\*/, token: 'comment', next: 'comment' },
  { regex: /\/\/.*/, token: 'comment' },
  { regex: /^\s*\.?[\w.$]+:/, sol: true, token: 'labelName' },
  { regex: /@!?U?P(?:\d|T)\b/, token: 'atom' }, // predicate guard
  { regex: /(?:U?R\d+|U?RZ|U?P\d|U?PT|SR_[\w.]+|SRZ)\b/, token: 'variable-2' },
  { regex: /c\[0x[0-9a-fA-F]+\]/, token: 'propertyName' }, // constant bank
  { regex: /\.L_[\w]+/, token: 'labelName' },
  { regex: /\.[a-z_][\w]*/, token: 'meta' }, // directive
  { regex: /[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*/, token: 'keyword' }, // opcode and modifiers
  { regex: NUMBER, token: 'number' },
  { regex: /[[\]{}();,|!-]/, token: 'bracket' },
  { regex: /[a-zA-Z_][\w.]*/, token: 'variableName' }
];
const sassComment: Rule[] = [
  { regex: /.*?\*\//, token: 'comment', next: 'start' },
  { regex: /.*/, token: 'comment' }
];

export interface ILanguageSpec {
  name: string;
  displayName: string;
  mime: string;
  alias: string[];
  extensions: string[];
  parser: () => StreamParser<unknown>;
}

export const LANGUAGES: ILanguageSpec[] = [
  {
    name: 'mlir',
    displayName: 'MLIR (TTIR/TTGIR)',
    mime: 'text/x-mlir',
    alias: ['ttir', 'ttgir'],
    extensions: ['mlir', 'ttir', 'ttgir'],
    parser: () =>
      simpleMode({ start: mlirRules, languageData: { commentTokens: { line: '//' } } })
  },
  {
    name: 'llvm',
    displayName: 'LLVM IR',
    mime: 'text/x-llvm',
    alias: ['llir', 'll'],
    extensions: ['ll', 'llir'],
    parser: () =>
      simpleMode({ start: llvmRules, languageData: { commentTokens: { line: ';' } } })
  },
  {
    name: 'ptx',
    displayName: 'PTX',
    mime: 'text/x-ptx',
    alias: [],
    extensions: ['ptx'],
    parser: () =>
      simpleMode({
        start: ptxRules,
        comment: ptxComment,
        languageData: { commentTokens: { line: '//' } }
      })
  },
  {
    name: 'sass',
    displayName: 'NVIDIA SASS',
    mime: 'text/x-nvidia-sass',
    alias: ['nvsass', 'cuasm'],
    extensions: ['sass', 'cuasm'],
    parser: () =>
      simpleMode({
        start: sassRules,
        comment: sassComment,
        languageData: { commentTokens: { line: '//' } }
      })
  }
];
