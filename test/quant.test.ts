/**
 * QuantizeLinear / DequantizeLinear (ONNX 25): conformance files, fast-check properties
 * against the plain reference (per-tensor, per-axis, blocked; every quantized type;
 * float32 / float16 / bfloat16 scales and inputs), round trips, bad inputs.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Kernels, REFERENCE_DIR, conformanceCases, expectConformanceCase, expectKernelError, init, memorySnapshot } from './helpers';
import {
  FORMATS, INT_RANGES, decodeMini, dequantizeValue, encodeF16, encodeMini, f32Bits, pack, quantizeValue, scaleIndex, unpack,
} from './ref/quant';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});

const Q_TYPES = [
  'int8', 'uint8', 'int16', 'uint16', 'int4', 'uint4', 'int2', 'uint2',
  'float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz', 'float4e2m1',
] as const;
type QType = (typeof Q_TYPES)[number];
type FType = 'float32' | 'float16' | 'bfloat16';
const isFloatQ = (t: string): boolean => t.startsWith('float');
const subBits = (t: string): number => (t === 'int4' || t === 'uint4' || t === 'float4e2m1' ? 4 : t === 'int2' || t === 'uint2' ? 2 : 0);

/** Encodes numbers as data of a float dtype (bit patterns for 16-bit types); returns data and the exact values. */
function floatData(dtype: FType, xs: number[]): { data: Float32Array | Uint16Array; values: number[] } {
  if (dtype === 'float32') {
    const d = Float32Array.from(xs);
    return { data: d, values: Array.from(d) };
  }
  const F = FORMATS[dtype];
  const codes = xs.map((x) => (dtype === 'float16' ? encodeF16(x, f32Bits(x)) : encodeMini(F, x, false)));
  return { data: Uint16Array.from(codes), values: codes.map((c) => decodeMini(F, c)) };
}

/** Codes of quantized values (numbers) → package data (packed for sub-byte types). */
function qData(t: QType, codes: number[]): Uint8Array | number[] {
  const b = subBits(t);
  if (b) return pack(codes, b);
  return codes;
}
function qValue(t: QType, code: number): number {
  if (isFloatQ(t)) return decodeMini(FORMATS[t], code);
  const b = subBits(t) || (t.endsWith('16') ? 16 : 8);
  if (t.startsWith('int') && code >= 2 ** (b - 1)) return code - 2 ** b;
  return code;
}
function outCodes(t: string, data: ArrayLike<number>, n: number): number[] {
  const b = subBits(t);
  if (b) return unpack(data, n, b);
  const arr = Array.from(data);
  return t === 'int8' || t === 'int16' ? arr : arr.map((v) => v);
}
function storedCode(t: QType, v: number): number {
  const b = subBits(t);
  if (b) return v & ((1 << b) - 1);
  return v;
}

describe('QuantizeLinear / DequantizeLinear conformance', () => {
  const cases = conformanceCases(['test_quantizelinear', 'test_dequantizelinear']);
  it('has conformance files', () => expect(cases.length).toBeGreaterThan(0));
  for (const c of cases) {
    it(c.file, () => {
      expectConformanceCase(ek, c);
    });
  }
});

describe('QuantizeLinear precision float64: onnx.reference cases (scripts/reference-cases)', () => {
  // x / y_scale divided in float64: int32 x beyond 2^24 is exact there (a float32 division
  // rounds it first); every output type, per-tensor and per-axis, both builds
  const cases = conformanceCases(['quantizelinear_precision_double'], REFERENCE_DIR);
  let eks: Kernels;
  beforeAll(async () => {
    eks = await init({ build: 'scalar' });
  });
  it('78 cases (3 x dtypes × 13 output types × 2 granularities)', () => expect(cases.length).toBe(78));
  for (const c of cases) {
    it(c.file, () => {
      expectConformanceCase(ek, c);
      expectConformanceCase(eks, c);
    });
  }
});

interface Setup {
  shape: number[];
  mode: 'tensor' | 'axis' | 'block';
  axis: number;
  block: number;
  scaleShape: number[];
}

const setupArb: fc.Arbitrary<Setup> = fc
  .record({
    shape: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 4 }),
    long: fc.integer({ min: 0, max: 3 }),
    longLen: fc.integer({ min: 7, max: 40 }),
    mode: fc.constantFrom('tensor' as const, 'axis' as const, 'block' as const),
    axisPick: fc.integer({ min: 0, max: 7 }),
    neg: fc.boolean(),
    block: fc.integer({ min: 1, max: 5 }),
  })
  .map(({ shape, long, longLen, mode, axisPick, neg, block }) => {
    const s = shape.slice();
    s[long % s.length] = longLen; // one long dimension: SIMD bodies and tails
    const r = s.length;
    const a = axisPick % r;
    const axis = neg ? a - r : a;
    let scaleShape: number[] = [];
    if (mode === 'axis') scaleShape = [s[a]];
    if (mode === 'block') scaleShape = s.map((d, i) => (i === a ? Math.ceil(d / block) : d));
    return { shape: s, mode, axis: a === axis ? axis : axis, block, scaleShape };
  });

const size = (s: number[]): number => s.reduce((a, b) => a * b, 1);
const normAxis = (axis: number, r: number): number => (axis < 0 ? axis + r : axis);

/** n random codes of quantized type t, and x's data for them (packed 4 / 2 bits, signed int8 / int16). */
function randomCodes(t: QType, n: number, next: () => number): { codes: number[]; xData: Uint8Array | number[] } {
  const bitsOf = subBits(t) || (t.endsWith('16') ? 16 : 8);
  const codes = Array.from({ length: n }, () => Math.floor(next() * 2 ** bitsOf));
  const xData = subBits(t) ? pack(codes, subBits(t)) : t === 'int8' ? codes.map((c) => (c >= 128 ? c - 256 : c)) : t === 'int16' ? codes.map((c) => (c >= 32768 ? c - 65536 : c)) : codes;
  return { codes, xData };
}

