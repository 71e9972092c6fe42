/**
 * ek.scan, ek.combine and ek.linearScan: PyTorch-style scans (torch._higher_order_ops.scan).
 *
 * scan(combineFn, init, xs, { dim = 0, reverse = false, length }) → [finalCarry, ys]
 *   carry_0 = init; for each step t along `dim` (backwards when reverse):
 *   [carry_{t+1}, y_t] = combineFn(carry_t, x_t); ys stacks every y_t along `dim`.
 *
 * Two paths:
 *   - fused: combineFn is one of ek.combine.add/mul/max/min/logaddexp, init and xs are
 *     single tensors of one dtype with init.shape == xs.shape without `dim`: one kernel
 *     call over the whole scan (assembly/scan.ts).
 *   - step by step: anything else. Slices of xs go to combineFn as package tensors; the
 *     rules (structure / shape / dtype of nextCarry, no aliasing, no modified inputs) are
 *     checked after every step; every tensor the scan or the combine function created
 *     for an intermediate step is released.
 */
import { type DType, type DTypeInfo, dtypeInfo } from './dtypes.js';
import { KernelError, show } from './errors.js';
import type { Kernels } from './kernels.js';
import { product } from './ops/checks.js';
import { type PlainTensor, Tensor, checkShape } from './tensor.js';

/** A tensor, or arrays / plain objects of them (null leaves are allowed and kept). */
export type Pytree<T = Tensor> = T | null | readonly Pytree<T>[] | { readonly [key: string]: Pytree<T> };

/**
 * (carry, x) → [nextCarry, y]. x is null in a counted loop (xs = null). nextCarry is a pytree
 * of package or plain tensors (init's structure, checked at run time); so is y. Without type
 * arguments carry and x are unknown: ek.scan infers them from init and xs.
 */
export type CombineFn<C = unknown, X = unknown, Y = unknown> = (carry: C, x: X) => readonly [Pytree<Tensor | PlainTensor>, Y];

/**
 * What a scan hands its combine function and returns for a pytree T of inputs: every tensor
 * leaf (a package tensor, or a plain one converted) as a package Tensor — of its dtype when
 * the type says it (a Tensor<'float32'>, or a plain { dtype: 'float32', … } literal) —
 * null leaves as null, arrays and plain objects mapped leaf by leaf.
 */
export type ScanTensors<T> =
  T extends Tensor<infer D> ? Tensor<D>
  : T extends null | undefined ? null
  : T extends { readonly dtype: infer D extends DType; readonly data: unknown } ? Tensor<D>
  : T extends PlainTensor ? Tensor
  : T extends object ? { -readonly [K in keyof T]: ScanTensors<T[K]> }
  : never;

export interface ScanOptions {
  /** The scanned dimension of every xs leaf (negative counts from the end). Default 0. */
  dim?: number;
  /** Scan from the last index to the first. Default false. */
  reverse?: boolean;
  /** Number of steps: required when xs is null, must equal the scanned length otherwise. */
  length?: number;
}

export interface LinearScanOptions {
  dim?: number;
  reverse?: boolean;
}

export type CombineName = 'add' | 'mul' | 'max' | 'min' | 'logaddexp';

/** A fused combiner: callable as an ordinary combine function, recognized by ek.scan. */
export interface Combiner {
  (carry: Tensor | PlainTensor, x: Tensor | PlainTensor): [Tensor, Tensor];
  readonly combineName: CombineName;
}

export type Combiners = Readonly<Record<CombineName, Combiner>>;

const OP_CODE: Record<CombineName, number> = { add: 0, mul: 1, max: 2, min: 3, logaddexp: 4 };
const FUSED = Symbol('edgekernels.fusedCombiner');
// uint32 / uint64 run the int32 / int64 kernels: add and mul as they are (wrapping arithmetic
// is the same bits), max and min on sign-flipped copies (see flipSigns); int8 / int16 / uint8
// / uint16 run the int32 kernel on widened copies (see widen)
const KERNEL: Record<string, string> = { float32: 'scanF32', float64: 'scanF64', int32: 'scanI32', int64: 'scanI64', uint32: 'scanI32', uint64: 'scanI64' };

function fail(code: ConstructorParameters<typeof KernelError>[0], msg: string): never {
  throw new KernelError(code, msg);
}

/** The carry dtypes of the fused scan kernels (one kernel call for the whole scan). */
function dtypesFor(name: CombineName): string[] {
  if (name === 'logaddexp') return ['float32', 'float64', 'float16', 'bfloat16'];
  return ['float32', 'float64', 'int32', 'int64', 'uint32', 'uint64', 'int8', 'int16', 'uint8', 'uint16', 'float16', 'bfloat16'];
}

/** float16 / bfloat16: their own kernel (scanHalf), every step rounded to the storage type. */
function isHalf(dtype: string): boolean {
  return dtype === 'float16' || dtype === 'bfloat16';
}

/**
 * The half-precision scan kernel over (O, N, I): each step computed in float32 and rounded once
 * to nearest even, as PyTorch's CPU ops do (a float32 scan rounded at the end would differ).
 */
function scanHalf(ek: Kernels, x: Tensor, y: Tensor, init: Tensor, last: Tensor | null, O: number, N: number, I: number, name: CombineName, reverse: boolean): void {
  const scratch = ek.scratch(ek.exports.scanHalfScratchBytes(I) >>> 0);
  ek.exports.scanHalf(x.byteOffset, y.byteOffset, init.byteOffset, last ? last.byteOffset : 0, scratch, O, N, I, OP_CODE[name], (reverse ? 1 : 0) | (x.dtype === 'bfloat16' ? 4 : 0));
}

/** The integers narrower than 32 bits: scanned by the int32 kernel on widened copies. */
function widensFor(dtype: string): boolean {
  return dtype === 'int8' || dtype === 'int16' || dtype === 'uint8' || dtype === 'uint16';
}

