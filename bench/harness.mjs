// The benchmark harness: timing, JSON lines, peers. Each bench/<family>.bench.mjs gets an
// `h` object (see README, "Benchmarks"). Every case is measured against its peers in the
// same process and run, so ratios are meaningful on a shared, noisy machine.
import { createRequire } from 'node:module';
import { onnxModel } from './onnx.mjs';

const require = createRequire(import.meta.url);

/**
 * Runs fn (sync or async) repeatedly: a warm-up of at least 3 calls and warmMs (so an engine's
 * optimizing tier is what gets timed: onnxruntime-web's per-step graph took 30 ms after 3
 * calls, 6.7 ms after 1.5 s), then until minMs or maxRuns. Times in ms.
 */
export async function time(fn, { minMs = 300, maxRuns = 200, minRuns = 5, warmMs = 500 } = {}) {
  const w0 = performance.now();
  for (let i = 0; i < 3 || performance.now() - w0 < warmMs; i++) await fn();
  const samples = [];
  const start = performance.now();
  while (samples.length < minRuns || (samples.length < maxRuns && performance.now() - start < minMs)) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return stats(samples);
}

/**
 * Times `impls` ([{ fn }], the first the reference) in interleaved rounds: each first runs for
 * at least 3 calls and `warmMs` (so V8's optimizing tier is measured), then every round runs each impl `perRound`
 * times in turn. Sets `samples` (every run, ms) and `roundMs` (each round's median) on each
 * impl, and returns them.
 */
export async function interleave(impls, { warmMs, rounds, perRound = 1 }) {
  for (const m of impls) {
    const t0 = performance.now();
    for (let i = 0; i < 3 || performance.now() - t0 < warmMs; i++) await m.fn();
    m.samples = [];
    m.roundMs = [];
  }
  for (let r = 0; r < rounds; r++) {
    for (const m of impls) {
      const xs = [];
      for (let k = 0; k < perRound; k++) {
        const t0 = performance.now();
        await m.fn();
        xs.push(performance.now() - t0);
      }
      m.samples.push(...xs);
      m.roundMs.push(median(xs));
    }
  }
  return impls;
}

/**
 * The paired ratio of two interleaved impls: the median over rounds of a's round time over
 * ref's. The host's other tenants slow this machine by up to half for seconds at a time, and
 * both impls of a round see the same load, so this ratio holds where a ratio of two overall
 * medians (each a mix of quiet and loaded rounds) does not.
 */
export function pairedRatio(a, ref) {
  return median(a.roundMs.map((t, i) => t / ref.roundMs[i]));
}

/**
 * Whether `got` matches `want` element by element (array-likes of numbers or bigints):
 * |got[i] − want[i]| ≤ tol(i) (a number, or a function of the index), NaN matching NaN.
 * `idx` (optional) lists the indices to compare, for a sample of a large output. On the first
 * mismatch it prints a `# <label>: …` line to stderr and returns false. The benches check
 * every implementation's output with it before timing: ours must match (a bench of a wrong
 * output throws), and a peer that computes something else is left out, never compared.
 */
