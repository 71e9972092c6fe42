import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Kernels, type Tensor, expectKernelError, init, rng, snapshot } from './helpers.js';
import { type NumDtype, type ScanOp, applyOp, fromHalfBits, logaddexp, refLinearScan, refScan, refScanHalf, sizeOf, toBf16Bits, toF16Bits } from './ref/scan.js';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());

const OPS: ScanOp[] = ['add', 'mul', 'max', 'min', 'logaddexp'];
const DTYPES: NumDtype[] = ['float32', 'float64', 'int32'];
const dtypesOf = (op: ScanOp): NumDtype[] => (op === 'logaddexp' ? ['float32', 'float64'] : DTYPES);


/** Values suited to an op: products stay near 1, sums small, ints wrap on purpose for add. */
function values(op: ScanOp, dtype: NumDtype, n: number, seed: number): number[] {
  const r = rng(seed);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    let v: number;
    if (dtype === 'int32') v = op === 'mul' ? [1, -1, 2, 3, 1, 1, -2][Math.floor(r() * 7)] : Math.floor((r() - 0.5) * 2 ** 31);
    else if (op === 'mul') v = 0.9 + 0.2 * r();
    else v = (r() - 0.5) * 8;
    out.push(dtype === 'float32' ? Math.fround(v) : v);
  }
  return out;
}

/** True when the fused kernel runs this exact sequential order (lanes path or no reassociation). */
function exactFor(op: ScanOp, dtype: NumDtype, innermost: boolean): boolean {
  if (op === 'logaddexp') return false;
  if (dtype === 'int32' || op === 'max' || op === 'min') return true;
  return !innermost;
}