/** Whether DequantizeLinear output element `got` (dtype o's data form) is the reference value v rounded to o. */
function dqMatches(o: FType, v: number, got: number): boolean {
  const want = o === 'float32' ? v : o === 'float16' ? encodeF16(v, f32Bits(v)) : Number.isNaN(v) ? 0x7fc0 : encodeMini(FORMATS.bfloat16, v, false);
  return Number.isNaN(v) ? (o === 'float32' ? Number.isNaN(got) : Number.isNaN(decodeMini(FORMATS[o], got))) : Object.is(got, want) || got === want;
}

/**
 * Shapes over several chunks of the QuantizeLinear / DequantizeLinear chunk walk (src/ops/quant.ts
 * chunkPlan): rows longer than a chunk (blocks per chunk), shorter (rows per chunk), with an
 * inner dimension, and odd lengths that packed types cannot start on a byte.
 */
type ChunkSetup = { shape: number[]; axis: number; block: number };
const CHUNK_SETUPS: ChunkSetup[] = [
  { shape: [2, 17000], axis: 1, block: 32 }, // rows longer than a chunk: 512 blocks per chunk, each row's last block 8 long
  { shape: [1, 6000, 3], axis: 1, block: 32 }, // blocks with an inner dimension: scales per inner element
  { shape: [48, 400], axis: 0, block: 16 }, // the same on axis 0: two blocks of 6,400 per chunk
  { shape: [20, 1000], axis: 0, block: 0 }, // per axis, one row of 20,000: 16 axis entries per chunk
  { shape: [20, 1000], axis: 1, block: 32 }, // rows shorter than a chunk, 16 per chunk, scales 32 per row
  { shape: [20, 1489], axis: 1, block: 0 }, // odd rows, 11 per chunk; packed types: 8, so each chunk starts on a byte
  { shape: [2, 16385], axis: 1, block: 16 }, // odd rows longer than a chunk; packed: the second would start mid-byte, whole tensor
  { shape: [5, 4097], axis: 0, block: 0 }, // odd entries, one row longer than a chunk; packed: whole tensor
  // blocks longer than a chunk: pieces inside one block (their scales the block's)
  { shape: [2, 40000], axis: 1, block: 20000 }, // a chunk and a partial one per block, two blocks per row
  { shape: [2, 40000], axis: 1, block: 20001 }, // odd blocks; packed: the second block starts mid-byte, whole tensor
  { shape: [4, 3, 6000], axis: 1, block: 3 }, // blocks of 18,000 with an inner dimension: two positions per piece
  { shape: [3, 20000], axis: 0, block: 0 }, // per axis, one axis entry longer than a chunk: runs of its inner elements
  { shape: [3, 20000], axis: 0, block: 2 }, // blocked on axis 0 with 20,000 inner elements: runs, a scale per element
];
/** A CHUNK_SETUPS entry's scale shape: blocked along its axis, or one scale per axis entry. */
const chunkScaleShape = (st: ChunkSetup): number[] => (st.block ? st.shape.map((d, i) => (i === st.axis ? Math.ceil(d / st.block) : d)) : [st.shape[st.axis]]);

