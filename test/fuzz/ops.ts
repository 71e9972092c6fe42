/** Fuzz families: attention, conversions, CumSum, scan and the KVCache. */
import type { DType, Kernels, Tensor } from '../helpers.js';
import { type Call, type Family, int, junkAttr, pick } from './harness.js';

type Mut = Family['mutations'][number];

/** Replaces input `slot` by a fresh tensor of `shape` / `dtype` (defaults: the old one's). */
function swap(ek: Kernels, c: Call, made: Tensor[], slot: number, shape?: readonly number[], dtype?: DType): void {
  const old = c.inputs[slot] as Tensor;
  const t = ek.tensor(dtype ?? old.dtype, shape ?? old.shape);
  made.push(t);
  c.inputs[slot] = t;
}

function setInt(t: Tensor, i: number, v: number): void {
  if (t.dtype === 'int64') (t.data as BigInt64Array)[i] = BigInt(v);
  else (t.data as Int32Array)[i] = v;
}

const disposeSlot = (names: string[]): Mut =>
  function disposedInput(ek, c, rnd, made) {
    const slots = c.inputs.map((x, i) => (x ? i : -1)).filter((i) => i >= 0 && i < names.length);
    const slot = pick(rnd, slots);
    const t = c.inputs[slot] as Tensor;
    const d = ek.tensor(t.dtype, t.shape);
    d.dispose();
    made.push(d);
    c.inputs[slot] = d;
    c.names = [names[slot]];
    return true;
  };

const unknownAttr: Mut = function unknownAttribute(_ek, c, rnd) {
  c.attributes[pick(rnd, ['Axis', 'mode2', 'scales', 'is_casual'])] = junkAttr(rnd);
  c.names = ['unknown attribute'];
  return true;
};

// ---- TRT_Attention ------------------------------------------------------------------

