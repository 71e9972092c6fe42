// Scans: CumSum over 16M float32 (1-D and (4096,4096) along each axis) against
// onnxruntime (web: wasm, 1 thread; node: 1 intra-op thread) and memcpy of the same
// traffic; the fused `add` scan against the same scan with a JS combine function; the
// linear recurrence h_t = a_t*h_{t-1} + b_t over (4096 steps x 1024 lanes).
// `bytes` is the traffic a kernel must do: every input byte read once, every output byte
// written once. h.memcpy(k) copies k bytes = 2k bytes of traffic.
const per = (s, k) => ({ median: s.median / k, p10: s.p10 / k, p90: s.p90 / k, runs: s.runs });

function fill(a, seed) {
  let s = seed;
  for (let i = 0; i < a.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    a[i] = (s >>> 8) / 2 ** 24 - 0.5;
  }
  return a;
}

export default async function (h) {
  const { ek } = h;
  const N = 1 << 24;

  // ---- CumSum, 16M float32 ------------------------------------------------------------
  const data = fill(new Float32Array(N), 1);
  for (const [shape, axis] of [[[N], 0], [[4096, 4096], 0], [[4096, 4096], 1]]) {
    const suite = 'CumSum';
    const name = `16M f32 ${shape.length === 1 ? '1-D' : `(4096,4096) axis ${axis}`}`;
    const bytes = 2 * 4 * N;
    const x = ek.tensor('float32', shape, data);
    const ax = ek.tensor('int32', [], [axis]);
    const out = ek.tensor('float32', shape);
    h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('CumSum', [x, ax], {}, { outputs: [out] }), { minMs: 400, maxRuns: 40 }), bytes });
    h.emit({ suite, case: name, impl: 'edgekernels (new output each call)', stats: await h.time(() => ek.run('CumSum', [x, ax])[0].dispose(), { minMs: 400, maxRuns: 40 }), bytes });
    h.emit({ suite, case: name, impl: 'memcpy', stats: await h.memcpy(4 * N, { minMs: 400, maxRuns: 40 }), bytes });
    const model = h.onnxModel({
      op: 'CumSum', opset: 14,
      inputs: [{ name: 'x', dtype: 'float32', shape }, { name: 'axis', dtype: 'int32', shape: [] }],
      outputs: [{ name: 'y', dtype: 'float32', shape }],
    });
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      const run = (await peer.session(model)).prepare({ x: { dtype: 'float32', shape, data }, axis: { dtype: 'int32', shape: [], data: Int32Array.of(axis) } });
      h.emit({ suite, case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 400, maxRuns: 10 }), bytes });
    }
    x.dispose(); ax.dispose(); out.dispose();
  }

  // ---- CumSum's other kernels: float64 / int32 (scanF64 / scanI32), int64 (cumsumI64),
  // float16 / bfloat16 (scanHalf), 4M values 1-D and (2048,2048) axis 0 (halves: and (1M,4)) -
  // The values come from the float32 data through ek's Cast; the peers get the same
  // elements (a type onnxruntime has no CumSum kernel for is reported and left out).
  const HOST = { float64: Float64Array, int32: Int32Array, int64: BigInt64Array, float16: Uint16Array, bfloat16: Uint16Array };
  const ORT_DT = { float64: 'float64', int32: 'int32', int64: 'int64', float16: 'float16' };
  for (const dt of ['float64', 'int32', 'int64', 'float16', 'bfloat16']) {
    const n = 1 << 22, bytes = 2 * n * (dt === 'float64' || dt === 'int64' ? 8 : dt === 'int32' ? 4 : 2);
    const f32 = ek.tensor('float32', [n], dt.startsWith('int') ? data.subarray(0, n).map((v) => Math.round(v * 8)) : data.subarray(0, n));
    const [src] = ek.run('Cast', [f32], { to: dt });
    const host = new HOST[dt](src.data);
    f32.dispose();
    // float16 / bfloat16 also as (1M,4) along axis 0: rows of 4 lanes (scanHalf's path for 2-7 lanes)
    const shapes = [[[n], 0], [[2048, 2048], 0], ...(dt === 'float16' || dt === 'bfloat16' ? [[[n / 4, 4], 0]] : [])];
    for (const [shape, axis] of shapes) {
      const suite = 'CumSum', name = `4M ${dt} ${shape.length === 1 ? '1-D' : `(${shape[0] === n / 4 ? '1M' : shape[0]},${shape[1]}) axis 0`}`;
      const x = ek.tensor(dt, shape), ax = ek.tensor('int32', [], [axis]), out = ek.tensor(dt, shape);
      new Uint8Array(x.data.buffer, x.byteOffset, x.byteLength).set(new Uint8Array(src.data.buffer, src.byteOffset, src.byteLength));
      h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('CumSum', [x, ax], {}, { outputs: [out] }), { minMs: 300, maxRuns: 40 }), bytes });
      h.emit({ suite, case: name, impl: 'memcpy', stats: await h.memcpy(bytes / 2, { minMs: 300, maxRuns: 40 }), bytes });
      const model = h.onnxModel({
        op: 'CumSum', opset: 14,
        inputs: [{ name: 'x', dtype: dt, shape }, { name: 'axis', dtype: 'int32', shape: [] }],
        outputs: [{ name: 'y', dtype: dt, shape }],
      });
      for (const impl of ['web', 'node']) {
        const peer = h.ort[impl];
        if (!peer) continue;
        try {
          if (!ORT_DT[dt]) throw new Error(`the JS API has no ${dt} tensors`);
          const run = (await peer.session(model)).prepare({ x: { dtype: ORT_DT[dt], shape, data: host }, axis: { dtype: 'int32', shape: [], data: Int32Array.of(axis) } });
          await run();
          h.emit({ suite, case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 300, maxRuns: 10, minRuns: 3 }), bytes });
        } catch (e) {
          console.error(`# ort-${impl} CumSum ${dt}: ${String(e.message ?? e).split('\n')[0]}`);
        }
      }
      x.dispose(); ax.dispose(); out.dispose();
    }
    src.dispose();
  }

  // ---- fused add scan vs a JS combine function -----------------------------------------
  // Same scan, two sizes: the JS combine runs on 1/32 of the steps; both are reported in
  // ms per 1M scanned elements.
  for (const [L, dim, label] of [[1024, 0, 'lanes: (T,1024) dim 0'], [1, 0, 'innermost: (T) dim 0']]) {
    const suite = 'scan add f32 (ms per 1M elements)';
    const T = L === 1 ? 1 << 22 : 4096;
    const Tjs = T / (L === 1 ? 4096 : 32);
    const shape = L === 1 ? [T] : [T, L];
    const shapeJs = L === 1 ? [Tjs] : [Tjs, L];
    const cshape = L === 1 ? [] : [L];
    const x = ek.tensor('float32', shape, fill(new Float32Array(T * L), 2));
    const xj = ek.tensor('float32', shapeJs, fill(new Float32Array(Tjs * L), 2));
    const c = ek.tensor('float32', cshape);
    const fused = () => { const [a, b] = ek.scan(ek.combine.add, c, x, { dim }); a.dispose(); b.dispose(); };
    const jsAdd = (carry, xt) => {
      const next = ek.tensor('float32', carry.shape);
      const nd = next.data, cd = carry.data, xd = xt.data;
      for (let i = 0; i < nd.length; i++) nd[i] = cd[i] + xd[i];
      const y = ek.tensor('float32', carry.shape);
      y.data.set(next.data);
      return [next, y];
    };
    const js = () => { const [a, b] = ek.scan(jsAdd, c, xj, { dim }); a.dispose(); b.dispose(); };
    h.emit({ suite, case: label, impl: 'edgekernels', stats: per(await h.time(fused, { minMs: 400, maxRuns: 40 }), (T * L) / 1e6), bytes: 8e6 });
    h.emit({ suite, case: label, impl: 'JS combine function', stats: per(await h.time(js, { minMs: 400, maxRuns: 20 }), (Tjs * L) / 1e6), bytes: 8e6 });
    x.dispose(); xj.dispose(); c.dispose();
  }

  // ---- the other fused combiners (mul, max, min, logaddexp), same sizes as add, against
  // memcpy of the same traffic (onnxruntime has no cumulative product / max / logaddexp) ----
  for (const name of ['add', 'mul', 'max', 'min', 'logaddexp']) {
    for (const [L, label] of [[1024, 'lanes: (4096,1024) dim 0'], [1, 'innermost: (4M) dim 0']]) {
      const suite = `scan ${name} f32`;
      const T = L === 1 ? 1 << 22 : 4096;
      // mul: factors exp(±0.01) keep running products of 4096 steps far from overflow,
      // underflow and subnormals
      const xs = fill(new Float32Array(T * L), 5);
      if (name === 'mul') for (let i = 0; i < xs.length; i++) xs[i] = Math.exp(xs[i] * 0.02);
      const x = ek.tensor('float32', L === 1 ? [T] : [T, L], xs);
      const c = ek.tensor('float32', L === 1 ? [] : [L], name === 'mul' ? new Float32Array(L).fill(1) : undefined);
      const comb = ek.combine[name];
      const fused = () => { const [a, b] = ek.scan(comb, c, x, { dim: 0 }); a.dispose(); b.dispose(); };
      const bytes = 2 * 4 * T * L;
      h.emit({ suite, case: label, impl: 'edgekernels', stats: await h.time(fused, { minMs: 300, maxRuns: 40 }), bytes, note: 'ek.scan allocates (zero-fills) and disposes its outputs each call' });
      h.emit({ suite, case: label, impl: 'memcpy', stats: await h.memcpy(bytes / 2, { minMs: 300, maxRuns: 40 }), bytes });
      x.dispose(); c.dispose();
    }
  }

  // ---- dtypes the package fused after int32 / float32 / float64: each op fused against the
  // same combiner stepped (an untagged wrapper, which ek.scan cannot fuse) on 1/64 of the
  // steps, and memcpy of the same traffic; ms per 1M scanned elements. int64 (torch.long,
  // PyTorch's default integer type); float16 / bfloat16 (every step rounded to the storage
  // type, scanHalf). mk(t, L, seed): a [t, L] tensor (L = 1: [t]) of the dtype.
  const fusedVsStepped = async (dt, names, elemBytes, mk) => {
    for (const name of names) {
      for (const [L, label] of [[1024, 'lanes: (2048,1024) dim 0'], [1, 'innermost: (2M) dim 0']]) {
        const suite = `scan ${name} ${dt} (ms per 1M elements)`;
        const T = L === 1 ? 1 << 21 : 2048, Tjs = T / 64;
        const x = mk(T, L, 6), xj = mk(Tjs, L, 7);
        const c = ek.tensor(dt, L === 1 ? [] : [L]);
        const comb = ek.combine[name], stepped = (carry, xt) => comb(carry, xt);
        const fused = () => { const [a, b] = ek.scan(comb, c, x, { dim: 0 }); a.dispose(); b.dispose(); };
        const host = () => { const [a, b] = ek.scan(stepped, c, xj, { dim: 0 }); a.dispose(); b.dispose(); };
        const M = (T * L) / 1e6, bytes = 2 * elemBytes * 1e6;
        h.emit({ suite, case: label, impl: 'edgekernels', stats: per(await h.time(fused, { minMs: 300, maxRuns: 40 }), M), bytes });
        h.emit({ suite, case: label, impl: 'the same combiner stepped', stats: per(await h.time(host, { minMs: 300, maxRuns: 10 }), (Tjs * L) / 1e6), bytes });
        h.emit({ suite, case: label, impl: 'memcpy', stats: per(await h.memcpy(elemBytes * T * L, { minMs: 300, maxRuns: 40 }), M), bytes });
        x.dispose(); xj.dispose(); c.dispose();
      }
    }
  };
  await fusedVsStepped('int64', ['add', 'max'], 8, (t, L, seed) => {
    const f = fill(new Float32Array(t * L), seed), d = new BigInt64Array(t * L);
    for (let i = 0; i < d.length; i++) d[i] = BigInt(Math.round(f[i] * 2 ** 40));
    return ek.tensor('int64', L === 1 ? [t] : [t, L], d);
  });
  for (const dt of ['float16', 'bfloat16']) {
    await fusedVsStepped(dt, ['add', 'logaddexp'], 2, (t, L, seed) => {
      const f = ek.tensor('float32', L === 1 ? [t] : [t, L], fill(new Float32Array(t * L), seed + 2));
      const [v] = ek.run('Cast', [f], { to: dt });
      f.dispose();
      return v;
    });
  }

  // ---- linear recurrence (4096 steps x 1024 lanes) ----------------------------------------
  {
    const suite = 'linearScan';
    const T = 4096, L = 1024;
    const name = 'f32 (4096 steps x 1024 lanes)';
    const bytes = 3 * 4 * T * L; // read a, b; write hs
    const a = ek.tensor('float32', [T, L], fill(new Float32Array(T * L), 3).map((v) => 0.5 + v));
    const b = ek.tensor('float32', [T, L], fill(new Float32Array(T * L), 4));
    const h0 = ek.tensor('float32', [L]);
    // linearScan has no outputs option: each call allocates (zero-fills, 16 MiB) and disposes
    // hs, which `bytes` does not count; the JS loop writes a preallocated array
    h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => { const [l, hs] = ek.linearScan(a, b, h0); l.dispose(); hs.dispose(); }, { minMs: 400, maxRuns: 40 }), bytes, note: 'includes allocating (zero-filling) and disposing the 16 MiB output each call' });
    const ad = a.data.slice(), bd = b.data.slice(), hs = new Float32Array(T * L);
    const jsLoop = () => {
      for (let i = 0; i < L; i++) hs[i] = ad[i] * 0 + bd[i];
      for (let t = 1; t < T; t++) {
        const o = t * L, p = o - L;
        for (let i = 0; i < L; i++) hs[o + i] = ad[o + i] * hs[p + i] + bd[o + i];
      }
    };
    h.emit({ suite, case: name, impl: 'JS loop (Float32Array)', stats: await h.time(jsLoop, { minMs: 400, maxRuns: 40 }), bytes });
    h.emit({ suite, case: name, impl: 'memcpy', stats: await h.memcpy(bytes / 2, { minMs: 400, maxRuns: 40 }), bytes });
    a.dispose(); b.dispose(); h0.dispose();
  }
}
