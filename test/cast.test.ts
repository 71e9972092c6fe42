/**
 * Cast (ONNX 25): conformance files, exhaustive bit-exact conversions against the plain
 * reference in test/ref/quant.ts, the whole dtype matrix, strings, bad inputs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Kernels, KernelError, conformanceCases, expectConformanceCase, expectKernelError, init, memorySnapshot,
} from './helpers';
import {
  FORMATS, INT_BITS, castValue, decodeE8m0, decodeMini, encodeE8m0, encodeF16, encodeMini, f32Bits,
  f32BitsOfValue, f32FromBits, pack, unpack, valueOf,
} from './ref/quant';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});

const F8 = ['float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz'] as const;
const MODES = ['up', 'down', 'nearest'] as const;

/** Runs Cast and returns the output's data copied (and disposes the output). */
function cast(input: { dtype: string; shape: number[]; data: unknown }, attrs: Record<string, unknown>): { dtype: string; data: ArrayLike<unknown> } {
  const [y] = ek.run('Cast', [input as never], attrs) as [{ dtype: string; data: ArrayLike<unknown>; dispose(): void }];
  const data = Array.isArray(y.data) ? [...y.data] : (y.data as unknown as { slice(): ArrayLike<unknown> }).slice();
  const dtype = y.dtype;
  y.dispose();
  return { dtype, data };
}

function firstMismatch(got: ArrayLike<number>, want: ArrayLike<number>, label: (i: number) => string): string | null {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) return `${label(i)}: got 0x${got[i].toString(16)}, want 0x${want[i].toString(16)}`;
  }
  return null;
}

describe('Cast conformance', () => {
  const cases = conformanceCases(['test_cast_']);
  it('has conformance files', () => expect(cases.length).toBeGreaterThan(0));
  for (const c of cases) {
    it(c.file, () => {
      expectConformanceCase(ek, c);
    });
  }
});

describe('Cast exhaustive: every float16 / bfloat16 pattern', () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  for (const src of ['float16', 'bfloat16'] as const) {
    const F = FORMATS[src];
    const values = Array.from(all, (h) => decodeMini(F, h));
    for (const to of F8) {
      for (const saturate of [1, 0]) {
        it(`${src} → ${to} saturate=${saturate}`, () => {
          const got = cast({ dtype: src, shape: [65536], data: all }, { to, saturate }).data as Uint8Array;
          const want = values.map((v, h) => encodeMini(FORMATS[to], v, saturate === 1, (h & 0x8000) !== 0));
          expect(firstMismatch(got, want, (h) => `${src} 0x${h.toString(16)} (${values[h]})`)).toBeNull();
        });
      }
    }
    it(`${src} → float4e2m1`, () => {
      const got = unpack(cast({ dtype: src, shape: [65536], data: all }, { to: 'float4e2m1' }).data as Uint8Array, 65536, 4);
      const want = values.map((v, h) => encodeMini(FORMATS.float4e2m1, v, true, (h & 0x8000) !== 0));
      expect(firstMismatch(got, want, (h) => `${src} 0x${h.toString(16)} (${values[h]})`)).toBeNull();
    });
    for (const mode of MODES) {
      for (const saturate of [1, 0]) {
        it(`${src} → float8e8m0 round_mode=${mode} saturate=${saturate}`, () => {
          const got = cast({ dtype: src, shape: [65536], data: all }, { to: 'float8e8m0', saturate, round_mode: mode }).data as Uint8Array;
          const want = values.map((v) => encodeE8m0(v, saturate === 1, mode));
          expect(firstMismatch(got, want, (h) => `${src} 0x${h.toString(16)} (${values[h]})`)).toBeNull();
        });
      }
    }
    const other = src === 'float16' ? 'bfloat16' : 'float16';
    it(`${src} → ${other}`, () => {
      const got = cast({ dtype: src, shape: [65536], data: all }, { to: other }).data as Uint16Array;
      const want = values.map((v, h) => castValue(v, src, other, true, 'up', (h & 0x8000) !== 0) as number);
      // NaN payloads: the kernels keep the top payload bits (numpy); the reference uses the
      // canonical quiet NaN: compare NaN-ness for NaN inputs, bits otherwise.
      for (let h = 0; h < 65536; h++) {
        if (Number.isNaN(values[h])) {
          expect(Number.isNaN(decodeMini(FORMATS[other], got[h])), `NaN 0x${h.toString(16)}`).toBe(true);
          expect(got[h] >> 15, `NaN sign 0x${h.toString(16)}`).toBe(h >> 15);
        } else if (got[h] !== want[h]) {
          expect.fail(`${src} 0x${h.toString(16)} (${values[h]}): got 0x${got[h].toString(16)}, want 0x${want[h].toString(16)}`);
        }
      }
    });
    it(`${src} → float32 (all patterns)`, () => {
      const got = new Uint32Array((cast({ dtype: src, shape: [65536], data: all }, { to: 'float32' }).data as Float32Array).buffer.slice(0));
      for (let h = 0; h < 65536; h++) {
        const v = values[h];
        if (Number.isNaN(v)) {
          expect(Number.isNaN(f32FromBits(got[h])) && got[h] >>> 31 === h >>> 15, `0x${h.toString(16)}`).toBe(true);
        } else if (got[h] !== f32Bits(v)) expect.fail(`${src} 0x${h.toString(16)}: got 0x${got[h].toString(16)}, want 0x${f32Bits(v).toString(16)}`);
      }
    });
  }
});