export function agrees(label, got, want, tol = 0, idx = null) {
  const n = idx ? idx.length : want.length;
  if (!idx && got.length !== want.length) {
    console.error(`# ${label}: ${got.length} values, expected ${want.length}`);
    return false;
  }
  for (let k = 0; k < n; k++) {
    const i = idx ? idx[k] : k;
    const a = Number(got[i]), b = Number(want[i]);
    const t = typeof tol === 'function' ? tol(i) : tol;
    if (a === b || (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= t) continue;
    console.error(`# ${label}: element ${i} is ${a}, expected ${b} (tolerance ${t})`);
    return false;
  }
  return true;
}

/** Every `step`-th index below n, and the last: the sample `agrees` checks of a large output. */
export function sampleIdx(n, count = 4096) {
  const step = Math.max(1, Math.floor(n / count)), out = [];
  for (let i = 0; i < n; i += step) out.push(i);
  if (n > 0 && out[out.length - 1] !== n - 1) out.push(n - 1);
  return out;
}

/** { median, p10, p90, runs } of samples (ms). */
export function stats(samples) {
  const xs = samples.slice().sort((a, b) => a - b);
  const q = (p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
  return { median: q(0.5), p10: q(0.1), p90: q(0.9), runs: xs.length };
}

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/**
 * A source and a destination of `bytes` bytes for a memcpy row, in one buffer with dst half a
 * 4 KiB page past a whole number of pages after src. glibc's memmove on this AMD Zen runs far
 * slower for some distances dst − src modulo 4096: 16 (where two separate heap allocations
 * can land; a 32 KiB copy ran at 6 GB/s instead of 75, a 144 KiB one took 50 µs instead of
 * 3.5) and 0 (a 16 MiB copy at 5.6 GB/s instead of 14). At 2048 every size measured ran at
 * the best of the layouts tried (separate, 0, 64, 2048), so a memcpy row is the machine's
 * copy rate, not the luck of an allocation.
 */
export function copyBuffers(bytes) {
  const stride = Math.ceil(bytes / 4096) * 4096 + 2048;
  const buf = new Uint8Array(stride + bytes);
  const src = buf.subarray(0, bytes).fill(1);
  return { src, dst: buf.subarray(stride, stride + bytes) };
}

/** A memcpy row's function for `compare`: one TypedArray.prototype.set of `bytes` bytes (copyBuffers). */
export function copier(bytes) {
  const { src, dst } = copyBuffers(bytes);
  return () => dst.set(src);
}

/** The bandwidth limit: TypedArray.prototype.set of `bytes` bytes (read + written = 2·bytes of traffic). */
export async function memcpy(bytes, opts) {
  const { src, dst } = copyBuffers(bytes);
  return time(() => dst.set(src), opts);
}

/**
 * The read limit: a function that reads `bytes` bytes once per call with a hand-assembled
 * WebAssembly SIMD loop (v128.load + f32x4.add, 128 bytes per iteration into 4 accumulators),
 * the least a kernel that must read them can do in this engine. The buffer is written first
 * (untouched pages would all map the one zero page and read from cache). Natively (gcc -O2
 * -mavx2, 60 MB, best of 10) this machine reads 14–16 GB/s with 128-bit and 16–18 GB/s with
 * 256-bit loads.
 */
export async function reader(bytes) {
  const n = Math.ceil(bytes / 128) * 128;
  const leb = (v) => { const o = []; do { let b = v & 0x7f; v >>>= 7; if (v) b |= 0x80; o.push(b); } while (v); return o; };
  const sec = (id, body) => [id, ...leb(body.length), ...body];
  const str = (s) => [s.length, ...Array.from(s, (c) => c.charCodeAt(0))];
  const load = (acc, off) => [0x20, acc, 0x20, 0, 0xfd, 0x00, 4, ...leb(off), 0xfd, 0xe4, 0x01, 0x21, acc];
  const body = [
    1, 4, 0x7b, // 4 v128 locals (2..5), zero-initialized
    0x03, 0x40, // loop
    ...[0, 16, 32, 48, 64, 80, 96, 112].flatMap((off, i) => load(2 + (i & 3), off)),
    0x20, 0, 0x41, ...leb(128), 0x6a, 0x22, 0, 0x20, 1, 0x49, 0x0d, 0, // p += 128; br_if p < end
    0x0b,
    0x20, 2, 0x20, 3, 0xfd, 0xe4, 0x01, 0x20, 4, 0xfd, 0xe4, 0x01, 0x20, 5, 0xfd, 0xe4, 0x01, 0xfd, 0x1f, 0, // Σ lanes → lane 0
    0x0b,
  ];
  const pages = Math.ceil(n / 65536);
  const wasm = new Uint8Array([
    0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...sec(1, [1, 0x60, 2, 0x7f, 0x7f, 1, 0x7d]), // (i32, i32) → f32
    ...sec(3, [1, 0]),
    ...sec(5, [1, 0, ...leb(pages)]),
    ...sec(7, [2, ...str('read'), 0, 0, ...str('mem'), 2, 0]),
    ...sec(10, [1, ...leb(body.length), ...body]),
  ]);
  const { instance } = await WebAssembly.instantiate(wasm);
  const { read, mem } = instance.exports;
  new Uint8Array(mem.buffer, 0, n).fill(0x3c);
  if (!(read(0, n) > 0)) throw new Error('reader: the sum is not positive');
  return () => read(0, n);
}

const ORT_TYPES = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array, int8: Int8Array, float16: Uint16Array, bool: Uint8Array, float64: Float64Array };

async function loadOrt(kind) {
  try {
    const ort = kind === 'web' ? await import('onnxruntime-web') : require('onnxruntime-node');
    // errors only, for the process-wide logger too (the per-session logSeverityLevel below
    // does not reach it). onnxruntime-web 1.30's wasm build still writes one warning per
    // TensorScatter run of the llm bench's graphs to stderr ("in-place optimization not
    // activated": it copies the cache), whatever the level: noise, not a failure.
    ort.env.logLevel = 'error';
    if (kind === 'web') {
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.proxy = false;
    }
    return {
      ort,
      async session(model) {
        const opts = kind === 'web'
          ? { executionProviders: ['wasm'], graphOptimizationLevel: 'all', logSeverityLevel: 3 }
          : { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 3 };
        const s = await ort.InferenceSession.create(model, opts);
        return {
          raw: s,
          /**
           * feeds: { name: { dtype, shape, data } } → ORT tensors once; returns a runner.
           * onnxruntime-node writes into preallocated outputs (fetches), made after the first
           * call: as our outputs are, so neither side pays for fresh output pages (12 µs a page
           * fault on this VM: a 1 MiB prefill output cost the peer 0.6–5 ms a call).
           * onnxruntime-web returns a preallocated CPU output unwritten, so it keeps fresh ones.
           */
          prepare(feeds) {
            const f = {};
            for (const [k, v] of Object.entries(feeds)) {
              const A = ORT_TYPES[v.dtype];
              const data = v.data instanceof A ? v.data : A.from(v.data);
              f[k] = new ort.Tensor(v.dtype, data, v.shape);
            }
            if (kind !== 'node') return () => s.run(f);
            let fetches = null;
            return async () => {
              if (fetches) return s.run(f, fetches);
              const r = await s.run(f);
              fetches = Object.fromEntries(Object.entries(r).map(([k, t]) => [k, new ort.Tensor(t.type, new t.data.constructor(t.data.length), t.dims)]));
              return r;
            };
          },
          run(feeds) { return this.prepare(feeds)(); },
        };
      },
    };
  } catch (e) {
    console.error(`# peer onnxruntime-${kind} unavailable: ${e.message.split('\n')[0]} (run: npm run bench:install)`);
    return null;
  }
}

export async function makeHarness(ek, rows) {
  const [web, node] = await Promise.all([loadOrt('web'), loadOrt('node')]);
  return {
    ek,
    time,
    memcpy,
    reader,
    copyBuffers,
    copier,
    interleave,
    pairedRatio,
    agrees,
    sampleIdx,
    stats,
    onnxModel,
    ort: { web, node },
    /** paired: this impl's time over edgekernels' by round (pairedRatio), when interleaved with it. */
    emit({ suite, case: name, impl, stats, bytes, flops, note, paired }) {
      const row = {
        suite, case: name, impl,
        // 4 significant digits, not 4 decimals: a 1.2 µs decode append was 0.0012 and its
        // memcpy row 0.0001, so the summary's ratios (computed from these) were 1–2 digits
        median_ms: +stats.median.toPrecision(4), p10_ms: +stats.p10.toPrecision(4), p90_ms: +stats.p90.toPrecision(4), runs: stats.runs,
      };
      if (bytes !== undefined) { row.bytes = bytes; row.gbps = +(bytes / stats.median / 1e6).toFixed(3); }
      if (flops !== undefined) { row.flops = flops; row.gflops = +(flops / stats.median / 1e6).toFixed(3); }
      if (paired !== undefined) row.paired_vs_ours = +paired.toPrecision(4);
      if (note) row.note = note;
      rows.push(row);
      console.log(JSON.stringify(row));
    },
    /**
     * Times `impls` ([{ impl, fn, per?, bytes?, flops?, note? }], ours first) in interleaved
     * rounds (`interleave`) and emits one row per impl with its paired ratio to ours. `per`:
     * operations per fn() call (a loop of 2,000 decode appends: 2000); its times are divided
     * by it, so rows and ratios are per operation. `opts`: interleave's (rounds, warmMs,
     * perRound), defaults 15 rounds after 500 ms of warm-up (200 ms and 6 rounds with
     * BENCH_FAST=1).
     */
    async compare(suite, name, impls, opts = {}) {
      const fast = process.env.BENCH_FAST === '1';
      await interleave(impls, { warmMs: fast ? 200 : 500, rounds: fast ? 6 : 15, ...opts });
      for (const m of impls) {
        const k = m.per ?? 1;
        m.samples = m.samples.map((t) => t / k);
        m.roundMs = m.roundMs.map((t) => t / k);
      }
      for (const m of impls) {
        this.emit({ suite, case: name, impl: m.impl, stats: stats(m.samples), bytes: m.bytes, flops: m.flops, note: m.note, paired: pairedRatio(m, impls[0]) });
      }
      return impls;
    },
  };
}
