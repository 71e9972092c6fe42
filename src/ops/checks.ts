/** Validation helpers shared by the operators. Each throws a KernelError naming the input. */
import { KernelError, show } from '../errors.js';
import type { Tensor } from '../tensor.js';

export function fail(code: ConstructorParameters<typeof KernelError>[0], msg: string): never {
  throw new KernelError(code, msg);
}

/** Normalizes an axis in [−rank, rank) to [0, rank). */
/**
 * A FLOAT attribute (scale, softcap) is float32 in ONNX and in the kernels: its float32 value
 * must be finite (3.5e38 is Infinity there, and gave NaN outputs). Returns that value.
 */
export function finiteF32(x: unknown, what: string): number {
  const f = typeof x === 'number' ? Math.fround(x) : NaN;
  if (!Number.isFinite(f)) fail('INVALID_ATTRIBUTE', `${what}: expected a number finite in float32 (magnitude at most 3.4028235e38), got ${show(x)}`);
  return f;
}

export function normalizeAxis(axis: number, rank: number, what: string): number {
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) {
    fail('INVALID_ATTRIBUTE', `${what}: expected an axis in [${-rank}, ${rank - 1}] for rank ${rank}, got ${axis}`);
  }
  return axis < 0 ? axis + rank : axis;
}

export function requireRank(t: Tensor, ranks: number | readonly number[], what: string): void {
  const ok = typeof ranks === 'number' ? t.rank === ranks : ranks.includes(t.rank);
  if (!ok) fail('INVALID_SHAPE', `${what}: expected rank ${typeof ranks === 'number' ? ranks : ranks.join(' or ')}, got rank ${t.rank} (shape ${show([...t.shape])})`);
}

export function requireDtype(t: Tensor, dtypes: readonly string[], what: string): void {
  if (!dtypes.includes(t.dtype)) fail('INVALID_DTYPE', `${what}: expected ${dtypes.join(' or ')}, got ${t.dtype}`);
}

/** Reads an int32 / int64 tensor as safe JS numbers (int64 values outside ±2^53 are an error). */
export function readInts(t: Tensor, what: string): number[] {
  requireDtype(t, ['int32', 'int64'], what);
  const d = t.data as Int32Array | BigInt64Array;
  const out = new Array<number>(d.length);
  for (let i = 0; i < d.length; i++) {
    const v = d[i];
    const n = Number(v);
    if (typeof v === 'bigint' && !Number.isSafeInteger(n)) fail('INVALID_VALUE', `${what}[${i}]: ${v} is out of range`);
    out[i] = n;
  }
  return out;
}

/**
 * Reads cumulative lengths [B+1]: start at 0, never decrease, end at `total` (when given).
 * Returns the array of B+1 offsets.
 */
export function readCumulative(t: Tensor, batch: number, total: number | null, what: string): number[] {
  if (t.rank !== 1 || t.shape[0] !== batch + 1) {
    fail('INVALID_SHAPE', `${what}: expected shape [${batch + 1}] (batch + 1 cumulative offsets), got ${show([...t.shape])}`);
  }
  const v = readInts(t, what);
  if (v[0] !== 0) fail('INVALID_VALUE', `${what}: cumulative lengths must start at 0, got ${v[0]}`);
  for (let i = 1; i < v.length; i++) {
    if (v[i] < v[i - 1]) fail('INVALID_VALUE', `${what}: cumulative lengths must not decrease, got ${v[i - 1]} then ${v[i]} at index ${i}`);
  }
  if (total !== null && v[batch] !== total) fail('INVALID_VALUE', `${what}: cumulative lengths must end at ${total}, got ${v[batch]}`);
  return v;
}

export function product(dims: readonly number[], from = 0, to = dims.length): number {
  let n = 1;
  for (let i = from; i < to; i++) n *= dims[i];
  return n;
}
