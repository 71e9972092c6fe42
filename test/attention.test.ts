/**
 * Attention operators against the float64 reference (test/ref/attention.ts) and the ONNX
 * conformance files. Properties cover forms × causal kinds × GQA ratios × masks × head
 * sizes (non-multiples of 4) × lengths (0 and 1 query rows, kv lengths shorter than the
 * padded capacity, lengths across the 64-key blocks and the 32-row tiles), in the SIMD and
 * the scalar build.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { bf16ToF32, conformanceCases, expectConformant, f16ToF32, init, rng, type Kernels, type Tensor } from './helpers';
import { type Plain, type RefOut, decode, refOnnx, refTrt } from './ref/attention';
import { toF16Bits } from './ref/scan';

let ek: Kernels;
let eks: Kernels;
beforeAll(async () => {
  ek = await init();
  eks = await init({ build: 'scalar' });
});

// ---- data -------------------------------------------------------------------------------------


/** Random tensor data in the dtype's data form, values about [−1.5, 1.5]. */
export function randomData(dtype: string, n: number, r: () => number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = r() < 0.5 ? 1 : 0;
    if (dtype === 'float16') out.push((s << 15) | ((10 + Math.floor(r() * 6)) << 10) | Math.floor(r() * 1024));
    else if (dtype === 'bfloat16') out.push((s << 15) | ((122 + Math.floor(r() * 6)) << 7) | Math.floor(r() * 128));
    else if (dtype === 'float64') out.push(r() * 3 - 1.5); // not float32 values: the kernel's rounding shows
    else out.push(Math.fround((r() * 3 - 1.5)));
  }
  return out;
}

function plain(dtype: string, shape: number[], r: () => number): Plain {
  return { dtype, shape, data: randomData(dtype, shape.reduce((a, x) => a * x, 1), r) };
}

function maskPlain(kind: string, dims: number[], r: () => number): Plain {
  const n = dims.reduce((a, x) => a * x, 1);
  if (kind === 'bool') return { dtype: 'bool', shape: dims, data: Array.from({ length: n }, () => (r() < 0.8 ? 1 : 0)) };
  if (kind === 'int') {
    // integer masks are additive too (ONNX Attention's U; TRT: "other types are added")
    const dtype = ['int8', 'int32', 'int64', 'uint8'][Math.floor(r() * 4)];
    const vals = Array.from({ length: n }, () => Math.floor(r() * 5) - (dtype === 'uint8' ? 0 : 2));
    return { dtype, shape: dims, data: dtype === 'int64' ? vals.map(String) : vals } as Plain;
  }
  return { dtype: 'float32', shape: dims, data: Array.from({ length: n }, () => (r() < 0.1 ? -Infinity : Math.fround(r() * 4 - 2))) };
}

/** Compares a package output with the reference: |got − want| ≤ tol·(1 + |want|) + slack. */
function expectClose(got: { dtype: string; shape: readonly number[]; data: Plain['data'] }, want: RefOut, label: string, extra = 0): void {
  expect(got.dtype, `${label} dtype`).toBe(want.dtype);
  expect([...got.shape], `${label} shape`).toEqual(want.shape);
  const g = decode({ dtype: got.dtype, shape: [...got.shape], data: got.data });
  const tol = want.dtype === 'float16' ? 2e-3 : want.dtype === 'bfloat16' ? 1e-2 : 2e-4;
  for (let i = 0; i < want.values.length; i++) {
    const w = want.values[i];
    if (w === -Infinity || w === Infinity) {
      expect(g[i], `${label}[${i}]`).toBe(w);
      continue;
    }
    const t = tol * (1 + Math.abs(w)) + want.slack[i] + extra;
    if (!(Math.abs(g[i] - w) <= t)) expect.fail(`${label}[${i}]: got ${g[i]}, want ${w} (tolerance ${t})`);
  }
}

// ---- conformance ----------------------------------------------------------------------------

describe('ONNX conformance (every test_attention_*.json)', () => {
  const cases = conformanceCases(['test_attention_']);
  it('has the files', () => {
    expect(cases.length).toBeGreaterThan(10);
  });
  for (const c of cases) {
    it(c.file, () => {
      const outs = ek.run(c.op, c.inputs, c.attributes, { outputs: c.outputs.map((o) => (o ? true : null)) });
      c.outputs.forEach((o, i) => {
        if (o) expectConformant(outs[i] as Tensor, o, `${c.file} output ${i}`);
      });
      // and the float64 reference agrees with the file
      const ref = refOnnx(c.inputs as (Plain | null)[], c.attributes);
      c.outputs.forEach((o, i) => {
        if (o) expectClose(outs[i] as Tensor, ref[i], `${c.file} ref ${i}`);
      });
      for (const t of outs) (t as Tensor | null)?.dispose();
    });
  }
});

// ---- TRT_Attention -----------------------------------------------------------------------------

const trtArb = fc.record({
  seed: fc.integer(),
  qForm: fc.constantFrom('padded_bhnd', 'packed_nhd'),
  kvForm: fc.constantFrom('padded_bhnd', 'packed_nhd'),
  B: fc.integer({ min: 1, max: 3 }),
  Hkv: fc.integer({ min: 1, max: 2 }),
  G: fc.constantFrom(1, 2, 3, 4, 8),
  D: fc.constantFrom(1, 2, 3, 4, 5, 7, 8, 12, 16, 33),
  Dv: fc.constantFrom(0, 1, 3, 6, 8, 9, 16),
  qLens: fc.array(fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 40 })), { minLength: 3, maxLength: 3 }),
  kvLens: fc.array(fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 140 })), { minLength: 3, maxLength: 3 }),
  qCap: fc.integer({ min: 0, max: 3 }),
  kvCap: fc.integer({ min: 0, max: 3 }),
  qLensGiven: fc.boolean(),
  kvLensGiven: fc.boolean(),
  causal: fc.constantFrom('none', 'upper_left', 'lower_right'),
  mask: fc.constantFrom('none', 'bool', 'float', 'int'),
  maskRank: fc.integer({ min: 0, max: 4 }),
  maskBroadcast: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
  norm: fc.constantFrom('softmax', 'softmax', 'none'),
  qDtype: fc.constantFrom('float32', 'float32', 'float16', 'bfloat16'),
  kvDtype: fc.constantFrom('float32', 'float16', 'bfloat16'),
  lengthsDtype: fc.constantFrom('int32', 'int64'),
});

type TrtCfg = typeof trtArb extends fc.Arbitrary<infer T> ? T : never;

/** Inputs and attributes of a TRT_Attention case (quantized: TRT_QuantizedAttention slots). */
export function trtCase(c: TrtCfg, quantized = false): { inputs: (Plain | null)[]; attrs: Record<string, unknown> } {
  const r = rng(c.seed);
  const B = c.B, Hkv = c.Hkv, Hq = c.Hkv * c.G, D = c.D, Dv = c.Dv || D;
  const qLens = c.qLens.slice(0, B), kvLens = c.kvLens.slice(0, B);
  const Nq = Math.max(0, ...qLens) + c.qCap, Nkv = Math.max(0, ...kvLens) + c.kvCap;
  const cum = (a: number[]) => a.reduce((acc, x) => [...acc, acc[acc.length - 1] + x], [0]);
  const qDtype = c.kvDtype !== c.qDtype && c.qDtype !== 'float32' ? c.kvDtype : c.qDtype;
  const Q = c.qForm === 'packed_nhd' ? plain(qDtype, [cum(qLens)[B], Hq, D], r) : plain(qDtype, [B, Hq, c.qLensGiven ? Nq : Math.max(0, ...qLens), D], r);
  const kvPacked = c.kvForm === 'packed_nhd';
  const kvN = kvPacked ? cum(kvLens)[B] : c.kvLensGiven ? Nkv : Math.max(0, ...kvLens);
  const K = kvPacked ? plain(c.kvDtype, [kvN, Hkv, D], r) : plain(c.kvDtype, [B, Hkv, kvN, D], r);
  const V = kvPacked ? plain(c.kvDtype, [kvN, Hkv, Dv], r) : plain(c.kvDtype, [B, Hkv, kvN, Dv], r);
  const ints = (a: number[]) => ({ dtype: c.lengthsDtype, shape: [a.length], data: c.lengthsDtype === 'int64' ? a.map(String) : a }) as unknown as Plain;
  const QL = c.qForm === 'packed_nhd' || c.qLensGiven ? ints(cum(qLens)) : null;
  const KL = kvPacked ? ints(cum(kvLens)) : c.kvLensGiven ? ints(kvLens) : null;
  // the padded dims the mask broadcasts against
  const NqM = c.qForm === 'packed_nhd' ? Math.max(0, ...qLens) : Q.shape[2];
  const NkvM = kvPacked ? Math.max(0, ...kvLens) : kvN;
  let M: Plain | null = null;
  const maskAllowed = quantized || c.causal === 'none';
  if (c.mask !== 'none' && maskAllowed) {
    const full = [B, Hq, NqM, NkvM];
    const dims = full.map((d, k) => (c.maskBroadcast[k] ? 1 : d)).slice(4 - c.maskRank);
    M = maskPlain(c.mask, dims, r);
  }
  const attrs: Record<string, unknown> = { query_form: c.qForm, kv_form: c.kvForm };
  if (c.norm === 'none') attrs.TRT_normalization_op = 'none';
  if (!quantized) {
    if (c.causal !== 'none') attrs.causal_kind = c.causal;
    return { inputs: [Q, K, V, M, QL, KL], attrs };
  }
  if (c.causal !== 'none') attrs.is_causal = 1;
  return { inputs: [Q, K, V, M, null, QL, KL], attrs };
}

