/**
 * TensorScatter (ONNX 24) and TRT_KVCacheUpdate: write new rows into a cache in place.
 *
 * Validation happens in full before any byte moves; then one kernel call copies the rows
 * (assembly/scatter.ts). Output 0 is the cache tensor itself.
 */
import { show } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { fail, normalizeAxis, product, readCumulative, readInts, requireDtype, requireRank } from './checks.js';
import type { OpContext, OpDef } from './registry.js';

/** Per-batch start positions, checked; returned as a pointer to int32s (0 = all zero). */
function writeStarts(
  ctx: OpContext, op: string, idx: Tensor | null, batch: number, n: number,
  counts: (b: number) => number, circular: boolean, reserve = 0,
): number {
  // `reserve`: scratch bytes the caller will use after these starts (requested here, after
  // validation, so a call that fails never grows the scratch area and a later request
  // cannot move the starts)
  if (idx === null) {
    for (let b = 0; b < batch; b++) {
      if (!circular && counts(b) > n) fail('INVALID_VALUE', `${op} update: ${counts(b)} rows do not fit a cache of length ${n}`);
    }
    if (reserve > 0) ctx.scratch(reserve);
    return 0;
  }
  const what = `${op} input write_indices`;
  if (idx.rank !== 1 || idx.shape[0] !== batch) fail('INVALID_SHAPE', `${what}: expected shape [${batch}] (one per batch entry), got ${show([...idx.shape])}`);
  if (circular) {
    // the spec's pseudocode takes write_indices[b] % max_sequence_length with Python's
    // floor modulo: any int32 / int64 value, negative ones included, names a row
    requireDtype(idx, ['int32', 'int64'], what);
    if (batch === 0) return 0;
    const ptr = ctx.scratch(Math.max(batch * 4, reserve));
    // the indices' view is taken after the scratch request, which may grow the memory and
    // detach an earlier one (whose reads would then all be undefined, i.e. row 0)
    const d = idx.data as Int32Array | BigInt64Array;
    const out = new Int32Array(ctx.memory.buffer, ptr, batch);
    for (let b = 0; b < batch; b++) {
      const x = d[b];
      out[b] = n === 0 ? 0 : typeof x === 'bigint' ? Number(((x % BigInt(n)) + BigInt(n)) % BigInt(n)) : ((x % n) + n) % n;
    }
    return ptr;
  }
  const v = readInts(idx, what);
  for (let b = 0; b < batch; b++) {
    if (v[b] < 0) fail('INVALID_VALUE', `${what}[${b}]: expected a non-negative position, got ${v[b]}`);
    if (!circular && v[b] + counts(b) > n) {
      fail('INVALID_VALUE', `${what}[${b}]: writing ${counts(b)} rows at ${v[b]} passes the end of the cache (length ${n}); linear mode needs write_indices[b] + rows <= ${n}`);
    }
  }
  if (batch === 0) return 0;
  // An int32 index tensor needs no copy in linear mode: the kernel reads it where it lives.
  if (idx.dtype === 'int32') {
    if (reserve > 0) ctx.scratch(reserve);
    return idx.byteOffset;
  }
  const ptr = ctx.scratch(Math.max(batch * 4, reserve));
  new Int32Array(ctx.memory.buffer, ptr, batch).set(v);
  return ptr;
}

function checkSameDtype(op: string, cache: Tensor, update: Tensor): void {
  if (update.dtype !== cache.dtype) fail('INVALID_DTYPE', `${op} input update: expected dtype ${cache.dtype} (the cache's), got ${update.dtype}`);
}

/** Copies the rows: cache (B,P,N,R) ← update (B,P,S,R). Strings move on the host. */
function scatter(ctx: OpContext, cache: Tensor, update: Tensor, B: number, P: number, N: number, S: number, R: number, starts: number, lengths: number, circular: boolean): void {
  if (B === 0 || P === 0 || S === 0 || R === 0) return;
  const info = cache.info;
  if (info.kind === 'string') {
    const dst = cache.data as string[], src = update.data as string[];
    const wi = starts === 0 ? null : new Int32Array(ctx.memory.buffer, starts, B);
    for (let b = 0; b < B; b++) {
      const w = wi ? wi[b] : 0;
      for (let p = 0; p < P; p++) {
        const row = b * P + p;
        for (let s = 0; s < S; s++) {
          const pos = circular ? (w + s) % N : w + s;
          for (let r = 0; r < R; r++) dst[(row * N + pos) * R + r] = src[(row * S + s) * R + r];
        }
      }
    }
  } else if (info.bits < 8) {
    ctx.exports.scatterRowsBits(cache.byteOffset, update.byteOffset, B, P, N, S, R, info.bits, starts, circular ? 1 : 0);
  } else {
    const elemBytes = info.bits / 8;
    ctx.exports.scatterRows(cache.byteOffset, update.byteOffset, B, P, N, S, R * elemBytes, starts, lengths, circular ? 1 : 0);
  }
}

