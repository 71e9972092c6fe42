// A minimal ONNX ModelProto encoder: single-node models (onnxModel) and multi-node graphs
// with initializers (OnnxGraph, below) for the peers
// (onnxruntime-web / onnxruntime-node) without a protobuf library. Field numbers from
// onnx/onnx.proto: ModelProto{ir_version=1, graph=7, opset_import=8}, GraphProto{node=1,
// name=2, input=11, output=12}, NodeProto{input=1, output=2, op_type=4, domain=7,
// attribute=5}, AttributeProto{name=1, f=2, i=3, s=4, floats=7, ints=8, type=20},
// ValueInfoProto{name=1, type=2}, TypeProto{tensor_type=1}, Tensor{elem_type=1, shape=2},
// TensorShapeProto{dim=1}, Dimension{dim_value=1}.
const ONNX_TYPES = {
  float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6, int64: 7, string: 8, bool: 9,
  float16: 10, float64: 11, uint32: 12, uint64: 13, bfloat16: 16, float8e4m3fn: 17,
  float8e4m3fnuz: 18, float8e5m2: 19, float8e5m2fnuz: 20, uint4: 21, int4: 22, float4e2m1: 23,
  float8e8m0: 24, uint2: 25, int2: 26,
};

function varint(n) {
  let v = BigInt.asUintN(64, BigInt(n));
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const bytesField = (field, bytes) => [...key(field, 2), ...varint(bytes.length), ...bytes];
const strField = (field, s) => bytesField(field, [...new TextEncoder().encode(s)]);
const intField = (field, n) => [...key(field, 0), ...varint(n)];

function valueInfo({ name, dtype, shape }) {
  const dims = shape.flatMap((d) => bytesField(1, typeof d === 'string' ? strField(2, d) : intField(1, d)));
  const tensorType = [...intField(1, ONNX_TYPES[dtype] ?? dtype), ...bytesField(2, dims)];
  return [...strField(1, name), ...bytesField(2, bytesField(1, tensorType))];
}

function attribute(name, v) {
  const out = strField(1, name);
  if (typeof v === 'string') return [...out, ...bytesField(4, [...new TextEncoder().encode(v)]), ...intField(20, 3)];
  if (Array.isArray(v)) {
    if (v.every(Number.isInteger)) return [...out, ...bytesField(8, v.flatMap(varint)), ...intField(20, 7)];
    const f = new Uint8Array(new Float32Array(v).buffer);
    return [...out, ...bytesField(7, [...f]), ...intField(20, 6)];
  }
  if (typeof v === 'object' && v && 'float' in v) {
    const f = new Uint8Array(new Float32Array([v.float]).buffer);
    return [...out, ...key(2, 5), ...f, ...intField(20, 1)];
  }
  if (Number.isInteger(v)) return [...out, ...intField(3, v), ...intField(20, 2)];
  const f = new Uint8Array(new Float32Array([v]).buffer);
  return [...out, ...key(2, 5), ...f, ...intField(20, 1)];
}

/**
 * Builds a one-node model. inputs: [{ name, dtype, shape } | null] (null = omitted optional
 * slot); outputs likewise; attributes: numbers (integers → INT, else FLOAT; { float: x } forces
 * FLOAT), strings, arrays.
 */
export function onnxModel({ op, domain = '', opset, inputs, outputs, attributes = {}, irVersion = 10 }) {
  const node = [
    ...inputs.flatMap((i) => strField(1, i ? i.name : '')),
    ...outputs.flatMap((o) => strField(2, o ? o.name : '')),
    ...strField(3, 'n0'),
    ...strField(4, op),
    ...(domain ? strField(7, domain) : []),
    ...Object.entries(attributes).flatMap(([k, v]) => bytesField(5, attribute(k, v))),
  ];
  const graph = [
    ...bytesField(1, node),
    ...strField(2, 'g'),
    ...inputs.filter(Boolean).flatMap((i) => bytesField(11, valueInfo(i))),
    ...outputs.filter(Boolean).flatMap((o) => bytesField(12, valueInfo(o))),
  ];
  const opsetImport = [...(domain ? strField(1, domain) : []), ...intField(2, opset)];
  return new Uint8Array([...intField(1, irVersion), ...strField(2, 'edgekernels-bench'), ...bytesField(7, graph), ...bytesField(8, opsetImport)]);
}

// ---- Multi-node graphs ------------------------------------------------------------
// Messages are encoded as lists of Uint8Array chunks and concatenated once at the end, so
// that tens of MB of weights (TensorProto.raw_data) are copied once, never spread into JS
// arrays. Extra field numbers: GraphProto{initializer=5}, TensorProto{dims=1,
// data_type=2, name=8, raw_data=9}, OperatorSetIdProto{domain=1, version=2}.
const u8 = (a) => (a instanceof Uint8Array ? a : new Uint8Array(a));
const chunksLength = (chunks) => chunks.reduce((n, c) => n + c.length, 0);
const msgField = (field, chunks) => [u8(key(field, 2)), u8(varint(chunksLength(chunks))), ...chunks];

/**
 * A graph builder: `input` / `output` declare graph inputs and outputs, `weight` adds a
 * constant tensor (a graph initializer, or with `weightsAs: 'inputs'` a graph input whose
 * value `feeds()` returns), `node(op, inputs, attrs, opts)` appends a node and returns its
 * output names (fresh names unless `opts.outputs` gives them; `opts.nOut` outputs, default 1;
 * '' for an omitted optional input). `model({ opset })` encodes the ModelProto.
 */
export class OnnxGraph {
  constructor({ weightsAs = 'initializers' } = {}) {
    this.weightsAs = weightsAs;
    this.inputs = [];
    this.outputs = [];
    this.weights = [];
    this.nodes = [];
    this.count = 0;
  }

  input(name, dtype, shape) {
    this.inputs.push({ name, dtype, shape });
    return name;
  }

  output(name, dtype, shape) {
    this.outputs.push({ name, dtype, shape });
    return name;
  }

  /** data: a typed array matching dtype (Float32Array, BigInt64Array, Int32Array, Uint8Array…). */
  weight(name, dtype, shape, data) {
    const n = shape.reduce((a, b) => a * b, 1);
    if (data.length !== n) throw new Error(`OnnxGraph.weight ${name}: expected ${n} values for [${shape}], got ${data.length}`);
    this.weights.push({ name, dtype, shape, data });
    return name;
  }

  node(op, inputs, attributes = {}, { outputs, nOut = 1, domain = '', name } = {}) {
    const outs = outputs ?? Array.from({ length: nOut }, (_, i) => `${op.toLowerCase()}_${this.count}${nOut > 1 ? `_${i}` : ''}`);
    this.nodes.push({ op, inputs, outputs: outs, attributes, domain, name: name ?? `${op}_${this.count}` });
    this.count++;
    return nOut === 1 && !outputs ? outs[0] : outs;
  }

  /** With weightsAs 'inputs': the feeds { name: { dtype, shape, data } } of the weights. */
  feeds() {
    return this.weightsAs === 'inputs' ? Object.fromEntries(this.weights.map((w) => [w.name, { dtype: w.dtype, shape: w.shape, data: w.data }])) : {};
  }

  /** opset: the default domain's version; opsets: extra { domain: version }. */
  model({ opset, opsets = {}, irVersion = 10 }) {
    const graph = [];
    for (const n of this.nodes) {
      const node = [
        ...n.inputs.map((i) => u8(strField(1, i ?? ''))),
        ...n.outputs.map((o) => u8(strField(2, o ?? ''))),
        u8(strField(3, n.name)),
        u8(strField(4, n.op)),
        ...(n.domain ? [u8(strField(7, n.domain))] : []),
        ...Object.entries(n.attributes).map(([k, v]) => u8(bytesField(5, attribute(k, v)))),
      ];
      graph.push(...msgField(1, node));
    }
    graph.push(u8(strField(2, 'g')));
    const asInputs = this.weightsAs === 'inputs';
    if (!asInputs) {
      for (const w of this.weights) {
        const raw = new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength);
        const tensor = [u8(w.shape.flatMap((d) => intField(1, d))), u8(intField(2, ONNX_TYPES[w.dtype])), u8(strField(8, w.name)), ...msgField(9, [raw])];
        graph.push(...msgField(5, tensor));
      }
    }
    for (const i of [...this.inputs, ...(asInputs ? this.weights : [])]) graph.push(u8(bytesField(11, valueInfo(i))));
    for (const o of this.outputs) graph.push(u8(bytesField(12, valueInfo(o))));
    const chunks = [
      u8(intField(1, irVersion)),
      u8(strField(2, 'edgekernels-bench')),
      ...msgField(7, graph),
      u8(bytesField(8, intField(2, opset))),
      ...Object.entries(opsets).map(([d, v]) => u8(bytesField(8, [...strField(1, d), ...intField(2, v)]))),
    ];
    const out = new Uint8Array(chunksLength(chunks));
    let at = 0;
    for (const c of chunks) { out.set(c, at); at += c.length; }
    return out;
  }
}
