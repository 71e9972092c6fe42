/**
 * Every failure the package reports is a KernelError with a stable `code`. Messages name
 * the input or attribute, what was expected and what was given.
 */
export const ERROR_CODES = [
  'UNKNOWN_OP', // opType not in the registry
  'MISSING_INPUT', // a required input slot is null / undefined
  'INVALID_DTYPE', // a dtype that the operator (or the package) does not take here
  'INVALID_SHAPE', // rank or dimension mismatch, data length ≠ shape
  'INVALID_VALUE', // an index, length or scalar out of its allowed range
  'INVALID_ATTRIBUTE', // unknown attribute name, wrong type or unknown value
  'INVALID_ARGUMENT', // misuse of the API itself (bad options, foreign tensors …)
  'ALIASING', // an output overlaps an input or another output
  'DISPOSED', // a disposed tensor or instance was used
  'OUT_OF_MEMORY', // the arena cannot grow within maximumMemory
  'UNAVAILABLE', // init(): the package's own build could not be read or compiled here (no file, no permission)
  'INTERNAL', // debug mode: a kernel wrote outside its outputs (a bug in this package)
] as const;

export type KernelErrorCode = (typeof ERROR_CODES)[number];

export class KernelError extends Error {
  readonly code: KernelErrorCode;
  constructor(code: KernelErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = 'KernelError';
    this.code = code;
  }
}

/** Formats a value for an error message: shapes as [a,b], strings quoted. */
/** Unknown option names are errors (a misspelled `windw` or `casual` must not be ignored). */
export function knownOptions(opts: object, allowed: readonly string[], what: string): void {
  for (const key in opts) {
    if (!allowed.includes(key)) throw new KernelError('INVALID_ARGUMENT', `${what}: unknown option ${show(key)} (expected ${allowed.join(', ')})`);
  }
}

export function show(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(show).join(',')}]`;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}`;
  if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${(v as unknown as ArrayLike<unknown>).length})`;
  try {
    return String(v);
  } catch {
    return Object.prototype.toString.call(v); // no toString (a null-prototype object, wasm exports)
  }
}
