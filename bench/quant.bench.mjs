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
}
