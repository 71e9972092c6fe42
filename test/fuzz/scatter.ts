/** Fuzz family: TensorScatter and TRT_KVCacheUpdate. */
import type { DType, Kernels, Tensor } from '../helpers.js';
import { type Call, type Family, int, junkAttr, pick } from './harness.js';

const DT: DType[] = ['float32', 'float16', 'int8', 'int64', 'int4', 'uint2', 'bool', 'complex64'];

export const tensorScatterFamily: Family = {
  name: 'TensorScatter',
  valid(ek: Kernels, rnd) {
    const rank = int(rnd, 2, 4);
    const dims = Array.from({ length: rank }, () => int(rnd, 1, 4));
    const axis = int(rnd, 1, rank - 1);
    dims[axis] = int(rnd, 1, 6);
    const N = dims[axis], S = int(rnd, 0, N);
    const us = dims.slice();
    us[axis] = S;
    const dtype = pick(rnd, DT);
    const cache = ek.tensor(dtype, dims);
    const update = ek.tensor(dtype, us);
    const idx = ek.tensor(pick(rnd, ['int32', 'int64'] as DType[]), [dims[0]]);
    const call: Call = { op: 'TensorScatter', inputs: [cache, update, idx], attributes: { axis: rnd() < 0.5 ? axis : axis - rank, mode: pick(rnd, ['linear', 'circular']) }, names: [] };
    return { call, tensors: [cache, update, idx] };
  },
  mutations: [
    function rankMismatch(ek, c, rnd, made) {
      const u = c.inputs[1] as Tensor;
      const t = ek.tensor(u.dtype, rnd() < 0.5 ? [...u.shape, 1] : u.shape.slice(0, -1));
      made.push(t); c.inputs[1] = t; c.names = ['update', 'past_cache', 'axis'];
      return true;
    },
    function dimMismatch(ek, c, rnd, made) {
      const u = c.inputs[1] as Tensor;
      const ax = ((c.attributes.axis as number) + u.rank) % u.rank;
      const others = u.shape.map((_, i) => i).filter((i) => i !== ax);
      const i = pick(rnd, others);
      const s = u.shape.slice();
      s[i] += int(rnd, 1, 3);
      const t = ek.tensor(u.dtype, s);
      made.push(t); c.inputs[1] = t; c.names = ['update'];
      return true;
    },
    function updateTooLong(ek, c, rnd, made) {
      const u = c.inputs[1] as Tensor, cache = c.inputs[0] as Tensor;
      const ax = ((c.attributes.axis as number) + u.rank) % u.rank;
      const s = u.shape.slice();
      s[ax] = cache.shape[ax] + int(rnd, 1, 3);
      const t = ek.tensor(u.dtype, s);
      made.push(t); c.inputs[1] = t; c.names = ['update'];
      return true;
    },
    function badAxis(_ek, c, rnd) {
      const r = (c.inputs[0] as Tensor).rank;
      c.attributes.axis = pick(rnd, [0, -r, r, r + 3, -r - 1, 1.5, 'x']);
      c.names = ['axis'];
      return true;
    },
    function badMode(_ek, c, rnd) {
      c.attributes.mode = pick(rnd, ['Linear', 'ring', '', 3]);
      c.names = ['mode'];
      return true;
    },
    function unknownAttribute(_ek, c, rnd) {
      c.attributes[pick(rnd, ['axes', 'Mode', 'write_index'])] = junkAttr(rnd);
      c.names = ['unknown attribute'];
      return true;
    },
    function dtypeMismatch(ek, c, rnd, made) {
      const u = c.inputs[1] as Tensor;
      const t = ek.tensor(pick(rnd, DT.filter((d) => d !== u.dtype)), u.shape);
      made.push(t); c.inputs[1] = t; c.names = ['update'];
      return true;
    },
    function indicesWrongLength(ek, c, rnd, made) {
      const i = c.inputs[2] as Tensor;
      const t = ek.tensor(i.dtype, [i.shape[0] + int(rnd, 1, 2)]);
      made.push(t); c.inputs[2] = t; c.names = ['write_indices'];
      return true;
    },
    function indicesWrongDtype(ek, c, rnd, made) {
      const i = c.inputs[2] as Tensor;
      const t = ek.tensor(pick(rnd, ['float32', 'uint8', 'int16', 'uint64'] as DType[]), i.shape);
      made.push(t); c.inputs[2] = t; c.names = ['write_indices'];
      return true;
    },
    function indicesNegativeOrHuge(_ek, c, rnd) {
      const i = c.inputs[2] as Tensor;
      const b = int(rnd, 0, i.shape[0] - 1);
      // circular mode takes every index modulo the cache length (negative ones too)
      if (c.attributes.mode === 'circular') return false;
      const v = pick(rnd, [-1, -7, 2 ** 31 - 1]);
      if (i.dtype === 'int64') (i.data as BigInt64Array)[b] = rnd() < 0.2 ? 2n ** 62n : BigInt(v);
      else (i.data as Int32Array)[b] = v;
      c.names = ['write_indices'];
      return true;
    },
    function writePastEnd(_ek, c, rnd) {
      if (c.attributes.mode === 'circular') return false;
      const cache = c.inputs[0] as Tensor, u = c.inputs[1] as Tensor, i = c.inputs[2] as Tensor;
      const ax = ((c.attributes.axis as number) + u.rank) % u.rank;
      const v = cache.shape[ax] - u.shape[ax] + int(rnd, 1, 4);
      const b = int(rnd, 0, i.shape[0] - 1);
      if (i.dtype === 'int64') (i.data as BigInt64Array)[b] = BigInt(v); else (i.data as Int32Array)[b] = v;
      c.names = ['write_indices'];
      return true;
    },
    function missingInput(_ek, c, rnd) {
      const slot = int(rnd, 0, 1);
      c.inputs[slot] = rnd() < 0.5 ? null : undefined;
      c.names = [slot === 0 ? 'past_cache' : 'update'];
      return true;
    },
    function disposedInput(ek, c, rnd, made) {
      const slot = int(rnd, 0, 2);
      const t = c.inputs[slot] as Tensor;
      const d = ek.tensor(t.dtype, t.shape);
      d.dispose();
      made.push(d); c.inputs[slot] = d; c.names = [['past_cache', 'update', 'write_indices'][slot]];
      return true;
    },
    function plainBadData(_ek, c, rnd) {
      const u = c.inputs[1] as Tensor;
      // One to four values more than the dtype's data array holds (see the dtype table).
      const want = u.info.kind === 'complex' ? 2 * u.size : u.info.bits < 8 ? Math.ceil((u.size * u.info.bits) / 8) : u.size;
      c.inputs[1] = { dtype: u.dtype, shape: u.shape, data: new Array(want + int(rnd, 1, 4)).fill(0) };
      c.names = ['update'];
      c.plain = true;
      return true;
    },
    function foreignOutput(ek, c, _rnd, made) {
      const cache = c.inputs[0] as Tensor;
      const o = ek.tensor(cache.dtype, cache.shape);
      made.push(o); c.options = { outputs: [o] }; c.names = ['outputs'];
      return true;
    },
    function tooManyInputs(_ek, c) {
      c.inputs.push(null, null);
      c.names = ['inputs'];
      return true;
    },
  ],
};

