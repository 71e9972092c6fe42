/**
 * The Kernels object: one wasm instance, its linear memory, the arena over it, and the
 * public API (tensor, run, stats, dispose). Runtime entries (src/entries/) only differ in
 * how they obtain the compiled module; everything here is runtime-neutral.
 */
import { type DType, dtypeInfo } from './dtypes.js';
import { KernelError, show } from './errors.js';
import { Arena } from './memory.js';
import { KVCache, type KVCacheOptions } from './kvcache.js';
import { OPS } from './ops/index.js';
import type { AttrSpec, AttrValue, Attrs, KernelExports, OpContext, OpDef, OutputRequest, OutputSpec } from './ops/registry.js';
import { type PlainTensor, type TensorLike, type TensorOwner, Tensor, checkShape, copyBackInto, plainMeta, shapeSize, toDataArray } from './tensor.js';
import type { TypedData } from './dtypes.js';
import { type CombineFn, type Combiners, type LinearScanOptions, type ScanOptions, type ScanTensors, linearScan as linearScanImpl, makeCombiners, scan as scanImpl } from './scan.js';

const PAGE = 65536;
/** Debug mode: canary bytes in front of every block (keeps 16-byte alignment). */
const GUARD = 16;
/** The canary byte expected at address a: varies with the address, so a shifted copy is caught too. */
const canary = (a: number) => ((a * 167) ^ 0x5a) & 0xff;
const DEFAULT_MAX = 1 << 30;
const MAX_WASM32 = 65536 * PAGE;
/** String tensors live on the host as JavaScript arrays: at most 2^26 elements (512 MiB of references). */
const MAX_STRINGS = 2 ** 26;

export type BuildName = 'simd' | 'scalar' | 'relaxed';

/** Ways of handing the package its wasm. */
export type WasmSource = BufferSource | WebAssembly.Module | Response | PromiseLike<Response> | URL | string;

export interface InitOptions {
  /** Initial linear memory in bytes (rounded up to 64 KiB pages). Default 1 MiB. */
  initialMemory?: number;
  /** The arena never grows the memory beyond this many bytes. Default 1 GiB. */
  maximumMemory?: number;
  /** Which build to run; default: the best one the engine accepts. */
  build?: BuildName;
  /** Supply the wasm yourself instead of the entry's default. */
  wasm?: WasmSource;
  /**
   * Debug mode: canary bytes around every allocation (16 in front, the tail padding
   * behind), checked after every operator call; a kernel that wrote outside its outputs
   * raises KernelError INTERNAL. The outputs run() allocates are filled with 0xA5 bytes
   * first (not left as they are), so an element a kernel forgets to write shows. Slower;
   * for tests.
   */
  debug?: boolean;
}

export interface Stats {
  /** Bytes held by live tensors (allocation padding included; scratch excluded). */
  bytesInUse: number;
  /** Live tensors created by this instance. */
  tensorsLive: number;
  /** Current size of the linear memory. */
  memoryBytes: number;
  /** Largest size the linear memory reached. */
  peakMemoryBytes: number;
  /** Bytes of the instance's reusable scratch area. */
  scratchBytes: number;
  /** Free bytes inside the memory, and the largest contiguous free block. */
  freeBytes: number;
  largestFreeBlock: number;
  /** The build that is running. */
  build: BuildName;
}

export interface RunOptions {
  /** One entry per output slot: a tensor to fill, true to allocate, null to skip. */
  outputs?: readonly OutputRequest[];
}

type Input = TensorLike | null | undefined;

export class Kernels implements TensorOwner, OpContext {
  readonly memory: WebAssembly.Memory;
  readonly exports: KernelExports;
  readonly build: BuildName;
  private arena: Arena;
  private live = new Set<Tensor>();
  private tensorBytes = 0;
  private scratchPtr = 0;
  /** Outputs allocated by prepareOutputs during the current run() (see run). */
  private allocated: Tensor[] | null = null;
  private scratchSize = 0;
  private alive = true;
  readonly debug: boolean;