/**
 * An int32 copy of an int8 / int16 / uint8 / uint16 tensor, each value sign- or zero-extended
 * (so order is kept); narrowInto writes int32 values back, each reduced modulo 2^width by the
 * typed array's store (ToInt8 … ToUint16). add and mul modulo 2^32 reduce to the same bits as
 * at the narrow width, and max / min of extended values never leave its range: the int32 scan
 * of the copy, narrowed, is the narrow scan, bit for bit.
 */
function widen(ek: Kernels, t: Tensor): Tensor {
  const w = ek.tensor('int32', t.shape);
  (w.data as Int32Array).set(t.data as Int8Array);
  return w;
}
function narrowInto(src: Tensor, dst: Tensor): void {
  (dst.data as Int8Array).set(src.data as Int32Array);
}

/** max / min of an unsigned dtype: the signed kernel runs on sign-flipped copies (flipSigns). */
function flipsFor(name: CombineName, dtype: string): boolean {
  return (name === 'max' || name === 'min') && (dtype === 'uint32' || dtype === 'uint64');
}

/**
 * x ↦ x XOR the sign bit, in place, over a uint32 / uint64 tensor: an order-preserving map of
 * the unsigned values onto the signed ones (0 → MIN, 2^w − 1 → MAX) and its own inverse, so
 * max_u(a, b) = f(max_s(f(a), f(b))) and a signed max / min scan of f(x) from f(init), flipped
 * back, is the unsigned scan. uint64: only the high word of each element changes.
 */
function flipSigns(ek: Kernels, t: Tensor): void {
  const step = t.dtype === 'uint64' ? 2 : 1;
  const w = new Uint32Array(ek.memory.buffer, t.byteOffset, t.size * step);
  for (let i = step - 1; i < w.length; i += step) w[i] ^= 0x80000000;
}

// ---- pytrees ---------------------------------------------------------------------

type Spec =
  | { kind: 'leaf' }
  | { kind: 'none' }
  | { kind: 'list'; items: Spec[] }
  | { kind: 'dict'; keys: string[]; items: Spec[] };

interface Leaf {
  value: unknown;
  path: string;
}

function isPlainTensor(v: unknown): v is PlainTensor {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && 'data' in v && ('dtype' in v || 'type' in v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object') return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/**
 * A plain leaf whose data views the instance's memory (`buf`), copied now: the leaves are
 * flattened before the call's first allocation, any of which may grow the memory and
 * detach every such view, a later leaf's included.
 */
function snapshot<T>(v: T, buf: ArrayBufferLike): T {
  if (v instanceof Tensor || v === null || typeof v !== 'object') return v;
  const d = (v as unknown as PlainTensor).data;
  return ArrayBuffer.isView(d) && d.buffer === buf ? ({ ...v, data: (d as Uint8Array).slice() } as T) : v;
}

/** Leaves in order; with `buf`, plain leaves viewing that memory are copied (see snapshot). */
function flatten(tree: unknown, path: string, leaves: Leaf[], buf?: ArrayBufferLike, open = new Set<object>()): Spec {
  if (tree === null || tree === undefined) return { kind: 'none' };
  if (tree instanceof Tensor || isPlainTensor(tree)) {
    leaves.push({ value: buf ? snapshot(tree, buf) : tree, path });
    return { kind: 'leaf' };
  }
  if (Array.isArray(tree) || isPlainObject(tree)) {
    // a pytree is a tree: a list or dict that contains itself has no flattening
    if (open.has(tree)) fail('INVALID_ARGUMENT', `${path}: the tree contains itself (a cycle); expected a tree of tensors`);
    open.add(tree);
    const keys = Array.isArray(tree) ? null : Object.keys(tree);
    const spec: Spec = keys === null
      ? { kind: 'list', items: (tree as unknown[]).map((t, i) => flatten(t, `${path}[${i}]`, leaves, buf, open)) }
      : { kind: 'dict', keys, items: keys.map((k) => flatten((tree as Record<string, unknown>)[k], `${path}.${k}`, leaves, buf, open)) };
    open.delete(tree);
    return spec;
  }
  return fail('INVALID_ARGUMENT', `${path}: expected a Tensor, { dtype, shape, data }, an array or a plain object of them, got ${describe(tree)}`);
}

function unflatten(spec: Spec, leaves: unknown[], at = { i: 0 }): unknown {
  switch (spec.kind) {
    case 'leaf':
      return leaves[at.i++];
    case 'none':
      return null;
    case 'list':
      return spec.items.map((s) => unflatten(s, leaves, at));
    case 'dict': {
      const out: Record<string, unknown> = {};
      spec.keys.forEach((k, j) => (out[k] = unflatten(spec.items[j], leaves, at)));
      return out;
    }
  }
}

function showSpec(s: Spec): string {
  switch (s.kind) {
    case 'leaf':
      return 'tensor';
    case 'none':
      return 'null';
    case 'list':
      return `[${s.items.map(showSpec).join(', ')}]`;
    case 'dict':
      return `{ ${s.keys.map((k, i) => `${k}: ${showSpec(s.items[i])}`).join(', ')} }`;
  }
}

function sameSpec(a: Spec, b: Spec): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'list' && b.kind === 'list') return a.items.length === b.items.length && a.items.every((s, i) => sameSpec(s, b.items[i]));
  if (a.kind === 'dict' && b.kind === 'dict') {
    return a.keys.length === b.keys.length && a.keys.every((k, i) => k === b.keys[i] && sameSpec(a.items[i], b.items[i]));
  }
  return true;
}

function describe(v: unknown): string {
  if (v instanceof Tensor) return `a tensor ${v.dtype}${show([...v.shape])}`;
  if (typeof v === 'function') return 'a function';
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) return `an object (${Object.prototype.toString.call(v)})`;
  return show(v);
}

// ---- tensors ---------------------------------------------------------------------

interface Meta {
  info: DTypeInfo;
  shape: number[];
}

function metaOf(v: unknown, what: string): Meta {
  if (v instanceof Tensor) {
    v.assertAlive(what);
    return { info: v.info, shape: [...v.shape] };
  }
  const p = v as PlainTensor;
  return { info: dtypeInfo(p.dtype ?? p.type, `${what}.dtype`), shape: checkShape(p.shape ?? p.dims, `${what}.shape`) };
}

