"""Shared fixtures of the Python API tests. ctest sets PYTHONPATH to the build tree's python/ folder and
MLSYS_BIN_DIR to the folder of the command-line programs; run by hand, the release build is the default."""

import json
import os
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("MLSYS_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN_DIR = Path(os.environ.get("MLSYS_BIN_DIR", SOURCE_DIR / "build" / "release"))
GOLDEN_DIR = SOURCE_DIR / "tests" / "golden"
BENCHMARKS = [SOURCE_DIR / "benchmarks" / f"mlsys-2026-{n}.json" for n in range(1, 25)]


def run_cli(program, *args):
    """Runs one of the command-line programs; returns (exit code, stdout, stderr)."""
    done = subprocess.run([str(BIN_DIR / program), *map(str, args)], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def cli_json(program, *args):
    code, out, err = run_cli(program, *args)
    assert out, f"{program} {args} printed nothing (exit {code}): {err}"
    return code, json.loads(out)


def cli_error(program, *args):
    """The message a program prints for malformed input (exit 2), without its 'error: ' prefix."""
    code, _, err = run_cli(program, *args)
    assert code == 2, f"{program} {args}: exit {code}, stderr {err}"
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: ")
    return line[len("error: "):]


def inferred_graph(path):
    """An ONNX file's graph after ONNX's own shape inference, and every value's shape (initializers included)."""
    import onnx
    from onnx import shape_inference

    g = shape_inference.infer_shapes(onnx.load(str(path)), data_prop=True).graph
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(g.input) + list(g.value_info) + list(g.output)}
    shapes.update({t.name: list(t.dims) for t in g.initializer})
    return g, shapes


def matrix_macs(node, shapes):
    """The multiply-adds of a MatMul, Gemm or Conv node from the graph's shapes (0 for any other node)."""
    from math import prod

    out = shapes[node.output[0]]
    if node.op_type == "MatMul":
        return prod(out) * shapes[node.input[0]][-1]
    if node.op_type == "Gemm":
        a = shapes[node.input[0]]
        return prod(out) * (a[0] if any(x.name == "transA" and x.i for x in node.attribute) else a[1])
    if node.op_type == "Conv":
        return prod(out) * prod(shapes[node.input[1]][1:])
    return 0


def export_zoo(out, opsets=lambda name: (17,)):
    """Every small zoo model (examples/models) exported to ONNX under `out`, keyed (name, opset)."""
    import sys

    import torch

    sys.path.insert(0, str(SOURCE_DIR / "examples"))
    from models.zoo import ZOO, build

    paths = {}
    for name in ZOO:
        module, inputs = build(name, "small")
        for opset in opsets(name):
            path = str(out / f"{name}-{opset}.onnx")
            torch.onnx.export(module.eval(), inputs, path, opset_version=opset, do_constant_folding=True)
            paths[(name, opset)] = path
    return paths


def golden_cases():
    return json.loads((GOLDEN_DIR / "cases.json").read_text())["cases"]


def cli_options(case_options):
    """The golden case's verifier flags as verify() keyword arguments."""
    kwargs = {}
    for i, arg in enumerate(case_options):
        if arg == "--matmul-compute":
            kwargs["compute"] = case_options[i + 1]
        elif arg == "--allow-supernative-k":
            kwargs["allow_supernative_k"] = True
        elif arg == "--strict":
            kwargs["strict"] = True
    return kwargs


@pytest.fixture(scope="session")
def bench17():
    import mlsys_sim

    return mlsys_sim.Problem(SOURCE_DIR / "benchmarks" / "mlsys-2026-17.json")