  /** @internal — use init(). */
  constructor(instance: WebAssembly.Instance, memory: WebAssembly.Memory, maxBytes: number, build: BuildName, debug = false) {
    this.memory = memory;
    this.exports = instance.exports as unknown as KernelExports;
    this.build = build;
    this.debug = debug;
    const base = this.exports.heapBase() >>> 0;
    // the memory is createMemory's, new: past heapBase nothing has written it
    this.arena = new Arena(memory, base, maxBytes, debug ? GUARD : 0, base);
    this.scratch(4096);
  }

  /** Fused combiners for scan (src/scan.ts): ek.combine.add / mul / max / min / logaddexp. */
  readonly combine: Combiners = makeCombiners(this);

  /**
   * torch._higher_order_ops.scan: returns [finalCarry, ys] (src/scan.ts). The combine function
   * gets init's and xs's structure as package tensors (ScanTensors); ys has y's structure,
   * except after a zero-length scan with a function, where it is [] (no step showed y).
   */
  scan<const I, const X = null, Y = unknown>(
    combineFn: CombineFn<ScanTensors<I>, ScanTensors<X>, Y>, init: I, xs: X, options?: ScanOptions,
  ): [ScanTensors<I>, ScanTensors<Y>] {
    this.assertAlive();
    return scanImpl(this, combineFn, init, xs, options) as [ScanTensors<I>, ScanTensors<Y>];
  }

  /** h_t = a_t * h_{t-1} + b_t along dim: returns [hLast, hs] (src/scan.ts). */
  linearScan(a: TensorLike, b: TensorLike, h0: TensorLike, options?: LinearScanOptions): [Tensor, Tensor] {
    this.assertAlive();
    return linearScanImpl(this, a, b, h0, options);
  }

  /**
   * @internal — tensors a package object allocated for itself (a KVCache's storage and
   * buffers, a Llama's weights): they live until that object's dispose(), so scan never
   * releases them as temporaries of a combine function that created (or grew) the object.
   */
  readonly held = new WeakSet<Tensor>();

  /** @internal — marks `t` as held (see `held`) and returns it. */
  hold<T extends Tensor>(t: T): T {
    this.held.add(t);
    return t;
  }

  /** Allocates a tensor in linear memory; zero-filled unless `data` is given. */
  tensor<D extends DType>(dtype: D, shape: readonly number[], data?: ArrayLike<unknown> | Iterable<unknown>): Tensor<D>;
  tensor(dtype: DType | string | number, shape: readonly number[], data?: ArrayLike<unknown> | Iterable<unknown>): Tensor;
  tensor(dtype: DType | string | number, shape: readonly number[], data?: ArrayLike<unknown> | Iterable<unknown>): Tensor {
    this.assertAlive();
    const info = dtypeInfo(dtype, 'tensor dtype');
    const dims = checkShape(shape, 'tensor shape');
    const count = shapeSize(dims);
    const values = data === undefined ? null : toDataArray(info, count, this.detachable(data), 'tensor');
    const t = this.alloc(info.name, dims, values as string[] | null);
    if (values !== null && info.kind !== 'string') {
      try {
        (t.data as Float64Array).set(values as unknown as Float64Array);
      } catch (e) {
        t.dispose(); // (cannot happen for checked data; never leak the tensor if it does)
        throw e;
      }
    }
    return t;
  }

