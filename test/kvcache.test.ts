/**
 * KVCache: append in place (vs TRT_KVCacheUpdate / TensorScatter composed by hand),
 * attention over the valid prefix (vs a plain reference), ragged batches with slot
 * resets, sliding windows, the mask-prefix rule, capacity overflow with nothing written,
 * step bookkeeping errors, and a long loop with stats() unchanged.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { TRT_ATTENTION_MIN_WORK, bf16ToF32, expectKernelError, f16ToF32, init, memorySnapshot, type Kernels, type Tensor } from './helpers.js';
import { attendRow } from './ref/llm.js';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});

const lcg = (seed: number) => { let s = seed >>> 0; return () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296 * 2 - 1; }; };

/** Reference cache: per sequence, the list of every K/V row ever appended ([H][D] each), by position. */
class RefCache {
  k: number[][][][] = [];
  v: number[][][][] = [];
  /** ring: rows a window keeps (window + maxAppend − 1); positions older than kvLen − ring are gone */
  constructor(readonly B: number, readonly window: number, readonly ring = window) {
    for (let b = 0; b < B; b++) { this.k.push([]); this.v.push([]); }
  }
  reset(b: number) { this.k[b] = []; this.v[b] = []; }
  /** attention output for query q [D] of q-head h of sequence b at absolute position P (a window: P − window + 1 … P, as far as the ring still holds them). */
  attend(b: number, h: number, group: number, q: number[], P: number, kvLen: number, scale: number): number[] {
    const lo = this.window ? Math.max(0, kvLen - this.ring, P - this.window + 1) : 0;
    const keys: number[][] = [], vals: number[][] = [];
    for (let p = lo; p <= P; p++) { keys.push(this.k[b][p][Math.floor(h / group)]); vals.push(this.v[b][p][Math.floor(h / group)]); }
    return attendRow(q, keys, vals, scale);
  }
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, label: string, tol = 2e-5): void {
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol + tol * Math.abs(want[i]))) expect.fail(`${label}[${i}]: got ${got[i]}, want ${want[i]}`);
  }
}

/** Random padded [B,H,S,D] tensor plus its rows as [b][s][h][d]. */
function randomPadded(B: number, H: number, S: number, D: number, rnd: () => number): { t: Tensor; rows: number[][][][] } {
  return randomPaddedIn(ek, B, H, S, D, rnd);
}
function randomPaddedIn(ek: Kernels, B: number, H: number, S: number, D: number, rnd: () => number): { t: Tensor; rows: number[][][][] } {
  const data = new Float32Array(B * H * S * D).map(() => rnd());
  const rows = Array.from({ length: B }, (_, b) => Array.from({ length: S }, (_, s) => Array.from({ length: H }, (_, h) =>
    Array.from(data.subarray(((b * H + h) * S + s) * D, ((b * H + h) * S + s + 1) * D)))));
  return { t: ek.tensor('float32', [B, H, S, D], data), rows };
}

describe('KVCache construction and views', () => {
  it('allocates once; keys/values are views; dispose frees everything', () => {
    const before = ek.stats();
    const c = ek.kvCache({ layers: 3, batch: 2, kvHeads: 2, headDim: 8, capacity: 16 });
    expect(c.bytes).toBe(3 * 2 * 2 * 2 * 16 * 8 * 4);
    expect(c.dtype).toBe('float32');
    expect([...c.lengths]).toEqual([0, 0]);
    const k1 = c.keys(1), v1 = c.values(1);
    expect(k1.shape).toEqual([2, 2, 16, 8]);
    expect(v1.byteOffset - k1.byteOffset).toBe(2 * 2 * 16 * 8 * 4);
    expect(c.keys(1)).toBe(k1);
    const mid = ek.stats();
    k1.dispose(); // a view: frees nothing
    expect(ek.stats().bytesInUse).toBe(mid.bytesInUse);
    expect(c.keys(1).disposed).toBe(false);
    c.dispose();
    expect(ek.stats().bytesInUse).toBe(before.bytesInUse);
    expect(ek.stats().tensorsLive).toBe(before.tensorsLive);
    expectKernelError(() => c.append(0, k1, k1), 'DISPOSED');
  });
  it('rejects bad options', () => {
    expectKernelError(() => ek.kvCache({ layers: 0, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 }), 'INVALID_ARGUMENT', /layers/);
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4 }), 'INVALID_ARGUMENT', /capacity/);
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, dtype: 'float8e5m2' }), 'INVALID_DTYPE', /float8e4m3fn/);
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, window: 8 }), 'INVALID_ARGUMENT', />= window/);
    // misspelled options are errors, not silently ignored (a `windw` would give an unbounded cache)
    const before = ek.stats();
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, windw: 2 } as never), 'INVALID_ARGUMENT', /unknown option "windw"/);
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, maxAppend: 2 }), 'INVALID_ARGUMENT', /maxAppend: only with a window/);
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, window: 4, maxAppend: 0 }), 'INVALID_ARGUMENT', /maxAppend/);
    // every option is checked before anything is allocated
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 2, headDim: 4, capacity: 4, queryHeads: 3 }), 'INVALID_ARGUMENT', /queryHeads: expected a multiple of kvHeads \(2\), got 3/);
    expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 2, headDim: 4, capacity: 4, queryHeads: 0 }), 'INVALID_ARGUMENT', /queryHeads/);
    expect(ek.stats().tensorsLive).toBe(before.tensorsLive);
    expect(ek.stats().bytesInUse).toBe(before.bytesInUse);
  });
  it('a window ring holds window + maxAppend − 1 rows; a longer append is an error with nothing written', () => {
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, window: 4, maxAppend: 2 });
    const k = ek.tensor('float32', [1, 1, 6, 4], new Float32Array(24).fill(1));
    try {
      expect(c.keys(0).shape).toEqual([1, 1, 5, 4]);
      const before = memorySnapshot(ek);
      expectKernelError(() => c.append(0, k, k), 'INVALID_VALUE', /appends 6 tokens, more than the ring's 5 rows \(window 4 \+ maxAppend − 1\)/);
      expect(Buffer.compare(memorySnapshot(ek), before)).toBe(0);
      c.append(0, k, k, { lengths: [5] });
      expect([...c.advance()]).toEqual([5]);
    } finally {
      c.dispose(); k.dispose();
    }
  });
  it('dtype by name or ONNX TensorProto code', () => {
    for (const [code, name] of [[1, 'float32'], [10, 'float16'], [16, 'bfloat16'], [3, 'int8'], [17, 'float8e4m3fn']] as const) {
      const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, dtype: code as never });
      expect(c.dtype).toBe(name);
      c.dispose();
    }
  });
  it('append and attend reject unknown options before writing', () => {
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 });
    const k = ek.tensor('float32', [1, 1, 2, 4], Array.from({ length: 8 }, (_, i) => i + 1));
    const before = c.keys(0).bytes().slice();
    expectKernelError(() => c.append(0, k, k, { length: [1] } as never), 'INVALID_ARGUMENT', /unknown option "length"/);
    expect(c.keys(0).bytes()).toEqual(before);
    expect([...c.lengths]).toEqual([0]);
    c.append(0, k, k);
    expectKernelError(() => c.attend(0, ek.tensor('float32', [1, 1, 2, 4]), { casual: false } as never), 'INVALID_ARGUMENT', /unknown option "casual"/);
    c.dispose();
    k.dispose();
  });
});

describe('append + attend vs TRT_KVCacheUpdate / TensorScatter / TRT_Attention composed by hand', () => {
  it('padded and packed ragged appends write the same bytes as the operators; attention agrees with TRT_Attention', () => {
    const B = 3, H = 2, D = 5, N = 12, L = 2;
    const rnd = lcg(1);
    const c = ek.kvCache({ layers: L, batch: B, kvHeads: H, headDim: D, capacity: N });
    const byHand = Array.from({ length: 2 * L }, () => ek.tensor('float32', [B, H, N, D]));
    const len = [0, 0, 0];
    const ul = (cum: number[]) => ({ dtype: 'int32', shape: [B + 1], data: cum });
    try {
      for (let step = 0; step < 6; step++) {
        const counts = [step % 3, 1, (step * 2) % 3];
        const packed = step % 2 === 1;
        const T = counts.reduce((a, x) => a + x, 0);
        const cum = [0]; counts.forEach((x) => cum.push(cum[cum.length - 1] + x));
        for (let l = 0; l < L; l++) {
          const shape = packed ? [T, H, D] : [B, H, 2, D];
          const size = shape.reduce((a, x) => a * x, 1);
          const k = ek.tensor('float32', shape, new Float32Array(size).map(() => rnd()));
          const v = ek.tensor('float32', shape, new Float32Array(size).map(() => rnd()));
          c.append(l, k, v, { lengths: counts });
          const attrs = { update_form: packed ? 'packed_nhd' : 'padded_bhnd' };
          const wi = { dtype: 'int32', shape: [B], data: len };
          ek.run('TRT_KVCacheUpdate', [byHand[2 * l], k, wi, ul(cum)], attrs);
          ek.run('TRT_KVCacheUpdate', [byHand[2 * l + 1], v, wi, ul(cum)], attrs);
          k.dispose(); v.dispose();
        }
        // attention: the cache's builtin kernel vs TRT_Attention run by hand on the by-hand caches
        if (!packed) {
          const q = ek.tensor('float32', [B, 2 * H, 2, D], new Float32Array(B * 2 * H * 2 * D).map(() => rnd()));
          const qs = ek.tensor('float32', q.shape, (q.data as Float32Array).map((x) => x * 0.5));
          for (let l = 0; l < L; l++) {
            const mine = c.attend(l, q, { scale: 0.5, impl: 'builtin' });
            const kvl = { dtype: 'int32', shape: [B], data: len.map((x, b) => x + counts[b]) };
            const [want] = ek.run('TRT_Attention', [qs, byHand[2 * l], byHand[2 * l + 1], null, ul(cum), kvl], { causal_kind: 'lower_right' }) as Tensor[];
            const m = mine.data as Float32Array, w = want.data as Float32Array;
            for (let i = 0; i < w.length; i++) expect(Math.abs(m[i] - w[i]), `step ${step} layer ${l} [${i}]`).toBeLessThan(1e-5);
            mine.dispose(); want.dispose();
          }
          q.dispose(); qs.dispose();
        }
        c.advance();
        counts.forEach((x, b) => { len[b] += x; });
        expect([...c.lengths]).toEqual(len);
        for (let l = 0; l < L; l++) {
          expect(c.keys(l).bytes()).toEqual(byHand[2 * l].bytes());
          expect(c.values(l).bytes()).toEqual(byHand[2 * l + 1].bytes());
        }
      }
    } finally {
      c.dispose();
      byHand.forEach((t) => t.dispose());
    }
  });
  it('a window cache writes what circular TensorScatter writes', () => {
    const B = 2, H = 1, D = 4, W = 5;
    const rnd = lcg(2);
    const c = ek.kvCache({ layers: 1, batch: B, kvHeads: H, headDim: D, window: W });
    const kh = ek.tensor('float32', [B, H, W, D]), vh = ek.tensor('float32', [B, H, W, D]);
    try {
      let pos = 0;
      for (let step = 0; step < 12; step++) {
        const S = 1 + (step % 3);
        const k = randomPadded(B, H, S, D, rnd).t, v = randomPadded(B, H, S, D, rnd).t;
        c.append(0, k, v);
        const wi = { dtype: 'int64', shape: [B], data: [BigInt(pos % W), BigInt(pos % W)] };
        ek.run('TensorScatter', [kh, k, wi], { mode: 'circular' });
        ek.run('TensorScatter', [vh, v, wi], { mode: 'circular' });
        c.advance();
        pos += S;
        expect(c.keys(0).bytes()).toEqual(kh.bytes());
        expect(c.values(0).bytes()).toEqual(vh.bytes());
        k.dispose(); v.dispose();
      }
      expect([...c.lengths]).toEqual([pos, pos]);
    } finally {
      c.dispose(); kh.dispose(); vh.dispose();
    }
  });
});