export const trtAttentionFamily: Family = {
  name: 'TRT_Attention',
  valid(ek, rnd) {
    const B = int(rnd, 1, 3), Hkv = int(rnd, 1, 2), G = int(rnd, 1, 3), Hq = Hkv * G, D = int(rnd, 1, 9);
    const N = int(rnd, 1, 6), M = int(rnd, 1, 6);
    const dtype = pick(rnd, ['float32', 'float16'] as DType[]);
    const q = ek.tensor(dtype, [B, Hq, N, D]);
    const k = ek.tensor(dtype, [B, Hkv, M, D]);
    const v = ek.tensor(dtype, [B, Hkv, M, D]);
    const kl = ek.tensor('int32', [B], Array.from({ length: B }, () => int(rnd, 0, M)));
    const call: Call = { op: 'TRT_Attention', inputs: [q, k, v, null, null, kl], attributes: { causal_kind: pick(rnd, ['none', 'upper_left', 'lower_right']) }, names: [] };
    return { call, tensors: [q, k, v, kl] };
  },
  mutations: [
    function headsNotDivisible(ek, c, _rnd, made) {
      const q = c.inputs[0] as Tensor, k = c.inputs[1] as Tensor;
      const bad = k.shape[1] + 1;
      if (q.shape[1] % bad === 0) return false;
      swap(ek, c, made, 1, [k.shape[0], bad, k.shape[2], k.shape[3]]);
      swap(ek, c, made, 2, [k.shape[0], bad, k.shape[2], k.shape[3]]);
      c.names = ['K', 'Q', 'V', 'heads'];
      return true;
    },
    function headSizeDiffers(ek, c, rnd, made) {
      const k = c.inputs[1] as Tensor;
      swap(ek, c, made, 1, [k.shape[0], k.shape[1], k.shape[2], k.shape[3] + int(rnd, 1, 3)]);
      c.names = ['K', 'Q'];
      return true;
    },
    function kvLengthMismatch(ek, c, _rnd, made) {
      const v = c.inputs[2] as Tensor;
      swap(ek, c, made, 2, [v.shape[0], v.shape[1], v.shape[2] + 1, v.shape[3]]);
      c.names = ['V', 'K'];
      return true;
    },
    function batchMismatch(ek, c, _rnd, made) {
      const k = c.inputs[1] as Tensor;
      swap(ek, c, made, 1, [k.shape[0] + 1, k.shape[1], k.shape[2], k.shape[3]]);
      c.names = ['K', 'Q', 'V'];
      return true;
    },
    function wrongRank(ek, c, rnd, made) {
      const slot = int(rnd, 0, 2);
      const t = c.inputs[slot] as Tensor;
      swap(ek, c, made, slot, rnd() < 0.5 ? t.shape.slice(1) : [1, ...t.shape]);
      c.names = [['Q', 'K', 'V'][slot]];
      return true;
    },
    function dtypeMismatch(ek, c, rnd, made) {
      const slot = int(rnd, 1, 2);
      const t = c.inputs[slot] as Tensor;
      swap(ek, c, made, slot, undefined, t.dtype === 'float32' ? 'float16' : 'float32');
      c.names = [['Q', 'K', 'V'][slot], 'Q'];
      return true;
    },
    function kvLengthsOutOfRange(_ek, c, rnd) {
      const kl = c.inputs[5] as Tensor, k = c.inputs[1] as Tensor;
      setInt(kl, int(rnd, 0, kl.shape[0] - 1), pick(rnd, [-1, k.shape[2] + 1, 2 ** 31 - 1]));
      c.names = ['kv_lengths'];
      return true;
    },
    function kvLengthsWrongShape(ek, c, _rnd, made) {
      const kl = c.inputs[5] as Tensor;
      swap(ek, c, made, 5, [kl.shape[0] + 1]);
      c.names = ['kv_lengths'];
      return true;
    },
    function kvLengthsWrongDtype(ek, c, _rnd, made) {
      swap(ek, c, made, 5, undefined, 'float32');
      c.names = ['kv_lengths'];
      return true;
    },
    function packedWithoutLengths(_ek, c, rnd) {
      if (rnd() < 0.5) c.attributes.query_form = 'packed_nhd';
      else c.attributes.kv_form = 'packed_nhd';
      c.names = ['Q', 'K', 'V', 'query_lengths', 'kv_lengths', 'packed'];
      return true;
    },
    function maskWithCausal(ek, c, _rnd, made) {
      const q = c.inputs[0] as Tensor, k = c.inputs[1] as Tensor;
      const m = ek.tensor('bool', [q.shape[2], k.shape[2]]);
      made.push(m);
      c.inputs[3] = m;
      c.attributes.causal_kind = 'lower_right';
      c.names = ['attn_mask', 'causal_kind'];
      return true;
    },
    function maskNotBroadcastable(ek, c, rnd, made) {
      const q = c.inputs[0] as Tensor, k = c.inputs[1] as Tensor;
      const m = ek.tensor(pick(rnd, ['bool', 'float32'] as DType[]), [q.shape[2] + 1, k.shape[2] + 2]);
      made.push(m);
      c.inputs[3] = m;
      c.attributes.causal_kind = 'none';
      c.names = ['attn_mask'];
      return true;
    },
    function badAttribute(_ek, c, rnd) {
      const [k, v] = pick(rnd, [['causal_kind', 'bottom_right'], ['query_form', 'bhnd'], ['kv_form', 3], ['TRT_normalization_op', 'relu'], ['nb_rank', 2], ['TRT_decomposable', 7]] as [string, unknown][]);
      c.attributes[k] = v;
      c.names = [k];
      return true;
    },
    unknownAttr,
    disposeSlot(['Q', 'K', 'V', 'attn_mask', 'query_lengths', 'kv_lengths']),
    function missingInput(_ek, c, rnd) {
      const slot = int(rnd, 0, 2);
      c.inputs[slot] = null;
      c.names = [['Q', 'K', 'V'][slot]];
      return true;
    },
    function outputAliasesInput(_ek, c) {
      c.options = { outputs: [c.inputs[0]] };
      c.names = ['outputs'];
      return true;
    },
  ],
};

// ---- ONNX Attention -------------------------------------------------------------------

