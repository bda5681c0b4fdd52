"""Functional mode at network scale (issue 57 item 4): a strided residual CNN exported by PyTorch, lowered with
mlsys-import --t10 and run by `t10 compile --functional` on integers along its data flow (im2col reads with
padding, a max pooling's window read, a strided shortcut, a residual Add fused with its ReLU, a flatten of a
convolution's pixels x channels matrix). Its output must equal the same network run by PyTorch, in float64, on the values the engine
drew (`--values`): an independent reference. Operators without an integer form are refused by name."""

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
    onnx_file, t10_file = tmp_path / "model.onnx", tmp_path / "model.t10.json"
    torch.onnx.export(model.eval(), example, str(onnx_file), opset_version=17, input_names=["x"])
    subprocess.run([os.path.join(BIN, "mlsys-import"), "--t10", str(onnx_file), "-o", str(t10_file)],
                   check=True, capture_output=True)
    return t10_file


def set_conv_weight(conv, b):
    """A convolution's weight from its im2col B matrix: row (c, i, j) = c*kh*kw + i*kw + j, column = output
    channel (the im2col definition, derived here independently of the importer)."""
    co, ci, kh, kw = conv.weight.shape
    matrix = torch.tensor(b["values"], dtype=torch.float64).reshape(b["shape"])
    assert list(matrix.shape) == [ci * kh * kw, co]
    conv.weight.data = matrix.t().reshape(co, ci, kh, kw).contiguous()


def test_strided_residual_cnn_equals_pytorch_on_the_same_integers(tmp_path):
    # 15 x 15 maps: the stride-2 windows reach the padding on both sides; a batch of 2 images. Every edge is
    # replayed core to core, the pooling's window read included.
    t10_file = lower(StridedResidualCnn(), torch.zeros(2, 3, 15, 15), tmp_path)
    values_file = tmp_path / "values.json"
    r = subprocess.run([os.path.join(BIN, "t10"), "compile", str(t10_file), "--functional", "--values",
                        str(values_file), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    program = json.loads(r.stdout)
    assert program["simulation"]["passed"], program["simulation"]["failure"]
    assert program["simulation"]["functional_checked"]
    assert program["simulation"]["operators_on_engine"] == len(program["ops"])
    assert program["simulation"]["layout_changes_replayed"] == program["simulation"]["edges"] == 6
    values = json.loads(values_file.read_text())
    weights = {o["op"]: o for o in values["operands"]}
    net = StridedResidualCnn().double()
    set_conv_weight(net.c1, weights["/c1/Conv"])
    set_conv_weight(net.c2, weights["/c2/Conv"])
    set_conv_weight(net.down, weights["/down/Conv"])
    fc = weights["/fc/MatMul"]  # x · B, B = 512 x 10: PyTorch's weight is its transpose
    net.fc.weight.data = torch.tensor(fc["values"], dtype=torch.float64).reshape(fc["shape"]).t().contiguous()
    x = values["inputs"]["x"]
    assert x["shape"] == [2, 3, 15, 15]
    with torch.no_grad():
        want = net(torch.tensor(x["values"], dtype=torch.float64).reshape(x["shape"]))
    assert values["output"]["shape"] == [2, 10]
    got = torch.tensor(values["output"]["values"], dtype=torch.float64).reshape(2, 10)
    assert torch.equal(got, want), (got, want)
    assert got.abs().max() > 0  # values large enough that a misplaced element shows
    # The input is drawn once and read by both of its consumers (c1 and the shortcut): one tensor.
    assert list(values["inputs"]) == ["x"]


class Attention(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x @ x.transpose(-1, -2), dim=-1) @ x


def test_an_operator_without_an_integer_form_is_refused_by_name(tmp_path):
    t10_file = lower(Attention(), torch.zeros(16, 32), tmp_path)
    r = subprocess.run([os.path.join(BIN, "t10"), "compile", str(t10_file), "--functional"],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "Softmax" in r.stderr and "functional mode computes on integers" in r.stderr, r.stderr
