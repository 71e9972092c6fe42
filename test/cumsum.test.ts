import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Kernels, type Tensor, bf16ToF32, conformanceCases, expectConformant, expectKernelError, f16ToF32, init, rng, snapshot } from './helpers.js';
import { refCumsumHalf, refCumsumI64, refScan, sizeOf, toBf16Bits, toF16Bits } from './ref/scan.js';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());


describe('CumSum conformance', () => {
  const cases = conformanceCases(['test_cumsum_']);
  it('has the conformance files', () => {
    expect(cases.length).toBeGreaterThanOrEqual(4);
  });
  for (const c of cases) {
    it(c.file, () => {
      const [y] = ek.run(c.op, c.inputs, c.attributes);
      expectConformant(y as never, c.outputs[0]!, c.name);
      (y as { dispose(): void }).dispose();
    });
  }
});

const SHAPES: number[][] = [[1], [5], [16], [17], [0], [3, 0], [2, 9], [7, 4], [3, 5, 6], [2, 3, 2, 5], [1001]];

describe('CumSum against the reference', () => {
  it('float32, float64, int32: every axis (also negative, int32 and int64), exclusive, reverse', () => {
    let seed = 1;
    for (const dtype of ['float32', 'float64', 'int32'] as const) {
      for (const shape of SHAPES) {
        for (let axis = -shape.length; axis < shape.length; axis++) {
          for (const exclusive of [0, 1]) {
            for (const reverse of [0, 1]) {
              const r = rng(seed++);
              const n = sizeOf(shape);
              const data = Array.from({ length: n }, () => (dtype === 'int32' ? Math.floor((r() - 0.5) * 2 ** 32) | 0 : (r() - 0.5) * 100));
              const x = { dtype, shape, data };
              const axisT = (seed & 1) ? { dtype: 'int64', shape: [], data: [BigInt(axis)] } : { dtype: 'int32', shape: [1], data: [axis] };
              const [y] = ek.run('CumSum', [x, axisT], { exclusive, reverse }) as [{ dtype: string; shape: number[]; data: ArrayLike<number>; dispose(): void }];
              const d = axis < 0 ? axis + shape.length : axis;
              const want = refScan('add', dtype, dtype === 'float32' ? data.map(Math.fround) : data, shape, d, !!reverse, null, !!exclusive).ys;
              const label = `${dtype} ${JSON.stringify(shape)} axis ${axis} excl ${exclusive} rev ${reverse}`;
              expect([...y.shape], label).toEqual(shape);
              const innermost = sizeOf(shape.slice(d + 1)) === 1;
              const got = Array.from(y.data);
              if (dtype !== 'float32' && dtype !== 'float64') expect(got, label).toEqual(want);
              else if (!innermost) expect(got, label).toEqual(want); // lanes path: the sequential order, bit-exact
              else {
                const eps = dtype === 'float32' ? 2 ** -23 : 2 ** -52;
                const N = shape[d];
                const mag = refScan('add', 'float64', data.map(Math.abs), shape, d, !!reverse, null).ys;
                for (let i = 0; i < want.length; i++) {
                  if (!(Math.abs(got[i] - want[i]) <= 4 * (N + 1) * eps * mag[i])) expect.fail(`${label}[${i}]: got ${got[i]}, want ${want[i]}`);
                }
              }
              y.dispose();
            }
          }
        }
      }
    }
  });

  it('int64 wraps modulo 2^64', () => {
    let seed = 50;
    for (const shape of SHAPES) {
      for (let axis = 0; axis < shape.length; axis++) {
        for (const [exclusive, reverse] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
          const r = rng(seed++);
          const data = Array.from({ length: sizeOf(shape) }, () => BigInt.asIntN(64, BigInt(Math.floor(r() * 2 ** 53)) * 4099n - (1n << 62n)));
          const [y] = ek.run('CumSum', [{ dtype: 'int64', shape, data }, { dtype: 'int32', shape: [], data: [axis] }], { exclusive, reverse }) as [{ data: BigInt64Array; dispose(): void }];
          expect(Array.from(y.data)).toEqual(refCumsumI64(data, shape, axis, !!reverse, !!exclusive));
          y.dispose();
        }
      }
    }
  });

  it('uint32 and uint64 wrap modulo 2^32 / 2^64 (the signed kernels: same bits)', () => {
    let seed = 70;
    for (const shape of SHAPES) {
      for (let axis = 0; axis < shape.length; axis++) {
        for (const [exclusive, reverse] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
          const r = rng(seed++);
          const n = sizeOf(shape);
          const d64 = Array.from({ length: n }, () => BigInt.asUintN(64, BigInt(Math.floor(r() * 2 ** 53)) * 4099n + (1n << 63n)));
          const [y64] = ek.run('CumSum', [{ dtype: 'uint64', shape, data: d64 }, { dtype: 'int32', shape: [], data: [axis] }], { exclusive, reverse }) as [{ data: BigUint64Array; dispose(): void }];
          expect(Array.from(y64.data)).toEqual(refCumsumI64(d64, shape, axis, !!reverse, !!exclusive).map((v) => BigInt.asUintN(64, v)));
          y64.dispose();
          const d32 = Array.from({ length: n }, () => Math.floor(r() * 2 ** 32));
          const [y32] = ek.run('CumSum', [{ dtype: 'uint32', shape, data: d32 }, { dtype: 'int64', shape: [], data: [BigInt(axis)] }], { exclusive, reverse }) as [{ data: Uint32Array; dispose(): void }];
          const want = refCumsumI64(d32.map(BigInt), shape, axis, !!reverse, !!exclusive).map((v) => Number(BigInt.asUintN(32, v)));
          expect(Array.from(y32.data)).toEqual(want);
          y32.dispose();
        }
      }
    }
  });

  it('float16 and bfloat16: every partial sum rounded to the storage type (nearest even), as NumPy sums them', () => {
    let seed = 90;
    for (const [dtype, decode, encode] of [['float16', f16ToF32, toF16Bits], ['bfloat16', bf16ToF32, toBf16Bits]] as const) {
      // [2100], [3, 1100] axis 1 and [700, 3] axis 0: narrow rows in several 1024-value chunks;
      // [300, 13] axis 0: SIMD rows with a 5-lane tail
      for (const shape of [[40], [5, 7], [3, 4, 5], [2, 600], [2100], [3, 1100], [700, 3], [300, 13]]) {
        for (let axis = 0; axis < shape.length; axis++) {
          for (const [exclusive, reverse] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
            const r = rng(seed++);
            const data = Array.from({ length: sizeOf(shape) }, () => encode((r() - 0.3) * 50));
            const [y] = ek.run('CumSum', [{ dtype, shape, data }, { dtype: 'int64', shape: [], data: [BigInt(axis - shape.length)] }], { exclusive, reverse }) as [{ data: Uint16Array; dispose(): void }];
            expect(Array.from(y.data), `${dtype} ${JSON.stringify(shape)} axis ${axis}`).toEqual(refCumsumHalf(data, decode, encode, shape, axis, !!reverse, !!exclusive));
            y.dispose();
          }
        }
      }
    }
    // overflow to Inf, NaN stays NaN
    const [y] = ek.run('CumSum', [{ dtype: 'float16', shape: [3], data: [0x7bff, 0x7bff, 0x7e00] }, { dtype: 'int32', shape: [], data: [0] }]) as [{ data: Uint16Array }];
    expect(y.data[0]).toBe(0x7bff);
    expect(y.data[1]).toBe(0x7c00);
    expect(Number.isNaN(f16ToF32(y.data[2]))).toBe(true);
  });

  it('float16 and bfloat16 1-D sums four steps at a time: 0/1 masks (position ids), ties, sums stuck at 2^p, every tail length, exclusive and reverse', () => {
    // the one-lane add sums blocks of 4 side by side while they stay in a band and have no tie,
    // and steps one at a time otherwise: data that moves between those, and runs of every
    // length mod 4 over several 1024-value chunks
    let seed = 400;
    for (const [dtype, decode, encode] of [['float16', f16ToF32, toF16Bits], ['bfloat16', bf16ToF32, toBf16Bits]] as const) {
      const p = dtype === 'float16' ? 11 : 8;
      const kinds: Record<string, (r: () => number, t: number) => number> = {
        mask: (r) => (r() < 0.7 ? 1 : 0), // position ids: stuck at 2^p once they get there
        ties: (r) => (Math.floor(r() * 9) - 4) * 0.5 + (r() < 0.5 ? 0.25 : 0), // halves and quarters: ties at several quanta
        drift: (r) => r() * 0.75 - 0.25, // upwards through binades, with small negative steps
        walk: (r) => (r() - 0.5) * 3, // random signs: binade crossings both ways
        stuck: (r, t) => (t < 2 ** p ? 1 : r() < 0.5 ? 1 : -1), // up to 2^p, then ±1 around it
      };
      for (const [kind, gen] of Object.entries(kinds)) {
        for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9, 1023, 1025, 2 ** p + 700, 2 ** p + 701, 2 ** p + 702, 2 ** p + 703]) {
          for (const [exclusive, reverse] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
            const r = rng(seed++);
            const data = Array.from({ length: n }, (_, t) => encode(gen(r, t)));
            const [y] = ek.run('CumSum', [{ dtype, shape: [n], data }, { dtype: 'int32', shape: [], data: [0] }], { exclusive, reverse }) as [{ data: Uint16Array; dispose(): void }];
            expect(Array.from(y.data), `${dtype} ${kind} n ${n} exclusive ${exclusive} reverse ${reverse}`).toEqual(refCumsumHalf(data, decode, encode, [n], 0, !!reverse, !!exclusive));
            y.dispose();
          }
        }
      }
    }
  });

  it('float16 and bfloat16 special values (NaN, Inf, subnormals, overflow): the builds agree bit for bit, and with the reference where not NaN', async () => {
    const eks = await init({ build: 'scalar' });
    const specials: Record<string, number[]> = {
      float16: [0x7e00, 0x7d01, 0xfe55, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x0200, 0x7bff, 0xfbff, 0x8000, 0x3c00, 0x7a00],
      bfloat16: [0x7fc0, 0x7f81, 0xffa5, 0x7f80, 0xff80, 0x0001, 0x807f, 0x0040, 0x7f7f, 0xff7f, 0x8000, 0x3f80, 0x7f00],
    };
    let seed = 7;
    for (const dtype of ['float16', 'bfloat16'] as const) {
      const [decode, encode] = dtype === 'float16' ? [f16ToF32, toF16Bits] : [bf16ToF32, toBf16Bits];
      for (const [shape, axis] of [[[16, 8], 0], [[128], 0], [[8, 40], 1], [[9, 11], 0]] as const) {
        for (const [exclusive, reverse] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
          const r = rng(seed++);
          // mostly small values, so the sums pass through the subnormal range and stay finite a while
          const data = Array.from({ length: sizeOf(shape) }, () => (r() < 0.25 ? specials[dtype][Math.floor(r() * 13)] : encode((r() - 0.5) * 2 ** -12)));
          const args = [{ dtype, shape: [...shape], data }, { dtype: 'int32', shape: [], data: [axis] }];
          const [a] = ek.run('CumSum', args, { exclusive, reverse }) as [{ data: Uint16Array; dispose(): void }];
          const [b] = eks.run('CumSum', args, { exclusive, reverse }) as [{ data: Uint16Array; dispose(): void }];
          const what = `${dtype} ${JSON.stringify(shape)} axis ${axis} exclusive ${exclusive} reverse ${reverse}`;
          // NaN bits included: NaN + NaN keeps the running sum's NaN in both builds (see below)
          expect(Array.from(a.data), what).toEqual(Array.from(b.data));
          const want = refCumsumHalf(data, decode, encode, shape, axis, !!reverse, !!exclusive);
          const got = Array.from(a.data);
          for (let i = 0; i < got.length; i++) {
            if (Number.isNaN(decode(want[i]))) expect(Number.isNaN(decode(got[i])), `${what} [${i}]`).toBe(true);
            else expect(got[i], `${what} [${i}]`).toBe(want[i]);
          }
          a.dispose();
          b.dispose();
        }
      }
    }
    eks.dispose();
  });

  it('NaN + NaN keeps the running sum\'s NaN: the same bits on every call (across V8\'s tier-up) and in both builds', async () => {
    // Along the axis: +Inf, -Inf, a NaN with its own payload, 1. The second sum is the NaN that
    // Inf + -Inf makes; the third adds two NaNs and must keep that one (the vector add's
    // choice), not the input's, whichever tier of V8 runs the scalar code. 300 calls over
    // 25,600 elements are enough for V8 to optimize the kernels partway through (the scalar
    // build's bfloat16 sum changed its answer at about the 50th call before).
    const eks = await init({ build: 'scalar' });
    try {
      // bit patterns (float32's too: a NaN read into a JS number loses its payload)
      const cases = [
        { dtype: 'float16', codes: [0x7c00, 0xfc00, 0x7e01, 0x3c00] },
        { dtype: 'bfloat16', codes: [0x7f80, 0xff80, 0x7fc1, 0x3f80] },
        { dtype: 'float32', codes: [0x7f800000, 0xff800000, 0x7fc00001, 0x3f800000] },
      ];
      for (const { dtype, codes } of cases) {
        const wide = dtype === 'float32';
        const bits = (y: { data: ArrayLike<number> }, i: number) => (wide ? new Uint32Array((y.data as Float32Array).buffer, (y.data as Float32Array).byteOffset)[i] : y.data[i]);
        // [outer, 4, inner]: inner 64 (rows of lanes), 1 (one running sum), 5 (narrow rows)
        for (const inner of [64, 1, 5]) {
          const outer = Math.ceil(25600 / (4 * inner));
          const pattern = Array.from({ length: outer * 4 * inner }, (_, i) => codes[Math.floor(i / inner) % 4]);
          const data = wide ? new Float32Array(Uint32Array.from(pattern).buffer) : Uint16Array.from(pattern);
          const args = [{ dtype, shape: [outer, 4, inner], data }, { dtype: 'int32', shape: [], data: [1] }];
          const seen = new Set<string>();
          for (const k of [ek, eks]) {
            for (let call = 0; call < 300; call++) {
              const [y] = k.run('CumSum', args) as [{ data: ArrayLike<number>; dispose(): void }];
              const b1 = bits(y, inner), b2 = bits(y, 2 * inner), b3 = bits(y, 3 * inner);
              y.dispose();
              expect(b2, `${dtype} inner ${inner}: NaN + NaN keeps the sum's NaN`).toBe(b1);
              expect(b3, `${dtype} inner ${inner}: NaN + 1`).toBe(b1);
              seen.add(b1.toString(16));
            }
          }
          expect([...seen], `${dtype} inner ${inner}: one NaN pattern over both builds and every call`).toHaveLength(1);
        }
      }
    } finally {
      eks.dispose();
    }
  });

  it('innermost runs (the SIMD build\'s in-register prefix scans): a NaN running sum keeps its own NaN over a later one, forward and reverse', async () => {
    // x = 0 except two quiet NaNs of different payloads at p1 < p2 (in scan order): every
    // output from p1 on is p1's NaN, in both builds. The in-register scan added the earlier
    // lanes as the second operand, so the vector add kept the later NaN (SIMD build only).
    const eks = await init({ build: 'scalar' });
    try {
      for (const [dtype, A, B] of [['float32', 0x7fc00001n, 0x7fc12345n], ['float64', 0x7ff8000000000001n, 0x7ff8000000012345n]] as const) {
        const wide = dtype === 'float64';
        for (const N of [8, 9, 16, 17, 33]) {
          for (const reverse of [0, 1]) {
            for (let p1 = 0; p1 < Math.min(N, 12); p1++) {
              for (let p2 = p1 + 1; p2 < Math.min(N, 13); p2++) {
                const codes = new Array<bigint>(N).fill(0n);
                const at = (p: number) => (reverse ? N - 1 - p : p);
                codes[at(p1)] = A; codes[at(p2)] = B;
                const data = wide ? new Float64Array(BigUint64Array.from(codes).buffer) : new Float32Array(Uint32Array.from(codes.map(Number)).buffer);
                const args = [{ dtype, shape: [N], data }, { dtype: 'int32', shape: [], data: [0] }];
                for (const k of [ek, eks]) {
                  const [y] = k.run('CumSum', args, { reverse }) as [{ data: Float32Array | Float64Array; dispose(): void }];
                  const out = wide ? Array.from(new BigUint64Array(y.data.slice().buffer)) : Array.from(new Uint32Array(y.data.slice().buffer), BigInt);
                  y.dispose();
                  for (let p = p1; p < N; p++) expect(out[at(p)], `${k.stats().build} ${dtype} N ${N} reverse ${reverse} NaNs at ${p1}, ${p2}: output ${p}`).toBe(A);
                }
              }
            }
          }
        }
      }
    } finally {
      eks.dispose();
    }
  });

  it('innermost runs: sums and products that overflow in a block come out as the sequential order gives them (Inf stays Inf, no NaN from re-association)', async () => {
    // The SIMD build re-associates float add / mul inside 8-element (float64: 4) blocks:
    // [3e38, 3e38, −3e38, −3e38] gave 3e38 + 3e38 = Inf, Inf − Inf = NaN, and NaN for the
    // rest of the run, where the sequential sums are 3e38, Inf, Inf, …; [−3e38, 3e38, 3e38,
    // −3e38] gave an Inf where every sequential sum is finite. Each pattern is planted at
    // every offset of runs of every tail length, forward, reverse and exclusive. Every output
    // must be finite exactly where the sequential one is, and a non-finite one must be the
    // sequential one (±Inf of its sign, or NaN); finite ones are the re-associated sums (a
    // cancelling −3e38 + 3e38 may leave the 1 before it, not 0).
    const eks = await init({ build: 'scalar' });
    const BIG = { float32: [3e38, 1e30, 1e-30], float64: [1.7e308, 1e200, 1e-200] } as const;
    try {
      for (const dtype of ['float32', 'float64'] as const) {
        const [big, huge, tiny] = BIG[dtype];
        const fr = dtype === 'float32' ? Math.fround : (v: number) => v;
        const patterns: [string, number[]][] = [
          ['add', [big, big, -big, -big]],
          ['add', [-big, big, big, -big]],
          ['add', [big, big, -big, -big, big, -big]],
          ['mul', [huge, huge, tiny, tiny]],
          ['mul', [tiny, tiny, huge, huge]],
        ];
        for (const [op, pat] of patterns) {
          for (const N of [8, 11, 16, 23]) {
            for (let at = 0; at + pat.length <= N; at++) {
              for (const reverse of [0, 1]) {
                for (const exclusive of op === 'add' ? [0, 1] : [0]) {
                  const x = new Array<number>(N).fill(op === 'add' ? 0.5 : 1);
                  pat.forEach((v, j) => { x[at + j] = v; });
                  const order = [...x.keys()].map((i) => (reverse ? N - 1 - i : i));
                  const want = new Array<number>(N);
                  let c = op === 'add' ? 0 : 1;
                  for (const i of order) {
                    const nc = fr(op === 'add' ? c + fr(x[i]) : c * fr(x[i]));
                    want[i] = exclusive ? c : nc;
                    c = nc;
                  }
                  for (const k of [ek, eks]) {
                    const what = `${k.stats().build} ${dtype} ${op} [${pat.join(', ')}] at ${at} of ${N}, reverse ${reverse}, exclusive ${exclusive}`;
                    let got: number[];
                    if (op === 'add') {
                      const [y] = k.run('CumSum', [{ dtype, shape: [N], data: x }, { dtype: 'int32', shape: [], data: [0] }], { reverse, exclusive }) as Tensor[];
                      got = Array.from(y.data as Float32Array);
                      y.dispose();
                    } else {
                      const xs = k.tensor(dtype, [N], x), c0 = k.tensor(dtype, [], [1]);
                      const [last, ys] = k.scan(k.combine.mul, c0, xs, { dim: 0, reverse: !!reverse }) as Tensor[];
                      got = Array.from(ys.data as Float32Array);
                      for (const t of [xs, c0, last, ys]) t.dispose();
                    }
                    for (let i = 0; i < N; i++) {
                      if (Number.isFinite(want[i])) expect(Number.isFinite(got[i]), `${what}: output ${i} is ${got[i]}, sequentially ${want[i]}`).toBe(true);
                      else if (Number.isNaN(want[i])) expect(got[i], `${what}: output ${i}`).toBeNaN();
                      else expect(got[i], `${what}: output ${i}`).toBe(want[i]);
                    }
                  }
                }
              }
            }
          }
        }
      }
    } finally {
      eks.dispose();
    }
  });

  it('signed zeros: an exclusive sum starts at +0 and then keeps a -0 x[0] (ONNX reference: [0, -0, -0]), an inclusive sum of -0 stays -0', () => {
    for (const dtype of ['float32', 'float64', 'float16', 'bfloat16'] as const) {
      const negZero = dtype === 'float16' || dtype === 'bfloat16' ? 0x8000 : -0;
      for (const shape of [[9], [9, 2], [2, 9]]) {
        const axis = shape.length === 2 && shape[0] === 2 ? 1 : 0;
        const x = { dtype, shape, data: new Array(18).fill(negZero).slice(0, sizeOf(shape)) };
        const ax = { dtype: 'int32', shape: [], data: [axis] };
        const show = (d: ArrayLike<number>) => Array.from(d, (v) => (dtype === 'float16' || dtype === 'bfloat16' ? (v === 0x8000 ? '-0' : String(v)) : Object.is(v, -0) ? '-0' : String(v)));
        for (const reverse of [0, 1]) {
          const [inc] = ek.run('CumSum', [x, ax], { reverse }) as [{ data: ArrayLike<number> }];
          expect(new Set(show(inc.data)), `${dtype} ${shape} inclusive`).toEqual(new Set(['-0']));
          const [exc] = ek.run('CumSum', [x, ax], { exclusive: 1, reverse }) as [{ data: ArrayLike<number> }];
          // the first output along the axis (the last when reversed) is +0, every later one −0
          const N = shape[axis], I = shape.length === 2 && axis === 0 ? shape[1] : 1;
          const want = Array.from({ length: sizeOf(shape) }, (_, k) => (Math.floor(k / I) % N === (reverse ? N - 1 : 0) ? '0' : '-0'));
          expect(show(exc.data), `${dtype} ${shape} exclusive reverse ${reverse}`).toEqual(want);
        }
      }
    }
  });

  it('writes into a given output tensor and allocates nothing else', () => {
    const x = ek.tensor('float32', [4, 3], Array.from({ length: 12 }, (_, i) => i));
    const axis = ek.tensor('int32', [], [0]);
    const out = ek.tensor('float32', [4, 3]);
    const live = ek.stats().tensorsLive;
    const [y] = ek.run('CumSum', [x, axis], {}, { outputs: [out] });
    expect(y).toBe(out);
    expect(Array.from(out.data as Float32Array)).toEqual([0, 1, 2, 3, 5, 7, 9, 12, 15, 18, 22, 26]);
    expect(ek.stats().tensorsLive).toBe(live);
  });
});