describe('Cast exhaustive: every float8 / float4 code back to float32', () => {
  const codes = new Uint8Array(256).map((_, i) => i);
  for (const src of F8) {
    it(`${src} → float32 (256 codes, bit-exact)`, () => {
      const got = new Uint32Array((cast({ dtype: src, shape: [256], data: codes }, { to: 'float32' }).data as Float32Array).slice().buffer);
      const want = Array.from(codes, (c) => f32BitsOfValue(decodeMini(FORMATS[src], c), (c & 0x80) !== 0));
      expect(firstMismatch(got, want, (c) => `${src} code 0x${c.toString(16)}`)).toBeNull();
    });
    it(`${src} → float16 / bfloat16 / float64 (256 codes)`, () => {
      const f64 = cast({ dtype: src, shape: [256], data: codes }, { to: 'float64' }).data as Float64Array;
      const h = cast({ dtype: src, shape: [256], data: codes }, { to: 'float16' }).data as Uint16Array;
      const b = cast({ dtype: src, shape: [256], data: codes }, { to: 'bfloat16' }).data as Uint16Array;
      for (let c = 0; c < 256; c++) {
        const v = decodeMini(FORMATS[src], c);
        if (Number.isNaN(v)) {
          expect(Number.isNaN(f64[c]) && Number.isNaN(decodeMini(FORMATS.float16, h[c])) && Number.isNaN(decodeMini(FORMATS.bfloat16, b[c]))).toBe(true);
          continue;
        }
        expect(f64[c], `${src} 0x${c.toString(16)} → float64`).toBe(v);
        expect(h[c], `${src} 0x${c.toString(16)} → float16`).toBe(encodeF16(v, f32Bits(v)));
        expect(b[c], `${src} 0x${c.toString(16)} → bfloat16`).toBe(encodeMini(FORMATS.bfloat16, v, false));
      }
    });
  }
  it('float8e8m0 → float32 (256 codes)', () => {
    const got = new Uint32Array((cast({ dtype: 'float8e8m0', shape: [256], data: codes }, { to: 'float32' }).data as Float32Array).slice().buffer);
    const want = Array.from(codes, (c) => f32BitsOfValue(decodeE8m0(c)));
    expect(firstMismatch(got, want, (c) => `e8m0 code ${c}`)).toBeNull();
  });
  it('float4e2m1 → float32 (16 codes, packed, odd length)', () => {
    const list = [...Array(16).keys(), 3];
    const got = cast({ dtype: 'float4e2m1', shape: [17], data: pack(list, 4) }, { to: 'float32' }).data as Float32Array;
    expect(Array.from(got)).toEqual(list.map((c) => decodeMini(FORMATS.float4e2m1, c)));
    expect(Array.from(got.slice(0, 8))).toEqual([0, 0.5, 1, 1.5, 2, 3, 4, 6]);
  });
});

