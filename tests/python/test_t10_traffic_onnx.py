"""Request traffic on a decoder from ONNX (mlsys-import --elk, then t10 serve --requests; docs/t10-traffic.md#onnx).
GPT-2 over a prompt is exported from PyTorch with symbolic batch and sequence axes and written as an Elk model
file. Its weight bytes and KV bytes per token are counted here from the module's own configuration, and a run of
requests with prefill and decode completes every request, its SystemC replay equal to the analytic run."""

import json
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from conftest import BIN_DIR, SOURCE_DIR, cli_json  # noqa: E402
from mlsys_sim.importer import onnx_graph as og  # noqa: E402
from mlsys_sim.importer.elk_export import export_elk  # noqa: E402

sys.path.insert(0, str(SOURCE_DIR / "examples"))
from models.transformers import GPT2Stack  # noqa: E402
from models.zoo import export_prefill  # noqa: E402

# The small gpt2-prefill of examples/models/zoo.py: 2 layers, d 128, 2 heads, a vocabulary of 1,000.
LAYERS, D, VOCAB = 2, 128, 1000
FP16 = 2


def mlsys_import(*args):
    done = subprocess.run([sys.executable, "-m", "mlsys_sim.importer.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prefill")
    onnx_path = folder / "gpt2-prefill.onnx"
    export_prefill("gpt2-prefill", str(onnx_path), size="small")
    out = folder / "gpt2.elk.json"
    code, summary, err = mlsys_import(onnx_path, "--elk", "-o", out, "--json")
    assert code == 0, err
    return onnx_path, out, json.loads(summary)


def test_every_operator_becomes_one_node_of_the_artifacts_types(model):
    _, path, summary = model
    nodes = json.loads(path.read_text())
    assert summary["elk_nodes"] == len(nodes)
    types = [n[2] for n in nodes]
    # Per layer: QKV, output projection, two MLP products; then the LM head. Two products with the cache.
    assert types.count("Dot") == 4 * LAYERS + 1
    assert types.count("BatchMatMul") == 2 * LAYERS
    assert types.count("SoftmaxBasic") == LAYERS
    assert "Reshape" not in types and "Transpose" not in types  # views are no operators
    scores = next(n[1] for n in nodes if n[2] == "BatchMatMul")
    assert "[99, 2, 66, 64]" in scores and "[99, 2, 64, 66]" in scores  # queries against the keys


def test_a_run_of_requests_completes_with_the_models_own_bytes(model, tmp_path):
    _, path, _ = model
    requests = tmp_path / "r.jsonl"
    requests.write_text('{"arrival_ms": 0, "prompt_tokens": 10, "output_tokens": 3}\n')
    code, run = cli_json("t10", "serve", path, "--requests", requests, "--exact", "--json")
    assert code == 0, run
    assert run["requests"]["completed"] == 1 and run["requests"]["exact_output_tokens"]
    weights = LAYERS * (D * 3 * D + D * D + D * 4 * D + 4 * D * D) + D * VOCAB
    assert run["weight_bytes"] == weights * FP16
    # Every layer's key and value rows, d values each, for the prompt and every generated token but the last.
    kv_per_token = LAYERS * 2 * D * FP16
    assert run["kv_peak_bytes"] == (10 + 3 - 1) * kv_per_token
    assert run["iterations"][0]["prefill_tokens"] == 10
    assert [len(it["decode_kv"]) for it in run["iterations"][1:]] == [1, 1]
    assert run["simulation"]["agrees"]
    assert run["lower_bounds"]["makespan"]["holds"] and run["lower_bounds"]["ttft"]["holds"]


def test_traffic_from_the_generator_runs_every_scheduler(model):
    _, path, _ = model
    for scheduler in ("vllm", "sarathi", "decode-first"):
        code, run = cli_json("t10", "serve", path, "--arrivals", "poisson", "--rate", "100", "--count", "12",
                             "--prompt-dist", "uniform", "--prompt-mean", "40", "--prompt-spread", "30",
                             "--output-mean", "6", "--scheduler", scheduler, "--json")
        assert code == 0, run
        assert run["requests"]["completed"] == 12, scheduler
        assert run["simulation"]["agrees"], scheduler


def test_what_cannot_be_read_is_refused_by_name(tmp_path):
    # A vocabulary of 990 = 10 x 99 would be read as ten times the batch.
    torch.manual_seed(0)
    clash = tmp_path / "clash.onnx"
    torch.onnx.export(GPT2Stack(1, 128, 2, 990, 128).eval(), (torch.randint(0, 990, (2, 5)),), str(clash),
                      opset_version=17, input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch", 1: "seq"}})
    with pytest.raises(og.ImportError_, match="990"):
        export_elk(str(clash))
    code, _, err = mlsys_import(clash, "--elk", "-o", tmp_path / "x.json")
    assert code == 2 and "990" in err and not (tmp_path / "x.json").exists()
    # A convolution has no node in an Elk model file: refused by its op type.
    conv = tmp_path / "conv.onnx"
    torch.onnx.export(torch.nn.Conv2d(3, 4, 3).eval(), (torch.randn(2, 3, 8, 8),), str(conv), opset_version=17,
                      input_names=["x"], dynamic_axes={"x": {0: "batch", 2: "seq"}})
    with pytest.raises(og.ImportError_, match="Conv"):
        export_elk(str(conv))
    code, out, _ = mlsys_import("--list-elk-ops")
    assert code == 0 and "MatMul\tDot" in out and "Softmax\tSoftmaxBasic" in out