export const kvCacheUpdateFamily: Family = {
  name: 'TRT_KVCacheUpdate',
  valid(ek, rnd) {
    const B = int(rnd, 1, 3), H = int(rnd, 1, 3), N = int(rnd, 1, 6), D = int(rnd, 1, 5);
    const dtype = pick(rnd, ['float32', 'float16', 'bfloat16', 'int8'] as DType[]);
    const cache = ek.tensor(dtype, [B, H, N, D]);
    const packed = rnd() < 0.5;
    const counts = Array.from({ length: B }, () => int(rnd, 0, N));
    const cum = [0];
    for (const x of counts) cum.push(cum[cum.length - 1] + x);
    const update = packed ? ek.tensor(dtype, [cum[B], H, D]) : ek.tensor(dtype, [B, H, Math.max(...counts), D]);
    const idx = ek.tensor('int32', [B], counts.map((x) => int(rnd, 0, N - x)));
    const lens = ek.tensor(pick(rnd, ['int32', 'int64'] as DType[]), [B + 1], cum.map((x) => x));
    const call: Call = { op: 'TRT_KVCacheUpdate', inputs: [cache, update, idx, lens], attributes: { update_form: packed ? 'packed_nhd' : 'padded_bhnd' }, names: [] };
    return { call, tensors: [cache, update, idx, lens] };
  },
  mutations: [
    function lengthsNotFromZero(_ek, c) {
      const l = c.inputs[3] as Tensor;
      if (l.dtype === 'int64') (l.data as BigInt64Array)[0] = 1n; else (l.data as Int32Array)[0] = 1;
      c.names = ['update_lengths'];
      return true;
    },
    function lengthsDecrease(_ek, c, rnd) {
      const l = c.inputs[3] as Tensor;
      if (l.shape[0] < 3) return false;
      const i = int(rnd, 1, l.shape[0] - 2);
      const d = l.data as Int32Array | BigInt64Array;
      const v = Number(d[i + 1]) + 1;
      if (l.dtype === 'int64') (d as BigInt64Array)[i] = BigInt(v); else (d as Int32Array)[i] = v;
      c.names = ['update_lengths'];
      return true;
    },
    function lengthsWrongEnd(_ek, c) {
      if (c.attributes.update_form !== 'packed_nhd') return false;
      const l = c.inputs[3] as Tensor;
      const d = l.data as Int32Array | BigInt64Array;
      const last = l.shape[0] - 1;
      if (l.dtype === 'int64') (d as BigInt64Array)[last] += 1n; else (d as Int32Array)[last] += 1;
      c.names = ['update_lengths'];
      return true;
    },
    function lengthsMissing(_ek, c) {
      if (c.attributes.update_form !== 'packed_nhd') return false;
      c.inputs[3] = null;
      c.names = ['update_lengths'];
      return true;
    },
    function lengthsWrongShape(ek, c, rnd, made) {
      const l = c.inputs[3] as Tensor;
      const t = ek.tensor(l.dtype, rnd() < 0.5 ? [l.shape[0] + 1] : [1, l.shape[0]]);
      made.push(t); c.inputs[3] = t; c.names = ['update_lengths'];
      return true;
    },
    function formMismatch(_ek, c) {
      c.attributes.update_form = c.attributes.update_form === 'packed_nhd' ? 'padded_bhnd' : 'packed_nhd';
      c.names = ['update', 'update_lengths'];
      return true;
    },
    function badAttribute(_ek, c, rnd) {
      const [k, v] = pick(rnd, [['mode', 'circular'], ['axis', 1], ['axis', -1], ['update_form', 'bhnd'], ['nb_rank', 1]] as [string, unknown][]);
      c.attributes[k] = v;
      c.names = [k === 'nb_rank' ? 'unknown attribute' : k];
      return true;
    },
    function indexPastEnd(_ek, c, rnd) {
      const i = c.inputs[2] as Tensor, cache = c.inputs[0] as Tensor;
      const b = int(rnd, 0, i.shape[0] - 1);
      (i.data as Int32Array)[b] = pick(rnd, [-1, cache.shape[2] + 1, 2 ** 31 - 1]);
      c.names = ['write_indices'];
      return true;
    },
    function cacheRank(ek, c, _rnd, made) {
      const cache = c.inputs[0] as Tensor;
      const t = ek.tensor(cache.dtype, cache.shape.slice(1));
      made.push(t); c.inputs[0] = t; c.names = ['past_cache'];
      return true;
    },
    function headMismatch(ek, c, rnd, made) {
      const u = c.inputs[1] as Tensor;
      const s = u.shape.slice();
      const i = u.rank === 3 ? int(rnd, 1, 2) : pick(rnd, [0, 1, 3]);
      s[i] += 1;
      const t = ek.tensor(u.dtype, s);
      made.push(t); c.inputs[1] = t; c.names = ['update'];
      return true;
    },
    function dtypeMismatch(ek, c, _rnd, made) {
      const u = c.inputs[1] as Tensor;
      const t = ek.tensor(u.dtype === 'float32' ? 'float16' : 'float32', u.shape);
      made.push(t); c.inputs[1] = t; c.names = ['update'];
      return true;
    },
  ],
};