const tensorScatter: OpDef = {
  name: 'TensorScatter',
  inputs: [{ name: 'past_cache' }, { name: 'update' }, { name: 'write_indices', optional: true }],
  outputs: [{ name: 'present_cache' }],
  attributes: {
    axis: { kind: 'int', default: -2 },
    mode: { kind: 'string', default: 'linear', values: ['linear', 'circular'] },
  },
  inPlace: 0,
  run(ctx, [cache, update, idx], attrs) {
    const op = 'TensorScatter';
    checkSameDtype(op, cache!, update!);
    const rank = cache!.rank;
    if (update!.rank !== rank) fail('INVALID_SHAPE', `${op} input update: expected rank ${rank} (the cache's), got ${update!.rank}`);
    if (rank < 2) fail('INVALID_SHAPE', `${op} input past_cache: expected rank >= 2 (batch and sequence axes), got ${rank}`);
    const axis = normalizeAxis(attrs.axis as number, rank, `${op} attribute axis`);
    if (axis === 0) fail('INVALID_ATTRIBUTE', `${op} attribute axis: the batch axis 0 cannot be the sequence axis (got ${attrs.axis})`);
    const cs = cache!.shape, us = update!.shape;
    for (let i = 0; i < rank; i++) {
      if (i !== axis && cs[i] !== us[i]) {
        fail('INVALID_SHAPE', `${op} input update: dimension ${i} must equal the cache's ${cs[i]}, got ${us[i]} (update ${show([...us])}, cache ${show([...cs])})`);
      }
    }
    const N = cs[axis], S = us[axis];
    if (S > N) fail('INVALID_SHAPE', `${op} input update: sequence length ${S} on axis ${axis} exceeds the cache's ${N}`);
    const circular = attrs.mode === 'circular';
    const B = cs[0];
    const starts = writeStarts(ctx, op, idx, B, N, () => S, circular);
    scatter(ctx, cache!, update!, B, product(cs, 1, axis), N, S, product(cs, axis + 1), starts, 0, circular);
    return [cache!];
  },
};

