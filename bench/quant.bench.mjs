// Low-precision conversions on 16M values: float32 → float8e4m3fn, float8e4m3fn → float32,
// float32 → int8 and int8 → float32, with QuantizeLinear / DequantizeLinear (and Cast)
// against onnxruntime-web (wasm, 1 thread) and onnxruntime-node (CPU, 1 thread) running the
// same operator, and a memcpy of the same traffic. `bytes` = bytes read + bytes written.
//
// onnxruntime's JS API cannot hand float8 tensors in or out, so its float8 models keep them
// inside the graph: QuantizeLinear → Shape for float32 → e4m3fn (the whole tensor is
// quantized; only its shape leaves), and an e4m3fn initializer (a graph constant;
// the scale is a graph input, so nothing is folded) for DequantizeLinear.
const N = 16 << 20;

// ---- a minimal ONNX protobuf writer (multi-node graphs with initializers) ---------------
const TYPES = { float32: 1, uint8: 2, int8: 3, int64: 7, float8e4m3fn: 17 };
function varint(n) {
  const out = [];
  let v = n;
  while (v >= 0x80) { out.push((v % 0x80) | 0x80); v = Math.floor(v / 0x80); }
  out.push(v);
  return Uint8Array.from(out);
}
function concat(parts) {
  const len = parts.reduce((a, p) => a + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}
const key = (field, wire) => varint(field * 8 + wire);
const bytesF = (field, b) => concat([key(field, 2), varint(b.length), b]);
const strF = (field, s) => bytesF(field, new TextEncoder().encode(s));
const intF = (field, n) => concat([key(field, 0), varint(n)]);
const dim = (d) => bytesF(1, typeof d === 'string' ? strF(2, d) : intF(1, d));
const valueInfoCode = (name, code, shape) => concat([
  strF(1, name),
  bytesF(2, bytesF(1, concat([intF(1, code), bytesF(2, concat(shape.map(dim)))]))),
]);
const valueInfo = (name, dtype, shape) => concat([
  strF(1, name),
  bytesF(2, bytesF(1, concat([intF(1, TYPES[dtype]), bytesF(2, concat(shape.map(dim)))]))),
]);
const attrInt = (name, v) => concat([strF(1, name), intF(3, v), intF(20, 2)]);
const node = (op, inputs, outputs, attrs = []) => concat([
  ...inputs.map((i) => strF(1, i)), ...outputs.map((o) => strF(2, o)), strF(3, `${op}_${outputs[0]}`), strF(4, op),
  ...attrs.map((a) => bytesF(5, a)),
]);
const initializer = (name, dtype, shape, raw) => concat([...shape.map((d) => intF(1, d)), intF(2, TYPES[dtype]), strF(8, name), bytesF(9, raw)]);
const initializerCode = (name, code, shape, raw) => concat([...shape.map((d) => intF(1, d)), intF(2, code), strF(8, name), bytesF(9, raw)]);
function model({ opset, nodes, inputs, outputs, inits = [] }) {
  const graph = concat([
    ...nodes.map((n) => bytesF(1, n)), strF(2, 'quant-bench'), ...inits.map((t) => bytesF(5, t)),
    ...inputs.map((i) => bytesF(11, i)), ...outputs.map((o) => bytesF(12, o)),
  ]);
  return concat([intF(1, 10), strF(2, 'edgekernels-bench'), bytesF(7, graph), bytesF(8, intF(2, opset))]);
}

/** Creates the first session whose opset (25, then lower) the runtime accepts. */
async function sessionFor(peer, build, feeds) {
  let lastErr;
  for (const opset of [25, 24, 23, 21]) {
    try {
      const s = await peer.session(build(opset));
      const run = s.prepare(feeds);
      await run();
      return { run, opset };
    } catch (e) {
      lastErr = e;
    }
  }
  console.error(`# peer failed at every opset: ${String(lastErr?.message ?? lastErr).split('\n')[0]}`);
  return null;
}

export default async function (h) {
  const { ek } = h;
  const x = ek.tensor('float32', [N]);
  {
    const d = x.data;
    for (let i = 0; i < N; i++) d[i] = Math.sin(i * 0.37) * 500 * ((i % 7) / 7);
  }
  const one = ek.tensor('float32', [], [1]);
  const s8 = ek.tensor('float32', [], [0.05]);
  const zp8 = ek.tensor('int8', [], [3]);
  const y8 = ek.tensor('float8e4m3fn', [N]);
  const yi = ek.tensor('int8', [N]);
  const f = ek.tensor('float32', [N]);
  const ours = { minMs: 500, maxRuns: 40 };
  const peerOpts = { minMs: 300, maxRuns: 10, minRuns: 3 };
  const bytes = N * 5;
  const xHost = new Float32Array(x.data);

  const peers = async (suite, name, build, feeds) => {
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      const s = await sessionFor(peer, build, feeds);
      if (!s) continue;
      h.emit({ suite, case: name, impl: `ort-${impl}`, stats: await h.time(s.run, peerOpts), bytes, note: `opset ${s.opset}` });
    }
  };
  const memcpy = async (suite, name) => h.emit({ suite, case: name, impl: 'memcpy', stats: await h.memcpy(bytes / 2, ours), bytes });

  // float32 → float8e4m3fn
  {
    const suite = 'QuantizeLinear', name = 'float32 → float8e4m3fn, 16M values, scale 1';
    h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('QuantizeLinear', [x, one], { output_dtype: 'float8e4m3fn' }, { outputs: [y8] }), ours), bytes });
    h.emit({ suite, case: name, impl: 'edgekernels Cast', stats: await h.time(() => ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y8] }), ours), bytes });
    await memcpy(suite, name);
    await peers(suite, name, (opset) => model({
      opset,
      // The shape of the quantized tensor leaves the graph (x's length is symbolic, so it
      // cannot be folded away): the whole tensor is quantized, nothing float8 is fetched.
      nodes: [
        node('QuantizeLinear', ['x', 's'], ['q'], [attrInt('output_dtype', 17), attrInt('saturate', 1)]),
        node('Shape', ['q'], ['n']),
      ],
      inputs: [valueInfo('x', 'float32', ['N']), valueInfo('s', 'float32', [])],
      outputs: [valueInfo('n', 'int64', [1])],
    }), {
      x: { dtype: 'float32', shape: [N], data: xHost },
      s: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
    });
  }

  // float8e4m3fn → float32
  {
    ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y8] });
    const codes = new Uint8Array(y8.data);
    const suite = 'DequantizeLinear', name = 'float8e4m3fn → float32, 16M values, scale 1';
    h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('DequantizeLinear', [y8, one], {}, { outputs: [f] }), ours), bytes });
    h.emit({ suite, case: name, impl: 'edgekernels Cast', stats: await h.time(() => ek.run('Cast', [y8], { to: 'float32' }, { outputs: [f] }), ours), bytes });
    await memcpy(suite, name);
    await peers(suite, name, (opset) => model({
      opset,
      nodes: [node('DequantizeLinear', ['xq', 's'], ['y'])],
      inits: [initializer('xq', 'float8e4m3fn', [N], codes)],
      inputs: [valueInfo('s', 'float32', [])],
      outputs: [valueInfo('y', 'float32', [N])],
    }), { s: { dtype: 'float32', shape: [], data: Float32Array.of(1) } });
  }

  // float32 → int8 and back
  {
    const suite = 'QuantizeLinear', name = 'float32 → int8, 16M values, scale 0.05, zero point 3';
    h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('QuantizeLinear', [x, s8, zp8], {}, { outputs: [yi] }), ours), bytes });
    await memcpy(suite, name);
    await peers(suite, name, (opset) => h.onnxModel({
      op: 'QuantizeLinear', opset,
      inputs: [{ name: 'x', dtype: 'float32', shape: [N] }, { name: 's', dtype: 'float32', shape: [] }, { name: 'z', dtype: 'int8', shape: [] }],
      outputs: [{ name: 'y', dtype: 'int8', shape: [N] }],
    }), {
      x: { dtype: 'float32', shape: [N], data: xHost },
      s: { dtype: 'float32', shape: [], data: Float32Array.of(0.05) },
      z: { dtype: 'int8', shape: [], data: Int8Array.of(3) },
    });
  }
  {
    const codes = new Int8Array(yi.data);
    const suite = 'DequantizeLinear', name = 'int8 → float32, 16M values, scale 0.05, zero point 3';
    h.emit({ suite, case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('DequantizeLinear', [yi, s8, zp8], {}, { outputs: [f] }), ours), bytes });
    await memcpy(suite, name);
    await peers(suite, name, (opset) => h.onnxModel({
      op: 'DequantizeLinear', opset,
      inputs: [{ name: 'x', dtype: 'int8', shape: [N] }, { name: 's', dtype: 'float32', shape: [] }, { name: 'z', dtype: 'int8', shape: [] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [N] }],
    }), {
      x: { dtype: 'int8', shape: [N], data: codes },
      s: { dtype: 'float32', shape: [], data: Float32Array.of(0.05) },
      z: { dtype: 'int8', shape: [], data: Int8Array.of(3) },
    });
  }
  for (const t of [x, one, s8, zp8, y8, yi, f]) t.dispose();

  await otherFamilies(h);
}