export const onnxAttentionFamily: Family = {
  name: 'Attention',
  valid(ek, rnd) {
    const B = int(rnd, 1, 2), Hkv = int(rnd, 1, 2), G = int(rnd, 1, 2), Hq = Hkv * G, D = int(rnd, 1, 8);
    const S = int(rnd, 1, 4), P = int(rnd, 0, 4), L = int(rnd, 1, 4);
    const dtype = pick(rnd, ['float32', 'float16', 'bfloat16'] as DType[]);
    const q = ek.tensor(dtype, [B, Hq, S, D]);
    const k = ek.tensor(dtype, [B, Hkv, L, D]);
    const v = ek.tensor(dtype, [B, Hkv, L, D]);
    const pk = ek.tensor(dtype, [B, Hkv, P, D]);
    const pv = ek.tensor(dtype, [B, Hkv, P, D]);
    const call: Call = { op: 'Attention', inputs: [q, k, v, null, pk, pv], attributes: { is_causal: int(rnd, 0, 1) }, names: [] };
    return { call, tensors: [q, k, v, pk, pv] };
  },
  mutations: [
    function pastWithoutValue(_ek, c, rnd) {
      c.inputs[rnd() < 0.5 ? 4 : 5] = null;
      c.names = ['past_key', 'past_value'];
      return true;
    },
    function pastHeadMismatch(ek, c, _rnd, made) {
      const p = c.inputs[4] as Tensor;
      swap(ek, c, made, 4, [p.shape[0], p.shape[1] + 1, p.shape[2], p.shape[3]]);
      c.names = ['past_key'];
      return true;
    },
    function headSizeDiffers(ek, c, rnd, made) {
      const k = c.inputs[1] as Tensor;
      swap(ek, c, made, 1, [k.shape[0], k.shape[1], k.shape[2], k.shape[3] + int(rnd, 1, 2)]);
      c.names = ['K', 'Q', 'past_key'];
      return true;
    },
    function threeDWithoutHeads(ek, c, _rnd, made) {
      const q = c.inputs[0] as Tensor;
      swap(ek, c, made, 0, [q.shape[0], q.shape[2], q.shape[1] * q.shape[3]]);
      c.names = ['q_num_heads', 'Q'];
      return true;
    },
    function maskNotBroadcastable(ek, c, rnd, made) {
      const q = c.inputs[0] as Tensor;
      const m = ek.tensor(pick(rnd, ['bool', 'float32'] as DType[]), [q.shape[2] + 1, 1]);
      made.push(m);
      c.inputs[3] = m;
      c.names = ['attn_mask'];
      return true;
    },
    function badNonpad(ek, c, rnd, made) {
      const q = c.inputs[0] as Tensor;
      const n = ek.tensor(pick(rnd, ['int64', 'int32', 'float32'] as DType[]), [q.shape[0] + int(rnd, 0, 1)]);
      if (n.dtype !== 'float32' && n.shape[0] === q.shape[0]) setInt(n, 0, pick(rnd, [-1, 10_000]));
      made.push(n);
      c.inputs[6] = n;
      c.inputs[4] = null;
      c.inputs[5] = null;
      c.names = ['nonpad_kv_seqlen'];
      return true;
    },
    function badAttribute(_ek, c, rnd) {
      const [k, v] = pick(rnd, [['is_causal', 2], ['qk_matmul_output_mode', 4], ['softcap', 'x'], ['scale', 'big'], ['q_num_heads', 0.5], ['softmax_precision', 'fp128']] as [string, unknown][]);
      c.attributes[k] = v;
      c.names = [k];
      return true;
    },
    unknownAttr,
    disposeSlot(['Q', 'K', 'V', 'attn_mask', 'past_key', 'past_value']),
    function dtypeMismatch(ek, c, _rnd, made) {
      const v = c.inputs[2] as Tensor;
      swap(ek, c, made, 2, undefined, v.dtype === 'float32' ? 'float16' : 'float32');
      c.names = ['V', 'Q'];
      return true;
    },
  ],
};

// ---- Cast / QuantizeLinear / DequantizeLinear ----------------------------------------

export const castFamily: Family = {
  name: 'Cast',
  valid(ek, rnd) {
    const x = ek.tensor(pick(rnd, ['float32', 'float16', 'int8', 'int64', 'bfloat16'] as DType[]), [int(rnd, 1, 5), int(rnd, 1, 5)]);
    return { call: { op: 'Cast', inputs: [x], attributes: { to: pick(rnd, ['float8e4m3fn', 'int4', 17, 1, 'float16']) }, names: [] }, tensors: [x] };
  },
  mutations: [
    function badTo(_ek, c, rnd) {
      c.attributes.to = pick(rnd, [0, 99, 'float128', 'fp8x', -1]);
      c.names = ['to'];
      return true;
    },
    function missingTo(_ek, c) {
      delete c.attributes.to;
      c.names = ['to'];
      return true;
    },
    function badSaturate(_ek, c, rnd) {
      c.attributes.saturate = pick(rnd, [2, -1, 'yes']);
      c.names = ['saturate'];
      return true;
    },
    function badRoundMode(_ek, c, rnd) {
      c.attributes.round_mode = pick(rnd, ['UP', 'ceil', 1]);
      c.names = ['round_mode'];
      return true;
    },
    unknownAttr,
    disposeSlot(['input']),
    function missingInput(_ek, c) {
      c.inputs[0] = null;
      c.names = ['input'];
      return true;
    },
    function wrongOutput(ek, c, _rnd, made) {
      const x = c.inputs[0] as Tensor;
      const o = ek.tensor('float64', [x.shape[0] + 1]);
      made.push(o);
      c.options = { outputs: [o] };
      c.names = ['outputs'];
      return true;
    },
  ],
};

