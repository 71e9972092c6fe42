import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getElement, kvPackedRef, setElement, tensorScatterRef } from './ref/scatter.js';
import {
  type DType, type Kernels, type Tensor, DTYPES, DTYPE_NAMES, conformanceCases, expectConformant, expectKernelError,
  init, memorySnapshot, rng, snapshot,
} from './helpers.js';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());

/** A tensor of `dtype` filled with random bits (or random strings). */
function randomTensor(dtype: DType, shape: number[], rnd: () => number): Tensor {
  const t = ek.tensor(dtype, shape);
  if (dtype === 'string') {
    const d = t.data as string[];
    for (let i = 0; i < d.length; i++) d[i] = `s${Math.floor(rnd() * 1e6)}`;
  } else {
    const b = t.bytes();
    for (let i = 0; i < b.length; i++) b[i] = Math.floor(rnd() * 256);
  }
  return t;
}


/** Expected cache after a scatter, computed by the reference on a copy of the old cache. */
function expectedAfter(cache: Tensor, update: Tensor, apply: (get: (u: number) => unknown, set: (c: number, v: unknown) => void) => void): Uint8Array | string[] {
  if (cache.dtype === 'string') {
    const out = (cache.data as string[]).slice();
    const src = update.data as string[];
    apply((u) => src[u], (c, v) => { out[c] = v as string; });
    return out;
  }
  const bits = DTYPES[cache.dtype].bits;
  const out = cache.bytes().slice();
  const src = update.bytes().slice();
  apply((u) => getElement(src, u, bits), (c, v) => setElement(out, c, bits, v as bigint));
  return out;
}

function contents(t: Tensor): Uint8Array | string[] {
  return t.dtype === 'string' ? (t.data as string[]).slice() : t.bytes().slice();
}

describe('TensorScatter conformance (ONNX backend tests)', () => {
  const cases = conformanceCases(['test_tensorscatter']);
  it('has cases', () => expect(cases.length).toBeGreaterThan(0));
  for (const c of cases) {
    it(c.file, () => {
      const [y] = ek.run(c.op, c.inputs, c.attributes);
      expectConformant(y as Tensor, c.outputs[0]!, c.name);
    });
    it(`${c.file} with package tensors, in place`, () => {
      const ins = c.inputs.map((i) => (i ? ek.tensor(i.dtype, i.shape, i.data) : null));
      const [y] = ek.run(c.op, ins, c.attributes);
      expect(y).toBe(ins[0]);
      expectConformant(y as Tensor, c.outputs[0]!, c.name);
      for (const t of ins) t?.dispose();
    });
  }
});