function checkOwned(ek: Kernels, t: Tensor, what: string): void {
  t.assertAlive(what);
  if (t.owner !== ek) fail('INVALID_ARGUMENT', `${what}: the tensor belongs to another instance`);
}

/** A package tensor for a leaf: the tensor itself, or a new one holding a plain tensor's data (pushed to temps). */
function asTensor(ek: Kernels, v: unknown, what: string, temps: Tensor[]): Tensor {
  // as run() converts its inputs (a view of the linear memory among the leaves was copied
  // before the call's first allocation, see snapshot)
  return ek.asTensor(v as Tensor | PlainTensor, what, temps);
}

function clone(ek: Kernels, t: Tensor): Tensor {
  const c = ek.tensor(t.dtype, t.shape);
  if (t.info.kind === 'string') (c.data as string[]).splice(0, t.size, ...(t.data as string[]));
  else if (t.byteLength > 0) new Uint8Array(ek.memory.buffer).copyWithin(c.byteOffset, t.byteOffset, t.byteOffset + t.byteLength);
  return c;
}

/** Debug mode (init({ debug: true })): checks that the kernel wrote nothing outside its outputs. */
function guards(ek: Kernels, what: string): void {
  (ek as unknown as { checkGuards?: (after: string) => void }).checkGuards?.(what);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function liveSet(ek: Kernels): Set<Tensor> {
  return (ek as unknown as { live: Set<Tensor> }).live;
}

function normalizeDim(dim: number, rank: number, what: string): number {
  if (dim < -rank || dim >= rank) fail('INVALID_ARGUMENT', `${what}: dim ${dim} is out of range for rank ${rank} (expected ${-rank} … ${rank - 1})`);
  return dim < 0 ? dim + rank : dim;
}

/** Byte range [start, end) of a leaf's storage inside the linear memory, or null. */
function memoryRange(ek: Kernels, v: unknown): [number, number] | null {
  if (v instanceof Tensor) {
    if (v.disposed || v.byteOffset < 0) return null;
    return [v.byteOffset, v.byteOffset + Math.max(v.byteLength, 1)];
  }
  const d = (v as PlainTensor | null)?.data;
  if (ArrayBuffer.isView(d) && d.buffer === ek.memory.buffer) return [d.byteOffset, d.byteOffset + Math.max(d.byteLength, 1)];
  return null;
}

/** Whether two leaves share storage: the same object, the same data array, or overlapping bytes. */
function aliases(ek: Kernels, a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) {
    const da = (a as PlainTensor).data, db = (b as PlainTensor).data;
    if (da === db) return true;
    if (ArrayBuffer.isView(da) && ArrayBuffer.isView(db) && da.buffer === db.buffer) {
      if (da.byteOffset < db.byteOffset + Math.max(db.byteLength, 1) && db.byteOffset < da.byteOffset + Math.max(da.byteLength, 1)) return true;
    }
  }
  const ra = memoryRange(ek, a), rb = memoryRange(ek, b);
  return ra !== null && rb !== null && ra[0] < rb[1] && rb[0] < ra[1];
}

function bytesOf(ek: Kernels, t: Tensor): Uint8Array | string[] {
  if (t.info.kind === 'string') return (t.data as string[]).slice();
  return new Uint8Array(ek.memory.buffer, t.byteOffset, t.byteLength).slice();
}

function unchanged(ek: Kernels, t: Tensor, before: Uint8Array | string[]): boolean {
  if (t.info.kind === 'string') {
    const now = t.data as string[];
    return now.every((s, i) => s === before[i]);
  }
  const now = new Uint8Array(ek.memory.buffer, t.byteOffset, t.byteLength);
  const b = before as Uint8Array;
  for (let i = 0; i < b.length; i++) if (now[i] !== b[i]) return false;
  return true;
}

// ---- options ---------------------------------------------------------------------

function readOptions(options: unknown, what: string, known: readonly string[] = ['dim', 'reverse', 'length']): { dim: number; reverse: boolean; length: number | undefined } {
  if (options === undefined || options === null) return { dim: 0, reverse: false, length: undefined };
  if (typeof options !== 'object' || Array.isArray(options)) fail('INVALID_ARGUMENT', `${what} options: expected an object, got ${show(options)}`);
  const o = options as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) fail('INVALID_ARGUMENT', `${what} options: unknown option ${show(k)}; expected ${known.join(', ')}`);
  }
  const dim = o.dim ?? 0;
  if (typeof dim !== 'number' || !Number.isSafeInteger(dim)) fail('INVALID_ARGUMENT', `${what} options.dim: expected an integer, got ${show(o.dim)}`);
  const reverse = o.reverse ?? false;
  if (typeof reverse !== 'boolean') fail('INVALID_ARGUMENT', `${what} options.reverse: expected a boolean, got ${show(o.reverse)}`);
  const length = o.length;
  if (length !== undefined && (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0)) {
    fail('INVALID_ARGUMENT', `${what} options.length: expected a non-negative integer, got ${show(length)}`);
  }
  return { dim, reverse, length: length as number | undefined };
}

/** (O, N, I) of a shape scanned along `dim`. */
function fold(shape: readonly number[], dim: number): [number, number, number] {
  return [product(shape, 0, dim), shape[dim], product(shape, dim + 1)];
}

// ---- scan ------------------------------------------------------------------------