describe('TRT_Attention matches the float64 reference', () => {
  const check = (k: Kernels, c: TrtCfg) => {
    const { inputs, attrs } = trtCase(c);
    const [y] = k.run('TRT_Attention', inputs, attrs) as Tensor[];
    const want = refTrt(inputs, attrs, false);
    const extra = c.norm === 'none' ? 1e-5 * c.D * 140 : 0;
    expectClose(y, want, 'Y', extra);
    y.dispose();
  };
  it('forms × causal kinds × GQA × masks × head sizes × lengths (SIMD build)', () => {
    fc.assert(fc.property(trtArb, (c) => check(ek, c)), { seed: 31, numRuns: 120 });
  });
  it('the same in the scalar build', () => {
    fc.assert(fc.property(trtArb, (c) => check(eks, c)), { seed: 32, numRuns: 40 });
  });
  it('decode path: one query row, all heads of a KV group, long cache with short valid lengths', () => {
    const dec = trtArb.map((c) => ({ ...c, qLens: [1, 1, 1], kvCap: 3, kvLensGiven: true, qForm: 'padded_bhnd' as const }));
    fc.assert(fc.property(dec, (c) => check(ek, c)), { seed: 33, numRuns: 40 });
  });
  it('prefill path: many query rows across 32-row tiles, causal block skipping', () => {
    const pre = trtArb.map((c) => ({ ...c, G: 1 as const, qLens: c.qLens.map((x) => x + 30), kvLens: c.qLens.map((x) => x + 30 + c.kvCap), causal: c.causal === 'none' ? 'lower_right' : c.causal, mask: 'none' as const }));
    fc.assert(fc.property(pre, (c) => check(ek, c)), { seed: 34, numRuns: 15 });
  });
  it('decode without grouped heads (G = 1, the row-decode kernel) and the variants that must not take it', () => {
    // one float32 query row per KV head over padded caches longer than their valid lengths:
    // runAttentionPlan hands these to attendF32/F16/BF16 unless a mask, a causal frontier
    // before the last key or a packed K/V says otherwise — every variant against the reference
    const dec = trtArb.map((c) => ({ ...c, G: 1 as const, qLens: c.qLens.map((x) => Math.min(x, 1)), kvCap: 3, kvLensGiven: true, qForm: 'padded_bhnd' as const, qDtype: 'float32' as const }));
    fc.assert(fc.property(dec, (c) => check(ek, c)), { seed: 39, numRuns: 60 });
    fc.assert(fc.property(dec, (c) => check(eks, c)), { seed: 40, numRuns: 20 });
    fc.assert(fc.property(dec.map((c) => ({ ...c, kvForm: 'padded_bhnd' as const, mask: 'none' as const, causal: c.causal === 'upper_left' ? 'none' as const : c.causal })), (c) => check(ek, c)), { seed: 41, numRuns: 40 });
    // one KV head packed [T,1,D]: its head stride is D, which is no capacity (the kernel wraps
    // at its capacity: taken as 1, every sequence's keys after the first read the first row)
    const one = dec.map((c) => ({ ...c, Hkv: 1, kvForm: 'packed_nhd' as const, mask: 'none' as const, causal: c.causal === 'upper_left' ? 'none' as const : c.causal, kvLens: c.kvLens.map((x) => x + 2) }));
    fc.assert(fc.property(one, (c) => check(ek, c)), { seed: 42, numRuns: 30 });
    fc.assert(fc.property(one, (c) => check(eks, c)), { seed: 43, numRuns: 10 });
  });
  it('packed K/V read by several tiles of a sequence (rows gathered once per sequence and head)', () => {
    // more than 32 (query row, head) pairs per KV head, K/V rows H·D apart: the kernel
    // copies each sequence's visible rows next to each other before its tiles run
    const seq = trtArb.map((c) => ({ ...c, kvForm: 'packed_nhd' as const, Hkv: 2, qLens: c.qLens.map((x) => x + 33), kvLens: c.kvLens.map((x) => x + 20) }));
    fc.assert(fc.property(seq, (c) => check(ek, c)), { seed: 36, numRuns: 25 });
    fc.assert(fc.property(seq, (c) => check(eks, c)), { seed: 37, numRuns: 8 });
  });
  it('packed K/V longer than the per-sequence gather holds (1 MiB of rows) fall back to per-block gathers', () => {
    // D = Dv = 256: the gather holds 512 rows; 600 keys do not fit
    const r = rng(38), H = 2, D = 256, L = 600, S = 40;
    const q = { dtype: 'float32', shape: [S, H, D], data: randomData('float32', S * H * D, r) };
    const k = { dtype: 'float32', shape: [L, H, D], data: randomData('float32', L * H * D, r) };
    const v = { dtype: 'float32', shape: [L, H, D], data: randomData('float32', L * H * D, r) };
    const ql = { dtype: 'int32', shape: [2], data: [0, S] }, kl = { dtype: 'int32', shape: [2], data: [0, L] };
    const attrs = { query_form: 'packed_nhd', kv_form: 'packed_nhd', causal_kind: 'lower_right' };
    const inputs = [q, k, v, null, ql, kl];
    const [y] = ek.run('TRT_Attention', inputs, attrs) as Tensor[];
    expectClose(y, refTrt(inputs, attrs, false), 'Y');
    y.dispose();
  });
  it('decode over long contiguous K/V (the kernel that spreads its touch-ahead over the dot products)', () => {
    // one query row, G heads per KV head, more than 2 key blocks (128 keys) so the rows
    // touched ahead exist, up to 11 (float32 with G = 4 and D a multiple of 8 touches from
    // P·V in block pairs, 256+ keys: pairs, a last unpaired block, the next head's rows);
    // every K/V dtype, head sizes off the 4-grid, a shorter valid length
    const dec = fc.record({
      G: fc.constantFrom(1, 2, 4), D: fc.constantFrom(5, 16, 24, 67), L: fc.integer({ min: 129, max: 700 }),
      cut: fc.integer({ min: 0, max: 40 }), dt: fc.constantFrom('float32', 'float16', 'bfloat16'), seed: fc.integer(),
    });
    fc.assert(fc.property(dec, ({ G, D, L, cut, dt, seed }) => {
      const r = rng(seed), Hkv = 2, Hq = Hkv * G;
      const q = { dtype: 'float32', shape: [1, Hq, 1, D], data: randomData('float32', Hq * D, r) };
      const k = { dtype: dt, shape: [1, Hkv, L, D], data: randomData(dt, Hkv * L * D, r) };
      const v = { dtype: dt, shape: [1, Hkv, L, D], data: randomData(dt, Hkv * L * D, r) };
      const kl = { dtype: 'int32', shape: [1], data: [L - cut] };
      const [y] = ek.run('TRT_Attention', [q, k, v, null, null, kl]) as Tensor[];
      expectClose(y, refTrt([q, k, v, null, null, kl], {}, false), 'Y');
      y.dispose();
    }), { seed: 35, numRuns: 30 });
  });
  it('decode K / V ending at the last byte of wasm memory: the touch-ahead reads no row past the tile', async () => {
    // the decode tiles touch the K and V rows 2–3 blocks ahead (in block pairs for float32
    // from P·V, TRT_QuantizedAttention's phase 2 too, and from the scores for 16-bit K/V);
    // with the last row of K or V at the end of memory, any touch past the rows would trap
    // (lengths 600 and 700 end 88 and 60 keys into a 128-key pair: each pair-eligibility
    // edge case is there once)
    const Hkv = 2, G = 4, D = 16, M = 2 << 20;
    for (const L of [600, 700]) for (const dt of ['float32', 'bfloat16'] as const) {
      for (const last of ['V', 'K'] as const) {
        const ek2 = await init({ initialMemory: M, maximumMemory: M });
        const r = rng(L + dt.length + last.length);
        const es = dt === 'float32' ? 4 : 2, bytes = Hkv * L * D * es;
        const q = plain('float32', [1, Hkv * G, 1, D], r), a = plain(dt, [1, Hkv, L, D], r), b = plain(dt, [1, Hkv, L, D], r);
        const load = (p: Plain) => {
          const t = ek2.tensor(p.dtype as never, p.shape);
          (t.data as unknown as { set(x: ArrayLike<number>): void }).set(p.data as number[]);
          return t;
        };
        const Q = load(q), first = load(last === 'V' ? a : b), Y = ek2.tensor('float32', [1, Hkv * G, 1, D]);
        // size the scratch for both operators before the layout is fixed
        ek2.run('TRT_QuantizedAttention', [Q, first, first], {}, { outputs: [Y] });
        ek2.run('TRT_Attention', [Q, first, first], {}, { outputs: [Y] });
        // a filler takes the free end of memory but one block of exactly the tensor's size
        // (a block is the data rounded to 16 bytes, a 16-byte tail pad and, with EK_DEBUG,
        // a guard in front: measured with a probe larger than any hole before the end)
        const free = ek2.stats().largestFreeBlock;
        const probe = ek2.tensor('uint8', [1 << 16]);
        const over = free - ek2.stats().largestFreeBlock - (1 << 16); // tail pad + guard
        probe.dispose();
        const fill = ek2.tensor('uint8', [free - (bytes + over) - over]);
        const end = load(last === 'V' ? b : a);
        expect(end.byteOffset + bytes + 16, `${dt}: ${last} ends at the memory's end (its tail pad)`).toBe(ek2.memory.buffer.byteLength);
        const [K, V] = last === 'V' ? [first, end] : [end, first];
        ek2.run('TRT_Attention', [Q, K, V], {}, { outputs: [Y] });
        expectClose(Y, refTrt([q, a, b], {}, false), `${dt} TRT_Attention, ${last} last`);
        ek2.run('TRT_QuantizedAttention', [Q, K, V], {}, { outputs: [Y] });
        expectClose(Y, refTrt([q, a, b], { normalization_quantize_to_type: 'fp8' }, true), `${dt} TRT_QuantizedAttention, ${last} last`);
        fill.dispose();
        ek2.dispose();
      }
    }
  });
  it('fills a caller-provided output tensor in place (decode loop without allocation)', () => {
    const r = rng(5);
    const Q = ek.tensor('float32', [1, 8, 1, 16], randomData('float32', 128, r));
    const K = ek.tensor('float32', [1, 2, 100, 16], randomData('float32', 3200, r));
    const V = ek.tensor('float32', [1, 2, 100, 16], randomData('float32', 3200, r));
    const KL = ek.tensor('int32', [1], [37]);
    const out = ek.tensor('float32', [1, 8, 1, 16]);
    const before = ek.stats().tensorsLive;
    const [y] = ek.run('TRT_Attention', [Q, K, V, null, null, KL], {}, { outputs: [out] });
    expect(y).toBe(out);
    expect(ek.stats().tensorsLive).toBe(before);
    const plainOf = (t: Tensor): Plain => ({ dtype: t.dtype, shape: [...t.shape], data: Array.from(t.data as Float32Array) });
    expectClose(out, refTrt([plainOf(Q), plainOf(K), plainOf(V), null, null, { dtype: 'int32', shape: [1], data: [37] }], {}, false), 'Y');
    for (const t of [Q, K, V, KL, out]) t.dispose();
  });
  it('zero keys with a mask whose last dim is 1 (it broadcasts to 0 columns): zeros from every operator', () => {
    const q = { dtype: 'float32', shape: [1, 1, 2, 4], data: new Array(8).fill(1) };
    const kv = { dtype: 'float32', shape: [1, 1, 0, 4], data: [] };
    const m = { dtype: 'bool', shape: [2, 1], data: [1, 1] };
    for (const [op, inputs] of [['TRT_Attention', [q, kv, kv, m]], ['TRT_QuantizedAttention', [q, kv, kv, m]], ['Attention', [q, kv, kv, m]]] as const) {
      const [y] = ek.run(op, inputs as never) as Tensor[];
      expect(Array.from(y.data as Float32Array), op).toEqual(new Array(8).fill(0));
      y.dispose();
    }
  });
  it('a row that sees no key gives zeros, never NaN', () => {
    const q = { dtype: 'float32', shape: [1, 1, 2, 4], data: [1, 2, 3, 4, 5, 6, 7, 8] };
    const k = { dtype: 'float32', shape: [1, 1, 3, 4], data: new Array(12).fill(1) };
    const m = { dtype: 'bool', shape: [2, 3], data: [0, 0, 0, 1, 0, 0] };
    const [y] = ek.run('TRT_Attention', [q, k, k, m]) as Tensor[];
    expect(Array.from(y.data as Float32Array)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    const [z] = ek.run('TRT_Attention', [q, k, k, null, null, { dtype: 'int32', shape: [1], data: [0] }]) as Tensor[];
    expect(Array.from(z.data as Float32Array)).toEqual(new Array(8).fill(0));
    y.dispose();
    z.dispose();
  });
});

// ---- ONNX Attention -------------------------------------------------------------------------------

const onnxArb = fc.record({
  seed: fc.integer(),
  rank: fc.constantFrom(3, 4),
  B: fc.integer({ min: 1, max: 2 }),
  Hkv: fc.integer({ min: 1, max: 2 }),
  G: fc.constantFrom(1, 2, 3, 4),
  D: fc.constantFrom(1, 3, 4, 6, 8, 17),
  Dv: fc.constantFrom(0, 2, 5, 8),
  Sq: fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 6 })),
  S: fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 80 })),
  P: fc.oneof(fc.constant(-1), fc.constant(0), fc.integer({ min: 0, max: 70 })),
  causal: fc.boolean(),
  nonpad: fc.boolean(),
  mask: fc.constantFrom('none', 'bool', 'float', 'int'),
  maskRank: fc.integer({ min: 1, max: 4 }),
  maskBroadcast: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
  maskShort: fc.integer({ min: 0, max: 5 }),
  softcap: fc.constantFrom(0, 0, 1.5),
  scale: fc.constantFrom(undefined, 0.3),
  qkMode: fc.constantFrom(-1, 0, 1, 2, 3),
  t1: fc.constantFrom('float32', 'float32', 'float16', 'bfloat16', 'float64'),
  // T2 (V, past_value) independent of T1 (Q, K), float64 on either side included
  t2: fc.constantFrom('same', 'float32', 'float16', 'float64'),
  // Attention-25's left_window_size / right_window_size (−1: unbounded; undefined: not given)
  left: fc.constantFrom(undefined, undefined, -1, 0, 1, 3),
  right: fc.constantFrom(undefined, undefined, -1, 0, 2),
});