/** Independent round-to-nearest-even into a 16-bit float pattern, by search over the decoded patterns. */
function toHalfBits(x: number, dtype: 'float16' | 'bfloat16'): number {
  const dec = dtype === 'float16' ? f16ToF32 : bf16ToF32;
  const inf = dtype === 'float16' ? 0x7c00 : 0x7f80;
  const infAt = dtype === 'float16' ? 65536 : 2 ** 128; // where the pattern after the largest finite one would sit
  const val = (p: number) => (p === inf ? infAt : dec(p));
  if (Number.isNaN(x)) return dtype === 'float16' ? 0x7e00 : 0x7fc0;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | inf;
  let lo = 0, hi = inf; // largest p with val(p) <= a
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (val(mid) <= a) lo = mid; else hi = mid - 1; }
  if (lo === inf) return sign | inf;
  const d0 = a - val(lo), d1 = val(lo + 1) - a;
  return sign | (d0 < d1 ? lo : d1 < d0 ? lo + 1 : (lo & 1 ? lo + 1 : lo));
}
/** Round half to even. */
const rne = (x: number) => { const f = Math.floor(x), d = x - f; return d > 0.5 ? f + 1 : d < 0.5 ? f : (f % 2 === 0 ? f : f + 1); };
/** int8 row quantization (reference): scale = max|x| / 127 (float32), q = rne(x / scale) clamped; returns [q, scale]. */
function int8Row(row: number[]): [number[], number] {
  const r = row.map(Math.fround);
  const amax = Math.max(0, ...r.map(Math.abs));
  const scale = Math.fround(amax / 127);
  return [r.map((x) => (scale > 0 ? Math.min(127, Math.max(-127, rne(Math.fround(x / scale)))) : 0)), scale];
}
/** e4m3fn value of every pattern 0..0x7e (positive), for the reference encoder. */
const E4M3 = Array.from({ length: 0x7f }, (_, p) => { const e = p >> 3, m = p & 7; return e === 0 ? m * 2 ** -9 : (1 + m / 8) * 2 ** (e - 7); });
/** Independent float8e4m3fn round-to-nearest-even (saturating to 448): the pattern. */
function toE4m3(x: number): number {
  const a = Math.abs(x), sign = x < 0 ? 0x80 : 0;
  let best = 0;
  for (let p = 1; p < E4M3.length; p++) {
    const d = Math.abs(E4M3[p] - a), db = Math.abs(E4M3[best] - a);
    if (d < db || (d === db && (p & 1) === 0 && (best & 1) === 1)) best = p;
  }
  return a === 0 ? 0 : sign | best;
}
/** float8e4m3fn row quantization (reference): scale = max|x| / 448, bytes = e4m3(x / scale). */
function e4m3Row(row: number[]): [number[], number] {
  const r = row.map(Math.fround);
  const amax = Math.max(0, ...r.map(Math.abs));
  const scale = Math.fround(amax / 448);
  return [r.map((x) => (scale > 0 ? toE4m3(Math.fround(x / scale)) : 0)), scale];
}
/** A cache row as the kernels read it back. */
const quantRow = (row: number[], dtype: string): number[] => {
  if (dtype === 'float8e4m3fn') {
    const [q, sc] = e4m3Row(row);
    return q.map((p) => (p & 0x80 ? -1 : 1) * E4M3[p & 0x7f] * sc);
  }
  if (dtype !== 'int8') return row.map((x) => quantize(x, dtype));
  const [q, sc] = int8Row(row);
  return q.map((v) => v * sc);
};
const quantize = (x: number, dtype: string) => (dtype === 'float32' ? Math.fround(x) : (dtype === 'float16' ? f16ToF32 : bf16ToF32)(toHalfBits(Math.fround(x), dtype as 'float16')));

describe('half-precision caches (float16, bfloat16)', () => {
  it('append rounds float32 rows to nearest even in the write pass (boundaries, subnormals, overflow, Inf, NaN)', () => {
    const specials = [0, -0, 1, -1, 65504, 65519.99, 65520, 65536, 1e6, -1e6, Infinity, -Infinity, NaN, 2 ** -24, 2 ** -25, 3 * 2 ** -26, 2 ** -14, 2 ** -14 - 2 ** -25, 6.1e-5, 1e-8, 3.4e38, 1.0009765625, 1.00048828125, 1.00146484375, 1 + 2 ** -8, 1 + 3 * 2 ** -9];
    const rnd = lcg(9);
    const vals = [...specials];
    while (vals.length < 4 * 64) vals.push(rnd() * 2 ** Math.floor(rnd() * 40 - 20));
    for (const dtype of ['float16', 'bfloat16'] as const) {
      const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 4, headDim: 64, capacity: 2, dtype });
      const k = ek.tensor('float32', [1, 4, 1, 64], vals), v = ek.tensor('float32', [1, 4, 1, 64], vals.map((x) => -x));
      try {
        c.append(0, k, v);
        c.advance();
        const kb = c.keys(0).data as Uint16Array, vb = c.values(0).data as Uint16Array;
        expect(c.keys(0).dtype).toBe(dtype);
        for (let h = 0; h < 4; h++) {
          for (let i = 0; i < 64; i++) {
            const x = Math.fround(vals[h * 64 + i]);
            // NaN: a quiet NaN (its sign bit is whatever the engine's float32 NaN carried)
            const m = Number.isNaN(x) ? 0x7fff : 0xffff;
            expect(kb[h * 2 * 64 + i] & m, `${dtype} k ${x}`).toBe(toHalfBits(x, dtype) & m);
            expect(vb[h * 2 * 64 + i] & m, `${dtype} v ${-x}`).toBe(toHalfBits(-x, dtype) & m);
          }
        }
        // rows already in the cache's dtype are copied bit for bit
        const raw = ek.tensor(dtype, [1, 4, 1, 64], Array.from({ length: 256 }, (_, i) => (i * 2654435761) & 0xffff));
        c.append(0, raw, raw);
        const kb2 = c.keys(0).data as Uint16Array;
        for (let h = 0; h < 4; h++) for (let i = 0; i < 64; i++) expect(kb2[(h * 2 + 1) * 64 + i]).toBe((raw.data as Uint16Array)[h * 64 + i]);
        raw.dispose();
      } finally {
        c.dispose(); k.dispose(); v.dispose();
      }
    }
  });
});

describe('float8e4m3fn cache', () => {
  it('append quantizes each (token, head) row with scale max|x|/448, e4m3 round to nearest even, as Cast does', () => {
    const rnd = lcg(23);
    const H = 2, D = 40;
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: H, headDim: D, capacity: 2, dtype: 'float8e4m3fn' });
    // head 0: values spanning normals, subnormals (after scaling) and exact ties; head 1 random
    const rows = [
      Array.from({ length: D }, (_, i) => (i === 0 ? -448 : i < 10 ? (i % 2 ? 1 : -1) * 2 ** -(i + 3) : i < 20 ? 1 + (i - 10) / 16 + 1 / 32 : (i - 20) * 7.3)),
      Array.from({ length: D }, () => rnd() * 5),
    ];
    const k = ek.tensor('float32', [1, H, 1, D], rows.flat());
    try {
      c.append(0, k, k);
      c.advance();
      const kq = c.keys(0).data as Uint8Array, ks = c.keyScales(0).data as Float32Array;
      expect(c.keys(0).dtype).toBe('float8e4m3fn');
      for (let h = 0; h < H; h++) {
        const [q, sc] = e4m3Row(rows[h]);
        expect(ks[h * 2], `scale h${h}`).toBe(sc);
        expect(Array.from(kq.subarray(h * 2 * D, h * 2 * D + D)), `bytes h${h}`).toEqual(q);
        // the package's Cast (saturating) agrees on the scaled values
        const scaled = rows[h].map((x) => Math.fround(Math.fround(x) / sc));
        const [cast] = ek.run('Cast', [{ dtype: 'float32', shape: [D], data: scaled }], { to: 'float8e4m3fn', saturate: 1 }) as Tensor[];
        expect(Array.from(cast.data as Uint8Array)).toEqual(q);
        cast.dispose();
      }
    } finally {
      c.dispose(); k.dispose();
    }
  });
});

describe('int8 cache', () => {
  it('append quantizes each (token, head) row with scale max|x|/127, round half to even, in the write pass', () => {
    const rnd = lcg(17);
    const H = 3, D = 20;
    const c = ek.kvCache({ layers: 1, batch: 2, kvHeads: H, headDim: D, capacity: 4, dtype: 'int8' });
    // row 0 of head 0: exact halves (x/scale = k + 0.5) test the tie rule; head 1 all zeros; head 2 random
    const rows: number[][] = [];
    for (let b = 0; b < 2; b++) for (let h = 0; h < H; h++) {
      if (h === 0) rows.push(Array.from({ length: D }, (_, i) => (i === 0 ? 127 : (i % 9) - 4 + 0.5) * (b + 1)));
      else if (h === 1) rows.push(new Array(D).fill(0));
      else rows.push(Array.from({ length: D }, () => rnd() * 3));
    }
    const k = ek.tensor('float32', [2, H, 1, D], rows.flat());
    try {
      c.append(0, k, k);
      c.advance();
      const kq = c.keys(0).data as Int8Array, ks = c.keyScales(0).data as Float32Array;
      expect(c.keys(0).dtype).toBe('int8');
      expect(c.bytes).toBe(2 * 2 * H * 4 * D + 2 * 2 * H * 4 * 4); // int8 rows + float32 scales
      for (let b = 0; b < 2; b++) for (let h = 0; h < H; h++) {
        const [q, sc] = int8Row(rows[b * H + h]);
        expect(ks[(b * H + h) * 4], `scale b${b} h${h}`).toBe(sc);
        expect(Array.from(kq.subarray((b * H + h) * 4 * D, (b * H + h) * 4 * D + D)), `q b${b} h${h}`).toEqual(q);
      }
      expectKernelError(() => c.append(0, c.keys(0), c.keys(0)), 'INVALID_DTYPE', /expected dtype float32, got int8/);
      expectKernelError(() => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 }).keyScales(0), 'INVALID_ARGUMENT', /only int8/);
    } finally {
      c.dispose(); k.dispose();
    }
  });
});

