import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DTYPES, DTYPE_NAMES, type Kernels, KernelError, type Tensor, expectKernelError, init } from './helpers.js';

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());

describe('tensors', () => {
  it('every dtype of the table allocates with its data array, zero-filled', () => {
    for (const name of DTYPE_NAMES) {
      const info = DTYPES[name];
      const t = ek.tensor(name, [3, 5]);
      expect(t.dtype).toBe(name);
      expect(t.shape).toEqual([3, 5]);
      const d = t.data;
      if (name === 'string') {
        expect(d).toEqual(new Array(15).fill(''));
      } else {
        expect(d).toBeInstanceOf(info.array!);
        const want = info.kind === 'complex' ? 30 : info.bits < 8 ? Math.ceil((15 * info.bits) / 8) : 15;
        expect(d.length, name).toBe(want);
        expect(Array.from(d as ArrayLike<number | bigint>).every((v) => v == 0)).toBe(true);
        expect(t.byteOffset % 16).toBe(0);
      }
      t.dispose();
    }
  });

  it('a dimension of -0 is 0 (size and byteLength +0, not -0)', () => {
    const t = ek.tensor('float32', [3, -0]);
    expect(Object.is(t.shape[1], 0) && Object.is(t.size, 0) && Object.is(t.byteLength, 0), `${t.shape} ${t.size} ${t.byteLength}`).toBe(true);
    t.dispose();
  });

  it('packs 4-bit and 2-bit elements, element 0 in the low bits', () => {
    expect(ek.tensor('int4', [3], [0x21, 0x03]).data).toEqual(new Uint8Array([0x21, 0x03]));
    expect(ek.tensor('uint2', [5], [0b11100100, 0b01]).data.length).toBe(2);
  });

  it('accepts ordinary arrays, bigints, decimal strings and non-finite strings', () => {
    expect(Array.from(ek.tensor('float32', [3], ['NaN', 'Infinity', 1.5]).data as Float32Array)).toEqual([NaN, Infinity, 1.5]);
    expect(Array.from(ek.tensor('int64', [3], ['-9007199254740993', 2n, 3]).data as BigInt64Array)).toEqual([-9007199254740993n, 2n, 3n]);
    expect(Array.from(ek.tensor('bool', [2], [true, false]).data as Uint8Array)).toEqual([1, 0]);
    expect(Array.from(ek.tensor('complex64', [1], [1, -2]).data as Float32Array)).toEqual([1, -2]);
    expect(ek.tensor(1, [1]).dtype).toBe('float32'); // ONNX TensorProto code
  });

  it('rejects bad shapes, dtypes and data with clear errors', () => {
    expectKernelError(() => ek.tensor('float32', [2, -1]), 'INVALID_SHAPE', /non-negative integers/);
    expectKernelError(() => ek.tensor('float32', [2.5]), 'INVALID_SHAPE');
    expectKernelError(() => ek.tensor('float33', [2]), 'INVALID_DTYPE', /float33/);
    expectKernelError(() => ek.tensor('float32', [2], [1]), 'INVALID_SHAPE', /expected 2 values.*got 1/);
    expectKernelError(() => ek.tensor('int64', [1], [1.5]), 'INVALID_VALUE', /integer/);
  });

  it('bytes() of a host-side string tensor is a KernelError, not a RangeError', () => {
    const s = ek.tensor('string', [2], ['a', 'b']);
    expectKernelError(() => s.bytes(), 'INVALID_DTYPE', /string/);
    s.dispose();
  });

  it("a string tensor's data keeps its shape's length: operators never read undefined or write past the shape", () => {
    const s = ek.tensor('string', [3], ['1', '2', '3']);
    expect(() => { (s.data as string[]).length = 1; }).toThrow(TypeError);
    expect(() => (s.data as string[]).push('4')).toThrow(TypeError);
    (s.data as string[])[1] = '5'; // elements stay writable
    expect(s.data).toEqual(['1', '5', '3']);
    for (const to of ['float32', 'int32', 'string'] as const) {
      const [y] = ek.run('Cast', [s], { to });
      expect(Array.from(y!.data as ArrayLike<unknown>).map(String)).toEqual(['1', '5', '3']);
      y!.dispose();
    }
    const cache = ek.tensor('string', [1, 3, 1], ['a', 'b', 'c']);
    const update = ek.tensor('string', [1, 2, 1], ['x', 'y']);
    expect(() => { (update.data as string[]).length = 0; }).toThrow(TypeError);
    ek.run('TensorScatter', [cache, update]);
    expect(cache.data).toEqual(['x', 'y', 'c']);
    // a zero-filled string tensor, an operator's output and a plain input's copy are sealed too
    const [z] = ek.run('Cast', [{ dtype: 'float32', shape: [2], data: [1, 2] }], { to: 'string' });
    for (const t of [ek.tensor('string', [2]), z!]) expect(Object.isSealed(t.data)).toBe(true);
    for (const t of [s, cache, update, z!]) t.dispose();
  });

  it('a disposed tensor is an error everywhere, and dispose is idempotent', () => {
    const t = ek.tensor('float32', [2]);
    const live = ek.stats().tensorsLive;
    t.dispose();
    t.dispose();
    expect(ek.stats().tensorsLive).toBe(live - 1);
    expect(t.disposed).toBe(true);
    expectKernelError(() => t.data, 'DISPOSED');
    expectKernelError(() => ek.run('TensorScatter', [t, t]), 'DISPOSED', /past_cache/);
  });

  it('stats count tensors and bytes; freeing returns them', () => {
    const s0 = ek.stats();
    const a = ek.tensor('float32', [1000]);
    const s1 = ek.stats();
    expect(s1.tensorsLive).toBe(s0.tensorsLive + 1);
    expect(s1.bytesInUse).toBeGreaterThanOrEqual(s0.bytesInUse + 4016);
    a.dispose();
    expect(ek.stats()).toMatchObject({ tensorsLive: s0.tensorsLive, bytesInUse: s0.bytesInUse });
  });

  it('tensors of another instance are rejected', async () => {
    const other = await init();
    const t = other.tensor('float32', [1, 2, 1]);
    const mine = ek.tensor('float32', [1, 2, 1]);
    expectKernelError(() => ek.run('TensorScatter', [mine, t]), 'INVALID_ARGUMENT', /another instance/);
    other.dispose();
  });
});