const kvCacheUpdate: OpDef = {
  name: 'TRT_KVCacheUpdate',
  inputs: [{ name: 'past_cache' }, { name: 'update' }, { name: 'write_indices', optional: true }, { name: 'update_lengths', optional: true }],
  outputs: [{ name: 'present_cache' }],
  attributes: {
    update_form: { kind: 'string', default: 'padded_bhnd', values: ['padded_bhnd', 'packed_nhd'] },
    mode: { kind: 'string', default: 'linear', values: ['linear'] },
    axis: { kind: 'int', default: -2, values: [-2, 2] },
  },
  inPlace: 0,
  run(ctx, [cache, update, idx, lens], attrs) {
    const op = 'TRT_KVCacheUpdate';
    checkSameDtype(op, cache!, update!);
    requireRank(cache!, 4, `${op} input past_cache ([B,H,N,D])`);
    const [B, H, N, D] = cache!.shape;
    // 4-bit / 2-bit and string caches: scatter's bit / host paths, or elementWise with lengths
    const wholeBytes = cache!.info.kind !== 'string' && cache!.info.bits >= 8;
    const rowBytes = wholeBytes ? (D * cache!.info.bits) / 8 : 0;
    // scratch for int32 starts [B] and lengths [B+1], reserved at once by writeStarts (after
    // validation), so the second request cannot move the first
    const reserve = 4 * (2 * B + 1);
    if (attrs.update_form === 'packed_nhd') {
      requireRank(update!, 3, `${op} input update (packed_nhd [T,H,D])`);
      const [T, uh, ud] = update!.shape;
      if (uh !== H || ud !== D) fail('INVALID_SHAPE', `${op} input update: expected [T,${H},${D}] to match the cache's heads and head size, got ${show([...update!.shape])}`);
      if (lens === null) fail('MISSING_INPUT', `${op}: input 3 (update_lengths) is required when update_form is 'packed_nhd'`);
      const cum = readCumulative(lens, B, T, `${op} input update_lengths`);
      const starts = writeStarts(ctx, op, idx, B, N, (b) => cum[b + 1] - cum[b], false, reserve);
      if (!wholeBytes) {
        elementWise(ctx, cache!, update!, B, H, N, D, starts, (b) => cum[b + 1] - cum[b], (b, h, t) => (cum[b] + t) * H + h);
        return [cache!];
      }
      const lp = int32Lengths(ctx, lens, cum, 4 * B);
      if (B > 0 && H > 0 && rowBytes > 0 && T > 0) ctx.exports.scatterPackedRows(cache!.byteOffset, update!.byteOffset, B, H, N, rowBytes, starts, lp);
      return [cache!];
    }
    requireRank(update!, 4, `${op} input update (padded_bhnd [B,H,S,D])`);
    const [ub, uh, S, ud] = update!.shape;
    if (ub !== B || uh !== H || ud !== D) fail('INVALID_SHAPE', `${op} input update: expected [${B},${H},S,${D}] to match the cache, got ${show([...update!.shape])}`);
    if (S > N) fail('INVALID_SHAPE', `${op} input update: sequence length ${S} exceeds the cache's ${N}`);
    let cum: number[] | null = null;
    if (lens !== null) {
      cum = readCumulative(lens, B, null, `${op} input update_lengths`);
      for (let b = 0; b < B; b++) {
        if (cum[b + 1] - cum[b] > S) fail('INVALID_VALUE', `${op} input update_lengths: batch entry ${b} has ${cum[b + 1] - cum[b]} rows, more than the update's ${S}`);
      }
    }
    const starts = writeStarts(ctx, op, idx, B, N, (b) => (cum ? cum[b + 1] - cum[b] : S), false, reserve);
    if (!wholeBytes && cum) {
      // (without update_lengths, scatter below already moves 4-bit / 2-bit and string rows)
      elementWise(ctx, cache!, update!, B, H, N, D, starts, (b) => cum[b + 1] - cum[b], (b, h, t) => (b * H + h) * S + t);
      return [cache!];
    }
    const lp = cum ? int32Lengths(ctx, lens!, cum, 4 * B) : 0;
    scatter(ctx, cache!, update!, B, H, N, S, D, starts, lp, false);
    return [cache!];
  },
};

/**
 * TRT_KVCacheUpdate for 4-bit / 2-bit and string caches [B,H,N,D], on the host: row t < count(b)
 * of batch b, head h (update row index row(b, h, t), D elements each) goes to cache row
 * starts[b] + t. Packed elements move whole (the neighbours sharing a byte keep their bits).
 */
function elementWise(
  ctx: OpContext, cache: Tensor, update: Tensor, B: number, H: number, N: number, D: number, starts: number,
  count: (b: number) => number, row: (b: number, h: number, t: number) => number,
): void {
  const wi = starts === 0 ? null : new Int32Array(ctx.memory.buffer, starts, B);
  const bits = cache.info.bits;
  const strings = cache.info.kind === 'string';
  const mem = new Uint8Array(ctx.memory.buffer);
  const mask = (1 << bits) - 1, per = 8 / bits;
  for (let b = 0; b < B; b++) {
    const w = wi ? wi[b] : 0, n = count(b);
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < n; t++) {
        const dst = ((b * H + h) * N + w + t) * D, src = row(b, h, t) * D;
        for (let d = 0; d < D; d++) {
          if (strings) { (cache.data as string[])[dst + d] = (update.data as string[])[src + d]; continue; }
          const si = src + d, di = dst + d;
          const v = (mem[update.byteOffset + Math.floor(si / per)] >> ((si % per) * bits)) & mask;
          const a = cache.byteOffset + Math.floor(di / per), sh = (di % per) * bits;
          mem[a] = (mem[a] & ~(mask << sh)) | (v << sh);
        }
      }
    }
  }
}

/** Cumulative lengths as int32 in memory: the tensor itself when it is int32, else scratch after `offset` bytes. */
function int32Lengths(ctx: OpContext, t: Tensor, cum: number[], offset: number): number {
  if (t.dtype === 'int32') return t.byteOffset;
  const base = ctx.scratch(offset + cum.length * 4);
  new Int32Array(ctx.memory.buffer, base + offset, cum.length).set(cum);
  return base + offset;
}

export const scatterOps: readonly OpDef[] = [tensorScatter, kvCacheUpdate];
