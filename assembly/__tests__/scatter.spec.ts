// Unit tests of the scatter kernels on raw memory: exact bytes written, nothing outside.
import { scatterRows, scatterPackedRows, scatterRowsBits } from '../scatter';

function fill(p: usize, n: i32, start: u8): void {
  for (let i = 0; i < n; i++) store<u8>(p + <usize>i, <u8>(start + <u8>i));
}

describe('scatterRows', () => {
  it('copies one contiguous run per (b, p) in linear mode', () => {
    // cache (B=1, P=2, N=4, R=2 bytes), update (1, 2, S=2, 2) written at position 1.
    const cache = heap.alloc(16), upd = heap.alloc(8), wi = heap.alloc(4);
    memory.fill(cache, 0, 16);
    fill(upd, 8, 1);
    store<i32>(wi, 1);
    scatterRows(cache, upd, 1, 2, 4, 2, 2, wi, 0, false);
    const want: u8[] = [0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0];
    for (let i = 0; i < 16; i++) expect<u8>(load<u8>(cache + <usize>i)).toBe(want[i]);
  });

  it('wraps once in circular mode', () => {
    const cache = heap.alloc(4), upd = heap.alloc(3), wi = heap.alloc(4);
    memory.fill(cache, 0, 4);
    fill(upd, 3, 7);
    store<i32>(wi, 3);
    scatterRows(cache, upd, 1, 1, 4, 3, 1, wi, 0, true);
    expect<u8>(load<u8>(cache)).toBe(8);
    expect<u8>(load<u8>(cache + 1)).toBe(9);
    expect<u8>(load<u8>(cache + 2)).toBe(0);
    expect<u8>(load<u8>(cache + 3)).toBe(7);
  });

  it('writes only each entry’s valid rows when given cumulative lengths', () => {
    const cache = heap.alloc(8), upd = heap.alloc(6), lens = heap.alloc(12);
    memory.fill(cache, 0, 8);
    fill(upd, 6, 1);
    store<i32>(lens, 0); store<i32>(lens, 1, 4); store<i32>(lens, 3, 8);
    scatterRows(cache, upd, 2, 1, 4, 3, 1, 0, lens, false);
    const want: u8[] = [1, 0, 0, 0, 4, 5, 0, 0]; // entry 1 has 3 − 1 = 2 valid rows
    for (let i = 0; i < 8; i++) expect<u8>(load<u8>(cache + <usize>i)).toBe(want[i]);
  });
});

describe('scatterPackedRows', () => {
  it('moves token t of head h from row t*H + h', () => {
    // cache (B=2, H=2, N=2, R=1), packed update (T=3, H=2, 1): lengths [0,1,3]
    const cache = heap.alloc(8), upd = heap.alloc(6), lens = heap.alloc(12);
    memory.fill(cache, 0, 8);
    fill(upd, 6, 1);
    store<i32>(lens, 0); store<i32>(lens, 1, 4); store<i32>(lens, 3, 8);
    scatterPackedRows(cache, upd, 2, 2, 2, 1, 0, lens);
    const want: u8[] = [1, 0, 2, 0, 3, 5, 4, 6];
    for (let i = 0; i < 8; i++) expect<u8>(load<u8>(cache + <usize>i)).toBe(want[i]);
  });
});

describe('scatterRowsBits', () => {
  it('moves 4-bit elements starting mid-byte and keeps the neighbouring nibbles', () => {
    // cache: 1 batch, 1 prefix, N=4 positions of 1 element (4 bits) = 2 bytes 0xFF 0xFF
    const cache = heap.alloc(2), upd = heap.alloc(1), wi = heap.alloc(4);
    store<u8>(cache, 0xff); store<u8>(cache + 1, 0xff);
    store<u8>(upd, 0x21); // elements 1, 2
    store<i32>(wi, 1);
    scatterRowsBits(cache, upd, 1, 1, 4, 2, 1, 4, wi, false);
    expect<u8>(load<u8>(cache)).toBe(0x1f);
    expect<u8>(load<u8>(cache + 1)).toBe(0xf2);
  });

  it('copies whole bytes when phases agree (2-bit elements)', () => {
    const cache = heap.alloc(2), upd = heap.alloc(2), wi = heap.alloc(4);
    store<u8>(cache, 0); store<u8>(cache + 1, 0);
    store<u8>(upd, 0xe4); store<u8>(upd + 1, 0x1b);
    store<i32>(wi, 0);
    scatterRowsBits(cache, upd, 1, 1, 8, 8, 1, 2, wi, false);
    expect<u8>(load<u8>(cache)).toBe(0xe4);
    expect<u8>(load<u8>(cache + 1)).toBe(0x1b);
  });
});