describe('TensorScatter against the reference', () => {
  const dtypes = DTYPE_NAMES;
  const caseArb = fc
    .record({
      dtype: fc.constantFrom(...dtypes),
      rank: fc.integer({ min: 2, max: 5 }),
      seed: fc.integer(),
      circular: fc.boolean(),
      idxKind: fc.constantFrom('none', 'int32', 'int64'),
      negativeAxis: fc.boolean(),
    })
    .chain((r) =>
      fc.record({
        base: fc.constant(r),
        dims: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: r.rank, maxLength: r.rank }),
        axis: fc.integer({ min: 1, max: r.rank - 1 }),
        N: fc.integer({ min: 1, max: 9 }),
        sFrac: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
    );

  it('matches for random dtypes, ranks, axes, modes and write indices', () => {
    fc.assert(
      fc.property(caseArb, ({ base, dims, axis, N, sFrac }) => {
        const rnd = rng(base.seed);
        const cacheShape = dims.slice();
        cacheShape[axis] = N;
        const S = Math.round(sFrac * N);
        const updShape = cacheShape.slice();
        updShape[axis] = S;
        const B = cacheShape[0];
        const wi = base.idxKind === 'none' ? null : Array.from({ length: B }, () => (base.circular ? Math.floor((rnd() * 6 - 3) * N) : Math.floor(rnd() * (N - S + 1))));
        const cache = randomTensor(base.dtype, cacheShape, rnd);
        const update = randomTensor(base.dtype, updShape, rnd);
        const idx = wi === null ? null : base.idxKind === 'int32' ? ek.tensor('int32', [B], wi) : ek.tensor('int64', [B], wi.map(BigInt));
        const mode = base.circular ? 'circular' : 'linear';
        const axisAttr = base.negativeAxis ? axis - cacheShape.length : axis;
        const want = expectedAfter(cache, update, (get, set) => tensorScatterRef(cacheShape, updShape, axis, mode, wi, get, set));
        const [y] = ek.run('TensorScatter', [cache, update, idx], { axis: axisAttr, mode });
        expect(y).toBe(cache);
        expect(contents(cache)).toEqual(want);
        cache.dispose(); update.dispose(); idx?.dispose();
      }),
      { seed: 20261129, numRuns: 400 },
    );
  });

  it('moves whole 4-bit and 2-bit elements when rows start mid-byte, leaving neighbours intact', () => {
    for (const dtype of ['int4', 'uint4', 'float4e2m1', 'int2', 'uint2'] as DType[]) {
      for (const D of [1, 2, 3, 5, 7]) {
        for (let w = 0; w <= 4; w++) {
          const rnd = rng(D * 31 + w);
          const cache = randomTensor(dtype, [2, 3, 6, D], rnd);
          const update = randomTensor(dtype, [2, 3, 2, D], rnd);
          const idx = ek.tensor('int64', [2], [BigInt(w), BigInt(4 - w)]);
          const want = expectedAfter(cache, update, (g, s) => tensorScatterRef([2, 3, 6, D], [2, 3, 2, D], 2, 'linear', [w, 4 - w], g, s));
          ek.run('TensorScatter', [cache, update, idx]);
          expect(contents(cache), `${dtype} D=${D} w=${w}`).toEqual(want);
          cache.dispose(); update.dispose(); idx.dispose();
        }
      }
    }
  });

  it('4-bit and 2-bit caches past 2^30 elements (512 MiB) and past 2 GiB: the element written is the one addressed (both builds)', async () => {
    // element and bit indices wrapped at 2^32 bits (an int4 write at element 2^30 + 1 landed
    // in byte 0) and row starts at 2^32 elements; memory is only reserved: fresh pages are
    // zero without being touched, and each case writes a byte or two
    const last = (t: Tensor) => { const d = t.data as Uint8Array; return [d[0], d[d.length - 1]]; };
    for (const build of ['simd', 'scalar'] as const) {
      const e = await init({ build, maximumMemory: 4 * 2 ** 30 });
      try {
        for (const [dtype, N, v, want] of [['int4', 2 ** 30 + 2, 7, 0x70], ['uint2', 2 ** 31 + 4, 3, 0xc0]] as const) {
          for (const mode of ['linear', 'circular'] as const) {
            const cache = e.tensor(dtype, [1, N]), upd = e.tensor(dtype, [1, 1], [v]);
            const pos = e.tensor('int64', [1], [BigInt(mode === 'linear' ? N - 1 : -1)]);
            e.run('TensorScatter', [cache, upd, pos], { axis: 1, mode });
            expect(last(cache), `${build} ${dtype} ${mode}`).toEqual([0, want]);
            for (const t of [cache, upd, pos]) t.dispose();
          }
          const kv = e.tensor(dtype, [1, 1, N, 1]), one = e.tensor(dtype, [1, 1, 1, 1], [v]);
          e.run('TRT_KVCacheUpdate', [kv, one, e.tensor('int64', [1], [BigInt(N - 1)])]);
          expect(last(kv), `${build} ${dtype} TRT_KVCacheUpdate`).toEqual([0, want]);
          kv.dispose(); one.dispose();
        }
        // a cache over 2 GiB: batch entry 1 starts past 2^32 elements
        const N = 2 ** 31 + 16;
        const cache = e.tensor('int4', [2, N]), upd = e.tensor('int4', [2, 2], [0x21, 0x43]); // packed bytes: row 0 = 1, 2; row 1 = 3, 4
        e.run('TensorScatter', [cache, upd, e.tensor('int64', [2], [0n, BigInt(N - 2)])], { axis: 1 });
        expect(last(cache), `${build} int4 [2, 2^31 + 16]`).toEqual([0x21, 0x43]);
        expect((cache.data as Uint8Array)[N / 2], `${build}: batch 1's first byte untouched`).toBe(0);
      } finally {
        e.dispose();
      }
    }
  });

  it('writes a plain cache back into its own data and returns it', () => {
    const data = new Float32Array(2 * 4 * 3);
    const plain = { dtype: 'float32', shape: [2, 4, 3], data };
    const before = ek.stats();
    const [y] = ek.run('TensorScatter', [plain, { type: 'float32', dims: [2, 1, 3], data: [1, 2, 3, 4, 5, 6] }, { dtype: 'int32', shape: [2], data: [3, 0] }], { axis: 1 });
    expect(y).toBe(plain);
    expect(Array.from(data)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ek.stats().tensorsLive).toBe(before.tensorsLive);
    expect(ek.stats().bytesInUse).toBe(before.bytesInUse);
  });

  it('a plain cache given as an ordinary array keeps each element\'s type only where that loses nothing', () => {
    // a uint8 cache given booleans took 7 back as Boolean(7) = true
    const cases: [string, unknown[], unknown[], unknown[]][] = [
      ['uint8', [true, true, false], [7], [7, true, false]],
      ['uint8', [true, true, false], [0], [false, true, false]],
      ['bool', [false, true, false], [1], [true, true, false]],
      ['float32', ['1.5', 0, '0'], [2.5], ['2.5', 0, '0']],
      ['int64', [5, '0'], [2n ** 60n + 1n], [2n ** 60n + 1n, '0']],
      ['string', ['a', 'b'], ['z'], ['z', 'b']],
    ];
    for (const [dtype, data, upd, want] of cases) {
      const plain = { dtype, shape: [1, data.length], data };
      ek.run('TensorScatter', [plain, { dtype, shape: [1, 1], data: upd }, { dtype: 'int64', shape: [1], data: [0n] }], { axis: 1 });
      expect(plain.data, dtype).toEqual(want);
    }
  });

  it('writes a plain cache whose data views the instance memory back there, even when the call grows the memory', async () => {
    // the copy of the plain cache grows the memory, which detaches the caller's view: the
    // write-back used to throw a TypeError (not a KernelError) and lose the result
    const small = await init({ initialMemory: 65536, maximumMemory: 64 << 20 });
    const t = small.tensor('float32', [1, 4000, 2]);
    const plain = { dtype: 'float32', shape: [1, 4000, 2], data: t.data };
    const before = small.stats().memoryBytes;
    const [y] = small.run('TensorScatter', [plain, { dtype: 'float32', shape: [1, 1, 2], data: [7, 8] }, { dtype: 'int32', shape: [1], data: [5] }]);
    expect(small.stats().memoryBytes).toBeGreaterThan(before);
    expect(y).toBe(plain);
    const d = t.data as Float32Array;
    expect([d[9], d[10], d[11], d[12]]).toEqual([0, 7, 8, 0]);
    small.dispose();
  });

  it('writes back into an ordinary array of numbers, bigints or strings', () => {
    const plain = { dtype: 'int64', shape: [1, 3], data: ['1', '2', '3'] };
    ek.run('TensorScatter', [plain, { dtype: 'int64', shape: [1, 1], data: [9n] }, { dtype: 'int64', shape: [1], data: ['2'] }], { axis: 1 });
    expect(plain.data).toEqual(['1', '2', '9']);
    const strs = { dtype: 'string', shape: [1, 2, 1], data: ['a', 'b'] };
    ek.run('TensorScatter', [strs, { dtype: 'string', shape: [1, 1, 1], data: ['z'] }, null], { axis: 1 });
    expect(strs.data).toEqual(['z', 'b']);
  });

  it('accepts outputs: [cache] and rejects any other output tensor', () => {
    const cache = ek.tensor('float32', [1, 4, 2]);
    const upd = ek.tensor('float32', [1, 1, 2], [7, 8]);
    const [y] = ek.run('TensorScatter', [cache, upd], { axis: 1 }, { outputs: [cache] });
    expect(y).toBe(cache);
    const other = ek.tensor('float32', [1, 4, 2]);
    expectKernelError(() => ek.run('TensorScatter', [cache, upd], { axis: 1 }, { outputs: [other] }), 'INVALID_ARGUMENT', /in place/);
    for (const t of [cache, upd, other]) t.dispose();
  });
});