function qdqValid(op: 'QuantizeLinear' | 'DequantizeLinear'): Family['valid'] {
  return (ek, rnd) => {
    const shape = [int(rnd, 1, 4), int(rnd, 2, 6)];
    const qt = pick(rnd, ['int8', 'uint8', 'int4', 'float8e4m3fn', 'int16'] as DType[]);
    const x = ek.tensor(op === 'QuantizeLinear' ? 'float32' : qt, shape);
    const axisMode = pick(rnd, ['tensor', 'axis']);
    const scale = ek.tensor('float32', axisMode === 'tensor' ? [] : [shape[1]], new Array(axisMode === 'tensor' ? 1 : shape[1]).fill(0.5));
    const zp = qt.startsWith('float8') ? null : ek.tensor(qt, scale.shape);
    const call: Call = { op, inputs: [x, scale, zp], attributes: { axis: 1 }, names: [] };
    return { call, tensors: [x, scale, ...(zp ? [zp] : [])] };
  };
}

const qdqMutations: Mut[] = [
  function scaleWrongShape(ek, c, rnd, made) {
    const x = c.inputs[0] as Tensor;
    swap(ek, c, made, 1, pick(rnd, [[x.shape[1] + 1], [2, 2, 2], [x.shape[0], x.shape[1], 1]]));
    c.inputs[2] = null;
    c.names = ['scale'];
    return true;
  },
  function blockNotFitting(_ek, c, rnd) {
    c.attributes.block_size = pick(rnd, [-1, 1000]);
    c.names = ['block_size', 'scale'];
    return true;
  },
  function badAxis(_ek, c, rnd) {
    const x = c.inputs[0] as Tensor;
    if ((c.inputs[1] as Tensor).rank === 0) return false; // per-tensor scales ignore axis
    c.attributes.axis = pick(rnd, [x.rank, -x.rank - 1, 9]);
    c.names = ['axis'];
    return true;
  },
  function scaleDtype(ek, c, rnd, made) {
    swap(ek, c, made, 1, undefined, pick(rnd, ['int32', 'float64', 'int8'] as DType[]));
    c.names = ['scale'];
    return true;
  },
  function zeroPointMismatch(ek, c, rnd, made) {
    const s = c.inputs[1] as Tensor;
    const zp = ek.tensor(pick(rnd, ['int32', 'float32'] as DType[]), s.shape);
    made.push(zp);
    c.inputs[2] = zp;
    c.names = ['zero_point'];
    return true;
  },
  function zeroPointShape(ek, c, _rnd, made) {
    const s = c.inputs[1] as Tensor;
    const zp = ek.tensor('int8', [...s.shape, 2]);
    made.push(zp);
    c.inputs[2] = zp;
    c.names = ['zero_point'];
    return true;
  },
  unknownAttr,
  disposeSlot(['x', 'scale', 'zero_point']),
];

export const quantizeFamily: Family = {
  name: 'QuantizeLinear',
  valid: qdqValid('QuantizeLinear'),
  mutations: [
    ...qdqMutations,
    function zeroOrNonFiniteScale(_ek, c, rnd) {
      const s = c.inputs[1] as Tensor;
      (s.data as Float32Array)[int(rnd, 0, s.size - 1)] = pick(rnd, [0, NaN, Infinity, -0]);
      c.names = ['scale'];
      return true;
    },
    function badOutputDtype(_ek, c, rnd) {
      c.inputs[2] = null;
      c.attributes.output_dtype = pick(rnd, ['float32', 'string', 99]);
      c.names = ['output_dtype'];
      return true;
    },
    function badSaturate(_ek, c) {
      c.attributes.saturate = 3;
      c.names = ['saturate'];
      return true;
    },
    function xNotFloat(ek, c, rnd, made) {
      swap(ek, c, made, 0, undefined, pick(rnd, ['bool', 'uint8', 'float8e4m3fn'] as DType[]));
      c.names = ['x'];
      return true;
    },
  ],
};

