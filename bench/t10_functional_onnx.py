"""The body of bench/t10-functional-onnx (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import torch
import torch.nn.functional as F
import torchvision
from onnx import helper, numpy_helper

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build/release")
parser.add_argument("--model", default="resnet18", help="a torchvision classifier")
parser.add_argument("--size", type=int, default=32, help="image side")
args = parser.parse_args()
build = os.path.abspath(args.build)


def run_onnx(path, feeds, params):
    """The ONNX graph evaluated node by node with PyTorch's functional operators in float64, its learned
    parameters replaced by the drawn ones: an evaluator independent of the importer and the engine."""
    model = onnx.load(path)
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    for name, p in params.items():  # in the initializer's own shape (a bias may be read as [C, 1, 1])
        env[name] = torch.tensor(p["values"], dtype=torch.float64).reshape(env[name].shape)
    env.update(feeds)
    for node in model.graph.node:
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        x = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Conv":
            pads = a.get("pads", [0, 0, 0, 0])
            if pads[:2] != pads[2:]:
                sys.exit(f"{node.name}: asymmetric padding")
            y = F.conv2d(x[0], x[1], x[2] if len(x) > 2 else None, a.get("strides", [1, 1]), pads[:2],
                         a.get("dilations", [1, 1]), a.get("group", 1))
        elif op == "MaxPool":
            y = F.max_pool2d(x[0], a["kernel_shape"], a.get("strides", [1, 1]), a.get("pads", [0, 0])[:2],
                             ceil_mode=bool(a.get("ceil_mode", 0)))
        elif op in ("Relu", "Identity"):
            y = torch.relu(x[0]) if op == "Relu" else x[0]
        elif op in ("Add", "Mul"):
            y = x[0] + x[1] if op == "Add" else x[0] * x[1]
        elif op == "GlobalAveragePool":
            y = x[0].mean(dim=(2, 3), keepdim=True)
        elif op == "Flatten":
            y = x[0].reshape(int(np.prod(x[0].shape[:a.get("axis", 1)])), -1)
        elif op == "Gemm":
            lhs = x[0].t() if a.get("transA", 0) else x[0]
            rhs = x[1].t() if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * lhs @ rhs + (a.get("beta", 1.0) * x[2] if len(x) > 2 and x[2] is not None else 0)
        else:
            sys.exit(f"{node.name}: {op} is not evaluated here")
        env[node.output[0]] = y
    return env[model.graph.output[0].name]


with tempfile.TemporaryDirectory() as work:
    path, t10, values = (os.path.join(work, f) for f in ("model.onnx", "model.t10.json", "values.json"))
    model = getattr(torchvision.models, args.model)(num_classes=10).double().eval()
    torch.onnx.export(model, torch.zeros(1, 3, args.size, args.size, dtype=torch.float64), path, opset_version=17,
                      input_names=["x"])
    subprocess.run([os.path.join(build, "mlsys-import"), "--t10", path, "-o", t10], check=True, capture_output=True)
    start = time.monotonic()
    done = subprocess.run([os.path.join(build, "t10"), "compile", t10, "--functional", "--values", values],
                          capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode:
        sys.exit(done.stderr)
    v = json.load(open(values))
    x = torch.tensor(v["inputs"]["x"]["values"], dtype=torch.float64).reshape(v["inputs"]["x"]["shape"])
    want = run_onnx(path, {"x": x}, v["params"]).numpy()
    got = np.ldexp(np.array(v["output"]["values"], dtype=np.float64), -v["output"]["scale"]).reshape(want.shape)
    ops = len(json.load(open(t10))["t10_program"]["ops"])
    print(f"{args.model} at {args.size}x{args.size}: {ops} operators, functional run {seconds:.1f} s; largest "
          f"output {abs(want).max():.3e}; largest error {abs(got - want).max() / abs(want).max():.2e} of it")