describe('TRT_KVCacheUpdate against the reference', () => {
  it('padded [B,H,S,D] updates equal TensorScatter on axis -2', () => {
    fc.assert(
      fc.property(
        fc.record({ B: fc.integer({ min: 1, max: 3 }), H: fc.integer({ min: 1, max: 3 }), N: fc.integer({ min: 1, max: 8 }), D: fc.integer({ min: 1, max: 9 }), s: fc.double({ min: 0, max: 1, noNaN: true }), seed: fc.integer(), dtype: fc.constantFrom<DType>('float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn', 'int64', 'int4', 'uint2', 'float4e2m1', 'string'), i64: fc.boolean(), withLens: fc.boolean() }),
        ({ B, H, N, D, s, seed, dtype, i64, withLens }) => {
          const rnd = rng(seed);
          const S = Math.round(s * N);
          const wi = Array.from({ length: B }, () => Math.floor(rnd() * (N - S + 1)));
          const cache = randomTensor(dtype, [B, H, N, D], rnd);
          const upd = randomTensor(dtype, [B, H, S, D], rnd);
          const idx = i64 ? ek.tensor('int64', [B], wi.map(BigInt)) : ek.tensor('int32', [B], wi);
          // update_lengths: batch b writes only its first counts[b] ≤ S rows
          const counts = Array.from({ length: B }, () => (withLens ? Math.floor(rnd() * (S + 1)) : S));
          const cum = [0];
          counts.forEach((c) => cum.push(cum[cum.length - 1] + c));
          const lt = withLens ? ek.tensor('int32', [B + 1], cum) : null;
          const want = expectedAfter(cache, upd, (g, st) => tensorScatterRef([B, H, N, D], [B, H, S, D], 2, 'linear', wi, (u) => g(u), (c, v) => {
            // the reference writes all S rows: keep the ones past a batch entry's count
            const b = Math.floor(c / (H * N * D)), row = Math.floor(c / D) % N;
            if (row - wi[b] < counts[b]) st(c, v);
          }));
          const [y] = ek.run('TRT_KVCacheUpdate', lt ? [cache, upd, idx, lt] : [cache, upd, idx]);
          expect(y).toBe(cache);
          expect(contents(cache)).toEqual(want);
          cache.dispose(); upd.dispose(); idx.dispose(); lt?.dispose();
        },
      ),
      { seed: 7, numRuns: 150 },
    );
  });

  it('packed [T,H,D] updates with cumulative lengths write each sequence at its index', () => {
    fc.assert(
      fc.property(
        fc.record({ B: fc.integer({ min: 1, max: 4 }), H: fc.integer({ min: 1, max: 3 }), N: fc.integer({ min: 1, max: 8 }), D: fc.integer({ min: 1, max: 6 }), seed: fc.integer(), withIdx: fc.boolean(), dtype: fc.constantFrom<DType>('float32', 'uint8', 'int4', 'int2', 'float4e2m1', 'string') }),
        ({ B, H, N, D, seed, withIdx, dtype }) => {
          const rnd = rng(seed);
          const counts = Array.from({ length: B }, () => Math.floor(rnd() * (N + 1)));
          const lens = [0];
          for (const c of counts) lens.push(lens[lens.length - 1] + c);
          const T = lens[B];
          const wi = withIdx ? counts.map((c) => Math.floor(rnd() * (N - c + 1))) : null;
          const cache = randomTensor(dtype, [B, H, N, D], rnd);
          const upd = randomTensor(dtype, [T, H, D], rnd);
          const idx = wi ? ek.tensor('int32', [B], wi) : null;
          const lt = ek.tensor('int32', [B + 1], lens);
          const want = expectedAfter(cache, upd, (g, st) => kvPackedRef([B, H, N, D], T, lens, wi, g, st));
          ek.run('TRT_KVCacheUpdate', [cache, upd, idx, lt], { update_form: 'packed_nhd' });
          expect(contents(cache)).toEqual(want);
          for (const t of [cache, upd, idx, lt]) t?.dispose();
        },
      ),
      { seed: 11, numRuns: 150 },
    );
  });

  it('padded update with update_lengths writes only each sequence’s valid rows', () => {
    const cache = ek.tensor('float32', [2, 1, 4, 1]);
    const upd = ek.tensor('float32', [2, 1, 3, 1], [1, 2, 3, 4, 5, 6]);
    ek.run('TRT_KVCacheUpdate', [cache, upd, ek.tensor('int32', [2], [1, 0]), ek.tensor('int64', [3], [0n, 2n, 3n])]);
    expect(Array.from(cache.data as Float32Array)).toEqual([0, 1, 2, 0, 4, 0, 0, 0]);
  });
});