export function scan(ek: Kernels, combineFn: CombineFn<any, any>, init: unknown, xs: unknown, options?: ScanOptions): [unknown, unknown] {
  if (typeof combineFn !== 'function') fail('INVALID_ARGUMENT', `scan combineFn: expected a function (carry, x) => [nextCarry, y], got ${describe(combineFn)}`);
  const { dim, reverse, length } = readOptions(options, 'scan');

  // init
  const initLeaves: Leaf[] = [];
  const initSpec = flatten(init, 'init', initLeaves, ek.memory.buffer);
  if (initLeaves.length === 0) fail('INVALID_ARGUMENT', `scan init: expected at least one tensor (PyTorch's scan requires init leaves), got ${showSpec(initSpec)}`);
  const initMeta = initLeaves.map((l) => metaOf(l.value, l.path));
  initLeaves.forEach((l, i) => {
    if (l.value instanceof Tensor) checkOwned(ek, l.value, l.path);
    if (initMeta[i].info.kind === 'string') fail('INVALID_DTYPE', `${l.path}: string tensors cannot be scan carries`);
  });

  // xs
  const xLeaves: Leaf[] = [];
  let xSpec: Spec = { kind: 'none' };
  let N: number;
  let xDim = dim;
  const xMeta: Meta[] = [];
  if (xs === null || xs === undefined) {
    if (length === undefined) fail('INVALID_ARGUMENT', 'scan options.length: required when xs is null (a counted loop), got undefined');
    N = length;
  } else {
    xSpec = flatten(xs, 'xs', xLeaves, ek.memory.buffer);
    if (xLeaves.length === 0) fail('INVALID_ARGUMENT', `scan xs: expected at least one tensor (or xs = null with options.length), got ${showSpec(xSpec)}`);
    let first: number | undefined;
    for (const l of xLeaves) {
      const m = metaOf(l.value, l.path);
      if (l.value instanceof Tensor) checkOwned(ek, l.value, l.path);
      if (m.info.kind === 'string' || m.info.bits < 8) fail('INVALID_DTYPE', `${l.path}: expected a numeric dtype of whole bytes to slice, got ${m.info.name}`);
      if (m.shape.length === 0) fail('INVALID_SHAPE', `${l.path}: expected rank >= 1 to scan over dim ${dim}, got a scalar`);
      // a negative dim is resolved once, against the first xs leaf's rank, as PyTorch's scan
      // does (canonicalize_dim(leaves_xs[0].ndim, dim)); every leaf then scans that axis
      if (first === undefined) xDim = normalizeDim(dim, m.shape.length, `scan ${l.path}`);
      else if (m.shape.length <= xDim) fail('INVALID_SHAPE', `${l.path}: expected rank > ${xDim} to scan over dim ${dim} (axis ${xDim} of ${xLeaves[0].path}), got shape ${show(m.shape)}`);
      const d = xDim;
      if (first === undefined) {
        first = m.shape[d];
      } else if (m.shape[d] !== first) {
        fail('INVALID_SHAPE', `${l.path}: expected length ${first} along dim ${dim} (that of ${xLeaves[0].path}), got ${m.shape[d]} (shape ${show(m.shape)})`);
      }
      xMeta.push(m);
    }
    N = first!;
    if (length !== undefined && length !== N) fail('INVALID_VALUE', `scan options.length: expected ${N} (the length of xs along dim ${dim}), got ${length}`);
  }

  const tag = (combineFn as unknown as { [FUSED]?: CombineName })[FUSED];
  if (tag !== undefined && initSpec.kind === 'leaf' && xSpec.kind === 'leaf') {
    const im = initMeta[0], xm = xMeta[0];
    const sliceShape = xm.shape.filter((_, i) => i !== xDim);
    if (im.info === xm.info && dtypesFor(tag).includes(im.info.name) && sameShape(im.shape, sliceShape)) {
      return fusedScan(ek, tag, initLeaves[0].value, xLeaves[0].value, xDim, reverse);
    }
    // a builtin combiner's ys is known without a step (x's shape, the carry's dtype, which
    // is x's or the one x would be converted to): a zero-length scan returns it empty in every
    // dtype, as the fused kernels do, not the [] of a function that was never called
    // (a slice that broadcasts against init, e.g. init [1] and xs [N]: y has init's shape, and
    // ys stacks it along dim, [N, 1] there, so [0, 1] when N = 0)
    const keeps = im.info === xm.info || promoteTypes(im.info.name, xm.info.name) === im.info.name;
    const yShape = broadcastsInto(sliceShape, im.shape) && xDim <= im.shape.length ? im.shape : null;
    if (N === 0 && keeps && yShape && dtypesFor(tag).includes(im.info.name)) {
      const temps: Tensor[] = [];
      try {
        const c = asTensor(ek, initLeaves[0].value, 'init', temps);
        return [clone(ek, c), ek.tensor(im.info.name, [...yShape.slice(0, xDim), 0, ...yShape.slice(xDim)])];
      } finally {
        for (const t of temps) t.dispose();
      }
    }
  }
  return stepScan(ek, combineFn, initSpec, initLeaves, initMeta, xSpec, xLeaves, xMeta, N, xs === null || xs === undefined ? dim : xDim, xs === null || xs === undefined, reverse);
}