  /**
   * Runs an operator (see the registry in the README). The outputs are package tensors
   * (null for a skipped slot), except output 0 of an in-place operator given a plain cache
   * as input 0: that plain object itself.
   */
  run(opType: string, inputs: readonly [Tensor | null | undefined, ...Input[]], attributes?: Record<string, unknown>, options?: RunOptions): (Tensor | null)[];
  run(opType: string, inputs: readonly Input[], attributes?: Record<string, unknown>, options?: RunOptions): (Tensor | PlainTensor | null)[];
  run(opType: string, inputs: readonly Input[], attributes: Record<string, unknown> = {}, options: RunOptions = {}): (Tensor | PlainTensor | null)[] {
    this.assertAlive();
    const op = OPS.get(opType);
    if (!op) throw new KernelError('UNKNOWN_OP', `opType: expected one of ${[...OPS.keys()].join(', ')}, got ${show(opType)}`);
    if (!Array.isArray(inputs)) throw new KernelError('INVALID_ARGUMENT', `${opType} inputs: expected an array, got ${show(inputs)}`);
    if (inputs.length > op.inputs.length) {
      throw new KernelError('INVALID_ARGUMENT', `${opType} inputs: expected at most ${op.inputs.length} (${op.inputs.map((s) => s.name).join(', ')}), got ${inputs.length}`);
    }
    const attrs = normalizeAttributes(op, attributes);
    const requests = normalizeRequests(op, options);
    // every input, and each field of a plain one, read once: a getter may answer
    // differently on a second read (a plain cache checked writable, then frozen at the
    // write-back; a different object at each read of inputs[0])
    const raw = Array.from(inputs);
    const plain = raw.map(snapPlain);
    if (op.inPlace !== undefined) checkCopyBack(plain[op.inPlace], `${opType} input ${op.inputs[op.inPlace].name}`);
    // a plain in-place input whose data views this memory: where that view is, so that the
    // write-back reaches it through the current buffer when the call grows the memory
    const back = op.inPlace === undefined ? null : this.viewPlace(plain[op.inPlace]);
    // plain inputs whose data views this memory are copied before the first allocation
    // (which may grow the memory and detach them, a later input's view included)
    const given = plain.map((x) => this.detachablePlain(x));
    const temps: Tensor[] = [];
    // outputs prepareOutputs allocates for this call: freed if the operator throws after
    // (a scratch request that runs out of memory), since the caller never receives them
    const outer = this.allocated;
    const allocated: Tensor[] = (this.allocated = []);
    try {
      const ts = op.inputs.map((slot, i) => {
        const x = given[i];
        if (x === null || x === undefined) {
          if (!slot.optional) throw new KernelError('MISSING_INPUT', `${opType}: input ${i} (${slot.name}) is required`);
          return null;
        }
        return this.asTensor(x, `${opType} input ${slot.name}`, temps);
      });
      // converting a plain input runs the caller's code (getters, an iterable's next()), which
      // may have disposed a tensor checked before it: checked again, all of them at once
      ts.forEach((t, i) => t?.assertAlive(`${opType} input ${op.inputs[i].name}`));
      if (op.inPlace !== undefined) {
        const r = requests[0];
        if (r !== undefined && r !== null && r !== true && r !== ts[op.inPlace]) {
          throw new KernelError('INVALID_ARGUMENT', `${opType} outputs[0]: the operator updates ${op.inputs[op.inPlace].name} in place; pass that tensor or leave the slot empty`);
        }
        // that input is output 0: another input sharing its memory would be read as it is written
        const cache = ts[op.inPlace]!;
        // a plain cache whose data views this memory is written back there: the bytes it
        // views count as the cache (an input tensor under them would be overwritten)
        const viewed = back ? { byteOffset: back.offset, byteLength: back.byteLength } : null;
        ts.forEach((x, i) => {
          if (x && i !== op.inPlace && (overlaps(x, cache) || (viewed && raw[i] instanceof Tensor && overlaps(x, viewed)))) {
            throw new KernelError('ALIASING', `${opType} input ${op.inputs[i].name}: overlaps ${op.inputs[op.inPlace!].name}, which the operator updates in place (output 0)`);
          }
        });
      }
      const out = op.run(this, ts, attrs, requests);
      const result: (Tensor | PlainTensor | null)[] = out;
      if (op.inPlace !== undefined) {
        const src = raw[op.inPlace];
        if (!(src instanceof Tensor)) {
          const d = (plain[op.inPlace] as PlainTensor).data;
          copyBackInto(back && (d as TypedData).buffer !== this.memory.buffer ? new back.ctor(this.memory.buffer, back.offset, back.length) : d, ts[op.inPlace]!.data);
          result[0] = src as PlainTensor;
        }
      }
      if (this.debug) this.checkGuards(opType);
      return result;
    } catch (e) {
      for (const t of allocated) t.dispose();
      throw e;
    } finally {
      this.allocated = outer;
      for (const t of temps) t.dispose();
    }
  }