type OnnxCfg = typeof onnxArb extends fc.Arbitrary<infer T> ? T : never;

function onnxCase(c: OnnxCfg): { inputs: (Plain | null)[]; attrs: Record<string, unknown>; outputs: (true | null)[] } {
  const r = rng(c.seed);
  const { B, Hkv, D, Sq, S } = c;
  const Hq = Hkv * c.G, Dv = c.Dv || D, P = c.P;
  const t1 = c.t1, t2 = c.t2 === 'same' ? t1 : c.t2;
  const Q = c.rank === 4 ? plain(t1, [B, Hq, Sq, D], r) : plain(t1, [B, Sq, Hq * D], r);
  const K = c.rank === 4 ? plain(t1, [B, Hkv, S, D], r) : plain(t1, [B, S, Hkv * D], r);
  const V = c.rank === 4 ? plain(t2, [B, Hkv, S, Dv], r) : plain(t2, [B, S, Hkv * Dv], r);
  const PK = P >= 0 ? plain(t1, [B, Hkv, P, D], r) : null;
  const PV = P >= 0 ? plain(t2, [B, Hkv, P, Dv], r) : null;
  const T = Math.max(P, 0) + S;
  let M: Plain | null = null;
  if (c.mask !== 'none') {
    const full = [B, Hq, Sq].map((d, k) => (c.maskBroadcast[k] ? 1 : d));
    const last = Math.max(0, T - c.maskShort);
    M = maskPlain(c.mask, [...full, last].slice(4 - c.maskRank), r);
    if (c.mask === 'float' && t1 !== 'float32' && (c.seed & 1)) {
      // an additive mask in Q's dtype (float16 / bfloat16 bit patterns, some −∞)
      const n = M.shape.reduce((a, x) => a * x, 1);
      M = { dtype: t1, shape: M.shape, data: Array.from({ length: n }, () => (r() < 0.1 ? (t1 === 'float16' ? 0xfc00 : t1 === 'float64' ? -Infinity : 0xff80) : randomData(t1, 1, r)[0])) };
    }
  }
  const NP = c.nonpad ? { dtype: 'int64', shape: [B], data: Array.from({ length: B }, () => String(Math.floor(r() * (T + 1)))) } as unknown as Plain : null;
  const attrs: Record<string, unknown> = {};
  if (c.rank === 3) { attrs.q_num_heads = Hq; attrs.kv_num_heads = Hkv; }
  if (c.causal) attrs.is_causal = 1;
  if (c.softcap) attrs.softcap = c.softcap;
  if (c.scale !== undefined) attrs.scale = c.scale;
  if (c.qkMode >= 0) attrs.qk_matmul_output_mode = c.qkMode;
  if (c.left !== undefined) attrs.left_window_size = c.left;
  if (c.right !== undefined) attrs.right_window_size = c.right;
  return { inputs: [Q, K, V, M, PK, PV, NP], attrs, outputs: [true, PK ? true : null, PK ? true : null, c.qkMode >= 0 ? true : null] };
}