function fusedScan(ek: Kernels, name: CombineName, init: unknown, xs: unknown, dim: number, reverse: boolean): [Tensor, Tensor] {
  const temps: Tensor[] = [];
  let ys: Tensor | null = null, last: Tensor | null = null;
  try {
    let c = asTensor(ek, init, 'init', temps);
    let x = asTensor(ek, xs, 'xs', temps);
    c.assertAlive('init'); // (converting a plain xs runs the caller's code)
    ys = ek.tensor(x.dtype, x.shape);
    last = ek.tensor(c.dtype, c.shape);
    const flip = flipsFor(name, x.dtype), wide = widensFor(x.dtype);
    let ysK = ys, lastK = last; // what the kernel writes
    // each copy joins temps as soon as it exists, so a failed allocation leaves none behind
    const keep = (t: Tensor): Tensor => (temps.push(t), t);
    if (flip) {
      x = keep(clone(ek, x));
      c = keep(clone(ek, c));
      flipSigns(ek, x);
      flipSigns(ek, c);
    } else if (wide) {
      x = keep(widen(ek, x));
      c = keep(widen(ek, c));
      ysK = keep(ek.tensor('int32', x.shape));
      lastK = keep(ek.tensor('int32', c.shape));
    }
    const [O, N, I] = fold(x.shape, dim);
    if (isHalf(x.dtype)) scanHalf(ek, x, ys, c, last, O, N, I, name, reverse);
    else ek.exports[KERNEL[x.dtype]](x.byteOffset, ysK.byteOffset, c.byteOffset, lastK.byteOffset, O, N, I, OP_CODE[name], reverse ? 1 : 0);
    guards(ek, 'scan');
    if (flip) {
      flipSigns(ek, ys);
      flipSigns(ek, last);
    } else if (wide) {
      narrowInto(ysK, ys);
      narrowInto(lastK, last);
    }
    return [last, ys];
  } catch (e) {
    ys?.dispose();
    last?.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
}

function stepScan(
  ek: Kernels, fn: CombineFn<any, any>, initSpec: Spec, initLeaves: Leaf[], initMeta: Meta[],
  xSpec: Spec, xLeaves: Leaf[], xMeta: Meta[], N: number, dim: number, counted: boolean, reverse: boolean,
): [unknown, unknown] {
  const temps: Tensor[] = []; // converted plain inputs
  const owned = new Set<Tensor>(); // tensors this scan holds (carries, stacks)
  let ys: Tensor[] | null = null;
  let ySpec: Spec | null = null;
  let yMeta: Meta[] = [];
  const mem = () => new Uint8Array(ek.memory.buffer);
  const live = liveSet(ek);
  try {
    const xT = xLeaves.map((l) => asTensor(ek, l.value, l.path, temps));
    const initT = initLeaves.map((l) => asTensor(ek, l.value, l.path, temps));
    // (as in run(): converting a plain leaf runs the caller's code, which may dispose a tensor)
    xT.forEach((t, j) => t.assertAlive(xLeaves[j].path));
    initT.forEach((t, j) => t.assertAlive(initLeaves[j].path));
    let carry = initT.map((t) => {
      const c = clone(ek, t);
      owned.add(c);
      return c;
    });
    const xFold = xT.map((t) => fold(t.shape, dim));
    for (let s = 0; s < N; s++) {
      const t = reverse ? N - 1 - s : s;
      const at = `step ${s}${reverse ? ` (index ${t})` : ''}`;
      // the caller's xs tensors are read again at every step: one the combine function
      // disposed (its block freed, perhaps reused since) is an error, not a read of that block
      xT.forEach((x, j) => x.assertAlive(`scan ${xLeaves[j].path} at ${at} (disposed during the scan)`));
      // slices of xs along dim, as package tensors
      const slices = xT.map((x, j) => {
        const [O, , I] = xFold[j];
        const sl = ek.tensor(x.dtype, x.shape.filter((_, i) => i !== dim));
        owned.add(sl);
        const eb = x.info.bits / 8, row = I * eb;
        const m = mem();
        for (let o = 0; o < O; o++) {
          const src = x.byteOffset + (o * N + t) * row;
          m.copyWithin(sl.byteOffset + o * row, src, src + row);
        }
        return sl;
      });
      const inputs: { t: Tensor; path: string }[] = [
        ...carry.map((c, j) => ({ t: c, path: `carry${initLeaves[j].path.slice(4)}` })),
        ...slices.map((sl, j) => ({ t: sl, path: `x${xLeaves[j].path.slice(2)}` })),
      ];
      const before = inputs.map((i) => bytesOf(ek, i.t));
      const liveBefore = new Set(live);
      // (tensors of package objects the call created or grew, a KVCache's, are not temporaries)
      const cleanupCall = () => {
        for (const v of [...live]) if (!liveBefore.has(v) && !owned.has(v) && !ek.held.has(v)) v.dispose();
      };
      let result: unknown;
      try {
        result = fn(unflatten(initSpec, carry), counted ? null : unflatten(xSpec, slices));
      } catch (e) {
        cleanupCall();
        throw e;
      }
      try {
        if (ek.disposed) fail('DISPOSED', `scan combineFn disposed the Kernels instance at ${at}`);
        // the combine function may not modify (or dispose) its inputs
        inputs.forEach((inp, j) => {
          if (inp.t.disposed) fail('INVALID_ARGUMENT', `scan combineFn disposed its input ${inp.path} at ${at}; inputs belong to the scan`);
          if (!unchanged(ek, inp.t, before[j])) fail('INVALID_ARGUMENT', `scan combineFn modified its input ${inp.path} at ${at}; combine functions must not write to their inputs (return new tensors)`);
        });
        if (!Array.isArray(result) || result.length !== 2) {
          fail('INVALID_ARGUMENT', `scan combineFn: expected it to return [nextCarry, y] at ${at}, got ${result instanceof Promise ? 'a Promise (combine functions must be synchronous)' : describe(result)}`);
        }
        const cLeaves: Leaf[] = [];
        const cSpec = flatten(result[0], 'nextCarry', cLeaves);
        if (!sameSpec(cSpec, initSpec)) fail('INVALID_ARGUMENT', `scan nextCarry at ${at}: expected the structure of init ${showSpec(initSpec)}, got ${showSpec(cSpec)}`);
        cLeaves.forEach((l, j) => {
          const m = metaOf(l.value, l.path);
          const want = initMeta[j];
          if (m.info !== want.info) fail('INVALID_DTYPE', `scan ${l.path} at ${at}: expected dtype ${want.info.name} (that of ${initLeaves[j].path}), got ${m.info.name}`);
          if (!sameShape(m.shape, want.shape)) fail('INVALID_SHAPE', `scan ${l.path} at ${at}: expected shape ${show(want.shape)} (that of ${initLeaves[j].path}), got ${show(m.shape)}`);
        });
        const yLeaves: Leaf[] = [];
        const sSpec = flatten(result[1], 'y', yLeaves);
        const sMeta = yLeaves.map((l) => metaOf(l.value, l.path));
        if (ySpec === null) {
          sMeta.forEach((m, j) => {
            if (m.info.kind === 'string' || m.info.bits < 8) fail('INVALID_DTYPE', `scan ${yLeaves[j].path}: expected a numeric dtype of whole bytes to stack, got ${m.info.name}`);
          });
          if (counted) {
            for (const [j, m] of sMeta.entries()) {
              const r = m.shape.length + 1;
              if (dim < -r || dim >= r) fail('INVALID_SHAPE', `scan ${yLeaves[j].path}: cannot stack along dim ${dim}: y has rank ${r - 1}`);
            }
          } else {
            for (const [j, m] of sMeta.entries()) {
              if (dim > m.shape.length) fail('INVALID_SHAPE', `scan ${yLeaves[j].path}: cannot stack along dim ${dim}: y has rank ${m.shape.length} (expected rank >= ${dim})`);
            }
          }
        } else {
          if (!sameSpec(sSpec, ySpec)) fail('INVALID_ARGUMENT', `scan y at ${at}: expected the structure of step 0's y ${showSpec(ySpec)}, got ${showSpec(sSpec)}`);
          sMeta.forEach((m, j) => {
            if (m.info !== yMeta[j].info) fail('INVALID_DTYPE', `scan ${yLeaves[j].path} at ${at}: expected dtype ${yMeta[j].info.name} (step 0's), got ${m.info.name}`);
            if (!sameShape(m.shape, yMeta[j].shape)) fail('INVALID_SHAPE', `scan ${yLeaves[j].path} at ${at}: expected shape ${show(yMeta[j].shape)} (step 0's), got ${show(m.shape)}`);
          });
        }
        // outputs may not alias inputs or each other
        const outs = [...cLeaves, ...yLeaves];
        for (const [j, o] of outs.entries()) {
          if (o.value instanceof Tensor) checkOwned(ek, o.value, `scan ${o.path} at ${at}`);
          for (const inp of inputs) {
            if (aliases(ek, o.value, inp.t)) {
              fail('ALIASING', `scan ${o.path} at ${at}: ${o.value === inp.t ? 'is' : 'shares memory with'} the input ${inp.path}; return a new tensor (a copy) instead`);
            }
          }
          for (let k = 0; k < j; k++) {
            if (aliases(ek, o.value, outs[k].value)) fail('ALIASING', `scan ${o.path} at ${at}: ${o.value === outs[k].value ? 'is' : 'shares memory with'} the output ${outs[k].path}; return distinct tensors (e.g. a copy for y)`);
          }
        }
        // (checked for aliasing as given; copied before this step's first allocation)
        for (const o of outs) o.value = snapshot(o.value, ek.memory.buffer);
        // ys: allocate at step 0, then copy y_t into place
        if (ySpec === null) {
          ySpec = sSpec;
          yMeta = sMeta;
          ys = sMeta.map((m) => {
            const d = counted ? (dim < 0 ? dim + m.shape.length + 1 : dim) : dim;
            const shape = [...m.shape.slice(0, d), N, ...m.shape.slice(d)];
            const st = ek.tensor(m.info.name, shape);
            owned.add(st);
            return st;
          });
        }
        const next: Tensor[] = cLeaves.map((l) => {
          // allocated by the call: taken over (a view, a KVCache's keys(l), is no allocation: copied)
          if (l.value instanceof Tensor && live.has(l.value) && !liveBefore.has(l.value)) return l.value;
          const tmp: Tensor[] = [];
          const v = asTensor(ek, l.value, l.path, tmp);
          return tmp.length ? v : clone(ek, v); // plain → new tensor; pre-existing tensor → copy
        });
        yLeaves.forEach((l, j) => {
          const tmp: Tensor[] = [];
          const y = asTensor(ek, l.value, l.path, tmp);
          const st = ys![j];
          const d = counted ? (dim < 0 ? dim + yMeta[j].shape.length + 1 : dim) : dim;
          const O = product(yMeta[j].shape, 0, d), I = product(yMeta[j].shape, d);
          const row = I * (yMeta[j].info.bits / 8);
          const m = mem();
          for (let o = 0; o < O; o++) {
            const dst = st.byteOffset + (o * N + t) * row;
            m.copyWithin(dst, y.byteOffset + o * row, y.byteOffset + (o + 1) * row);
          }
          for (const x of tmp) x.dispose();
        });
        for (const c of carry) {
          owned.delete(c);
          c.dispose();
        }
        for (const sl of slices) {
          owned.delete(sl);
          sl.dispose();
        }
        carry = next;
        for (const c of carry) owned.add(c);
        cleanupCall();
      } catch (e) {
        cleanupCall();
        throw e;
      }
    }
    const finalCarry = unflatten(initSpec, carry);
    const ysTree = ySpec === null ? [] : unflatten(ySpec, ys!);
    owned.clear();
    return [finalCarry, ysTree];
  } finally {
    for (const t of owned) t.dispose();
    for (const t of temps) t.dispose();
  }
}

// ---- fused combiners, callable ---------------------------------------------------

const JS_OPS: Record<CombineName, (a: number, b: number, int: boolean) => number> = {
  add: (a, b) => a + b,
  mul: (a, b, int) => (int ? Math.imul(a, b) : a * b),
  max: (a, b) => Math.max(a, b),
  min: (a, b) => Math.min(a, b),
  logaddexp: (a, b) => (a === b ? a + Math.LN2 : Math.max(a, b) + Math.log1p(Math.exp(-Math.abs(a - b)))),
};

/** Whether shape a broadcasts into b without changing b (numpy rules: a's dims, aligned right, are 1 or b's). */
function broadcastsInto(a: readonly number[], b: readonly number[]): boolean {
  if (a.length > b.length) return false;
  for (let i = 1; i <= a.length; i++) if (a[a.length - i] !== 1 && a[a.length - i] !== b[b.length - i]) return false;
  return true;
}

function broadcastShape(a: readonly number[], b: readonly number[], what: string): number[] {
  const r = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < r; i++) {
    const da = a[a.length - r + i] ?? 1, db = b[b.length - r + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) fail('INVALID_SHAPE', `${what}: shapes ${show([...a])} and ${show([...b])} do not broadcast`);
    out.push(da === 1 ? db : da);
  }
  return out;
}