/** float32 values at, between and next to every representable value of a format, and beyond. */
function boundaryValues(fmt: string): Float32Array {
  const out: number[] = [];
  const push = (x: number) => {
    const b = f32Bits(x);
    out.push(x, -x);
    if (x !== 0) out.push(f32FromBits(b + 1), f32FromBits(b - 1), -f32FromBits(b + 1), -f32FromBits(b - 1));
  };
  if (fmt === 'float8e8m0') {
    for (let k = -127; k <= 127; k++) { push(2 ** k); push(1.5 * 2 ** k); }
    push(2 ** 127 * 1.75);
  } else {
    const F = FORMATS[fmt];
    const vals: number[] = [];
    for (let c = 0; c < 1 << (F.bits - 1); c++) {
      const v = decodeMini(F, c);
      if (Number.isFinite(v)) vals.push(v);
    }
    vals.sort((a, b) => a - b);
    for (let i = 0; i < vals.length; i++) {
      push(vals[i]);
      if (i + 1 < vals.length) push((vals[i] + vals[i + 1]) / 2);
    }
    const max = vals[vals.length - 1];
    const ulp = 2 ** (Math.floor(Math.log2(max)) - F.M);
    push(max + ulp / 2); push(max + ulp); push(max * 2);
  }
  push(f32FromBits(1)); push(f32FromBits(0x7f7fffff)); push(1e-30); push(1e30);
  out.push(Infinity, -Infinity);
  const arr = new Float32Array(out.length + 2);
  arr.set(out);
  const u = new Uint32Array(arr.buffer);
  u[out.length] = 0x7fc00000; // NaN
  u[out.length + 1] = 0xffc00001; // −NaN with payload
  return arr;
}

describe('Cast float32 at and around every rounding boundary', () => {
  for (const to of [...F8, 'float16', 'bfloat16', 'float4e2m1']) {
    const xs = boundaryValues(to);
    const bits = new Uint32Array(xs.buffer);
    for (const saturate of to.startsWith('float8') ? [1, 0] : [1]) {
      it(`float32 → ${to} saturate=${saturate} (${xs.length} values)`, () => {
        let got = cast({ dtype: 'float32', shape: [xs.length], data: xs }, { to, saturate }).data as ArrayLike<number>;
        if (to === 'float4e2m1') got = unpack(got, xs.length, 4);
        const want = Array.from(xs, (x, i) => {
          const neg = bits[i] >>> 31 === 1;
          if (to === 'float16') return Number.isNaN(x) ? encodeF16(x, bits[i]) : encodeF16(x, bits[i]);
          if (to === 'bfloat16') return Number.isNaN(x) ? (neg ? 0xffc0 : 0x7fc0) : encodeMini(FORMATS.bfloat16, x, false);
          return encodeMini(FORMATS[to], x, saturate === 1, neg);
        });
        expect(firstMismatch(got, want, (i) => `float32 ${xs[i]} (0x${bits[i].toString(16)})`)).toBeNull();
      });
    }
  }
  const xs = boundaryValues('float8e8m0');
  for (const mode of MODES) {
    for (const saturate of [1, 0]) {
      it(`float32 → float8e8m0 round_mode=${mode} saturate=${saturate}`, () => {
        const got = cast({ dtype: 'float32', shape: [xs.length], data: xs }, { to: 'float8e8m0', saturate, round_mode: mode }).data as Uint8Array;
        const want = Array.from(xs, (x) => encodeE8m0(x, saturate === 1, mode));
        expect(firstMismatch(got, want, (i) => `float32 ${xs[i]}`)).toBeNull();
      });
    }
  }
  it('every tail length 0..40 (SIMD body + scalar tail) writes exactly its output', () => {
    const vals = boundaryValues('float8e4m3fn');
    // one call first: the instance's scratch area (not a tensor) may take a constant then
    cast({ dtype: 'float32', shape: [1], data: [1] }, { to: 'float8e4m3fn' });
    for (let n = 0; n <= 40; n++) {
      const x = ek.tensor('float32', [n], vals.subarray(0, n));
      const y = ek.tensor('float8e4m3fn', [n]);
      const guard = ek.tensor('uint8', [32]);
      const before = Buffer.from(memorySnapshot(ek));
      ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y] });
      const after = Buffer.from(memorySnapshot(ek));
      expect(after.subarray(0, y.byteOffset).equals(before.subarray(0, y.byteOffset)), `n=${n}: bytes before the output`).toBe(true);
      expect(after.subarray(y.byteOffset + n).equals(before.subarray(y.byteOffset + n)), `n=${n}: bytes after the output`).toBe(true);
      const want = Array.from(vals.subarray(0, n), (v) => encodeMini(FORMATS.float8e4m3fn, v, true));
      expect(Array.from(y.data as Uint8Array)).toEqual(want);
      x.dispose(); y.dispose(); guard.dispose();
    }
  });
});

