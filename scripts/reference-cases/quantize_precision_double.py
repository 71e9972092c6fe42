"""QuantizeLinear-25 with precision = float64 (TensorProto.DOUBLE): cases whose expected
outputs come from onnx.reference (the upstream suite has none with this attribute value).

x float32 / float16 / int32 (int32 beyond 2^24, where a float32 division would round x
first), per-tensor and per-axis scales, every output type; finite inputs only (the
reference's rint(±inf).astype(int32) is undefined behaviour).

Usage: python3 scripts/reference-cases/quantize_precision_double.py [outdir]
  (default test/conformance/reference; needs the onnx wheel with ml_dtypes)
"""
import json, os, sys

import ml_dtypes
import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'upstream-conformance'))
from convert import tensor_json  # noqa: E402

OUT = {
    'int8': (TensorProto.INT8, np.int8), 'uint8': (TensorProto.UINT8, np.uint8),
    'int16': (TensorProto.INT16, np.int16), 'uint16': (TensorProto.UINT16, np.uint16),
    'int4': (TensorProto.INT4, ml_dtypes.int4), 'uint4': (TensorProto.UINT4, ml_dtypes.uint4),
    'int2': (TensorProto.INT2, ml_dtypes.int2), 'uint2': (TensorProto.UINT2, ml_dtypes.uint2),
    'float8e4m3fn': (TensorProto.FLOAT8E4M3FN, None), 'float8e4m3fnuz': (TensorProto.FLOAT8E4M3FNUZ, None),
    'float8e5m2': (TensorProto.FLOAT8E5M2, None), 'float8e5m2fnuz': (TensorProto.FLOAT8E5M2FNUZ, None),
    'float4e2m1': (TensorProto.FLOAT4E2M1, None),
}
X = {'float32': (TensorProto.FLOAT, np.float32), 'float16': (TensorProto.FLOAT16, np.float16), 'int32': (TensorProto.INT32, np.int32)}


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else 'test/conformance/reference'
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(7)
    n = 0
    for out, (code, npt) in OUT.items():
        for xt, (xcode, xnp) in X.items():
            for per_axis in (False, True):
                shape = (3, 7)
                if xt == 'int32':
                    x = rng.integers(-2**31, 2**31 - 1, size=shape, dtype=np.int64).astype(np.int32)
                    x[0, :3] = [16777217, 16777219, -33554435]
                    s = np.array([3.0, 1e5, 7e7], np.float32) if per_axis else np.array(3e6, np.float32)
                else:
                    x = (rng.standard_normal(shape) * rng.choice([1, 100, 1e4], size=shape)).astype(xnp)
                    if xt == 'float32':
                        x[0, 0], x[0, 1] = np.float32(2.5000002), np.float32(0.5)
                    s = np.array([0.3, 7.0, 1e-3], np.float32) if per_axis else np.array(0.7, np.float32)
                axis = 0 if per_axis else 1
                zp = None
                if npt is not None:
                    zp = np.full(s.shape, 1 if out.startswith('u') else -1, np.int64).astype(npt)
                names = ['x', 'y_scale'] + (['y_zero_point'] if zp is not None else [])
                attrs = dict(axis=axis, precision=TensorProto.DOUBLE)
                if zp is None:
                    attrs['output_dtype'] = code
                node = helper.make_node('QuantizeLinear', names, ['y'], **attrs)
                ins = [helper.make_tensor_value_info('x', xcode, None), helper.make_tensor_value_info('y_scale', TensorProto.FLOAT, None)]
                if zp is not None:
                    ins.append(helper.make_tensor_value_info('y_zero_point', code, None))
                g = helper.make_graph([node], 'g', ins, [helper.make_tensor_value_info('y', code, None)])
                model = helper.make_model(g, opset_imports=[helper.make_opsetid('', 25)])
                feeds = {'x': x, 'y_scale': s}
                if zp is not None:
                    feeds['y_zero_point'] = zp
                y = ReferenceEvaluator(model).run(None, feeds)[0]
                name = f'quantizelinear_precision_double_{xt}_to_{out}_{"axis" if per_axis else "tensor"}'
                case = {
                    'name': name, 'op': 'QuantizeLinear', 'domain': '', 'opset': 25,
                    'attributes': attrs,
                    'inputs': [tensor_json(numpy_helper.from_array(v, k), k) for k, v in feeds.items()],
                    'outputs': [tensor_json(numpy_helper.from_array(np.asarray(y), 'y'), 'y')],
                }
                with open(os.path.join(outdir, name + '.json'), 'w') as f:
                    json.dump(case, f, separators=(',', ':'))
                n += 1
    print(f'{n} cases in {outdir}')


if __name__ == '__main__':
    main()
