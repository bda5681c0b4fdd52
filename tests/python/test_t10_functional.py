"""Functional mode at network scale (issue 57 item 4): a strided residual CNN exported by PyTorch, lowered with
mlsys-import --t10 and run by `t10 compile --functional` on integers along its data flow (im2col reads with
padding, a max pooling's window read, a strided shortcut, a residual Add fused with its ReLU, a flatten of a
convolution's pixels x channels matrix), and a transformer block (attention heads, softmax, LayerNorm, GELU). The outputs must equal
the same modules run by PyTorch in float64 on the values the engine drew (`--values`): an independent
reference. Operators without a form here are refused by name."""

import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from conftest import BIN_DIR  # noqa: E402

BIN = str(BIN_DIR)


class StridedResidualCnn(torch.nn.Module):
    """ResNet's stem and first block in small: a stride-2 convolution, a 3x3 stride-2 max pooling with padding,
    a convolution plus a stride-4 1x1 shortcut from the input, a ReLU, a classifier over the flattened map."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.down = torch.nn.Conv2d(3, 8, 1, stride=4, bias=False)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10, bias=False)

    def forward(self, x):
        y = self.pool(torch.relu(self.c1(x)))
        y = torch.relu(self.c2(y) + self.down(x))
        return self.fc(torch.flatten(y, 1))


def lower(model, example, tmp_path):
    """The model exported in float64 (so that the reference evaluator computes in binary64) and lowered."""
    onnx_file, t10_file = tmp_path / "model.onnx", tmp_path / "model.t10.json"
    torch.onnx.export(model.double().eval(), example.double(), str(onnx_file), opset_version=17, input_names=["x"])
    subprocess.run([os.path.join(BIN, "mlsys-import"), "--t10", str(onnx_file), "-o", str(t10_file)],
                   check=True, capture_output=True)
    return onnx_file, t10_file


def run_functional(t10_file, tmp_path):
    values_file = tmp_path / "values.json"
    r = subprocess.run([os.path.join(BIN, "t10"), "compile", str(t10_file), "--functional", "--values",
                        str(values_file), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    program = json.loads(r.stdout)
    assert program["simulation"]["passed"], program["simulation"]["failure"]
    assert program["simulation"]["functional_checked"]
    assert program["simulation"]["operators_on_engine"] == len(program["ops"])
    return program, json.loads(values_file.read_text())


def reference(module, onnx_file, values):
    """The PyTorch module run in float64 on the values the engine drew: each drawn parameter is found in the
    module by its initializer's name, or (a weight the exporter transposed into an unnamed initializer) by
    the exported values it had, and replaced; the input is the drawn one."""
    import onnx
    from onnx import numpy_helper

    exported = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                for t in onnx.load(str(onnx_file)).graph.initializer}
    state = module.state_dict()
    replaced = dict(state)
    for name, p in values["params"].items():
        drawn = torch.tensor(p["values"], dtype=torch.float64).reshape(p["shape"])
        if name in state:  # in the parameter's own shape (a convolution's bias is read as [C, 1, 1])
            replaced[name] = drawn.reshape(state[name].shape)
            continue
        original = exported[name]
        found = [(k, False) for k, v in state.items() if v.shape == original.shape and torch.equal(v, original)]
        found += [(k, True) for k, v in state.items() if v.dim() == 2 and v.t().shape == original.shape
                  and torch.equal(v.t(), original)]
        assert len(found) == 1, (name, found)
        key, transposed = found[0]
        replaced[key] = drawn.t() if transposed else drawn
    module.load_state_dict(replaced)
    x = values["inputs"]["x"]
    with torch.no_grad():
        return module(torch.tensor(x["values"], dtype=torch.float64).reshape(x["shape"])).numpy()


def engine_output(values):
    import numpy as np
    out = values["output"]
    return np.ldexp(np.array(out["values"], dtype=np.float64), -out["scale"])


def test_strided_residual_cnn_equals_the_onnx_reference_exactly(tmp_path):
    # 15 x 15 maps: the stride-2 windows reach the padding on both sides; a batch of 2 images. Every edge is
    # replayed core to core, the pooling's window read included.
    net = StridedResidualCnn()
    onnx_file, t10_file = lower(net, torch.zeros(2, 3, 15, 15), tmp_path)
    program, values = run_functional(t10_file, tmp_path)
    assert program["simulation"]["layout_changes_replayed"] == program["simulation"]["edges"] == 6
    assert len(values["params"]) == 4  # three convolutions' weights and the classifier's
    assert list(values["inputs"]) == ["x"]  # drawn once, read by both of its consumers (c1 and the shortcut)
    want = reference(net, onnx_file, values)
    got = engine_output(values).reshape(want.shape)
    assert values["output"]["scale"] == 0 and (got == want).all(), (got, want)  # integers: exact
    assert abs(want).max() > 1000  # values large enough that a misplaced element shows


class PooledClassifier(torch.nn.Module):
    """A ResNet's head in small: a convolution with its bias, a ReLU, a global average pooling over a 4 x 4 map
    (a division by 16: exact in binary) and a Linear with its bias."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