describe('CumSum errors leave memory untouched', () => {
  const x = () => ek.tensor('float32', [2, 3], [1, 2, 3, 4, 5, 6]);
  function expectErr(inputs: unknown[], attrs: Record<string, unknown>, code: string, pattern: RegExp, outputs?: Tensor[]): void {
    const tensors = [...inputs, ...(outputs ?? [])].filter((t): t is Tensor => t instanceof Object && 'dispose' in t);
    const before = tensors.map(snapshot);
    const live = ek.stats().tensorsLive;
    expectKernelError(() => ek.run('CumSum', inputs as never, attrs, outputs ? { outputs: outputs as never } : {}), code, pattern);
    expect(tensors.every((t, i) => snapshot(t).every((v, k) => v === before[i][k])), 'tensors unchanged').toBe(true);
    expect(ek.stats().tensorsLive).toBe(live);
  }
  it('rejects bad axes, dtypes, ranks and attributes', () => {
    const t = x();
    const wrong = ek.tensor('float32', [3, 2], [9, 9, 9, 9, 9, 9]);
    expectErr([t, { dtype: 'int32', shape: [], data: [2] }], {}, 'INVALID_VALUE', /axis: expected an axis in \[-2, 1\] for rank 2, got 2/);
    expectErr([t, { dtype: 'int64', shape: [], data: [-3n] }], {}, 'INVALID_VALUE', /got -3/);
    expectErr([t, { dtype: 'int32', shape: [2], data: [0, 1] }], {}, 'INVALID_SHAPE', /axis: expected a scalar/);
    expectErr([t, { dtype: 'float32', shape: [], data: [0] }], {}, 'INVALID_DTYPE', /axis: expected int32 or int64, got float32/);
    expectErr([{ dtype: 'uint8', shape: [2], data: [1, 2] }, { dtype: 'int32', shape: [], data: [0] }], {}, 'INVALID_DTYPE', /input x: expected float32.*got uint8/);
    expectErr([{ dtype: 'float32', shape: [], data: [1] }, { dtype: 'int32', shape: [], data: [0] }], {}, 'INVALID_SHAPE', /rank >= 1/);
    expectErr([t, { dtype: 'int32', shape: [], data: [0] }], { exclusive: 2 }, 'INVALID_ATTRIBUTE', /exclusive/);
    expectErr([t], {}, 'MISSING_INPUT', /axis/);
    expectErr([t, { dtype: 'int32', shape: [], data: [0] }], {}, 'INVALID_SHAPE', /outputs\[0\]/, [wrong]);
    expectErr([t, { dtype: 'int32', shape: [], data: [0] }], {}, 'ALIASING', /overlaps an input/, [t]);
    t.dispose();
  });
});