// ---- the dtype matrix -----------------------------------------------------------------

const NUMERIC = [
  'float32', 'float64', 'float16', 'bfloat16', 'float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz',
  'float8e8m0', 'float4e2m1', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64',
  'int4', 'uint4', 'int2', 'uint2', 'bool',
];

/** Source data (as given to the package) and the element values. */
function sourceOf(dtype: string): { data: unknown; values: (number | bigint)[]; nanNeg: boolean[] } {
  const floats = [0, -0, 0.5, -1.5, 2.5, 3.75, -7.99, 100.5, -128.5, 255.5, 65504, 70000, 1e10, -3e38, 1e-3, 2 ** -20, Infinity, -Infinity, NaN];
  if (dtype === 'float32' || dtype === 'float64') {
    return { data: floats, values: floats.map((v) => (dtype === 'float32' ? Math.fround(v) : v)), nanNeg: floats.map(() => false) };
  }
  if (dtype in FORMATS && FORMATS[dtype].bits === 16) {
    const codes = [0, 0x8000, 1, 0x3c00, 0xbc00, 0x4170, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x3555, 0x5a5a, 0x4d00, 0xc7f0, 0x0400, 0x03ff];
    return { data: codes, values: codes.map((c) => valueOf(dtype, c)), nanNeg: codes.map((c) => (c & 0x8000) !== 0) };
  }
  if (dtype.startsWith('float8')) {
    const codes = [...Array(256).keys()];
    return { data: codes, values: codes.map((c) => valueOf(dtype, c)), nanNeg: codes.map((c) => dtype !== 'float8e8m0' && (c & 0x80) !== 0) };
  }
  if (dtype === 'float4e2m1') {
    const codes = [...Array(16).keys(), 5];
    return { data: pack(codes, 4), values: codes.map((c) => valueOf(dtype, c)), nanNeg: codes.map(() => false) };
  }
  if (dtype === 'bool') return { data: [0, 1, 1, 0, 1], values: [0, 1, 1, 0, 1], nanNeg: [false, false, false, false, false] };
  const bits = INT_BITS[dtype];
  const signed = dtype.startsWith('int');
  if (bits <= 4) {
    const vals = [...Array(1 << bits).keys()].map((c) => (signed && c >= 1 << (bits - 1) ? c - (1 << bits) : c));
    vals.push(vals[1]);
    return { data: pack(vals.map((v) => v & ((1 << bits) - 1)), bits), values: vals, nanNeg: vals.map(() => false) };
  }
  const cand: bigint[] = [0n, 1n, -1n, 7n, -8n, 127n, 128n, -129n, 255n, 256n, 1000n, -32769n, 65535n, 65536n, 2n ** 31n - 1n, -(2n ** 31n), 2n ** 40n + 5n, -(2n ** 52n) + 3n, 2n ** 53n - 1n];
  const lo = signed ? -(2n ** BigInt(bits - 1)) : 0n, hi = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  const vals = cand.filter((v) => v >= lo && v <= hi);
  if (bits === 64) return { data: vals, values: vals, nanNeg: vals.map(() => false) };
  return { data: vals.map(Number), values: vals.map(Number), nanNeg: vals.map(() => false) };
}

/** Output codes of a cast as plain numbers / bigints (packed types unpacked). */
function outputCodes(dtype: string, data: ArrayLike<unknown>, n: number): (number | bigint)[] {
  if (dtype === 'int4' || dtype === 'uint4' || dtype === 'float4e2m1') return unpack(data as Uint8Array, n, 4);
  if (dtype === 'int2' || dtype === 'uint2') return unpack(data as Uint8Array, n, 2);
  return Array.from(data as ArrayLike<number | bigint>);
}

function expectedCode(to: string, c: number | bigint): number | bigint {
  if (to === 'int4' || to === 'uint4') return Number(c) & 15;
  if (to === 'int2' || to === 'uint2') return Number(c) & 3;
  return c;
}