function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: (i: number) => number, label: string): void {
  expect(got.length, `${label} length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Object.is(g, w)) continue;
    if (Number.isNaN(w)) expect.fail(`${label}[${i}]: got ${g}, want NaN`);
    if (!(Math.abs(g - w) <= tol(i))) expect.fail(`${label}[${i}]: got ${g}, want ${w} (tolerance ${tol(i)})`);
  }
}

/** Tolerance for a re-associated float scan: a few ulps of the running magnitude. */
function scanTolerance(op: ScanOp, dtype: NumDtype, xs: number[], shape: number[], dim: number, init: number[], reverse: boolean): (i: number) => number {
  const eps = dtype === 'float32' ? 2 ** -23 : 2 ** -52;
  if (op === 'add' || op === 'logaddexp') {
    // |error| ≤ n·eps·Σ|x| for any summation order (logaddexp: its values are bounded by the running max + log n)
    if (op === 'logaddexp') {
      // each step is contracting in the carry (d/dc logaddexp(c, x) < 1): errors stay a few ulps of the value
      const want = refScan(op, dtype, xs, shape, dim, reverse, init).ys;
      return (i) => 16 * eps * (Math.abs(want[i]) + 1);
    }
    const mag = refScan('add', 'float64', xs.map(Math.abs), shape, dim, reverse, init.map(Math.abs)).ys;
    const n = shape[dim] + 2;
    return (i) => 4 * n * eps * (mag[i] + 1e-30);
  }
  // mul: relative n·eps of the value itself
  const want = refScan(op, dtype, xs, shape, dim, reverse, init).ys;
  const n = shape[dim] + 2;
  return (i) => 4 * n * eps * Math.abs(want[i]);
}

describe('scan: PyTorch documented example', () => {
  it('cumulative sum of arange(5): final carry 10, ys [0, 1, 3, 6, 10]', () => {
    const live = ek.stats().tensorsLive;
    const i0 = ek.tensor('float32', [], [0]);
    const xs = ek.tensor('float32', [5], [0, 1, 2, 3, 4]);
    const [carry, ys] = ek.scan(ek.combine.add, i0, xs);
    expect([...carry.shape]).toEqual([]);
    expect(Array.from(carry.data)).toEqual([10]);
    expect([...ys.shape]).toEqual([5]);
    expect(Array.from(ys.data)).toEqual([0, 1, 3, 6, 10]);
    expect(Array.from(i0.data as Float32Array)).toEqual([0]);
    for (const t of [carry, ys, i0, xs]) t.dispose();
    expect(ek.stats().tensorsLive).toBe(live);
  });

  it('the documented form: init zeros(1), xs arange(5), a JS add returning (next, y.clone())', () => {
    const add = (c: Tensor, x: Tensor) => {
      const next = ek.tensor(c.dtype, c.shape);
      const cd = c.data as Float32Array, xd = x.data as Float32Array, nd = next.data as Float32Array;
      for (let i = 0; i < nd.length; i++) nd[i] = cd[i] + xd[0];
      const y = ek.tensor(c.dtype, c.shape, (next.data as Float32Array).slice());
      return [next, y] as const;
    };
    const [carry, ys] = ek.scan(add, { dtype: 'float32', shape: [1], data: [0] }, { dtype: 'float32', shape: [5], data: [0, 1, 2, 3, 4] });
    expect(Array.from(carry.data)).toEqual([10]);
    expect([...ys.shape]).toEqual([5, 1]);
    expect(Array.from(ys.data)).toEqual([0, 1, 3, 6, 10]);
    carry.dispose();
    ys.dispose();
  });

  it('the same with ek.combine.add step by step (carry [1] broadcast with x [])', () => {
    const [carry, ys] = ek.scan(ek.combine.add, ek.tensor('float32', [1]), ek.tensor('float32', [5], [0, 1, 2, 3, 4]));
    expect([...carry.shape]).toEqual([1]);
    expect(Array.from(carry.data)).toEqual([10]);
    expect([...ys.shape]).toEqual([5, 1]);
    expect(Array.from(ys.data)).toEqual([0, 1, 3, 6, 10]);
  });
});

/** Runs the fused scan and checks it against the reference; returns the outputs' data. */
function checkFused(op: ScanOp, dtype: NumDtype, shape: number[], dim: number, reverse: boolean, seed: number, label: string): void {
  const r = shape.length;
  const d = dim < 0 ? dim + r : dim;
  const xs = values(op, dtype, sizeOf(shape), seed);
  const cshape = shape.filter((_, i) => i !== d);
  const init = values(op, dtype, sizeOf(cshape), seed + 1);
  const x = ek.tensor(dtype, shape, xs), c = ek.tensor(dtype, cshape, init);
  const live = ek.stats().tensorsLive;
  const [last, ys] = ek.scan(ek.combine[op], c, x, { dim, reverse });
  expect(ek.stats().tensorsLive, `${label} tensorsLive`).toBe(live + 2);
  expect([...ys.shape]).toEqual(shape);
  expect([...last.shape]).toEqual(cshape);
  const want = refScan(op, dtype, xs, shape, d, reverse, init);
  const innermost = sizeOf(shape.slice(d + 1)) === 1;
  if (exactFor(op, dtype, innermost)) {
    expect(Array.from(ys.data as ArrayLike<number>), `${label} ys`).toEqual(want.ys);
    expect(Array.from(last.data as ArrayLike<number>), `${label} last`).toEqual(want.last);
  } else {
    const tol = scanTolerance(op, dtype, xs, shape, d, init, reverse);
    expectClose(ys.data as ArrayLike<number>, want.ys, tol, `${label} ys`);
    const lastIdx = want.last.map((_, k) => {
      // index in ys of the final element of lane k
      const I = sizeOf(shape.slice(d + 1)), N = shape[d];
      const o = Math.floor(k / I), i = k % I;
      return (o * N + (reverse ? 0 : N - 1)) * I + i;
    });
    expectClose(last.data as ArrayLike<number>, want.last, (k) => (shape[d] === 0 ? 0 : tol(lastIdx[k])), `${label} last`);
  }
  for (const t of [x, c, last, ys]) t.dispose();
}

describe('scan: fused combiners against the reference', () => {
  it('every combiner, dtype, reverse; innermost runs of length 0, 1, tails 1..15 and long', () => {
    const lengths = [0, 1, ...Array.from({ length: 15 }, (_, i) => i + 2), 31, 64, 1001];
    let seed = 1;
    for (const op of OPS) {
      for (const dtype of dtypesOf(op)) {
        for (const reverse of [false, true]) {
          for (const n of lengths) {
            checkFused(op, dtype, [2, n], 1, reverse, seed++, `${op} ${dtype} [2,${n}] dim 1 rev ${reverse}`);
            checkFused(op, dtype, [n], -1, reverse, seed++, `${op} ${dtype} [${n}] rev ${reverse}`);
          }
        }
      }
    }
  });

  it('every combiner, dtype, reverse; lanes (dim not innermost) with lane counts 2..17 and long scans', () => {
    let seed = 1000;
    for (const op of OPS) {
      for (const dtype of dtypesOf(op)) {
        for (const reverse of [false, true]) {
          for (const lanes of [2, 3, 4, 5, 7, 8, 9, 15, 16, 17]) {
            for (const n of [0, 1, 3, 6]) checkFused(op, dtype, [n, lanes], 0, reverse, seed++, `${op} ${dtype} [${n},${lanes}] dim 0 rev ${reverse}`);
          }
          checkFused(op, dtype, [300, 6], 0, reverse, seed++, `${op} ${dtype} [300,6] dim 0`);
          checkFused(op, dtype, [3, 5, 4, 2], 1, reverse, seed++, `${op} ${dtype} [3,5,4,2] dim 1`);
        }
      }
    }
  });

  it('random ranks 1..4, shapes and dims (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...OPS), fc.constantFrom(...DTYPES), fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 4 }),
        fc.nat(), fc.boolean(), fc.integer({ min: 1, max: 1 << 30 }),
        (op, dt, shape, dimSeed, reverse, seed) => {
          const dtype = op === 'logaddexp' && dt === 'int32' ? 'float32' : dt;
          const r = shape.length;
          const dim = (dimSeed % (2 * r)) - r;
          checkFused(op, dtype, shape, dim, reverse, seed, `${op} ${dtype} ${JSON.stringify(shape)} dim ${dim} rev ${reverse}`);
        },
      ),
      { seed: 5, numRuns: 150 },
    );
  });

  it('logaddexp special values: ±Inf, NaN, equal arguments', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      const data = [-Infinity, -Infinity, 3, Infinity, 2, -Infinity, NaN, 1, 5, -1e30];
      for (const [shape, dim] of [[[10], 0], [[10, 1], 0], [[1, 10], 1]] as const) {
        const x = ek.tensor(dtype, shape, data);
        const c = ek.tensor(dtype, shape.filter((_, i) => i !== dim), [-Infinity]);
        const [last, ys] = ek.scan(ek.combine.logaddexp, c, x, { dim });
        let acc = -Infinity;
        const want = data.map((v) => (acc = logaddexp(acc, v)));
        expect(want[2]).toBeCloseTo(3, 12);
        const got = Array.from(ys.data as ArrayLike<number>);
        expect(got.slice(0, 2)).toEqual([-Infinity, -Infinity]);
        expect(got[2]).toBeCloseTo(3, 5);
        expect(got.slice(3, 6)).toEqual([Infinity, Infinity, Infinity]);
        expect(got.slice(6).every(Number.isNaN)).toBe(true);
        expect(Number.isNaN((last.data as Float32Array)[0])).toBe(true);
        for (const t of [x, c, last, ys]) t.dispose();
      }
    }
  });

  it('logaddexp along long innermost runs (the two-pass chunked kernel, 1024+ elements): every length mod the chunk count, reverse, init, −∞ / +∞ / NaN inside', () => {
    // laeRun in assembly/scan.ts: runs of 1024 or more are scanned as 16 (float32) / 8 (float64)
    // chunks side by side, then each chunk takes the carry of those before it, then the rest
    for (const dtype of ['float32', 'float64'] as const) {
      const eps = dtype === 'float32' ? 2 ** -23 : 2 ** -52;
      // the float64 reference is itself float64 (Math.exp / log1p): its own rounding adds up
      const k = dtype === 'float32' ? 16 : 32;
      for (const N of [1023, 1024, 1025, 1031, 1039, 2048 + 13, 4096]) {
        for (const reverse of [false, true]) {
          for (const withInit of [false, true]) {
            const O = 2;
            const r = rng(N * 4 + (reverse ? 2 : 0) + (withInit ? 1 : 0));
            const data = Array.from({ length: O * N }, (_, i) => (r() - 0.5) * (i % 3 === 0 ? 40 : 4));
            data[N + 7] = -Infinity; // row 1: −∞ (the identity) inside a chunk
            const init0 = withInit ? [1.5, -3] : [-Infinity, -Infinity];
            const x = ek.tensor(dtype, [O, N], data);
            const c = ek.tensor(dtype, [O], init0);
            const [last, ys] = ek.scan(ek.combine.logaddexp, c, x, { dim: 1, reverse });
            const got = ys.data as Float32Array;
            for (let o = 0; o < O; o++) {
              let acc = init0[o];
              for (let t = 0; t < N; t++) {
                const i = o * N + (reverse ? N - 1 - t : t);
                const xv = dtype === 'float32' ? Math.fround(data[i]) : data[i];
                acc = logaddexp(acc, xv);
                if (dtype === 'float32') acc = Math.fround(acc);
                if (!(Math.abs(got[i] - acc) <= k * eps * (Math.abs(acc) + 1))) expect.fail(`${dtype} N=${N} reverse=${reverse} init=${withInit} row ${o} [${i}]: got ${got[i]}, want ${acc}`);
              }
              expect(Math.abs((last.data as Float32Array)[o] - acc)).toBeLessThanOrEqual(k * eps * (Math.abs(acc) + 1));
            }
            for (const t of [x, c, last, ys]) t.dispose();
          }
        }
      }
      // +∞ and NaN in the middle of a chunk: everything after them (in scan order) is +∞ / NaN
      for (const [special, check] of [[Infinity, (v: number) => v === Infinity], [NaN, Number.isNaN]] as const) {
        const N = 3001, at = 1777;
        const data = Array.from({ length: N }, (_, i) => Math.sin(i));
        data[at] = special;
        const x = ek.tensor(dtype, [N], data);
        const c = ek.tensor(dtype, [], [0]);
        const [last, ys] = ek.scan(ek.combine.logaddexp, c, x, { dim: 0 });
        const got = Array.from(ys.data as Float32Array);
        expect(got.slice(0, at).every(Number.isFinite)).toBe(true);
        expect(got.slice(at).every(check)).toBe(true);
        expect(check((last.data as Float32Array)[0])).toBe(true);
        for (const t of [x, c, last, ys]) t.dispose();
      }
    }
  });

  it('logaddexp kernel accuracy (float32, float64): within 3 units of ulp(result) + eps/2 * (max|arg| + 1)', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      const n = 50000;
      const r = rng(11);
      const A = dtype === 'float32' ? new Float32Array(n) : new Float64Array(n), B = dtype === 'float32' ? new Float32Array(n) : new Float64Array(n);
      for (let i = 0; i < n; i++) {
        A[i] = (r() - 0.5) * [1e-3, 1, 10, 100, 1e4][i % 5];
        B[i] = A[i] + (r() - 0.5) * [1e-6, 0.1, 3, 30, 2000][Math.floor(i / 5) % 5];
      }
      // the kernel's own edges: differences around its exp cut-off (e^d dropped below d = −86)
      // and where s² and r⁴ would be subnormal (|a − b| from ~10 on; d ≈ −k·ln2, r ≈ 0),
      // against a zero, a tiny and an ordinary other argument
      let i = 0;
      const edge = (a: number, b: number) => { A[i] = a; B[i] = b; i++; A[i] = b; B[i] = a; i++; };
      for (const base of [0, 1e-30, -1e-30, 3.5, -70]) {
        for (const d of [9, 9.7, 10, 20, 43, 44, 60, 85, 85.9, 86, 86.1, 86.5, 87, 87.4, 88, 90, 103.3, 104, 150]) edge(base, base - d);
        for (let k = 1; k <= 60; k++) edge(base, base - k * Math.LN2);
      }
      const [y, y2] = ek.combine.logaddexp({ dtype, shape: [n], data: A }, { dtype, shape: [n], data: B });
      const got = y.data as Float32Array;
      const mant = dtype === 'float32' ? 23 : 52;
      for (let i = 0; i < n; i++) {
        const w = logaddexp(A[i], B[i]);
        const ulp = 2 ** (Math.floor(Math.log2(Math.max(Math.abs(w), 2 ** -126))) - mant);
        const unit = ulp + 2 ** -(mant + 1) * (Math.max(Math.abs(A[i]), Math.abs(B[i])) + 1);
        if (!(Math.abs(got[i] - w) <= 3 * unit)) expect.fail(`${dtype} logaddexp(${A[i]}, ${B[i]}): got ${got[i]}, want ${w}`);
      }
      y.dispose();
      y2.dispose();
    }
  });

  it('max / min propagate NaN and order -0 < +0 like Math.max / Math.min', () => {
    for (const op of ['max', 'min'] as const) {
      for (const shape of [[6], [6, 3]]) {
        const n = sizeOf(shape);
        const data = Array.from({ length: n }, (_, i) => [0, -0, 1, NaN, -1, 2][Math.floor(i / (n / 6))]);
        const x = ek.tensor('float32', shape, data);
        const c = ek.tensor('float32', shape.slice(1), new Array(n / 6).fill(-0));
        const [last, ys] = ek.scan(ek.combine[op], c, x);
        const want = refScan(op, 'float32', data, shape, 0, false, new Array(n / 6).fill(-0));
        expect(Array.from(ys.data as Float32Array).map((v) => Object.is(v, -0) ? '-0' : String(v))).toEqual(want.ys.map((v) => Object.is(v, -0) ? '-0' : String(v)));
        for (const t of [x, c, last, ys]) t.dispose();
      }
    }
  });
});

/** A plain JS function doing the same combine as ek.combine[op], elementwise on the data arrays. */
function jsCombine(op: ScanOp) {
  return (c: Tensor, x: Tensor) => {
    const dtype = c.dtype as NumDtype;
    const next = ek.tensor(dtype, c.shape);
    const cd = c.data as Float64Array, xd = x.data as Float64Array, nd = next.data as Float64Array;
    for (let i = 0; i < nd.length; i++) nd[i] = applyOp(op, dtype, cd[i], xd[i]);
    return [next, ek.tensor(dtype, c.shape, (next.data as Float64Array).slice())] as const;
  };
}

describe('scan: fused results equal the step-by-step result of the same combine', () => {
  it('fused vs a plain JS combine and vs the callable combiner run step by step', () => {
    let seed = 7;
    for (const op of OPS) {
      for (const dtype of dtypesOf(op)) {
        for (const [shape, dim] of [[[9, 7], 0], [[4, 3, 5], 1], [[3, 11], 1], [[13], 0], [[2, 0, 3], 1]] as [number[], number][]) {
          for (const reverse of [false, true]) {
            const label = `${op} ${dtype} ${JSON.stringify(shape)} dim ${dim} rev ${reverse}`;
            const xs = values(op, dtype, sizeOf(shape), seed++);
            const cshape = shape.filter((_, i) => i !== dim);
            const init = values(op, dtype, sizeOf(cshape), seed++);
            const x = ek.tensor(dtype, shape, xs), c = ek.tensor(dtype, cshape, init);
            const live = ek.stats().tensorsLive;
            const [fl, fy] = ek.scan(ek.combine[op], c, x, { dim, reverse });
            const [jl, jy] = ek.scan(jsCombine(op), c, x, { dim, reverse });
            const [sl, sy] = ek.scan((a: Tensor, b: Tensor) => ek.combine[op](a, b), c, x, { dim, reverse });
            expect(ek.stats().tensorsLive, label).toBe(live + (shape[dim] === 0 ? 4 : 6));
            const innermost = sizeOf(shape.slice(dim + 1)) === 1;
            const arr = (t: Tensor | Tensor[]) => (Array.isArray(t) ? [] : Array.from(t.data as ArrayLike<number>));
            // the callable combiner step by step runs the same kernel elementwise: bit-identical to the JS combine
            // except for logaddexp (kernel exp/log vs Math.exp/log1p)
            if (op !== 'logaddexp') {
              expect(arr(sl), `${label} callable vs JS last`).toEqual(arr(jl));
              expect(arr(sy), `${label} callable vs JS ys`).toEqual(arr(jy));
            }
            if (shape[dim] === 0) {
              expect(arr(fl)).toEqual(arr(jl));
              expect([...fy.shape]).toEqual(shape);
              expect(jy).toEqual([]);
            } else if (exactFor(op, dtype, innermost)) {
              expect(arr(fl), `${label} last`).toEqual(arr(jl));
              expect(arr(fy), `${label} ys`).toEqual(arr(jy));
            } else {
              const tol = scanTolerance(op, dtype, xs, shape, dim, init, reverse);
              expectClose(arr(fy), arr(jy), tol, `${label} ys`);
            }
            for (const t of [fl, fy, jl, jy, sl, sy, x, c]) if (!Array.isArray(t)) t.dispose();
          }
        }
      }
    }
  });
});

describe('scan: logaddexp / max / min along a non-innermost dim equal the combiner step by step, bit for bit', () => {
  it('lane counts that leave scalar tails in the fused kernel but not in the callable combiner (and the reverse)', () => {
    // the fused scan splits each row of I lanes into vectors and a tail; the callable combiner
    // run step by step splits the whole slice (O·I elements): an element in a vector in one and
    // in a tail in the other must get the same bits
    const r = rng(77);
    for (const dtype of ['float32', 'float64'] as const) {
      for (const shape of [[7, 5, 2], [3, 9, 5], [2, 6, 3, 3], [5, 4, 7], [1, 11, 3]]) {
        for (const reverse of [false, true]) {
          const n = shape.reduce((a, b) => a * b, 1), cshape = shape.filter((_, i) => i !== 1);
          const x = ek.tensor(dtype, shape, Array.from({ length: n }, () => (r() - 0.5) * 20));
          const c = ek.tensor(dtype, cshape, Array.from({ length: n / shape[1] }, () => (r() - 0.5) * 20));
          const [fc, fy] = ek.scan(ek.combine.logaddexp, c, x, { dim: 1, reverse }) as [Tensor, Tensor];
          const [sc, sy] = ek.scan((a: Tensor, b: Tensor) => ek.combine.logaddexp(a, b), c, x, { dim: 1, reverse }) as [Tensor, Tensor];
          expect(fy.bytes(), `${dtype} ${JSON.stringify(shape)} reverse ${reverse}`).toEqual(sy.bytes());
          expect(fc.bytes()).toEqual(sc.bytes());
          for (const t of [x, c, fc, fy, sc, sy]) t.dispose();
        }
      }
    }
  });

  it('max / min: NaN bits (sign included) equal those of the combiner step by step, whichever of vector or tail holds the element', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      for (const op of ['max', 'min'] as const) {
        for (const shape of [[3, 4, 3], [2, 5, 7], [4, 6, 2], [1, 9, 5], [2, 3, 3, 3]]) {
          const n = shape.reduce((a, b) => a * b, 1);
          const x = ek.tensor(dtype, shape, Array.from({ length: n }, (_, k) => (k % 4 === 1 ? NaN : k % 3) * (k % 5 === 2 ? -1 : 1)));
          // both NaN signs in the input
          const words = dtype === 'float32' ? new Uint32Array(ek.memory.buffer, x.byteOffset, n) : new BigUint64Array(ek.memory.buffer, x.byteOffset, n);
          for (let k = 3; k < n; k += 8) (words as Uint32Array)[k] = (dtype === 'float32' ? 0xffc00000 : 0xfff8000000000000n) as number;
          const c = ek.tensor(dtype, shape.filter((_, i) => i !== 1));
          const [fc, fy] = ek.scan(ek.combine[op], c, x, { dim: 1 }) as [Tensor, Tensor];
          const [sc, sy] = ek.scan((a: Tensor, b: Tensor) => ek.combine[op](a, b), c, x, { dim: 1 }) as [Tensor, Tensor];
          expect(fy.bytes(), `${op} ${dtype} ${JSON.stringify(shape)}`).toEqual(sy.bytes());
          expect(fc.bytes()).toEqual(sc.bytes());
          for (const t of [x, c, fc, fy, sc, sy]) t.dispose();
        }
      }
    }
  });
});

describe('scan: pytrees, plain tensors, counted loops', () => {
  it('carries and xs as nested arrays / objects of plain and package tensors', () => {
    const live = ek.stats().tensorsLive;
    const a = ek.tensor('float32', [4, 2], [1, 2, 3, 4, 5, 6, 7, 8]);
    const xs = { a, b: { dtype: 'int32', shape: [4, 3], data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] } };
    const initTree = { sum: ek.tensor('float32', [2]), stats: [{ dtype: 'int32', shape: [3], data: [0, 0, 0] }, ek.tensor('int32', [], [100])] };
    const fn = (carry: { sum: Tensor; stats: [Tensor, Tensor] }, x: { a: Tensor; b: Tensor }) => {
      const sum = ek.tensor('float32', [2], Array.from(carry.sum.data as Float32Array, (v, i) => v + (x.a.data as Float32Array)[i]));
      const cnt = ek.tensor('int32', [3], Array.from(carry.stats[0].data as Int32Array, (v, i) => v + (x.b.data as Int32Array)[i]));
      const steps = ek.tensor('int32', [], [(carry.stats[1].data as Int32Array)[0] + 1]);
      const y = { total: { dtype: 'float32', shape: [], data: [(sum.data as Float32Array)[0] + (sum.data as Float32Array)[1]] }, rows: [ek.tensor('int32', [3], (cnt.data as Int32Array).slice())] };
      return [{ sum, stats: [cnt, steps] }, y] as const;
    };
    const [carry, ys] = ek.scan(fn, initTree, xs);
    expect(Object.keys(carry)).toEqual(['sum', 'stats']);
    expect(Array.from(carry.sum.data)).toEqual([16, 20]);
    expect(Array.from(carry.stats[0].data)).toEqual([22, 26, 30]);
    expect(Array.from(carry.stats[1].data)).toEqual([104]);
    expect([...ys.total.shape]).toEqual([4]);
    expect(Array.from(ys.total.data)).toEqual([3, 10, 21, 36]);
    expect([...ys.rows[0].shape]).toEqual([4, 3]);
    expect(Array.from(ys.rows[0].data)).toEqual([1, 2, 3, 5, 7, 9, 12, 15, 18, 22, 26, 30]);
    // returned: 3 carry leaves + 2 ys leaves; inputs a and initTree.sum / stats[1] still ours
    expect(ek.stats().tensorsLive).toBe(live + 3 + 5);
    for (const t of [carry.sum, carry.stats[0], carry.stats[1], ys.total, ys.rows[0], a, initTree.sum, initTree.stats[1] as Tensor]) t.dispose();
    expect(ek.stats().tensorsLive).toBe(live);
  });

  it('xs slices reach the combine function as package tensors, in order, reversed and along any dim', () => {
    for (const reverse of [false, true]) {
      const seen: number[][] = [];
      const x = ek.tensor('float64', [2, 3, 2], Array.from({ length: 12 }, (_, i) => i));
      const [c, ys] = ek.scan((carry: Tensor, s: Tensor) => {
        expect(s.constructor.name).toBe('Tensor');
        expect([...s.shape]).toEqual([2, 2]);
        seen.push(Array.from(s.data as Float64Array));
        return [ek.tensor('float64', [], [(carry.data as Float64Array)[0] + 1]), ek.tensor('float64', [2, 2], (s.data as Float64Array).slice())] as const;
      }, ek.tensor('float64', []), x, { dim: -2, reverse });
      const order = reverse ? [2, 1, 0] : [0, 1, 2];
      expect(seen).toEqual(order.map((t) => [t * 2, t * 2 + 1, 6 + t * 2, 6 + t * 2 + 1]));
      expect(Array.from(c.data)).toEqual([3]);
      expect(Array.from(ys.data)).toEqual(Array.from(x.data as ArrayLike<number>)); // ys stacked back at dim -2 in index order
      for (const t of [x, c, ys]) t.dispose();
    }
  });

  it('counted loops: xs = null with length, x is null, ys stacked along dim', () => {
    const live = ek.stats().tensorsLive;
    const fib = (carry: [Tensor, Tensor], x: null) => {
      expect(x).toBeNull();
      const [a, b] = carry.map((t) => (t.data as Int32Array)[0]);
      return [[ek.tensor('int32', [], [b]), ek.tensor('int32', [], [a + b])], ek.tensor('int32', [2], [a, a * 10])] as const;
    };
    const [c, ys] = ek.scan(fib, [{ dtype: 'int32', shape: [], data: [0] }, { dtype: 'int32', shape: [], data: [1] }], null, { length: 8 });
    expect(c.map((t: Tensor) => (t.data as Int32Array)[0])).toEqual([21, 34]);
    expect([...ys.shape]).toEqual([8, 2]);
    expect(Array.from(ys.data).filter((_, i) => i % 2 === 0)).toEqual([0, 1, 1, 2, 3, 5, 8, 13]);
    const [c2, ys2] = ek.scan(fib, [ek.tensor('int32', []), ek.tensor('int32', [], [1])], null, { length: 4, dim: -1 });
    expect([...ys2.shape]).toEqual([2, 4]);
    expect(Array.from(ys2.data)).toEqual([0, 1, 1, 2, 0, 10, 10, 20]);
    for (const t of [...c, ys, ...c2, ys2]) t.dispose();
    expect(ek.stats().tensorsLive).toBe(live + 2); // the two package inits of the second call
  });

  it('zero-length scans return init (a copy with the same values) and empty ys', () => {
    const live = ek.stats().tensorsLive;
    const i = ek.tensor('float32', [3], [1, 2, 3]);
    const [c1, y1] = ek.scan(ek.combine.add, i, ek.tensor('float32', [0, 3]));
    expect(Array.from(c1.data)).toEqual([1, 2, 3]);
    expect(c1).not.toBe(i);
    expect([...y1.shape]).toEqual([0, 3]);
    let calls = 0;
    const [c2, y2] = ek.scan(() => {
      calls++;
      return [null, null];
    }, { h: i }, null, { length: 0 });
    expect(calls).toBe(0);
    expect(Array.from(c2.h.data)).toEqual([1, 2, 3]);
    expect(y2).toEqual([]);
    const [c3, y3] = ek.scan(jsCombine('add'), i, ek.tensor('float32', [4, 0, 3]), { dim: 1 });
    expect(Array.from(c3.data)).toEqual([1, 2, 3]);
    expect(y3).toEqual([]);
    for (const t of [c1, y1, c2.h, c3, i]) t.dispose();
    expect(ek.stats().tensorsLive).toBe(live + 2); // the two xs tensors made inline above
  });

  it('a builtin combiner\'s zero-length ys is an empty tensor in every dtype (host-stepped ones too)', () => {
    for (const dtype of ['float32', 'float64', 'int32', 'int8', 'int16', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'float16', 'bfloat16'] as const) {
      for (const name of ['add', 'max'] as const) {
        const i = ek.tensor(dtype, [3]), x = ek.tensor(dtype, [0, 3]);
        const [c, y] = ek.scan(ek.combine[name], i, x) as [Tensor, Tensor];
        expect([...y.shape], `${name} ${dtype}`).toEqual([0, 3]);
        expect(y.dtype).toBe(dtype);
        expect(c).not.toBe(i);
        expect([...c.shape]).toEqual([3]);
        for (const t of [i, x, c, y]) t.dispose();
      }
    }
  });

  it('builtin combiners promote x to the carry\'s dtype as PyTorch does when the result keeps it', () => {
    // float32 carry + int32 xs: float32 (x converted, as torch's carry + x); int16 carry, uint8 xs: int16
    const [c, y] = ek.scan(ek.combine.add, ek.tensor('float32', [], [0.5]), ek.tensor('int32', [4], [1, 2, 3, 4])) as [Tensor, Tensor];
    expect(y.dtype).toBe('float32');
    expect(Array.from(y.data as Float32Array)).toEqual([1.5, 3.5, 6.5, 10.5]);
    const [c2, y2] = ek.scan(ek.combine.max, ek.tensor('int16', [], [0]), ek.tensor('uint8', [3], [200, 5, 250])) as [Tensor, Tensor];
    expect(Array.from(y2.data as Int16Array)).toEqual([200, 200, 250]);
    const [c3, y3] = ek.scan(ek.combine.mul, ek.tensor('float64', [2], [1, 1]), ek.tensor('float16', [2, 2], [0x4000, 0x3800, 0x4200, 0x4000])) as [Tensor, Tensor];
    expect(Array.from(y3.data as Float64Array)).toEqual([2, 0.5, 6, 1]);
    // int32 carry + float32 xs promotes to float32: the carry could not keep its dtype
    expectKernelError(() => ek.scan(ek.combine.add, ek.tensor('int32', [], [0]), ek.tensor('float32', [2], [1, 2])), 'INVALID_DTYPE', /x \(float32\) and the carry \(int32\) promote to float32/);
    for (const t of [c, y, c2, y2, c3, y3]) t.dispose();
  });

  it('uint16 / uint32 / uint64 promote only with floating types (c10 promoteTypes): x of bool or another integer type is INVALID_DTYPE', () => {
    // torch.promote_types(uint16, uint8) raises "Promotion for uint16, uint32, uint64 types is not supported"
    const pairs: [string, string][] = [['uint16', 'uint8'], ['uint16', 'bool'], ['uint32', 'uint16'], ['uint64', 'uint32'], ['uint64', 'uint8'], ['int32', 'uint16'], ['int64', 'uint32']];
    for (const [cd, xd] of pairs) {
      const c = ek.tensor(cd, [], [1]), x = ek.tensor(xd, [2], [1, 0]);
      expectKernelError(() => ek.scan(ek.combine.add, c, x), 'INVALID_DTYPE', /promote to no common type/);
      c.dispose();
      x.dispose();
    }
    // with a floating type the float wins: uint16 / uint64 xs into a float32 / float64 carry are converted
    const [c1, y1] = ek.scan(ek.combine.add, ek.tensor('float32', [], [0.5]), ek.tensor('uint16', [2], [1, 65535])) as [Tensor, Tensor];
    expect(Array.from(y1.data as Float32Array)).toEqual([1.5, 65536.5]);
    const [c2, y2] = ek.scan(ek.combine.max, ek.tensor('float64', [], [0]), ek.tensor('uint64', [2], [3n, 2n])) as [Tensor, Tensor];
    expect(Array.from(y2.data as Float64Array)).toEqual([3, 3]);
    for (const t of [c1, y1, c2, y2]) t.dispose();
  });

  it('a zero-length scan with a builtin combiner and an xs of a promoted dtype returns an empty ys of the carry\'s dtype, not []', () => {
    const c = ek.tensor('float32', [2, 3], [1, 2, 3, 4, 5, 6]), x = ek.tensor('int32', [2, 0, 3]);
    const [fc, ys] = ek.scan(ek.combine.add, c, x, { dim: 1 }) as [Tensor, Tensor];
    expect(Array.isArray(ys)).toBe(false);
    expect(ys.dtype).toBe('float32');
    expect([...ys.shape]).toEqual([2, 0, 3]);
    expect(Array.from(fc.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6]);
    const c2 = ek.tensor('int16', [2], [5, 6]), x2 = ek.tensor('uint8', [0, 2]);
    const [fc2, ys2] = ek.scan(ek.combine.mul, c2, x2, { reverse: true }) as [Tensor, Tensor];
    expect(ys2.dtype).toBe('int16');
    expect([...ys2.shape]).toEqual([0, 2]);
    for (const t of [c, x, fc, ys, c2, x2, fc2, ys2]) t.dispose();
  });

  it('a zero-length scan whose slices broadcast against init stacks ys as a longer one would: init [1], xs [0] → ys [0, 1]', () => {
    // (found by an audit: ys came back [] although N = 5 gives [5, 1])
    for (const [cs, xs, dim, want] of [[[1], [0], 0, [0, 1]], [[3, 2], [2, 0], 1, [3, 0, 2]], [[4, 1, 3], [0, 3], 0, [0, 4, 1, 3]], [[2, 3], [0, 1, 3], 0, [0, 2, 3]]] as const) {
      const c = ek.tensor('float32', [...cs]);
      for (const n of [5, 0]) {
        const xShape = [...xs] as number[];
        xShape[dim] = n;
        const x = ek.tensor('float32', xShape);
        const [fc, ys] = ek.scan(ek.combine.add, c, x, { dim }) as [Tensor, Tensor];
        const w = [...want] as number[];
        w[dim] = n;
        expect([...ys.shape], `init ${JSON.stringify(cs)} xs ${JSON.stringify(xShape)}`).toEqual(w);
        for (const t of [x, fc, ys]) t.dispose();
      }
      c.dispose();
    }
  });

  it('a negative dim is resolved against the first xs leaf\'s rank and used for every leaf (PyTorch)', () => {
    const a = ek.tensor('float32', [2, 3], [1, 2, 3, 4, 5, 6]), b = ek.tensor('float32', [2, 3, 4], Array.from({ length: 24 }, (_, k) => k));
    // dim −1 of a rank-2 first leaf is axis 1: both leaves have 3 steps along axis 1
    let steps = 0;
    const [, ys] = ek.scan((c: Tensor, [x0, x1]: Tensor[]) => { steps++; expect([...x0.shape]).toEqual([2]); expect([...x1.shape]).toEqual([2, 4]); return ek.combine.add(c, x0); },
      ek.tensor('float32', [2]), [a, b], { dim: -1 }) as [Tensor, Tensor];
    expect(steps).toBe(3);
    expect([...ys.shape]).toEqual([2, 3]);
    expectKernelError(() => ek.scan(ek.combine.add, ek.tensor('float32', [2]), [b, ek.tensor('float32', [2, 4])], { dim: -1 }), 'INVALID_SHAPE', /expected rank > 2/);
  });

  it('length given with xs must match', () => {
    const x = ek.tensor('float32', [4]);
    const [c, y] = ek.scan(ek.combine.add, ek.tensor('float32', []), x, { length: 4 });
    expect(Array.from(y.data)).toEqual([0, 0, 0, 0]);
    expectKernelError(() => ek.scan(ek.combine.add, c, x, { length: 5 }), 'INVALID_VALUE', /length: expected 4.*got 5/);
    expectKernelError(() => ek.scan(ek.combine.add, c, null), 'INVALID_ARGUMENT', /length: required when xs is null/);
  });
});

describe('scan: rules and errors', () => {
  const mk = () => ({ c: ek.tensor('float32', [2], [1, 2]), x: ek.tensor('float32', [3, 2], [1, 2, 3, 4, 5, 6]) });

  function expectRule(fn: (c: any, x: any) => unknown, code: string, pattern: RegExp, initTree?: unknown): void {
    const { c, x } = mk();
    const before = [snapshot(c), snapshot(x)];
    const live = ek.stats().tensorsLive;
    expectKernelError(() => ek.scan(fn as never, initTree ?? c, x), code, pattern);
    expect(ek.stats().tensorsLive, 'no tensor left behind').toBe(live);
    expect(snapshot(c)).toEqual(before[0]);
    expect(snapshot(x)).toEqual(before[1]);
    c.dispose();
    x.dispose();
  }
  const copy = (t: Tensor) => ek.tensor(t.dtype, t.shape, (t.data as Float32Array).slice());

  it('nextCarry must match init in structure', () => {
    expectRule((c: Tensor) => [[copy(c)], copy(c)], 'INVALID_ARGUMENT', /nextCarry.*structure of init tensor, got \[tensor\]/);
    expectRule((c: { a: Tensor }) => [{ b: copy(c.a) }, copy(c.a)], 'INVALID_ARGUMENT', /structure of init \{ a: tensor \}, got \{ b: tensor \}/, { a: ek.tensor('float32', [2]) });
    expectRule(() => [42, null], 'INVALID_ARGUMENT', /nextCarry: expected a Tensor.*got 42/);
    expectRule(() => 'oops', 'INVALID_ARGUMENT', /expected it to return \[nextCarry, y\]/);
  });

  it('nextCarry must match init in shape and dtype; y must keep its shape', () => {
    expectRule(() => [ek.tensor('float32', [3]), ek.tensor('float32', [])], 'INVALID_SHAPE', /nextCarry at step 0: expected shape \[2\].*got \[3\]/);
    expectRule(() => [ek.tensor('float64', [2]), ek.tensor('float32', [])], 'INVALID_DTYPE', /nextCarry at step 0: expected dtype float32.*got float64/);
    let s = 0;
    expectRule(() => [ek.tensor('float32', [2]), ek.tensor('float32', [s++])], 'INVALID_SHAPE', /y at step 1: expected shape \[0\] \(step 0's\), got \[1\]/);
  });

  it('outputs may not alias inputs or each other (same object or overlapping memory)', () => {
    expectRule((c: Tensor) => [c, copy(c)], 'ALIASING', /nextCarry at step 0: is the input carry/);
    expectRule((c: Tensor, x: Tensor) => [copy(c), x], 'ALIASING', /y at step 0: is the input x/);
    expectRule((c: Tensor) => {
      const n = copy(c);
      return [n, n];
    }, 'ALIASING', /y at step 0: is the output nextCarry/);
    expectRule((c: Tensor) => [copy(c), { dtype: 'float32', shape: [2], data: c.data }], 'ALIASING', /y at step 0: shares memory with the input carry/);
    expectRule((c: Tensor, x: Tensor) => [{ dtype: 'float32', shape: [1], data: (x.data as Float32Array).subarray(1, 2) }, copy(c)], 'INVALID_SHAPE', /expected shape \[2\]/);
    expectRule((c: Tensor) => {
      const d = new Float32Array(4);
      return [{ dtype: 'float32', shape: [2], data: d.subarray(0, 2) }, { dtype: 'float32', shape: [3], data: d.subarray(1, 4) }];
    }, 'ALIASING', /y at step 0: shares memory with the output nextCarry/);
  });

  it('the combine function may not modify or dispose its inputs', () => {
    expectRule((c: Tensor) => {
      (c.data as Float32Array)[1] = 99;
      return [copy(c), copy(c)];
    }, 'INVALID_ARGUMENT', /modified its input carry at step 0/);
    expectRule((c: Tensor, x: Tensor) => {
      (x.data as Float32Array)[0] += 1;
      return [copy(c), copy(c)];
    }, 'INVALID_ARGUMENT', /modified its input x at step 0/);
    expectRule((c: { h: Tensor[] }) => {
      (c.h[0].data as Float32Array)[0] = -1;
      return [{ h: [copy(c.h[0])] }, null];
    }, 'INVALID_ARGUMENT', /modified its input carry\.h\[0\]/, { h: [ek.tensor('float32', [2])] });
    expectRule((c: Tensor) => {
      c.dispose();
      return [ek.tensor('float32', [2]), null];
    }, 'INVALID_ARGUMENT', /disposed its input carry/);
  });

  it('xs disposed by the combine function is DISPOSED at the next step, never a read of its freed block', async () => {
    const x = ek.tensor('float32', [4, 2], [1, 1, 1, 1, 1, 1, 1, 1]);
    const c = ek.tensor('float32', [2]);
    const live = ek.stats().tensorsLive;
    let step = 0;
    expectKernelError(() => ek.scan((carry: Tensor, s: Tensor) => {
      if (step++ === 0) {
        x.dispose();
        ek.tensor('float32', [4, 2]).data.fill(999); // reuses x's block (then released by the scan)
      }
      return [copy(carry), copy(s)];
    }, c, x), 'DISPOSED', /scan xs at step 1 \(disposed during the scan\)/);
    expect(step).toBe(1);
    expect(ek.stats().tensorsLive).toBe(live - 1); // x
    c.dispose();
    // the instance disposed by the combine function: DISPOSED, not a complaint about its inputs
    const ek2 = await init();
    expectKernelError(() => ek2.scan(() => {
      ek2.dispose();
      return [null, null];
    }, ek2.tensor('float32', []), ek2.tensor('float32', [3])), 'DISPOSED', /combineFn disposed the Kernels instance at step 0/);
  });

  it('errors thrown by the combine function propagate and release every intermediate tensor', () => {
    const { c, x } = mk();
    const live = ek.stats().tensorsLive;
    let step = 0;
    expect(() => ek.scan((carry: Tensor) => {
      ek.tensor('float32', [100]); // a leaked temporary
      if (step++ === 2) throw new Error('boom');
      return [copy(carry), copy(carry)];
    }, c, x)).toThrow('boom');
    expect(step).toBe(3);
    expect(ek.stats().tensorsLive).toBe(live);
  });

  it('bad arguments', () => {
    const { c, x } = mk();
    expectKernelError(() => ek.scan(42 as never, c, x), 'INVALID_ARGUMENT', /combineFn: expected a function/);
    expectKernelError(() => ek.scan(ek.combine.add, 3, x), 'INVALID_ARGUMENT', /init: expected a Tensor/);
    expectKernelError(() => ek.scan(ek.combine.add, c, x, { dim: 2 }), 'INVALID_ARGUMENT', /dim 2 is out of range for rank 2/);
    expectKernelError(() => ek.scan(ek.combine.add, c, x, { reverse: 1 } as never), 'INVALID_ARGUMENT', /reverse: expected a boolean/);
    expectKernelError(() => ek.scan(ek.combine.add, c, x, { axis: 0 } as never), 'INVALID_ARGUMENT', /unknown option "axis"/);
    expectKernelError(() => ek.scan(ek.combine.add, c, [x, ek.tensor('float32', [4])]), 'INVALID_SHAPE', /xs\[1\]: expected length 3 along dim 0/);
    expectKernelError(() => ek.scan(ek.combine.add, c, ek.tensor('float32', [])), 'INVALID_SHAPE', /expected rank >= 1/);
    expectKernelError(() => ek.scan(ek.combine.add, c, []), 'INVALID_ARGUMENT', /xs: expected at least one tensor/);
    expectKernelError(() => ek.scan((cc: unknown) => [cc, x], [], x), 'INVALID_ARGUMENT', /init: expected at least one tensor.*requires init leaves/);
    expectKernelError(() => ek.scan((cc: unknown) => [cc, x], { a: null }, x), 'INVALID_ARGUMENT', /init: expected at least one tensor/);
    expectKernelError(() => ek.scan(ek.combine.add, c, null, { length: 2 }), 'MISSING_INPUT', /x is required/);
    expectKernelError(() => ek.combine.add(c, ek.tensor('float64', [2])), 'INVALID_DTYPE', /x \(float64\) and the carry \(float32\) promote to float64, not the carry's dtype/);
    expectKernelError(() => ek.combine.add(ek.tensor('int8', [2]), ek.tensor('uint8', [2])), 'INVALID_DTYPE', /promote to int16/);
    expectKernelError(() => ek.combine.logaddexp(ek.tensor('int32', [2]), ek.tensor('int32', [2])), 'INVALID_DTYPE', /float32, float64, float16, bfloat16, got int32/);
    expectKernelError(() => ek.combine.add(ek.tensor('bool', [2]), ek.tensor('bool', [2])), 'INVALID_DTYPE', /carry: expected .*got bool/);
    expectKernelError(() => ek.combine.max(ek.tensor('float8e4m3fn', [2]), ek.tensor('float8e4m3fn', [2])), 'INVALID_DTYPE', /got float8e4m3fn/);
    expectKernelError(() => ek.combine.add(c, ek.tensor('float32', [3])), 'INVALID_SHAPE', /do not broadcast/);
    const d = c;
    d.dispose();
    expectKernelError(() => ek.scan(ek.combine.add, d, x), 'DISPOSED');
    x.dispose();
  });
});

describe('scan: fused integers other than int32 (add, mul, max, min): int64, uint64, uint32 (max / min on sign-flipped copies), int8 / int16 / uint8 / uint16 (on widened copies)', () => {
  // the reference: BigInt arithmetic wrapped to the width, one element at a time in scan order
  type Wide = 'int64' | 'uint64' | 'uint32' | 'int8' | 'uint8' | 'int16' | 'uint16';
  const WIDE: Wide[] = ['int64', 'uint64', 'uint32', 'int8', 'uint8', 'int16', 'uint16'];
  const BITS: Record<Wide, number> = { int64: 64, uint64: 64, uint32: 32, int8: 8, uint8: 8, int16: 16, uint16: 16 };
  const NARROW = { uint32: Uint32Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array };
  const wrapOf = (dt: Wide) => (v: bigint) => (dt.startsWith('u') ? BigInt.asUintN(BITS[dt], v) : BigInt.asIntN(BITS[dt], v));
  const combine = (op: string, a: bigint, b: bigint) => (op === 'add' ? a + b : op === 'mul' ? a * b : op === 'max' ? (a > b ? a : b) : a < b ? a : b);
  function randomWide(dt: Wide, n: number, r: () => number): bigint[] {
    const wrap = wrapOf(dt);
    // full-width bit patterns, with some small values so that products do not all wrap to 0
    return Array.from({ length: n }, () => {
      if (r() < 0.3) return wrap(BigInt(Math.floor((r() - 0.5) * 16)));
      return wrap((BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32)));
    });
  }
  function checkWide(op: 'add' | 'mul' | 'max' | 'min', dt: Wide, shape: number[], dim: number, reverse: boolean, seed: number, withInit: boolean): void {
    const r = rng(seed), wrap = wrapOf(dt);
    const d = dim < 0 ? dim + shape.length : dim;
    const O = sizeOf(shape.slice(0, d)), N = shape[d], I = sizeOf(shape.slice(d + 1));
    const xs = randomWide(dt, O * N * I, r);
    const cshape = shape.filter((_, i) => i !== d);
    const init = withInit ? randomWide(dt, O * I, r) : null;
    const half = 1n << BigInt(BITS[dt] - 1), signed = !dt.startsWith('u');
    const identity = op === 'add' ? 0n : op === 'mul' ? 1n : op === 'max' ? (signed ? -half : 0n) : signed ? half - 1n : wrap(-1n);
    const want = new Array<bigint>(xs.length), wantLast = new Array<bigint>(O * I);
    for (let o = 0; o < O; o++) {
      for (let i = 0; i < I; i++) {
        let acc = init ? init[o * I + i] : identity;
        for (let s = 0; s < N; s++) {
          const t = reverse ? N - 1 - s : s, k = (o * N + t) * I + i;
          acc = wrap(combine(op, acc, xs[k]));
          want[k] = acc;
        }
        wantLast[o * I + i] = acc;
      }
    }
    const toData = (v: bigint[]) => (dt === 'int64' ? BigInt64Array.from(v) : dt === 'uint64' ? BigUint64Array.from(v) : NARROW[dt].from(v, Number));
    const x = ek.tensor(dt, shape, toData(xs));
    const c = init ? ek.tensor(dt, cshape, toData(init)) : ek.tensor(dt, cshape, toData(new Array(O * I).fill(identity)));
    const label = `${op} ${dt} ${JSON.stringify(shape)} dim ${dim} rev ${reverse} init ${withInit}`;
    const [last, ys] = ek.scan(ek.combine[op], c, x, { dim, reverse }) as [Tensor, Tensor];
    const big = (t: Tensor) => Array.from(t.data as ArrayLike<number | bigint>, (v) => BigInt(v));
    expect(big(ys), `${label} ys`).toEqual(want);
    expect(big(last), `${label} last`).toEqual(wantLast);
    // the sign flips and the widening work on copies, never on the caller's tensors
    expect(big(x), `${label} xs unchanged`).toEqual(xs);
    expect(big(c), `${label} init unchanged`).toEqual(init ?? new Array(O * I).fill(identity));
    for (const t of [x, c, last, ys]) t.dispose();
  }
  const OPS4 = ['add', 'mul', 'max', 'min'] as const;
  it('the combiners called directly, same shapes (the kernel, one step) and broadcasting (the host)', () => {
    const big = (t: Tensor) => Array.from(t.data as ArrayLike<number | bigint>, (v) => BigInt(v));
    for (const dt of WIDE) {
      const wrap = wrapOf(dt), r = rng(dt.length + BITS[dt]);
      const a = randomWide(dt, 6, r), b = randomWide(dt, 6, r), s = randomWide(dt, 3, r);
      const data = (v: bigint[]) => (BITS[dt] <= 32 ? v.map(Number) : v.map(String));
      for (const op of OPS4) {
        const [y] = ek.combine[op]({ dtype: dt, shape: [2, 3], data: data(a) }, { dtype: dt, shape: [2, 3], data: data(b) }) as [Tensor, Tensor];
        expect(big(y), `${dt} ${op}`).toEqual(a.map((v, i) => wrap(combine(op, v, b[i]))));
        const [z] = ek.combine[op]({ dtype: dt, shape: [2, 3], data: data(a) }, { dtype: dt, shape: [3], data: data(s) }) as [Tensor, Tensor];
        expect(big(z), `${dt} ${op} broadcast`).toEqual(a.map((v, i) => wrap(combine(op, v, s[i % 3]))));
        y.dispose();
        z.dispose();
      }
    }
  });
  it('innermost runs of length 0, 1, tails 2..17, 31, 64 and 1001; lanes 2..17; both directions', () => {
    let seed = 3000;
    for (const dt of WIDE) {
      for (const op of OPS4) {
        for (const reverse of [false, true]) {
          for (const n of [0, 1, ...Array.from({ length: 16 }, (_, i) => i + 2), 31, 64, 1001]) {
            checkWide(op, dt, [2, n], 1, reverse, seed++, true);
            checkWide(op, dt, [n], 0, reverse, seed++, n % 2 === 0);
          }
          for (const lanes of [2, 3, 5, 8, 9, 16, 17]) checkWide(op, dt, [6, lanes], 0, reverse, seed++, true);
          checkWide(op, dt, [300, 3], 0, reverse, seed++, true);
        }
      }
    }
  });
  it('random ranks 1..4, shapes and dims (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...WIDE), fc.constantFrom(...OPS4),
        fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 4 }), fc.nat(), fc.boolean(), fc.integer({ min: 1, max: 1 << 30 }),
        (dt: Wide, op, shape, dimSeed, reverse, seed) => {
          const dim = (dimSeed % (2 * shape.length)) - shape.length;
          checkWide(op, dt, shape, dim, reverse, seed, seed % 3 !== 0);
        },
      ),
      { seed: 9, numRuns: 150 },
    );
  });
});

describe('scan: the combiners called directly over the integers and over float16 / bfloat16', () => {
  // int64 / uint64 wrap modulo 2^64, the narrower integers at their width (PyTorch's integer
  // ops); float16 / bfloat16 are combined in float32 and rounded once to nearest even
  const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
  const bf16 = (x: number): number => { f32[0] = x; const b = u32[0]; return (b + 0x7fff + ((b >> 16) & 1)) >>> 16; };
  const fromBf16 = (h: number): number => { u32[0] = h << 16; return f32[0]; };
  it('int64 and uint64: scan add / mul / max / min against BigInt arithmetic, reverse', () => {
    const r = rng(71);
    for (const dt of ['int64', 'uint64'] as const) {
      const wrap = (v: bigint) => (dt === 'int64' ? BigInt.asIntN(64, v) : BigInt.asUintN(64, v));
      for (const op of ['add', 'mul', 'max', 'min'] as const) {
        for (const reverse of [false, true]) {
          const N = 7, L = 3;
          const xs = Array.from({ length: N * L }, () => wrap(BigInt(Math.floor((r() - 0.5) * 2 ** 52)) * (op === 'add' ? 4096n : 1n)));
          const init = Array.from({ length: L }, () => wrap(BigInt(Math.floor(r() * 1000))));
          const [c, ys] = ek.scan(ek.combine[op], { dtype: dt, shape: [L], data: init.map(String) }, { dtype: dt, shape: [N, L], data: xs.map(String) }, { reverse }) as [Tensor, Tensor];
          const acc = [...init];
          const want = new Array<bigint>(N * L);
          for (let s = 0; s < N; s++) {
            const t = reverse ? N - 1 - s : s;
            for (let l = 0; l < L; l++) {
              const a = acc[l], b = xs[t * L + l];
              acc[l] = wrap(op === 'add' ? a + b : op === 'mul' ? a * b : op === 'max' ? (a > b ? a : b) : a < b ? a : b);
              want[t * L + l] = acc[l];
            }
          }
          expect(Array.from(ys.data as BigInt64Array), `${dt} ${op} ${reverse}`).toEqual(want);
          expect(Array.from(c.data as BigInt64Array)).toEqual(acc);
          c.dispose();
          ys.dispose();
        }
      }
    }
  });
  it('int8 / int16 / uint8 / uint16 / uint32 add and mul wrap at the type width', () => {
    const cases: [string, number[], number[], (v: number) => number][] = [
      ['int8', [100, -100, 7], [100, -100, 127], (v) => ((v << 24) >> 24)],
      ['uint8', [200, 3, 255], [100, 255, 255], (v) => v & 0xff],
      ['int16', [30000, -30000, 181], [30000, -30000, 181], (v) => ((v << 16) >> 16)],
      ['uint16', [65535, 2, 300], [1, 65535, 300], (v) => v & 0xffff],
      ['uint32', [4294967295, 65536, 3], [1, 65536, 4294967295], (v) => v >>> 0],
    ];
    for (const [dt, a, b, wrap] of cases) {
      const [s] = ek.combine.add({ dtype: dt, shape: [3], data: a }, { dtype: dt, shape: [3], data: b });
      expect(Array.from(s.data as Int32Array), `${dt} add`).toEqual(a.map((x, i) => wrap(x + b[i])));
      const [m] = ek.combine.mul({ dtype: dt, shape: [3], data: a }, { dtype: dt, shape: [3], data: b });
      expect(Array.from(m.data as Int32Array), `${dt} mul`).toEqual(a.map((x, i) => wrap(Math.imul(x, b[i]))));
      s.dispose();
      m.dispose();
    }
  });
  it('bfloat16 / float16 (fused): combined in float32, rounded once; a scan equals the float32 steps rounded each step', () => {
    const r = rng(72);
    const N = 9, L = 4;
    const xsBits = Array.from({ length: N * L }, () => bf16((r() - 0.5) * 10));
    const initBits = Array.from({ length: L }, () => bf16(r()));
    for (const op of ['add', 'mul', 'max', 'logaddexp'] as const) {
      const [c, ys] = ek.scan(ek.combine[op], { dtype: 'bfloat16', shape: [L], data: initBits }, { dtype: 'bfloat16', shape: [N, L], data: xsBits }) as [Tensor, Tensor];
      const acc = initBits.map(fromBf16);
      for (let s = 0; s < N; s++) {
        for (let l = 0; l < L; l++) {
          const a = acc[l], b = fromBf16(xsBits[s * L + l]);
          const v = op === 'add' ? a + b : op === 'mul' ? a * b : op === 'max' ? Math.max(a, b) : logaddexp(a, b);
          acc[l] = fromBf16(bf16(Math.fround(v)));
          expect((ys.data as Uint16Array)[s * L + l], `${op} step ${s} lane ${l}`).toBe(bf16(acc[l]));
        }
      }
      c.dispose();
      ys.dispose();
    }
    // float16: 1 + 2^-11 is the tie between 1 and 1 + 2^-10 and rounds to even (1); 1 + 2^-10 is exact
    const [s] = ek.combine.add({ dtype: 'float16', shape: [2], data: [0x3c00, 0x3c00] }, { dtype: 'float16', shape: [2], data: [0x1000, 0x1400] });
    expect(Array.from(s.data as Uint16Array)).toEqual([0x3c00, 0x3c01]);
    s.dispose();
  });
});

type Half = 'float16' | 'bfloat16';
const HALVES: Half[] = ['float16', 'bfloat16'];

/** Half bit patterns suited to an op, with ±0, ±Inf, NaN, subnormals and values near overflow among them. */
function halfValues(op: ScanOp, dtype: Half, n: number, seed: number, specials = true): number[] {
  const r = rng(seed);
  const enc = dtype === 'float16' ? toF16Bits : toBf16Bits;
  const big = dtype === 'float16' ? 60000 : 3e38, tiny = dtype === 'float16' ? 2 ** -20 : 2 ** -130;
  const special = [0, -0, Infinity, -Infinity, NaN, tiny, -tiny, big, -big];
  return Array.from({ length: n }, () => {
    if (specials && r() < 0.06) return enc(special[Math.floor(r() * special.length)]);
    if (op === 'mul') return enc(0.9 + 0.2 * r());
    return enc((r() - 0.5) * (r() < 0.5 ? 8 : 2000));
  });
}

/** Half bit patterns equal, NaN for NaN (payloads aside); logaddexp: at most one code apart, or 2^-20 near 0 (float32 polynomials against float64). */
function expectHalves(dtype: Half, op: ScanOp, got: ArrayLike<number>, want: ArrayLike<number>, label: string): void {
  expect(got.length, `${label} length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const g = fromHalfBits(dtype, got[i]), w = fromHalfBits(dtype, want[i]);
    if (Number.isNaN(w) || Number.isNaN(g)) {
      if (!(Number.isNaN(w) && Number.isNaN(g))) expect.fail(`${label}[${i}]: got ${g} (0x${got[i].toString(16)}), want ${w}`);
      continue;
    }
    if (got[i] === want[i]) continue;
    // adjacent codes: same sign, magnitudes one apart (Inf is the code after the largest finite);
    // or a result near 0 within float32's absolute error there (the kernel drops e^d < e^-86:
    // logaddexp(0, -88) is 6e-39 in float64 and 0 in the kernel, see expNegF32x4)
    const near = op === 'logaddexp' && (((got[i] & 0x8000) === (want[i] & 0x8000) && Math.abs((got[i] & 0x7fff) - (want[i] & 0x7fff)) === 1) || Math.abs(g - w) <= 2 ** -20);
    if (!near) expect.fail(`${label}[${i}]: got ${g} (0x${got[i].toString(16)}), want ${w} (0x${want[i].toString(16)})`);
  }
}