describe('half-precision caches against the float32 cache', () => {
  it('attend outputs agree within the documented tolerance (float16 2e-3, bfloat16 and int8 2e-2, float8e4m3fn 6e-2, for |k|,|v| <= 1)', () => {
    const B = 2, Hkv = 2, Hq = 8, D = 64, L = 40, rnd = lcg(21);
    const caches = (['float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn'] as const).map((dtype) => ek.kvCache({ layers: 1, batch: B, kvHeads: Hkv, headDim: D, capacity: L, dtype }));
    const k = ek.tensor('float32', [B, Hkv, L, D], new Float32Array(B * Hkv * L * D).map(() => rnd()));
    const v = ek.tensor('float32', [B, Hkv, L, D], new Float32Array(B * Hkv * L * D).map(() => rnd()));
    const q = ek.tensor('float32', [B, Hq, L, D], new Float32Array(B * Hq * L * D).map(() => rnd()));
    try {
      const outs = caches.map((c) => { c.append(0, k, v); const o = c.attend(0, q); c.advance(); return o; });
      const [f32, f16, bf16, i8, f8] = outs.map((o) => o.data as Float32Array);
      let e16 = 0, eb16 = 0, ei8 = 0, ef8 = 0;
      for (let i = 0; i < f32.length; i++) {
        e16 = Math.max(e16, Math.abs(f16[i] - f32[i])); eb16 = Math.max(eb16, Math.abs(bf16[i] - f32[i])); ei8 = Math.max(ei8, Math.abs(i8[i] - f32[i]));
        ef8 = Math.max(ef8, Math.abs(f8[i] - f32[i]));
      }
      expect(ef8).toBeLessThan(6e-2);
      expect(e16).toBeLessThan(2e-3);
      expect(eb16).toBeLessThan(2e-2);
      expect(ei8).toBeLessThan(2e-2);
      expect(e16).toBeGreaterThan(0); // the values really went through 16 bits
      outs.forEach((o) => o.dispose());
    } finally {
      caches.forEach((c) => c.dispose()); k.dispose(); v.dispose(); q.dispose();
    }
  });
});

/**
 * One decode step after `steps` single-token appends into a (windowed) cache of `dtype`,
 * against attention over the exactly rounded / dequantized rows, for G query heads per KV
 * head and head size D: the property both decode kernels below are held to.
 */
function decodeStepMatches(dtype: string, G: number, D: number, steps: number, window: number, seed: number, tol: number, impl?: 'builtin'): void {
  const rnd = lcg(seed), Hkv = 2, Hq = Hkv * G, scale = 1 / Math.sqrt(D);
  const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, dtype: dtype as never, ...(window ? { window } : { capacity: 200 }) });
  const r = new RefCache(1, window);
  try {
    let out: Tensor | null = null;
    let q: { t: Tensor; rows: number[][][][] } | null = null;
    for (let step = 0; step < steps; step++) {
      const k = randomPadded(1, Hkv, 1, D, rnd), v = randomPadded(1, Hkv, 1, D, rnd);
      c.append(0, k.t, v.t);
      r.k[0].push(k.rows[0][0].map((row) => quantRow(row, dtype))); r.v[0].push(v.rows[0][0].map((row) => quantRow(row, dtype)));
      k.t.dispose(); v.t.dispose();
      if (step === steps - 1) {
        q = randomPadded(1, Hq, 1, D, rnd);
        out = c.attend(0, q.t, impl ? { scale, impl } : { scale });
      }
      c.advance();
    }
    const o = out!.data as Float32Array;
    for (let h = 0; h < Hq; h++) close(o.subarray(h * D, (h + 1) * D), r.attend(0, h, G, q!.rows[0][0][h], steps - 1, steps, scale), `G ${G} D ${D} steps ${steps} window ${window} h ${h}`, tol);
    out!.dispose(); q!.t.dispose();
  } finally {
    c.dispose();
  }
}

describe('float32 / float16 / bfloat16 builtin decode kernel (assembly/llm.ts)', () => {
  // Its paths: one query row per head (four keys per pass, float16 groups of four rows with
  // and without Inf / NaN codes), grouped heads (four heads per pass over each K row for
  // G ≥ 3, a last group of 1–3 heads included; four V rows per pass over each head's output
  // for any G > 1), head sizes off the 4-grid (the per-key path), the cnt mod 4 leftover
  // keys, wrapped windows, float32 rows of 128+ elements (read whole, one after the other:
  // "Row order" in llm.ts); against attention over the exactly rounded rows.
  for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
    it(`${dtype}: group sizes 1..8, D on and off the 4-grid, lengths 1..200, wrapped windows`, () => {
      fc.assert(fc.property(fc.constantFrom(1, 2, 3, 4, 5, 8), fc.constantFrom(4, 6, 12, 64, 128, 130, 132), fc.integer({ min: 1, max: 200 }), fc.constantFrom(0, 7, 40, 150), fc.integer(),
        (G, D, steps, window, seed) => decodeStepMatches(dtype, G, D, steps, window, seed, 1e-5, 'builtin')), { seed: 31, numRuns: Number(process.env.KV_RUNS) || 25 });
    });
  }
  it('float16 rows, one query row per head: the float32 cache\'s bits for the same values (scaled reads, |q| >= 2^15, Inf rows, NaN q, subnormals)', () => {
    // The SIMD float16 path reads finite rows as value · 2^−112 and puts the 2^112 on the
    // query row and the softmax weights (llm.ts, kind 6): every product is the same real
    // number as the float32 path's, so the outputs must match bit for bit (NaN as NaN).
    const same = (a: Float32Array, b: Float32Array, label: string) => {
      for (let i = 0; i < a.length; i++) if (!(Object.is(a[i], b[i]) || (Number.isNaN(a[i]) && Number.isNaN(b[i])))) expect.fail(`${label}[${i}]: ${a[i]} vs ${b[i]}`);
    };
    for (const D of [8, 64, 128]) for (const variant of ['plain', 'big q', 'Inf key', 'Inf value', 'NaN q', 'subnormal']) {
      const H = 3, N = 37, rnd = lcg(D * 31 + variant.length);
      // float16-representable values: 11-bit integers over 2^11 (or, subnormal, over 2^24)
      const val = () => Math.round(rnd() * 2047) / (variant === 'subnormal' ? 2 ** 24 : 2048);
      const kv = [0, 1].map(() => new Float32Array(H * N * D).map(val));
      if (variant === 'Inf key') kv[0][5 * D + 3] = Infinity;
      if (variant === 'Inf value') kv[1][(N + 9) * D + 1] = -Infinity;
      const qd = new Float32Array(H * D).map(() => rnd());
      if (variant === 'big q') qd[D + 2] = 40000;
      if (variant === 'NaN q') qd[2 * D] = NaN;
      const caches = (['float16', 'float32'] as const).map((dtype) => ek.kvCache({ layers: 1, batch: 1, kvHeads: H, headDim: D, capacity: N, dtype }));
      const k = ek.tensor('float32', [1, H, N, D], kv[0]), v = ek.tensor('float32', [1, H, N, D], kv[1]), q = ek.tensor('float32', [1, H, 1, D], qd);
      try {
        const outs = caches.map((c) => { c.append(0, k, v); c.advance(); return c.attend(0, q, { impl: 'builtin', scale: 0.3 }); });
        same(outs[0].data as Float32Array, outs[1].data as Float32Array, `D ${D} ${variant}`);
        for (const o of outs) o.dispose();
      } finally {
        for (const c of caches) c.dispose();
        k.dispose(); v.dispose(); q.dispose();
      }
    }
  });
  it('float32 rows of 128+ elements (read in order): one and grouped heads, key counts around the four-key passes, wrapped', () => {
    for (const G of [1, 4]) for (const D of [128, 132]) for (const steps of [3, 4, 9, 70]) for (const window of [0, 40]) decodeStepMatches('float32', G, D, steps, window, G * D + steps, 1e-5, 'builtin');
  });
});

describe('int8 / float8e4m3fn decode kernel (the SIMD build works on a 16-bit integer grid)', () => {
  // Every path of assembly/kvattend.ts: query heads in groups of four plus single heads
  // (G = 1..9), head sizes off the 8 / 16 grids, lengths across several 32-key blocks,
  // windows wrapped so the visible rows come in two runs; against attention over the
  // exactly dequantized rows. Largest errors seen in 200 cases of this property and of the
  // ragged one below (|q|,|k|,|v| ≤ 1): int8 1.2e-5, fp8 1.3e-4; the bounds are documented
  // in the README.
  for (const dtype of ['int8', 'float8e4m3fn'] as const) {
    it(`${dtype}: group sizes 1..9, D off the grid, lengths across blocks, wrapped windows`, () => {
      const tol = dtype === 'int8' ? 5e-5 : 5e-4;
      fc.assert(fc.property(fc.constantFrom(1, 2, 3, 4, 5, 8, 9), fc.constantFrom(1, 6, 16, 20, 64, 130), fc.integer({ min: 1, max: 200 }), fc.constantFrom(0, 7, 40, 150), fc.integer(),
        (G, D, steps, window, seed) => decodeStepMatches(dtype, G, D, steps, window, seed, tol)), { seed: 29, numRuns: Number(process.env.KV_RUNS) || 25 });
    });
  }

  it('int8: the integer score sums cannot overflow at the grid extremes (D = 1024, every code ±127, every query code ±QM)', () => {
    // int8 sums a row's whole dot product in int32: its query grid QM must shrink for large D
    // (1024 · 32767 · 127 would wrap); here every product is the largest the grid allows
    const D = 1024, Hkv = 1, G = 4, Hq = Hkv * G, scale = 1 / Math.sqrt(D), rows = [1, -1, 0.5, -0.25];
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, dtype: 'int8', capacity: 8 });
    const r = new RefCache(1, 0);
    const rnd = lcg(5);
    try {
      let out: Tensor | null = null;
      rows.forEach((x, step) => {
        const k = ek.tensor('float32', [1, Hkv, 1, D], new Float32Array(D).fill(x));
        const v = randomPadded(1, Hkv, 1, D, rnd);
        c.append(0, k, v.t);
        r.k[0].push([quantRow(Array(D).fill(x), 'int8')]); r.v[0].push(v.rows[0][0].map((row) => quantRow(row, 'int8')));
        if (step === rows.length - 1) {
          const q = ek.tensor('float32', [1, Hq, 1, D], new Float32Array(Hq * D).map((_, i) => (Math.floor(i / D) % 2 ? -1 : 1)));
          out = c.attend(0, q, { scale });
          const o = out.data as Float32Array;
          for (let h = 0; h < Hq; h++) close(o.subarray(h * D, (h + 1) * D), r.attend(0, h, G, Array(D).fill(h % 2 ? -1 : 1), rows.length - 1, rows.length, scale), `h ${h}`, 5e-5);
          q.dispose();
        }
        k.dispose(); v.t.dispose();
        c.advance();
      });
      out!.dispose();
    } finally {
      c.dispose();
    }
  });
});