/** Element index of `shape` (broadcast into `out`) for each flat index of `out`. */
function broadcastIndex(shape: readonly number[], out: readonly number[]): Int32Array {
  const n = product(out);
  const idx = new Int32Array(n);
  const r = out.length, off = r - shape.length;
  const coord = new Array<number>(r).fill(0);
  for (let f = 0; f < n; f++) {
    let k = 0;
    for (let i = 0; i < shape.length; i++) k = k * shape[i] + (shape[i] === 1 ? 0 : coord[i + off]);
    idx[f] = k;
    for (let i = r - 1; i >= 0; i--) {
      if (++coord[i] < out[i]) break;
      coord[i] = 0;
    }
  }
  return idx;
}

/** out = c ⊕ x (broadcast) on the host: the integers the kernels run on copies, and broadcasting float16 / bfloat16 / 64-bit ones. */
function hostCombine(ek: Kernels, name: CombineName, c: Tensor, x: Tensor, out: Tensor): void {
  const ia = broadcastIndex(c.shape, out.shape), ib = broadcastIndex(x.shape, out.shape);
  const n = out.size;
  if (c.dtype === 'float16' || c.dtype === 'bfloat16') {
    // widen exactly, combine in float32 (the Float32Array store rounds), round once back
    const temps: Tensor[] = [];
    try {
      const [cf] = ek.run('Cast', [c], { to: 'float32' }) as Tensor[];
      temps.push(cf);
      const [xf] = ek.run('Cast', [x], { to: 'float32' }) as Tensor[];
      temps.push(xf);
      const of = ek.tensor('float32', out.shape);
      temps.push(of);
      const a = cf.data as Float32Array, b = xf.data as Float32Array, o = of.data as Float32Array, g = JS_OPS[name];
      for (let i = 0; i < n; i++) o[i] = g(a[ia[i]], b[ib[i]], false);
      ek.run('Cast', [of], { to: c.dtype }, { outputs: [out] });
    } finally {
      for (const t of temps) t.dispose();
    }
    return;
  }
  if (c.dtype === 'int64' || c.dtype === 'uint64') {
    // BigInt64Array / BigUint64Array stores wrap modulo 2^64
    const a = c.data as BigInt64Array, b = x.data as BigInt64Array, o = out.data as BigInt64Array;
    for (let i = 0; i < n; i++) {
      const u = a[ia[i]], v = b[ib[i]];
      o[i] = name === 'add' ? u + v : name === 'mul' ? u * v : name === 'max' ? (u > v ? u : v) : u < v ? u : v;
    }
    return;
  }
  // int8 / int16 / uint8 / uint16 / uint32: Math.imul keeps the low 32 bits of a product and
  // the typed-array store wraps to the type's width
  const a = c.data as Int32Array, b = x.data as Int32Array, o = out.data as Int32Array, g = JS_OPS[name];
  for (let i = 0; i < n; i++) o[i] = g(a[ia[i]], b[ib[i]], true);
}