describe('QuantizeLinear against the reference (fast-check)', () => {
  it('per-tensor, per-axis and blocked; every quantized type; float32/float16/bfloat16 x and scales', () => {
    fc.assert(
      fc.property(
        setupArb,
        fc.constantFrom(...Q_TYPES),
        fc.constantFrom<FType>('float32', 'float16', 'bfloat16'),
        fc.constantFrom<FType>('float32', 'float16', 'bfloat16'),
        fc.boolean(),
        fc.integer({ min: 0, max: 1 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (st, out, xType, sType, withZp, saturate, seed) => {
          let rnd = seed;
          const next = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
          const n = size(st.shape);
          const ns = size(st.scaleShape);
          const range = isFloatQ(out) ? 600 : Number(INT_RANGES[out][1]) * 3;
          const xs = Array.from({ length: n }, (_, i) => (i % 17 === 5 ? 2.5 : i % 23 === 7 ? -0.5 : (next() * 2 - 1) * range));
          // half the scales powers of two (the kernels then multiply by the exact reciprocal)
          const ss = Array.from({ length: ns }, () => (next() < 0.5 ? 2 ** Math.floor(next() * 8 - 4) : 0.25 + next() * 4));
          const x = floatData(xType, xs);
          const s = floatData(sType, ss);
          const [lo, hi] = isFloatQ(out) ? [0, 0] : INT_RANGES[out].map(Number);
          const zps = Array.from({ length: ns }, () => (isFloatQ(out) ? 0 : Math.floor(lo + next() * (hi - lo + 1))));
          const zp = withZp ? { dtype: out, shape: st.scaleShape, data: qData(out, zps.map((z) => storedCode(out, z))) } : null;
          const attrs: Record<string, unknown> = { axis: st.axis, saturate, block_size: st.mode === 'block' ? st.block : 0 };
          if (!withZp) attrs.output_dtype = out;
          const [y] = ek.run('QuantizeLinear', [{ dtype: xType, shape: st.shape, data: x.data }, { dtype: sType, shape: st.scaleShape, data: s.data }, zp], attrs) as [{ dtype: string; data: Uint8Array; dispose(): void }];
          expect(y.dtype).toBe(out);
          const got = outCodes(out, y.data, n);
          y.dispose();
          const prec = xType === sType && xType !== 'float32' ? xType : 'float32';
          const a = normAxis(st.axis, st.shape.length);
          for (let i = 0; i < n; i++) {
            const si = scaleIndex(st.shape, i, st.scaleShape, a, st.mode === 'block' ? st.block : 0);
            const want = storedCode(out, quantizeValue(x.values[i], s.values[si], withZp ? zps[si] : null, out, saturate === 1, prec));
            if (got[i] !== want) {
              expect.fail(`${out} ${xType}/${sType} ${st.mode} shape ${st.shape} axis ${st.axis} block ${st.block} [${i}]: x ${x.values[i]} s ${s.values[si]} zp ${withZp ? zps[si] : 0} → got ${got[i]}, want ${want}`);
            }
          }
        },
      ),
      { seed: 4242, numRuns: 150 },
    );
  });

  // float16 / bfloat16 x (decoded to float32 first) and 4- / 2-bit outputs (codes packed
  // after) run a chunk of whole rows or blocks at a time: CHUNK_SETUPS, every such case,
  // against the reference element by element (the walk is host code: one build suffices)
  it('per-axis and blocked over several chunks: float16 / bfloat16 x and packed outputs', () => {
    let rnd = 1234;
    const next = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    for (const st of CHUNK_SETUPS) {
      const n = size(st.shape), a = st.axis;
      const scaleShape = chunkScaleShape(st);
      const ns = size(scaleShape);
      for (const out of Q_TYPES) {
        for (const xType of ['float32', 'float16', 'bfloat16'] as const) {
          if (xType === 'float32' && !subBits(out)) continue; // one pass already
          const range = isFloatQ(out) ? 600 : Number(INT_RANGES[out][1]) * 3;
          const x = floatData(xType, Array.from({ length: n }, () => (next() * 2 - 1) * range));
          const s = floatData('float32', Array.from({ length: ns }, () => 0.25 + next() * 4));
          const [lo, hi] = isFloatQ(out) ? [0, 0] : INT_RANGES[out].map(Number);
          const zps = Array.from({ length: ns }, () => (isFloatQ(out) ? 0 : Math.floor(lo + next() * (hi - lo + 1))));
          const zp = isFloatQ(out) ? null : { dtype: out, shape: scaleShape, data: qData(out, zps.map((z) => storedCode(out, z))) };
          const attrs: Record<string, unknown> = { axis: a, block_size: st.block, output_dtype: out };
          const [y] = ek.run('QuantizeLinear', [{ dtype: xType, shape: st.shape, data: x.data }, { dtype: 'float32', shape: scaleShape, data: s.data }, zp], attrs) as [{ data: Uint8Array; dispose(): void }];
          const got = outCodes(out, y.data, n);
          y.dispose();
          for (let i = 0; i < n; i++) {
            const si = scaleIndex(st.shape, i, scaleShape, a, st.block);
            const want = storedCode(out, quantizeValue(x.values[i], s.values[si], zp ? zps[si] : null, out, true, 'float32'));
            if (got[i] !== want) expect.fail(`${xType} → ${out} shape ${st.shape} axis ${a} block ${st.block} [${i}]: x ${x.values[i]} s ${s.values[si]} zp ${zps[si]} → got ${got[i]}, want ${want}`);
          }
        }
      }
    }
  });

  // Long runs: the kernels' vector loops (16 / 32 / 64 elements), their tails and the
  // 1024-element chunks of the float targets' quantize loop, per tensor (one run), per axis
  // (runs of one scale) and blocked along axis 0 (a scale per element of the run), in both
  // builds, for every quantized type; then DequantizeLinear of the codes it produced.
  it('long runs across vector and chunk boundaries: every type, both builds, quantize and dequantize', async () => {
    const eks = await init({ build: 'scalar' });
    const setups: { shape: number[]; axis: number; block: number; scaleShape: number[] }[] = [];
    for (const n of [1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 1023, 1024, 1025, 2100]) setups.push({ shape: [n], axis: 0, block: 0, scaleShape: [] });
    setups.push({ shape: [3, 1030], axis: 0, block: 0, scaleShape: [3] });
    setups.push({ shape: [3, 1100], axis: 0, block: 2, scaleShape: [2, 1100] });
    let rnd = 99;
    const next = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const special = [NaN, Infinity, -Infinity, -0, 0.5, -2.5, 1e30, -1e30, 3.5e-42];
    // the division at float16 / bfloat16 precision (the `precision` attribute) on a few of
    // the shapes: quantChunkRun's other quotient loops, for every type
    const cases = [
      ...setups.map((st) => ({ st, prec: 'float32' })),
      ...['float16', 'bfloat16'].flatMap((prec) => setups.filter((st) => [17, 1025, 2100, 3090, 3300].includes(size(st.shape))).map((st) => ({ st, prec }))),
    ];
    for (const k of [ek, eks]) {
      for (const out of Q_TYPES) {
        for (const { st, prec } of cases) {
          const n = size(st.shape), ns = size(st.scaleShape);
          const range = isFloatQ(out) ? 700 : Number(INT_RANGES[out][1]) * 3;
          const xs = Float32Array.from({ length: n }, (_, i) => (i % 29 === 3 ? special[i % special.length] : (next() * 2 - 1) * range));
          // per setup either powers of two (the exact-reciprocal path) or general scales
          const pow2 = next() < 0.5;
          const ss = Float32Array.from({ length: Math.max(ns, 1) }, () => (pow2 ? 2 ** Math.floor(next() * 6 - 3) : 0.3 + next() * 3)).subarray(0, ns || 1);
          const [lo, hi] = isFloatQ(out) ? [0, 0] : INT_RANGES[out].map(Number);
          const withZp = out === 'float4e2m1' || !isFloatQ(out);
          const zps = Array.from({ length: ns || 1 }, () => (isFloatQ(out) ? 0 : Math.floor(lo + next() * (hi - lo + 1))));
          const sShape = st.scaleShape;
          const zp = withZp ? { dtype: out, shape: sShape, data: qData(out, zps.map((z) => storedCode(out, z))) } : null;
          const attrs = { axis: st.axis, block_size: st.block };
          const qAttrs = prec === 'float32' ? attrs : { ...attrs, precision: prec };
          const [y] = k.run('QuantizeLinear', [{ dtype: 'float32', shape: st.shape, data: xs }, { dtype: 'float32', shape: sShape, data: ss }, zp], withZp ? qAttrs : { ...qAttrs, output_dtype: out }) as [{ dtype: string; data: ArrayLike<number>; dispose(): void }];
          const got = outCodes(out, y.data, n);
          const bytes = Array.from(y.data);
          y.dispose();
          const si = (i: number) => scaleIndex(st.shape, i, sShape, st.axis, st.block);
          for (let i = 0; i < n; i++) {
            const want = storedCode(out, quantizeValue(xs[i], ss[si(i)], withZp ? zps[si(i)] : null, out, true, prec));
            if (got[i] !== want) expect.fail(`${k.stats().build} QuantizeLinear → ${out} precision ${prec} shape ${st.shape} block ${st.block} [${i}]: x ${xs[i]} s ${ss[si(i)]} → got ${got[i]}, want ${want}`);
          }
          const [d] = k.run('DequantizeLinear', [{ dtype: out, shape: st.shape, data: subBits(out) ? Uint8Array.from(bytes) : bytes }, { dtype: 'float32', shape: sShape, data: ss }, zp], attrs) as [{ data: Float32Array; dispose(): void }];
          const dv = Array.from(d.data);
          d.dispose();
          for (let i = 0; i < n; i++) {
            const want = dequantizeValue(qValue(out, got[i]), ss[si(i)], withZp ? zps[si(i)] : 0);
            if (!Object.is(dv[i], want) && !(Number.isNaN(want) && Number.isNaN(dv[i]))) expect.fail(`${k.stats().build} DequantizeLinear ${out} shape ${st.shape} block ${st.block} [${i}]: code ${got[i]} → got ${dv[i]}, want ${want}`);
          }
        }
      }
    }
    eks.dispose();
  });

  it('rounds half to even and saturates at the integer ranges (NaN → the minimum)', () => {
    const xs = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000, -1000, NaN, Infinity, -Infinity];
    const cases: [string, number[]][] = [
      ['int8', [0, 2, 2, 0, -2, -2, 127, -128, -128, 127, -128]],
      ['uint8', [0, 2, 2, 0, 0, 0, 255, 0, 0, 255, 0]],
      ['int16', [0, 2, 2, 0, -2, -2, 1000, -1000, -32768, 32767, -32768]],
      ['uint16', [0, 2, 2, 0, 0, 0, 1000, 0, 0, 65535, 0]],
    ];
    for (const [t, want] of cases) {
      const [y] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [xs.length], data: xs }, { dtype: 'float32', shape: [], data: [1] }], { output_dtype: t }) as [{ data: ArrayLike<number> }];
      expect(Array.from(y.data), t).toEqual(want);
    }
    const [y4] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [5], data: [7.5, -8.5, 2.5, 100, -3] }, { dtype: 'float32', shape: [], data: [1] }], { output_dtype: 'int4' }) as [{ data: Uint8Array }];
    expect(unpack(y4.data, 5, 4)).toEqual([7, 8, 2, 7, 13]);
    const [y2] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [5], data: [0.5, 1.5, -5, 7, 2.4] }, { dtype: 'float32', shape: [], data: [1] }], { output_dtype: 'uint2' }) as [{ data: Uint8Array }];
    expect(unpack(y2.data, 5, 2)).toEqual([0, 2, 0, 3, 2]);
  });

  it('int32 scales (QuantizeLinear-25 T2): x / s in float32, per tensor and per axis', () => {
    const [y] = ek.run('QuantizeLinear', [{ dtype: 'int32', shape: [6], data: [10, -7, 5, 3, 1000, -1001] }, { dtype: 'int32', shape: [], data: [2] }], { output_dtype: 'int8' }) as [{ data: Int8Array; dispose(): void }];
    expect(Array.from(y.data)).toEqual([5, -4, 2, 2, 127, -128]); // −3.5 → −4, 2.5 → 2, 1.5 → 2: ties to even
    y.dispose();
    const [ya] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [2, 2], data: [9, 9, -9, -9] }, { dtype: 'int32', shape: [2], data: [3, 6] }, { dtype: 'uint8', shape: [2], data: [10, 20] }], { axis: 1 }) as [{ data: Uint8Array; dispose(): void }];
    expect(Array.from(ya.data)).toEqual([13, 22, 7, 18]); // 9/6 = 1.5 → 2, −9/6 = −1.5 → −2
    ya.dispose();
    expectKernelError(() => ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [1], data: [1] }, { dtype: 'int32', shape: [], data: [0] }]), 'INVALID_VALUE', /non-zero scale/);
  });

  it('float8 saturate=0 gives NaN / Inf beyond the range; float4e2m1 saturates', () => {
    const xs = [1000, -1000, 1e6, 3];
    const run = (t: string, saturate: number) => Array.from((ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [4], data: xs }, { dtype: 'float32', shape: [], data: [2] }], { output_dtype: t, saturate })[0] as { data: Uint8Array }).data);
    expect(run('float8e4m3fn', 1)).toEqual([0x7e, 0xfe, 0x7e, 0x3c]);
    expect(run('float8e4m3fn', 0)).toEqual([0x7f, 0xff, 0x7f, 0x3c]);
    expect(run('float8e5m2', 0)).toEqual([0x60, 0xe0, 0x7c, 0x3e]);
    expect(run('float8e4m3fnuz', 0)).toEqual([0x80, 0x80, 0x80, 0x44]);
    expect(unpack(run('float4e2m1', 0), 4, 4)).toEqual([7, 15, 7, 3]);
  });

  it('float16 / bfloat16 division precision when x and the scale share it; precision attribute overrides', () => {
    // 1537 / 0.75 = 2049.33…: float32 rounds it to 2049, float16 (ulp 2 there) to 2050
    const x = floatData('float16', [1537, -1537]);
    const s = floatData('float16', [0.75]);
    const [y] = ek.run('QuantizeLinear', [{ dtype: 'float16', shape: [2], data: x.data }, { dtype: 'float16', shape: [], data: s.data }], { output_dtype: 'int16' }) as [{ data: Int16Array }];
    expect(Array.from(y.data)).toEqual([2050, -2050]);
    const [y32] = ek.run('QuantizeLinear', [{ dtype: 'float16', shape: [2], data: x.data }, { dtype: 'float16', shape: [], data: s.data }], { output_dtype: 'int16', precision: 'float32' }) as [{ data: Int16Array }];
    expect(Array.from(y32.data)).toEqual([2049, -2049]);
    const x32 = [1537.5];
    const [a] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [1], data: x32 }, { dtype: 'float32', shape: [], data: [1] }], { output_dtype: 'int16' }) as [{ data: Int16Array }];
    expect(a.data[0]).toBe(1538);
    const [b] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [1], data: x32 }, { dtype: 'float32', shape: [], data: [1] }], { output_dtype: 'int16', precision: 'bfloat16' }) as [{ data: Int16Array }];
    expect(b.data[0]).toBe(1536);
    const [c] = ek.run('QuantizeLinear', [{ dtype: 'int32', shape: [3], data: [300, -7, 12] }, { dtype: 'float32', shape: [], data: [2] }], { output_dtype: 'int8' }) as [{ data: Int8Array }];
    expect(Array.from(c.data)).toEqual([127, -4, 6]);
  });
});

