/**
 * TRT_QuantizedAttention against the float64 reference with the same quantization
 * (float8e4m3fn saturating round-to-nearest-even, int8 round-half-even clamp) of the
 * probabilities; a near-tie in the reference allows one quantization step of slack.
 * Also: attention over float16 / bfloat16 K and V read directly.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, rng, type Kernels, type Tensor } from './helpers';
import { type Plain, decode, e4m3, int8q, refTrt } from './ref/attention';

let ek: Kernels;
let eks: Kernels;
beforeAll(async () => {
  ek = await init();
  eks = await init({ build: 'scalar' });
});


const f32 = (r: () => number, n: number) => Array.from({ length: n }, () => Math.fround(r() * 3 - 1.5));

function close(y: Tensor, want: ReturnType<typeof refTrt>, label: string): void {
  expect([...y.shape], `${label} shape`).toEqual(want.shape);
  const g = decode({ dtype: y.dtype, shape: [...y.shape], data: y.data as Float32Array });
  const tol = y.dtype === 'float32' ? 2e-4 : y.dtype === 'float16' ? 2e-3 : 1e-2;
  for (let i = 0; i < g.length; i++) {
    const t = tol * (1 + Math.abs(want.values[i])) + want.slack[i];
    if (!(Math.abs(g[i] - want.values[i]) <= t)) expect.fail(`${label}[${i}]: got ${g[i]}, want ${want.values[i]} (tolerance ${t})`);
  }
}

describe('the reference quantizers', () => {
  it('e4m3fn: round to nearest even, subnormal step 2^-9, saturation at 448', () => {
    expect(e4m3(1.0625).v).toBe(1); // tie between 1 and 1.125 → even mantissa 1.000
    expect(e4m3(1.1875).v).toBe(1.25); // tie between 1.125 and 1.25 → even 1.25
    expect(e4m3(2 ** -9 * 1.5).v).toBe(2 ** -8); // subnormal tie → even code 2
    expect(e4m3(2 ** -10).v).toBe(0); // half the smallest subnormal → 0 (even)
    expect(e4m3(460).v).toBe(448);
    expect(e4m3(1e9).v).toBe(448);
    expect(e4m3(-500).v).toBe(-448);
  });
  it('int8: half to even, clamp', () => {
    expect([0.5, 1.5, 2.5, -0.5, 126.5, 127.6, 300, -300].map((x) => int8q(x).v)).toEqual([0, 2, 2, 0, 126, 127, 127, -128]);
  });
});

const qArb = fc.record({
  seed: fc.integer(),
  qForm: fc.constantFrom('padded_bhnd', 'packed_nhd'),
  kvForm: fc.constantFrom('padded_bhnd', 'packed_nhd'),
  threeD: fc.boolean(),
  B: fc.integer({ min: 1, max: 3 }),
  Hkv: fc.integer({ min: 1, max: 2 }),
  G: fc.constantFrom(1, 2, 4, 8),
  D: fc.constantFrom(1, 3, 4, 8, 13, 32),
  qLens: fc.array(fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 36 })), { minLength: 3, maxLength: 3 }),
  kvLens: fc.array(fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 140 })), { minLength: 3, maxLength: 3 }),
  kvLensGiven: fc.boolean(),
  causal: fc.boolean(),
  mask: fc.constantFrom('none', 'bool', 'float'),
  maskShort: fc.integer({ min: 0, max: 3 }),
  norm: fc.constantFrom('softmax', 'softmax', 'none'),
  type: fc.constantFrom('fp8', 'int8', 'float8e4m3fn', 17, 'int8', 3),
  qScale: fc.constantFrom(null, 0.01, 0.5, 1 / 127, 2),
  scale: fc.constantFrom(undefined, 0.7),
  kvDtype: fc.constantFrom('float32', 'float32', 'float16', 'bfloat16'),
});

type QCfg = typeof qArb extends fc.Arbitrary<infer T> ? T : never;

function bits(dtype: string, n: number, r: () => number): number[] {
  return Array.from({ length: n }, () => {
    const s = r() < 0.5 ? 1 : 0;
    return dtype === 'float16' ? (s << 15) | ((10 + Math.floor(r() * 6)) << 10) | Math.floor(r() * 1024) : (s << 15) | ((122 + Math.floor(r() * 6)) << 7) | Math.floor(r() * 128);
  });
}

function qCase(c: QCfg): { inputs: (Plain | null)[]; attrs: Record<string, unknown> } {
  const r = rng(c.seed);
  const B = c.B, Hkv = c.Hkv, Hq = Hkv * c.G, D = c.D;
  const qLens = c.qLens.slice(0, B), kvLens = c.kvLens.slice(0, B);
  const cum = (a: number[]) => a.reduce((acc, x) => [...acc, acc[acc.length - 1] + x], [0]);
  const data = (dt: string, n: number) => (dt === 'float32' ? f32(r, n) : bits(dt, n, r));
  const three = c.threeD;
  const Nq = Math.max(0, ...qLens), Nkv = Math.max(0, ...kvLens) + 1;
  const qShape = c.qForm === 'packed_nhd' ? [cum(qLens)[B], Hq, D] : three ? [B, Nq, Hq * D] : [B, Hq, Nq, D];
  const kvPacked = c.kvForm === 'packed_nhd';
  const kvN = kvPacked ? cum(kvLens)[B] : c.kvLensGiven ? Nkv : Math.max(0, ...kvLens);
  const kShape = kvPacked ? [kvN, Hkv, D] : three ? [B, kvN, Hkv * D] : [B, Hkv, kvN, D];
  const n = (s: number[]) => s.reduce((a, x) => a * x, 1);
  const Q: Plain = { dtype: 'float32', shape: qShape, data: data('float32', n(qShape)) };
  const K: Plain = { dtype: c.kvDtype, shape: kShape, data: data(c.kvDtype, n(kShape)) };
  const V: Plain = { dtype: c.kvDtype, shape: kShape, data: data(c.kvDtype, n(kShape)) };
  const QL: Plain | null = c.qForm === 'packed_nhd' ? { dtype: 'int32', shape: [B + 1], data: cum(qLens) } : null;
  const KL: Plain | null = kvPacked ? { dtype: 'int32', shape: [B + 1], data: cum(kvLens) } : c.kvLensGiven ? { dtype: 'int32', shape: [B], data: kvLens } : null;
  const NqM = c.qForm === 'packed_nhd' ? Nq : Nq;
  const NkvM = kvPacked ? Math.max(0, ...kvLens) : kvN;
  let M: Plain | null = null;
  if (c.mask !== 'none') {
    const last = Math.max(0, NkvM - c.maskShort);
    const cnt = NqM * last;
    M = c.mask === 'bool'
      ? { dtype: 'bool', shape: [NqM, last], data: Array.from({ length: cnt }, () => (r() < 0.8 ? 1 : 0)) }
      : { dtype: 'float32', shape: [1, 1, NqM, last], data: Array.from({ length: cnt }, () => (r() < 0.1 ? -Infinity : Math.fround(r() * 2 - 1))) };
  }
  const QS: Plain | null = c.qScale === null ? null : { dtype: 'float32', shape: [], data: [c.qScale] };
  const attrs: Record<string, unknown> = { query_form: c.qForm, kv_form: c.kvForm, normalization_quantize_to_type: c.type };
  if (three && c.qForm !== 'packed_nhd') attrs.q_num_heads = Hq;
  if (three && !kvPacked) attrs.kv_num_heads = Hkv;
  if (c.causal) attrs.is_causal = 1;
  if (c.norm === 'none') attrs.TRT_normalization_op = 'none';
  if (c.scale !== undefined) attrs.scale = c.scale;
  return { inputs: [Q, K, V, M, QS, QL, KL], attrs };
}

describe('TRT_QuantizedAttention matches the float64 reference with the same quantization', () => {
  const valid = (c: QCfg) => !(c.threeD && (c.qForm === 'packed_nhd') !== (c.kvForm === 'packed_nhd'));
  const check = (k: Kernels, c: QCfg) => {
    const { inputs, attrs } = qCase(c);
    const [y] = k.run('TRT_QuantizedAttention', inputs, attrs) as Tensor[];
    const refAttrs = { ...attrs, normalization_quantize_to_type: c.type === 'int8' || c.type === 3 ? 'int8' : 'fp8' };
    close(y, refTrt(inputs, refAttrs, true), 'Y');
    y.dispose();
  };
  it('forms × 3D/4D × causal × masks × fp8/int8 × scales × K/V dtypes (SIMD build)', () => {
    fc.assert(fc.property(qArb.filter(valid), (c) => check(ek, c)), { seed: 51, numRuns: 120 });
  });
  it('the same in the scalar build', () => {
    fc.assert(fc.property(qArb.filter(valid), (c) => check(eks, c)), { seed: 52, numRuns: 30 });
  });
  it('decode over long contiguous float32 K/V (P·V touches ahead in block pairs: 256+ keys, D a multiple of 8)', () => {
    const dec = fc.record({
      D: fc.constantFrom(8, 24), L: fc.integer({ min: 250, max: 700 }), cut: fc.integer({ min: 0, max: 70 }),
      type: fc.constantFrom('float8e4m3fn', 'int8'), seed: fc.integer(),
    });
    fc.assert(fc.property(dec, ({ D, L, cut, type, seed }) => {
      const r = rng(seed), Hkv = 2, Hq = 8;
      const Q: Plain = { dtype: 'float32', shape: [1, Hq, 1, D], data: f32(r, Hq * D) };
      const K: Plain = { dtype: 'float32', shape: [1, Hkv, L, D], data: f32(r, Hkv * L * D) };
      const V: Plain = { dtype: 'float32', shape: [1, Hkv, L, D], data: f32(r, Hkv * L * D) };
      const KL: Plain = { dtype: 'int32', shape: [1], data: [L - cut] };
      const inputs = [Q, K, V, null, null, null, KL];
      const attrs = { normalization_quantize_to_type: type };
      const [y] = ek.run('TRT_QuantizedAttention', inputs, attrs) as Tensor[];
      close(y, refTrt(inputs, { normalization_quantize_to_type: type === 'int8' ? 'int8' : 'fp8' }, true), 'Y');
      y.dispose();
    }), { seed: 53, numRuns: 25 });
  });
  it('a subnormal normalization_quantize_scale (1/s overflows float32): zero probabilities stay 0, not NaN', () => {
    // hidden keys (bool mask, causal frontier) and exp underflow give p = 0; Q(0 / s) · s = 0.
    // The kernel multiplied by 1/s = ∞ there: 0 · ∞ = NaN made the whole row NaN.
    const r = rng(17);
    const Q = { dtype: 'float32', shape: [1, 2, 3, 4], data: f32(r, 24) };
    const K = { dtype: 'float32', shape: [1, 1, 6, 4], data: f32(r, 24).map((x, i) => (i === 4 ? 300 : x)) };
    const V = { dtype: 'float32', shape: [1, 1, 6, 5], data: f32(r, 30) };
    const M = { dtype: 'bool', shape: [6], data: [1, 1, 0, 1, 0, 1] };
    for (const k of [ek, eks]) {
      for (const [sDtype, sData] of [['float32', [1e-39]], ['bfloat16', [0x000b]]] as const) {
        const s = { dtype: sDtype, shape: [], data: sData };
        for (const type of ['fp8', 'int8']) {
          for (const [mask, extra] of [[M, {}], [null, { is_causal: 1 }], [null, {}]] as const) {
            const attrs = { normalization_quantize_to_type: type, ...extra };
            const inputs = [Q, K, V, mask, s];
            const [y] = k.run('TRT_QuantizedAttention', inputs, attrs) as Tensor[];
            const label = `${k.build} ${sDtype} ${type} ${JSON.stringify(extra)} mask ${!!mask}`;
            expect((y.data as Float32Array).every(Number.isFinite), label).toBe(true);
            close(y, refTrt(inputs as Plain[], attrs, true), label);
            y.dispose();
          }
        }
      }
    }
  });
  it('quantization is really applied: fp8 with a coarse scale differs from plain attention', () => {
    const r = rng(9);
    const Q = { dtype: 'float32', shape: [1, 1, 1, 8], data: f32(r, 8) };
    const K = { dtype: 'float32', shape: [1, 1, 50, 8], data: f32(r, 400) };
    const V = { dtype: 'float32', shape: [1, 1, 50, 8], data: f32(r, 400) };
    const s = { dtype: 'float32', shape: [1], data: [0.25] };
    const [a] = ek.run('TRT_QuantizedAttention', [Q, K, V, null, s], { normalization_quantize_to_type: 'fp8' }) as Tensor[];
    const [b] = ek.run('TRT_Attention', [{ ...Q, data: (Q.data as number[]).map((x) => Math.fround(x / Math.sqrt(8))) }, K, V]) as Tensor[];
    const da = Array.from(a.data as Float32Array), db = Array.from(b.data as Float32Array);
    expect(da.some((x, i) => Math.abs(x - db[i]) > 1e-3)).toBe(true);
    a.dispose();
    b.dispose();
  });
  it('p / s is a true division, as QuantizeLinear divides: quotients next to a rounding tie land on its side', () => {
    // With TRT_normalization_op 'none', scale 1, D = 1, one key k = 1 and v = 1, query row i
    // outputs Q(x_i / s) · s. The x_i are float32 values next to s times a tie of the code grid,
    // chosen so that the float32 quotient x / s and the product x · fl(1/s) round to different
    // codes: a kernel multiplying by the reciprocal fails on every one of them.
    const round = (t: number) => Math.fround(t);
    const e4m3Value = (c: number) => ((c >> 3) === 0 ? (c & 7) * 2 ** -9 : (1 + (c & 7) / 8) * 2 ** ((c >> 3) - 7));
    const halfway = Array.from({ length: 126 }, (_, c) => (e4m3Value(c) + e4m3Value(c + 1)) / 2);
    const cases: { type: string; s: number; ties: number[]; q: (u: number) => number }[] = [
      { type: 'int8', s: round(1 / 127), ties: Array.from({ length: 255 }, (_, k) => k - 127.5), q: (u) => int8q(u).v },
      { type: 'fp8', s: round(0.1), ties: [...halfway, ...halfway.map((t) => -t)], q: (u) => e4m3(u).v },
    ];
    for (const { type, s, ties, q } of cases) {
      const inv = round(1 / s);
      const xs: number[] = [];
      for (const t of ties) {
        // walk float32 neighbours of t · s until the two roundings disagree
        const f = new Float32Array([t * s]), b = new Int32Array(f.buffer), b0 = b[0];
        for (let o = -64; o <= 64; o++) {
          b[0] = b0 + o;
          const x = f[0];
          if (q(round(x / s)) !== q(round(x * inv))) { xs.push(x); break; }
        }
        if (xs.length === 16) break;
      }
      expect(xs.length, `${type}: near-tie inputs found`).toBeGreaterThanOrEqual(5);
      const n = xs.length;
      const Q = { dtype: 'float32', shape: [1, 1, n, 1], data: xs };
      const K = { dtype: 'float32', shape: [1, 1, 1, 1], data: [1] };
      const V = { dtype: 'float32', shape: [1, 1, 1, 1], data: [1] };
      const S = { dtype: 'float32', shape: [], data: [s] };
      for (const k of [ek, eks]) {
        const [y] = k.run('TRT_QuantizedAttention', [Q, K, V, null, S], { normalization_quantize_to_type: type, TRT_normalization_op: 'none', scale: 1 }) as Tensor[];
        const got = Array.from(y.data as Float32Array);
        expect(got, `${k.build} ${type}`).toEqual(xs.map((x) => round(q(round(x / s)) * s)));
        y.dispose();
      }
    }
  });
});

describe('float16 / bfloat16 K and V read directly by TRT_Attention', () => {
  it('agree with the reference on the decoded values, decode and prefill shapes', () => {
    for (const [dt, seed] of [['float16', 1], ['bfloat16', 2]] as const) {
      for (const [Sq, G] of [[1, 4], [37, 1], [5, 2]]) {
        const r = rng(seed * 100 + Sq);
        const N = 150, D = 20, Hkv = 2;
        const Q = { dtype: 'float32', shape: [1, Hkv * G, Sq, D], data: f32(r, Hkv * G * Sq * D) };
        const K = { dtype: dt, shape: [1, Hkv, N, D], data: bits(dt, Hkv * N * D, r) };
        const V = { dtype: dt, shape: [1, Hkv, N, D], data: bits(dt, Hkv * N * D, r) };
        const attrs = { causal_kind: 'lower_right' };
        const [y] = ek.run('TRT_Attention', [Q, K, V], attrs) as Tensor[];
        close(y, refTrt([Q, K, V], attrs, false), `${dt} Sq=${Sq}`);
        y.dispose();
      }
    }
  });
});