function checkHalf(op: ScanOp, dtype: Half, shape: number[], dim: number, reverse: boolean, seed: number, label: string): void {
  const d = dim < 0 ? dim + shape.length : dim;
  const xs = halfValues(op, dtype, sizeOf(shape), seed);
  const cshape = shape.filter((_, i) => i !== d);
  const init = halfValues(op, dtype, sizeOf(cshape), seed + 0.5);
  const x = ek.tensor(dtype, shape, xs), c = ek.tensor(dtype, cshape, init);
  const xBefore = x.bytes(), cBefore = c.bytes();
  const live = ek.stats().tensorsLive;
  const [last, ys] = ek.scan(ek.combine[op], c, x, { dim, reverse }) as [Tensor, Tensor];
  expect(ek.stats().tensorsLive, `${label} live`).toBe(live + 2);
  expect(ys.dtype).toBe(dtype);
  expect([...ys.shape]).toEqual(shape);
  expect([...last.shape]).toEqual(cshape);
  const want = refScanHalf(op, dtype, xs, shape, d, reverse, init);
  expectHalves(dtype, op, ys.data as Uint16Array, want.ys, `${label} ys`);
  expectHalves(dtype, op, last.data as Uint16Array, want.last, `${label} last`);
  expect(x.bytes(), `${label} xs unchanged`).toEqual(xBefore);
  expect(c.bytes(), `${label} init unchanged`).toEqual(cBefore);
  for (const t of [x, c, last, ys]) t.dispose();
}