export const dequantizeFamily: Family = {
  name: 'DequantizeLinear',
  valid: qdqValid('DequantizeLinear'),
  mutations: [
    ...qdqMutations,
    function xNotQuantized(ek, c, _rnd, made) {
      swap(ek, c, made, 0, undefined, 'float64');
      c.inputs[2] = null;
      c.names = ['x'];
      return true;
    },
    function badOutputDtype(_ek, c, rnd) {
      c.attributes.output_dtype = pick(rnd, ['int8', 'int32', 77]);
      c.names = ['output_dtype'];
      return true;
    },
  ],
};

// ---- CumSum -------------------------------------------------------------------------

export const cumsumFamily: Family = {
  name: 'CumSum',
  valid(ek, rnd) {
    const rank = int(rnd, 1, 3);
    const x = ek.tensor(pick(rnd, ['float32', 'float64', 'int32', 'int64', 'float16', 'bfloat16'] as DType[]), Array.from({ length: rank }, () => int(rnd, 1, 5)));
    const axis = ek.tensor(pick(rnd, ['int32', 'int64'] as DType[]), [], [int(rnd, -rank, rank - 1)]);
    return { call: { op: 'CumSum', inputs: [x, axis], attributes: { exclusive: int(rnd, 0, 1), reverse: int(rnd, 0, 1) }, names: [] }, tensors: [x, axis] };
  },
  mutations: [
    function axisOutOfRange(_ek, c, rnd) {
      const x = c.inputs[0] as Tensor, a = c.inputs[1] as Tensor;
      setInt(a, 0, pick(rnd, [x.rank, -x.rank - 1, 1000]));
      c.names = ['axis'];
      return true;
    },
    function axisNotScalar(ek, c, _rnd, made) {
      swap(ek, c, made, 1, [2]);
      c.names = ['axis'];
      return true;
    },
    function axisDtype(ek, c, rnd, made) {
      swap(ek, c, made, 1, [], pick(rnd, ['float32', 'uint8', 'int16'] as DType[]));
      c.names = ['axis'];
      return true;
    },
    function xDtype(ek, c, rnd, made) {
      swap(ek, c, made, 0, undefined, pick(rnd, ['string', 'bool', 'int4', 'float8e4m3fn', 'complex64'] as DType[]));
      c.names = ['x'];
      return true;
    },
    function axisMissing(_ek, c) {
      c.inputs[1] = null;
      c.names = ['axis'];
      return true;
    },
    function badFlag(_ek, c, rnd) {
      const k = pick(rnd, ['exclusive', 'reverse']);
      c.attributes[k] = pick(rnd, [2, -1, 'true']);
      c.names = [k];
      return true;
    },
    unknownAttr,
    disposeSlot(['x', 'axis']),
    function outputWrongShape(ek, c, _rnd, made) {
      const x = c.inputs[0] as Tensor;
      const o = ek.tensor(x.dtype, [...x.shape, 2]);
      made.push(o);
      c.options = { outputs: [o] };
      c.names = ['outputs'];
      return true;
    },
    function outputAliasesInput(_ek, c) {
      c.options = { outputs: [c.inputs[0]] };
      c.names = ['outputs'];
      return true;
    },
  ],
};

// ---- scan ---------------------------------------------------------------------------