describe('ONNX Attention matches the float64 reference', () => {
  it('3D/4D × GQA × past/present × nonpad_kv_seqlen × masks (broadcast, short last dim) × softcap × qk modes × dtypes', () => {
    fc.assert(
      fc.property(onnxArb, (c) => {
        const { inputs, attrs, outputs } = onnxCase(c);
        const outs = ek.run('Attention', inputs, attrs, { outputs }) as (Tensor | null)[];
        const want = refOnnx(inputs, attrs);
        outputs.forEach((o, i) => {
          if (o) expectClose(outs[i]!, want[i], `output ${i}`);
          else expect(outs[i]).toBeNull();
        });
        for (const t of outs) t?.dispose();
      }),
      { seed: 41, numRuns: 150 },
    );
  });
  it('sliding window over a long cache: whole blocks before every row\'s window are skipped (both builds)', () => {
    // 4 query rows at positions 296..299 over 300 keys, left window 10 (causal and not, with a
    // right window too): the rows see keys from 286 on, so the first four 64-key blocks are
    // skipped, and the fifth is partly hidden
    const r = rng(91);
    const B = 1, H = 2, Sq = 4, P = 296, D = 8;
    for (const [attrs, name] of [[{ is_causal: 1, left_window_size: 10 }, 'causal'], [{ left_window_size: 10, right_window_size: 1 }, 'both sides']] as const) {
      const inputs = [plain('float32', [B, H, Sq, D], r), plain('float32', [B, H, Sq, D], r), plain('float32', [B, H, Sq, D], r), null,
        plain('float32', [B, H, P, D], r), plain('float32', [B, H, P, D], r)];
      const want = refOnnx(inputs, attrs);
      for (const e of [ek, eks]) {
        const outs = e.run('Attention', inputs as never, attrs, { outputs: [true, null, null] }) as Tensor[];
        expectClose(outs[0], want[0], `${name} Y`);
        outs[0].dispose();
      }
    }
  });
  it('a window reaching past every position hides nothing, however large (both builds)', () => {
    // the kernel takes i32 window sizes and adds them to positions: 2^31 − 1 (a common
    // "unbounded") wrapped and hid every key, 2^32 acted as a window of 0
    const r = rng(92);
    const B = 1, H = 2, Sq = 3, P = 5, D = 8;
    const inputs = [plain('float32', [B, H, Sq, D], r), plain('float32', [B, H, Sq, D], r), plain('float32', [B, H, Sq, D], r), null,
      plain('float32', [B, H, P, D], r), plain('float32', [B, H, P, D], r)];
    for (const causal of [0, 1]) {
      const want = refOnnx(inputs, { is_causal: causal });
      for (const w of [P + 2 * Sq, 2 ** 31 - 2, 2 ** 31 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER]) {
        for (const attrs of [{ left_window_size: w }, { right_window_size: w }, { left_window_size: w, right_window_size: w }]) {
          for (const e of [ek, eks]) {
            const y = (e.run('Attention', inputs as never, { ...attrs, is_causal: causal }, { outputs: [true, null, null] }) as Tensor[])[0];
            expectClose(y, want[0], `causal ${causal} ${JSON.stringify(attrs)}`);
            y.dispose();
          }
        }
      }
    }
  });
  it('returns present_key / present_value by default when past is given, and not otherwise', () => {
    const c = onnxCase({ seed: 1, rank: 4, B: 1, Hkv: 1, G: 2, D: 4, Dv: 0, Sq: 2, S: 3, P: 4, causal: true, nonpad: false, mask: 'none', maskRank: 2, maskBroadcast: [true, true, true], maskShort: 0, softcap: 0, scale: undefined, qkMode: -1, t1: 'float32', t2: 'same', left: undefined, right: undefined });
    const outs = ek.run('Attention', c.inputs, c.attrs) as (Tensor | null)[];
    expect(outs.map((t) => (t ? [...t.shape] : null))).toEqual([[1, 2, 2, 4], [1, 1, 7, 4], [1, 1, 7, 4], null]);
    for (const t of outs) t?.dispose();
    const none = ek.run('Attention', c.inputs.slice(0, 3), {}) as (Tensor | null)[];
    expect(none.slice(1)).toEqual([null, null, null]);
    none[0]!.dispose();
  });
  it('present without past, and only one of the presents, when asked', () => {
    const c = onnxCase({ seed: 2, rank: 3, B: 2, Hkv: 2, G: 2, D: 3, Dv: 5, Sq: 3, S: 4, P: 2, causal: false, nonpad: false, mask: 'none', maskRank: 2, maskBroadcast: [true, true, true], maskShort: 0, softcap: 0, scale: undefined, qkMode: -1, t1: 'float32', t2: 'same', left: undefined, right: undefined });
    const want = refOnnx(c.inputs, c.attrs);
    const outs = ek.run('Attention', c.inputs, c.attrs, { outputs: [true, null, true] }) as (Tensor | null)[];
    expect(outs[1]).toBeNull();
    expectClose(outs[0]!, want[0], 'Y');
    expectClose(outs[2]!, want[2], 'present_value');
    for (const t of outs) t?.dispose();
    const noPast = [...c.inputs.slice(0, 4), null, null];
    const want2 = refOnnx(noPast, c.attrs);
    const outs2 = ek.run('Attention', noPast, c.attrs, { outputs: [true, true, true] }) as (Tensor | null)[];
    outs2.slice(0, 3).forEach((t, i) => expectClose(t!, want2[i], `no past ${i}`));
    for (const t of outs2) t?.dispose();
    // Y skipped: only the presents, or only qk_matmul_output (mode 3)
    const onlyPresent = ek.run('Attention', c.inputs, c.attrs, { outputs: [null, true, true] }) as (Tensor | null)[];
    expect(onlyPresent[0]).toBeNull();
    expectClose(onlyPresent[1]!, want[1], 'present_key only');
    for (const t of onlyPresent) t?.dispose();
    const attrs3 = { ...c.attrs, qk_matmul_output_mode: 3 };
    const want3 = refOnnx(c.inputs, attrs3);
    const onlyQk = ek.run('Attention', c.inputs, attrs3, { outputs: [null, null, null, true] }) as (Tensor | null)[];
    expect(onlyQk.slice(0, 3)).toEqual([null, null, null]);
    expectClose(onlyQk[3]!, want3[3], 'qk only');
    onlyQk[3]!.dispose();
  });
  it('float64 decode over a long past (the row-decode kernel on the float32 copies) stays inside its scratch', async () => {
    // one query row, one head, 4200 + 1 keys: the float32 copies take the row-decode kernel,
    // whose scores ((N + D)·4 bytes) outgrow the flash kernel's scratch; a fresh instance in
    // debug mode, so the scratch is exactly what the call asked for and a write past it shows
    const e = await init({ debug: true });
    const r = rng(77);
    const B = 1, H = 1, D = 4, P = 4200;
    const inputs = [plain('float64', [B, H, 1, D], r), plain('float64', [B, H, 1, D], r), plain('float64', [B, H, 1, D], r), null,
      plain('float64', [B, H, P, D], r), plain('float64', [B, H, P, D], r)];
    const want = refOnnx(inputs, {});
    const outs = e.run('Attention', inputs as never, {}) as Tensor[];
    outs.slice(0, 3).forEach((t, i) => expectClose(t, want[i], `output ${i}`));
    expect([...outs[1].data]).toEqual([...inputs[4]!.data, ...inputs[1]!.data]);
    e.dispose();
  });
  it('a float64 mask of finfo(float64).min hides nothing by itself: a row of it is a softmax of equal scores, not zeros', () => {
    // row 0: both keys at the float64 minimum (finite): uniform weights, as onnx.reference computes
    // in float64; row 1: key 0 at the minimum, key 1 at 0: only key 1
    const MIN = -1.7976931348623157e308;
    for (const e of [ek, eks]) {
      for (const dtype of ['float64', 'float32']) {
        const inputs = [{ dtype, shape: [1, 1, 2, 2], data: [1, 0, 1, 0] }, { dtype, shape: [1, 1, 2, 2], data: [1, 0, 0, 1] },
          { dtype, shape: [1, 1, 2, 1], data: [1, 3] }, { dtype: 'float64', shape: [2, 2], data: [MIN, MIN, MIN, 0] }];
        const [y] = e.run('Attention', inputs as never, {}) as Tensor[];
        expect([...(y.data as Float64Array)], `${dtype} Q`).toEqual([2, 3]);
        y.dispose();
      }
    }
  });
});