describe('scan: float16 / bfloat16 fused (every step rounded to the storage type)', () => {
  it('every combiner, reverse; innermost runs of length 0, 1, tails 2..17, 31, 64 and 1001', () => {
    let seed = 3000;
    for (const op of OPS) {
      for (const dtype of HALVES) {
        for (const reverse of [false, true]) {
          for (const n of [0, 1, ...Array.from({ length: 16 }, (_, i) => i + 2), 31, 64, 1001]) {
            checkHalf(op, dtype, [2, n], 1, reverse, seed++, `${op} ${dtype} [2,${n}] dim 1 rev ${reverse}`);
          }
        }
      }
    }
  });

  it('every combiner, reverse; lanes 1..17 (chunked rows below 8, vectors and tails from 8) and long scans', () => {
    let seed = 4000;
    for (const op of OPS) {
      for (const dtype of HALVES) {
        for (const reverse of [false, true]) {
          for (let lanes = 1; lanes <= 17; lanes++) {
            for (const n of [0, 1, 3, 6]) checkHalf(op, dtype, [n, lanes], 0, reverse, seed++, `${op} ${dtype} [${n},${lanes}] dim 0 rev ${reverse}`);
          }
          checkHalf(op, dtype, [300, 6], 0, reverse, seed++, `${op} ${dtype} [300,6] dim 0`);
          checkHalf(op, dtype, [700, 3], 0, reverse, seed++, `${op} ${dtype} [700,3] dim 0 (several chunks)`);
          checkHalf(op, dtype, [3, 5, 4, 9], 1, reverse, seed++, `${op} ${dtype} [3,5,4,9] dim 1`);
        }
      }
    }
  });

  it('random ranks 1..4, shapes and dims (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...OPS), fc.constantFrom(...HALVES), fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 4 }),
        fc.nat(), fc.boolean(), fc.integer({ min: 1, max: 1 << 30 }),
        (op, dtype, shape, dimSeed, reverse, seed) => {
          const r = shape.length;
          const dim = (dimSeed % (2 * r)) - r;
          checkHalf(op, dtype, shape, dim, reverse, seed, `${op} ${dtype} ${JSON.stringify(shape)} dim ${dim} rev ${reverse}`);
        },
      ),
      { seed: 11, numRuns: 200 },
    );
  });

  it('float16 sums round every step: 3,000 ones reach 2,048 and stay there (innermost and lanes); 65,504 + 16 is Inf', () => {
    for (const [shape, dim] of [[[3000], 0], [[3000, 9], 0], [[2, 3000], 1]] as [number[], number][]) {
      const x = ek.tensor('float16', shape, new Array(sizeOf(shape)).fill(0x3c00));
      const c = ek.tensor('float16', shape.filter((_, i) => i !== dim));
      const [last, ys] = ek.scan(ek.combine.add, c, x, { dim }) as [Tensor, Tensor];
      expect(new Set(last.data as Uint16Array), JSON.stringify(shape)).toEqual(new Set([toF16Bits(2048)]));
      expect((ys.data as Uint16Array)[sizeOf(shape) - 1]).toBe(toF16Bits(2048));
      for (const t of [x, c, last, ys]) t.dispose();
    }
    const [s] = ek.combine.add({ dtype: 'float16', shape: [3], data: [toF16Bits(65504), toF16Bits(65504), toF16Bits(-65504)] }, { dtype: 'float16', shape: [3], data: [toF16Bits(15.99), toF16Bits(16), toF16Bits(-16)] });
    expect(Array.from(s.data as Uint16Array)).toEqual([toF16Bits(65504), 0x7c00, 0xfc00]);
    s.dispose();
  });

  // The kernel's fast paths (a one-lane add band holding the carry as c + K, and the float16
  // lanes' rounding in float32) must equal rounding at every step exactly, so the data here is
  // made to hit their edges: sums stuck at a power of two, crossing binades both ways and zero,
  // exact ties, −0 results (−0 + −0, negative values rounding to zero), subnormals, overflow.
  const EDGE_KINDS = ['stuck', 'ints', 'ties', 'wide', 'tiny', 'specials'] as const;
  function edgeValues(kind: (typeof EDGE_KINDS)[number], dtype: Half, n: number, seed: number): number[] {
    const r = rng(seed);
    const enc = dtype === 'float16' ? toF16Bits : toBf16Bits;
    const p = dtype === 'float16' ? 11 : 8; // significand bits
    const emin = dtype === 'float16' ? -14 : -126, emax = dtype === 'float16' ? 15 : 127;
    const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)];
    return Array.from({ length: n }, () => {
      switch (kind) {
        case 'stuck': return enc(0.5 + 0.5 * r()); // float16 sums stop at 2,048, bfloat16's at 256
        case 'ints': return enc(pick([1, -1, 2, -2, 0, -0, 0.5, -0.5, 3, -3]));
        case 'ties': { // halves and quarters of the quanta around 2^(p-1) ... 2^p
          const q = 2 ** Math.floor(r() * 3 - 1);
          return enc(pick([1, -1]) * q * pick([0.5, 1, 1.5, 2.5, 0.25, 0.75]) * (r() < 0.1 ? 2 ** (p - 1) : 1));
        }
        case 'wide': return enc(pick([1, -1]) * (1 + r()) * 2 ** Math.floor(emin + r() * 0.6 * (emax - emin))); // sums wander over binades without overflowing
        case 'tiny': return enc(pick([1, -1]) * pick([0, 1, 2, 3, 0.5, 0.25]) * 2 ** (emin - p + 1 + Math.floor(r() * 3)));
        default: return r() < 0.2 ? enc(pick([0, -0, Infinity, -Infinity, NaN, 2 ** emax, -(2 ** emax)])) : enc((r() - 0.5) * 4);
      }
    });
  }

  it('add and mul at the edges of the fast paths (one lane, lanes of 2, 3, 4, 5, 7, 8 and 13), against rounding at every step', () => {
    let seed = 7000;
    const shapes = [[[6000], 0], [[2, 3000], 1], [[1000, 2], 0], [[1500, 3], 0], [[700, 4], 0], [[600, 5], 0], [[500, 7], 0], [[700, 8], 0], [[500, 13], 0]] as [number[], number][];
    for (const dtype of HALVES) {
      for (const kind of EDGE_KINDS) {
        for (const [shape, dim] of shapes) {
          for (const op of ['add', 'mul'] as const) {
            if (op === 'mul' && shape.length === 1) continue; // one-lane products take the scalar path
            for (const reverse of [false, true]) {
              const label = `${op} ${dtype} ${kind} ${JSON.stringify(shape)} dim ${dim} rev ${reverse}`;
              const xs = edgeValues(kind, dtype, sizeOf(shape), seed++);
              const cshape = shape.filter((_, i) => i !== dim);
              const init = kind === 'stuck' ? new Array(sizeOf(cshape)).fill(0) : edgeValues(kind, dtype, sizeOf(cshape), seed++);
              const x = ek.tensor(dtype, shape, xs), c = ek.tensor(dtype, cshape, init);
              const [last, ys] = ek.scan(ek.combine[op], c, x, { dim, reverse }) as [Tensor, Tensor];
              const want = refScanHalf(op, dtype, xs, shape, dim, reverse, init);
              expectHalves(dtype, op, ys.data as Uint16Array, want.ys, `${label} ys`);
              expectHalves(dtype, op, last.data as Uint16Array, want.last, `${label} last`);
              for (const t of [x, c, last, ys]) t.dispose();
            }
          }
        }
      }
    }
  });

  it('add over 2–7 lanes keeps a band per lane: binade crossings, ties, a tie past the largest finite to Inf, Inf that stays', () => {
    // each lane its own walk, so that lanes leave their bands at different steps (one lane out
    // rounds all) and the bands are reset from each lane's own binade
    for (const dtype of HALVES) {
      const f16 = dtype === 'float16', enc = f16 ? toF16Bits : toBf16Bits, p = f16 ? 11 : 8;
      const top = f16 ? 2 ** 15 : 2 ** 127, tq = top * 2 ** (1 - p); // the top binade and its quantum
      const climb = 2 ** (p - 1) - 1; // steps of tq from top to the largest finite value
      const N = 1100;
      const walks: [number, (t: number) => number][] = [
        [top, (t) => (t < climb ? tq : t === climb ? tq / 2 : -3 * tq)], // up to the largest finite, a tie to Inf, then Inf − x
        [2 ** p - 8, (t) => (t < 600 ? 1 : -1)], // up to 2^p by ones, stuck there by ties, then down across it
        [-1, (t) => -3 * 2 ** -p], // negative, across binades downwards
        [2 ** -3, (t) => (t % 3 === 0 ? -(2 ** -6) : 2 ** -7 + (t % 2) * 2 ** (-3 - p))], // around 2^-3, ties included
        [3, (t) => ((t * 7919) % 13) - 6], // small integers through zero
        [-(2 ** -12), (t) => (t % 5 === 0 ? 2 ** -11 : -(2 ** -13))], // through zero near the subnormals
        [0.75, (t) => (t % 200 === 0 ? 1000 : -0.125)], // jumps up by binades, then down
      ];
      for (let lanes = 2; lanes <= 7; lanes++) {
        for (const reverse of [false, true]) {
          const xs: number[] = [];
          for (let t = 0; t < N; t++) for (let i = 0; i < lanes; i++) xs.push(enc(walks[i][1](reverse ? N - 1 - t : t)));
          const init = walks.slice(0, lanes).map(([v]) => enc(v));
          const x = ek.tensor(dtype, [N, lanes], xs), c = ek.tensor(dtype, [lanes], init);
          const [last, ys] = ek.scan(ek.combine.add, c, x, { reverse }) as [Tensor, Tensor];
          const want = refScanHalf('add', dtype, xs, [N, lanes], 0, reverse, init);
          const label = `${dtype} lanes ${lanes} rev ${reverse}`;
          expectHalves(dtype, 'add', ys.data as Uint16Array, want.ys, `${label} ys`);
          expectHalves(dtype, 'add', last.data as Uint16Array, want.last, `${label} last`);
          if (f16) expect((last.data as Uint16Array)[0], `${label}: lane 0 ends at Inf`).toBe(0x7c00);
          for (const t of [x, c, last, ys]) t.dispose();
        }
      }
    }
  });

  it('the sign of a zero result survives the fast paths: -0 + -0 is -0, a negative product rounding to zero is -0', () => {
    for (const dtype of HALVES) {
      const enc = dtype === 'float16' ? toF16Bits : toBf16Bits;
      const tiny = dtype === 'float16' ? 2 ** -24 : 2 ** -133;
      for (const lanes of [1, 8]) {
        // add: −0 throughout, then a subnormal step and back to −0 by its negation
        const xs = [-0, -0, -tiny, tiny, -0, -0].flatMap((v) => new Array(lanes).fill(enc(v)));
        const x = ek.tensor(dtype, [6, lanes], xs), c = ek.tensor(dtype, [lanes], new Array(lanes).fill(0x8000));
        const [, ys] = ek.scan(ek.combine.add, c, x) as [Tensor, Tensor];
        expect(Array.from(ys.data as Uint16Array).filter((_, i) => i % lanes === 0), `${dtype} add lanes ${lanes}`)
          .toEqual([0x8000, 0x8000, enc(-tiny), 0, 0, 0]);
        for (const t of [x, c, ys]) t.dispose();
      }
      // mul over 8 lanes (the vector path): tiny · −tiny rounds to −0
      const x = ek.tensor(dtype, [2, 8], new Array(16).fill(enc(-tiny))), c = ek.tensor(dtype, [8], new Array(8).fill(enc(tiny)));
      const [last, ys] = ek.scan(ek.combine.mul, c, x) as [Tensor, Tensor];
      expect(Array.from(ys.data as Uint16Array).slice(0, 8), `${dtype} mul`).toEqual(new Array(8).fill(0x8000));
      expect(Array.from(last.data as Uint16Array), `${dtype} mul last`).toEqual(new Array(8).fill(0));
      for (const t of [x, c, last, ys]) t.dispose();
    }
  });

  it('fused equals the callable combiner run step by step, bit for bit (logaddexp and NaN bits included)', () => {
    let seed = 5000;
    for (const op of OPS) {
      for (const dtype of HALVES) {
        for (const [shape, dim] of [[[9, 7], 0], [[4, 3, 5], 1], [[3, 11], 1], [[13], 0], [[5, 19], 0], [[2, 9, 9], 1]] as [number[], number][]) {
          for (const reverse of [false, true]) {
            const x = ek.tensor(dtype, shape, halfValues(op, dtype, sizeOf(shape), seed++));
            const cshape = shape.filter((_, i) => i !== dim);
            const c = ek.tensor(dtype, cshape, halfValues(op, dtype, sizeOf(cshape), seed++));
            const [fl, fy] = ek.scan(ek.combine[op], c, x, { dim, reverse }) as [Tensor, Tensor];
            const [sl, sy] = ek.scan((a: Tensor, b: Tensor) => ek.combine[op](a, b), c, x, { dim, reverse }) as [Tensor, Tensor];
            const label = `${op} ${dtype} ${JSON.stringify(shape)} dim ${dim} rev ${reverse}`;
            expect(fy.bytes(), label).toEqual(sy.bytes());
            expect(fl.bytes(), label).toEqual(sl.bytes());
            for (const t of [x, c, fl, fy, sl, sy]) t.dispose();
          }
        }
      }
    }
  });

  it('the combiners called directly broadcast on the host with the same rounding', () => {
    for (const dtype of HALVES) {
      for (const op of OPS) {
        const a = halfValues(op, dtype, 6, 61, false), b = halfValues(op, dtype, 3, 62, false);
        const [s] = ek.combine[op]({ dtype, shape: [2, 3], data: a }, { dtype, shape: [3], data: b });
        const want = a.map((v, i) => refScanHalf(op, dtype, [b[i % 3]], [1], 0, false, [v]).last[0]);
        expectHalves(dtype, op, s.data as Uint16Array, want, `${op} ${dtype}`);
        s.dispose();
      }
    }
  });
});