export const scanFamily: Family = {
  name: 'scan',
  valid(ek, rnd) {
    const L = int(rnd, 1, 5), n = int(rnd, 1, 4);
    const dtype = pick(rnd, ['float32', 'float64', 'int32'] as DType[]);
    const init = ek.tensor(dtype, [n]);
    const xs = ek.tensor(dtype, [L, n]);
    // The combine function allocates in free memory: compare live tensors, not all memory.
    const call: Call = { op: 'scan', inputs: [init, xs], attributes: {}, names: [], plain: true };
    const fused = rnd() < 0.5;
    let combine: (c: Tensor, x: Tensor) => unknown = fused ? ek.combine.add : (c: Tensor, x: Tensor) => ek.combine.add(c, x);
    let opts: Record<string, unknown> = {};
    call.invoke = () => ek.scan(combine as never, call.inputs[0], call.inputs[1], opts);
    // Mutations edit `combine` / `opts` through these setters.
    (call as Call & { setCombine: (f: typeof combine) => void; setOpts: (o: Record<string, unknown>) => void }).setCombine = (f) => { combine = f; };
    (call as Call & { setOpts: (o: Record<string, unknown>) => void }).setOpts = (o) => { opts = o; };
    return { call, tensors: [init, xs] };
  },
  mutations: [
    function lengthMismatch(_ek, c) {
      const xs = c.inputs[1] as Tensor;
      (c as unknown as { setOpts(o: object): void }).setOpts({ length: xs.shape[0] + 1 });
      c.names = ['length'];
      return true;
    },
    function badDim(_ek, c, rnd) {
      (c as unknown as { setOpts(o: object): void }).setOpts({ dim: pick(rnd, [2, -3, 1.5, 'x']) });
      c.names = ['dim'];
      return true;
    },
    function carryShapeChanges(ek, c, _rnd, made) {
      (c as unknown as { setCombine(f: unknown): void }).setCombine((carry: Tensor) => {
        const t = ek.tensor(carry.dtype, [carry.shape[0] + 1]);
        made.push(t);
        return [t, ek.tensor(carry.dtype, carry.shape)];
      });
      c.names = ['nextCarry', 'carry'];
      return true;
    },
    function carryDtypeChanges(ek, c) {
      (c as unknown as { setCombine(f: unknown): void }).setCombine((carry: Tensor) => [ek.tensor(carry.dtype === 'float32' ? 'float64' : 'float32', carry.shape), ek.tensor(carry.dtype, carry.shape)]);
      c.names = ['nextCarry', 'carry'];
      return true;
    },
    function carryStructureChanges(ek, c) {
      (c as unknown as { setCombine(f: unknown): void }).setCombine((carry: Tensor) => [[carry, carry], ek.tensor(carry.dtype, carry.shape)]);
      c.names = ['nextCarry', 'carry'];
      return true;
    },
    function outputAliasesInput(_ek, c) {
      (c as unknown as { setCombine(f: unknown): void }).setCombine((carry: Tensor, x: Tensor) => [carry, x]);
      c.names = ['carry', 'nextCarry', 'y'];
      return true;
    },
    function combineModifiesInput(ek, c) {
      (c as unknown as { setCombine(f: unknown): void }).setCombine((carry: Tensor, x: Tensor) => {
        (x.data as Float32Array)[0] = 123;
        return [ek.tensor(carry.dtype, carry.shape), ek.tensor(carry.dtype, carry.shape)];
      });
      c.names = ['modif', 'changed', 'x'];
      return true;
    },
    function disposedInit(ek, c, _rnd, made) {
      const t = c.inputs[0] as Tensor;
      const d = ek.tensor(t.dtype, t.shape);
      d.dispose();
      made.push(d);
      c.inputs[0] = d;
      c.names = ['init'];
      return true;
    },
    function combineNotAFunction(_ek, c) {
      (c as unknown as { setCombine(f: unknown): void }).setCombine(42 as never);
      c.names = ['combineFn'];
      return true;
    },
  ],
};

// ---- KVCache --------------------------------------------------------------------------

/**
 * KVCache calls: a cache with some filled positions, then one bad append / attend /
 * reset / setLengthsFromMask. The cache itself (keys, values, scales, lengths) must not change.
 */
