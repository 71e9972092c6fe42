import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DTYPES, DTYPE_NAMES, type Kernels, KernelError, expectKernelError, init } from './helpers.js';

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
