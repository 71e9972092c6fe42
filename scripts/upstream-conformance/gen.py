"""Generate ONNX backend node test data (model.onnx + test_data_set_0/*.pb) from the case
generators in the installed `onnx` package (onnx/backend/test/case/node), as upstream's
`backend-test-tools generate-data` does for node cases (the cmd_tools of the 1.23.1 wheel
only write model cases). Then convert.py turns them into test/conformance/upstream/*.json.
Usage: python3 gen.py [outdir] [OpType ...]   (no op types: all node cases)"""
import os, shutil, sys
import onnx.backend.test.case.node as node_test
from onnx import TensorProto, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else '/tmp/upstream/data'
ops = set(sys.argv[2:])
cases = node_test.collect_testcases()
n = 0
for case in cases:
    assert case.kind == 'node'
    if ops and not any(nd.op_type in ops for nd in case.model.graph.node):
        continue
    d = os.path.join(out, case.kind, case.name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, 'model.onnx'), 'wb') as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, f'test_data_set_{i}')
        os.makedirs(ds)
        for kind, vals, vis in (('input', inputs, case.model.graph.input), ('output', outputs, case.model.graph.output)):
            for j, v in enumerate(vals):
                vi = vis[j]
                assert vi.type.HasField('tensor_type'), (case.name, vi)
                t = v if isinstance(v, TensorProto) else numpy_helper.from_array(v, vi.name)
                with open(os.path.join(ds, f'{kind}_{j}.pb'), 'wb') as f:
                    f.write(t.SerializeToString())
    n += 1
print('wrote', n, 'of', len(cases), 'node cases')
