/**
 * The dtype table: the one place that knows each element type's size, data array and
 * ONNX TensorProto code. Everything else (tensors, operators, tests, benchmarks) reads it.
 */
import { KernelError, show } from './errors.js';

export type DType =
  | 'float32' | 'float64' | 'float16' | 'bfloat16'
  | 'float8e4m3fn' | 'float8e4m3fnuz' | 'float8e5m2' | 'float8e5m2fnuz' | 'float8e8m0'
  | 'float4e2m1'
  | 'int8' | 'uint8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64'
  | 'int4' | 'uint4' | 'int2' | 'uint2'
  | 'bool' | 'string' | 'complex64' | 'complex128';

export type Kind = 'float' | 'int' | 'uint' | 'bool' | 'string' | 'complex';

export type ArrayCtor =
  | Float32ArrayConstructor | Float64ArrayConstructor | Int8ArrayConstructor
  | Uint8ArrayConstructor | Int16ArrayConstructor | Uint16ArrayConstructor
  | Int32ArrayConstructor | Uint32ArrayConstructor | BigInt64ArrayConstructor
  | BigUint64ArrayConstructor;

export type TypedData =
  | Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array
  | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

/** The array `data` is for each dtype (the dtype table of the README). */
export interface DataArrays {
  float32: Float32Array; float64: Float64Array; float16: Uint16Array; bfloat16: Uint16Array;
  float8e4m3fn: Uint8Array; float8e4m3fnuz: Uint8Array; float8e5m2: Uint8Array; float8e5m2fnuz: Uint8Array;
  float8e8m0: Uint8Array; float4e2m1: Uint8Array;
  int8: Int8Array; uint8: Uint8Array; int16: Int16Array; uint16: Uint16Array; int32: Int32Array; uint32: Uint32Array;
  int64: BigInt64Array; uint64: BigUint64Array;
  int4: Uint8Array; uint4: Uint8Array; int2: Uint8Array; uint2: Uint8Array;
  bool: Uint8Array; string: string[]; complex64: Float32Array; complex128: Float64Array;
}

/** `data` of a tensor of dtype D (of any dtype for D = DType: TypedData | string[]). */
export type DataOf<D extends DType> = DataArrays[D];

export interface DTypeInfo {
  readonly name: DType;
  /** ONNX TensorProto.DataType code. */
  readonly onnx: number;
  /** Bits of one element (2 and 4 for packed types, 128 for complex128). */
  readonly bits: number;
  /** The typed array `data` is exposed as (null for string). */
  readonly array: ArrayCtor | null;
  readonly kind: Kind;
  /** Value encoding of floats stored as bit patterns (float16, float8 …), else undefined. */
  readonly bitPattern?: boolean;
}

const T = (name: DType, onnx: number, bits: number, array: ArrayCtor | null, kind: Kind, bitPattern = false): DTypeInfo =>
  Object.freeze({ name, onnx, bits, array, kind, bitPattern });

export const DTYPES: Readonly<Record<DType, DTypeInfo>> = Object.freeze({
  float32: T('float32', 1, 32, Float32Array, 'float'),
  uint8: T('uint8', 2, 8, Uint8Array, 'uint'),
  int8: T('int8', 3, 8, Int8Array, 'int'),
  uint16: T('uint16', 4, 16, Uint16Array, 'uint'),
  int16: T('int16', 5, 16, Int16Array, 'int'),
  int32: T('int32', 6, 32, Int32Array, 'int'),
  int64: T('int64', 7, 64, BigInt64Array, 'int'),
  string: T('string', 8, 0, null, 'string'),
  bool: T('bool', 9, 8, Uint8Array, 'bool'),
  float16: T('float16', 10, 16, Uint16Array, 'float', true),
  float64: T('float64', 11, 64, Float64Array, 'float'),
  uint32: T('uint32', 12, 32, Uint32Array, 'uint'),
  uint64: T('uint64', 13, 64, BigUint64Array, 'uint'),
  complex64: T('complex64', 14, 64, Float32Array, 'complex'),
  complex128: T('complex128', 15, 128, Float64Array, 'complex'),
  bfloat16: T('bfloat16', 16, 16, Uint16Array, 'float', true),
  float8e4m3fn: T('float8e4m3fn', 17, 8, Uint8Array, 'float', true),
  float8e4m3fnuz: T('float8e4m3fnuz', 18, 8, Uint8Array, 'float', true),
  float8e5m2: T('float8e5m2', 19, 8, Uint8Array, 'float', true),
  float8e5m2fnuz: T('float8e5m2fnuz', 20, 8, Uint8Array, 'float', true),
  uint4: T('uint4', 21, 4, Uint8Array, 'uint'),
  int4: T('int4', 22, 4, Uint8Array, 'int'),
  float4e2m1: T('float4e2m1', 23, 4, Uint8Array, 'float', true),
  float8e8m0: T('float8e8m0', 24, 8, Uint8Array, 'float', true),
  uint2: T('uint2', 25, 2, Uint8Array, 'uint'),
  int2: T('int2', 26, 2, Uint8Array, 'int'),
});

export const DTYPE_NAMES = Object.freeze(Object.keys(DTYPES) as DType[]);

const BY_ONNX = new Map<number, DTypeInfo>(Object.values(DTYPES).map((d) => [d.onnx, d]));

/** Names other runtimes use for the same types (ONNX Runtime's tensor `type`, ONNX's own). */
const ALIASES: Record<string, DType> = {
  float: 'float32', double: 'float64', half: 'float16', float16: 'float16',
};

/** Looks up a dtype by name, alias or ONNX TensorProto code; undefined when unknown. */
export function findDType(x: unknown): DTypeInfo | undefined {
  if (typeof x === 'number') return BY_ONNX.get(x);
  if (typeof x === 'bigint') return BY_ONNX.get(Number(x));
  if (typeof x !== 'string') return undefined;
  const name = x.toLowerCase();
  // own properties only: 'constructor' or '__proto__' must not find Object's
  if (Object.hasOwn(DTYPES, name)) return (DTYPES as Record<string, DTypeInfo>)[name];
  return Object.hasOwn(ALIASES, name) ? DTYPES[ALIASES[name]] : undefined;
}

export function dtypeInfo(x: unknown, what = 'dtype'): DTypeInfo {
  const d = findDType(x);
  if (!d) throw new KernelError('INVALID_DTYPE', `${what}: expected one of ${DTYPE_NAMES.join(', ')} (or an ONNX TensorProto code), got ${show(x)}`);
  return d;
}

/** Bytes of storage for `count` elements (packed types round up to whole bytes). */
export function byteLengthOf(d: DTypeInfo, count: number): number {
  return d.kind === 'string' ? 0 : Math.ceil((count * d.bits) / 8);
}

/** Length of the `data` array for `count` elements. */
export function dataLengthOf(d: DTypeInfo, count: number): number {
  if (d.kind === 'string') return count;
  if (d.kind === 'complex') return count * 2;
  if (d.bits < 8) return Math.ceil((count * d.bits) / 8);
  return count;
}
