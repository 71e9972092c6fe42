/**
 * Tensor: a block of the instance's linear memory with a dtype and a shape.
 *
 * `data` is a typed view derived from the memory's current buffer: memory.grow detaches
 * every view, so the view is rebuilt whenever its buffer is no longer the memory's
 * buffer (DESIGN.md rule 3). Never keep `t.data` across a call that may allocate; read
 * `t.data` again instead.
 */
import { type DataOf, type DType, type DTypeInfo, type TypedData, byteLengthOf, dataLengthOf, dtypeInfo } from './dtypes.js';
import { KernelError, show } from './errors.js';

/** What a tensor needs from the instance that owns it. */
export interface TensorOwner {
  readonly memory: WebAssembly.Memory;
  /** True once the owner (a Kernels instance) is disposed: its views are dead too. */
  readonly disposed?: boolean;
  releaseTensor(t: Tensor): void;
}

/** A tensor given by value: ours, ONNX Runtime's ({ type, dims, data }) or plain JSON. */
export interface PlainTensor {
  dtype?: DType | string | number;
  type?: string;
  shape?: readonly number[];
  dims?: readonly number[];
  data: ArrayLike<unknown> | Iterable<unknown>;
}

export type TensorLike = Tensor | PlainTensor;

/** A tensor of dtype D: `data` is that dtype's array (Float32Array for 'float32', …). */
export class Tensor<D extends DType = DType> {
  readonly dtype: D;
  readonly info: DTypeInfo;
  readonly shape: readonly number[];
  /** Number of elements. */
  readonly size: number;
  /** Bytes of storage (packed types round up); 0 for string. */
  readonly byteLength: number;
  /** Offset of the first byte in the linear memory; −1 for host-side string tensors. */
  readonly byteOffset: number;
  /** @internal */ readonly owner: TensorOwner;
  private view: TypedData | null = null;
  private strings: string[] | null;
  private alive = true;

  /** @internal — use ek.tensor(). */
  constructor(owner: TensorOwner, info: DTypeInfo, shape: readonly number[], byteOffset: number, strings: string[] | null = null) {
    this.owner = owner;
    this.info = info;
    this.dtype = info.name as D;
    // a frozen shape (another tensor's) is shared as is: copying and re-freezing it cost ~0.6 µs
    this.shape = Object.isFrozen(shape) ? shape : Object.freeze(shape.slice());
    this.size = shapeSize(shape);
    this.byteLength = byteLengthOf(info, this.size);
    this.byteOffset = byteOffset;
    // a string tensor's host array has its shape's length, as a typed view does: sealed, so
    // data.push / data.length = … cannot leave operators reading undefined or writing past
    // the shape (elements stay writable)
    this.strings = strings === null ? null : Object.seal(strings);
  }

  get rank(): number {
    return this.shape.length;
  }

  get disposed(): boolean {
    return !this.alive || this.owner.disposed === true;
  }

  /** The live data array (see the dtype table in the README). */
  get data(): DataOf<D> {
    this.assertAlive('tensor');
    if (this.strings) return this.strings as DataOf<D>;
    const buf = this.owner.memory.buffer;
    if (this.view === null || this.view.buffer !== buf) {
      const A = this.info.array!;
      this.view = new A(buf, this.byteOffset, dataLengthOf(this.info, this.size)) as TypedData;
    }
    return this.view as DataOf<D>;
  }

  /** A live byte view of the storage (valid until the next call that may allocate). */
  bytes(): Uint8Array {
    this.assertAlive('tensor');
    if (this.strings) throw new KernelError('INVALID_DTYPE', `tensor.bytes(): a string tensor (string${show(this.shape)}) lives on the host and has no bytes in the linear memory; read its data`);
    return new Uint8Array(this.owner.memory.buffer, this.byteOffset, this.byteLength);
  }

  dispose(): void {
    if (!this.alive) return;
    this.alive = false;
    this.view = null;
    this.strings = null;
    this.owner.releaseTensor(this);
  }

  /** @internal */
  assertAlive(what: string): void {
    if (!this.alive) throw new KernelError('DISPOSED', `${what}: the tensor (${this.dtype}${show(this.shape)}) was disposed`);
    // a view (a KVCache's keys(l)) is in no live set, so ek.dispose() cannot mark it: ask the owner
    if (this.owner.disposed === true) throw new KernelError('DISPOSED', `${what}: the tensor's Kernels instance was disposed`);
  }
}

