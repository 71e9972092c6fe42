/**
 * Shared test helpers. Tests exercise the built package (dist/), exactly what users get.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import * as pkg from '../dist/index.js';

export const { KernelError, DTYPES, DTYPE_NAMES, TRT_ATTENTION_MIN_WORK } = pkg;

/**
 * init() for tests: with EK_DEBUG=1 (npm run test:debug) every instance runs in debug mode,
 * with canaries around every allocation checked after every operator call.
 */
export const DEBUG = process.env.EK_DEBUG === '1';
export function init(opts: Parameters<typeof pkg.init>[0] = {}): ReturnType<typeof pkg.init> {
  // EK_SIMD_WASM=file.wasm: that module instead of the simd build (checking that a test
  // fails on a deliberately broken kernel build; it must keep the simd build's static data)
  const alt = process.env.EK_SIMD_WASM;
  if (alt && (opts.build === undefined || opts.build === 'simd') && opts.wasm === undefined) opts = { ...opts, wasm: readFileSync(alt) };
  return pkg.init(DEBUG ? { debug: true, ...opts } : opts);
}
export type Kernels = pkg.Kernels;
export type Tensor = pkg.Tensor;
export type DType = pkg.DType;

const here = dirname(fileURLToPath(import.meta.url));
/** The whole upstream node-test suite of the six ONNX operators (scripts/upstream-conformance). */
export const UPSTREAM_DIR = join(here, 'conformance', 'upstream');
const SHARED_DIR = join(here, '..', '..', 'shared', 'conformance', 'onnx');
/**
 * The operators' own tests read ../shared/conformance/onnx beside the repository (the shared
 * sample, and any case added there); a clone without it falls back to the upstream suite kept
 * here, of which the sample is a part, so the tests never depend on a directory outside it.
 */
export const CONFORMANCE_DIR = existsSync(SHARED_DIR) ? SHARED_DIR : UPSTREAM_DIR;
/** Cases whose expected outputs come from onnx.reference, for spec corners the upstream suite lacks (scripts/reference-cases). */
export const REFERENCE_DIR = join(here, 'conformance', 'reference');

export interface ConformanceCase {
  file: string;
  name: string;
  op: string;
  opset: number;
  attributes: Record<string, unknown>;
  inputs: ({ name: string; dtype: string; shape: number[]; data: unknown[] } | null)[];
  outputs: ({ name: string; dtype: string; shape: number[]; data: unknown[] } | null)[];
}

/** Every conformance case whose file name starts with one of `prefixes`. */
export function conformanceCases(prefixes: string[], dir = CONFORMANCE_DIR): ConformanceCase[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json') && prefixes.some((p) => f.startsWith(p)))
    .sort()
    .map((f) => ({ file: f, ...JSON.parse(readFileSync(join(dir, f), 'utf8')) }));
}

/** Seeded pseudo-random numbers in [0, 1) (mulberry32): the tests' one generator of data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Raw bytes of a tensor, copied (for before/after comparisons). */
export function snapshot(t: Tensor): Uint8Array {
  return t.dtype === 'string' ? new TextEncoder().encode(JSON.stringify(t.data)) : t.bytes().slice();
}

/** Copy of the whole linear memory of an instance. */
export function memorySnapshot(ek: Kernels): Uint8Array {
  return new Uint8Array(ek.memory.buffer).slice();
}

/** Asserts that fn throws a KernelError with `code` whose message matches `pattern`. */
export function expectKernelError(fn: () => unknown, code: string, pattern?: RegExp): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err, 'expected a KernelError').toBeInstanceOf(KernelError);
  expect((err as InstanceType<typeof KernelError>).code).toBe(code);
  if (pattern) expect((err as Error).message).toMatch(pattern);
}

/** Decodes a float16 bit pattern. */
export function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Decodes a bfloat16 bit pattern. */
export function bf16ToF32(h: number): number {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, h << 16);
  return b.getFloat32(0);
}

/** Decoded numbers of a conformance tensor's data (bit patterns for float16/bfloat16 decoded). */
export function decodeValues(dtype: string, data: ArrayLike<unknown>): number[] {
  const out: number[] = [];
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    const n = typeof v === 'string' ? Number(v) : Number(v as number);
    out.push(dtype === 'float16' ? f16ToF32(n) : dtype === 'bfloat16' ? bf16ToF32(n) : n);
  }
  return out;
}

/**
 * Compares an output with a conformance expectation by the rules of
 * shared/conformance/README.md: floats |got − want| ≤ 1e-4 + 1e-3·|want|; float16 and
 * bfloat16 decoded with 1e-2 relative; integers, bool and float8 exactly; NaN matches NaN.
 */
export function expectConformant(got: { dtype: string; shape: readonly number[]; data: ArrayLike<unknown> }, want: NonNullable<ConformanceCase['outputs'][number]>, label: string): void {
  expect(got.dtype, `${label} dtype`).toBe(want.dtype);
  expect([...got.shape], `${label} shape`).toEqual(want.shape);
  const exact = !['float32', 'float64', 'float16', 'bfloat16'].includes(want.dtype);
  if (exact) {
    const g = Array.from(got.data as ArrayLike<unknown>, (v) => String(v));
    const w = Array.from(want.data, (v) => String(v));
    expect(g, label).toEqual(w);
    return;
  }
  const g = decodeValues(want.dtype, got.data);
  const w = decodeValues(want.dtype, want.data);
  expect(g.length, `${label} length`).toBe(w.length);
  const half = want.dtype === 'float16' || want.dtype === 'bfloat16';
  for (let i = 0; i < w.length; i++) {
    if (Number.isNaN(w[i])) {
      expect(Number.isNaN(g[i]), `${label}[${i}] NaN`).toBe(true);
      continue;
    }
    if (!Number.isFinite(w[i])) {
      expect(g[i], `${label}[${i}]`).toBe(w[i]);
      continue;
    }
    const tol = half ? 1e-2 * Math.abs(w[i]) + 1e-3 : 1e-4 + 1e-3 * Math.abs(w[i]);
    if (!(Math.abs(g[i] - w[i]) <= tol)) expect.fail(`${label}[${i}]: got ${g[i]}, want ${w[i]} (tolerance ${tol})`);
  }
}

/**
 * Runs one conformance case through ek.run with plain inputs and checks every expected
 * output. The case's output slots are asked for (options.outputs: true where it expects one,
 * null where it has none), as the node's output list does in ONNX: optional outputs such as
 * Attention's qk_matmul_output are computed only when asked for (DESIGN.md).
 */
export function expectConformanceCase(ek: Kernels, c: ConformanceCase): void {
  const inputs = c.inputs.map((t) => t && { dtype: t.dtype, shape: t.shape, data: t.data });
  const outs = ek.run(c.op, inputs as never, c.attributes, { outputs: c.outputs.map((o) => (o ? true : null)) });
  c.outputs.forEach((w, i) => w && expectConformant(outs[i] as never, w, `${c.name} output ${i}`));
  for (const o of outs) (o as { dispose?: () => void } | null)?.dispose?.();
}
