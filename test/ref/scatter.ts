/**
 * Plain reference for TensorScatter and TRT_KVCacheUpdate, written from the ONNX and
 * TensorRT pseudocode with no cleverness: walk every element of the update, compute its
 * destination index in the cache, and copy the element (as raw bits for numeric dtypes,
 * so float NaN payloads and packed 4-/2-bit elements are compared exactly).
 */

/** Element accessors over raw bytes: `bits` per element (2, 4, 8, 16, …, 128). */
export function getElement(bytes: Uint8Array, i: number, bits: number): bigint {
  if (bits < 8) {
    const bit = i * bits;
    return BigInt((bytes[bit >> 3] >> (bit & 7)) & ((1 << bits) - 1));
  }
  const eb = bits / 8;
  let v = 0n;
  for (let k = eb - 1; k >= 0; k--) v = (v << 8n) | BigInt(bytes[i * eb + k]);
  return v;
}

export function setElement(bytes: Uint8Array, i: number, bits: number, v: bigint): void {
  if (bits < 8) {
    const bit = i * bits, shift = bit & 7, mask = ((1 << bits) - 1) << shift;
    bytes[bit >> 3] = (bytes[bit >> 3] & ~mask) | (Number(v) << shift);
    return;
  }
  const eb = bits / 8;
  for (let k = 0; k < eb; k++) {
    bytes[i * eb + k] = Number(v & 0xffn);
    v >>= 8n;
  }
}

function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/** All multi-indices of a shape, in row-major order. */
export function* ndindex(shape: readonly number[]): Generator<number[]> {
  const total = shape.reduce((a, b) => a * b, 1);
  const st = strides(shape);
  for (let flat = 0; flat < total; flat++) yield shape.map((d, i) => Math.floor(flat / st[i]) % d);
}

/**
 * TensorScatter on generic element stores: `get(u)` reads update element u, `set(c, v)`
 * writes cache element c (flat indices).
 */
export function tensorScatterRef<T>(
  cacheShape: readonly number[], updateShape: readonly number[], axis: number, mode: 'linear' | 'circular',
  writeIndices: readonly number[] | null, get: (u: number) => T, set: (c: number, v: T) => void,
): void {
  const r = cacheShape.length;
  const ax = axis < 0 ? axis + r : axis;
  const cs = strides(cacheShape), us = strides(updateShape);
  const N = cacheShape[ax];
  for (const idx of ndindex(updateShape)) {
    const b = idx[0];
    const w = writeIndices ? writeIndices[b] : 0;
    let pos = w + idx[ax];
    if (mode === 'circular') pos = ((pos % N) + N) % N; // Python's floor modulo, as the spec's pseudocode
    let c = 0, u = 0;
    for (let i = 0; i < r; i++) {
      c += (i === ax ? pos : idx[i]) * cs[i];
      u += idx[i] * us[i];
    }
    set(c, get(u));
  }
}

/** TRT_KVCacheUpdate from a packed [T,H,D] update into a [B,H,N,D] cache. */
export function kvPackedRef<T>(
  cacheShape: readonly number[], T: number, lengths: readonly number[], writeIndices: readonly number[] | null,
  get: (u: number) => T, set: (c: number, v: T) => void,
): void {
  const [B, H, N, D] = cacheShape;
  for (let b = 0; b < B; b++) {
    for (let t = lengths[b]; t < lengths[b + 1]; t++) {
      const pos = (writeIndices ? writeIndices[b] : 0) + (t - lengths[b]);
      for (let h = 0; h < H; h++) {
        for (let d = 0; d < D; d++) set(((b * H + h) * N + pos) * D + d, get((t * H + h) * D + d));
      }
    }
  }
  void T;
}