describe('Cast: every pair of numeric dtypes', () => {
  for (const from of NUMERIC) {
    it(`${from} → every numeric dtype`, () => {
      const src = sourceOf(from);
      const n = src.values.length;
      for (const to of NUMERIC) {
        const settings: [number, (typeof MODES)[number]][] = to.startsWith('float8e8m0') ? MODES.flatMap((m) => [[1, m], [0, m]] as [number, (typeof MODES)[number]][]) : to.startsWith('float8') ? [[1, 'up'], [0, 'up']] : [[1, 'up']];
        for (const [saturate, mode] of settings) {
          const out = cast({ dtype: from, shape: [n], data: src.data }, { to, saturate, round_mode: mode });
          expect(out.dtype).toBe(to);
          const got = outputCodes(to, out.data, n);
          for (let i = 0; i < n; i++) {
            let want = expectedCode(to, castValue(src.values[i], from, to, saturate === 1, mode, src.nanNeg[i]));
            // a cast to the same float8 type is the identity (NaN payloads kept), except saturating e5m2's ±Inf
            if (from === to && from.startsWith('float8') && !(saturate === 1 && from === 'float8e5m2')) want = (src.data as number[])[i];
            const g = got[i];
            const label = `${from} ${String(src.values[i])} → ${to} (saturate ${saturate}, ${mode})`;
            if (to === 'float32' || to === 'float64') {
              if (Number.isNaN(want as number)) expect(Number.isNaN(g as number), label).toBe(true);
              else expect(Object.is(g, want) || (g === 0 && want === 0 && Object.is(1 / (g as number), 1 / (want as number))), `${label}: got ${String(g)}, want ${String(want)}`).toBe(true);
            } else if ((to === 'float16' || to === 'bfloat16') && Number.isNaN(valueOf(to, want as number) as number)) {
              expect(Number.isNaN(valueOf(to, g as number) as number), label).toBe(true);
            } else if (g !== want) {
              expect.fail(`${label}: got ${String(g)}, want ${String(want)}`);
            }
          }
        }
      }
    });
  }

  it('int64 / uint64 beyond 2^53 round once to narrow floats (round-to-odd pivot)', () => {
    const v = 2n ** 60n + 2n ** 36n + 1n; // just above a float32 midpoint; float64 alone would tie
    const f = cast({ dtype: 'int64', shape: [2], data: [v, -v] }, { to: 'float32' }).data as Float32Array;
    expect(f[0]).toBe(2 ** 60 + 2 ** 37);
    expect(f[1]).toBe(-(2 ** 60 + 2 ** 37));
    // 2^60 + 2^52 + 1 is just above a bfloat16 midpoint; float64 alone would round it onto the tie (→ 2^60)
    const u = cast({ dtype: 'uint64', shape: [1], data: [2n ** 60n + 2n ** 52n + 1n] }, { to: 'bfloat16' }).data as Uint16Array;
    expect(u[0]).toBe(encodeMini(FORMATS.bfloat16, 2 ** 60 + 2 ** 53, false));
    const d = cast({ dtype: 'int64', shape: [1], data: [2n ** 63n - 1n] }, { to: 'float64' }).data as Float64Array;
    expect(d[0]).toBe(2 ** 63);
    const w = cast({ dtype: 'uint64', shape: [2], data: [2n ** 64n - 1n, 2n ** 63n + 300n] }, { to: 'int8' }).data as Int8Array;
    expect(Array.from(w)).toEqual([-1, 44]);
  });

  it('float64 → float16 rounds once (no double rounding through float32)', () => {
    // 1 + 2^-11 + 2^-40: above the float16 midpoint 1 + 2^-11, float32 would round it onto the tie.
    const x = 1 + 2 ** -11 + 2 ** -40;
    const h = cast({ dtype: 'float64', shape: [2], data: [x, -x] }, { to: 'float16' }).data as Uint16Array;
    expect(Array.from(h)).toEqual([0x3c01, 0xbc01]);
    const e = cast({ dtype: 'float64', shape: [1], data: [448 + 16 + 1e-9] }, { to: 'float8e4m3fn', saturate: 0 }).data as Uint8Array;
    expect(e[0]).toBe(0x7f);
  });

  it('large chunked casts agree with the reference (several pivot chunks, odd length)', () => {
    const n = 40001;
    const src = new Uint16Array(n).map((_, i) => (i * 7919) & 0xffff);
    const got = cast({ dtype: 'float16', shape: [n], data: src }, { to: 'int8' }).data as Int8Array;
    for (let i = 0; i < n; i++) {
      const want = castValue(decodeMini(FORMATS.float16, src[i]), 'float16', 'int8') as number;
      if (got[i] !== want) expect.fail(`float16 0x${src[i].toString(16)} → int8: got ${got[i]}, want ${want}`);
    }
    const q = cast({ dtype: 'float16', shape: [n], data: src }, { to: 'int4' }).data as Uint8Array;
    const codes = unpack(q, n, 4);
    for (let i = 0; i < n; i++) {
      const want = (castValue(decodeMini(FORMATS.float16, src[i]), 'float16', 'int4') as number) & 15;
      if (codes[i] !== want) expect.fail(`float16 0x${src[i].toString(16)} → int4: got ${codes[i]}, want ${want}`);
    }
  });
});

