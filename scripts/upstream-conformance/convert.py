"""Convert ONNX backend node test folders into the conformance JSON format (the one of
../shared/conformance/README.md: slot order with null for omitted inputs / outputs,
float16 / bfloat16 / float8 as bit patterns, 4- and 2-bit types packed, int64 as decimal
strings, non-finite floats as strings).

Usage: python3 convert.py [datadir] [outdir]
  datadir: folder of node test case folders (default /tmp/upstream/data/node, see gen.py)
  outdir:  where the JSON files go (default test/conformance/upstream)

Only cases whose graph is a single node of one of OPS (default domain) are converted; the
CastLike function expansions (test_castlike_*_expanded) are single Cast nodes and count as
Cast cases. Opset-25 Attention cases that use left_window_size / right_window_size (beyond
Attention-23/24) are kept when WINDOW is True, as the package runs them.
"""
import json, math, os, sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

OPS = {'Attention', 'Cast', 'QuantizeLinear', 'DequantizeLinear', 'CumSum', 'TensorScatter'}
WINDOW = True  # Attention-25's sliding windows (left_window_size / right_window_size): the package runs them

# TensorProto code -> package dtype name (same order as the package's DTYPE_NAMES, code - 1)
DTYPE = {
    TensorProto.FLOAT: 'float32', TensorProto.UINT8: 'uint8', TensorProto.INT8: 'int8',
    TensorProto.UINT16: 'uint16', TensorProto.INT16: 'int16', TensorProto.INT32: 'int32',
    TensorProto.INT64: 'int64', TensorProto.STRING: 'string', TensorProto.BOOL: 'bool',
    TensorProto.FLOAT16: 'float16', TensorProto.DOUBLE: 'float64', TensorProto.UINT32: 'uint32',
    TensorProto.UINT64: 'uint64', TensorProto.COMPLEX64: 'complex64',
    TensorProto.COMPLEX128: 'complex128', TensorProto.BFLOAT16: 'bfloat16',
    TensorProto.FLOAT8E4M3FN: 'float8e4m3fn', TensorProto.FLOAT8E4M3FNUZ: 'float8e4m3fnuz',
    TensorProto.FLOAT8E5M2: 'float8e5m2', TensorProto.FLOAT8E5M2FNUZ: 'float8e5m2fnuz',
    TensorProto.UINT4: 'uint4', TensorProto.INT4: 'int4', TensorProto.FLOAT4E2M1: 'float4e2m1',
    TensorProto.FLOAT8E8M0: 'float8e8m0', TensorProto.UINT2: 'uint2', TensorProto.INT2: 'int2',
}
BITS16 = {'float16', 'bfloat16'}
BITS8 = {'float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz', 'float8e8m0'}
NIBBLE = {'int4', 'uint4', 'float4e2m1'}
CRUMB = {'int2', 'uint2'}


def num(x):
    """A JSON-safe float: non-finite as strings; integral values kept as float (JSON 1.0)."""
    x = float(x)
    if math.isnan(x):
        return 'NaN'
    if math.isinf(x):
        return 'Infinity' if x > 0 else '-Infinity'
    return x


def pack(codes, per_byte):
    """Pack small unsigned codes, element 0 in the low bits of byte 0."""
    bits = 8 // per_byte
    mask = (1 << bits) - 1
    out = []
    for i in range(0, len(codes), per_byte):
        b = 0
        for k, c in enumerate(codes[i:i + per_byte]):
            b |= (int(c) & mask) << (k * bits)
        out.append(b)
    return out