describe('instances', () => {
  it('honours maximumMemory with OUT_OF_MEMORY and stays usable', async () => {
    const k = await init({ maximumMemory: 8 << 20 });
    const a = k.tensor('uint8', [6 << 20]);
    expectKernelError(() => k.tensor('uint8', [4 << 20]), 'OUT_OF_MEMORY', /maximumMemory/);
    expect(k.stats().tensorsLive).toBe(1);
    a.dispose();
    const b = k.tensor('uint8', [4 << 20]);
    expect(b.data.length).toBe(4 << 20);
    k.dispose();
  });

  it('validates init options', async () => {
    await expect(init({ maximumMemory: 1000 })).rejects.toBeInstanceOf(KernelError);
    await expect(init({ initialMemory: 2 << 20, maximumMemory: 1 << 20 })).rejects.toThrow(/initialMemory/);
  });

  it('a disposed instance throws DISPOSED and its tensors are disposed', async () => {
    const k = await init();
    const t = k.tensor('float32', [4]);
    k.dispose();
    expect(t.disposed).toBe(true);
    expectKernelError(() => k.tensor('float32', [1]), 'DISPOSED', /instance/);
    expectKernelError(() => k.stats(), 'DISPOSED');
  });

  it('two instances are isolated', async () => {
    const a = await init(), b = await init();
    const ta = a.tensor('int32', [4], [1, 2, 3, 4]);
    const tb = b.tensor('int32', [4], [5, 6, 7, 8]);
    expect(ta.byteOffset).toBe(tb.byteOffset);
    expect(Array.from(ta.data as Int32Array)).toEqual([1, 2, 3, 4]);
    a.dispose(); b.dispose();
  });
});