describe('plain in-place caches: checked before the kernel runs, each field read once', () => {
  const idx1 = { dtype: 'int64', shape: [1], data: [1n] };
  it('a BigInt64Array cannot take float32 results back: INVALID_ARGUMENT before anything is written', () => {
    // the write-back ran BigInt(2.5) after the kernel: a RangeError, the array half-written
    const data = new BigInt64Array(3);
    const before = ek.stats();
    expectKernelError(() => ek.run('TensorScatter', [{ dtype: 'float32', shape: [1, 3, 1], data }, { dtype: 'float32', shape: [1, 2, 1], data: [2, 2.5] }]), 'INVALID_ARGUMENT', /int64 \/ uint64/);
    expect(Array.from(data)).toEqual([0n, 0n, 0n]);
    expect(ek.stats()).toEqual(before);
    // an int64 cache in a BigInt64Array is fine
    const ok = new BigInt64Array(3);
    ek.run('TensorScatter', [{ dtype: 'int64', shape: [1, 3, 1], data: ok }, { dtype: 'int64', shape: [1, 1, 1], data: [5n] }, idx1]);
    expect(Array.from(ok)).toEqual([0n, 5n, 0n]);
  });

  it('an ordinary array with a read-only element: INVALID_ARGUMENT before anything is written', () => {
    const arr = [0, 0, 0];
    Object.defineProperty(arr, 1, { value: 0, writable: false });
    for (const op of ['TensorScatter', 'TRT_KVCacheUpdate']) {
      expectKernelError(() => ek.run(op, [{ dtype: 'float32', shape: [1, 1, 3, 1], data: arr }, { dtype: 'float32', shape: [1, 1, 1, 1], data: [5] }, { dtype: op === 'TensorScatter' ? 'int64' : 'int32', shape: [1], data: [0] }]), 'INVALID_ARGUMENT', /writable/);
      expect(arr).toEqual([0, 0, 0]);
    }
  });

  it('inputs[0] and the plain cache\'s fields are read once: a getter that answers differently later changes nothing', () => {
    // inputs[0] was read four times: the fourth read's tensor came back, disposed, and the
    // update went nowhere the caller could see
    const T = ek.tensor('float32', [1, 2, 1]);
    const P = { dtype: 'float32', shape: [1, 2, 1], data: new Float32Array(2) };
    let reads = 0;
    const inputs: unknown[] = [null, { dtype: 'float32', shape: [1, 1, 1], data: [7] }];
    Object.defineProperty(inputs, 0, { get() { reads++; return reads <= 1 ? P : T; } });
    const [out] = ek.run('TensorScatter', inputs as never);
    expect(out).toBe(P);
    expect(reads).toBe(1);
    expect(Array.from(P.data)).toEqual([7, 0]);
    expect(Array.from(T.data as Float32Array)).toEqual([0, 0]);
    // a data getter: writable array at the first read, a frozen one after
    let dataReads = 0;
    const good = [0, 0], frozen = Object.freeze([0, 0]);
    const Q = { dtype: 'float32', shape: [1, 2, 1], get data() { dataReads++; return dataReads <= 1 ? good : frozen; } };
    ek.run('TensorScatter', [Q, { dtype: 'float32', shape: [1, 1, 1], data: [3] }]);
    expect(dataReads).toBe(1);
    expect(good).toEqual([3, 0]);
    T.dispose();
  });

  it('a plain cache viewing an input tensor\'s memory is ALIASING with it, as the tensor itself would be', () => {
    const u = ek.tensor('float32', [1, 4, 1], [1, 2, 3, 4]);
    expectKernelError(() => ek.run('TensorScatter', [u, u], { mode: 'circular' }), 'ALIASING');
    expectKernelError(() => ek.run('TensorScatter', [{ dtype: 'float32', shape: [1, 4, 1], data: u.data }, u, idx1], { mode: 'circular' }), 'ALIASING', /overlaps/);
    expect(Array.from(u.data as Float32Array)).toEqual([1, 2, 3, 4]);
    // a view of a tensor that is not an input is written back into (README: views of the
    // instance's memory are copied in and the result written back there)
    const w = ek.tensor('float32', [1, 4, 1]);
    ek.run('TensorScatter', [{ dtype: 'float32', shape: [1, 4, 1], data: w.data }, { dtype: 'float32', shape: [1, 1, 1], data: [9] }, idx1]);
    expect(Array.from(w.data as Float32Array)).toEqual([0, 9, 0, 0]);
    u.dispose(); w.dispose();
  });
});

