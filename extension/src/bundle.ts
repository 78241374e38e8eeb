/**
 * The `application/vnd.kernellab.compile+json` payload, as kernellab/lab/bundle.py writes it
 * (schema: kernellab/lab/SCHEMA.md). The panels come rendered in the bundle's text/html (see
 * markup.ts); the renderer reads from the JSON only what it needs to decide and to name files,
 * defensively: a missing or mistyped field is treated as absent, never trusted.
 */

export const MIME_TYPE = 'application/vnd.kernellab.compile+json';

/** Schema versions this renderer understands (kernellab/lab/SCHEMA.md). */
export const SUPPORTED_VERSIONS = [1];

export interface IBundleHead {
  version: number;
  name: string;
}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The schema version and the kernel's name; throws only when the payload is not an object. */
export function readBundle(data: unknown): IBundleHead {
  if (!isObject(data)) {
    throw new Error('kernellab bundle: expected a JSON object');
  }
  const version = typeof data.version === 'number' && Number.isInteger(data.version) ? data.version : 0;
  const name = typeof data.name === 'string' && data.name ? data.name : 'kernel';
  return { version, name };
}