  /**
   * Debug mode: verifies the canaries of every live block (tensors and scratch). Throws
   * KernelError INTERNAL naming the first corrupted block. Called after every run().
   */
  checkGuards(after: string): void {
    if (!this.debug) return;
    const mem = new Uint8Array(this.memory.buffer);
    const exact = new Map<number, number>();
    for (const t of this.live) if (t.byteOffset >= 0) exact.set(t.byteOffset, t.byteLength);
    for (const [ptr, size] of this.arena.blocks()) {
      const used = exact.get(ptr) ?? (ptr === this.scratchPtr ? this.scratchSize : null);
      if (used === null) continue;
      const start = ptr - GUARD, end = start + size;
      for (let a = start; a < end; a++) {
        if (a === ptr) a = ptr + used;
        if (a < end && mem[a] !== canary(a)) {
          throw new KernelError('INTERNAL', `after ${after}: a kernel wrote outside its outputs — guard byte ${a - ptr} relative to the block at ${ptr} (${used} bytes) changed`);
        }
      }
    }
  }

  /** A fixed-capacity KV cache allocated once in this instance's memory (src/kvcache.ts). */
  kvCache(options: KVCacheOptions): KVCache {
    this.assertAlive();
    return new KVCache(this, options);
  }

  stats(): Stats {
    this.assertAlive();
    const a = this.arena.stats();
    return {
      bytesInUse: this.tensorBytes,
      tensorsLive: this.live.size,
      memoryBytes: a.memoryBytes,
      peakMemoryBytes: a.peakMemoryBytes,
      scratchBytes: this.scratchSize,
      freeBytes: a.freeBytes,
      largestFreeBlock: a.largestFree,
      build: this.build,
    };
  }

  /** Releases every tensor and the instance; later calls throw DISPOSED. */
  dispose(): void {
    if (!this.alive) return;
    for (const t of [...this.live]) t.dispose();
    this.alive = false;
  }

  get disposed(): boolean {
    return !this.alive;
  }

  // ---- services for operators (OpContext) ----------------------------------------

  scratch(bytes: number): number {
    if (bytes > this.scratchSize) {
      // the old block goes first (its contents are not kept), so the new one may reuse it;
      // doubling is a hint: when the doubled size does not fit, exactly `bytes` is asked for
      let size = Math.max(bytes, this.scratchSize * 2), ptr: number;
      const old = this.scratchSize;
      if (old > 0) {
        this.arena.free(this.scratchPtr);
        this.scratchPtr = 0;
        this.scratchSize = 0;
      }
      try {
        try {
          ptr = this.arena.alloc(size);
        } catch (e) {
          if (size === bytes || !(e instanceof KernelError) || e.code !== 'OUT_OF_MEMORY') throw e;
          ptr = this.arena.alloc((size = bytes));
        }
      } catch (e) {
        // nothing changes on an error: the old block comes back (the space it left is free,
        // so this cannot fail), as a KVCache's reserved scratch must survive a failed call
        if (old > 0) {
          this.scratchPtr = this.arena.alloc(old);
          this.scratchSize = old;
          if (this.debug) this.writeGuards(this.scratchPtr, old);
        }
        throw e;
      }
      this.scratchPtr = ptr;
      this.scratchSize = size;
      if (this.debug) this.writeGuards(ptr, size);
    }
    return this.scratchPtr;
  }