describe('Inf / NaN in K and V: every build and path agrees', () => {
  // (found by the second differential audit: the scalar build skipped zero weights, the
  // one-row decode kernel turned an all −∞ row into NaN)
  for (const build of ['simd', 'scalar'] as const) {
    it(`a mask-hidden Inf value row gives NaN (0 · Inf, as onnx.reference); keys that are all −∞ give zeros (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const made: Tensor[] = [];
      const t = (dt: 'float32' | 'float16' | 'bool', sh: number[], d: number[]) => { const x = e.tensor(dt, sh, d); made.push(x); return x; };
      try {
        for (const H of [1, 2]) { // one query row per head: llm.ts's decode kernel; two heads on one KV head: the flash kernel
          const Q = t('float32', [1, H, 1, 2], new Array(2 * H).fill(1));
          const V = t('float32', [1, 1, 2, 2], [1, 1, Infinity, Infinity]);
          const [y] = e.run('Attention', [Q, t('float32', [1, 1, 2, 2], [1, 0, 0, 1]), V, t('bool', [1, 2], [1, 0])], {}) as Tensor[];
          made.push(y);
          expect(Array.from(y.data as Float32Array).every(Number.isNaN), `H ${H} masked Inf`).toBe(true);
          const [y2] = e.run('Attention', [Q, t('float32', [1, 1, 1, 2], [-Infinity, -Infinity]), t('float32', [1, 1, 1, 2], [5, 5])], {}) as Tensor[];
          made.push(y2);
          expect(Array.from(y2.data as Float32Array), `H ${H} −∞ key, float32`).toEqual(new Array(2 * H).fill(0));
          const [y3] = e.run('Attention', [t('float16', [1, H, 1, 2], new Array(2 * H).fill(0x3c00)), t('float16', [1, 1, 1, 2], [0xfc00, 0xfc00]), t('float16', [1, 1, 1, 2], [0x4500, 0x4500])], {}) as Tensor[];
          made.push(y3);
          expect(Array.from(y3.data as Uint16Array), `H ${H} −∞ key, float16`).toEqual(new Array(2 * H).fill(0));
        }
      } finally {
        made.forEach((x) => x.dispose());
      }
    });
  }
});

describe('keys hidden by a mask cannot reach a row through a NaN or Inf they hold', () => {
  // (found by an audit against DESIGN.md: NaN + (−∞) left a bool-false key's score NaN, and
  // a row that sees no key was written as its accumulator · 0, NaN after 0 · NaN)
  for (const build of ['simd', 'scalar'] as const) {
    it(`a bool-false key with NaN / Inf in K is hidden; a row that sees no key is zeros whatever the hidden keys hold (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const made: Tensor[] = [];
      const t = (dt: 'float32' | 'bool' | 'int32', sh: number[], d: number[]) => { const x = e.tensor(dt, sh, d); made.push(x); return x; };
      const run = (op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>) => { const [y] = e.run(op, inputs, attrs) as Tensor[]; made.push(y); return Array.from(y.data as Float32Array); };
      try {
        for (const H of [1, 2]) { // one query row per head: llm.ts's decode kernel; two heads on one KV head: the flash kernel
          for (const bad of [NaN, Infinity, -Infinity]) {
            for (const nq of [1, 2]) {
              // nq = 1: the row sees keys 0, 1 (key 2 hidden, its K row holds `bad`);
              // nq = 2: row 1 sees nothing, and key 2's V row holds `bad` too
              const Q = t('float32', [1, H, nq, 2], Array.from({ length: H * nq * 2 }, (_, i) => (i % 3) - 0.5));
              const K = t('float32', [1, 1, 3, 2], [1, 0, 0, 1, bad, 0.5]);
              const V = t('float32', [1, 1, 3, 2], [1, 2, 3, 4, 5, nq === 2 ? bad : 6]);
              const m = t('bool', [nq, 3], nq === 1 ? [1, 1, 0] : [1, 1, 0, 0, 0, 0]);
              // the same without key 2 at all
              const K2 = t('float32', [1, 1, 2, 2], [1, 0, 0, 1]), V2 = t('float32', [1, 1, 2, 2], [1, 2, 3, 4]);
              const m2 = t('bool', [nq, 2], nq === 1 ? [1, 1] : [1, 1, 0, 0]);
              const what = `H ${H} nq ${nq} ${bad}`;
              for (const norm of ['softmax', 'none']) {
                const got = run('TRT_Attention', [Q, K, V, m], { TRT_normalization_op: norm });
                const want = run('TRT_Attention', [Q, K2, V2, m2], { TRT_normalization_op: norm });
                if (nq === 1) expect(got, `${what} ${norm}`).toEqual(want);
                else for (let i = 0; i < got.length; i++) if (i % 4 >= 2) expect(got[i], `${what} ${norm} [${i}]`).toBe(0);
              }
              const onnx = run('Attention', [Q, K, V, m], {});
              if (nq === 1) expect(onnx, `${what} onnx`).toEqual(run('Attention', [Q, K2, V2, m2], {}));
              else for (let i = 0; i < onnx.length; i++) if (i % 4 >= 2) expect(onnx[i], `${what} onnx [${i}]`).toBe(0);
              for (const quant of ['fp8', 'int8']) {
                const qa = run('TRT_QuantizedAttention', [Q, K, V, m], { scale: 1, normalization_quantize_to_type: quant });
                if (nq === 1) expect(qa, `${what} ${quant}`).toEqual(run('TRT_QuantizedAttention', [Q, K2, V2, m2], { scale: 1, normalization_quantize_to_type: quant }));
                else for (let i = 0; i < qa.length; i++) if (i % 4 >= 2) expect(qa[i], `${what} ${quant} [${i}]`).toBe(0);
              }
            }
          }
        }
      } finally {
        made.forEach((x) => x.dispose());
      }
    });
  }
});