describe('int8 / float8e4m3fn decode kernel: the weight grid\'s worst case', () => {
  // The softmax weights of a 32-key block go on a grid of step (block's largest weight) / WQ,
  // so each key loses at most half a step: at most 16 / WQ of the normalizer in all, i.e.
  // 16 / WQ · max|v| in the output (WQ = 32767 int8, 4369 fp8; README "KVCache"). Reached when
  // every other weight of a block sits just under half a step: one key per block of k = 1,
  // v = −1 and 31 of k = c, v = +1, c chosen so that those weights round to zero.
  for (const build of ['simd', 'scalar'] as const) {
    for (const [dtype, c, WQ] of [['int8', 0.28, 32767], ['float8e4m3fn', 0.1975, 4369]] as const) {
      it(`${build} ${dtype}: within 16 / WQ of attention over the exactly dequantized rows`, async () => {
        const k8 = await init({ build });
        const D = 128, T = 256;
        const cache = k8.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: D, capacity: T, dtype });
        try {
          const k = k8.tensor('float32', [1, 1, T, D]), v = k8.tensor('float32', [1, 1, T, D]), q = k8.tensor('float32', [1, 1, 1, D]);
          for (let t = 0; t < T; t++) {
            const top = t % 32 === 0;
            (k.data as Float32Array).fill(top ? 1 : c, t * D, (t + 1) * D);
            (v.data as Float32Array).fill(top ? -1 : 1, t * D, (t + 1) * D);
          }
          (q.data as Float32Array).fill(1);
          cache.append(0, k, v); cache.advance();
          const y = (cache.attend(0, q).data as Float32Array).slice();
          const kc = cache.keys(0).data as Int8Array | Uint8Array, vc = cache.values(0).data as Int8Array | Uint8Array;
          const ks = cache.keyScales(0).data as Float32Array, vs = cache.valueScales(0).data as Float32Array;
          const deq = (code: number) => (dtype === 'int8' ? code : (code & 0x80 ? -1 : 1) * E4M3[code & 0x7f]);
          const sc: number[] = [];
          for (let t = 0; t < T; t++) { let d = 0; for (let i = 0; i < D; i++) d += deq(kc[t * D + i]) * ks[t]; sc.push(d / Math.sqrt(D)); }
          const m = Math.max(...sc);
          let den = 0, vmax = 0;
          const num = new Float64Array(D);
          for (let t = 0; t < T; t++) {
            const w = Math.exp(sc[t] - m);
            den += w;
            for (let i = 0; i < D; i++) { const x = deq(vc[t * D + i]) * vs[t]; num[i] += w * x; vmax = Math.max(vmax, Math.abs(x)); }
          }
          const bound = build === 'simd' ? (16 / WQ) * vmax * 1.01 : 2e-5;
          for (let i = 0; i < D; i++) expect(Math.abs(y[i] - num[i] / den), `y[${i}]`).toBeLessThanOrEqual(bound);
          k.dispose(); v.dispose(); q.dispose();
        } finally {
          cache.dispose();
          k8.dispose();
        }
      });
    }
  }
});

for (const build of ['simd', 'scalar'] as const) for (const dtype of ['float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn'] as const) for (const impl of ['builtin', 'TRT_Attention'] as const) describe(`attend (${build}, ${dtype} cache, ${impl})`, () => {
  let ek: Kernels;
  beforeAll(async () => {
    ek = await init({ build });
  });
  const randomPadded = (B: number, H: number, S: number, D: number, rnd: () => number) => randomPaddedIn(ek, B, H, S, D, rnd);
  // Against attention over the exactly dequantized values: float32 rounding, except for the
  // SIMD build's int8 / fp8 kernel, which puts q and the softmax weights on a 16-bit grid
  // and fp8 K/V on a 1/32 grid of the scaled row (assembly/kvattend.ts; README "KVCache")
  const tol = build === 'simd' && dtype === 'int8' ? 5e-5 : build === 'simd' && dtype === 'float8e4m3fn' ? 4e-4 : 2e-5;
  it('property: ragged multi-token steps, GQA, causal and not, padded and packed queries, slot resets', () => {
    // maxAppend 3 (a window only): the ring keeps window + 2 rows and chunks of up to 3 tokens
    // attend as a strict sliding window; without it, a chunk's earlier tokens see fewer
    fc.assert(fc.property(fc.integer(), fc.constantFrom(0, 4, 7), fc.boolean(), fc.constantFrom(1, 3), (seed, window, causal, maxAppend) => {
      const rnd = lcg(seed);
      const B = 3, Hkv = 2, group = 2, Hq = Hkv * group, D = 6, cap = 24;
      const c = ek.kvCache({ layers: 1, batch: B, kvHeads: Hkv, headDim: D, dtype, ...(window ? { window, capacity: cap, maxAppend } : { capacity: cap }) });
      const r = new RefCache(B, window, window + maxAppend - 1);
      const scale = 0.4;
      try {
        for (let step = 0; step < 10; step++) {
          const lens = c.lengths;
          // finished sequences restart in their slot
          for (let b = 0; b < B; b++) if (lens[b] > 0 && rnd() > 0.8) { c.reset(b); r.reset(b); }
          const lensNow = c.lengths;
          const maxNew = window ? Math.min(window, 3) : 3;
          const counts = Array.from({ length: B }, (_, b) => Math.min(Math.floor((rnd() + 1) / 2 * (maxNew + 1)), cap - lensNow[b]));
          const S = Math.max(1, ...counts);
          const packed = step % 2 === 0;
          const T = counts.reduce((a, x) => a + x, 0);
          const kp = randomPadded(B, Hkv, S, D, rnd), vp = randomPadded(B, Hkv, S, D, rnd);
          let k: Tensor = kp.t, v: Tensor = vp.t;
          if (packed) {
            // the same rows packed [T,H,D]
            const pk: number[] = [], pv: number[] = [];
            for (let b = 0; b < B; b++) for (let s = 0; s < counts[b]; s++) for (let h = 0; h < Hkv; h++) { pk.push(...kp.rows[b][s][h]); pv.push(...vp.rows[b][s][h]); }
            k = ek.tensor('float32', [T, Hkv, D], pk); v = ek.tensor('float32', [T, Hkv, D], pv);
            kp.t.dispose(); vp.t.dispose();
          }
          c.append(0, k, v, { lengths: counts });
          // the reference attends over the values as stored (the kernel dequantizes exactly)
          const q16 = (rows: number[][]) => rows.map((r) => quantRow(r, dtype));
          for (let b = 0; b < B; b++) for (let s = 0; s < counts[b]; s++) { r.k[b].push(q16(kp.rows[b][s])); r.v[b].push(q16(vp.rows[b][s])); }
          const qp = randomPadded(B, Hq, S, D, rnd);
          let q = qp.t;
          if (packed) {
            const pq: number[] = [];
            for (let b = 0; b < B; b++) for (let s = 0; s < counts[b]; s++) for (let h = 0; h < Hq; h++) pq.push(...qp.rows[b][s][h]);
            q = ek.tensor('float32', [T, Hq, D], pq);
            qp.t.dispose();
          }
          const out = c.attend(0, q, { scale, causal, impl });
          const o = out.data as Float32Array;
          let t = 0;
          for (let b = 0; b < B; b++) {
            const kvLen = lensNow[b] + counts[b];
            for (let s = 0; s < (packed ? counts[b] : S); s++) {
              for (let h = 0; h < Hq; h++) {
                const at = packed ? ((t + s) * Hq + h) * D : ((b * Hq + h) * S + s) * D;
                const got = o.subarray(at, at + D);
                if (s >= counts[b]) { expect(Array.from(got)).toEqual(new Array(D).fill(0)); continue; }
                const P = causal ? lensNow[b] + s : kvLen - 1;
                close(got, r.attend(b, h, group, qp.rows[b][s][h], P, kvLen, scale), `step ${step} b ${b} s ${s} h ${h}`, tol);
              }
            }
            if (packed) t += counts[b];
          }
          out.dispose(); q.dispose(); k.dispose(); v.dispose();
          c.advance();
        }
      } finally {
        c.dispose();
      }
    }), { seed: 11, numRuns: Number(process.env.KV_RUNS) || (dtype === 'float32' ? 16 : 8) });
  });

  it('a NaN query gives a NaN row (every score NaN), the other heads finite, for any key count', () => {
    // IEEE: every score of head 0 is NaN, so its softmax and output are NaN (the builtin
    // kernel's max skipped NaN and took the row for one that sees no key: zeros)
    for (const G of [1, 4]) for (const n of [1, 3, 4, 8, 9]) {
      const Hkv = 2, D = 8, rnd = lcg(n * 7 + G);
      const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, capacity: 16, dtype, queryHeads: Hkv * G });
      const k = randomPadded(1, Hkv, n, D, rnd), v = randomPadded(1, Hkv, n, D, rnd);
      const q = randomPadded(1, Hkv * G, 1, D, rnd);
      (q.t.data as Float32Array)[0] = NaN;
      try {
        c.append(0, k.t, v.t);
        c.advance();
        const out = c.attend(0, q.t, { impl, scale: 0.5 });
        const y = out.data as Float32Array;
        for (let d = 0; d < D; d++) expect(y[d], `G ${G} n ${n} head 0 [${d}]`).toBeNaN();
        for (let i = D; i < y.length; i++) expect(Number.isFinite(y[i]), `G ${G} n ${n} [${i}]`).toBe(true);
        out.dispose();
      } finally {
        c.dispose(); k.t.dispose(); v.t.dispose(); q.t.dispose();
      }
    }
  });

  it('multi-head decode (G = 1, head size 8) over a wrapped window: every split of the visible rows into two runs', () => {
    // the float32 G = 1 path takes keys four at a time, each by its own cache slot: W = 11
    // puts the wrap at every offset within a group of four as the steps go on
    const W = 11, D = 8, H = 3, rnd = lcg(8);
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: H, headDim: D, window: W, dtype });
    const r = new RefCache(1, W);
    const out = ek.tensor('float32', [1, H, 1, D]);
    try {
      for (let step = 0; step < 40; step++) {
        const k = randomPadded(1, H, 1, D, rnd), v = randomPadded(1, H, 1, D, rnd), q = randomPadded(1, H, 1, D, rnd);
        c.append(0, k.t, v.t);
        r.k[0].push(k.rows[0][0].map((row) => quantRow(row, dtype))); r.v[0].push(v.rows[0][0].map((row) => quantRow(row, dtype)));
        c.attend(0, q.t, { out, impl, scale: 0.5 });
        for (let h = 0; h < H; h++) close((out.data as Float32Array).subarray(h * D, (h + 1) * D), r.attend(0, h, 1, q.rows[0][0][h], step, step + 1, 0.5), `step ${step} h ${h}`, tol);
        k.t.dispose(); v.t.dispose(); q.t.dispose();
        c.advance();
      }
    } finally {
      c.dispose(); out.dispose();
    }
  });

  it('a window wraps many times: decode attends over exactly the last W positions', () => {
    const W = 3, D = 4, rnd = lcg(5);
    const c = ek.kvCache({ layers: 2, batch: 1, kvHeads: 1, headDim: D, window: W, dtype });
    const r = [new RefCache(1, W), new RefCache(1, W)];
    const out = ek.tensor('float32', [1, 2, 1, D]);
    try {
      for (let step = 0; step < 50; step++) {
        for (let l = 0; l < 2; l++) {
          const k = randomPadded(1, 1, 1, D, rnd), v = randomPadded(1, 1, 1, D, rnd), q = randomPadded(1, 2, 1, D, rnd);
          c.append(l, k.t, v.t);
          r[l].k[0].push(k.rows[0][0].map((row) => quantRow(row, dtype))); r[l].v[0].push(v.rows[0][0].map((row) => quantRow(row, dtype)));
          expect(c.attend(l, q.t, { out, impl })).toBe(out);
          for (let h = 0; h < 2; h++) close((out.data as Float32Array).subarray(h * D, (h + 1) * D), r[l].attend(0, h, 2, q.rows[0][0][h], step, step + 1, 0.5), `step ${step}`, tol);
          k.t.dispose(); v.t.dispose(); q.t.dispose();
        }
        c.advance();
      }
      expect([...c.lengths]).toEqual([50]);
    } finally {
      c.dispose(); out.dispose();
    }
  });
});