function makeCombiner(ek: Kernels, name: CombineName): Combiner {
  const op = OP_CODE[name];
  const f = (carry: unknown, x: unknown): [Tensor, Tensor] => {
    const what = `combine.${name}`;
    if (x === null || x === undefined) fail('MISSING_INPUT', `${what}: x is required (a fused combiner cannot run a counted loop with xs = null)`);
    for (const [v, w] of [[carry, 'carry'], [x, 'x']] as const) {
      if (!(v instanceof Tensor) && !isPlainTensor(v)) fail('INVALID_ARGUMENT', `${what} ${w}: expected a Tensor or { dtype, shape, data }, got ${describe(v)}`);
    }
    const cm = metaOf(carry, `${what} carry`);
    const xm = metaOf(x, `${what} x`);
    if (cm.info !== xm.info) {
      // PyTorch promotes carry ⊕ x; the next carry must keep the carry's dtype, so x of a type
      // that promotes to it (int32 x into a float32 carry) is converted first, anything else fails
      const p = promoteTypes(cm.info.name, xm.info.name);
      if (p !== cm.info.name) fail('INVALID_DTYPE', `${what} x: x (${xm.info.name}) and the carry (${cm.info.name}) promote to ${p ?? 'no common type'}, not the carry's dtype ${cm.info.name}`);
      const temps: Tensor[] = [];
      try {
        const [cx] = ek.run('Cast', [asTensor(ek, x, `${what} x`, temps)], { to: cm.info.name }) as Tensor[];
        try { return f(carry, cx); } finally { cx.dispose(); }
      } finally {
        for (const t of temps) t.dispose();
      }
    }
    if (!dtypesFor(name).includes(cm.info.name)) {
      fail('INVALID_DTYPE', `${what} carry: expected ${dtypesFor(name).join(', ')}, got ${cm.info.name}`);
    }
    const shape = broadcastShape(cm.shape, xm.shape, what);
    const temps: Tensor[] = [];
    let next: Tensor | null = null;
    try {
      const c = asTensor(ek, carry, `${what} carry`, temps);
      const xt = asTensor(ek, x, `${what} x`, temps);
      c.assertAlive(`${what} carry`); // (converting a plain x runs the caller's code)
      next = ek.tensor(cm.info.name, shape);
      if (flipsFor(name, c.dtype) || widensFor(c.dtype)) {
        hostCombine(ek, name, c, xt, next); // (one step: no flipped or widened copies for it)
      } else if (isHalf(c.dtype)) {
        // one step of the scan kernel, so that a scan stepped through this combiner and the
        // fused one agree bit for bit (logaddexp's float32 polynomials); broadcasting: the host
        if (sameShape(c.shape, xt.shape)) {
          scanHalf(ek, xt, next, c, null, 1, 1, c.size, name, false);
          guards(ek, `combine.${name}`);
        } else hostCombine(ek, name, c, xt, next);
      } else if (sameShape(c.shape, xt.shape)) {
        ek.exports[KERNEL[c.dtype]](xt.byteOffset, next.byteOffset, c.byteOffset, 0, 1, 1, c.size, op, 0);
        guards(ek, `combine.${name}`);
      } else if (c.dtype === 'int64' || c.dtype === 'uint64' || c.dtype === 'uint32') {
        hostCombine(ek, name, c, xt, next); // broadcasting, in BigInt / wrapping stores
      } else {
        const a = c.data as Float64Array, b = xt.data as Float64Array, out = next.data as Float64Array;
        const ia = broadcastIndex(c.shape, shape), ib = broadcastIndex(xt.shape, shape);
        const g = JS_OPS[name], int = cm.info.kind === 'int';
        for (let i = 0; i < out.length; i++) out[i] = g(a[ia[i]], b[ib[i]], int);
      }
      return [next, clone(ek, next)];
    } catch (e) {
      next?.dispose();
      throw e;
    } finally {
      for (const t of temps) t.dispose();
    }
  };
  Object.defineProperty(f, FUSED, { value: name });
  Object.defineProperty(f, 'combineName', { value: name, enumerable: true });
  Object.defineProperty(f, 'name', { value: name });
  return f as unknown as Combiner;
}