describe('scan: tensorsLive after = before + returned', () => {
  it('leaked temporaries of the combine function and every slice and carry are released', () => {
    const live = ek.stats().tensorsLive;
    const x = { dtype: 'float32', shape: [5, 3], data: new Float32Array(15).fill(1) };
    const [c, ys] = ek.scan((carry: Tensor[], s: Tensor) => {
      ek.tensor('float32', [7]); // never disposed by the combine function
      const n = ek.combine.add(carry[0], s); // two tensors: n[1] is not returned
      return [[n[0]], { a: n[1], b: ek.tensor('float32', [2]) }];
    }, [ek.tensor('float32', [3])], x);
    expect(Array.from(c[0].data)).toEqual([5, 5, 5]);
    expect(Array.from(ys.a.data)).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5]);
    expect(ek.stats().tensorsLive).toBe(live + 1 + 3); // the init tensor made inline, + c[0], ys.a, ys.b
  });
});

describe('scan: ownership of what the combine function returns', () => {
  it('a tensor captured from outside and returned as nextCarry / y is copied, never taken or disposed', () => {
    const captured = ek.tensor('float32', [2], [7, 8]);
    const live = ek.stats().tensorsLive;
    const [c, ys] = ek.scan(() => [captured, { dtype: 'float32', shape: [2], data: [1, 2] }], ek.tensor('float32', [2]), ek.tensor('float32', [3, 2]));
    expect(captured.disposed).toBe(false);
    expect(Array.from(captured.data as Float32Array)).toEqual([7, 8]);
    expect(c).not.toBe(captured);
    expect(Array.from(c.data)).toEqual([7, 8]);
    expect(Array.from(ys.data)).toEqual([1, 2, 1, 2, 1, 2]);
    expect(ek.stats().tensorsLive).toBe(live + 2 + 2); // two inline inputs + c, ys
  });

  it('a view (a KVCache\'s keys(l)) returned as nextCarry is copied, never taken or disposed', () => {
    const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 2, capacity: 2 });
    const view = cache.keys(0);
    const live = ek.stats().tensorsLive;
    const [c, ys] = ek.scan(() => [view, ek.tensor('float32', [1])], ek.tensor('float32', [1, 1, 2, 2]), ek.tensor('float32', [3, 1]));
    expect(c).not.toBe(view);
    expect(view.disposed).toBe(false);
    expect(cache.keys(0)).toBe(view);
    expect(ek.stats().tensorsLive).toBe(live + 2 + 2); // two inline inputs + c, ys
    const row = ek.tensor('float32', [1, 1, 1, 2], [5, 6]);
    cache.append(0, row, row);
    expect(Array.from(c.data as Float32Array)).toEqual([0, 0, 0, 0]); // the final carry is not the cache
    for (const t of [c, ys, row]) t.dispose();
    cache.dispose();
  });

  it('plain outputs are converted; a plain output viewing a fresh tensor of the call is copied before allocating', () => {
    const [c, ys] = ek.scan((carry: Tensor, x: Tensor) => {
      const t = ek.tensor('float64', [2], [(carry.data as Float64Array)[0] + (x.data as Float64Array)[0], 0]);
      return [{ dtype: 'float64', shape: [2], data: t.data }, { type: 'float64', dims: [], data: [(x.data as Float64Array)[1]] }];
    }, { dtype: 'float64', shape: [2], data: [0, 0] }, { dtype: 'float64', shape: [4, 2], data: [1, 10, 2, 20, 3, 30, 4, 40] });
    expect(Array.from(c.data)).toEqual([10, 0]);
    expect([...ys.shape]).toEqual([4]);
    expect(Array.from(ys.data)).toEqual([10, 20, 30, 40]);
  });
});

