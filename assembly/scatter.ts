// Strided block copies for TensorScatter and KV-cache updates (bulk memory).
//
// Layout. The host folds a cache of shape (B, D1…, N, …, Dn) with the sequence axis
// at `axis` into (B, P, N, R): P = D1·…·D(axis−1) prefix rows per batch entry, N the
// cache length along the axis, R the bytes (or elements, for sub-byte dtypes) of one
// position = product of the dims after the axis times the element size. The update
// folds the same way into (B, P, S, R). Because R is the innermost stride, the S
// positions of one (b, p) pair are one contiguous run in both tensors: a linear write
// is one memory.copy per (b, p); a circular write wraps at most once (S ≤ N), so it is
// at most two copies.
//
// Preconditions (checked by the host before any call):
//   - writeIdx points at B int32 start positions, already reduced modulo N in
//     circular mode, each with start + count ≤ N in linear mode; 0 means "all zero".
//   - lengths (where taken) points at B + 1 int32 cumulative counts, 0-based,
//     non-decreasing; each batch entry's count ≤ its capacity.
//   - cache and update do not overlap (or are the same tensor).

@inline function startOf(writeIdx: usize, b: i32): usize {
  return writeIdx != 0 ? <usize>load<i32>(writeIdx + (<usize>b << 2)) : 0;
}

/** Copies `count` rows of `rowBytes` into positions start, start+1, … (mod n if circular). */
@inline function copyRun(
  dstBase: usize, src: usize, n: usize, start: usize, count: usize, rowBytes: usize, circular: bool,
): void {
  if (circular) {
    let first = n - start;
    if (first > count) first = count;
    memory.copy(dstBase + start * rowBytes, src, first * rowBytes);
    if (count > first) memory.copy(dstBase, src + first * rowBytes, (count - first) * rowBytes);
  } else {
    memory.copy(dstBase + start * rowBytes, src, count * rowBytes);
  }
}

/**
 * TensorScatter / padded KV-cache update for byte-sized elements.
 * cache (B, P, N, rowBytes) ← update (B, P, S, rowBytes) at writeIdx[b] (+ s).
 * lengths: 0, or B + 1 cumulative counts — batch entry b then writes only its first
 * lengths[b+1] − lengths[b] rows of S (a padded update holding ragged sequences).
 */
export function scatterRows(
  cache: usize, update: usize, B: i32, P: i32, N: i32, S: i32, rowBytes: usize,
  writeIdx: usize, lengths: usize, circular: bool,
): void {
  const n = <usize>N, s = <usize>S;
  for (let b = 0; b < B; b++) {
    const start = startOf(writeIdx, b);
    let count = s;
    if (lengths != 0) {
      const at = lengths + (<usize>b << 2);
      count = <usize>(load<i32>(at, 4) - load<i32>(at));
    }
    if (count == 0) continue;
    for (let p = 0; p < P; p++) {
      const row = <usize>b * <usize>P + <usize>p;
      copyRun(cache + row * n * rowBytes, update + row * s * rowBytes, n, start, count, rowBytes, circular);
    }
  }
}

/**
 * KV-cache update from a packed update (T, H, rowBytes) into a cache (B, H, N, rowBytes):
 * token t = lengths[b] + s of batch entry b goes to cache[b, h, writeIdx[b] + s].
 * Tokens of one head are H rows apart in the update, so each token row is one copy.
 */
export function scatterPackedRows(
  cache: usize, update: usize, B: i32, H: i32, N: i32, rowBytes: usize,
  writeIdx: usize, lengths: usize,
): void {
  const n = <usize>N, h = <usize>H;
  for (let b = 0; b < B; b++) {
    const start = startOf(writeIdx, b);
    const at = lengths + (<usize>b << 2);
    const t0 = <usize>load<i32>(at), t1 = <usize>load<i32>(at, 4);
    for (let t = t0; t < t1; t++) {
      const pos = start + (t - t0);
      const src = update + t * h * rowBytes;
      for (let j: usize = 0; j < h; j++) {
        memory.copy(cache + ((<usize>b * h + j) * n + pos) * rowBytes, src + j * rowBytes, rowBytes);
      }
    }
  }
}

// ---- sub-byte elements (4-bit and 2-bit types) ----------------------------------
// Element i of a packed tensor with `bits` per element lives in byte (i·bits) >> 3 at
// bit (i·bits) & 7, element 0 in the low bits. Element and bit indices are u64: a 512 MiB
// int4 cache has 2^30 elements (2^32 bits), and a row start row·n·rowElems of a cache over
// 2 GiB passes 2^32 elements, both of which wrapped in usize (the wrong element written). A run whose source and destination
// start at the same bit phase is copied as: leading elements one by one up to a byte
// boundary, whole bytes with memory.copy, trailing elements one by one. Runs with
// different phases go element by element. Only the bits of the destination elements
// are ever changed, so neighbouring elements sharing a byte stay intact.

@inline function getElem(base: usize, i: u64, bits: u32): u32 {
  const bit = i * <u64>bits;
  return (<u32>load<u8>(base + <usize>(bit >> 3)) >> <u32>(bit & 7)) & ((1 << bits) - 1);
}

@inline function setElem(base: usize, i: u64, bits: u32, v: u32): void {
  const bit = i * <u64>bits;
  const at = base + <usize>(bit >> 3), shift = <u32>(bit & 7);
  const mask = <u32>((1 << bits) - 1) << shift;
  store<u8>(at, (<u32>load<u8>(at) & ~mask) | (v << shift));
}

function copyElems(dst: usize, di: u64, src: usize, si: u64, count: u64, bits: u32): void {
  const perByte = <u64>(8 / bits);
  if ((di & (perByte - 1)) == (si & (perByte - 1))) {
    while (count > 0 && (di & (perByte - 1)) != 0) {
      setElem(dst, di++, bits, getElem(src, si++, bits));
      count--;
    }
    const whole = count / perByte;
    if (whole > 0) {
      memory.copy(dst + <usize>(di / perByte), src + <usize>(si / perByte), <usize>whole);
      di += whole * perByte; si += whole * perByte; count -= whole * perByte;
    }
  }
  for (let k: u64 = 0; k < count; k++) setElem(dst, di + k, bits, getElem(src, si + k, bits));
}

/**
 * TensorScatter for 4-bit and 2-bit dtypes: as scatterRows, with rowElems elements of
 * `bits` bits per position instead of bytes.
 */
export function scatterRowsBits(
  cache: usize, update: usize, B: i32, P: i32, N: i32, S: i32, rowElems: usize, bits: u32,
  writeIdx: usize, circular: bool,
): void {
  const n = <u64><u32>N, s = <u64><u32>S, re = <u64>rowElems;
  if (s == 0) return;
  for (let b = 0; b < B; b++) {
    const start = <u64>startOf(writeIdx, b);
    for (let p = 0; p < P; p++) {
      const row = <u64>b * <u64>P + <u64>p;
      const d0 = row * n * re, s0 = row * s * re;
      let first = s;
      if (circular && n - start < first) first = n - start;
      copyElems(cache, d0 + start * re, update, s0, first * re, bits);
      if (first < s) copyElems(cache, d0, update, s0 + first * re, (s - first) * re, bits);
    }
  }
}