  prepareOutputs(
    opName: string,
    specs: readonly (OutputSpec | null)[],
    requests: readonly OutputRequest[],
    defaults: readonly boolean[],
    inputs: readonly (Tensor | null)[],
  ): (Tensor | null)[] {
    const given: (Tensor | null)[] = [];
    for (let i = 0; i < specs.length; i++) {
      const r = requests[i];
      const spec = specs[i];
      if (r instanceof Tensor) {
        if (spec === null) throw new KernelError('INVALID_ARGUMENT', `${opName} outputs[${i}]: this output is not produced for these inputs`);
        this.checkOwn(r, `${opName} outputs[${i}]`);
        if (r.dtype !== spec.dtype || !sameShape(r.shape, spec.shape)) {
          throw new KernelError(r.dtype !== spec.dtype ? 'INVALID_DTYPE' : 'INVALID_SHAPE', `${opName} outputs[${i}]: expected ${spec.dtype}${show([...spec.shape])}, got ${r.dtype}${show([...r.shape])}`);
        }
        for (const x of inputs) {
          if (x && overlaps(x, r)) throw new KernelError('ALIASING', `${opName} outputs[${i}]: overlaps an input`);
        }
        for (const g of given) {
          if (g && overlaps(g, r)) throw new KernelError('ALIASING', `${opName} outputs[${i}]: overlaps another output`);
        }
        given.push(r);
      } else {
        given.push(null);
      }
    }
    const out: (Tensor | null)[] = [];
    try {
      for (let i = 0; i < specs.length; i++) {
        const r = requests[i];
        const spec = specs[i];
        if (given[i]) out.push(given[i]);
        else if (spec !== null && (r === true || (r === undefined && defaults[i]))) {
          // not cleared: the kernels write every element of an output (as they must of one
          // the caller passes, which holds anything); debug mode poisons it to prove that
          const t = this.alloc(spec.dtype, spec.shape, null, false);
          out.push(t);
          this.allocated?.push(t);
        }
        else out.push(null);
      }
    } catch (e) {
      for (let i = 0; i < out.length; i++) if (out[i] && !given[i]) out[i]!.dispose();
      throw e;
    }
    return out;
  }

  /** @internal */
  releaseTensor(t: Tensor): void {
    if (!this.live.delete(t)) return;
    if (t.byteOffset >= 0) {
      this.tensorBytes -= this.arena.sizeOf(t.byteOffset) ?? 0;
      this.arena.free(t.byteOffset);
    }
  }

  // ---- internals -------------------------------------------------------------------

  /** zero: the tensor reads as zeros (else as whatever the memory held; 0xA5 bytes in debug mode). */
  private alloc(dtype: DType, shape: readonly number[], strings: string[] | null, zero = true): Tensor {
    const info = dtypeInfo(dtype);
    let t: Tensor;
    if (info.kind === 'string') {
      const count = shapeSize(shape);
      if (count > MAX_STRINGS) throw new KernelError('OUT_OF_MEMORY', `tensor ${dtype}${show([...shape])}: ${count} strings, more than the ${MAX_STRINGS} (2^26) a string tensor holds on the host`);
      t = new Tensor(this, info, shape, -1, strings ?? new Array<string>(count).fill(''));
    } else {
      const count = shapeSize(shape);
      const bytes = Math.ceil((count * info.bits) / 8);
      if (bytes > MAX_WASM32) throw new KernelError('OUT_OF_MEMORY', `tensor ${dtype}${show([...shape])} needs ${bytes} bytes, more than a 32-bit memory holds`);
      const ptr = this.arena.alloc(bytes, zero);
      this.tensorBytes += this.arena.sizeOf(ptr)!;
      t = new Tensor(this, info, shape, ptr);
      if (!zero && this.debug && bytes > 0) new Uint8Array(this.memory.buffer, ptr, bytes).fill(0xa5);
      if (this.debug) this.writeGuards(ptr, bytes);
    }
    this.live.add(t);
    return t;
  }

