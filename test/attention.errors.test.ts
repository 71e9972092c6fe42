/**
 * Bad input to the attention operators: each is a KernelError with the right code, a
 * message naming the input, and nothing written (inputs and a caller-provided output keep
 * their bytes).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expectKernelError, init, type Kernels, type Tensor, snapshot } from './helpers';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});

function t(dtype: string, shape: number[], fill = 0.5): Tensor {
  const x = ek.tensor(dtype, shape);
  const d = x.data as Float32Array;
  for (let i = 0; i < d.length; i++) d[i] = dtype === 'float32' ? fill + i * 1e-3 : dtype === 'bool' ? 1 : (i % 3) + 1;
  return x;
}

/** Runs op and expects a KernelError; every tensor involved keeps its bytes. */
function bad(op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>, code: string, pattern: RegExp, out?: Tensor): void {
  const all = [...inputs.filter((x): x is Tensor => x !== null), ...(out ? [out] : [])];
  const before = all.map(snapshot);
  const live = ek.stats().tensorsLive;
  expectKernelError(() => ek.run(op, inputs, attrs, out ? { outputs: [out] } : {}), code, pattern);
  all.forEach((x, i) => expect(snapshot(x), `tensor ${i} unchanged`).toEqual(before[i]));
  expect(ek.stats().tensorsLive).toBe(live);
}