def test_a_global_average_pooling_and_biases_equal_the_reference_exactly(tmp_path):
    net = PooledClassifier()
    onnx_file, t10_file = lower(net, torch.zeros(1, 3, 8, 8), tmp_path)
    _, values = run_functional(t10_file, tmp_path)
    assert {"conv.bias", "fc.bias"} <= set(values["params"])  # the convolution's bias read per channel
    want = reference(net, onnx_file, values)
    got = engine_output(values).reshape(want.shape)
    assert (got == want).all(), (got, want)
    assert values["output"]["scale"] > 0  # a mean with fractions: fixed point, exactly


class Attention(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x @ x.transpose(-1, -2), dim=-1) @ x


def test_a_transformer_block_equals_the_onnx_reference(tmp_path):
    """GPT2Block (examples/models/transformers.py) with d = 16, 2 heads, 8 tokens: LayerNorms, the packed QKV
    split into heads by views, the batched attention products, the causal mask and the softmax, the merged
    heads, GELU, two residuals. The vector operators compute in binary64 and are rounded to 30 significant
    bits, the products' operands to 28 (k = 16): the output agrees with the reference to about that
    precision, and a single misrouted element would be off by orders of magnitude more."""
    import sys
    from conftest import SOURCE_DIR
    sys.path.insert(0, str(SOURCE_DIR / "examples"))
    from models.transformers import GPT2Block

    torch.manual_seed(0)
    block = GPT2Block(16, 2, 8)
    onnx_file, t10_file = lower(block, torch.zeros(1, 8, 16), tmp_path)
    program, values = run_functional(t10_file, tmp_path)
    assert any(o.get("batch", 1) == 2 for o in program["ops"])  # the heads' products ran one by one
    want = reference(block, onnx_file, values)
    got = engine_output(values).reshape(want.shape)
    scale = abs(want).max()
    error = abs(got - want).max() / scale
    assert error < 1e-6, error  # measured: 7.0e-8


def test_an_operator_without_a_form_here_is_refused_by_name(tmp_path):
    t10 = {"t10_program": {"name": "odd", "ops": [
        {"name": "mm", "type": "matmul", "m": 4, "k": 4, "n": 4, "reads": [{"from": None, "input": "x"}]},
        {"name": "odd", "type": "elementwise", "m": 4, "n": 4, "inputs": 1, "function": ["Mod"],
         "reads": [{"from": "mm"}], "compute": {"nodes": [{"op": "Mod", "in": [{"read": 0}, {"value": [3], "shape": []}]}]}}]}}
    path = tmp_path / "odd.t10.json"
    path.write_text(json.dumps(t10))
    r = subprocess.run([os.path.join(BIN, "t10"), "compile", str(path), "--functional"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "node 0 (Mod)" in r.stderr, r.stderr