describe('DequantizeLinear against the reference (fast-check)', () => {
  it('per-tensor, per-axis and blocked; every quantized type; float32/float16/bfloat16 scales and outputs', () => {
    fc.assert(
      fc.property(
        setupArb,
        fc.constantFrom(...Q_TYPES),
        fc.constantFrom<FType>('float32', 'float16', 'bfloat16'),
        fc.option(fc.constantFrom<FType>('float32', 'float16', 'bfloat16'), { nil: undefined }),
        fc.boolean(),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (st, t, sType, outType, withZp, seed) => {
          let rnd = seed;
          const next = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
          const n = size(st.shape);
          const ns = size(st.scaleShape);
          const { codes, xData } = randomCodes(t, n, next);
          const s = floatData(sType, Array.from({ length: ns }, () => (next() - 0.3) * 8));
          const [lo, hi] = isFloatQ(t) ? [0, 0] : INT_RANGES[t].map(Number);
          const zps = Array.from({ length: ns }, () => (isFloatQ(t) ? 0 : Math.floor(lo + next() * (hi - lo + 1))));
          const zp = withZp ? { dtype: t, shape: st.scaleShape, data: qData(t, zps.map((z) => storedCode(t, z))) } : null;
          const attrs: Record<string, unknown> = { axis: st.axis, block_size: st.mode === 'block' ? st.block : 0 };
          if (outType) attrs.output_dtype = outType;
          const [y] = ek.run('DequantizeLinear', [{ dtype: t, shape: st.shape, data: xData }, { dtype: sType, shape: st.scaleShape, data: s.data }, zp], attrs) as [{ dtype: string; data: ArrayLike<number>; dispose(): void }];
          const o = outType ?? sType;
          expect(y.dtype).toBe(o);
          const got = Array.from(y.data);
          y.dispose();
          const a = normAxis(st.axis, st.shape.length);
          for (let i = 0; i < n; i++) {
            const si = scaleIndex(st.shape, i, st.scaleShape, a, st.mode === 'block' ? st.block : 0);
            const v = dequantizeValue(qValue(t, codes[i]), s.values[si], withZp ? zps[si] : 0);
            if (!dqMatches(o, v, got[i])) expect.fail(`${t} → ${o} ${st.mode} shape ${st.shape} axis ${st.axis} [${i}]: code ${codes[i]} s ${s.values[si]} zp ${withZp ? zps[si] : 0} → got ${got[i]}, want ${v} in ${o}`);
          }
        },
      ),
      { seed: 777, numRuns: 150 },
    );
  });

  // A per-tensor DequantizeLinear from a type the kernels decode first (not int8 / uint8 /
  // e4m3fn) runs in chunks of 16,384 elements: lengths over several chunks and a tail, into
  // float32 and into the 16-bit outputs, both builds, every such type, codes and zero points
  // drawn at random, against the reference element by element.
  it('per-tensor runs over several decode chunks: every decoded type, every output, both builds', async () => {
    const eks = await init({ build: 'scalar' });
    let rnd = 4711;
    const next = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const n = 2 * 16384 + 8 * 37 + 5;
    for (const k of [ek, eks]) {
      for (const t of Q_TYPES.filter((q) => q !== 'int8' && q !== 'uint8' && q !== 'float8e4m3fn')) {
        for (const [sType, outType] of [['float32', undefined], ['float16', undefined], ['float32', 'bfloat16']] as const) {
          const { codes, xData } = randomCodes(t, n, next);
          const s = floatData(sType, [(next() - 0.3) * 8]);
          const [lo, hi] = isFloatQ(t) ? [0, 0] : INT_RANGES[t].map(Number);
          const z = isFloatQ(t) ? 0 : Math.floor(lo + next() * (hi - lo + 1));
          const zp = isFloatQ(t) ? null : { dtype: t, shape: [], data: qData(t, [storedCode(t, z)]) };
          const [y] = k.run('DequantizeLinear', [{ dtype: t, shape: [n], data: xData }, { dtype: sType, shape: [], data: s.data }, zp], outType ? { output_dtype: outType } : {}) as [{ data: ArrayLike<number>; dispose(): void }];
          const o = outType ?? sType;
          const got = Array.from(y.data);
          y.dispose();
          for (let i = 0; i < n; i++) {
            const v = dequantizeValue(qValue(t, codes[i]), s.values[0], z);
            if (!dqMatches(o, v, got[i])) expect.fail(`${k.stats().build} ${t} → ${o} [${i}]: code ${codes[i]} s ${s.values[0]} zp ${z} → got ${got[i]}, want ${v} in ${o}`);
          }
        }
      }
    }
    eks.dispose();
  });

  // Per-axis and blocked DequantizeLinear into a 16-bit output runs a chunk of whole rows or
  // whole blocks at a time (src/ops/quant.ts dqChunks); from a decoded type into float32 it
  // decodes x into y a chunk at a time, then scales y in place: shapes whose
  // rows span several chunks (blocks per chunk, last block partial), whose rows are shorter
  // than a chunk (rows per chunk), with an inner dimension (scales per inner element), and an
  // odd row length that packed types cannot start on a byte (the whole-tensor path) — every
  // type, float32 and 16-bit outputs, against the reference element by element (the walk is
  // host code: one build suffices).
  it('per-axis and blocked over several chunks: rows or blocks per chunk, every type, every output', () => {
    let rnd = 9001;
    const next = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    for (const st of CHUNK_SETUPS) {
      const n = size(st.shape);
      const a = st.axis;
      const scaleShape = chunkScaleShape(st);
      const ns = size(scaleShape);
      for (const t of Q_TYPES) {
        for (const [sType, outType] of [['float32', undefined], ['float32', 'float16']] as const) {
          // int8 / uint8 / e4m3fn into float32 is one pass already: covered by the property test
          if (outType === undefined && (t === 'int8' || t === 'uint8' || t === 'float8e4m3fn')) continue;
          const { codes, xData } = randomCodes(t, n, next);
          const s = floatData(sType, Array.from({ length: ns }, () => (next() - 0.3) * 8));
          const [lo, hi] = isFloatQ(t) ? [0, 0] : INT_RANGES[t].map(Number);
          const zps = Array.from({ length: ns }, () => (isFloatQ(t) ? 0 : Math.floor(lo + next() * (hi - lo + 1))));
          const zp = isFloatQ(t) ? null : { dtype: t, shape: scaleShape, data: qData(t, zps.map((z) => storedCode(t, z))) };
          const attrs: Record<string, unknown> = { axis: a, block_size: st.block };
          if (outType) attrs.output_dtype = outType;
          const [y] = ek.run('DequantizeLinear', [{ dtype: t, shape: st.shape, data: xData }, { dtype: sType, shape: scaleShape, data: s.data }, zp], attrs) as [{ data: ArrayLike<number>; dispose(): void }];
          const o = outType ?? sType;
          const got = Array.from(y.data);
          y.dispose();
          for (let i = 0; i < n; i++) {
            const si = scaleIndex(st.shape, i, scaleShape, a, st.block);
            const v = dequantizeValue(qValue(t, codes[i]), s.values[si], zps[si]);
            if (!dqMatches(o, v, got[i])) expect.fail(`${t} → ${o} shape ${st.shape} axis ${a} block ${st.block} [${i}]: code ${codes[i]} s ${s.values[si]} zp ${zps[si]} → got ${got[i]}, want ${v} in ${o}`);
          }
        }
      }
    }
  });

  it('QuantizeLinear / DequantizeLinear of a large blocked int4 tensor need scratch for a chunk, not for the tensor', async () => {
    // [1024, 4096] int4, block 32: a float32 copy of x would be 16 MiB, its unpacked codes 4 MiB
    for (const outType of ['float32', 'float16', 'bfloat16']) {
      // a fresh instance each time: the scratch area grows by doubling across calls
      const k = await init();
      const x = k.tensor('int4', [1024, 4096]), s = k.tensor('float32', [1024, 128], new Float32Array(1024 * 128).fill(0.5));
      const [y] = k.run('DequantizeLinear', [x, s], { axis: 1, block_size: 32, output_dtype: outType });
      y.dispose();
      // room for the 131,072 scales and zero points as float32 (1 MiB), the scales' decode
      // buffer (128 KiB) and the chunk buffers (80 KiB); the whole-tensor buffers took 5.1 MiB
      // (float32) and 21 MiB (16-bit outputs)
      expect(k.stats().scratchBytes, outType).toBeLessThan(1.5 * (1 << 20));
      k.dispose();
    }
    // and back: QuantizeLinear from float16 into int4 (a float32 copy of x and a byte per
    // code took 21 MiB)
    const k = await init();
    const x = k.tensor('float16', [1024, 4096]), s = k.tensor('float32', [1024, 128], new Float32Array(1024 * 128).fill(0.5));
    const [y] = k.run('QuantizeLinear', [x, s], { axis: 1, block_size: 32, output_dtype: 'int4' });
    y.dispose();
    expect(k.stats().scratchBytes, 'QuantizeLinear float16 → int4').toBeLessThan(1.5 * (1 << 20));
    k.dispose();
    // blocks longer than a chunk, and per-axis slices longer than one: pieces of a block, not
    // a float32 copy of x (16 MiB here)
    for (const [shape, axis, block, sShape] of [[[64, 65536], 1, 65536, [64, 1]], [[64, 65536], 0, 0, [64]], [[64, 65536], 0, 16, [4, 65536]]] as const) {
      for (const op of ['DequantizeLinear', 'QuantizeLinear']) {
        // a fresh instance per op: the scratch area grows by doubling across calls
        const m = await init();
        const x = m.tensor(op === 'DequantizeLinear' ? 'int4' : 'float16', [...shape]);
        const sc = m.tensor('float32', [...sShape], new Float32Array(sShape.reduce((a, b) => a * b, 1)).fill(0.5));
        m.run(op, [x, sc], { axis, block_size: block, output_dtype: op === 'DequantizeLinear' ? 'float16' : 'int4' })[0]!.dispose();
        // the scales and zero points (2.3 MiB for the 262,144 of the last case) and the chunk buffers
        expect(m.stats().scratchBytes, `${op} ${shape} axis ${axis} block ${block}`).toBeLessThan(3 << 20);
        m.dispose();
      }
    }
  });

  it('quantize then dequantize stays within half a step for in-range values', () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ min: -100, max: 100, noNaN: true }), { minLength: 1, maxLength: 70 }),
        fc.float({ min: Math.fround(0.5), max: Math.fround(2), noNaN: true }),
        fc.integer({ min: -20, max: 20 }),
        (xs, s, z) => {
          const [q] = ek.run('QuantizeLinear', [{ dtype: 'float32', shape: [xs.length], data: xs }, { dtype: 'float32', shape: [], data: [s] }, { dtype: 'int8', shape: [], data: [z] }]);
          const [d] = ek.run('DequantizeLinear', [q, { dtype: 'float32', shape: [], data: [s] }, { dtype: 'int8', shape: [], data: [z] }]) as [{ data: Float32Array; dispose(): void }];
          xs.forEach((x, i) => {
            const clamped = Math.min((127 - z) * s, Math.max((-128 - z) * s, x));
            expect(Math.abs(d.data[i] - clamped)).toBeLessThanOrEqual(s / 2 + 1e-4 * Math.abs(x) + 1e-6);
          });
          (q as { dispose(): void }).dispose();
          d.dispose();
        },
      ),
      { seed: 99, numRuns: 100 },
    );
  });
});