def tensor_json(t: TensorProto, name: str):
    dt = DTYPE[t.data_type]
    shape = [int(d) for d in t.dims]
    arr = numpy_helper.to_array(t)
    flat = arr.reshape(-1)
    if dt == 'string':
        data = [v.decode('utf-8') if isinstance(v, bytes) else str(v) for v in flat]
    elif dt in BITS16:
        data = [int(v) for v in flat.view(np.uint16)]
    elif dt in BITS8:
        data = [int(v) for v in flat.view(np.uint8)]
    elif dt in NIBBLE:
        data = pack(flat.view(np.uint8), 2)
    elif dt in CRUMB:
        data = pack(flat.view(np.uint8), 4)
    elif dt in ('int64', 'uint64'):
        data = [str(int(v)) for v in flat]
    elif dt == 'bool':
        data = [1 if v else 0 for v in flat]
    elif dt in ('float32', 'float64'):
        data = [num(v) for v in flat]
    elif dt in ('complex64', 'complex128'):
        data = []
        for v in flat:
            data += [num(v.real), num(v.imag)]
    else:
        data = [int(v) for v in flat]
    return {'name': name, 'dtype': dt, 'shape': shape, 'data': data}


def attr_value(a: onnx.AttributeProto):
    v = onnx.helper.get_attribute_value(a)
    if a.type == onnx.AttributeProto.STRING:
        return v.decode('utf-8')
    if a.type == onnx.AttributeProto.STRINGS:
        return [s.decode('utf-8') for s in v]
    if a.type == onnx.AttributeProto.FLOAT:
        return num(v)
    if a.type == onnx.AttributeProto.FLOATS:
        return [num(x) for x in v]
    if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS):
        return v
    raise ValueError(f'unsupported attribute type {a.type} for {a.name}')


def load_tensor(path):
    t = TensorProto()
    with open(path, 'rb') as f:
        t.ParseFromString(f.read())
    return t


def convert_case(case_dir):
    model = onnx.load(os.path.join(case_dir, 'model.onnx'))
    g = model.graph
    if len(g.node) != 1:
        return None
    node = g.node[0]
    if node.op_type not in OPS or node.domain not in ('', 'ai.onnx'):
        return None
    opset = [o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')]
    ds = os.path.join(case_dir, 'test_data_set_0')
    # graph input/output j <-> input_j.pb / output_j.pb; map by name to the node's slots
    feeds = {vi.name: load_tensor(os.path.join(ds, f'input_{j}.pb')) for j, vi in enumerate(g.input)}
    inits = {t.name: t for t in g.initializer}
    wants = {vi.name: load_tensor(os.path.join(ds, f'output_{j}.pb')) for j, vi in enumerate(g.output)}
    assert len(feeds) == len(g.input) and len(wants) == len(g.output)
    inputs = []
    for n in node.input:
        if n == '':
            inputs.append(None)
        elif n in feeds:
            inputs.append(tensor_json(feeds[n], n))
        elif n in inits:
            inputs.append(tensor_json(inits[n], n))
        else:
            raise ValueError(f'{case_dir}: node input {n!r} has no data')
    outputs = [tensor_json(wants[n], n) if n in wants else None for n in node.output]
    return {
        'name': os.path.basename(case_dir.rstrip('/')),
        'op': node.op_type,
        'domain': node.domain,
        'opset': opset[0],
        'attributes': {a.name: attr_value(a) for a in node.attribute},
        'inputs': inputs,
        'outputs': outputs,
    }


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument('datadir', nargs='?', default='/tmp/upstream/data/node')
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('outdir', nargs='?', default=os.path.join(here, '..', '..', 'test', 'conformance', 'upstream'))
    a = ap.parse_args()
    counts = {}
    for name in sorted(os.listdir(a.datadir)):
        c = convert_case(os.path.join(a.datadir, name))
        if c is None:
            continue
        if not WINDOW and c['op'] == 'Attention' and ({'left_window_size', 'right_window_size'} & set(c['attributes'])):
            continue
        out = a.outdir
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, name + '.json'), 'w') as f:
            json.dump(c, f, separators=(',', ':'), allow_nan=False)
        counts[out] = counts.get(out, 0) + 1
    for out, n in counts.items():
        print('converted', n, 'cases to', out)


if __name__ == '__main__':
    main()