describe('Cast of packed types: the padding fields of a partial last byte', () => {
  // a caller may leave anything in the unused high fields of a packed tensor's last byte;
  // every Cast output has them zero, the same-type copy included
  const PACKED = [['uint4', 4], ['int4', 4], ['float4e2m1', 4], ['uint2', 2], ['int2', 2]] as const;
  for (const [from, bits] of PACKED) {
    it(`${from} → every packed dtype, lengths 1..9, input padding all ones`, () => {
      for (let n = 1; n <= 9; n++) {
        const codes = Array.from({ length: n }, (_, i) => (i * 5 + 3) & ((1 << bits) - 1));
        const data = pack(codes, bits);
        const used = (n * bits) & 7;
        if (used) data[data.length - 1] |= (0xff << used) & 0xff;
        for (const [to, tb] of PACKED) {
          const out = cast({ dtype: from, shape: [n], data }, { to }).data as Uint8Array;
          expect(out.length, `${from}[${n}] → ${to}`).toBe(Math.ceil((n * tb) / 8));
          const rest = (n * tb) & 7;
          if (rest) expect(out[out.length - 1] >> rest, `${from}[${n}] → ${to}: padding`).toBe(0);
          if (to === from) expect(unpack(out, n, bits), `${from}[${n}] → itself: codes`).toEqual(codes);
        }
      }
    });
  }
});