/**
 * Counts calls of the flash kernel (`attention`) and of the builtin kernels (`attend*`) on ek
 * while f runs: the cache finds them on ek.exports at every call.
 */
function countingKernels<T>(ek: Kernels, f: (calls: string[]) => T): T {
  const real = ek.exports, calls: string[] = [];
  const spy: Record<string, unknown> = { ...real };
  for (const [name, fn] of Object.entries(real)) {
    if (typeof fn === 'function' && (name === 'attention' || name.startsWith('attend'))) spy[name] = (...a: number[]) => { calls.push(name === 'attention' ? 'flash' : 'builtin'); return fn(...a); };
  }
  (ek as { exports: unknown }).exports = spy;
  try {
    return f(calls);
  } finally {
    (ek as { exports: unknown }).exports = real;
  }
}

describe('sliding windows on the flash kernel: the rings walked in position order', () => {
  // A window cache's rings go to the flash kernel (attendRing: each sequence's rows rotated
  // into position order, every query from its window's first position) — a wrapped ring is
  // split at its wrap into two runs of rows. Against the builtin kernel (the same values to
  // rounding) and against the float64 reference over exactly the positions a query may see.
  for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
    it(`${dtype}: one query per sequence, auto takes the flash kernel and agrees with the builtin kernel, causal and not`, () => {
      const B = 3, Hkv = 2, G = 4, Hq = Hkv * G, D = 64, W = 2048, rnd = lcg(77);
      const c = ek.kvCache({ layers: 1, batch: B, kvHeads: Hkv, headDim: D, window: W, dtype, queryHeads: Hq });
      try {
        // sequence 0 wraps (W + 700 positions: its ring splits at key 1348, inside a block
        // and across the touch-ahead's reach), 1 stays short (300), 2 wraps, gets no query
        const fill = [W + 700, 300, W + 5];
        for (let done = 0; done < Math.max(...fill); done += 1000) {
          const counts = fill.map((n) => Math.max(0, Math.min(1000, n - done)));
          const S = Math.max(...counts);
          const k = randomPadded(B, Hkv, S, D, rnd), v = randomPadded(B, Hkv, S, D, rnd);
          c.append(0, k.t, v.t, { lengths: counts });
          c.advance();
          k.t.dispose(); v.t.dispose();
        }
        expect([...c.lengths]).toEqual(fill);
        for (const causal of [true, false]) {
          const k = randomPadded(B, Hkv, 1, D, rnd), v = randomPadded(B, Hkv, 1, D, rnd), q = randomPadded(B, Hq, 1, D, rnd);
          c.append(0, k.t, v.t, { lengths: [1, 1, 0] });
          const got = countingKernels(ek, (calls) => {
            const y = c.attend(0, q.t, { causal, scale: 0.3 });
            expect(calls, 'auto ran the flash kernel').toEqual(['flash']);
            return y;
          });
          const want = c.attend(0, q.t, { causal, scale: 0.3, impl: 'builtin' });
          close(got.data as Float32Array, want.data as Float32Array, `causal ${causal}`, 2e-6);
          // sequence 2 appended nothing: its rows are zeros
          expect(Array.from((got.data as Float32Array).subarray(2 * Hq * D))).toEqual(new Array(Hq * D).fill(0));
          got.dispose(); want.dispose(); k.t.dispose(); v.t.dispose(); q.t.dispose();
          c.advance();
        }
      } finally {
        c.dispose();
      }
    });

    it(`${dtype}: chunks of up to 64 tokens over wrapping windows (ring = window + 63), causal, padded and packed`, () => {
      // ragged chunks: every chunk's first queries see fewer keys (the window's lower bound
      // is each query's own), the ring rotates by every offset, prefill tiles (G·S > 32 rows)
      // copy the rows of a wrapped ring in position order (16-bit: widened there)
      const B = 2, Hkv = 2, G = 4, Hq = Hkv * G, D = 24, W = 150, M = 64, rnd = lcg(91);
      const c = ek.kvCache({ layers: 1, batch: B, kvHeads: Hkv, headDim: D, window: W, maxAppend: M, capacity: 4096, dtype, queryHeads: Hq });
      const r = new RefCache(B, W, W + M - 1);
      const quant = (rows: number[][]) => rows.map((x) => quantRow(x, dtype));
      try {
        for (let step = 0; step < 22; step++) {
          const counts = [step === 3 ? 0 : 1 + Math.floor((rnd() + 1) / 2 * M) % M, step % 4 === 1 ? 1 : 1 + Math.floor((rnd() + 1) / 2 * 40)];
          const S = Math.max(...counts), packed = step % 2 === 1;
          const kp = randomPadded(B, Hkv, S, D, rnd), vp = randomPadded(B, Hkv, S, D, rnd), qp = randomPadded(B, Hq, S, D, rnd);
          const pack = (x: { t: Tensor; rows: number[][][][] }, H: number): Tensor => {
            if (!packed) return x.t;
            const out: number[] = [];
            for (let b = 0; b < B; b++) for (let s = 0; s < counts[b]; s++) for (let h = 0; h < H; h++) out.push(...x.rows[b][s][h]);
            return ek.tensor('float32', [counts[0] + counts[1], H, D], out);
          };
          const k = pack(kp, Hkv), v = pack(vp, Hkv), q = pack(qp, Hq);
          const lensNow = c.lengths;
          c.append(0, k, v, { lengths: counts });
          for (let b = 0; b < B; b++) for (let s = 0; s < counts[b]; s++) { r.k[b].push(quant(kp.rows[b][s])); r.v[b].push(quant(vp.rows[b][s])); }
          const out = countingKernels(ek, (calls) => {
            const y = c.attend(0, q, { scale: 0.25, impl: 'TRT_Attention' });
            expect(calls, `step ${step}`).toEqual(['flash']);
            return y;
          });
          const o = out.data as Float32Array;
          let t = 0;
          for (let b = 0; b < B; b++) {
            const kvLen = lensNow[b] + counts[b];
            for (let s = 0; s < (packed ? counts[b] : S); s++) for (let h = 0; h < Hq; h += 3) {
              const at = packed ? ((t + s) * Hq + h) * D : ((b * Hq + h) * S + s) * D;
              const got = o.subarray(at, at + D);
              if (s >= counts[b]) { expect(Array.from(got)).toEqual(new Array(D).fill(0)); continue; }
              close(got, r.attend(b, h, G, qp.rows[b][s][h], lensNow[b] + s, kvLen, 0.25), `step ${step} b ${b} s ${s} h ${h}`, 2e-5);
            }
            if (packed) t += counts[b];
          }
          out.dispose(); q.dispose(); k.dispose(); v.dispose();
          if (packed) { kp.t.dispose(); vp.t.dispose(); qp.t.dispose(); }
          c.advance();
        }
        expect(c.lengths[0]).toBeGreaterThan(2 * (W + M));
      } finally {
        c.dispose();
      }
    });
  }

  it('a ring row the query may not see (older than its window) is never read: an Inf / NaN there leaves the output finite', () => {
    // window 8 with maxAppend 4: the ring keeps 11 rows, so the 3 oldest are stale for a
    // decode query and sit in the same 64-key block as its visible keys
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) for (const bad of [Infinity, NaN]) {
      const Hkv = 2, G = 4, Hq = Hkv * G, D = 16, W = 8, rnd = lcg(83);
      const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, window: W, maxAppend: 4, dtype, queryHeads: Hq });
      const r = new RefCache(1, W, W + 3);
      try {
        for (let p = 0; p < 21; p++) {
          const k = randomPadded(1, Hkv, 1, D, rnd), v = randomPadded(1, Hkv, 1, D, rnd);
          if (p === 12) { (k.t.data as Float32Array)[3] = bad; (v.t.data as Float32Array)[5] = bad; k.rows[0][0][0][3] = bad; v.rows[0][0][0][5] = bad; }
          c.append(0, k.t, v.t);
          r.k[0].push(k.rows[0][0].map((x) => quantRow(x, dtype))); r.v[0].push(v.rows[0][0].map((x) => quantRow(x, dtype)));
          k.t.dispose(); v.t.dispose();
          if (p >= 20) {
            // position 20 sees 13 … 20; the ring still holds 10 … 20
            const q = randomPadded(1, Hq, 1, D, rnd);
            for (const impl of ['TRT_Attention', 'builtin'] as const) {
              const y = countingKernels(ek, (calls) => {
                const o = c.attend(0, q.t, { scale: 0.3, impl });
                expect(calls).toEqual([impl === 'builtin' ? 'builtin' : 'flash']);
                return o;
              });
              for (let h = 0; h < Hq; h++) close((y.data as Float32Array).subarray(h * D, (h + 1) * D), r.attend(0, h, G, q.rows[0][0][h], p, p + 1, 0.3), `${dtype} ${bad} ${impl} h ${h}`);
              y.dispose();
            }
            q.t.dispose();
          }
          c.advance();
        }
      } finally {
        c.dispose();
      }
    }
  });

  it("'auto' takes the flash kernel from TRT_ATTENTION_MIN_WORK query-key products, the builtin kernel below and for one row per head", () => {
    expect(TRT_ATTENTION_MIN_WORK).toBe(1 << 14);
    const rnd = lcg(85);
    // work = new queries × keys × query heads × D: 1 × L × 4 × 16 = 2^14 at L = 256
    for (const [Hkv, G, L, want] of [[1, 4, 255, 'builtin'], [1, 4, 256, 'flash'], [4, 1, 256, 'builtin'], [4, 1, 1024, 'builtin']] as const) {
      const D = 16, Hq = Hkv * G;
      const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, capacity: 1024, queryHeads: Hq });
      try {
        const k = randomPadded(1, Hkv, L, D, rnd), q = randomPadded(1, Hq, 1, D, rnd);
        c.append(0, k.t, k.t);
        c.advance();
        const y = countingKernels(ek, (calls) => {
          const o = c.attend(0, q.t); // the last position's query over all L keys
          expect(calls, `Hkv ${Hkv} G ${G} L ${L}`).toEqual([want]);
          return o;
        });
        y.dispose(); k.t.dispose(); q.t.dispose();
      } finally {
        c.dispose();
      }
    }
  });

  it('not causal with several queries per sequence keeps the builtin kernel: they all see the same last window positions', () => {
    const Hkv = 1, Hq = 4, D = 16, W = 40, rnd = lcg(79);
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, window: W, maxAppend: 8, queryHeads: Hq });
    const r = new RefCache(1, W, W + 7);
    try {
      for (let step = 0; step < 9; step++) {
        const k = randomPadded(1, Hkv, 8, D, rnd), v = randomPadded(1, Hkv, 8, D, rnd), q = randomPadded(1, Hq, 8, D, rnd);
        c.append(0, k.t, v.t);
        for (let s = 0; s < 8; s++) { r.k[0].push(k.rows[0][s]); r.v[0].push(v.rows[0][s]); }
        const n = c.lengths[0] + 8;
        const got = countingKernels(ek, (calls) => {
          const y = c.attend(0, q.t, { causal: false, scale: 0.3, impl: 'TRT_Attention' });
          expect(calls).toEqual(['builtin']);
          return y;
        });
        for (let s = 0; s < 8; s++) for (let h = 0; h < Hq; h++) {
          close((got.data as Float32Array).subarray((h * 8 + s) * D, (h * 8 + s + 1) * D), r.attend(0, h, Hq, q.rows[0][s][h], n - 1, n, 0.3), `step ${step} s ${s} h ${h}`);
        }
        got.dispose(); k.t.dispose(); v.t.dispose(); q.t.dispose();
        c.advance();
      }
    } finally {
      c.dispose();
    }
  });
});

