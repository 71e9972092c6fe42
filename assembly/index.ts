// The export list of the module: every function the host (src/) calls, nothing else. A
// helper exported by a kernel file for other kernels (quant.ts's bit-exact scalar casts)
// stays out of it. Each kernel file documents its own buffer contract; the host guarantees
// the preconditions written there.

export { heapBase } from './memory';
export { scatterRows, scatterPackedRows, scatterRowsBits } from './scatter';
export { attentionScratchBytes, attention, copyRowsStrided } from './attention';
export {
  quantizeF32ToE4m3, castF32ToE4m3fnuz, castF32ToE5m2, castF32ToE5m2fnuz, castF32ToF16, castF32ToBf16,
  packBits, dequantizeE4m3ToF32, castE4m3fnuzToF32, castE5m2ToF32, castE5m2fnuzToF32, castF16ToF32,
  castBf16ToF32, decodeToF32, encodeFromF32, decodeToF64, f64ToF32, encodeFromF64, decodeToI64,
  encodeFromI64, quantizeF32ScratchBytes, quantizeF32, dequantizeF32,
} from './quant';
export {
  scanF32, scanF64, scanI32, scanI64, cumsumI64, scanHalfScratchBytes, scanHalf, linearScanF32, linearScanF64,
} from './scan';
export {
  matvecRows16F32, rmsnormF32, ropeF32, swigluF32, addF32, softmaxF32, argmaxF32, appendHalfRows,
  appendInt8Rows, appendE4m3Rows, attendF32, attendF16, attendBF16, attendE4m3, attendI8,
} from './llm';
export { attendQ8ScratchBytes } from './kvattend';
export { quantizeQ8, matvecQ8, matvecQ8Tiled } from './q8';