describe('QuantizeLinear / DequantizeLinear bad input: KernelError, nothing written', () => {
  it('rejects each invalid input with memory unchanged', () => {
    const x = ek.tensor('float32', [2, 3, 4], Array.from({ length: 24 }, (_, i) => i - 12));
    const s3 = ek.tensor('float32', [3], [1, 2, 3]);
    const s4 = ek.tensor('float32', [4], [1, 2, 3, 4]);
    const s0 = ek.tensor('float32', [], [0]);
    const sNaN = ek.tensor('float32', [], [NaN]);
    const sInf = ek.tensor('float16', [], [0x7c00]);
    const s1 = ek.tensor('float32', [], [1]);
    const zp8 = ek.tensor('int8', [], [0]);
    const zpu3 = ek.tensor('uint8', [2], [0, 0]);
    const zpf8 = ek.tensor('float8e4m3fn', [], [0x38]);
    const zpf8uz = ek.tensor('float8e4m3fnuz', [], [0x80]);
    const sb = ek.tensor('float32', [2, 2, 4], Array(16).fill(1));
    const sb2 = ek.tensor('float32', [2, 3, 3], Array(18).fill(1));
    const xi = ek.tensor('int8', [2, 3, 4]);
    const xd = ek.tensor('float64', [2]);
    const sD = ek.tensor('float64', [], [1]);
    const y = ek.tensor('uint8', [2, 3, 4]);
    const yBad = ek.tensor('int8', [2, 3, 4]);
    const before = memorySnapshot(ek);
    const live = ek.stats().tensorsLive;
    const Q = 'QuantizeLinear', DQ = 'DequantizeLinear';
    expectKernelError(() => ek.run(Q, [x, s4], { axis: 1 }), 'INVALID_SHAPE', /y_scale.*3.*4/);
    expectKernelError(() => ek.run(Q, [x, s3], { axis: 3 }), 'INVALID_ATTRIBUTE', /axis/);
    expectKernelError(() => ek.run(Q, [x, s3], { axis: 2 }), 'INVALID_SHAPE', /y_scale/);
    expectKernelError(() => ek.run(Q, [x, sb], { axis: 1, block_size: 1 }), 'INVALID_SHAPE', /y_scale.*ceil\(3 \/ block_size 1\) = 3/);
    expectKernelError(() => ek.run(Q, [x, sb2], { axis: 2, block_size: 1 }), 'INVALID_SHAPE', /dimension 2/);
    expectKernelError(() => ek.run(Q, [x, sb2], { axis: 2, block_size: 2 }), 'INVALID_SHAPE', /y_scale/);
    expectKernelError(() => ek.run(Q, [x, s3], { axis: 1, block_size: -1 }), 'INVALID_ATTRIBUTE', /block_size/);
    expectKernelError(() => ek.run(Q, [x, s0]), 'INVALID_VALUE', /non-zero/);
    expectKernelError(() => ek.run(Q, [x, sNaN]), 'INVALID_VALUE', /finite/);
    expectKernelError(() => ek.run(Q, [x, sInf]), 'INVALID_VALUE', /finite/);
    expectKernelError(() => ek.run(DQ, [xi, sInf]), 'INVALID_VALUE', /finite/);
    expectKernelError(() => ek.run(Q, [x, s1, zp8], { output_dtype: 'uint8' }), 'INVALID_DTYPE', /output_dtype/);
    expectKernelError(() => ek.run(Q, [x, s1, zpu3]), 'INVALID_SHAPE', /y_zero_point/);
    expectKernelError(() => ek.run(Q, [x, s1, zpf8]), 'INVALID_VALUE', /zero point/);
    expectKernelError(() => ek.run(Q, [x, s1, zpf8uz]), 'INVALID_VALUE', /zero point/);
    expectKernelError(() => ek.run(Q, [x, s1], { output_dtype: 'int32' }), 'INVALID_DTYPE', /quantized type/);
    expectKernelError(() => ek.run(Q, [x, s1], { output_dtype: 'nope' }), 'INVALID_ATTRIBUTE', /output_dtype/);
    expectKernelError(() => ek.run(Q, [x, s1], { saturate: 3 }), 'INVALID_ATTRIBUTE', /saturate/);
    expectKernelError(() => ek.run(Q, [x, s1], { precision: 'int8' }), 'INVALID_ATTRIBUTE', /precision/);
    expectKernelError(() => ek.run(Q, [xd, s1]), 'INVALID_DTYPE', /input x/);
    expectKernelError(() => ek.run(Q, [x, sD]), 'INVALID_DTYPE', /y_scale/);
    expectKernelError(() => ek.run(Q, [x, s1], {}, { outputs: [yBad] }), 'INVALID_DTYPE', /outputs\[0\]/);
    expectKernelError(() => ek.run(DQ, [xi, s1, zpu3]), 'INVALID_DTYPE', /x_zero_point/);
    expectKernelError(() => ek.run(DQ, [x, s1]), 'INVALID_DTYPE', /input x/);
    expectKernelError(() => ek.run(DQ, [xi, s1], { output_dtype: 'int8' }), 'INVALID_DTYPE', /output_dtype/);
    expectKernelError(() => ek.run(DQ, [xi, s4], { axis: 1 }), 'INVALID_SHAPE', /x_scale/);
    expect(Buffer.from(memorySnapshot(ek)).equals(Buffer.from(before))).toBe(true);
    expect(ek.stats().tensorsLive).toBe(live);
    // and a valid call into a given output works
    ek.run(Q, [x, s1], {}, { outputs: [y] });
    expect(Array.from(y.data as Uint8Array).slice(10, 15)).toEqual([0, 0, 0, 1, 2]);
    for (const t of [x, s3, s4, s0, sNaN, sInf, s1, zp8, zpu3, zpf8, zpf8uz, sb, sb2, xi, xd, sD, y, yBad]) t.dispose();
  });

  it('a scalar x with a per-axis scale names the scale, not an empty axis range', () => {
    const x = ek.tensor('float32', [], [1]), s = ek.tensor('float32', [3], [1, 1, 1]);
    expectKernelError(() => ek.run('QuantizeLinear', [x, s], { axis: 1 }), 'INVALID_SHAPE', /y_scale: a scalar x takes a per-tensor scale/);
    x.dispose(); s.dispose();
  });

  it('a wrong output fails before the scratch area grows: memory and stats stay as they were', async () => {
    // int32 x needs a float32 copy of itself in scratch (4 MiB here)
    const e = await init();
    const x = e.tensor('int32', [1 << 20]), s = e.tensor('float32', [], [1]);
    const yBad = e.tensor('int8', [1 << 20]), yBadF = e.tensor('float16', [1 << 20]);
    const xq = e.tensor('uint8', [1 << 20]);
    const before = e.stats();
    expectKernelError(() => e.run('QuantizeLinear', [x, s], {}, { outputs: [yBad] }), 'INVALID_DTYPE', /outputs\[0\]/);
    expectKernelError(() => e.run('DequantizeLinear', [xq, s], {}, { outputs: [yBadF] }), 'INVALID_DTYPE', /outputs\[0\]/);
    expect(e.stats()).toEqual(before);
    e.dispose();
  });
});

describe('QuantizeLinear / DequantizeLinear: block_size past the axis', () => {
  // any block_size >= D is one (short) block per row; the kernels take an i32 block size, and
  // 2^31 trapped (zeroing tensors), 2^32 divided by zero, 2^32 + 1 read scales past their end
  it.each([3, 4, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 32 + 1, Number.MAX_SAFE_INTEGER])('block_size %d gives the one-block result (both builds)', async (B) => {
    const scalar = await init({ build: 'scalar' });
    for (const e of [ek, scalar]) {
      const x = e.tensor('float32', [2, 3], [10, 20, 30, 40, 50, 60]), s = e.tensor('float32', [2, 1], [10, 0.5]);
      const y = e.run('QuantizeLinear', [x, s], { axis: 1, block_size: B })[0]!;
      expect(Array.from(y.data as Uint8Array)).toEqual([1, 2, 3, 80, 100, 120]);
      const z = e.run('DequantizeLinear', [y, s], { axis: 1, block_size: B })[0]!;
      expect(Array.from(z.data as Float32Array)).toEqual([10, 20, 30, 40, 50, 60]);
      for (const t of [x, s, y, z]) t.dispose();
    }
    scalar.dispose();
  });
});
