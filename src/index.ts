/** Public exports shared by every runtime entry. */
export { Kernels, type InitOptions, type Stats, type RunOptions, type BuildName, type WasmSource } from './kernels.js';
export { KernelError, ERROR_CODES, type KernelErrorCode } from './errors.js';
export { Tensor, type PlainTensor, type TensorLike, type TensorOwner } from './tensor.js';
export { DTYPES, DTYPE_NAMES, type ArrayCtor, type DType, type DTypeInfo, type DataArrays, type DataOf, type Kind, type TypedData } from './dtypes.js';
export { OPS } from './ops/index.js';
export { type AttrKind, type AttrSpec, type AttrValue, type Attrs, type KernelExports, type OpContext, type OpDef, type OutputRequest, type OutputSpec, type SlotSpec } from './ops/registry.js';
export { type CombineFn, type Combiner, type CombineName, type Combiners, type LinearScanOptions, type Pytree, type ScanOptions, type ScanTensors } from './scan.js';
export { KVCache, TRT_ATTENTION_MIN_WORK, type KVCacheOptions, type KVCacheBaseOptions, type AppendOptions, type AttendOptions, type MaskInput, type StorageDtype } from './kvcache.js';
export * from './llm/index.js';