  private writeGuards(ptr: number, used: number): void {
    const mem = new Uint8Array(this.memory.buffer);
    const start = ptr - GUARD, end = start + this.arena.sizeOf(ptr)!;
    for (let a = start; a < ptr; a++) mem[a] = canary(a);
    for (let a = ptr + used; a < end; a++) mem[a] = canary(a);
  }

  private checkOwn(t: Tensor, what: string): void {
    t.assertAlive(what);
    if (t.owner !== this) throw new KernelError('INVALID_ARGUMENT', `${what}: the tensor belongs to another instance`);
  }

  /**
   * @internal — an input as a package tensor: ours (checked alive and owned) or a new one
   * holding a plain input's data, pushed to `temps` (run(), and scan's leaves).
   */
  asTensor(x: TensorLike, what: string, temps: Tensor[]): Tensor {
    if (x instanceof Tensor) {
      this.checkOwn(x, what);
      return x;
    }
    const { info, shape } = plainMeta(x, what);
    const data = toDataArray(info, shapeSize(shape), this.detachable(x.data), what);
    const t = this.alloc(info.name, shape, info.kind === 'string' ? (data as string[]).slice() : null);
    temps.push(t);
    if (info.kind !== 'string') (t.data as TypedData as Float64Array).set(data as unknown as Float64Array);
    return t;
  }

  /**
   * Data that views this instance's own memory would be detached if the allocation about
   * to happen grows the memory: copy it out first.
   */
  private detachable<T>(data: T): T {
    return ArrayBuffer.isView(data) && data.buffer === this.memory.buffer ? ((data as unknown as Uint8Array).slice() as unknown as T) : data;
  }

  /** A plain input with its data copied when that data views this memory (see detachable). */
  private detachablePlain(x: Input): Input {
    if (x === null || x === undefined || x instanceof Tensor || typeof x !== 'object') return x;
    const d = (x as PlainTensor).data;
    return ArrayBuffer.isView(d) && d.buffer === this.memory.buffer ? { ...(x as PlainTensor), data: this.detachable(d) } : x;
  }

  /** Where a plain input's data views this memory (constructor, byte offset, length), else null. */
  private viewPlace(x: Input): { ctor: new (b: ArrayBuffer, offset: number, length: number) => TypedData; offset: number; length: number; byteLength: number } | null {
    if (x === null || x === undefined || x instanceof Tensor || typeof x !== 'object') return null;
    const d = (x as PlainTensor).data;
    if (!ArrayBuffer.isView(d) || d instanceof DataView || d.buffer !== this.memory.buffer) return null;
    return { ctor: d.constructor as new (b: ArrayBuffer, offset: number, length: number) => TypedData, offset: d.byteOffset, length: (d as TypedData).length, byteLength: d.byteLength };
  }

  private assertAlive(): void {
    if (!this.alive) throw new KernelError('DISPOSED', 'this Kernels instance was disposed');
  }
}

/**
 * An in-place op on a plain input writes its result back into that input's `data`: checked
 * before anything runs, so the write-back cannot fail (a frozen array) or be lost (a Set,
 * a generator) after the kernel has run.
 */
