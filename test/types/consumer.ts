// A TypeScript consumer of the package, type-checked by test/types.test.ts (strict,
// skipLibCheck false, declarations emitted) in a temporary project where `edgekernels` is
// installed: dist/index.d.ts through package.json `exports`.
import {
  init, KernelError, OPS, type Llama, type DType, type Tensor, type TypedData, type CombineFn, type KVCacheOptions,
  type StorageDtype, type Kind, type ArrayCtor, type AttrKind, type AttrSpec, type AttrValue, type Attrs, type SlotSpec,
} from 'edgekernels';

const ek = await init();

// README, Quick start
const cache = ek.tensor('float32', [1, 8, 4096, 128]);
const step = ek.tensor('float32', [1, 8, 1, 128]);
const pos = ek.tensor('int64', [1], [0n]);
for (let t = 0; t < 16; t++) {
  step.data.fill(t);
  pos.data[0] = BigInt(t);
  ek.run('TensorScatter', [cache, step, pos], { axis: -2 });
}

// README, CumSum: an output of run() fills the next call's outputs
const x = ek.tensor('float32', [2, 3], [1, 2, 3, 4, 5, 6]);
const axis = { dtype: 'int64', shape: [], data: [-1n] };
const [y] = ek.run('CumSum', [x, axis], { exclusive: 1, reverse: 1 });
ek.run('CumSum', [x, axis], { exclusive: 1, reverse: 1 }, { outputs: [y] });
// with a plain cache as input 0 of an in-place operator, output 0 is that plain object
const plainCache = { dtype: 'float32', shape: [1, 1, 2, 1], data: new Float32Array(2) };
const [same] = ek.run('TensorScatter', [plainCache, { dtype: 'float32', shape: [1, 1, 1, 1], data: [1] }, pos], { axis: -2 });
// @ts-expect-error not necessarily a Tensor
export const notTensor: Tensor = same!;

// README KVCache: 'a dtype may also be given by its ONNX TensorProto code'
ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 8, dtype: 10 }).dispose();

// `data` is the dtype's array (README dtype table)
export const f32: Float32Array = ek.tensor('float32', [1]).data;
export const f64: Float64Array = ek.tensor('float64', [1]).data;
export const f16: Uint16Array = ek.tensor('float16', [1]).data;
export const bf16: Uint16Array = ek.tensor('bfloat16', [1]).data;
export const e4m3: Uint8Array = ek.tensor('float8e4m3fn', [1]).data;
export const e8m0: Uint8Array = ek.tensor('float8e8m0', [1]).data;
export const fp4: Uint8Array = ek.tensor('float4e2m1', [1]).data;
export const i8: Int8Array = ek.tensor('int8', [1]).data;
export const u8: Uint8Array = ek.tensor('uint8', [1]).data;
export const b: Uint8Array = ek.tensor('bool', [1]).data;
export const i16: Int16Array = ek.tensor('int16', [1]).data;
export const u16: Uint16Array = ek.tensor('uint16', [1]).data;
export const i32: Int32Array = ek.tensor('int32', [1]).data;
export const u32: Uint32Array = ek.tensor('uint32', [1]).data;
export const i64: BigInt64Array = ek.tensor('int64', [1]).data;
export const u64: BigUint64Array = ek.tensor('uint64', [1]).data;
export const i4: Uint8Array = ek.tensor('int4', [2]).data;
export const u2: Uint8Array = ek.tensor('uint2', [4]).data;
export const c64: Float32Array = ek.tensor('complex64', [1]).data;
export const c128: Float64Array = ek.tensor('complex128', [1]).data;
export const s: string[] = ek.tensor('string', [1]).data;
// @ts-expect-error float32 data is not a BigInt64Array (nor any)
export const wrong: BigInt64Array = ek.tensor('float32', [1]).data;
// a dtype known only at run time: the union of all of them
const d: DType | number = 1;
export const any: TypedData | string[] = ek.tensor(d, [1]).data;
export const narrowed: Tensor<'float32'> = cache;
export const wide: Tensor = cache;

// inferred types of public values must be nameable from the package root (declaration emit)
export const data = x.data;
export const outs = ek.run('Cast', [x], { to: 'float16' });
export const exportsOf = ek.exports;
export const prepare = ek.prepareOutputs;
export const owner = x.owner;
const kv = ek.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 4, capacity: 8 });
export const setLengths = kv.setLengthsFromMask;
declare const model: Llama;
export const llmKernels = model.kernels;
export const ops = OPS;

try {
  ek.tensor('nope', [1]);
} catch (e) {
  if (e instanceof KernelError) console.log(e.code);
}

// README, Scans: the combine function sees init's and xs's structure as package tensors
const [c0, ys0] = ek.scan(ek.combine.add, ek.tensor('float32', [], [0]), ek.tensor('float32', [5], [0, 1, 2, 3, 4]));
export const cumsumCarry: Float32Array = c0.data;
export const cumsumYs: Tensor = ys0;
const xs3 = ek.tensor('float32', [4, 3]);
const [state, out] = ek.scan((carry, x) => {
  const sum = ek.tensor('float32', [3], carry.sum.data.map((v, i) => v + x.data[i]));
  const n = ek.tensor('int32', [], [carry.n.data[0] + 1]);
  return [{ sum, n }, { mean: ek.tensor('float32', [3], sum.data.map((v) => v / n.data[0])) }];
}, { sum: ek.tensor('float32', [3]), n: ek.tensor('int32', []) }, xs3);
export const stateN: Int32Array = state.n.data;
export const outMean: Float32Array = out.mean.data;
// @ts-expect-error the carry has no key `count`
export const noKey = state.count;
const [[f10, f11], fib] = ek.scan(([a, b]) => {
  const [p, q] = [a.data[0], b.data[0]];
  return [[ek.tensor('int32', [], [q]), ek.tensor('int32', [], [p + q])], ek.tensor('int32', [], [p])];
}, [ek.tensor('int32', [], [0]), ek.tensor('int32', [], [1])], null, { length: 10 });
export const fibs: Int32Array = fib.data;
export const pair: [Int32Array, Int32Array] = [f10.data, f11.data];
// a plain init: its leaves reach the function as tensors of the literal's dtype
ek.scan((carry, x) => {
  const isNull: null = x;
  const f: Float32Array = carry.data;
  // @ts-expect-error a float32 carry's data is not an Int32Array
  const wrongData: Int32Array = carry.data;
  return [ek.tensor('float32', [1], f), null];
}, { dtype: 'float32', shape: [1], data: [0] }, null, { length: 2 });
// nextCarry is a pytree of tensors: a string is caught at compile time (it was typed unknown)
// @ts-expect-error a string is not a tensor pytree
ek.scan((carry) => ['not a tensor', null], ek.tensor('float32', [1]), null, { length: 1 });
// a bare CombineFn's carry and x are unknown, not any
// @ts-expect-error carry is unknown
export const loose: CombineFn = (carry, x) => [carry.nonexistent, x];

// a cache needs capacity unless it has a window
// @ts-expect-error capacity is required without a window
export const noCapacity: KVCacheOptions = { layers: 1, batch: 1, kvHeads: 1, headDim: 8 };
export const windowed: KVCacheOptions = { layers: 1, batch: 1, kvHeads: 1, headDim: 8, window: 16 };
// the types public declarations name are importable
export const storage: StorageDtype = 'int8';
export const kind: Kind = 'float';
export const ctor: ArrayCtor = Float32Array;
export const attr: AttrSpec | AttrKind | AttrValue | Attrs | SlotSpec | null = null;