describe('bad inputs: a KernelError naming the input, and nothing written', () => {
  let cache: Tensor, upd: Tensor, idx: Tensor, kv: Tensor, kvUpd: Tensor, packed: Tensor, lens: Tensor, disposed: Tensor;
  beforeAll(() => {
    cache = ek.tensor('float32', [2, 3, 8, 4]);
    (cache.data as Float32Array).forEach((_, i, a) => { a[i] = i; });
    upd = ek.tensor('float32', [2, 3, 2, 4], new Float32Array(48).fill(-1));
    idx = ek.tensor('int64', [2], [0n, 6n]);
    kv = ek.tensor('float32', [2, 3, 8, 4]);
    kvUpd = ek.tensor('float32', [2, 3, 2, 4]);
    packed = ek.tensor('float32', [5, 3, 4]);
    lens = ek.tensor('int32', [3], [0, 2, 5]);
    disposed = ek.tensor('float32', [2, 3, 8, 4]);
    disposed.dispose();
  });
  const t = (shape: number[], dtype: DType = 'float32', data?: unknown[]) => ek.tensor(dtype, shape, data);

  const cases: [string, () => unknown, string, RegExp][] = [
    ['write past the end (linear)', () => ek.run('TensorScatter', [cache, upd, t([2], 'int64', [0n, 7n])]), 'INVALID_VALUE', /write_indices\[1\].*passes the end/],
    ['negative write index (linear)', () => ek.run('TensorScatter', [cache, upd, t([2], 'int32', [-1, 0])]), 'INVALID_VALUE', /write_indices\[0\].*non-negative.*-1/],
    ['int64 write index beyond 2^53 (linear)', () => ek.run('TensorScatter', [cache, upd, t([2], 'int64', [0n, 2n ** 60n])]), 'INVALID_VALUE', /out of range/],
    ['axis 0', () => ek.run('TensorScatter', [cache, upd, idx], { axis: 0 }), 'INVALID_ATTRIBUTE', /axis.*batch/],
    ['axis -4 is the batch axis', () => ek.run('TensorScatter', [cache, upd, idx], { axis: -4 }), 'INVALID_ATTRIBUTE', /axis/],
    ['axis out of range', () => ek.run('TensorScatter', [cache, upd, idx], { axis: 4 }), 'INVALID_ATTRIBUTE', /axis.*\[-4, 3\].*got 4/],
    ['rank mismatch', () => ek.run('TensorScatter', [cache, t([2, 3, 2]), idx]), 'INVALID_SHAPE', /update.*rank 4.*got 3/],
    ['non-axis dimension mismatch', () => ek.run('TensorScatter', [cache, t([2, 2, 2, 4]), idx]), 'INVALID_SHAPE', /dimension 1 must equal the cache's 3, got 2/],
    ['update longer than the cache', () => ek.run('TensorScatter', [cache, t([2, 3, 9, 4]), null]), 'INVALID_SHAPE', /sequence length 9.*exceeds.*8/],
    ['write_indices of the wrong length', () => ek.run('TensorScatter', [cache, upd, t([3], 'int64')]), 'INVALID_SHAPE', /write_indices.*\[2\].*got \[3\]/],
    ['write_indices of the wrong dtype', () => ek.run('TensorScatter', [cache, upd, t([2], 'float32')]), 'INVALID_DTYPE', /write_indices.*int32 or int64.*float32/],
    ['update dtype differs', () => ek.run('TensorScatter', [cache, t([2, 3, 2, 4], 'float16'), idx]), 'INVALID_DTYPE', /update.*float32.*got float16/],
    ['unknown mode', () => ek.run('TensorScatter', [cache, upd, idx], { mode: 'ring' }), 'INVALID_ATTRIBUTE', /mode.*"linear", "circular".*"ring"/],
    ['unknown attribute', () => ek.run('TensorScatter', [cache, upd, idx], { axes: 1 }), 'INVALID_ATTRIBUTE', /unknown attribute "axes"/],
    ['unknown opType', () => ek.run('TensorScatterND', [cache, upd, idx]), 'UNKNOWN_OP', /TensorScatterND/],
    ['missing update', () => ek.run('TensorScatter', [cache, null, idx]), 'MISSING_INPUT', /update/],
    ['disposed cache', () => ek.run('TensorScatter', [disposed, upd, idx]), 'DISPOSED', /past_cache/],
    ['disposed update', () => ek.run('TRT_KVCacheUpdate', [kv, disposed]), 'DISPOSED', /update/],
    ['KV: lengths not starting at 0', () => ek.run('TRT_KVCacheUpdate', [kv, packed, null, t([3], 'int32', [1, 2, 5])], { update_form: 'packed_nhd' }), 'INVALID_VALUE', /update_lengths.*start at 0, got 1/],
    ['KV: lengths decreasing', () => ek.run('TRT_KVCacheUpdate', [kv, packed, null, t([3], 'int32', [0, 3, 2])], { update_form: 'packed_nhd' }), 'INVALID_VALUE', /update_lengths.*must not decrease/],
    ['KV: lengths not ending at T', () => ek.run('TRT_KVCacheUpdate', [kv, packed, null, t([3], 'int32', [0, 2, 4])], { update_form: 'packed_nhd' }), 'INVALID_VALUE', /update_lengths.*end at 5, got 4/],
    ['KV: lengths of the wrong length', () => ek.run('TRT_KVCacheUpdate', [kv, packed, null, t([4], 'int32', [0, 2, 5, 5])], { update_form: 'packed_nhd' }), 'INVALID_SHAPE', /update_lengths.*\[3\]/],
    ['KV: packed update without lengths', () => ek.run('TRT_KVCacheUpdate', [kv, packed], { update_form: 'packed_nhd' }), 'MISSING_INPUT', /update_lengths.*packed_nhd/],
    ['KV: packed sequence passing the end', () => ek.run('TRT_KVCacheUpdate', [kv, packed, t([2], 'int32', [0, 6]), lens], { update_form: 'packed_nhd' }), 'INVALID_VALUE', /write_indices\[1\].*3 rows at 6/],
    ['KV: cache not 4-D', () => ek.run('TRT_KVCacheUpdate', [t([2, 3, 8]), t([2, 3, 2])]), 'INVALID_SHAPE', /past_cache.*rank 4.*got rank 3/],
    ['KV: head mismatch', () => ek.run('TRT_KVCacheUpdate', [kv, t([2, 2, 2, 4])]), 'INVALID_SHAPE', /update.*\[2,3,S,4\]/],
    ['KV: circular mode', () => ek.run('TRT_KVCacheUpdate', [kv, kvUpd], { mode: 'circular' }), 'INVALID_ATTRIBUTE', /mode.*"linear".*"circular"/],
    ['KV: axis other than -2', () => ek.run('TRT_KVCacheUpdate', [kv, kvUpd], { axis: 1 }), 'INVALID_ATTRIBUTE', /axis/],
    ['KV: unknown update_form', () => ek.run('TRT_KVCacheUpdate', [kv, kvUpd], { update_form: 'packed_bhnd' }), 'INVALID_ATTRIBUTE', /update_form/],
    ['KV: write_indices negative', () => ek.run('TRT_KVCacheUpdate', [kv, kvUpd, t([2], 'int32', [0, -2])]), 'INVALID_VALUE', /write_indices\[1\]/],
    ['KV: padded lengths longer than S', () => ek.run('TRT_KVCacheUpdate', [kv, kvUpd, null, t([3], 'int32', [0, 3, 3])]), 'INVALID_VALUE', /update_lengths.*3 rows, more than the update's 2/],
    ['plain data of the wrong length', () => ek.run('TensorScatter', [cache, { dtype: 'float32', shape: [2, 3, 2, 4], data: [1, 2] }]), 'INVALID_SHAPE', /update\.data.*48.*got 2/],
    ['unknown dtype', () => ek.run('TensorScatter', [cache, { dtype: 'float128', shape: [2, 3, 2, 4], data: [] }]), 'INVALID_DTYPE', /float128/],
    ['update is the cache (circular: rows read after being overwritten)', () => ek.run('TensorScatter', [cache, cache, idx], { mode: 'circular' }), 'ALIASING', /input update: overlaps past_cache, which the operator updates in place/],
    ['KV: update is the cache', () => ek.run('TRT_KVCacheUpdate', [kv, kv]), 'ALIASING', /input update: overlaps past_cache/],
    ['a foreign output request', () => ek.run('TensorScatter', [cache, upd, idx], {}, { outputs: [42 as never] }), 'INVALID_ARGUMENT', /outputs\[0\]/],
  ];

  for (const [name, call, code, pattern] of cases) {
    it(name, () => {
      const before = [cache, upd, idx, kv, kvUpd, packed, lens].map(snapshot);
      const mem = memorySnapshot(ek);
      expectKernelError(call, code, pattern);
      expect([cache, upd, idx, kv, kvUpd, packed, lens].map(snapshot)).toEqual(before);
      // Nothing else in the memory changed either, beyond tensors the case itself allocated.
      const after = new Uint8Array(ek.memory.buffer);
      let changed = 0;
      for (const tt of [cache, upd, idx, kv, kvUpd, packed, lens]) {
        for (let i = tt.byteOffset; i < tt.byteOffset + tt.byteLength; i++) if (after[i] !== mem[i]) changed++;
      }
      expect(changed).toBe(0);
    });
  }

  it('a call with an error in the last batch entry writes nothing for the earlier ones', () => {
    const before = snapshot(cache);
    expectKernelError(() => ek.run('TensorScatter', [cache, upd, t([2], 'int64', [3n, 7n])]), 'INVALID_VALUE');
    expect(snapshot(cache)).toEqual(before);
  });

  it('circular mode takes any int32 / int64 index modulo the length, as the spec\'s Python % does (negative and > 2^53 ones too)', () => {
    // cache length 8; rows 0..1 of batch 0 and 1 land at floor-mod positions
    const cases: [DType, unknown[], number[]][] = [
      ['int32', [-1, -10], [7, 6]],
      ['int32', [-2147483648, 2147483647], [0, 7]],
      ['int64', [-(2n ** 63n), 2n ** 60n + 5n], [0, 5]],
      ['int64', [2n ** 63n - 1n, -9n], [7, 7]],
    ];
    for (const [dtype, idx, want] of cases) {
      const c = ek.tensor('float32', [2, 3, 8, 4]);
      const u = ek.tensor('float32', [2, 3, 2, 4], Float32Array.from({ length: 48 }, (_, i) => i + 1));
      ek.run('TensorScatter', [c, u, t([2], dtype, idx)], { mode: 'circular' });
      const cd = c.data as Float32Array, ud = u.data as Float32Array;
      for (let b = 0; b < 2; b++) {
        for (let h = 0; h < 3; h++) {
          for (let s = 0; s < 2; s++) {
            const pos = (want[b] + s) % 8;
            for (let d = 0; d < 4; d++) expect(cd[((b * 3 + h) * 8 + pos) * 4 + d]).toBe(ud[((b * 3 + h) * 2 + s) * 4 + d]);
          }
        }
      }
      c.dispose(); u.dispose();
    }
  });
});

describe('decode loops', () => {
  it('a 10,000-step circular decode loop writes each row in place and allocates nothing', () => {
    const N = 16, H = 2, D = 8;
    const cache = ek.tensor('float32', [1, H, N, D]);
    const step = ek.tensor('float32', [1, H, 1, D]);
    const pos = ek.tensor('int64', [1]);
    const start = ek.stats();
    const offset = cache.byteOffset;
    for (let s = 0; s < 10_000; s++) {
      (step.data as Float32Array).fill(s);
      (pos.data as BigInt64Array)[0] = BigInt(s);
      const [y] = ek.run('TensorScatter', [cache, step, pos], { mode: 'circular' });
      if (y !== cache) throw new Error('not in place');
    }
    const end = ek.stats();
    expect(end.bytesInUse).toBe(start.bytesInUse);
    expect(end.tensorsLive).toBe(start.tensorsLive);
    expect(end.memoryBytes).toBe(start.memoryBytes);
    expect(end.scratchBytes).toBe(start.scratchBytes);
    expect(cache.byteOffset).toBe(offset);
    // Slot p holds the last step s ≡ p (mod N): 9984 + p.
    const d = cache.data as Float32Array;
    for (let h = 0; h < H; h++) for (let p = 0; p < N; p++) expect(d[(h * N + p) * D]).toBe(9984 + p);
    for (const t of [cache, step, pos]) t.dispose();
  });

  it('memory growth in the middle of a loop keeps every tensor’s data valid', async () => {
    const small = await init({ initialMemory: 65536, maximumMemory: 64 << 20 });
    const cache = small.tensor('int32', [1, 64, 4]);
    const step = small.tensor('int32', [1, 1, 4]);
    const pos = small.tensor('int32', [1]);
    const view = cache.data;
    const grown: Tensor[] = [];
    for (let s = 0; s < 64; s++) {
      (step.data as Int32Array).fill(s + 1);
      (pos.data as Int32Array)[0] = s;
      small.run('TensorScatter', [cache, step, pos], { axis: 1 });
      if (s % 8 === 7) grown.push(small.tensor('float32', [64 * 1024])); // 256 KiB each: forces growth
    }
    expect(small.stats().memoryBytes).toBeGreaterThan(1 << 20);
    expect(view.length).toBe(0); // the old view was detached by memory.grow …
    const d = cache.data as Int32Array; // … and data gives a live one
    expect(d.length).toBe(256);
    for (let s = 0; s < 64; s++) expect(d[s * 4]).toBe(s + 1);
    for (const g of grown) expect((g.data as Float32Array).length).toBe(64 * 1024);
    small.dispose();
  });

  it('a circular write whose scratch request grows the memory still reads its write_indices', async () => {
    // the int32 copies of circular indices go to the scratch area; when that request grows
    // the memory, a view of write_indices taken before it is detached and reads as row 0
    const small = await init({ initialMemory: 65536, maximumMemory: 64 << 20 });
    const B = 4096;
    for (const dtype of ['int64', 'int32'] as const) {
      const cache = small.tensor('float32', [B, 4, 1]);
      const update = small.tensor('float32', [B, 1, 1], new Float32Array(B).fill(7));
      const pos = small.tensor(dtype, [B], dtype === 'int64' ? new BigInt64Array(B).fill(-2n) : new Int32Array(B).fill(-2));
      const before = small.stats().memoryBytes;
      small.run('TensorScatter', [cache, update, pos], { mode: 'circular' });
      if (dtype === 'int64') expect(small.stats().memoryBytes).toBeGreaterThan(before); // the case at stake
      const d = cache.data as Float32Array;
      for (let b = 0; b < B; b++) expect([...d.subarray(b * 4, b * 4 + 4)]).toEqual([0, 0, 7, 0]);
      for (const t of [cache, update, pos]) t.dispose();
    }
    small.dispose();
  });
});