describe('debug mode', () => {
  it('catches a write outside an allocation on the next operator call', async () => {
    const k = await init({ debug: true });
    const cache = k.tensor('float32', [1, 4, 2]);
    const upd = k.tensor('float32', [1, 1, 2], [1, 2]);
    k.run('TensorScatter', [cache, upd], { axis: 1 });
    // Simulate a kernel bug: one byte past the end of the cache.
    new Uint8Array(k.memory.buffer)[cache.byteOffset + cache.byteLength] ^= 0xff;
    expectKernelError(() => k.run('TensorScatter', [cache, upd], { axis: 1 }), 'INTERNAL', /outside its outputs.*byte 32/);
    k.dispose();
  });

  it('keeps blocks 16-byte aligned', async () => {
    const k = await init({ debug: true });
    for (const n of [1, 17, 100]) expect(k.tensor('uint8', [n]).byteOffset % 16).toBe(0);
    k.dispose();
  });
});

describe('worker-sized limits', () => {
  it('a 128 MB maximumMemory gives OUT_OF_MEMORY on the allocation that would exceed it, and the instance stays usable', async () => {
    const k = await init({ maximumMemory: 128 << 20 });
    const big = k.tensor('float32', [25 << 20]); // 100 MiB
    (big.data as Float32Array)[0] = 7;
    const before = k.stats();
    expectKernelError(() => k.tensor('float32', [10 << 20]), 'OUT_OF_MEMORY', /maximumMemory 134217728/);
    expect(k.stats()).toMatchObject({ tensorsLive: before.tensorsLive, bytesInUse: before.bytesInUse });
    expect((big.data as Float32Array)[0]).toBe(7);
    const ok = k.tensor('float32', [5 << 20]); // 20 MiB still fits
    expect(ok.data.length).toBe(5 << 20);
    expect(k.stats().memoryBytes).toBeLessThanOrEqual(128 << 20);
    k.dispose();
  });

  it('an operator whose output allocation fails writes nothing and leaks nothing', async () => {
    const k = await init({ maximumMemory: 2 << 20 });
    const filler = k.tensor('uint8', [1900 << 10]);
    const cache = { dtype: 'float32', shape: [1, 4096, 64], data: new Float32Array(4096 * 64) }; // 1 MiB plain: cannot be copied in
    const before = k.stats();
    expectKernelError(() => k.run('TensorScatter', [cache, { dtype: 'float32', shape: [1, 1, 64], data: new Float32Array(64).fill(1) }], { axis: 1 }), 'OUT_OF_MEMORY');
    expect(k.stats()).toMatchObject({ tensorsLive: before.tensorsLive, bytesInUse: before.bytesInUse });
    expect(cache.data.every((v) => v === 0)).toBe(true);
    filler.dispose();
    k.dispose();
  });
});

describe('data that views the instance’s own memory', () => {
  it('ek.tensor copies it before an allocation that grows the memory', async () => {
    const k = await init({ initialMemory: 65536 });
    const a = k.tensor('float32', [8000], Array.from({ length: 8000 }, (_, i) => i));
    const b = k.tensor('float32', [8000], a.data as Float32Array); // forces growth
    expect(k.stats().memoryBytes).toBeGreaterThan(65536);
    expect((b.data as Float32Array)[7999]).toBe(7999);
    k.dispose();
  });
});

