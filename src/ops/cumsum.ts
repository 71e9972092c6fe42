/**
 * CumSum (ONNX 14): cumulative sum of x along `axis` (an int32 / int64 scalar input,
 * negative counts from the end); `exclusive` starts from 0 instead of x[0]; `reverse`
 * sums from the end. float32 / float64 / int32 run the fused add scan (assembly/scan.ts:
 * lanes-vectorized when the axis is not innermost, in-register prefix scan when it is);
 * int64 wraps modulo 2^64; uint32 / uint64 run the int32 / int64 kernels (a wrapping sum
 * has the same bits signed or unsigned); float16 / bfloat16 add in their own arithmetic, as
 * the ONNX reference (NumPy) does: every partial sum rounded to the storage type (nearest
 * even) before the next value is added, widened and rounded with SIMD.
 */
import { show } from '../errors.js';
import { fail, product, readInts } from './checks.js';
import type { OpDef } from './registry.js';

// every dtype of CumSum-14's T
const DTYPES = ['float32', 'float64', 'int32', 'int64', 'uint32', 'uint64', 'float16', 'bfloat16'];
const SCAN_KERNEL: Record<string, string> = { float32: 'scanF32', float64: 'scanF64', int32: 'scanI32', uint32: 'scanI32' };

const cumsum: OpDef = {
  name: 'CumSum',
  inputs: [{ name: 'x' }, { name: 'axis' }],
  outputs: [{ name: 'y' }],
  attributes: {
    exclusive: { kind: 'int', default: 0, values: [0, 1] },
    reverse: { kind: 'int', default: 0, values: [0, 1] },
  },
  run(ctx, [x, axisT], attrs, requests) {
    const op = 'CumSum';
    if (!DTYPES.includes(x!.dtype)) fail('INVALID_DTYPE', `${op} input x: expected ${DTYPES.join(', ')}, got ${x!.dtype}`);
    const rank = x!.rank;
    if (rank === 0) fail('INVALID_SHAPE', `${op} input x: expected rank >= 1, got a scalar`);
    if (axisT!.dtype !== 'int32' && axisT!.dtype !== 'int64') fail('INVALID_DTYPE', `${op} input axis: expected int32 or int64, got ${axisT!.dtype}`);
    if (axisT!.size !== 1 || axisT!.rank > 1) fail('INVALID_SHAPE', `${op} input axis: expected a scalar (shape [] or [1]), got shape ${show([...axisT!.shape])}`);
    const a = readInts(axisT!, `${op} input axis`)[0];
    if (a < -rank || a >= rank) fail('INVALID_VALUE', `${op} input axis: expected an axis in [${-rank}, ${rank - 1}] for rank ${rank}, got ${a}`);
    const axis = a < 0 ? a + rank : a;
    const [y] = ctx.prepareOutputs(op, [{ dtype: x!.dtype, shape: x!.shape }], requests, [true], [x, axisT]);
    if (y === null) return [null];
    const O = product(x!.shape, 0, axis), N = x!.shape[axis], I = product(x!.shape, axis + 1);
    if (O * N * I === 0) return [y];
    const flags = (attrs.reverse ? 1 : 0) | (attrs.exclusive ? 2 : 0);
    const k = SCAN_KERNEL[x!.dtype];
    if (k) ctx.exports[k](x!.byteOffset, y.byteOffset, 0, 0, O, N, I, 0, flags);
    else if (x!.dtype === 'int64' || x!.dtype === 'uint64') ctx.exports.cumsumI64(x!.byteOffset, y.byteOffset, O, N, I, flags);
    else ctx.exports.scanHalf(x!.byteOffset, y.byteOffset, 0, 0, ctx.scratch(ctx.exports.scanHalfScratchBytes(I) >>> 0), O, N, I, 0, flags | (x!.dtype === 'bfloat16' ? 4 : 0));
    return [y];
  },
};

export const cumsumOps: readonly OpDef[] = [cumsum];