export function isTensor(x: unknown): x is Tensor {
  return x instanceof Tensor;
}

export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Checks a shape: an array of non-negative safe integers. */
export function checkShape(shape: unknown, what: string): number[] {
  if (!Array.isArray(shape) && !ArrayBuffer.isView(shape)) {
    throw new KernelError('INVALID_SHAPE', `${what}: expected an array of dimensions, got ${show(shape)}`);
  }
  const out: number[] = [];
  for (const d of Array.from(shape as ArrayLike<unknown>)) {
    const n = typeof d === 'bigint' ? Number(d) : d;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      throw new KernelError('INVALID_SHAPE', `${what}: dimensions must be non-negative integers, got ${show(Array.from(shape as ArrayLike<unknown>))}`);
    }
    out.push(n === 0 ? 0 : n); // (−0 is 0: a size or byte length of −0 would follow it)
  }
  return out;
}

/** Normalizes the dtype and shape of a plain tensor. */
export function plainMeta(p: PlainTensor, what: string): { info: DTypeInfo; shape: number[] } {
  if (p === null || typeof p !== 'object' || !('data' in p)) {
    throw new KernelError('INVALID_ARGUMENT', `${what}: expected a Tensor or { dtype, shape, data }, got ${show(p)}`);
  }
  const info = dtypeInfo(p.dtype ?? p.type, `${what}.dtype`);
  const shape = checkShape(p.shape ?? p.dims, `${what}.shape`);
  return { info, shape };
}

/** Value range of each integer data array (bit patterns, packed bytes and bool codes included). */
const INT_RANGE = new Map<unknown, readonly [number, number]>([
  [Int8Array, [-128, 127]], [Uint8Array, [0, 255]], [Int16Array, [-32768, 32767]], [Uint16Array, [0, 65535]],
  [Int32Array, [-(2 ** 31), 2 ** 31 - 1]], [Uint32Array, [0, 2 ** 32 - 1]],
]);

/** One plain value as a number: numbers, booleans, bigints, numeric strings ("NaN", "-Infinity", "1.5"); else undefined. */
function plainNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v !== 'string' || v.trim() === '') return undefined;
  const n = Number(v);
  return Number.isNaN(n) && v.trim() !== 'NaN' ? undefined : n;
}

/** One plain value as a bigint for int64 / uint64 (integers only, in range); else undefined. */
function plainBigInt(v: unknown, signed: boolean): bigint | undefined {
  let b: bigint;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'boolean') b = v ? 1n : 0n;
  else if (typeof v === 'number') {
    if (!Number.isInteger(v)) return undefined;
    b = BigInt(v);
  } else if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) {
    b = BigInt(v); // decimal only: BigInt() alone also reads '0x10', '0b101', '0o17'
  } else return undefined;
  const ok = signed ? b >= -(2n ** 63n) && b < 2n ** 63n : b >= 0n && b < 2n ** 64n;
  return ok ? b : undefined;
}

/**
 * Converts user data into the dtype's data-array form, checking its length and values.
 * Accepts the dtype's typed array (returned as is) or any other typed array of the right
 * length (converted as TypedArray.prototype.set does), and ordinary arrays or iterables of
 * numbers, booleans, bigints and numeric strings (decimal integers for 64-bit types, "NaN" /
 * "Infinity" / "-Infinity" for floats). Values of ordinary arrays are checked: an integer
 * data array (integer dtypes, bool, bit patterns of the small floats, packed bytes) takes
 * only integers in its range, int64 / uint64 only integers in theirs; anything else is
 * INVALID_VALUE. bool data is stored as 1 / 0 (any non-zero value is true).
 */