describe('keys hidden by a length, a causal kind or a window are never read for the rows they are hidden from', () => {
  // (found by a probe: P·V ran over the keys any row of a 4-row group sees, so a NaN in the
  // V row of a key on the causal diagonal reached the group's earlier rows, and in the
  // two-phase path every row of the tile: which rows depended on Sq and the head count)
  // Differential: every output row that cannot see key j has the same bits whether V_j holds
  // NaN, Inf or 7; a row that sees it is NaN / Inf-spoiled (IEEE) or not, as it may.
  for (const build of ['simd', 'scalar'] as const) {
    it(`TRT_Attention (causal kinds, kv lengths, packed), ONNX Attention (is_causal, window), TRT_QuantizedAttention; ${build} build`, () => {
      const e = build === 'simd' ? ek : eks;
      const made: Tensor[] = [];
      const t = (dt: string, sh: number[], d: ArrayLike<number>) => { const x = e.tensor(dt as 'float32', sh, Array.from(d)); made.push(x); return x; };
      const r = rng(11);
      try {
        for (const dtype of ['float32', 'float16'] as const) {
          const enc = (x: number) => (dtype === 'float32' ? x : (x !== x ? 0x7e00 : x === Infinity ? 0x7c00 : toF16Bits(x)));
          for (const [Sq, Hq, Hkv, D] of [[3, 1, 1, 4], [5, 4, 1, 6], [40, 1, 1, 8], [9, 2, 2, 3], [70, 2, 1, 16]]) {
            const N = Sq;
            const q = Array.from({ length: Hq * Sq * D }, () => r() * 2 - 1), k = Array.from({ length: Hkv * N * D }, () => r() * 2 - 1);
            const v0 = Array.from({ length: Hkv * N * D }, () => r() * 2 - 1);
            for (const j of [N - 1, N >> 1, 1]) {
              // V row j of every KV head set to `bad`
              const vWith = (bad: number) => v0.map((x, i) => (Math.floor(i / D) % N === j ? bad : x));
              type Case = { name: string; sees: (row: number) => boolean; run: (V: Tensor) => Float32Array | Uint16Array };
              const Q = t(dtype, [1, Hq, Sq, D], q.map(enc)), K = t(dtype, [1, Hkv, N, D], k.map(enc));
              // (a copy: a later call may grow the memory, which detaches every view)
              const out = (op: string, ins: (Tensor | null)[], at: Record<string, unknown>) => { const [y] = e.run(op, ins, at) as Tensor[]; made.push(y); return (y.data as Float32Array | Uint16Array).slice(); };
              const lens = t('int32', [1], [N - 2]); // padded KV: keys >= N - 2 hidden from every row
              const cases: Case[] = [
                { name: 'TRT upper_left', sees: (i) => j <= i, run: (V) => out('TRT_Attention', [Q, K, V], { causal_kind: 'upper_left' }) },
                { name: 'TRT lower_right, kv_lengths', sees: (i) => j < N - 2 && j <= i + (N - 2) - Sq, run: (V) => out('TRT_Attention', [Q, K, V, null, null, lens], { causal_kind: 'lower_right' }) },
                { name: 'ONNX is_causal', sees: (i) => j <= i, run: (V) => out('Attention', [Q, K, V], { is_causal: 1 }) },
                { name: 'ONNX window 3', sees: (i) => j <= i && j >= i - 3, run: (V) => out('Attention', [Q, K, V], { is_causal: 1, left_window_size: 3 }) },
              ];
              if (dtype === 'float32') {
                cases.push({ name: 'TRT_QuantizedAttention int8 causal', sees: (i) => j <= i, run: (V) => out('TRT_QuantizedAttention', [Q, K, V], { is_causal: 1, normalization_quantize_to_type: 'int8' }) });
              }
              for (const c of cases) {
                const ref = c.run(t(dtype, [1, Hkv, N, D], vWith(7).map(enc)));
                for (const bad of [NaN, Infinity]) {
                  const got = c.run(t(dtype, [1, Hkv, N, D], vWith(bad).map(enc)));
                  for (let h = 0; h < Hq; h++) for (let i = 0; i < Sq; i++) {
                    if (c.sees(i)) continue;
                    const o = (h * Sq + i) * D;
                    for (let d = 0; d < D; d++) {
                      if (!Object.is(got[o + d], ref[o + d])) expect.fail(`${c.name} ${dtype} Sq ${Sq} Hq ${Hq} D ${D}: V row ${j} = ${bad} reached head ${h} row ${i} (got ${got[o + d]}, want ${ref[o + d]})`);
                    }
                  }
                }
              }
            }
          }
        }
      } finally {
        made.forEach((x) => x.dispose());
      }
    });
  }
});

describe('ONNX attn_mask with a shorter last dim is the mask padded with -Inf', () => {
  // "padded to total_sequence_length with negative infinity": the same bits as the padded
  // mask written out, an Inf or NaN in a padded key's V row included (it used to hide the
  // missing keys as a length does, never reading them)
  for (const build of ['simd', 'scalar'] as const) {
    it(`bool and float masks, V rows past the mask finite or NaN (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const made: Tensor[] = [];
      const t = (dt: string, sh: number[], d: ArrayLike<number>) => { const x = e.tensor(dt as 'float32', sh, Array.from(d)); made.push(x); return x; };
      const r = rng(5);
      try {
        for (const [Sq, T, m] of [[1, 10, 3], [4, 70, 5], [2, 130, 64]]) {
          const D = 4;
          const Q = t('float32', [1, 2, Sq, D], Array.from({ length: 2 * Sq * D }, () => r() - 0.5));
          const K = t('float32', [1, 2, T, D], Array.from({ length: 2 * T * D }, () => r() - 0.5));
          for (const bad of [0.5, NaN]) {
            const V = t('float32', [1, 2, T, D], Array.from({ length: 2 * T * D }, (_, i) => (Math.floor(i / D) % T >= m ? bad : r())));
            const bits = Array.from({ length: Sq * m }, () => (r() < 0.8 ? 1 : 0));
            const boolShort = t('bool', [1, 1, Sq, m], bits);
            const boolFull = t('bool', [1, 1, Sq, T], Array.from({ length: Sq * T }, (_, i) => (i % T < m ? bits[Math.floor(i / T) * m + (i % T)] : 0)));
            const addShort = t('float32', [Sq, m], bits.map((b) => (b ? 0.25 : -Infinity)));
            const addFull = t('float32', [Sq, T], Array.from({ length: Sq * T }, (_, i) => (i % T < m ? (bits[Math.floor(i / T) * m + (i % T)] ? 0.25 : -Infinity) : -Infinity)));
            for (const [a, b, what] of [[boolShort, boolFull, 'bool'], [addShort, addFull, 'float']] as const) {
              // (copied at once: a later call may grow the memory, which detaches every view)
              const [ys] = e.run('Attention', [Q, K, V, a], {}) as Tensor[];
              made.push(ys);
              const gs = Array.from(ys.data as Float32Array);
              const [yf] = e.run('Attention', [Q, K, V, b], {}) as Tensor[];
              made.push(yf);
              const gf = Array.from(yf.data as Float32Array);
              for (let i = 0; i < gf.length; i++) if (!Object.is(gs[i], gf[i])) expect.fail(`Sq ${Sq} T ${T} mask ${m} ${what} V past it ${bad}: [${i}] short ${gs[i]}, padded ${gf[i]}`);
            }
          }
        }
      } finally {
        made.forEach((x) => x.dispose());
      }
    });
  }
});

describe('softcap below 2^-126 (its reciprocal is not finite)', () => {
  // the SIMD build multiplied by 1 / softcap: ∞ for a cap below ~2.9e-39, and 0 · ∞ = NaN
  for (const build of ['simd', 'scalar'] as const) {
    it(`a zero query row with softcap 1e-39 weighs the keys equally (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const Q = e.tensor('float32', [1, 2, 3, 4], new Array(24).fill(0));
      const K = e.tensor('float32', [1, 1, 3, 4], Array.from({ length: 12 }, (_, i) => i - 5));
      const V = e.tensor('float32', [1, 1, 3, 4], [1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6]);
      const outs = e.run('Attention', [Q, K, V], { softcap: 1e-39, qk_matmul_output_mode: 1 }, { outputs: [true, null, null, true] }) as (Tensor | null)[];
      try {
        expect(Array.from(outs[0]!.data as Float32Array)).toEqual(Array.from({ length: 24 }, (_, i) => [2, 3, 4, 5][i % 4]));
        expect(Array.from(outs[3]!.data as Float32Array).every((x) => x === 0)).toBe(true);
      } finally {
        for (const x of [Q, K, V, ...outs]) x?.dispose();
      }
    });
  }
});

describe('a scale above 1 is applied as the spec applies it: √scale on Q and on K', () => {
  // Q·scale overflowed (1e38 · 10) where the spec's √scale·Q (3.2e38) and √scale·K do not:
  // NaN on every path but the one-row decode kernel, which multiplies the dot product.
  // Key 0's score is 1e34, so the row is V's row 0. TRT_QuantizedAttention takes the
  // same kernel and scale handling (its scale is TRT_Attention's, 1 unless given).
  const cases: [string, number[], number[], Record<string, unknown>, boolean][] = [
    ['one row, no mask (the row-decode kernel)', [1, 1, 1, 2], [1, 1, 1, 2], {}, false],
    ['an all-zero float mask', [1, 1, 1, 2], [1, 1, 1, 2], {}, true],
    ['is_causal', [1, 1, 1, 2], [1, 1, 1, 2], { is_causal: 1 }, false],
    ['two query rows', [1, 1, 2, 2], [1, 1, 2, 2], {}, false],
    ['two query heads on one KV head (GQA)', [1, 2, 1, 2], [1, 2, 1, 2], {}, false],
    ['qk_matmul_output mode 0', [1, 1, 1, 2], [1, 1, 1, 2], { qk_matmul_output_mode: 0 }, false],
  ];
  for (const build of ['simd', 'scalar'] as const) {
    for (const [label, qShape, outShape, attrs, masked] of cases) {
      it(`q = 1e38, scale 10: ${label} (${build} build)`, () => {
        const e = build === 'simd' ? ek : eks;
        const n = qShape.reduce((a, b) => a * b, 1);
        const Q = e.tensor('float32', qShape, Array.from({ length: n }, (_, i) => (i % 2 === 0 ? 1e38 : 0)));
        const K = e.tensor('float32', [1, 1, 4, 2], [1e-5, 0, 0, 0, 0, 1, 0, -1]);
        const V = e.tensor('float32', [1, 1, 4, 2], [1, 2, 3, 4, 5, 6, 7, 8]);
        const M = masked ? e.tensor('float32', [1, 4], [0, 0, 0, 0]) : null;
        const qk = 'qk_matmul_output_mode' in attrs;
        const outs = e.run('Attention', [Q, K, V, M], { scale: 10, ...attrs }, { outputs: [true, null, null, qk] }) as (Tensor | null)[];
        try {
          const y = Array.from(outs[0]!.data as Float32Array);
          expect(outs[0]!.shape).toEqual(outShape);
          expect(y).toEqual(Array.from({ length: y.length }, (_, i) => (i % 2 === 0 ? 1 : 2)));
          // scaled scores: 1e38 · 1e-5 · 10 = 1e34 for key 0 (to float32 rounding), then 0, 0, 0
          if (qk) {
            const s = Array.from(outs[3]!.data as Float32Array);
            expect(Math.abs(s[0] / Math.fround(1e34) - 1)).toBeLessThan(1e-6);
            expect(s.slice(1)).toEqual([0, 0, 0]);
          }
        } finally {
          for (const x of [Q, K, V, M, ...outs]) x?.dispose();
        }
      });
    }
  }
});

