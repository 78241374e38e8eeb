/**
 * The `application/vnd.kernellab.compile+json` payload, as kernellab/lab/bundle.py writes it
 * (schema: kernellab/lab/SCHEMA.md). Everything here is read defensively: a field that is
 * missing or of the wrong type is treated as absent, never trusted.
 */

export const MIME_TYPE = 'application/vnd.kernellab.compile+json';

/** One stage's text and, per line of it, the source line it came from (or null). */
export interface IStage {
  name: string;
  title: string;
  language: string;
  text: string;
  lines: (number | null)[];
}

export interface IPassRecord {
  name: string;
  stage: string;
  ir: string;
  changed: boolean;
  seconds: number;
  summary: string;
}

export interface IOccupancy {
  device?: string;
  blocks_per_sm?: number;
  warps_per_sm?: number;
  max_warps_per_sm?: number;
  occupancy?: number;
  limited_by?: string;
  limits?: { [key: string]: number };
  registers_known?: boolean;
}

export interface IMetadata {
  name?: string;
  signature?: string | null;
  constexprs?: { [key: string]: unknown };
  target?: string;
  registers?: number | null;
  spills?: number | null;
  shared?: number | null;
  threads_per_block?: number | null;
  num_warps?: number | null;
  num_stages?: number | null;
  num_ctas?: number | null;
  occupancy?: IOccupancy;
  hash?: string | null;
  [key: string]: unknown;
}

export interface ITimings {
  stages: { [stage: string]: number };
  total: number;
  cache_hit: boolean;
}

export interface IKernelBundle {
  version: number;
  name: string;
  target: string;
  source: { text: string; filename: string | null; first_line: number };
  stages: IStage[];
  passes: IPassRecord[];
  metadata: IMetadata;
  timings: ITimings;
  notes: string[];
}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function num(value: unknown, fallback = 0): number {
  return typeof value === 'number' && isFinite(value) ? value : fallback;
}

function lineNumbers(value: unknown, count: number): (number | null)[] {
  const raw = Array.isArray(value) ? value : [];
  const out: (number | null)[] = [];
  for (let i = 0; i < count; i++) {
    const v = raw[i];
    out.push(typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null);
  }
  return out;
}

/** Split text into lines the way Python's str.splitlines() does for \n and \r\n. */
export function splitLines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}

/**
 * Normalize untrusted JSON into an IKernelBundle. Throws only when the payload is not an
 * object at all; every other defect degrades to an empty or absent field.
 */
export function parseBundle(data: unknown): IKernelBundle {
  if (!isObject(data)) {
    throw new Error('kernellab bundle: expected a JSON object');
  }
  const source = isObject(data.source) ? data.source : {};
  const stages: IStage[] = [];
  for (const raw of Array.isArray(data.stages) ? data.stages : []) {
    if (!isObject(raw) || typeof raw.name !== 'string') {
      continue;
    }
    const text = str(raw.text);
    stages.push({
      name: raw.name,
      title: str(raw.title, raw.name.toUpperCase()),
      language: str(raw.language, 'text'),
      text,
      lines: lineNumbers(raw.lines, splitLines(text).length)
    });
  }
  const passes: IPassRecord[] = [];
  for (const raw of Array.isArray(data.passes) ? data.passes : []) {
    if (!isObject(raw)) {
      continue;
    }
    passes.push({
      name: str(raw.name, '?'),
      stage: str(raw.stage, 'ttir'),
      ir: str(raw.ir),
      changed: raw.changed === true,
      seconds: num(raw.seconds),
      summary: str(raw.summary)
    });
  }
  const timings = isObject(data.timings) ? data.timings : {};
  const stageTimes: { [stage: string]: number } = {};
  if (isObject(timings.stages)) {
    for (const [k, v] of Object.entries(timings.stages)) {
      if (typeof v === 'number' && isFinite(v)) {
        stageTimes[k] = v;
      }
    }
  }
  const metadata = isObject(data.metadata) ? (data.metadata as IMetadata) : {};
  return {
    version: num(data.version, 0),
    name: str(data.name, str(metadata.name, 'kernel')),
    target: str(data.target, str(metadata.target)),
    source: {
      text: str(source.text),
      filename: typeof source.filename === 'string' ? source.filename : null,
      first_line: num(source.first_line, 1)
    },
    stages,
    passes,
    metadata,
    timings: {
      stages: stageTimes,
      total: num(
        timings.total,
        Object.values(stageTimes).reduce((a, b) => a + b, 0)
      ),
      cache_hit: timings.cache_hit === true
    },
    notes: (Array.isArray(data.notes) ? data.notes : []).filter(
      (n): n is string => typeof n === 'string'
    )
  };
}

/** File extension for downloading a stage's text. */
export function stageFileExtension(stage: string): string {
  const known: { [stage: string]: string } = {
    source: 'py',
    ttir: 'ttir',
    ttgir: 'ttgir',
    llir: 'll',
    ptx: 'ptx',
    sass: 'sass',
    cubin: 'txt'
  };
  return known[stage] ?? 'txt';
}

/** Schema versions this renderer understands (kernellab/lab/SCHEMA.md). */
export const SUPPORTED_VERSIONS = [1];

/**
 * Language of a pass's IR: what the text looks like first (a pass list may end with LLVM or
 * PTX snapshots under a TTGIR stage), else the language of the stage it belongs to.
 */
export function passLanguage(ir: string, stage: string): string {
  const head = ir.slice(0, 4000);
  if (/^\s*\.(version|target)\s/m.test(head) || /^\s*\.(visible\s+)?\.entry\s/m.test(head)) {
    return 'ptx';
  }
  if (/^; ModuleID|^\s*define\s|^target (datalayout|triple)/m.test(head)) {
    return 'llvm';
  }
  if (/^\s*(builtin\.)?module\b|^#\w+ = #/m.test(head)) {
    return 'mlir';
  }
  return stageLanguage(stage);
}

/** Language of a pass's IR, from the stage it belongs to. */
export function stageLanguage(stage: string): string {
  const known: { [stage: string]: string } = {
    source: 'python',
    ttir: 'mlir',
    ttgir: 'mlir',
    llir: 'llvm',
    ptx: 'ptx',
    sass: 'sass'
  };
  return known[stage] ?? 'text';
}