export function toDataArray(info: DTypeInfo, count: number, data: unknown, what: string): TypedData | string[] {
  const want = dataLengthOf(info, count);
  const iterable = data != null && typeof data === 'object' && typeof (data as Iterable<unknown>)[Symbol.iterator] === 'function';
  const arr = (ArrayBuffer.isView(data) && !(data instanceof DataView) ? data : Array.isArray(data) ? data : iterable ? Array.from(data as Iterable<unknown>) : null) as ArrayLike<unknown> | null;
  if (arr === null) throw new KernelError('INVALID_ARGUMENT', `${what}.data: expected an array or typed array, got ${show(data)}`);
  if (arr.length !== want) {
    throw new KernelError('INVALID_SHAPE', `${what}.data: expected ${want} values for ${info.name} with ${count} elements, got ${arr.length}`);
  }
  const bad = (i: number, v: unknown, want: string): never => {
    throw new KernelError('INVALID_VALUE', `${what}.data[${i}]: expected ${want} for ${info.name}, got ${typeof v === 'symbol' ? 'a symbol' : show(v)}`);
  };
  if (info.kind === 'string') {
    return Array.from(arr, (v, i) => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' ? String(v) : bad(i, v, 'a string')));
  }
  const A = info.array!;
  const bool = info.kind === 'bool';
  // nothing to read (a detached typed array has length 0 too, and set() would throw on it)
  if (want === 0) return new A(0) as TypedData;
  if (arr instanceof A && !bool) return arr as TypedData;
  const out = new A(want) as TypedData;
  if (out instanceof BigInt64Array || out instanceof BigUint64Array) {
    const signed = out instanceof BigInt64Array;
    for (let i = 0; i < want; i++) {
      const v = arr[i];
      const b = plainBigInt(v, signed);
      (out as BigInt64Array)[i] = b !== undefined ? b : bad(i, v, `an integer in the range of ${info.name}`);
    }
    return out;
  }
  if (bool && ArrayBuffer.isView(arr)) {
    // any non-zero element is true, in any typed array (set() would take 256 modulo 256
    // and truncate 0.5 first: an Int32Array [256] and a Float32Array [0.5] read as false)
    for (let i = 0; i < want; i++) {
      const v = arr[i] as number | bigint;
      if (typeof v === 'number' && Number.isNaN(v)) bad(i, v, 'a boolean or number');
      (out as Uint8Array)[i] = v != 0 ? 1 : 0;
    }
    return out;
  }
  if (ArrayBuffer.isView(arr) && !(arr instanceof BigInt64Array || arr instanceof BigUint64Array)) {
    (out as Float64Array).set(arr as unknown as Float64Array);
  } else {
    const range = INT_RANGE.get(A);
    for (let i = 0; i < want; i++) {
      const v = arr[i];
      const n = plainNumber(v);
      if (n === undefined) bad(i, v, 'a number, boolean or numeric string');
      else if (bool) {
        if (Number.isNaN(n)) bad(i, v, 'a boolean or number');
        (out as Uint8Array)[i] = n !== 0 ? 1 : 0;
      } else if (range && !(Number.isInteger(n) && n >= range[0] && n <= range[1])) {
        bad(i, v, `an integer in [${range[0]}, ${range[1]}]${info.bitPattern || info.bits < 8 ? ' (the data array holds bit patterns / packed bytes)' : ''}`);
      } else (out as Float64Array)[i] = n!;
    }
    return out;
  }
  return out;
}

/** Writes a data array back into a plain tensor's own `data` (in-place ops on plain inputs). */
export function copyBackInto(target: unknown, src: TypedData | string[]): void {
  const t = target as { [i: number]: unknown; length: number };
  if (ArrayBuffer.isView(t) && ArrayBuffer.isView(src) && (t as unknown as TypedData).constructor === src.constructor) {
    (t as unknown as Float64Array).set(src as unknown as Float64Array);
    return;
  }
  // an ordinary array's element keeps the type it was given as where that loses nothing (a
  // numeric string gets the value's decimal text, a boolean a 0 / 1 value as a boolean), else
  // it receives the data array's value: a uint8 cache given booleans took Boolean(7) = true
  for (let i = 0; i < src.length; i++) {
    const v = (src as ArrayLike<unknown>)[i];
    const old = t[i];
    if (typeof old === 'string' && typeof v !== 'string') t[i] = String(v);
    else if (typeof old === 'boolean' && (v === 0 || v === 1 || v === 0n || v === 1n)) t[i] = v == 1;
    else if (ArrayBuffer.isView(t) && !(t instanceof BigInt64Array || t instanceof BigUint64Array) && typeof v === 'bigint') t[i] = Number(v);
    else if ((t instanceof BigInt64Array || t instanceof BigUint64Array) && typeof v !== 'bigint') t[i] = BigInt(v as number);
    else t[i] = v;
  }
}