describe('TRT_Attention rejects bad input with nothing written', () => {
  it('shapes, ranks, heads, head sizes, forms', () => {
    const Q = t('float32', [2, 4, 3, 8]), K = t('float32', [2, 2, 5, 8]), V = t('float32', [2, 2, 5, 8]);
    const out = t('float32', [2, 4, 3, 8], 9);
    bad('TRT_Attention', [t('float32', [2, 4, 8]), K, V], {}, 'INVALID_SHAPE', /Q.*padded_bhnd/);
    bad('TRT_Attention', [Q, t('float32', [2, 3, 5, 8]), t('float32', [2, 3, 5, 8])], {}, 'INVALID_SHAPE', /multiple of K\/V heads/, out);
    bad('TRT_Attention', [Q, t('float32', [2, 2, 5, 6]), V], {}, 'INVALID_SHAPE', /head size 6 differs from Q's 8/, out);
    bad('TRT_Attention', [Q, K, t('float32', [2, 2, 4, 8])], {}, 'INVALID_SHAPE', /input V/, out);
    bad('TRT_Attention', [Q, t('float32', [3, 2, 5, 8]), t('float32', [3, 2, 5, 8])], {}, 'INVALID_SHAPE', /batch 3 differs/, out);
    bad('TRT_Attention', [Q, K, V], { kv_form: 'packed_nhd' }, 'INVALID_SHAPE', /packed_nhd expects \[T,H,D\]/, out);
    bad('TRT_Attention', [Q, K, V], {}, 'INVALID_SHAPE', /outputs\[0\]/, t('float32', [2, 4, 3, 7]));
  });
  it('lengths: packed without lengths, not cumulative, past the tensor, wrong shape, wrong dtype', () => {
    const Qp = t('float32', [6, 2, 4]), Kp = t('float32', [7, 1, 4]), Vp = t('float32', [7, 1, 4]);
    const attrs = { query_form: 'packed_nhd', kv_form: 'packed_nhd' };
    const ql = ek.tensor('int32', [3], [0, 2, 6]), kl = ek.tensor('int32', [3], [0, 3, 7]);
    bad('TRT_Attention', [Qp, Kp, Vp], attrs, 'MISSING_INPUT', /query_lengths is required/);
    bad('TRT_Attention', [Qp, Kp, Vp, null, ql], attrs, 'MISSING_INPUT', /kv_lengths is required/);
    bad('TRT_Attention', [Qp, Kp, Vp, null, ek.tensor('int32', [3], [0, 4, 2]), kl], attrs, 'INVALID_VALUE', /must not decrease/);
    bad('TRT_Attention', [Qp, Kp, Vp, null, ek.tensor('int32', [3], [1, 2, 6]), kl], attrs, 'INVALID_VALUE', /start at 0/);
    bad('TRT_Attention', [Qp, Kp, Vp, null, ql, ek.tensor('int32', [3], [0, 3, 8])], attrs, 'INVALID_VALUE', /end at 7/);
    bad('TRT_Attention', [Qp, Kp, Vp, null, ql, ek.tensor('int32', [4], [0, 3, 5, 7])], attrs, 'INVALID_SHAPE', /kv_lengths.*\[3\]/);
    bad('TRT_Attention', [Qp, Kp, Vp, null, ek.tensor('float32', [3], [0, 2, 6]), kl], attrs, 'INVALID_DTYPE', /query_lengths/);
    // padded KV: per-batch lengths within the capacity
    const Q = t('float32', [2, 2, 1, 4]), K = t('float32', [2, 1, 5, 4]), V = t('float32', [2, 1, 5, 4]);
    bad('TRT_Attention', [Q, K, V, null, null, ek.tensor('int32', [2], [3, 6])], {}, 'INVALID_VALUE', /kv_lengths\[1\].*\[0, 5\].*6/);
    bad('TRT_Attention', [Q, K, V, null, null, ek.tensor('int32', [2], [3, -1])], {}, 'INVALID_VALUE', /kv_lengths\[1\]/);
    bad('TRT_Attention', [Q, K, V, null, ek.tensor('int32', [3], [0, 2, 3]), null], {}, 'INVALID_VALUE', /query_lengths.*2 queries.*1/);
  });
  it('masks: with a causal kind, not broadcastable, wrong dtype', () => {
    const Q = t('float32', [1, 2, 3, 4]), K = t('float32', [1, 2, 5, 4]), V = t('float32', [1, 2, 5, 4]);
    const out = t('float32', [1, 2, 3, 4], 3);
    bad('TRT_Attention', [Q, K, V, t('bool', [3, 5])], { causal_kind: 'upper_left' }, 'INVALID_ATTRIBUTE', /attn_mask cannot be combined with causal_kind/, out);
    bad('TRT_Attention', [Q, K, V, t('bool', [4, 5])], {}, 'INVALID_SHAPE', /does not broadcast/, out);
    bad('TRT_Attention', [Q, K, V, t('float32', [3, 4])], {}, 'INVALID_SHAPE', /key dim must be 1 or 5/, out);
    bad('TRT_Attention', [Q, K, V, t('float32', [1, 1, 1, 3, 5])], {}, 'INVALID_SHAPE', /rank/, out);
    bad('TRT_Attention', [Q, K, V, ek.tensor('float8e4m3fn', [3, 5])], {}, 'INVALID_DTYPE', /attn_mask: expected bool .*got float8e4m3fn/, out);
    bad('Attention', [Q, K, V, ek.tensor('int4', [3, 5])], {}, 'INVALID_DTYPE', /attn_mask: expected bool .*got int4/, out);
    bad('Attention', [Q, t('float64', [1, 2, 5, 4]), V], {}, 'INVALID_DTYPE', /K: expected float32 \(Q's dtype\), got float64/, out);
  });
  it('attributes and dtypes', () => {
    const Q = t('float32', [1, 2, 3, 4]), K = t('float32', [1, 2, 5, 4]), V = t('float32', [1, 2, 5, 4]);
    bad('TRT_Attention', [Q, K, V], { causal_kind: 'diagonal' }, 'INVALID_ATTRIBUTE', /causal_kind/);
    bad('TRT_Attention', [Q, K, V], { TRT_normalization_op: 'sigmoid' }, 'INVALID_ATTRIBUTE', /TRT_normalization_op/);
    bad('TRT_Attention', [Q, K, V], { nb_rank: 2 }, 'INVALID_ATTRIBUTE', /nb_rank: only 1/);
    bad('TRT_Attention', [Q, K, V], { query_form: 'bshd' }, 'INVALID_ATTRIBUTE', /query_form/);
    bad('TRT_Attention', [Q, K, V], { unknown_thing: 1 }, 'INVALID_ATTRIBUTE', /unknown attribute/);
    bad('TRT_Attention', [Q, K, t('float16', [1, 2, 5, 4])], {}, 'INVALID_DTYPE', /input V.*float32/);
    bad('TRT_Attention', [t('float16', [1, 2, 3, 4]), K, V], {}, 'INVALID_DTYPE', /input K/);
    bad('TRT_Attention', [ek.tensor('int32', [1, 2, 3, 4]), K, V], {}, 'INVALID_DTYPE', /input Q/);
  });
});

describe('ONNX Attention rejects bad input with nothing written', () => {
  it('ranks, heads, sizes, past, nonpad, masks, attributes, dtypes', () => {
    const Q = t('float32', [1, 4, 2, 8]), K = t('float32', [1, 2, 3, 8]), V = t('float32', [1, 2, 3, 8]);
    const out = t('float32', [1, 4, 2, 8], 7);
    bad('Attention', [Q, t('float32', [1, 3, 8]), V], {}, 'INVALID_SHAPE', /input K: expected rank 4/, out);
    bad('Attention', [t('float32', [1, 2, 32]), t('float32', [1, 3, 16]), t('float32', [1, 3, 16])], {}, 'INVALID_ATTRIBUTE', /q_num_heads and kv_num_heads/);
    bad('Attention', [t('float32', [1, 2, 30]), t('float32', [1, 3, 16]), t('float32', [1, 3, 16])], { q_num_heads: 4, kv_num_heads: 2 }, 'INVALID_SHAPE', /not divisible by q_num_heads/);
    bad('Attention', [Q, t('float32', [1, 3, 3, 8]), t('float32', [1, 3, 3, 8])], {}, 'INVALID_SHAPE', /multiple of kv heads/, out);
    bad('Attention', [Q, t('float32', [1, 2, 3, 6]), V], {}, 'INVALID_SHAPE', /head size 6/, out);
    bad('Attention', [Q, K, V, null, t('float32', [1, 2, 4, 8])], {}, 'MISSING_INPUT', /past_key and past_value/, out);
    bad('Attention', [Q, K, V, null, t('float32', [1, 2, 4, 7]), t('float32', [1, 2, 4, 8])], {}, 'INVALID_SHAPE', /past_key/, out);
    bad('Attention', [Q, K, V, null, null, null, ek.tensor('int64', [1], [4n])], {}, 'INVALID_VALUE', /nonpad_kv_seqlen\[0\]/, out);
    bad('Attention', [Q, K, V, null, null, null, ek.tensor('int64', [2], [1n, 2n])], {}, 'INVALID_SHAPE', /nonpad_kv_seqlen/, out);
    bad('Attention', [Q, K, V, t('float32', [2, 4])], {}, 'INVALID_SHAPE', /last dim 4 exceeds the total key length 3/, out);
    bad('Attention', [Q, K, V, t('float32', [3, 3])], {}, 'INVALID_SHAPE', /does not broadcast/, out);
    bad('Attention', [Q, K, V], { qk_matmul_output_mode: 4 }, 'INVALID_ATTRIBUTE', /qk_matmul_output_mode/, out);
    bad('Attention', [Q, K, V], { softcap: -1 }, 'INVALID_ATTRIBUTE', /softcap/, out);
    // FLOAT attributes are float32 (in ONNX and in the kernels): 3.5e38 is Infinity there
    bad('Attention', [Q, K, V], { softcap: 3.5e38 }, 'INVALID_ATTRIBUTE', /softcap: expected a number finite in float32/, out);
    bad('Attention', [Q, K, V], { scale: -3.5e38 }, 'INVALID_ATTRIBUTE', /scale: expected a number finite in float32/, out);
    bad('Attention', [Q, K, V], { left_window_size: -2 }, 'INVALID_ATTRIBUTE', /left_window_size.*-1 \(unbounded\) or a size >= 0.*-2/, out);
    bad('Attention', [Q, K, V], { right_window_size: 1.5 }, 'INVALID_ATTRIBUTE', /right_window_size/, out);
    bad('Attention', [Q, K, V], { softmax_precision: 7 }, 'INVALID_ATTRIBUTE', /softmax_precision/, out);
    bad('Attention', [Q, t('float16', [1, 2, 3, 8]), V], {}, 'INVALID_DTYPE', /input K: expected float32/, out);
    bad('Attention', [Q, K, V, null, t('float32', [1, 2, 4, 8]), t('float16', [1, 2, 4, 8])], {}, 'INVALID_DTYPE', /past_value/, out);
  });
});

describe('TRT_QuantizedAttention rejects bad input with nothing written', () => {
  it('quantization type and scale, 3D without heads', () => {
    const Q = t('float32', [1, 2, 3, 4]), K = t('float32', [1, 2, 5, 4]), V = t('float32', [1, 2, 5, 4]);
    const out = t('float32', [1, 2, 3, 4], 5);
    bad('TRT_QuantizedAttention', [Q, K, V], { normalization_quantize_to_type: 'uint8' }, 'INVALID_ATTRIBUTE', /normalization_quantize_to_type/, out);
    bad('TRT_QuantizedAttention', [Q, K, V], { normalization_quantize_to_type: 19 }, 'INVALID_ATTRIBUTE', /normalization_quantize_to_type/, out);
    bad('TRT_QuantizedAttention', [Q, K, V, null, ek.tensor('float32', [1], [0])], {}, 'INVALID_VALUE', /normalization_quantize_scale.*> 0/, out);
    bad('TRT_QuantizedAttention', [Q, K, V, null, ek.tensor('float32', [1], [NaN])], {}, 'INVALID_VALUE', /normalization_quantize_scale/, out);
    bad('TRT_QuantizedAttention', [Q, K, V, null, ek.tensor('float32', [2], [1, 1])], {}, 'INVALID_SHAPE', /scalar/, out);
    bad('TRT_QuantizedAttention', [t('float32', [1, 3, 8]), t('float32', [1, 5, 8]), t('float32', [1, 5, 8])], {}, 'INVALID_ATTRIBUTE', /head-count attribute/);
    bad('TRT_QuantizedAttention', [Q, K, V], { query_form: 'packed_nhd' }, 'INVALID_SHAPE', /packed_nhd expects/, out);
    bad('TRT_QuantizedAttention', [Q, K, V], { scale: 1e39 }, 'INVALID_ATTRIBUTE', /scale: expected a number finite in float32.*1e\+39/, out);
    // head size 0 without a scale: the default 1/sqrt(0) is infinite (an explicit scale is accepted)
    const Q0 = t('float32', [1, 2, 3, 0]), K0 = t('float32', [1, 2, 5, 0]), V0 = t('float32', [1, 2, 5, 4]);
    bad('TRT_QuantizedAttention', [Q0, K0, V0], {}, 'INVALID_SHAPE', /query: head size 0.*give the scale attribute/);
    bad('Attention', [Q0, K0, V0], {}, 'INVALID_SHAPE', /Q: head size 0.*give the scale attribute/);
    const [y0] = ek.run('Attention', [Q0, K0, V0], { scale: 1 }) as Tensor[];
    expect(y0.shape).toEqual([1, 2, 3, 4]);
    y0.dispose();
  });
});