function checkCopyBack(x: Input, what: string): void {
  if (x === null || x === undefined || x instanceof Tensor || typeof x !== 'object') return;
  const d = (x as PlainTensor).data;
  const fail = (why: string): never => {
    throw new KernelError('INVALID_ARGUMENT', `${what}: the operator updates it in place, so a plain input's data must be ${why}, got ${show(d)}`);
  };
  const ok = ArrayBuffer.isView(d) ? !(d instanceof DataView) : Array.isArray(d) && !Object.isFrozen(d);
  if (!ok) fail('a typed array or a writable array to receive the result');
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) {
    // a bigint array takes only int64 / uint64 results back (2.5 has no bigint)
    let name: string | undefined;
    try {
      name = dtypeInfo((x as PlainTensor).dtype ?? (x as { type?: unknown }).type, `${what}.dtype`).name;
    } catch {
      return; // the dtype is reported when the input is converted
    }
    if (name !== 'int64' && name !== 'uint64') fail(`able to hold ${name} values (a BigInt64Array / BigUint64Array holds int64 / uint64 ones)`);
  } else if (Array.isArray(d)) {
    // every element writable (defineProperty can make one read-only in an extensible
    // array): each is written with its own value now, so the write-back cannot throw later
    try {
      for (let i = 0; i < d.length; i++) if (i in d) (d as unknown[])[i] = (d as unknown[])[i]; // (a hole is refused later)
    } catch {
      fail('a typed array or an array whose every element is writable');
    }
  }
}

/** A plain input with each field read once (dtype or type, shape or dims, data); others as they are. */
function snapPlain(x: Input): Input {
  if (x === null || x === undefined || x instanceof Tensor || typeof x !== 'object' || !('data' in x)) return x;
  const p = x as PlainTensor & { type?: unknown; dims?: unknown };
  const dtype = p.dtype ?? p.type, shape = p.shape ?? p.dims, data = p.data;
  return { dtype, shape, data } as PlainTensor;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function overlaps(a: Tensor, b: Tensor | { byteOffset: number; byteLength: number }): boolean {
  if (a === b) return true;
  if (a.byteOffset < 0 || b.byteOffset < 0) return false;
  const aEnd = a.byteOffset + Math.max(a.byteLength, 1), bEnd = b.byteOffset + Math.max(b.byteLength, 1);
  return a.byteOffset < bEnd && b.byteOffset < aEnd;
}

function normalizeRequests(op: OpDef, options: RunOptions): OutputRequest[] {
  if (options === null || typeof options !== 'object') throw new KernelError('INVALID_ARGUMENT', `${op.name} options: expected an object, got ${show(options)}`);
  for (const key of Object.keys(options)) {
    if (key !== 'outputs') throw new KernelError('INVALID_ARGUMENT', `${op.name} options: unknown option ${show(key)}; the only one is outputs`);
  }
  const outs = options.outputs;
  if (outs === undefined) return op.outputs.map(() => undefined);
  if (!Array.isArray(outs) || outs.length > op.outputs.length) {
    throw new KernelError('INVALID_ARGUMENT', `${op.name} options.outputs: expected an array of at most ${op.outputs.length} entries, got ${show(outs)}`);
  }
  return op.outputs.map((s, i) => {
    const r = outs[i];
    if (r === undefined || r === null || r === true || r instanceof Tensor) return r;
    if (r === false) return null;
    throw new KernelError('INVALID_ARGUMENT', `${op.name} options.outputs[${i}] (${s.name}): expected a Tensor, true or null, got ${show(r)}`);
  });
}

function normalizeAttributes(op: OpDef, given: Record<string, unknown>): Attrs {
  if (given === null || typeof given !== 'object' || Array.isArray(given) || given instanceof Map) {
    throw new KernelError('INVALID_ATTRIBUTE', `${op.name} attributes: expected an object of name → value, got ${show(given)}`);
  }
  const out: Record<string, AttrValue> = {};
  // own properties only, both ways: an inherited name (constructor, toString, …) is neither
  // an attribute of the op nor a value the caller gave
  for (const key of Object.keys(given)) {
    if (!Object.hasOwn(op.attributes, key)) {
      throw new KernelError('INVALID_ATTRIBUTE', `${op.name}: unknown attribute ${show(key)}; expected one of ${Object.keys(op.attributes).join(', ') || '(none)'}`);
    }
  }
  for (const [name, spec] of attributeEntries(op)) {
    const v = Object.hasOwn(given, name) ? given[name] : undefined;
    out[name] = v === undefined ? (spec.default as AttrValue) : coerceAttr(op.name, name, spec, v);
  }
  return out;
}

/** Object.entries(op.attributes), computed once per op (it dominated small run() calls). */
const ATTR_ENTRIES = new WeakMap<OpDef, [string, AttrSpec][]>();
function attributeEntries(op: OpDef): [string, AttrSpec][] {
  let e = ATTR_ENTRIES.get(op);
  if (e === undefined) ATTR_ENTRIES.set(op, (e = Object.entries(op.attributes)));
  return e;
}

function coerceAttr(opName: string, name: string, spec: AttrSpec, v: unknown): AttrValue {
  const bad = (want: string): never => {
    throw new KernelError('INVALID_ATTRIBUTE', `${opName} attribute ${name}: expected ${want}, got ${show(v)}`);
  };
  let out: AttrValue;
  switch (spec.kind) {
    case 'int': {
      const n = typeof v === 'bigint' ? Number(v) : typeof v === 'boolean' ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) bad('an integer of magnitude below 2^53');
      out = n as number;
      break;
    }
    case 'float': {
      const n = typeof v === 'bigint' ? Number(v) : typeof v === 'string' && /^-?(NaN|Infinity)$/.test(v) ? Number(v) : v;
      if (typeof n !== 'number') bad('a number');
      out = n as number;
      break;
    }
    case 'string':
      if (typeof v !== 'string') bad('a string');
      out = v as string;
      break;
    case 'dtype':
      if (typeof v === 'bigint') out = Number(v);
      else if (typeof v === 'number' || typeof v === 'string') out = v;
      else bad('a dtype name or ONNX TensorProto code');
      break;
    case 'ints':
    case 'floats': {
      if (!Array.isArray(v) && !ArrayBuffer.isView(v)) bad('an array');
      out = Array.from(v as ArrayLike<unknown>, (x) => (typeof x === 'bigint' ? Number(x) : (x as number)));
      if (!out.every((x) => typeof x === 'number' && (spec.kind === 'floats' || Number.isSafeInteger(x)))) bad(`an array of ${spec.kind === 'ints' ? 'integers' : 'numbers'}`);
      break;
    }
  }
  if (spec.values && !spec.values.includes(out as string | number)) bad(`one of ${spec.values.map((x) => show(x)).join(', ')}`);
  return out;
}