describe('softcap of a NaN score is NaN', () => {
  // the scalar build's tanh clamped its argument to 9 before the exponential, which turned a
  // NaN into 1 (capped score = softcap, a finite output); the SIMD build's pmin keeps it
  for (const build of ['simd', 'scalar'] as const) {
    it(`a NaN in a visible key's K row makes its rows NaN with softcap, in the qk output too (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const Q = e.tensor('float32', [1, 1, 1, 4], [1, 0.5, -0.25, 0.75]);
      const K = e.tensor('float32', [1, 1, 2, 4], [0.1, 0.2, 0.3, 0.4, NaN, 0, 0, 0]);
      const V = e.tensor('float32', [1, 1, 2, 4], [1, 2, 3, 4, 5, 6, 7, 8]);
      const outs = e.run('Attention', [Q, K, V], { softcap: 5, qk_matmul_output_mode: 1 }, { outputs: [true, null, null, true] }) as (Tensor | null)[];
      try {
        expect(Array.from(outs[0]!.data as Float32Array).every(Number.isNaN), `Y ${Array.from(outs[0]!.data as Float32Array)}`).toBe(true);
        const qk = Array.from(outs[3]!.data as Float32Array);
        expect(Number.isNaN(qk[1]) && Number.isFinite(qk[0]), `qk ${qk}`).toBe(true);
      } finally {
        for (const t of [Q, K, V, ...outs]) t?.dispose();
      }
    });
  }
});

describe('softcap keeps the relative accuracy of small scores', () => {
  // softcap · tanh(s / softcap) ≈ s for |s| ≪ softcap: computed as 1 − 2/(e^2x + 1), tanh
  // lost ~3 digits to cancellation (qk output 0.00100136 for a score of 0.001 at softcap 30).
  // Positive q and k keep the float32 dot products themselves accurate (no cancellation).
  for (const build of ['simd', 'scalar'] as const) {
    it(`qk_matmul_output mode 1 (softcapped) within 2e-6 relative of float64, scores 1e-6 … 30 (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const Sq = 4, T = 40, D = 8, cap = 30;
      // score of (i, j) = Σ q·k with q = 1 and k_j = c_j / D: scores c_j spanning 1e-6 … 30
      const c = Array.from({ length: T }, (_, j) => 1e-6 * 10 ** (j / 5.2));
      const q = new Array(Sq * D).fill(1), k = c.flatMap((x) => new Array(D).fill(Math.fround(x / D)));
      const Q = e.tensor('float32', [1, 1, Sq, D], q), K = e.tensor('float32', [1, 1, T, D], k), V = e.tensor('float32', [1, 1, T, D]);
      const outs = e.run('Attention', [Q, K, V], { softcap: cap, scale: 1, qk_matmul_output_mode: 1 }, { outputs: [true, null, null, true] }) as (Tensor | null)[];
      try {
        const qk = outs[3]!.data as Float32Array;
        for (let i = 0; i < Sq; i++) {
          for (let j = 0; j < T; j++) {
            let s = 0;
            for (let d = 0; d < D; d++) s += Math.fround(k[j * D + d]);
            const want = cap * Math.tanh(s / cap), got = qk[i * T + j];
            expect(Math.abs(got - want) / want, `row ${i} key ${j}: score ${s}, got ${got}, want ${want}`).toBeLessThan(2e-6);
          }
        }
      } finally {
        for (const t of [Q, K, V, ...outs]) t?.dispose();
      }
    });
  }
});