describe('host contract (audit of the public API against DESIGN / README)', () => {
  const plain = (dtype: unknown, shape: number[], data: unknown) => ({ dtype, shape, data }) as never;

  it("dtype names are looked up as own entries: 'constructor' / '__proto__' are unknown dtypes", () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expectKernelError(() => ek.run('Cast', [plain(name, [1], [1])], { to: 'float32' }), 'INVALID_DTYPE', /dtype/);
      expectKernelError(() => ek.tensor(name, [1]), 'INVALID_DTYPE', /expected one of/);
      expectKernelError(() => ek.run('Cast', [ek.tensor('float32', [1])], { to: name }), 'INVALID_ATTRIBUTE', /to/);
    }
  });

  it('attributes: inherited names are unknown, inherited values are not read, arrays / Maps are not attribute objects', () => {
    const x = ek.tensor('float32', [3], [1, 2, 3]);
    const axis = plain('int32', [], [0]);
    for (const name of ['constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
      expectKernelError(() => ek.run('CumSum', [x, axis], { [name]: 1 }), 'INVALID_ATTRIBUTE', /unknown attribute/);
    }
    expectKernelError(() => ek.run('CumSum', [x, axis], JSON.parse('{"__proto__": 1}')), 'INVALID_ATTRIBUTE', /unknown attribute/);
    expectKernelError(() => ek.run('CumSum', [x, axis], [] as never), 'INVALID_ATTRIBUTE', /object of name/);
    expectKernelError(() => ek.run('CumSum', [x, axis], new Map([['reverse', 1]]) as never), 'INVALID_ATTRIBUTE', /object of name/);
    // an attribute object whose prototype carries a value: only own values count
    const proto = Object.create({ reverse: 1 });
    expect(Array.from(ek.run('CumSum', [x, axis], proto)[0]!.data as Float32Array)).toEqual([1, 3, 6]);
    x.dispose();
  });

  it('string tensors beyond 2^26 elements are OUT_OF_MEMORY, not a RangeError or a dead process', () => {
    for (const shape of [[2 ** 32], [2 ** 20, 2 ** 20], [2 ** 31], [2 ** 26 + 1]]) {
      expectKernelError(() => ek.tensor('string', shape), 'OUT_OF_MEMORY', /2\^26/);
    }
  });

  it('plain inputs viewing this memory are all copied before the first allocation of the call', async () => {
    const k = await init({ initialMemory: 1 << 20 });
    const ax = k.tensor('int32', [], [0]);
    const x = { dtype: 'float32', shape: [1 << 20], data: new Float32Array(1 << 20).fill(1) };
    const y = k.run('CumSum', [x, { dtype: 'int32', shape: [], data: ax.data as Int32Array }])[0]!;
    expect((y.data as Float32Array)[(1 << 20) - 1]).toBe(1 << 20);
    // the same through scan's and linearScan's leaves
    const h = k.tensor('float32', [2], [5, 6]);
    const a = { dtype: 'float32', shape: [1 << 18, 2], data: new Float32Array(1 << 19).fill(0) };
    const [last] = k.linearScan(a, { dtype: 'float32', shape: [1 << 18, 2], data: new Float32Array(1 << 19).fill(1) }, { dtype: 'float32', shape: [2], data: h.data as Float32Array });
    expect(Array.from(last.data as Float32Array)).toEqual([1, 1]);
    const c0 = k.tensor('float32', [2], [1, 2]);
    const big = { dtype: 'float32', shape: [1 << 18, 2], data: new Float32Array(1 << 19).fill(1) };
    const [carry] = k.scan(k.combine.add, { dtype: 'float32', shape: [2], data: c0.data as Float32Array }, big as never);
    expect(Array.from((carry as { data: Float32Array }).data)).toEqual([1 + (1 << 18), 2 + (1 << 18)]);
    k.dispose();
  });

  it('a failed TRT_KVCacheUpdate does not grow the scratch area; scratch asks for exactly what fits when doubling does not', async () => {
    const k = await init({ maximumMemory: 8 << 20 });
    const cache = k.tensor('float32', [600000, 1, 1, 0]), bad = k.tensor('float32', [600000, 1, 1]);
    const before = k.stats();
    expectKernelError(() => k.run('TRT_KVCacheUpdate', [cache, bad]), 'INVALID_SHAPE');
    expect(k.stats().scratchBytes).toBe(before.scratchBytes);
    expect(k.stats().memoryBytes).toBe(before.memoryBytes);
    k.dispose();
    const m = await init({ maximumMemory: 4 << 20, initialMemory: 4 << 20 });
    const run = (B: number) => m.run('TRT_KVCacheUpdate', [m.tensor('float32', [B, 1, 1, 0]), m.tensor('float32', [B, 1, 1, 0])]);
    run(200000);
    run(210000); // 1.68 MB needed; doubling the 1.6 MB area would not fit
    expect(m.stats().scratchBytes).toBeGreaterThanOrEqual(4 * (2 * 210000 + 1));
    m.dispose();
  });

  it('a scratch request that runs out of memory keeps the old scratch area: stats() unchanged', async () => {
    const k = await init({ maximumMemory: 1 << 20 });
    const q = k.tensor('float32', [1, 1, 64, 64]);
    const fill: Tensor[] = [];
    try { for (;;) fill.push(k.tensor('uint8', [4096])); } catch { /* memory full */ }
    const before = k.stats();
    expect(before.scratchBytes).toBeGreaterThan(0);
    expectKernelError(() => k.run('Attention', [q, q, q]), 'OUT_OF_MEMORY');
    expect(k.stats()).toEqual(before);
    // and with a little room back the call runs
    for (const t of fill.splice(0, 40)) t.dispose();
    const [y] = k.run('Attention', [q, q, q]) as Tensor[];
    expect(y.shape).toEqual([1, 1, 64, 64]);
    k.dispose();
  });

  it('data values are checked: wrong kinds and out-of-range integers are INVALID_VALUE, bool is stored as 1 / 0', () => {
    expectKernelError(() => ek.tensor('float32', [3], ['abc', {}, undefined]), 'INVALID_VALUE', /data\[0\]/);
    expectKernelError(() => ek.tensor('float32', [3], 'abc' as never), 'INVALID_ARGUMENT', /array/);
    expectKernelError(() => ek.tensor('int32', [3], [1, '', 2]), 'INVALID_VALUE', /data\[1\]/);
    expectKernelError(() => ek.tensor('int32', [1], [[5]]), 'INVALID_VALUE');
    expectKernelError(() => ek.tensor('int32', [1], [1.5]), 'INVALID_VALUE', /integer/);
    expectKernelError(() => ek.tensor('int32', [1], [1e12]), 'INVALID_VALUE', /integer in/);
    expectKernelError(() => ek.tensor('uint8', [1], [-1]), 'INVALID_VALUE');
    expectKernelError(() => ek.tensor('float16', [1], [1.5]), 'INVALID_VALUE', /bit patterns/);
    expectKernelError(() => ek.tensor('int64', [1], ['12345678901234567890']), 'INVALID_VALUE', /range/);
    expectKernelError(() => ek.tensor('uint64', [1], [-1]), 'INVALID_VALUE');
    expectKernelError(() => ek.tensor('float32', [1], [Symbol('s')]), 'INVALID_VALUE', /symbol/);
    expectKernelError(() => ek.tensor('bool', [1], ['true']), 'INVALID_VALUE');
    expectKernelError(() => ek.tensor('string', [1], [{}]), 'INVALID_VALUE', /string/);
    expect(Array.from(ek.tensor('uint64', [1], ['18446744073709551615']).data as BigUint64Array)).toEqual([2n ** 64n - 1n]);
    expect(Array.from(ek.tensor('float32', [2], ['1.5', '-Infinity']).data as Float32Array)).toEqual([1.5, -Infinity]);
    const b = ek.tensor('bool', [3], [2, 255, 0]);
    expect(Array.from(b.data as Uint8Array)).toEqual([1, 1, 0]);
    expect(Array.from(ek.tensor('bool', [2], new Uint8Array([7, 0])).data as Uint8Array)).toEqual([1, 0]);
    // any non-zero element of any typed array is true (set() took 256 modulo 256, truncated 0.5)
    expect(Array.from(ek.tensor('bool', [3], new Int32Array([256, 512, 0])).data as Uint8Array)).toEqual([1, 1, 0]);
    expect(Array.from(ek.tensor('bool', [4], new Float32Array([0.5, -0.5, -0, 2])).data as Uint8Array)).toEqual([1, 1, 0, 1]);
    expect(Array.from(ek.tensor('bool', [2], new BigInt64Array([2n ** 40n, 0n])).data as Uint8Array)).toEqual([1, 0]);
    expectKernelError(() => ek.tensor('bool', [1], new Float64Array([NaN])), 'INVALID_VALUE', /boolean or number/);
    // 64-bit strings are decimal integers only (BigInt() alone read '0x10' as 16)
    for (const v of ['0x10', '0b101', '0o17', '1e3', '1.0']) expectKernelError(() => ek.tensor('int64', [1], [v]), 'INVALID_VALUE');
    expect(Array.from(ek.tensor('int64', [2], [' -12 ', '+7']).data as BigInt64Array)).toEqual([-12n, 7n]);
    expect(Array.from(ek.run('Cast', [b], { to: 'float32' })[0]!.data as Float32Array)).toEqual([1, 1, 0]);
  });

  it('a detached typed array with a zero-element shape is empty data: no TypeError, no leaked tensor', () => {
    const a = new Float32Array(4);
    structuredClone(a.buffer, { transfer: [a.buffer] });
    const before = ek.stats();
    const t = ek.tensor('float32', [0], a);
    expect(t.size).toBe(0);
    t.dispose();
    const [y] = ek.run('Cast', [{ dtype: 'float32', shape: [0], data: a }], { to: 'int32' });
    y!.dispose();
    expect(ek.stats().tensorsLive).toBe(before.tensorsLive);
    expect(ek.stats().bytesInUse).toBe(before.bytesInUse);
    expectKernelError(() => ek.tensor('float32', [2], a), 'INVALID_SHAPE');
  });

  it('init: wasm that cannot be read is INVALID_ARGUMENT; a small maximumMemory alone is accepted', async () => {
    for (const wasm of ['file:///nonexistent.wasm', 'http://127.0.0.1:1/x.wasm']) {
      let err: unknown;
      try {
        await init({ wasm });
      } catch (e) {
        err = e;
      }
      expect(err, wasm).toBeInstanceOf(KernelError);
      expect((err as InstanceType<typeof KernelError>).code).toBe('INVALID_ARGUMENT');
    }
    const k = await init({ maximumMemory: 512 * 1024 });
    expect(k.stats().memoryBytes).toBeLessThanOrEqual(512 * 1024);
    k.dispose();
  });

  it('init: a build missing beside the bundle is a KernelError UNAVAILABLE (it was a raw ENOENT error); a Module of another realm is taken', async () => {
    const { copyFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { pathToFileURL, fileURLToPath } = await import('node:url');
    const vm = await import('node:vm');
    const dir = mkdtempSync(join(tmpdir(), 'ek-nowasm-'));
    try {
      const dist = fileURLToPath(new URL('../dist/', import.meta.url));
      copyFileSync(join(dist, 'index.js'), join(dir, 'index.js')); // the Node bundle alone, no .wasm beside it
      const lone = await import(pathToFileURL(join(dir, 'index.js')).href);
      let err: { name?: string; code?: string; message?: string } | undefined;
      try { await lone.init(); } catch (e) { err = e as typeof err; }
      expect(err?.name).toBe('KernelError');
      expect(err?.code).toBe('UNAVAILABLE');
      expect(err?.message).toMatch(/could not load the package's simd build \(.*ENOENT/);
      // and once the file is there, the same init() works (a failed load is not cached)
      copyFileSync(join(dist, 'edgekernels.wasm'), join(dir, 'edgekernels.wasm'));
      (await lone.init()).dispose();
      // a WebAssembly.Module compiled in another realm (a vm context, an iframe): instanceof fails there
      const bytes = (await import('node:fs')).readFileSync(join(dist, 'edgekernels.scalar.wasm'));
      const foreign = vm.runInNewContext('new WebAssembly.Module(b)', { b: new Uint8Array(bytes) });
      expect(foreign instanceof WebAssembly.Module).toBe(false);
      const k = await init({ wasm: foreign });
      expect(k.stats().build).toBe('scalar');
      k.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an output of the wrong dtype is INVALID_DTYPE, of the wrong shape INVALID_SHAPE', () => {
    const x = ek.tensor('float32', [4], [1, 2, 3, 4]), axis = plain('int32', [], [0]);
    expectKernelError(() => ek.run('CumSum', [x, axis], {}, { outputs: [ek.tensor('float64', [4])] }), 'INVALID_DTYPE', /outputs\[0\]/);
    expectKernelError(() => ek.run('CumSum', [x, axis], {}, { outputs: [ek.tensor('float32', [5])] }), 'INVALID_SHAPE', /outputs\[0\]/);
  });

  it('an in-place op on a plain cache whose data cannot take the result is rejected before it runs', () => {
    const upd = { dtype: 'float32', shape: [1, 1, 1, 1], data: [7] };
    const frozen = { dtype: 'float32', shape: [1, 1, 3, 1], data: Object.freeze([0, 0, 0]) };
    expectKernelError(() => ek.run('TensorScatter', [frozen as never, upd]), 'INVALID_ARGUMENT', /in place/);
    expectKernelError(() => ek.run('TensorScatter', [{ dtype: 'float32', shape: [1, 1, 3, 1], data: new Set([1, 2, 3]) } as never, upd]), 'INVALID_ARGUMENT', /in place/);
    const ok = { dtype: 'float32', shape: [1, 1, 3, 1], data: [0, 0, 0] };
    ek.run('TensorScatter', [ok, upd]);
    expect(ok.data).toEqual([7, 0, 0]);
  });
});

describe('host contract: options and trees', () => {
  it('init and run reject unknown options (a typo must not leave a default in place)', async () => {
    for (const opts of [{ maxMemory: 1 << 20 }, { debug: 'yes' }]) {
      let err: unknown;
      try {
        await init(opts as never);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(opts)).toBeInstanceOf(KernelError);
      expect((err as InstanceType<typeof KernelError>).code).toBe('INVALID_ARGUMENT');
    }
    const x = ek.tensor('float32', [2], [1, 2]), axis = ek.tensor('int32', [], [0]);
    expectKernelError(() => ek.run('CumSum', [x, axis], {}, { output: [] } as never), 'INVALID_ARGUMENT', /unknown option "output"/);
  });

  it('an in-place op takes null for its output slot, as every op does', () => {
    const cache = ek.tensor('float32', [1, 1, 2, 1]), upd = ek.tensor('float32', [1, 1, 1, 1], [3]);
    expect(ek.run('TensorScatter', [cache, upd], {}, { outputs: [null] })[0]).toBe(cache);
    expect(Array.from(cache.data as Float32Array)).toEqual([3, 0]);
  });

  it('a scan tree that contains itself is INVALID_ARGUMENT, not a stack overflow', () => {
    const c = ek.tensor('float32', [2]), x = ek.tensor('float32', [3, 2]);
    const cyc: unknown[] = [c];
    cyc.push(cyc);
    expectKernelError(() => ek.scan(ek.combine.add, cyc, x), 'INVALID_ARGUMENT', /contains itself/);
    const d: Record<string, unknown> = { a: x };
    d.self = d;
    expectKernelError(() => ek.scan(ek.combine.add, c, d), 'INVALID_ARGUMENT', /contains itself/);
    // a subtree met twice (not a cycle) is fine
    const shared = [c];
    const [carry] = ek.scan((h: Tensor[][]) => [[[ek.tensor('float32', [2])], [ek.tensor('float32', [2])]], ek.tensor('float32', [1])] as never, [shared, shared], x);
    expect((carry as unknown[]).length).toBe(2);
  });
});

describe('host contract: outputs of a call that throws', () => {
  it('an operator that runs out of memory after allocating its output frees it (Cast, float16 CumSum)', async () => {
    const k = await init({ maximumMemory: 2 << 20 });
    const st = k.stats();
    // leave ~150 KB: Cast int32 → int8 gets its output, then its ~213 KB scratch request fails
    const filler = k.tensor('uint8', [st.largestFreeBlock + (2 << 20) - st.memoryBytes - 150000]);
    const x = k.tensor('int32', [1000]);
    const before = k.stats();
    for (let i = 0; i < 3; i++) expectKernelError(() => k.run('Cast', [x], { to: 'int8' }), 'OUT_OF_MEMORY');
    expect(k.stats().tensorsLive).toBe(before.tensorsLive);
    expect(k.stats().bytesInUse).toBe(before.bytesInUse);
    x.dispose();
    filler.dispose();
    k.dispose();
    const m = await init({ maximumMemory: 2 << 20 });
    const h = m.tensor('float16', [1, 300000]);
    const b2 = m.stats();
    expectKernelError(() => m.run('CumSum', [h, { dtype: 'int32', shape: [], data: [0] }]), 'OUT_OF_MEMORY');
    expect(m.stats().tensorsLive).toBe(b2.tensorsLive);
    expect(m.stats().bytesInUse).toBe(b2.bytesInUse);
    m.dispose();
  });
});

describe('caller code run while inputs are read (getters, iterables, Proxies)', () => {
  /** A fresh instance with a cache tensor and a plain input whose data iterator disposes it and reuses its block. */
  async function setup() {
    const k = await init();
    const cache = k.tensor('float32', [1, 4, 2]);
    const state: { victim?: Tensor } = {};
    function* rows() {
      cache.dispose();
      state.victim = k.tensor('float32', [1, 4, 2], new Float32Array(8).fill(7)); // first fit: the cache's block
      yield 1;
      yield 2;
    }
    return { k, cache, state, rows };
  }

  it('run: a tensor input disposed while a later plain input is converted is DISPOSED, nothing written', async () => {
    const { k, cache, state, rows } = await setup();
    expectKernelError(() => k.run('TensorScatter', [cache, { dtype: 'float32', shape: [1, 1, 2], data: rows() }]), 'DISPOSED', /TensorScatter input past_cache/);
    expect(state.victim!.byteOffset).toBe(cache.byteOffset);
    expect(Array.from(state.victim!.data as Float32Array)).toEqual([7, 7, 7, 7, 7, 7, 7, 7]);
    k.dispose();
  });

  it('scan / linearScan / combiners: a tensor leaf disposed while a plain leaf is converted is DISPOSED', async () => {
    const k = await init();
    /** Plain data whose iterator disposes `t` and reuses its block. */
    const disposing = (t: Tensor, n: number) => ({ dtype: 'float32', shape: [n], data: (function* () {
      t.dispose();
      k.tensor(t.dtype, t.shape);
      for (let i = 0; i < n; i++) yield i;
    })() });
    const f32 = (shape: number[]) => k.tensor('float32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(1));
    const live = k.stats().tensorsLive;
    let a = f32([3]);
    expectKernelError(() => k.scan((c: Tensor[]) => [c, null], [a, disposing(a, 2)], null, { length: 1 }), 'DISPOSED', /init\[0\]/);
    a = f32([]);
    expectKernelError(() => k.scan(k.combine.add, a, { ...disposing(a, 4), shape: [4] }), 'DISPOSED', /init/);
    a = f32([4]);
    expectKernelError(() => k.combine.max(a, disposing(a, 4)), 'DISPOSED', /combine.max carry/);
    a = f32([4]);
    expectKernelError(() => k.linearScan(a, disposing(a, 4), { dtype: 'float32', shape: [], data: [0] }), 'DISPOSED', /linearScan a/);
    expect(k.stats().tensorsLive).toBe(live + 4); // the blocks the iterators took
    k.dispose();
  });

  it('kvCache append / attend: k, v or q disposed by an option getter is DISPOSED, nothing written', async () => {
    const k = await init();
    const cache = k.kvCache({ layers: 1, batch: 1, kvHeads: 1, headDim: 2, capacity: 4 });
    const row = () => k.tensor('float32', [1, 1, 1, 2], [1, 2]);
    const kt = row(), vt = row();
    const lengths = new Proxy([1], { get: (a, p) => { if (p === '0') kt.dispose(); return Reflect.get(a, p); } });
    expectKernelError(() => cache.append(0, kt, vt, { lengths }), 'DISPOSED', /kvCache k/);
    expect(cache.stepInProgress).toBe(false);
    expect(Array.from(cache.keys(0).data as Float32Array)).toEqual(new Array(8).fill(0));
    cache.append(0, row(), row());
    const q = row(), out = row();
    const opts = { get scale() { q.dispose(); return 1; }, out };
    expectKernelError(() => cache.attend(0, q, opts), 'DISPOSED', /kvCache q/);
    expect(Array.from(out.data as Float32Array)).toEqual([1, 2]);
    k.dispose();
  });
});
