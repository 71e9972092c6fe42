// Unit tests of the scan kernels on raw memory: values for small exact inputs, and no byte
// written outside the outputs for every tail length (guard bytes around every output).
import { scanF32, scanI32, cumsumI64, scanHalf, scanHalfScratchBytes, linearScanF32 } from '../scan';

const GUARD: usize = 32;
const MARK: u8 = 0xab;

/** An output block of `bytes` with GUARD marked bytes on both sides; returns its start. */
function guarded(bytes: usize): usize {
  const p = heap.alloc(bytes + 2 * GUARD + 16);
  const start = (p + GUARD + 15) & ~<usize>15;
  memory.fill(start - GUARD, MARK, GUARD);
  memory.fill(start, 0, bytes);
  memory.fill(start + bytes, MARK, GUARD);
  return start;
}

function guardsIntact(start: usize, bytes: usize): bool {
  for (let i: usize = 1; i <= GUARD; i++) if (load<u8>(start - i) != MARK) return false;
  for (let i: usize = 0; i < GUARD; i++) if (load<u8>(start + bytes + i) != MARK) return false;
  return true;
}

describe('scanF32 add, innermost runs', () => {
  it('writes the exact inclusive / exclusive, forward / reverse sums and nothing else, N = 0..33', () => {
    for (let n = 0; n <= 33; n++) {
      for (let flags = 0; flags < 4; flags++) {
        const rev = (flags & 1) != 0, excl = (flags & 2) != 0;
        const x = heap.alloc(<usize>n * 4 + 16);
        for (let i = 0; i < n; i++) store<f32>(x + <usize>i * 4, <f32>(i + 1));
        const y = guarded(<usize>n * 4), last = guarded(4);
        scanF32(x, y, 0, last, 1, n, 1, 0, flags);
        expect<bool>(guardsIntact(y, <usize>n * 4)).toBe(true);
        expect<bool>(guardsIntact(last, 4)).toBe(true);
        let c: f32 = 0;
        for (let s = 0; s < n; s++) {
          const t = rev ? n - 1 - s : s;
          const nc = c + <f32>(t + 1);
          expect<f32>(load<f32>(y + <usize>t * 4)).toBe(excl ? c : nc);
          c = nc;
        }
        expect<f32>(load<f32>(last)).toBe(c);
      }
    }
  });
});

describe('scanI32 max, lanes', () => {
  it('row by row across I = 1..9 lanes, O = 2, N = 0..3, with an init, nothing written outside', () => {
    for (let I = 1; I <= 9; I++) {
      for (let n = 0; n <= 3; n++) {
        const count = <usize>(2 * n * I);
        const x = heap.alloc(count * 4 + 16), init = heap.alloc(<usize>(2 * I) * 4 + 16);
        for (let k: usize = 0; k < count; k++) store<i32>(x + k * 4, <i32>((k * 7) % 11) - 5);
        for (let k = 0; k < 2 * I; k++) store<i32>(init + <usize>k * 4, -3);
        const y = guarded(count * 4), last = guarded(<usize>(2 * I) * 4);
        scanI32(x, y, init, last, 2, n, I, 2, 0);
        expect<bool>(guardsIntact(y, count * 4)).toBe(true);
        expect<bool>(guardsIntact(last, <usize>(2 * I) * 4)).toBe(true);
        for (let o = 0; o < 2; o++) {
          for (let i = 0; i < I; i++) {
            let c: i32 = -3;
            for (let t = 0; t < n; t++) {
              const k = <usize>((o * n + t) * I + i) * 4;
              c = max<i32>(c, load<i32>(x + k));
              expect<i32>(load<i32>(y + k)).toBe(c);
            }
            expect<i32>(load<i32>(last + <usize>(o * I + i) * 4)).toBe(c);
          }
        }
      }
    }
  });
});

describe('cumsumI64, scanHalf, linearScanF32', () => {
  it('stay inside their outputs for every tail length', () => {
    for (let n = 0; n <= 9; n++) {
      for (let I = 1; I <= 19; I += I < 3 ? 1 : 5) { // 1, 2, 3, 8, 13, 18: chunked rows, SIMD rows with tails
        const count = <usize>(n * I);
        const x = heap.alloc(count * 8 + 16);
        memory.fill(x, 1, count * 8);
        const y = guarded(count * 8);
        cumsumI64(x, y, 1, n, I, 0);
        expect<bool>(guardsIntact(y, count * 8)).toBe(true);
        const carry = heap.alloc(scanHalfScratchBytes(I));
        for (let op = 0; op <= 4; op++) {
          for (let flags = 0; flags < 8; flags++) {
            const h = guarded(count * 2), hl = guarded(<usize>I * 2);
            scanHalf(x, h, flags & 1 ? x : 0, hl, carry, 1, n, I, op, flags);
            expect<bool>(guardsIntact(h, count * 2)).toBe(true);
            expect<bool>(guardsIntact(hl, <usize>I * 2)).toBe(true);
          }
        }
        const hs = guarded(count * 4), last = guarded(<usize>I * 4), h0 = heap.alloc(<usize>I * 4 + 16);
        memory.fill(h0, 0, <usize>I * 4);
        linearScanF32(x, x, h0, hs, last, 1, n, I, 0);
        expect<bool>(guardsIntact(hs, count * 4)).toBe(true);
        expect<bool>(guardsIntact(last, <usize>I * 4)).toBe(true);
      }
    }
  });

  it('int64 sums wrap', () => {
    const x = heap.alloc(32), y = guarded(16);
    store<i64>(x, i64.MAX_VALUE);
    store<i64>(x, 2, 8);
    cumsumI64(x, y, 1, 2, 1, 0);
    expect<i64>(load<i64>(y)).toBe(i64.MAX_VALUE);
    expect<i64>(load<i64>(y, 8)).toBe(i64.MIN_VALUE + 1);
  });
});