/** torch.promote_types for the numeric dtypes (bool < integers < floats; null: none of ours). */
function promoteTypes(a: string, b: string): string | null {
  const rank = (t: string): number => (t === 'bool' ? 0 : t.startsWith('float') || t === 'bfloat16' ? 2 : 1);
  const bits: Record<string, number> = { bool: 1, int8: 8, uint8: 8, int16: 16, uint16: 16, int32: 32, uint32: 32, int64: 64, uint64: 64, float16: 16, bfloat16: 16, float32: 32, float64: 64 };
  if (bits[a] === undefined || bits[b] === undefined) return null;
  if (a === b) return a;
  const ra = rank(a), rb = rank(b);
  // c10's promoteTypes promotes uint16 / uint32 / uint64 only with the floating types: with
  // bool or any other integer type (uint8 and a wider unsigned one included) it raises
  // "Promotion for uint16, uint32, uint64 types is not supported"
  const bare = (t: string): boolean => t === 'uint16' || t === 'uint32' || t === 'uint64';
  if (bare(a) || bare(b)) return ra === 2 ? a : rb === 2 ? b : null;
  if (ra !== rb) return ra > rb ? a : b;
  if (ra === 2) return (a === 'float16' && b === 'bfloat16') || (a === 'bfloat16' && b === 'float16') ? 'float32' : bits[a] >= bits[b] ? a : b;
  const ua = a.startsWith('u'), ub = b.startsWith('u');
  if (ua === ub) return bits[a] >= bits[b] ? a : b;
  // signed with unsigned: the signed type if it is wider, else the next wider signed type
  const [sg, us] = ua ? [b, a] : [a, b];
  if (bits[sg] > bits[us]) return sg;
  return ({ 8: 'int16', 16: 'int32', 32: 'int64' } as Record<number, string>)[bits[us]] ?? null;
}

export function makeCombiners(ek: Kernels): Combiners {
  return Object.freeze({
    add: makeCombiner(ek, 'add'),
    mul: makeCombiner(ek, 'mul'),
    max: makeCombiner(ek, 'max'),
    min: makeCombiner(ek, 'min'),
    logaddexp: makeCombiner(ek, 'logaddexp'),
  });
}

// ---- linear recurrence -------------------------------------------------------------

/**
 * h_t = a_t ⊙ h_{t−1} + b_t along `dim` (float32 / float64; a, b of one shape, h0 of that
 * shape without `dim`). Returns [hLast, hs] like scan's [finalCarry, ys].
 */
export function linearScan(ek: Kernels, a: Tensor | PlainTensor, b: Tensor | PlainTensor, h0: Tensor | PlainTensor, options?: LinearScanOptions): [Tensor, Tensor] {
  // (no `length`: the length is that of a along dim)
  const { dim, reverse } = readOptions(options, 'linearScan', ['dim', 'reverse']);
  const buf = ek.memory.buffer;
  [a, b, h0] = [snapshot(a, buf), snapshot(b, buf), snapshot(h0, buf)];
  const metas: Meta[] = [];
  for (const [v, w] of [[a, 'a'], [b, 'b'], [h0, 'h0']] as const) {
    if (!(v instanceof Tensor) && !isPlainTensor(v)) fail('INVALID_ARGUMENT', `linearScan ${w}: expected a Tensor or { dtype, shape, data }, got ${describe(v)}`);
    if (v instanceof Tensor) checkOwned(ek, v, `linearScan ${w}`);
    metas.push(metaOf(v, `linearScan ${w}`));
  }
  const [am, bm, hm] = metas;
  if (am.info.name !== 'float32' && am.info.name !== 'float64') fail('INVALID_DTYPE', `linearScan a: expected float32 or float64, got ${am.info.name}`);
  if (bm.info !== am.info) fail('INVALID_DTYPE', `linearScan b: expected dtype ${am.info.name} (that of a), got ${bm.info.name}`);
  if (hm.info !== am.info) fail('INVALID_DTYPE', `linearScan h0: expected dtype ${am.info.name} (that of a), got ${hm.info.name}`);
  if (am.shape.length === 0) fail('INVALID_SHAPE', 'linearScan a: expected rank >= 1, got a scalar');
  if (!sameShape(bm.shape, am.shape)) fail('INVALID_SHAPE', `linearScan b: expected shape ${show(am.shape)} (that of a), got ${show(bm.shape)}`);
  const d = normalizeDim(dim, am.shape.length, 'linearScan options.dim');
  const hShape = am.shape.filter((_, i) => i !== d);
  if (!sameShape(hm.shape, hShape)) fail('INVALID_SHAPE', `linearScan h0: expected shape ${show(hShape)} (a's shape without dim ${d}), got ${show(hm.shape)}`);
  const temps: Tensor[] = [];
  let hs: Tensor | null = null, last: Tensor | null = null;
  try {
    const at = asTensor(ek, a, 'linearScan a', temps);
    const bt = asTensor(ek, b, 'linearScan b', temps);
    const ht = asTensor(ek, h0, 'linearScan h0', temps);
    // (converting a plain input runs the caller's code, which may dispose a tensor)
    at.assertAlive('linearScan a');
    bt.assertAlive('linearScan b');
    hs = ek.tensor(am.info.name, am.shape);
    last = ek.tensor(am.info.name, hShape);
    const [O, N, I] = fold(am.shape, d);
    const k = am.info.name === 'float32' ? 'linearScanF32' : 'linearScanF64';
    ek.exports[k](at.byteOffset, bt.byteOffset, ht.byteOffset, hs.byteOffset, last.byteOffset, O, N, I, reverse ? 1 : 0);
    guards(ek, 'linearScan');
    return [last, hs];
  } catch (e) {
    hs?.dispose();
    last?.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
}
