"""Whole-model T10 programs from ONNX (mlsys-import --t10, t10 compile, mlsys_sim.t10_compile): every small
zoo model lowers with its MatMul and convolution MACs equal to a count taken from the ONNX graph itself,
attention products stay one batched operator, the program compiles, fits, and its all-cores run equals the
compiled total; the default reconciliation is never slower than the published heuristic; unsupported ops are
listed at once."""

import json
import os
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import helper, TensorProto  # noqa: E402

import mlsys_sim  # noqa: E402
from conftest import export_zoo, inferred_graph, matrix_macs  # noqa: E402
from mlsys_sim.importer import ModelImportError  # noqa: E402
from mlsys_sim.importer.t10_lowering import import_onnx_t10  # noqa: E402

from conftest import BIN_DIR, SOURCE_DIR  # noqa: E402

BIN = str(BIN_DIR)
sys.path.insert(0, str(SOURCE_DIR / "examples"))
from models.zoo import ZOO  # noqa: E402


def graph_macs(path):
    """MatMul, Gemm and Conv multiply-adds counted from the ONNX graph's inferred shapes."""
    g, shapes = inferred_graph(path)
    return sum(matrix_macs(node, shapes) for node in g.node)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return {name: path for (name, _), path in export_zoo(tmp_path_factory.mktemp("t10zoo")).items()}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_lowers_compiles_and_runs_on_every_core(name, exported, tmp_path):
    model = import_onnx_t10(exported[name])
    ops = model["t10_program"]["ops"]
    matmuls = [o for o in ops if o["type"] == "matmul"]
    assert sum(o.get("batch", 1) * o["m"] * o["k"] * o["n"] for o in matmuls) == graph_macs(exported[name])
    # The command line: mlsys-import --t10, then t10 compile (both reconciliations).
    model_file = tmp_path / "model.json"
    subprocess.run([os.path.join(BIN, "mlsys-import"), "--t10", exported[name], "-o", str(model_file)],
                   check=True, capture_output=True)
    assert json.loads(model_file.read_text()) == model
    totals = {}
    for reconcile in ("exact", "heuristic"):
        r = subprocess.run([os.path.join(BIN, "t10"), "compile", str(model_file), "--json", "--reconcile", reconcile],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        program = json.loads(r.stdout)
        assert len(program["ops"]) == len(ops)
        assert program["peak_sram_bytes"] <= program["chip"]["sram_bytes_per_core"]
        assert program["simulation"]["passed"], program["simulation"]["failure"]
        assert program["simulation"]["makespan"] == pytest.approx(program["total_cycles"], rel=1e-9)
        replayed = [t for t in program["transitions"] if t["replayed"]]
        assert len(replayed) == program["simulation"]["layout_changes_replayed"]
        if name in ("bert-layer", "gpt2-block", "mixer-block"):
            assert replayed and all(t["bytes_moved"] >= t["max_bytes_into_one_core"] for t in replayed)
        assert sum(o["cycles"]["total"] for o in program["ops"]) == pytest.approx(program["total_cycles"])
        totals[reconcile] = program["total_cycles"]
    assert totals["exact"] <= totals["heuristic"] * (1 + 1e-12)
    # The Python API reads the ONNX file itself and gives the same program.
    assert mlsys_sim.t10_compile(exported[name])["total_cycles"] == pytest.approx(totals["exact"])


def test_attention_products_stay_one_batched_operator(exported):
    ops = import_onnx_t10(exported["bert-layer"])["t10_program"]["ops"]
    batched = [o for o in ops if o["type"] == "matmul" and o.get("batch", 1) > 1]
    # Small BERT layer: 2 heads of 64 tokens; Q·K^T is 64x(128/2)x64 per head, scores·V 64x64x64.
    assert [(o["batch"], o["m"], o["k"], o["n"]) for o in batched] == [(2, 64, 64, 64), (2, 64, 64, 64)]
    assert any(o["type"] == "rowwise" for o in ops)  # the softmax and the LayerNorms


def test_unsupported_ops_are_listed_at_once(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    nodes = [helper.make_node("Sin", ["x"], ["a"], name="s1"), helper.make_node("Cos", ["a"], ["y"], name="c1")]
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                                opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ModelImportError) as caught:
        import_onnx_t10(str(path))
    assert "2 ops cannot be lowered" in str(caught.value)
    assert "'s1'" in str(caught.value) and "'c1'" in str(caught.value)
    r = subprocess.run([os.path.join(BIN, "mlsys-import"), "--t10", str(path), "-o", "-"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "Sin" in r.stderr


def test_python_functional_mlp():
    model = {"t10_program": {"name": "mlp", "ops": [
        {"name": "fc1", "type": "matmul", "m": 32, "k": 64, "n": 96},
        {"name": "bias", "type": "elementwise", "m": 32, "n": 96, "inputs": 2},
        {"name": "relu", "type": "relu", "m": 32, "n": 96},
        {"name": "fc2", "type": "matmul", "m": 32, "k": 96, "n": 16}]}}
    program = mlsys_sim.t10_compile(model, functional=True)
    assert program["simulation"]["functional_checked"] and program["simulation"]["passed"]
    with pytest.raises(mlsys_sim.InputError, match="needs at least"):
        mlsys_sim.t10_compile(model, sram=64)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision_networks_compile_for_t10(name, tmp_path):
    """torchvision's networks (random weights, 224x224): strided, depthwise and pointwise convolutions lower
    as im2col products with the graph's multiply-adds; the program fits and runs on every core."""
    torchvision = pytest.importorskip("torchvision")
    path = str(tmp_path / f"{name}.onnx")
    torch.onnx.export(getattr(torchvision.models, name)(weights=None).eval(), torch.randn(1, 3, 224, 224), path,
                      opset_version=17, do_constant_folding=True)
    ops = import_onnx_t10(path)["t10_program"]["ops"]
    assert sum(o.get("batch", 1) * o["m"] * o["k"] * o["n"] for o in ops if o["type"] == "matmul") == \
        graph_macs(path)
    if name == "mobilenet_v2":  # depthwise: one product per channel group
        assert any(o["type"] == "matmul" and o.get("batch", 1) == 32 and o["k"] == 9 and o["n"] == 1 for o in ops)
    program = mlsys_sim.t10_compile(path)
    assert program["simulation"]["passed"] and program["compile"]["proven"]
    assert program["peak_sram_bytes"] <= 638976
    assert program["total_cycles"] <= program["compile"]["heuristic_cycles"] * (1 + 1e-12)
    # Every edge is replayed and covered exactly (passed): convolutions' inputs through their im2col, the max
    # pooling's through its window, the global pooling's one value per row into the classifier.
    assert all(t["replayed"] for t in program["transitions"]), [t for t in program["transitions"] if not t["replayed"]]
    pools = [t for t in program["transitions"] if t["to"].endswith("MaxPool")]
    assert len(pools) == (1 if name == "resnet18" else 0)
    assert all("Window" in t["view"] and t["bytes_moved"] > 0 for t in pools)
    assert all("Im2col" in t["view"] for t in program["transitions"] if t["to"].endswith("Conv") and "view" in t)


def test_vision_transformer_replays_its_class_token_concat_and_gather(tmp_path):
    """torchvision's VisionTransformer in small (32x32 image, 8x8 patches, one layer): the patches are placed
    after the class token by a Concat (rows 1..16 of 17) and the classifier reads row 0 through a Gather of one
    index. Both edges are index maps now, so every edge of the network is replayed, each core covered exactly."""
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2,
                                                 hidden_dim=32, mlp_dim=64, num_classes=10).eval()
    path = tmp_path / "vit.onnx"
    torch.onnx.export(model, torch.zeros(1, 3, 32, 32), str(path), opset_version=17)
    program = mlsys_sim.t10_compile(str(path))
    assert program["simulation"]["passed"], program["simulation"]["failure"]
    assert program["simulation"]["layout_changes_replayed"] == program["simulation"]["edges"]
    concat = [t for t in program["transitions"] if t["to"].endswith("Concat")]
    gather = [t for t in program["transitions"] if t["to"].endswith("Gather")]
    assert len(concat) == 1 and "Concat" in concat[0]["view"]
    assert len(gather) == 1 and "Slice" in gather[0]["view"]
    # The Gather's one row of 32 two-byte values comes from the cores that hold row 0 of the LayerNorm's
    # output: at most 64 bytes move.
    assert 0 < gather[0]["bytes_moved"] <= 64


def test_attention_block_transitions_are_its_edges(exported, tmp_path):
    """GPT2Block (examples/models/transformers.py), read from its forward: ln1 -> qkv; the packed QKV's bias add
    feeds the scores twice (q as A, k as B, through the split, the reshape into heads and the transposes) and
    the context once (v as B); softmax -> context; the merged heads -> the output projection (a view); the
    residual reads the block's input (no edge) and the projection; the MLP; the second residual reads the
    first. Each edge once, with its operand, and every one replayed: four through their views (split, reshape into
    heads, transposes), mapped element by element."""
    r = subprocess.run([os.path.join(BIN, "t10"), "compile", exported["gpt2-block"], "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    program = json.loads(r.stdout)
    edges = sorted((t["from"], t["to"], t["operand"]) for t in program["transitions"])
    want = sorted([
        ("/ln1/LayerNormalization", "/attn/qkv/MatMul", "A"),
        ("/attn/qkv/MatMul", "/attn/qkv/Add", "input"),
        ("/attn/qkv/Add", "/attn/MatMul", "A"),
        ("/attn/qkv/Add", "/attn/MatMul", "B"),
        ("/attn/MatMul", "/attn/Softmax", "input"),
        ("/attn/Softmax", "/attn/MatMul_1", "A"),
        ("/attn/qkv/Add", "/attn/MatMul_1", "B"),
        ("/attn/MatMul_1", "/attn/proj/MatMul", "A"),
        ("/attn/proj/MatMul", "/Add", "input"),
        ("/Add", "/ln2/LayerNormalization", "input"),
        ("/ln2/LayerNormalization", "/mlp/mlp.0/MatMul", "A"),
        ("/mlp/mlp.0/MatMul", "/mlp/mlp.1/Mul_1", "input"),
        ("/mlp/mlp.1/Mul_1", "/mlp/mlp.2/MatMul", "A"),
        ("/mlp/mlp.2/MatMul", "/Add_1", "input"),
        ("/Add", "/Add_1", "input"),
    ])
    assert edges == want
    views = {(t["from"], t["to"], t["operand"]) for t in program["transitions"] if "view" in t}
    assert views == {("/attn/qkv/Add", "/attn/MatMul", "A"), ("/attn/qkv/Add", "/attn/MatMul", "B"),
                     ("/attn/qkv/Add", "/attn/MatMul_1", "B"), ("/attn/MatMul_1", "/attn/proj/MatMul", "A")}
    assert all(t["replayed"] for t in program["transitions"])
    assert program["simulation"]["passed"], program["simulation"]["failure"]  # every core covered exactly
    assert program["simulation"]["edges"] == 15
    assert program["simulation"]["layout_changes_replayed"] == 15