describe('scan: nested scans', () => {
  it('a combine function may itself scan; only the returned tensors survive', () => {
    const live = ek.stats().tensorsLive;
    const x = { dtype: 'int32', shape: [3, 4], data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] };
    const [c, ys] = ek.scan((carry: Tensor, row: Tensor) => {
      const [rowSum, prefix] = ek.scan(ek.combine.add, ek.tensor('int32', []), row); // fused inner scan
      const [next] = ek.combine.add(carry, rowSum);
      return [next, prefix];
    }, ek.tensor('int32', []), x);
    expect(Array.from(c.data)).toEqual([78]);
    expect(Array.from(ys.data)).toEqual([1, 3, 6, 10, 5, 11, 18, 26, 9, 19, 30, 42]);
    expect(ek.stats().tensorsLive).toBe(live + 1 + 2); // the inline init + c, ys
  });
});

describe('linearScan', () => {
  it('h_t = a_t * h_{t-1} + b_t against the reference, every dim, reverse, tails', () => {
    let seed = 77;
    for (const dtype of ['float32', 'float64'] as const) {
      for (const [shape, dim] of [[[5], 0], [[0, 3], 0], [[17, 3], 0], [[4, 13], 1], [[3, 4, 9], 1], [[2, 6, 5], -1], [[64, 8], 0]] as [number[], number][]) {
        for (const reverse of [false, true]) {
          const d = dim < 0 ? dim + shape.length : dim;
          const n = sizeOf(shape), hshape = shape.filter((_, i) => i !== d);
          const a = values('mul', dtype, n, seed++), b = values('add', dtype, n, seed++), h0 = values('add', dtype, sizeOf(hshape), seed++);
          const live = ek.stats().tensorsLive;
          const [last, hs] = ek.linearScan({ dtype, shape, data: a }, { dtype, shape, data: b }, { dtype, shape: hshape, data: h0 }, { dim, reverse });
          expect(ek.stats().tensorsLive).toBe(live + 2);
          const want = refLinearScan(dtype, a, b, h0, shape, d, reverse);
          expect(Array.from(hs.data as ArrayLike<number>)).toEqual(want.hs);
          expect(Array.from(last.data as ArrayLike<number>)).toEqual(want.last);
          last.dispose();
          hs.dispose();
        }
      }
    }
  });

  it('equals the same recurrence written as a JS combine over a pytree of xs', () => {
    const a = ek.tensor('float32', [6, 5], values('mul', 'float32', 30, 3));
    const b = ek.tensor('float32', [6, 5], values('add', 'float32', 30, 4));
    const h0 = ek.tensor('float32', [5], values('add', 'float32', 5, 5));
    const [l1, h1] = ek.linearScan(a, b, h0);
    const [l2, h2] = ek.scan((h: Tensor, x: [Tensor, Tensor]) => {
      const out = ek.tensor('float32', [5]);
      const hd = h.data as Float32Array, ad = x[0].data as Float32Array, bd = x[1].data as Float32Array, od = out.data as Float32Array;
      for (let i = 0; i < 5; i++) od[i] = Math.fround(ad[i] * hd[i]) + bd[i];
      return [out, ek.tensor('float32', [5], od.slice())] as const;
    }, h0, [a, b]);
    expect(Array.from(h1.data as Float32Array)).toEqual(Array.from(h2.data));
    expect(Array.from(l1.data as Float32Array)).toEqual(Array.from(l2.data));
  });

  it('errors', () => {
    const a = ek.tensor('float32', [4, 2]);
    expectKernelError(() => ek.linearScan(a, ek.tensor('float32', [4, 3]), ek.tensor('float32', [2])), 'INVALID_SHAPE', /linearScan b: expected shape \[4,2\]/);
    expectKernelError(() => ek.linearScan(a, a, ek.tensor('float32', [4])), 'INVALID_SHAPE', /linearScan h0: expected shape \[2\]/);
    expectKernelError(() => ek.linearScan(a, a, ek.tensor('float64', [2])), 'INVALID_DTYPE', /h0: expected dtype float32/);
    expectKernelError(() => ek.linearScan(ek.tensor('int32', [2]), ek.tensor('int32', [2]), ek.tensor('int32', [])), 'INVALID_DTYPE', /float32 or float64, got int32/);
    expectKernelError(() => ek.linearScan(a, a, ek.tensor('float32', [2]), { dim: 3 }), 'INVALID_ARGUMENT', /dim 3 is out of range/);
    // its options are dim and reverse only, and the message says so (it listed length too)
    expectKernelError(() => ek.linearScan(a, a, ek.tensor('float32', [2]), { length: 4 } as never), 'INVALID_ARGUMENT', /unknown option "length"; expected dim, reverse$/);
    expectKernelError(() => ek.linearScan(a, a, ek.tensor('float32', [2]), { axis: 0 } as never), 'INVALID_ARGUMENT', /unknown option "axis"; expected dim, reverse$/);
  });
});