describe('Cast with strings (host side)', () => {
  it('string → floats accepts plain, scientific, [+|-]INF and NaN in any case', () => {
    const s = ['3.14', '1000', '1e-5', '1E8', '+INF', 'inf', '-INF', 'NaN', 'nan', '-0', ' 2.5 '];
    const f = cast({ dtype: 'string', shape: [s.length], data: s }, { to: 'float32' }).data as Float32Array;
    expect(Array.from(f)).toEqual([Math.fround(3.14), 1000, Math.fround(1e-5), 1e8, Infinity, Infinity, -Infinity, NaN, NaN, -0, 2.5]);
    const d = cast({ dtype: 'string', shape: [2], data: ['0.1', '-1e300'] }, { to: 'float64' }).data as Float64Array;
    expect(Array.from(d)).toEqual([0.1, -1e300]);
    const h = cast({ dtype: 'string', shape: [3], data: ['1', '-INF', '100000'] }, { to: 'float8e4m3fn' }).data as Uint8Array;
    expect(Array.from(h)).toEqual([0x38, 0xfe, 0x7e]);
  });
  it('string → integers and bool', () => {
    const i = cast({ dtype: 'string', shape: [4], data: ['100', '-7', '100.5', '9223372036854775807'] }, { to: 'int64' }).data as BigInt64Array;
    expect(Array.from(i)).toEqual([100n, -7n, 100n, 2n ** 63n - 1n]);
    const b = cast({ dtype: 'string', shape: [3], data: ['0', '2', '0.0'] }, { to: 'bool' }).data as Uint8Array;
    expect(Array.from(b)).toEqual([0, 1, 0]);
    const u = cast({ dtype: 'string', shape: [2], data: ['300', '-1'] }, { to: 'uint8' }).data as Uint8Array;
    expect(Array.from(u)).toEqual([44, 255]);
  });
  it('non-integer numeric strings → integers follow the float → integer rule (saturate to the target, not to int64)', () => {
    // "1e19" is in uint64's range; +INF saturates to the target's maximum (as float +Inf does),
    // never to the low bits of INT64_MAX; an integer literal still keeps its low bits
    const s = ['1e19', 'INF', '-INF', '1e10', '-1.5', '255.9', 'NaN', '300'];
    const u64 = cast({ dtype: 'string', shape: [s.length], data: s }, { to: 'uint64' }).data as BigUint64Array;
    expect(Array.from(u64)).toEqual([10n ** 19n, 2n ** 64n - 1n, 0n, 10n ** 10n, 0n, 255n, 0n, 300n]);
    const i32 = cast({ dtype: 'string', shape: [s.length], data: s }, { to: 'int32' }).data as Int32Array;
    expect(Array.from(i32)).toEqual([2 ** 31 - 1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31 - 1, -1, 255, 0, 300]);
    const u32 = cast({ dtype: 'string', shape: [s.length], data: s }, { to: 'uint32' }).data as Uint32Array;
    expect(Array.from(u32)).toEqual([2 ** 32 - 1, 2 ** 32 - 1, 0, 2 ** 32 - 1, 0, 255, 0, 300]);
    const i8 = cast({ dtype: 'string', shape: [s.length], data: s }, { to: 'int8' }).data as Int8Array;
    expect(Array.from(i8)).toEqual([127, 127, -128, 127, -1, 127, 0, 44]);
    const i64 = cast({ dtype: 'string', shape: [3], data: ['1e19', '-INF', '-1e19'] }, { to: 'int64' }).data as BigInt64Array;
    expect(Array.from(i64)).toEqual([2n ** 63n - 1n, -(2n ** 63n), -(2n ** 63n)]);
    // 4-bit targets keep the low bits of the truncated value (NaN, ±Inf → 0), as float → int4 does
    const i4 = unpack(cast({ dtype: 'string', shape: [4], data: ['8.5', '-9.5', 'INF', '1e19'] }, { to: 'int4' }).data as Uint8Array, 4, 4);
    expect(i4).toEqual(unpack(cast({ dtype: 'float64', shape: [4], data: [8.5, -9.5, Infinity, 1e19] }, { to: 'int4' }).data as Uint8Array, 4, 4));
  });
  it('numbers → string, and back to the same values', () => {
    const xs = new Float32Array([0.4789254665374756, 1e-7, -2.5, 1e20, Infinity, -Infinity, NaN, 0]);
    const s = cast({ dtype: 'float32', shape: [xs.length], data: xs }, { to: 'string' }).data as string[];
    expect(s.slice(0, 3)).toEqual(['0.47892547', '1e-7', '-2.5']);
    expect(s.slice(4, 7)).toEqual(['INF', '-INF', 'NaN']);
    const back = cast({ dtype: 'string', shape: [xs.length], data: s }, { to: 'float32' }).data as Float32Array;
    expect(Array.from(back)).toEqual(Array.from(xs));
    expect(cast({ dtype: 'int64', shape: [2], data: [2n ** 63n - 1n, -5n] }, { to: 'string' }).data).toEqual(['9223372036854775807', '-5']);
    expect(cast({ dtype: 'uint64', shape: [1], data: [2n ** 64n - 1n] }, { to: 'string' }).data).toEqual(['18446744073709551615']);
    expect(cast({ dtype: 'int4', shape: [3], data: pack([7, 8, 15], 4) }, { to: 'string' }).data).toEqual(['7', '-8', '-1']);
    expect(cast({ dtype: 'bool', shape: [2], data: [1, 0] }, { to: 'string' }).data).toEqual(['True', 'False']);
    expect(cast({ dtype: 'float8e4m3fn', shape: [2], data: [0x38, 0x7f] }, { to: 'string' }).data).toEqual(['1', 'NaN']);
    // narrow floats: the shortest digits that read back as the same value of their own type
    // (NumPy's str of float16 0.1 is '0.1'; float32's shortest for that value is 0.099975586)
    const h = [0x2e66, 0x63d1, 0x7bff, 0x0001, 0x3c00, 0x8000];
    const hs = cast({ dtype: 'float16', shape: [6], data: h }, { to: 'string' }).data as string[];
    expect(hs).toEqual(['0.1', '1000.5', '65500', '6e-8', '1', '-0']);
    expect(Array.from(cast({ dtype: 'string', shape: [6], data: hs }, { to: 'float16' }).data as Uint16Array)).toEqual(h);
    expect(cast({ dtype: 'bfloat16', shape: [2], data: [0x3dcd, 0x4049] }, { to: 'string' }).data).toEqual(['0.1', '3.14']);
    expect(cast({ dtype: 'float8e4m3fn', shape: [1], data: [0x1d] }, { to: 'string' }).data).toEqual(['0.1']);
    expect(cast({ dtype: 'string', shape: [2], data: ['a', 'b'] }, { to: 'string' }).data).toEqual(['a', 'b']);
  });
});