describe('float16 K/V are widened exactly', () => {
  // One query row per KV head goes to llm.ts's decode kernel, whose four-keys-per-pass loops
  // widen float16 rows by three ops when a group of four rows has no Inf / NaN code and by the
  // exact seven otherwise. Both must give bit for bit what the float32 kernel gives on the
  // widened values (same operations in the same order): every finite pattern is spread over
  // K and V, and a few rows carry −Inf (K, against a positive q: the key gets weight 0) or
  // ±Inf / NaN (V: those output columns only), so both paths run in one call.
  for (const build of ['simd', 'scalar'] as const) {
    it(`one query row per head: float16 rows (finite and not) give the float32 kernel's bits (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const H = 2, L = 248, D = 128; // 2·248·128 = 63,488: every finite pattern once
      const finite = Array.from({ length: 65536 }, (_, i) => i).filter((i) => (i & 0x7c00) !== 0x7c00);
      const rnd = rng(41);
      const kPats = finite.map((_, i) => finite[(i * 7919) % finite.length]);
      const vPats = finite.slice();
      const q = Array.from({ length: H * D }, () => 0.001 + rnd() * 0.01); // positive: −Inf · q = −Inf
      // K row 5 of head 0 and row 130 of head 1: a −Inf; V rows 9 and 200: +Inf, −Inf, NaN codes
      kPats[(0 * L + 5) * D + 17] = 0xfc00;
      kPats[(1 * L + 130) * D + 64] = 0xfc00;
      vPats[(0 * L + 9) * D + 3] = 0x7c00;
      vPats[(1 * L + 200) * D + 100] = 0xfc00;
      vPats[(1 * L + 200) * D + 101] = 0x7e01;
      const Q = e.tensor('float32', [1, H, 1, D], q);
      const K16 = e.tensor('float16', [1, H, L, D], kPats), V16 = e.tensor('float16', [1, H, L, D], vPats);
      const K32 = e.tensor('float32', [1, H, L, D], kPats.map(f16ToF32)), V32 = e.tensor('float32', [1, H, L, D], vPats.map(f16ToF32));
      const Y16 = e.tensor('float32', [1, H, 1, D]), Y32 = e.tensor('float32', [1, H, 1, D]);
      try {
        e.run('TRT_Attention', [Q, K16, V16], {}, { outputs: [Y16] });
        e.run('TRT_Attention', [Q, K32, V32], {}, { outputs: [Y32] });
        const a = Y16.data as Float32Array, b = Y32.data as Float32Array;
        let bad = 0, first = '', finiteOut = 0;
        for (let i = 0; i < H * D; i++) {
          if (Number.isFinite(b[i])) finiteOut++;
          if (Object.is(a[i], b[i]) || (Number.isNaN(a[i]) && Number.isNaN(b[i]))) continue;
          if (bad++ === 0) first = `output ${i}: ${a[i]} vs ${b[i]}`;
        }
        expect(bad, first).toBe(0);
        expect(finiteOut).toBe(H * D - 3); // only the three columns of the Inf / NaN V codes are not finite
      } finally {
        for (const t of [Q, K16, V16, K32, V32, Y16, Y32]) t.dispose();
      }
    });
  }

  // The flash kernel reads float16 K / V of a decode tile (one group of 4 rows) as
  // value · 2^−112 and puts the 2^112 on the Q rows (when every |q · scale| < 2^15) and on
  // the softmax weights (with a softmax); prefill tiles (several row groups) widen 16-bit
  // blocks to float32 once. Every path performs the float32 kernel's operations on the same
  // real numbers, so float16 / bfloat16 K and V must give, bit for bit, what the same values
  // as float32 K and V give: random patterns over the whole finite range (subnormals, ±0
  // included) against each path and its fallbacks (Q too large to pre-scale, a NaN query,
  // no softmax, quantized probabilities), head sizes with tails, lengths across blocks.
  for (const dt of ['float16', 'bfloat16'] as const) {
    it(`${dt} K/V give the float32 kernel's bits: decode and prefill tiles and their fallbacks`, () => {
      const toF32 = dt === 'float16' ? f16ToF32 : bf16ToF32;
      const rnd = rng(dt === 'float16' ? 97 : 98);
      // finite patterns of every exponent (bfloat16: exponents 100–140, so products stay finite)
      const pattern = (): number => {
        for (;;) {
          const h = Math.floor(rnd() * 65536);
          if (dt === 'float16' ? (h & 0x7c00) !== 0x7c00 : Math.abs(((h >> 7) & 0xff) - 120) <= 20) return h;
        }
      };
      type Case = { label: string; G: number; S: number; D: number; L: number; qMag: number; attrs: Record<string, unknown>; op: string; nanQ?: boolean; infK?: boolean; infV?: number };
      const cases: Case[] = [];
      for (const D of [128, 37, 8]) {
        cases.push({ label: `decode D ${D}`, G: 4, S: 1, D, L: 300, qMag: 0.1, attrs: {}, op: 'TRT_Attention' });
        cases.push({ label: `decode D ${D}, |q| ≥ 2^16`, G: 4, S: 1, D, L: 150, qMag: 1e5, attrs: {}, op: 'TRT_Attention' });
        cases.push({ label: `decode D ${D}, no softmax`, G: 2, S: 1, D, L: 150, qMag: 0.1, attrs: { TRT_normalization_op: 'none' }, op: 'TRT_Attention' });
        cases.push({ label: `decode D ${D}, fp8 probabilities`, G: 4, S: 1, D, L: 200, qMag: 0.1, attrs: { normalization_quantize_to_type: 'float8e4m3fn' }, op: 'TRT_QuantizedAttention' });
        cases.push({ label: `prefill D ${D}`, G: 4, S: 40, D, L: 130, qMag: 0.1, attrs: { causal_kind: 'lower_right' }, op: 'TRT_Attention' });
      }
      // more rows than the sequence-wide widening has room for (1 MiB): widened block by block
      cases.push({ label: 'prefill D 128, 1100 keys', G: 4, S: 40, D: 128, L: 1100, qMag: 0.1, attrs: { causal_kind: 'lower_right' }, op: 'TRT_Attention' });
      cases.push({ label: 'decode, a NaN query element', G: 4, S: 1, D: 64, L: 100, qMag: 0.1, attrs: {}, op: 'TRT_Attention', nanQ: true });
      // a −Inf K element (positive queries: that key's score is −∞, weight 0) sends its block
      // through the exact copy, which must then carry the 2^−112 of the pre-scaled Q rows
      cases.push({ label: 'decode, a −Inf key element', G: 4, S: 1, D: 64, L: 200, qMag: 0.1, attrs: {}, op: 'TRT_Attention', infK: true });
      // a +Inf V code in the last value of a block whose values do not fill the Inf / NaN
      // check's last 32-byte step (rows 128–149 of D = 37: 814 values, the last 14 checked one
      // by one): that output column is not finite in any head (+Inf, or NaN where the key's
      // weight underflowed to 0), and finite if the code were missed
      cases.push({ label: 'decode, a +Inf in the last value of the last V row', G: 4, S: 1, D: 37, L: 150, qMag: 0.1, attrs: {}, op: 'TRT_Attention', infV: 150 * 37 - 1 });
      const made: Tensor[] = [];
      try {
        for (const c of cases) {
          const { G, S, D, L } = c;
          const kPats = Array.from({ length: L * D }, pattern), vPats = Array.from({ length: L * D }, pattern);
          const q = Array.from({ length: G * S * D }, () => (c.infK ? 0.01 + rnd() : rnd() * 2 - 1) * c.qMag);
          if (c.nanQ) q[5] = NaN;
          if (c.infK) kPats[70 * D + 3] = dt === 'float16' ? 0xfc00 : 0xff80;
          if (c.infV !== undefined) vPats[c.infV] = dt === 'float16' ? 0x7c00 : 0x7f80;
          const t = (type: string, shape: number[], data: number[]) => { const x = ek.tensor(type, shape, data); made.push(x); return x; };
          const Q = t('float32', [1, G, S, D], q);
          const K16 = t(dt, [1, 1, L, D], kPats), V16 = t(dt, [1, 1, L, D], vPats);
          const K32 = t('float32', [1, 1, L, D], kPats.map(toF32)), V32 = t('float32', [1, 1, L, D], vPats.map(toF32));
          const [a] = ek.run(c.op, [Q, K16, V16], c.attrs) as Tensor[];
          const [b] = ek.run(c.op, [Q, K32, V32], c.attrs) as Tensor[];
          made.push(a, b);
          const ya = a.data as Float32Array, yb = b.data as Float32Array;
          let bad = 0, first = '', finite = 0;
          for (let i = 0; i < yb.length; i++) {
            if (Number.isFinite(yb[i])) finite++;
            if (Object.is(ya[i], yb[i]) || (Number.isNaN(ya[i]) && Number.isNaN(yb[i]))) continue;
            if (bad++ === 0) first = `output ${i}: ${ya[i]} vs ${yb[i]}`;
          }
          expect(bad, `${dt} ${c.label}: ${first}`).toBe(0);
          // the comparison means something: outputs are finite (all but the NaN query's head)
          expect(finite, `${dt} ${c.label}`).toBe(c.nanQ ? yb.length - S * D : c.infV !== undefined ? yb.length - G * S : yb.length);
        }
      } finally {
        for (const x of made) x.dispose();
      }
    });
  }

  // One key (score 0, weight exactly 1) makes the output the value row itself: all 65,536
  // float16 patterns as one V row (both widening loads of the P·V loop) must come back as
  // their exact float32 values — subnormals, ±Inf and NaN included (a −0 may come back +0:
  // the accumulator starts at +0).
  for (const build of ['simd', 'scalar'] as const) {
    it(`every pattern (${build} build)`, () => {
      const e = build === 'simd' ? ek : eks;
      const D = 65536;
      const Q = e.tensor('float32', [1, 1, 1, D]), K = e.tensor('float16', [1, 1, 1, D]);
      const V = e.tensor('float16', [1, 1, 1, D], Array.from({ length: D }, (_, i) => i));
      const Y = e.tensor('float32', [1, 1, 1, D]);
      try {
        e.run('TRT_Attention', [Q, K, V], {}, { outputs: [Y] });
        const y = Y.data as Float32Array;
        let bad = 0, first = '';
        for (let i = 0; i < D; i++) {
          const want = f16ToF32(i), got = y[i];
          if (Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)) || (got === 0 && want === 0)) continue;
          if (bad++ === 0) first = `0x${i.toString(16)}: ${got} vs ${want}`;
        }
        expect(bad, first).toBe(0);
      } finally {
        for (const t of [Q, K, V, Y]) t.dispose();
      }
    });
    it(`every pattern through the flash kernel, finite rows without the Inf / NaN patch (${build} build)`, () => {
      // two query heads on one KV head: the flash kernel (one query row per KV head goes to
      // the decode kernel of llm.ts, as above). Its float16 blocks without Inf / NaN codes take
      // the three-op widening, blocks with them an exact float32 copy: both, pattern by pattern
      const e = build === 'simd' ? ek : eks;
      const finite = Array.from({ length: 65536 }, (_, i) => i).filter((i) => (i & 0x7c00) !== 0x7c00);
      for (const pats of [finite, Array.from({ length: 65536 }, (_, i) => i)]) {
        const D = pats.length;
        const Q = e.tensor('float32', [1, 2, 1, D]), K = e.tensor('float16', [1, 1, 1, D]);
        const V = e.tensor('float16', [1, 1, 1, D], pats);
        const Y = e.tensor('float32', [1, 2, 1, D]);
        try {
          e.run('TRT_Attention', [Q, K, V], {}, { outputs: [Y] });
          const y = Y.data as Float32Array;
          let bad = 0, first = '';
          for (let h = 0; h < 2; h++) {
            for (let i = 0; i < D; i++) {
              const want = f16ToF32(pats[i]), got = y[h * D + i];
              if (Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)) || (got === 0 && want === 0)) continue;
              if (bad++ === 0) first = `head ${h} 0x${pats[i].toString(16)}: ${got} vs ${want}`;
            }
          }
          expect(bad, `${D} patterns: ${first}`).toBe(0);
        } finally {
          for (const t of [Q, K, V, Y]) t.dispose();
        }
      }
    });
  }
});