export const kvCacheFamily: Family = {
  name: 'KVCache',
  valid(ek, rnd) {
    const B = int(rnd, 1, 3), H = int(rnd, 1, 2), D = int(rnd, 1, 8), C = int(rnd, 2, 8);
    const dtype = pick(rnd, ['float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn']);
    const cache = ek.kvCache({ layers: 2, batch: B, kvHeads: H, headDim: D, capacity: C, dtype });
    const k = ek.tensor('float32', [B, H, 1, D], Array.from({ length: B * H * D }, () => rnd() - 0.5));
    for (let l = 0; l < 2; l++) cache.append(l, k, k);
    cache.advance();
    const lengthsBefore = Array.from(cache.lengths);
    const views = [cache.keys(0), cache.values(0), cache.keys(1), cache.values(1)];
    const call: Call = {
      op: 'KVCache', inputs: [], attributes: {}, names: [], plain: true,
      // After the throw the lengths are unchanged too (the views' bytes are compared by the harness).
      check: () => {
        if (Array.from(cache.lengths).join() !== lengthsBefore.join()) throw new Error(`KVCache lengths changed: ${lengthsBefore} → ${Array.from(cache.lengths)}`);
      },
      cleanup: () => cache.dispose(),
    };
    (call as Call & { state: unknown }).state = { cache, B, H, D, C };
    return { call, tensors: [k, ...views] };
  },
  mutations: [
    function appendPastCapacity(ek, c, _rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number; C: number } }).state;
      const t = ek.tensor('float32', [s.B, s.H, s.C, s.D]);
      made.push(t);
      c.invoke = () => s.cache.append(0, t, t);
      c.names = ['capacity', 'append'];
      return true;
    },
    function appendWrongShape(ek, c, rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const shape = pick(rnd, [[s.B, s.H + 1, 1, s.D], [s.B, s.H, 1, s.D + 1], [s.B + 1, s.H, 1, s.D], [s.H, s.D]]);
      const t = ek.tensor('float32', shape);
      made.push(t);
      c.invoke = () => s.cache.append(0, t, t);
      c.names = ['k', 'append'];
      return true;
    },
    function appendMismatchedPair(ek, c, _rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const k = ek.tensor('float32', [s.B, s.H, 1, s.D]);
      const v = ek.tensor('float16', [s.B, s.H, 1, s.D]);
      made.push(k, v);
      c.invoke = () => s.cache.append(1, k, v);
      c.names = ['v'];
      return true;
    },
    function appendBadLengths(ek, c, rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const k = ek.tensor('float32', [s.B, s.H, 2, s.D]);
      made.push(k);
      const lengths = Array.from({ length: s.B }, () => 1);
      lengths[int(rnd, 0, s.B - 1)] = pick(rnd, [-1, 3, NaN, 1.5]);
      c.invoke = () => s.cache.append(0, k, k, { lengths });
      c.names = ['lengths'];
      return true;
    },
    function badLayer(ek, c, rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const k = ek.tensor('float32', [s.B, s.H, 1, s.D]);
      made.push(k);
      const layer = pick(rnd, [-1, 2, 1.5, NaN]);
      c.invoke = () => (rnd() < 0.5 ? s.cache.append(layer, k, k) : s.cache.attend(layer, k));
      c.names = ['layer'];
      return true;
    },
    function attendWrongHeads(ek, c, _rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const q = ek.tensor('float32', [s.B, s.H + 1, 1, s.D + 1]);
      made.push(q);
      c.invoke = () => s.cache.attend(0, q);
      c.names = ['q'];
      return true;
    },
    function attendBadScale(ek, c, rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const q = ek.tensor('float32', [s.B, s.H, 1, s.D]);
      made.push(q);
      c.invoke = () => s.cache.attend(0, q, { scale: pick(rnd, [NaN, Infinity, 'x' as unknown as number]) });
      c.names = ['scale'];
      return true;
    },
    function maskNotPrefix(_ek, c, rnd) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; C: number } }).state;
      const M = s.C;
      const data = new Array(s.B * M).fill(0);
      const b = int(rnd, 0, s.B - 1);
      data[b * M + M - 1] = 1; // a one after a zero: left padding
      c.invoke = () => s.cache.setLengthsFromMask({ shape: [s.B, M], data });
      c.names = ['mask'];
      return true;
    },
    function maskWrongShape(_ek, c) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; C: number } }).state;
      c.invoke = () => s.cache.setLengthsFromMask({ shape: [s.B + 1, s.C + 1], data: new Array((s.B + 1) * (s.C + 1)).fill(1) });
      c.names = ['mask'];
      return true;
    },
    function resetBadSeq(_ek, c, rnd) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number } }).state;
      c.invoke = () => s.cache.reset(pick(rnd, [-1, s.B, 0.5]));
      c.names = ['seq'];
      return true;
    },
    function disposedInput(ek, c, _rnd, made) {
      const s = (c as unknown as { state: { cache: ReturnType<Kernels['kvCache']>; B: number; H: number; D: number } }).state;
      const k = ek.tensor('float32', [s.B, s.H, 1, s.D]);
      k.dispose();
      made.push(k);
      c.invoke = () => s.cache.append(0, k, k);
      c.names = ['k'];
      return true;
    },
  ],
};