/** Checks init options and returns the memory to import. */
export function createMemory(opts: InitOptions): { memory: WebAssembly.Memory; maxBytes: number } {
  const maxBytes = opts.maximumMemory ?? DEFAULT_MAX;
  // the default initial size (1 MiB) never exceeds a smaller maximum the caller set
  const initBytes = opts.initialMemory ?? Math.min(1 << 20, Number.isFinite(maxBytes) ? maxBytes : 1 << 20);
  if (!Number.isFinite(maxBytes) || maxBytes < PAGE || maxBytes > MAX_WASM32) {
    throw new KernelError('INVALID_ARGUMENT', `init maximumMemory: expected bytes in [${PAGE}, ${MAX_WASM32}], got ${show(opts.maximumMemory)}`);
  }
  if (!Number.isFinite(initBytes) || initBytes < 0 || initBytes > maxBytes) {
    throw new KernelError('INVALID_ARGUMENT', `init initialMemory: expected bytes in [0, maximumMemory = ${maxBytes}], got ${show(opts.initialMemory)}`);
  }
  const maxPages = Math.floor(maxBytes / PAGE);
  const initial = Math.max(1, Math.min(maxPages, Math.ceil(initBytes / PAGE)));
  return { memory: new WebAssembly.Memory({ initial, maximum: maxPages }), maxBytes: maxPages * PAGE };
}

/** Instantiates a compiled module into a new Kernels object. */
export async function instantiate(module: WebAssembly.Module, opts: InitOptions, build: BuildName): Promise<Kernels> {
  const { memory, maxBytes } = createMemory(opts);
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  return new Kernels(instance, memory, maxBytes, build, opts.debug === true);
}