describe('scan: package objects used inside the combine function', () => {
  it('a KVCache created inside a step keeps its storage, and a cache attended there its rows (scan releases only temporaries)', () => {
    const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 8 });
    const k = ek.tensor('float32', [1, 1, 4, 4], Array.from({ length: 16 }, (_, i) => i / 16));
    cache.append(0, k, k);
    const q = ek.tensor('float32', [1, 1, 4, 4], new Float32Array(16).fill(0.5));
    const ref = cache.attend(0, q, { impl: 'builtin' });
    const want = Array.from(ref.data as Float32Array);
    ref.dispose();
    let inner: ReturnType<Kernels['kvCache']> | undefined;
    const live = ek.stats().tensorsLive;
    const [c, ys] = ek.scan((carry: Tensor) => {
      // (the flash kernel's scratch for four query rows may grow here: instance-owned, kept)
      const y = cache.attend(0, q, { impl: 'TRT_Attention' });
      inner ??= ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 4 });
      return [ek.tensor('float32', [1], carry.data as Float32Array), y];
    }, ek.tensor('float32', [1]), ek.tensor('float32', [2, 1]));
    // + the inline init and xs, c, ys, inner's 2 tensors (storage, lengths block)
    expect(ek.stats().tensorsLive).toBe(live + 2 + 2 + 2);
    // whatever takes the blocks the scan released is never written by the caches
    const fills = Array.from({ length: 64 }, () => ek.tensor('float32', [4], [7, 7, 7, 7]));
    const row = ek.tensor('float32', [1, 1, 1, 4], [9, 9, 9, 9]);
    inner!.append(0, row, row);
    const y = cache.attend(0, q, { impl: 'TRT_Attention' });
    for (const f of fills) expect(Array.from(f.data as Float32Array)).toEqual([7, 7, 7, 7]);
    expect(Array.from(inner!.keys(0).data as Float32Array).slice(0, 4)).toEqual([9, 9, 9, 9]);
    for (const got of [Array.from(y.data as Float32Array), Array.from(ys.data as Float32Array).slice(16)]) {
      got.forEach((v, i) => expect(v).toBeCloseTo(want[i], 5));
    }
    for (const t of [...fills, row, y, c, ys, k, q]) t.dispose();
    inner!.dispose();
    cache.dispose();
  });
});