describe('Cast bad input: KernelError, nothing written', () => {
  it('rejects complex types, unknown / missing `to`, bad saturate and round_mode', () => {
    const x = ek.tensor('float32', [4], [1, 2, 3, 4]);
    const c = ek.tensor('complex64', [2], [1, 2, 3, 4]);
    const before = memorySnapshot(ek);
    const live = ek.stats().tensorsLive;
    expectKernelError(() => ek.run('Cast', [c], { to: 'float32' }), 'INVALID_DTYPE', /complex64/);
    expectKernelError(() => ek.run('Cast', [x], { to: 'complex128' }), 'INVALID_DTYPE', /complex128/);
    expectKernelError(() => ek.run('Cast', [x], { to: 99 }), 'INVALID_ATTRIBUTE', /to/);
    expectKernelError(() => ek.run('Cast', [x], { to: 'float7' }), 'INVALID_ATTRIBUTE', /to/);
    expectKernelError(() => ek.run('Cast', [x], {}), 'INVALID_ATTRIBUTE', /to/);
    expectKernelError(() => ek.run('Cast', [x], { to: 'float8e4m3fn', saturate: 2 }), 'INVALID_ATTRIBUTE', /saturate/);
    expectKernelError(() => ek.run('Cast', [x], { to: 'float8e8m0', round_mode: 'zero' }), 'INVALID_ATTRIBUTE', /round_mode/);
    const y = ek.tensor('float16', [3]);
    const after0 = memorySnapshot(ek);
    expectKernelError(() => ek.run('Cast', [x], { to: 'float16' }, { outputs: [y] }), 'INVALID_SHAPE');
    expect(Buffer.from(memorySnapshot(ek)).equals(Buffer.from(after0))).toBe(true);
    y.dispose();
    expect(ek.stats().tensorsLive).toBe(live);
    expect(before.length).toBeGreaterThan(0);
    x.dispose(); c.dispose();
  });
  it('a package string tensor holding a non-string (written into its data) is INVALID_VALUE, nothing written or leaked', () => {
    const n = 16384 + 5; // more than one pivot chunk: the bad value is in the second
    const x = ek.tensor('string', [n], new Array<string>(n).fill('1.5'));
    (x.data as unknown[])[n - 2] = null;
    const y = ek.tensor('float32', [n]);
    const live = ek.stats().tensorsLive;
    const before = memorySnapshot(ek);
    for (const to of ['float32', 'int8', 'string']) {
      expectKernelError(() => ek.run('Cast', [x], { to }, to === 'float32' ? { outputs: [y] } : undefined), 'INVALID_VALUE', /data\[16387\]/);
    }
    expect(Buffer.from(memorySnapshot(ek)).equals(Buffer.from(before))).toBe(true);
    expect(ek.stats().tensorsLive).toBe(live);
    x.dispose(); y.dispose();
  });
  it('accepts the TensorProto integer and the dtype name for `to`', () => {
    expect(cast({ dtype: 'float32', shape: [1], data: [1] }, { to: 17 }).dtype).toBe('float8e4m3fn');
    expect(cast({ dtype: 'float32', shape: [1], data: [1] }, { to: 'float8e4m3fn' }).dtype).toBe('float8e4m3fn');
    expect(KernelError).toBeDefined();
  });
});

describe('Cast scalar build agrees with the SIMD build', () => {
  it('float32 → every float8 type and back, float16/bfloat16 patterns', async () => {
    const scalar = await init({ build: 'scalar' });
    const all = new Uint16Array(65536).map((_, i) => i);
    for (const to of [...F8, 'float4e2m1', 'float8e8m0', 'int8', 'uint4']) {
      for (const src of ['float16', 'bfloat16']) {
        const a = ek.run('Cast', [{ dtype: src, shape: [65536], data: all }], { to, saturate: 0 })[0] as { data: Uint8Array; dispose(): void };
        const b = scalar.run('Cast', [{ dtype: src, shape: [65536], data: all }], { to, saturate: 0 })[0] as { data: Uint8Array; dispose(): void };
        expect(Buffer.from(b.data).equals(Buffer.from(a.data)), `${src} → ${to}`).toBe(true);
        a.dispose(); b.dispose();
      }
    }
    scalar.dispose();
  });
});