describe('bookkeeping rules', () => {
  const mk = () => ek.kvCache({ layers: 2, batch: 2, kvHeads: 1, headDim: 4, capacity: 6 });
  it('capacity overflow is an error with nothing written', () => {
    const c = mk();
    const k = ek.tensor('float32', [2, 1, 4, 4], new Float32Array(32).fill(1));
    try {
      c.append(0, k, k); c.append(1, k, k); c.advance();
      const snap = memorySnapshot(ek);
      expectKernelError(() => c.append(0, k, k), 'INVALID_VALUE', /sequence 0 holds 4 tokens, appending 4 exceeds the capacity 6/);
      expectKernelError(() => c.append(0, k, k, { lengths: [2, 3] }), 'INVALID_VALUE', /sequence 1/);
      expect(Buffer.compare(memorySnapshot(ek), snap), 'memory unchanged').toBe(0);
      expect([...c.lengths]).toEqual([4, 4]);
      expect(c.stepInProgress).toBe(false);
      c.append(0, k, k, { lengths: [2, 0] }); // fills sequence 0 exactly
      c.append(1, k, k, { lengths: [2, 0] });
      expect([...c.advance()]).toEqual([6, 4]);
    } finally {
      c.dispose(); k.dispose();
    }
  });
  it('step errors: mismatched counts, double append, attend before append, advance with missing layers; reset() recovers', () => {
    const c = mk();
    const k = ek.tensor('float32', [2, 1, 1, 4]);
    const q = ek.tensor('float32', [2, 2, 1, 4]);
    try {
      c.append(0, k, k);
      expectKernelError(() => c.append(0, k, k), 'INVALID_ARGUMENT', /already appended/);
      expectKernelError(() => c.append(1, k, k, { lengths: [1, 0] }), 'INVALID_VALUE', /same counts/);
      expectKernelError(() => c.attend(1, q), 'INVALID_ARGUMENT', /append\(1/);
      expectKernelError(() => c.advance(), 'INVALID_ARGUMENT', /layers 1 were not appended/);
      expectKernelError(() => c.reset(0), 'INVALID_ARGUMENT', /step is in progress/);
      expectKernelError(() => c.setLengthsFromMask({ shape: [2, 2], data: [1, 0, 1, 0] }), 'INVALID_ARGUMENT', /step is in progress/);
      expect([...c.lengths]).toEqual([0, 0]);
      c.reset(); // error path: drop the half-done step
      expect(c.stepInProgress).toBe(false);
      c.append(0, k, k); c.append(1, k, k);
      expect([...c.advance()]).toEqual([1, 1]);
      c.reset(1);
      expect([...c.lengths]).toEqual([1, 0]);
      expectKernelError(() => c.append(0, q, q), 'INVALID_SHAPE');
      expectKernelError(() => c.append(0, k, ek.tensor('float32', [2, 1, 2, 4])), 'INVALID_SHAPE', /v: expected the shape of k/);
      expectKernelError(() => c.append(0, k, k, { lengths: [2, 0] }), 'INVALID_VALUE', /lengths\[0\]/);
      expectKernelError(() => c.append(0, ek.tensor('float32', [2, 1, 4]), k), 'INVALID_SHAPE');
      expectKernelError(() => c.append(0, ek.tensor('float32', [3, 1, 4]), ek.tensor('float32', [3, 1, 4])), 'MISSING_INPUT', /packed/);
      expectKernelError(() => c.append(2, k, k), 'INVALID_ARGUMENT', /layer/);
      expectKernelError(() => c.append(0, c.keys(1), c.keys(1)), 'ALIASING', /overlaps the cache/);
      expectKernelError(() => c.append(0, ek.tensor('float16', [2, 1, 1, 4]), k), 'INVALID_DTYPE');
    } finally {
      c.dispose(); k.dispose(); q.dispose();
    }
  });
  it('setLengthsFromMask accepts prefixes of ones and rejects everything else, changing nothing', () => {
    const c = mk();
    try {
      expect([...c.setLengthsFromMask({ dtype: 'int64', shape: [2, 6], data: [1n, 1n, 1n, 0n, 0n, 0n, 1n, 0n, 0n, 0n, 0n, 0n] })]).toEqual([3, 1]);
      expect([...c.lengths]).toEqual([3, 1]);
      const m = ek.tensor('bool', [2, 4], [1, 1, 1, 1, 0, 0, 0, 0]);
      expect([...c.setLengthsFromMask(m)]).toEqual([4, 0]);
      m.dispose();
      expectKernelError(() => c.setLengthsFromMask({ shape: [2, 4], data: [0, 1, 1, 1, 1, 0, 0, 0] }), 'INVALID_VALUE', /row 0 is not a prefix of ones \(zero at 0, one at 1\)/);
      expectKernelError(() => c.setLengthsFromMask({ shape: [2, 4], data: [1, 1, 1, 1, 1, 0, 1, 0] }), 'INVALID_VALUE', /row 1/);
      expectKernelError(() => c.setLengthsFromMask({ shape: [2, 4], data: [1, 2, 0, 0, 1, 0, 0, 0] }), 'INVALID_VALUE', /expected 0 or 1/);
      expectKernelError(() => c.setLengthsFromMask({ shape: [2, 7], data: new Array(14).fill(1) }), 'INVALID_SHAPE', /M <= 6/);
      expectKernelError(() => c.setLengthsFromMask({ shape: [1, 4], data: [1, 1, 0, 0] }), 'INVALID_SHAPE');
      expect([...c.lengths]).toEqual([4, 0]);
      // appends continue at the mask-derived positions
      const k = ek.tensor('float32', [2, 1, 1, 4], new Float32Array(8).fill(3));
      c.append(0, k, k); c.append(1, k, k);
      expect([...c.advance()]).toEqual([5, 1]);
      const keys = c.keys(0).data as Float32Array;
      expect(keys[4 * 4]).toBe(3); // sequence 0, position 4
      expect(keys[6 * 4 + 0]).toBe(3); // sequence 1, position 0
      k.dispose();
    } finally {
      c.dispose();
    }
  });
  // Issue 7 item 5: 100,000 steps with stats() unchanged. Small shapes (a step is a few µs), a
  // 16-row window that wraps thousands of times, fresh K/V rows every step, slot resets, and the
  // last step's outputs checked against the reference over the window's rows.
  const LONG_STEPS = 100_000;
  it(`a long decode loop (${LONG_STEPS.toLocaleString('en')} steps, append + attend every step) leaves stats() unchanged, the cache in place, and attends over the last window exactly`, () => {
    const L = 2, B = 2, Hkv = 1, Hq = 2, D = 4, W = 16, scale = 1 / Math.sqrt(D);
    const c = ek.kvCache({ layers: L, batch: B, kvHeads: Hkv, headDim: D, window: W, queryHeads: Hq });
    const ks = [0, 1].map(() => ek.tensor('float32', [B, Hkv, 1, D]));
    const vs = [0, 1].map(() => ek.tensor('float32', [B, Hkv, 1, D]));
    const qData = Float32Array.from({ length: B * Hq * D }, (_, i) => ((i % 7) - 3) * 0.25);
    const q = ek.tensor('float32', [B, Hq, 1, D], qData);
    const outs = [0, 1].map(() => ek.tensor('float32', [B, Hq, 1, D]));
    // reference: the last W rows of each (layer, sequence), and the lengths
    const ring = () => Array.from({ length: L }, () => Array.from({ length: B }, () => new Float32Array(W * Hkv * D).fill(NaN)));
    const refK = ring(), refV = ring();
    const len = new Array<number>(B).fill(0);
    // K/V row of step i: varied, exact in float32 (multiples of 1/8 in [-1, 1))
    const val = (i: number, l: number, b: number, kv: number, d: number) => (((i * 31 + l * 13 + b * 7 + kv * 5 + d * 3) % 16) - 8) / 8;
    const step = (i: number) => {
      for (let l = 0; l < L; l++) {
        const kd = ks[l].data as Float32Array, vd = vs[l].data as Float32Array;
        for (let b = 0; b < B; b++) {
          const row = (len[b] % W) * Hkv * D;
          for (let d = 0; d < D; d++) {
            kd[b * D + d] = refK[l][b][row + d] = val(i, l, b, 0, d);
            vd[b * D + d] = refV[l][b][row + d] = val(i, l, b, 1, d);
          }
        }
        c.append(l, ks[l], vs[l]);
        c.attend(l, q, { out: outs[l] });
      }
    };
    try {
      // the constructor reserved a step's scratch (queryHeads): nothing changes from the first step on
      const before = ek.stats(), off = c.byteOffset;
      step(-1); c.advance(); for (let b = 0; b < B; b++) len[b]++;
      expect(ek.stats()).toEqual(before);
      for (let i = 0; i < LONG_STEPS; i++) {
        step(i);
        if (i === LONG_STEPS - 1) break; // the last step is checked before advance()
        c.advance();
        for (let b = 0; b < B; b++) len[b]++;
        if (i % 997 === 0) { c.reset(i % 2); len[i % 2] = 0; }
        if (i % 10_000 === 0) {
          expect(ek.stats()).toEqual(before);
          expect(c.byteOffset).toBe(off);
          expect(Array.from(c.lengths)).toEqual(len);
        }
      }
      expect(ek.stats()).toEqual(before);
      expect(c.byteOffset).toBe(off);
      // the window wrapped many times since the last reset of each sequence
      for (let b = 0; b < B; b++) expect(len[b]).toBeGreaterThan(10 * W);
      // last step: query of sequence b sits at position len[b] and sees the last W positions
      for (let l = 0; l < L; l++) {
        const got = outs[l].data as Float32Array;
        for (let b = 0; b < B; b++) {
          const kvLen = len[b] + 1, lo = Math.max(0, kvLen - W);
          const keys: Float32Array[] = [], vals: Float32Array[] = [];
          for (let p = lo; p < kvLen; p++) {
            const row = (p % W) * Hkv * D;
            keys.push(refK[l][b].subarray(row, row + D));
            vals.push(refV[l][b].subarray(row, row + D));
          }
          expect(keys.length).toBe(W);
          for (let h = 0; h < Hq; h++) {
            const o = (b * Hq + h) * D;
            close(got.subarray(o, o + D), attendRow(qData.subarray(o, o + D), keys, vals, scale), `layer ${l} seq ${b} head ${h}`);
          }
        }
      }
      c.advance();
      expect(ek.stats()).toEqual(before);
    } finally {
      c.dispose(); q.dispose();
      for (const t of [...ks, ...vs, ...outs]) t.dispose();
    }
  }, 120_000);
});

describe('KVCache API audit', () => {
  it('keyScales / valueScales views are disposed with the cache, like keys() / values()', () => {
    for (const dtype of ['int8', 'float8e4m3fn']) {
      const c = ek.kvCache({ layers: 2, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, dtype });
      const ks = c.keyScales(1), vs = c.valueScales(1), kv = c.keys(1);
      expect(c.keyScales(1)).toBe(ks);
      expect(ks.shape).toEqual([1, 1, 4]);
      const mid = ek.stats();
      ks.dispose(); // a view: frees nothing, and a new view replaces it
      expect(ek.stats()).toEqual(mid);
      const ks2 = c.keyScales(1);
      expect(ks2.disposed).toBe(false);
      expect(ks2.byteOffset).toBe(ks.byteOffset);
      c.dispose();
      for (const t of [ks2, vs, kv]) {
        expect(t.disposed).toBe(true);
        expectKernelError(() => t.data, 'DISPOSED');
      }
      expectKernelError(() => c.keyScales(0), 'DISPOSED');
    }
  });

  it('views of a cache whose Kernels instance was disposed (the cache itself not) are DISPOSED too', async () => {
    const ek2 = await init();
    const c = ek2.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4, dtype: 'int8' });
    const views = [c.keys(0), c.values(0), c.keyScales(0), c.valueScales(0)];
    for (const t of views) expect(t.disposed).toBe(false);
    ek2.dispose();
    for (const t of views) {
      expect(t.disposed).toBe(true);
      expectKernelError(() => t.data, 'DISPOSED');
      expectKernelError(() => t.bytes(), 'DISPOSED');
    }
  });

  it('append k / v and attend out overlapping the scales of an int8 / fp8 cache are ALIASING, nothing written', () => {
    for (const dtype of ['int8', 'float8e4m3fn']) {
      // batch 2, headDim 4, capacity 4: a scales view [2, 1, 4] has the shape of packed [T=2, H=1, D=4] rows
      const c = ek.kvCache({ layers: 1, batch: 2, kvHeads: 1, headDim: 4, capacity: 4, dtype });
      const k = ek.tensor('float32', [2, 1, 1, 4], [1, 2, 3, 4, 5, 6, 7, 8]);
      const packed = ek.tensor('float32', [2, 1, 4], [1, 0, 0, 0, 1, 0, 0, 0]);
      try {
        c.append(0, k, k); c.advance();
        c.append(0, k, k);
        const snap = memorySnapshot(ek);
        for (const s of [c.keyScales(0), c.valueScales(0)]) {
          expectKernelError(() => c.attend(0, packed, { out: s }), 'ALIASING', /out: overlaps the cache storage or its scales/);
        }
        expect(Buffer.compare(memorySnapshot(ek), snap), 'memory unchanged').toBe(0);
        c.advance();
        const snap2 = memorySnapshot(ek);
        for (const s of [c.keyScales(0), c.valueScales(0)]) {
          expectKernelError(() => c.append(0, s, packed, { lengths: [1, 1] }), 'ALIASING', /k: overlaps the cache storage or its scales/);
          expectKernelError(() => c.append(0, packed, s, { lengths: [1, 1] }), 'ALIASING', /v: overlaps/);
        }
        expect(Buffer.compare(memorySnapshot(ek), snap2), 'memory unchanged').toBe(0);
        expect([...c.lengths]).toEqual([2, 2]);
        expect(c.stepInProgress).toBe(false);
        c.append(0, packed, packed, { lengths: [1, 1] }); // the same rows from a tensor of their own are fine
        expect([...c.advance()]).toEqual([3, 3]);
      } finally {
        c.dispose(); k.dispose(); packed.dispose();
      }
    }
  });

  it('queryHeads: the constructor reserves a one-token step\'s scratch, so the first decode step allocates nothing (either kernel)', async () => {
    for (const dtype of ['float32', 'int8'] as const) for (const impl of ['builtin', 'TRT_Attention'] as const) for (const window of [0, 3000]) {
      const fresh = await init();
      try {
        // 8 query heads over 20,000 rows: the builtin kernel's scores alone are 640 KB
        const c = fresh.kvCache({ layers: 2, batch: 2, kvHeads: 2, headDim: 16, dtype, ...(window ? { window, capacity: 30_000 } : { capacity: 20_000 }), queryHeads: 16 });
        const k = fresh.tensor('float32', [2, 2, 1, 16]), q = fresh.tensor('float32', [2, 16, 1, 16]), out = fresh.tensor('float32', [2, 16, 1, 16]);
        const before = fresh.stats();
        for (let l = 0; l < 2; l++) { c.append(l, k, k); c.attend(l, q, { impl, out }); }
        c.advance();
        expect(fresh.stats(), `${dtype} ${impl} window ${window}`).toEqual(before);
      } finally {
        fresh.dispose();
      }
    }
  });

  it('attend frees the output it allocated when it throws (OUT_OF_MEMORY getting the scratch)', async () => {
    const small = await init({ initialMemory: 1 << 21, maximumMemory: 1 << 22 });
    try {
      // 3.2 MB of storage fits, and the scratch of a one-query-head step (0.4 MB, reserved
      // by the constructor); the builtin kernel's scratch for 8 query heads over 100,000 rows
      // (3.2 MB) does not — asked for up front (queryHeads: 8), construction fails, nothing kept
      const before0 = small.stats();
      expectKernelError(() => small.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 100_000, queryHeads: 8 }), 'OUT_OF_MEMORY');
      expect(small.stats().tensorsLive).toBe(before0.tensorsLive);
      expect(small.stats().bytesInUse).toBe(before0.bytesInUse);
      const c = small.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 100_000 });
      const k = small.tensor('float32', [1, 1, 1, 4]);
      c.append(0, k, k);
      const q = small.tensor('float32', [1, 8, 1, 4]);
      const before = small.stats();
      expectKernelError(() => c.attend(0, q, { impl: 'builtin' }), 'OUT_OF_MEMORY');
      // every figure: the scratch area the constructor reserved is still there (a failed
      // request used to free it first, so the next step would allocate)
      expect(small.stats()).toEqual(before);
      expect(c.stepInProgress).toBe(true); // the step is untouched: advance() still commits it
      expect([...c.advance()]).toEqual([1]);
    } finally {
      small.dispose();
    }
  });

  it('attend scale: a number finite in float32 (the kernels\' type: 1e39 gave NaN outputs), nothing written', () => {
    const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 });
    const k = ek.tensor('float32', [1, 1, 1, 4], [1, 2, 3, 4]), q = ek.tensor('float32', [1, 1, 1, 4], [1, 0, 0, 0]);
    const out = ek.tensor('float32', [1, 1, 1, 4], [7, 7, 7, 7]);
    c.append(0, k, k);
    for (const scale of [1e39, -3.5e38, Infinity, NaN, '1' as never]) {
      expectKernelError(() => c.attend(0, q, { scale, out }), 'INVALID_ARGUMENT', /scale: expected a number finite in float32/);
      expect(Array.from(out.data as Float32Array)).toEqual([7, 7, 7, 7]);
    }
    c.attend(0, q, { scale: 3.4e38, out });
    expect(Array.from(out.data as Float32Array)).toEqual([1, 2, 3, 4]);
    c.dispose();
    for (const t of [k, q, out]) t.dispose();
  });

  it('setLengthsFromMask: malformed masks are KernelErrors (never TypeErrors), plain forms as ek.run reads them, half-precision masks by value', () => {
    const c = ek.kvCache({ layers: 1, batch: 2, kvHeads: 1, headDim: 4, capacity: 4 });
    const data = [1, 1, 0, 1, 0, 0];
    try {
      c.setLengthsFromMask({ shape: [2, 2], data: [1, 0, 1, 1] });
      const bad: [unknown, string, RegExp?][] = [
        [{ shape: [2, 3], data: null }, 'INVALID_ARGUMENT', /mask\.data: expected an array/],
        [{ shape: [2, 3], data: undefined }, 'INVALID_ARGUMENT', /mask\.data/],
        [{ shape: [2, 3], data: 7 }, 'INVALID_ARGUMENT', /mask\.data/],
        [{ dtype: 'int32', shape: [2, 3], data: null }, 'INVALID_ARGUMENT', /mask\.data/],
        [{ shape: [2, '3'], data }, 'INVALID_SHAPE', /mask\.shape/],
        [{ shape: [2, 1.5], data }, 'INVALID_SHAPE', /mask\.shape/],
        [{ shape: '2,3', data }, 'INVALID_SHAPE', /mask\.shape/],
        [{ data }, 'INVALID_SHAPE', /mask\.shape/],
        [{ shape: [2, 3], data: [1, 1, 0, 1, 0, null] }, 'INVALID_VALUE', /mask\[1\]\[2\]: expected 0 or 1, got null/],
        [{ dtype: 'float16', shape: [2, 3], data: [1, 1, 0, 1, 0, 0] }, 'INVALID_VALUE', /float16 bit pattern 0x1/], // bits 1: 6e-8, not 1.0
        [{ dtype: 'bfloat16', shape: [2, 3], data: [0x4000, 0, 0, 0, 0, 0] }, 'INVALID_VALUE', /bfloat16 bit pattern 0x4000/],
        [{ dtype: 'int4', shape: [2, 3], data: [0x11, 0x10, 0] }, 'INVALID_DTYPE', /int4/],
        [{ dtype: 'string', shape: [2, 3], data: ['1', '1', '0', '1', '0', '0'] }, 'INVALID_DTYPE'],
        [{ dtype: 'nope', shape: [2, 3], data }, 'INVALID_DTYPE'],
        [null, 'INVALID_ARGUMENT'],
        [5, 'INVALID_ARGUMENT'],
      ];
      for (const [m, code, re] of bad) {
        expectKernelError(() => c.setLengthsFromMask(m as never), code, re);
        expect([...c.lengths], JSON.stringify(m)).toEqual([1, 2]);
      }
      // package tensors of every width, plain { dtype, shape, data } and ONNX Runtime { type, dims, data }
      const f16 = ek.tensor('float16', [2, 3], [0x3c00, 0x3c00, 0, 0x3c00, 0x8000, 0]); // 1.0, 1.0, 0 | 1.0, −0, 0
      const bf16 = ek.tensor('bfloat16', [2, 3], [0x3f80, 0x3f80, 0, 0x3f80, 0, 0]);
      const f32 = ek.tensor('float32', [2, 3], [1, 1, -0, 1, 0, 0]);
      const e4m3 = ek.tensor('float8e4m3fn', [2, 3], [0x38, 0x38, 0, 0x38, 0x80, 0]);
      try {
        for (const m of [f16, bf16, f32, e4m3,
          { dtype: 'float16', shape: [2, 3], data: new Uint16Array([0x3c00, 0x3c00, 0, 0x3c00, 0, 0]) },
          { type: 'int64', dims: [2, 3], data: BigInt64Array.from(data, BigInt) },
          { type: 'bool', dims: [2, 3], data: [true, true, false, true, false, false] },
          { dtype: 7, shape: [2, 3], data }, // ONNX TensorProto code of int64
          { shape: [2n, 3n], data }, // bigint dims, as ek.tensor takes them
        ]) {
          c.reset();
          expect([...c.setLengthsFromMask(m as never)], 'dtype' in m ? String(m.dtype) : JSON.stringify(m, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))).toEqual([2, 1]);
        }
        f16.dispose();
        expectKernelError(() => c.setLengthsFromMask(f16), 'DISPOSED');
      } finally {
        bf16.dispose(); f32.dispose(); e4m3.dispose();
      }
    } finally {
      c.dispose();
    }
  });

  it('append lengths: every entry a non-negative integer number (as reset(seq)); anything else is INVALID_VALUE with nothing written', () => {
    const c = ek.kvCache({ layers: 1, batch: 2, kvHeads: 1, headDim: 4, capacity: 4 });
    const k = ek.tensor('float32', [2, 1, 1, 4], new Float32Array(8).fill(5));
    try {
      const snap = memorySnapshot(ek);
      for (const first of [null, false, true, '', '1', [1], 1n, undefined, 1.5, -1, NaN, 2]) {
        expectKernelError(() => c.append(0, k, k, { lengths: [first as number, 1] }), 'INVALID_VALUE', /lengths\[0\]: expected an integer in \[0, 1\]/);
      }
      expect(Buffer.compare(memorySnapshot(ek), snap), 'memory unchanged').toBe(0);
      expect(c.stepInProgress).toBe(false);
      c.append(0, k, k, { lengths: Int32Array.of(0, 1) });
      expect([...c.advance()]).toEqual([0, 1]);
    } finally {
      c.dispose(); k.dispose();
    }
  });

  it('after dispose(): state and addresses throw DISPOSED (byteOffset, stepInProgress, lengths), configuration stays readable (bytes, dtype, …)', () => {
    const c = ek.kvCache({ layers: 1, batch: 2, kvHeads: 1, headDim: 4, capacity: 4, dtype: 'int8' });
    const bytes = c.bytes;
    expect(typeof c.byteOffset).toBe('number');
    expect(c.stepInProgress).toBe(false);
    c.dispose();
    expectKernelError(() => c.byteOffset, 'DISPOSED');
    expectKernelError(() => c.stepInProgress, 'DISPOSED');
    expectKernelError(() => c.lengths, 'DISPOSED');
    expect(c.bytes).toBe(bytes);
    expect([c.dtype, c.layers, c.batch, c.capacity, c.disposed]).toEqual(['int8', 1, 2, 4, true]);
  });

  it('argument getters that dispose the cache or call it again: DISPOSED / not re-entrant, nothing written, no state changed halfway', () => {
    // (found by an audit: a lengths getter that disposed the cache let append write into the
    // freed block, now another tensor's; a getter calling append made setLengthsFromMask
    // overwrite a step's lengths)
    const mk = () => ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 });
    const k = ek.tensor('float32', [1, 1, 1, 4], [1, 2, 3, 4]);
    const q = ek.tensor('float32', [1, 1, 1, 4], [1, 1, 1, 1]);
    const made: Tensor[] = [];
    try {
      // dispose from a getter of append / attend: DISPOSED, and the freed block untouched
      let c = mk();
      expectKernelError(() => c.append(0, k, k, { get lengths() { c.dispose(); const t = ek.tensor('float32', [64]); made.push(t); return [1]; } }), 'DISPOSED');
      for (const t of made) expect(Array.from(t.data as Float32Array).every((x) => x === 0), 'a tensor in the freed block').toBe(true);
      c = mk();
      c.append(0, k, k);
      c.advance();
      expectKernelError(() => c.attend(0, q, { get scale() { c.dispose(); return 1; } }), 'DISPOSED');
      // calls of the same cache from a getter: refused, and the outer call fails with nothing done
      c = mk();
      const lens = () => [...c.lengths];
      expectKernelError(() => c.append(0, k, k, { get lengths() { c.append(0, k, k); return [1]; } }), 'INVALID_ARGUMENT', /not re-entrant/);
      expect([lens(), c.stepInProgress]).toEqual([[0], false]);
      const data = [1, 1];
      Object.defineProperty(data, 1, { get() { c.append(0, k, k); return 1; } });
      expectKernelError(() => c.setLengthsFromMask({ shape: [1, 2], data }), 'INVALID_ARGUMENT', /not re-entrant/);
      expect([lens(), c.stepInProgress]).toEqual([[0], false]);
      c.append(0, k, k);
      expectKernelError(() => c.attend(0, q, { get out() { c.advance(); return undefined; } }), 'INVALID_ARGUMENT', /not re-entrant/);
      expect([lens(), c.stepInProgress]).toEqual([[0], true]);
      expect([...c.advance()]).toEqual([1]);
      c.dispose();
    } finally {
      k.dispose(); q.dispose();
      for (const t of made) t.dispose();
    }
  });

  it('no step in progress: advance() is a no-op returning the lengths; attend() takes q\'s S rows as each sequence\'s last S positions', () => {
    const c = ek.kvCache({ layers: 2, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 });
    const q = ek.tensor('float32', [1, 1, 1, 4], [1, 1, 1, 1]);
    const k = ek.tensor('float32', [1, 1, 2, 4], [1, 0, 0, 0, 0, 0, 0, 9]);
    try {
      expect([...c.advance()]).toEqual([0]);
      expect(c.stepInProgress).toBe(false);
      expect([...(c.attend(0, q).data as Float32Array)]).toEqual([0, 0, 0, 0]); // nothing cached: no position to see
      c.append(0, k, k); c.append(1, k, k);
      const q2 = ek.tensor('float32', [1, 1, 2, 4], [0, 0, 0, 0, 1, 1, 1, 1]);
      const inStep = [...(c.attend(0, q2).data as Float32Array)].slice(4); // the step's second token, position 1
      q2.dispose();
      expect([...c.advance()]).toEqual([2]);
      expect([...c.advance()]).toEqual([2]);
      close(c.attend(0, q).data as Float32Array, inStep, 'last position after advance');
    } finally {
      c.dispose(); q.dispose(); k.dispose();
    }
  });

  it('no step in progress, a window: causal rows whose window has left the ring are an error (at most maxAppend rows), nothing written', () => {
    for (const [window, maxAppend] of [[1, 1], [4, 2], [3, 3]]) {
      const ring = window + maxAppend - 1;
      const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 1, window, maxAppend });
      const ref = new RefCache(1, window, ring);
      const one = ek.tensor('float32', [1, 1, 1, 1]);
      try {
        for (let p = 0; p < 10; p++) {
          one.data[0] = p + 1;
          c.append(0, one, one);
          ref.k[0].push([[p + 1]]); ref.v[0].push([[p + 1]]);
          c.advance();
        }
        for (let S = 1; S <= ring + 1; S++) {
          const q = ek.tensor('float32', [1, 1, S, 1], new Array(S).fill(0.5));
          const out = ek.tensor('float32', [1, 1, S, 1], new Array(S).fill(7));
          try {
            if (S <= maxAppend) {
              c.attend(0, q, { out });
              for (let s = 0; s < S; s++) close([out.data[s]], ref.attend(0, 0, 1, [0.5], 10 - S + s, 10, 1), `window ${window} S ${S} row ${s}`);
            } else {
              expectKernelError(() => c.attend(0, q, { out }), 'INVALID_SHAPE', /reach back to position/);
              expect([...out.data], `window ${window} S ${S}`).toEqual(new Array(S).fill(7));
              // not causal: every row sees the last window positions, all still held
              c.attend(0, q, { out, causal: false });
              for (let s = 0; s < S; s++) close([out.data[s]], ref.attend(0, 0, 1, [0.5], 9, 10, 1), `window ${window} S ${S} row ${s}, not causal`);
            }
          } finally {
            q.dispose(); out.dispose();
          }
        }
      } finally {
        c.dispose(); one.dispose();
      }
    }
  });
});

describe('debug mode', () => {
  it('append and the builtin attend check the canaries as run() does (they call kernels directly)', async () => {
    for (const step of ['append', 'attend'] as const) {
      const ek = await init({ debug: true });
      try {
        const c = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 8 });
        const k = ek.tensor('float32', [1, 1, 1, 4], [1, 2, 3, 4]);
        const q = ek.tensor('float32', [1, 1, 1, 4], [1, 0, 0, 0]);
        if (step === 'attend') c.append(0, k, k);
        // a stray write just past a tensor (into its tail padding), as a faulty kernel would make
        const probe = ek.tensor('float32', [3]);
        new Uint8Array(ek.memory.buffer)[probe.byteOffset + probe.byteLength + 1] ^= 0xff;
        if (step === 'append') expectKernelError(() => c.append(0, k, k), 'INTERNAL', /after kvCache\.append/);
        else expectKernelError(() => c.attend(0, q, { impl: 'builtin' }), 'INTERNAL', /after kvCache\.attend/);
      } finally {
        ek.dispose();
      }
    }
  });
});