// ---- every other low-precision family, 4M values ------------------------------------------
// QuantizeLinear / DequantizeLinear (per-tensor scale, default zero point) and, for the float
// families, Cast both ways, one case per direction with memcpy of the same traffic and the
// peers where onnxruntime runs the operator (same Shape / initializer arrangement as above;
// a peer that rejects the type at every opset is reported and left out). Each family has its
// own kernel path (castF32ToE5m2…, packBits / unpackBits for 4- and 2-bit codes, the
// float4e2m1 and 16-bit encoders), none of which the 16M cases above run. Also the blocked
// int4 dequantization of a weight matrix (block 32 along the input dimension).
const FAMILIES = [
  ['float8e4m3fnuz', 18, 8, 1], ['float8e5m2', 19, 8, 1], ['float8e5m2fnuz', 20, 8, 1], ['float4e2m1', 23, 4, 1],
  ['int4', 22, 4, 0.5], ['uint4', 21, 4, 0.5], ['int2', 26, 2, 4], ['uint2', 25, 2, 4],
  ['uint8', 2, 8, 0.05], ['int16', 5, 16, 0.01], ['uint16', 4, 16, 0.01],
];
const CAST_ONLY = [['float16', 10, 16], ['bfloat16', 16, 16]];

export async function otherFamilies(h) {
  const { ek } = h;
  const n = 4 << 20;
  const x = ek.tensor('float32', [n]);
  {
    const d = x.data;
    for (let i = 0; i < n; i++) d[i] = Math.sin(i * 0.37) * 20 * ((i % 7) / 7);
  }
  const xHost = new Float32Array(x.data);
  const f = ek.tensor('float32', [n]);
  const ours = { minMs: 300, maxRuns: 40 };
  const peerOpts = { minMs: 300, maxRuns: 10, minRuns: 3 };
  const label = (a, b, extra = '') => `${a} → ${b}, 4M values${extra}`;
  const row = async (suite, name, bytes, impls, peerBuild, feeds) => {
    for (const [impl, fn] of impls) h.emit({ suite, case: name, impl, stats: await h.time(fn, ours), bytes });
    h.emit({ suite, case: name, impl: 'memcpy', stats: await h.memcpy(bytes / 2, ours), bytes });
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer || !peerBuild) continue;
      const s = await sessionFor(peer, peerBuild, feeds);
      if (!s) { console.error(`# ort-${impl} ${suite} ${name}: not run`); continue; }
      h.emit({ suite, case: name, impl: `ort-${impl}`, stats: await h.time(s.run, peerOpts), bytes, note: `opset ${s.opset}` });
    }
  };
  // float32 → T by QuantizeLinear, then Shape (nothing of type T leaves the graph; onnxruntime
  // has no Shape kernel for 4- and 2-bit types), or by Cast to float16, fetched. onnxruntime's
  // optimizer removes a Cast whose only consumer is Shape (4M values: 0.07 ms against 39 ms
  // with optimizations disabled), so Cast peers run only where T can leave the graph.
  // (onnxruntime-node aborts the process fetching an int4 output: out of memory.)
  const FETCH = { float16: 'float16' };
  const toT = (op, dt, code, float8) => {
    if (op === 'Cast' && !FETCH[dt]) return null;
    return (opset) => model({
      opset,
      nodes: [
        op === 'Cast'
          ? node('Cast', ['x'], [FETCH[dt] ? 'n' : 'q'], [attrInt('to', code)])
          : node('QuantizeLinear', ['x', 's'], [FETCH[dt] ? 'n' : 'q'], [attrInt('output_dtype', code), ...(float8 ? [attrInt('saturate', 1)] : [])]),
        ...(FETCH[dt] ? [] : [node('Shape', ['q'], ['n'])]),
      ],
      inputs: [valueInfo('x', 'float32', ['N']), ...(op === 'Cast' ? [] : [valueInfo('s', 'float32', [])])],
      outputs: [FETCH[dt] ? valueInfoCode('n', code, ['N']) : valueInfo('n', 'int64', [1])],
    });
  };
  // DequantizeLinear of T codes held in an initializer (the scale is a graph input, so nothing
  // is folded). A Cast of an initializer is constant-folded at session creation (half the
  // time of the unoptimized graph), so Cast T → float32 peers take T as a graph input, where
  // the JS API has the type (float16).
  const fromT = (op, dt, code, raw, shape = [n], attrs = []) => {
    if (op === 'Cast' && !FETCH[dt]) return null;
    return (opset) => model({
      opset,
      nodes: [op === 'Cast' ? node('Cast', ['xq'], ['y'], [attrInt('to', 1)]) : node('DequantizeLinear', ['xq', 's'], ['y'], attrs)],
      inits: op === 'Cast' ? [] : [initializerCode('xq', code, shape, raw)],
      inputs: op === 'Cast' ? [valueInfoCode('xq', code, shape)] : [valueInfo('s', 'float32', op === 'blocked' ? [shape[0], shape[1] / 32] : [])],
      outputs: [valueInfo('y', 'float32', shape)],
    });
  };
  const bytesOf = (t) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength).slice();

  for (const [dt, code, bits, scale] of FAMILIES) {
    const float8 = dt.startsWith('float8');
    const y = ek.tensor(dt, [n]);
    const s = ek.tensor('float32', [], [scale]);
    const bytes = n * 4 + (n * bits) / 8;
    const sFeed = { s: { dtype: 'float32', shape: [], data: Float32Array.of(scale) } };
    await row('QuantizeLinear', label('float32', dt, `, scale ${scale}`), bytes,
      [['edgekernels', () => ek.run('QuantizeLinear', [x, s], { output_dtype: dt }, { outputs: [y] })]],
      toT('QuantizeLinear', dt, code, float8), { x: { dtype: 'float32', shape: [n], data: xHost }, ...sFeed });
    await row('DequantizeLinear', label(dt, 'float32', `, scale ${scale}`), bytes,
      [['edgekernels', () => ek.run('DequantizeLinear', [y, s], {}, { outputs: [f] })]],
      fromT('DequantizeLinear', dt, code, bytesOf(y)), sFeed);
    if (dt.startsWith('float')) {
      await row('Cast', label('float32', dt), bytes, [['edgekernels', () => ek.run('Cast', [x], { to: dt }, { outputs: [y] })]],
        toT('Cast', dt, code, float8), { x: { dtype: 'float32', shape: [n], data: xHost } });
      await row('Cast', label(dt, 'float32'), bytes, [['edgekernels', () => ek.run('Cast', [y], { to: 'float32' }, { outputs: [f] })]],
        fromT('Cast', dt, code, bytesOf(y)), {});
    }
    y.dispose(); s.dispose();
  }
  for (const [dt, code, bits] of CAST_ONLY) {
    const y = ek.tensor(dt, [n]);
    const bytes = n * 4 + (n * bits) / 8;
    await row('Cast', label('float32', dt), bytes, [['edgekernels', () => ek.run('Cast', [x], { to: dt }, { outputs: [y] })]],
      toT('Cast', dt, code, false), { x: { dtype: 'float32', shape: [n], data: xHost } });
    await row('Cast', label(dt, 'float32'), bytes, [['edgekernels', () => ek.run('Cast', [y], { to: 'float32' }, { outputs: [f] })]],
      fromT('Cast', dt, code), { xq: { dtype: dt, shape: [n], data: new Uint16Array(y.data) } });
    y.dispose();
  }
  // blocked int4 weights [1024, 4096], block 32 along axis 1 (as a 4-bit LLM weight matrix)
  {
    const rows = 1024, cols = 4096, shape = [rows, cols];
    const sh = [rows, cols / 32];
    const sc = new Float32Array(rows * cols / 32).map((_, i) => 0.01 + 0.001 * (i % 13));
    const w = ek.tensor('float32', shape, xHost);
    const S = ek.tensor('float32', sh, sc);
    const q = ek.tensor('int4', shape), out = ek.tensor('float32', shape);
    ek.run('QuantizeLinear', [w, S], { axis: 1, block_size: 32, output_dtype: 'int4' }, { outputs: [q] });
    const bytes = n * 4 + n / 2 + sc.byteLength;
    await row('DequantizeLinear', `int4 → float32, [${rows},${cols}] blocked (axis 1, block 32)`, bytes,
      [['edgekernels', () => ek.run('DequantizeLinear', [q, S], { axis: 1, block_size: 32 }, { outputs: [out] })]],
      fromT('blocked', 'int4', 22, bytesOf(q), shape, [attrInt('axis', 1), attrInt('block_size', 32)]),
      { s: { dtype: 'float32', shape: sh, data: sc } });
    for (const t of [w, S, q, out]) t.dispose();
  }
  x.dispose(); f.dispose();
}
