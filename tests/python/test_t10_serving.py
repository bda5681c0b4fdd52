"""LLM serving from ONNX (mlsys-import --t10, then t10 serve; docs/t10-serving.md#onnx). A GPT-2-style decode
step is exported from PyTorch with its KV cache as graph inputs and symbolic batch and cache length. It imports
with every product saying what it loads from HBM. Each weight's and each cache's bytes are counted here from the
module's own configuration. The cache append is no operator. `t10 serve` schedules the step within SRAM, and its
replay equals its analytic total, which is no faster than the HBM traffic allows."""

import json
import sys

import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from conftest import SOURCE_DIR, cli_error, cli_json, run_cli  # noqa: E402
from mlsys_sim.importer.t10_lowering import import_onnx_t10  # noqa: E402

sys.path.insert(0, str(SOURCE_DIR / "examples"))
from models.zoo import export_decoder  # noqa: E402

# The small gpt2-decode of examples/models/zoo.py: 2 layers, d 128, 2 heads, a vocabulary of 1,000.
LAYERS, D, HEADS, VOCAB = 2, 128, 2, 1000
BATCH, PAST = 4, 96
FP16 = 2
SRAM_PER_CORE = 624 * 1024  # the elk-1472 preset (the artifact's --core_mem_kb 624)
HBM_BYTES_PER_MS = 4000 * 1000 * 1024 ** 2 / 1000  # 4,000 "GB/s" as the artifact counts them


@pytest.fixture(scope="module")
def step(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decode")
    onnx_path = folder / "gpt2-decode.onnx"
    export_decoder("gpt2-decode", str(onnx_path), size="small")
    doc = import_onnx_t10(str(onnx_path), dims={"batch": BATCH, "past": PAST})
    t10_path = folder / "step.t10.json"
    t10_path.write_text(json.dumps(doc))
    return onnx_path, t10_path, doc["t10_program"]["ops"]


def test_products_say_what_they_load(step):
    _, _, ops = step
    weights = [o for o in ops if o.get("hbm") == "weight"]
    cache = [o for o in ops if o.get("hbm") == "kv_cache"]
    # Per layer: QKV (D x 3D), the output projection (D x D), the MLP (D x 4D and 4D x D); then the LM head.
    expected = [D * 3 * D, D * D, D * 4 * D, 4 * D * D] * LAYERS + [D * VOCAB]
    assert sorted(o["hbm_bytes"] for o in weights) == sorted(n * FP16 for n in expected)
    # Keys and values: BATCH sequences x HEADS x PAST cached positions x the head's width; this step's own
    # row is computed on chip.
    head = D // HEADS
    assert [o["hbm_bytes"] for o in cache] == [BATCH * HEADS * PAST * head * FP16] * (2 * LAYERS)
    scores, context = cache[0], cache[1]
    assert (scores["batch"], scores["m"], scores["k"], scores["n"]) == (BATCH * HEADS, 1, head, PAST + 1)
    assert (context["batch"], context["m"], context["k"], context["n"]) == (BATCH * HEADS, 1, PAST + 1, head)
    assert not any("Concat" in o["name"] for o in ops)  # the append is written in place: a view
    assert all(o["type"] == "matmul" for o in weights + cache)


def test_t10_serve_schedules_and_replays_the_imported_step(step):
    _, path, ops = step
    code, r = cli_json("t10", "serve", path, "--timeout", "5", "--json")
    assert code == 0, r
    traffic = sum(o.get("hbm_bytes", 0) for o in ops)
    assert r["layers"] == LAYERS and r["operators"] == len(ops)
    assert r["hbm_bytes"] == traffic
    assert r["fits"] and r["peak_sram_bytes"] <= SRAM_PER_CORE
    assert r["simulation"]["agrees"]
    assert r["simulation"]["latency_ms"] == pytest.approx(r["latency_ms"], rel=1e-9)
    assert traffic / HBM_BYTES_PER_MS <= r["lower_bound_ms"] <= r["latency_ms"]
    assert r["batch"] is None and r["seq"] is None

    code, one = cli_json("t10", "serve", path, "--layers", "1", "--timeout", "5", "--json")
    assert code == 0
    layer0 = [o for o in ops if o.get("hbm")][:6]  # QKV, keys, values, projection, the MLP's two
    assert one["hbm_bytes"] == sum(o["hbm_bytes"] for o in layer0)


def test_shapes_come_from_the_import_not_the_command_line(step):
    onnx_path, path, _ = step
    message = cli_error("t10", "serve", path, "--seq", "2048")
    assert "--seq" in message and "mlsys-import" in message
    code, _, err = run_cli("mlsys-import", onnx_path, "--t10", "-o", "-")
    assert code == 2 and "past" in err  # the cache's length must be pinned
