/**
 * Numbers at the edges, across operators: empty tensors (a zero dimension) everywhere,
 * −Inf masks and fully masked rows, NaN and ±Inf propagation, float16 overflow.
 * (Subnormals of every conversion are covered bit-exactly in test/quant.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Kernels, type Tensor, f16ToF32, init } from './helpers.js';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());

const T = (dt: string, sh: number[], d?: ArrayLike<unknown>) => ek.tensor(dt, sh, d as never);
const vals = (t: unknown) => Array.from((t as Tensor).data as Float32Array);

describe('empty tensors (a zero dimension) for every operator', () => {
  const cases: [string, () => (Tensor | null | object)[], string, number[]][] = [
    ['TensorScatter, update of length 0', () => ek.run('TensorScatter', [T('float32', [2, 3, 4]), T('float32', [2, 0, 4])], { axis: 1 }), 'float32', [2, 3, 4]],
    ['TensorScatter, batch 0', () => ek.run('TensorScatter', [T('float32', [0, 3, 4]), T('float32', [0, 1, 4]), T('int64', [0])], { axis: 1 }), 'float32', [0, 3, 4]],
    ['TRT_KVCacheUpdate, T = 0', () => ek.run('TRT_KVCacheUpdate', [T('float32', [2, 1, 4, 2]), T('float32', [0, 1, 2]), null, T('int32', [3])], { update_form: 'packed_nhd' }), 'float32', [2, 1, 4, 2]],
    ['TRT_Attention, no query rows', () => ek.run('TRT_Attention', [T('float32', [1, 2, 0, 4]), T('float32', [1, 2, 3, 4]), T('float32', [1, 2, 3, 4])]), 'float32', [1, 2, 0, 4]],
    ['TRT_Attention, batch 0', () => ek.run('TRT_Attention', [T('float32', [0, 2, 2, 4]), T('float32', [0, 2, 3, 4]), T('float32', [0, 2, 3, 4])]), 'float32', [0, 2, 2, 4]],
    ['Attention, no query rows', () => ek.run('Attention', [T('float32', [1, 2, 0, 4]), T('float32', [1, 2, 3, 4]), T('float32', [1, 2, 3, 4])]), 'float32', [1, 2, 0, 4]],
    ['Cast to float8e4m3fn', () => ek.run('Cast', [T('float32', [0, 3])], { to: 'float8e4m3fn' }), 'float8e4m3fn', [0, 3]],
    ['Cast to int4', () => ek.run('Cast', [T('float32', [3, 0])], { to: 'int4' }), 'int4', [3, 0]],
    ['QuantizeLinear per axis', () => ek.run('QuantizeLinear', [T('float32', [0, 3]), T('float32', [3], [1, 1, 1])], { axis: 1 }), 'uint8', [0, 3]],
    ['DequantizeLinear', () => ek.run('DequantizeLinear', [T('int8', [0, 3]), T('float32', [], [1])]), 'float32', [0, 3]],
    ['CumSum', () => ek.run('CumSum', [T('float32', [2, 0]), T('int32', [], [1])]), 'float32', [2, 0]],
  ];
  for (const [name, run, dtype, shape] of cases) {
    it(name, () => {
      const [y] = run() as Tensor[];
      expect(y.dtype).toBe(dtype);
      expect([...y.shape]).toEqual(shape);
    });
  }

  it('attention over zero keys gives zeros (no key is visible)', () => {
    for (const op of ['TRT_Attention', 'Attention', 'TRT_QuantizedAttention']) {
      const [y] = ek.run(op, [T('float32', [1, 2, 2, 4], new Float32Array(16).fill(1)), T('float32', [1, 2, 0, 4]), T('float32', [1, 2, 0, 4])]) as Tensor[];
      expect(vals(y), op).toEqual(new Array(16).fill(0));
    }
  });

  it('scan over a zero-length dimension returns init and empty ys', () => {
    const init0 = T('float32', [3], [1, 2, 3]);
    const [carry, ys] = ek.scan(ek.combine.add, init0, T('float32', [0, 3]));
    expect(vals(carry)).toEqual([1, 2, 3]);
    expect([...(ys as Tensor).shape]).toEqual([0, 3]);
  });
});

describe('infinities, NaN and fully masked rows', () => {
  const q = () => T('float32', [1, 1, 2, 2], [1, 0, 0, 1]);
  const k = () => T('float32', [1, 1, 3, 2], [1, 0, 0, 1, 1, 1]);
  const v = () => T('float32', [1, 1, 3, 2], [1, 2, 3, 4, 5, 6]);

  it('a −Inf additive mask hides keys; a row masked entirely gives zeros, never NaN', () => {
    const mask = T('float32', [2, 3], [0, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity]);
    for (const op of ['Attention', 'TRT_Attention']) {
      const [y] = ek.run(op, [q(), k(), v(), mask]) as Tensor[];
      const out = vals(y);
      expect(out.slice(0, 2), op).toEqual([1, 2]); // only key 0 visible
      expect(out.slice(2), op).toEqual([0, 0]); // every key hidden
    }
  });

  it('a bool mask of all false gives zeros', () => {
    const [y] = ek.run('Attention', [q(), k(), v(), T('bool', [2, 3])]) as Tensor[];
    expect(vals(y)).toEqual([0, 0, 0, 0]);
  });

  it('NaN in a query row propagates to that row only', () => {
    const qq = T('float32', [1, 1, 2, 2], [NaN, 0, 0, 1]);
    const [y] = ek.run('Attention', [qq, k(), v()]) as Tensor[];
    const out = vals(y);
    expect(out.slice(0, 2).every(Number.isNaN)).toBe(true);
    expect(out.slice(2).every(Number.isFinite)).toBe(true);
  });

  it('+Inf in V propagates as Inf; float16 outputs overflow to Inf', () => {
    const vv = T('float32', [1, 1, 3, 2], [Infinity, 0, 0, 0, 0, 0]);
    const [y] = ek.run('Attention', [q(), k(), vv]) as Tensor[];
    expect(vals(y)[0]).toBe(Infinity);
    // TRT_Attention without normalization: y = Σ s·v, here 2 · 60000 > 65504 (float16 max).
    const h = (x: number[]) => T('float16', [1, 1, x.length / 2, 2], x.map((n) => (n === 1 ? 0x3c00 : n === 60000 ? 0x7b53 : 0)));
    const [y16] = ek.run('TRT_Attention', [h([1, 1]), h([1, 1]), h([60000, 60000])], { TRT_normalization_op: 'none' }) as Tensor[];
    expect(f16ToF32((y16.data as Uint16Array)[0])).toBe(Infinity);
  });

  it('Cast and CumSum keep NaN and infinities', () => {
    const [c] = ek.run('Cast', [T('float32', [3], [NaN, Infinity, -Infinity])], { to: 'float16' }) as Tensor[];
    expect(Array.from(c.data as Uint16Array, f16ToF32)).toEqual([NaN, Infinity, -Infinity]);
    const [s] = ek.run('CumSum', [T('float32', [4], [1, Infinity, -Infinity, 1]), T('int64', [], [0n])]) as Tensor[];
    expect(vals(s)).toEqual([1, Infinity, NaN, NaN]);
  });
});

describe('addresses above 2 GiB', () => {
  it('ONNX Attention with a bool mask and past K/V (host-side views into scratch) works when the arena is past 2^31', async () => {
    // scratch offsets were aligned with (x + 15) & ~15, a negative int32 past 2^31: RangeError
    const big = await init({ maximumMemory: 2 ** 32 });
    const small = await init();
    try {
      const filler = big.tensor('uint8', [2300 * 2 ** 20]);
      const r = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i));
      const B = 1, H = 2, S = 3, P = 4, D = 8;
      const make = (ek: Kernels) => [
        ek.tensor('float32', [B, H, S, D], r(B * H * S * D)), ek.tensor('float32', [B, H, S, D], r(B * H * S * D)),
        ek.tensor('float32', [B, H, S, D], r(B * H * S * D)),
        ek.tensor('bool', [S, P + S], Array.from({ length: S * (P + S) }, (_, i) => (i % 3 ? 1 : 0))),
        ek.tensor('float32', [B, H, P, D], r(B * H * P * D)), ek.tensor('float32', [B, H, P, D], r(B * H * P * D)),
      ];
      const xs = make(big);
      expect(xs[0].byteOffset).toBeGreaterThan(2 ** 31);
      const [y, pk] = big.run('Attention', xs) as Tensor[];
      const [y2, pk2] = small.run('Attention', make(small)) as Tensor[];
      expect(Array.from(y.data as Float32Array)).toEqual(Array.from(y2.data as Float32Array));
      expect(Array.from(pk.data as Float32Array)).toEqual(Array.from(pk2.data as Float32Array));
      filler.dispose();
    } finally {
      big.dispose();
      small.dispose();
    }
  }, 60_000);
});
