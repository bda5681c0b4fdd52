"""The ONNX/PyTorch importer (mlsys_sim.importer, mlsys-import): every zoo model imports, its MACs, graph
output elements and weight elements equal counts taken independently from the ONNX graph, it solves and
verifies --strict; opsets 13 and 17, static and symbolic exports, both attention styles, Gemm's transposes,
unsupported ops listed at once, and byte-identical imports."""

import json
import os
import subprocess
import sys
from collections import Counter
from math import prod

import numpy as np

import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from conftest import export_zoo, inferred_graph, matrix_macs  # noqa: E402
from mlsys_sim.importer import ModelImportError, import_onnx, import_torch, load_profile, mac_count  # noqa: E402
from mlsys_sim.importer.cli import problem_text  # noqa: E402

SOURCE = os.environ.get("MLSYS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("MLSYS_BIN_DIR", os.path.join(SOURCE, "build", "release"))
sys.path.insert(0, os.path.join(SOURCE, "examples"))
from models.zoo import ZOO  # noqa: E402


def onnx_counts(path):
    """MACs, graph output elements and matrix-weight elements, read from the ONNX graph itself."""
    g, shapes = inferred_graph(path)
    weights = {t.name: list(t.dims) for t in g.initializer}
    macs = weight_elements = 0
    for node in g.node:
        out = shapes[node.output[0]]
        if node.op_type in ("MatMul", "Gemm", "Conv"):
            macs += matrix_macs(node, shapes)
        elif node.op_type in ("GlobalAveragePool", "ReduceMean") and len(out) and out[-1] != 1 or (
                node.op_type == "GlobalAveragePool"):
            macs += prod(shapes[node.input[0]])  # a mean is one multiply-add per input element
        if node.op_type in ("MatMul", "Gemm", "Conv"):
            weight_elements += sum(prod(weights[n]) for n in node.input[1:2] if n in weights)
    outputs = sum(prod(shapes[o.name]) for o in g.output)
    return macs, outputs, weight_elements


def problem_counts(problem):
    produced = {t for outs in problem["outputs"] for t in outs}
    consumed = {t for ins in problem["inputs"] for t in ins}
    size = lambda t: problem["widths"][t] * problem["heights"][t]  # noqa: E731
    outputs = sum(size(t) for t in produced - consumed)
    weights = {ins[1] for op, ins, kind in zip(problem["op_types"], problem["inputs"], problem["names"]["op_kinds"])
               if op == "MatMul" and kind in ("MatMul", "Conv") and ins[1] not in produced}
    # a weight multiplied from the left (token mixing read transposed) is named as the weight transposed
    weights |= {ins[0] for op, ins in zip(problem["op_types"], problem["inputs"])
                if op == "MatMul" and ins[0] not in produced and "ᵀ[" in problem["names"]["tensors"][ins[0]]}
    return mac_count(problem), outputs, sum(size(t) for t in weights)


def run(program, *args):
    return subprocess.run([os.path.join(BIN, program), *map(str, args)], capture_output=True, text=True, timeout=300)


def solve_and_verify(problem, tmp_path):
    """The problem solves and its schedule passes verify --strict: validity only, so the search stops after its
    first order (a work budget: seconds less per network than a 3 s search, which the CI pays 15 times) and
    verify skips the cover bound."""
    problem_file, schedule = tmp_path / "p.json", tmp_path / "s.json"
    problem_file.write_text(problem_text(problem))
    solved = run("mlsys", problem_file, schedule, "--timeout", 3, "--orders", 1)
    assert solved.returncode == 0, solved.stderr
    verified = run("verify", problem_file, schedule, "--strict", "--cover-seconds", 0)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every small zoo model exported once at opset 17, and the GPT-2 block also at opset 13."""
    return export_zoo(tmp_path_factory.mktemp("zoo"), lambda name: (17, 13) if name == "gpt2-block" else (17,))


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_counts_match_the_onnx_graph_and_the_schedule_verifies(name, exported, tmp_path):
    path = exported[(name, 17)]
    problem = import_onnx(path, "tpu-like-core")
    assert problem_counts(problem) == onnx_counts(path)
    # Whole (the pooled elements are products too): no partial warning.
    assert 0 < problem["names"]["model_macs"] <= onnx_counts(path)[0]
    assert not any("of the model's" in w for w in problem["names"]["warnings"])
    solve_and_verify(problem, tmp_path)


def test_a_convnext_block_reads_its_map_as_nhwc_rows(tmp_path):
    """ConvNeXt's block permutes a feature map to NHWC for its LayerNorm and Linears, then back for the layer
    scale and the residual Add. The map is stored pixel-major in space-to-depth phases (a stride-2 convolution
    follows), so its NHWC rows are the storage's rows in another order: the Linears run over the stored rows
    and keep their order, and the Add finds both inputs laid out alike. MACs by hand: the 4x4 stride-4 stem,
    16 x 16 pixels x 16 channels x 48; the two Linears, 256 x 16 x 64 each; the 2x2 stride-2 downsampling,
    8 x 8 pixels x 32 channels x 64 (the depthwise 7x7 is not a product)."""
    from torchvision.models.convnext import CNBlock, LayerNorm2d

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 16, 4, stride=4)
            self.block = CNBlock(16, 1e-6, 0.0)
            self.down = torch.nn.Sequential(LayerNorm2d(16), torch.nn.Conv2d(16, 32, 2, stride=2))

        def forward(self, x):
            return self.down(self.block(self.stem(x)))

    path = str(tmp_path / "convnext.onnx")
    torch.onnx.export(Tiny().eval(), torch.zeros(1, 3, 64, 64), path, opset_version=17)
    problem = import_onnx(path, "tpu-like-core")
    assert mac_count(problem) == 256 * 16 * 48 + 2 * 256 * 16 * 64 + 64 * 32 * 64
    solve_and_verify(problem, tmp_path)


def test_odd_maps_halved_by_stride_2_windows_are_computed_one_pixel_larger(tmp_path):
    """SqueezeNet's pattern: a 3x3 stride-2 max pooling (ceil mode) over an odd 15x15 map. The map is computed
    at 16x16 so that its space-to-depth phases are equal, the pooling gives 8x8 (the model's 7x7 grown to half
    of 16), and the layers after it follow. By hand, padded: the stem 16*16 pixels x 8 x 27, the 1x1
    convolution 8*8 x 16 x 8, the global pooling's averaging product 16 x 64, the classifier 16 x 10; the model
    itself: 15*15 x 8 x 27, 7*7 x 16 x 8 and 16 x 10. A map flattened into a classifier (AlexNet's) grows too,
    and the classifier reads its real 7x7 pixels only: 784 x 10, each pixel copied by a 1 x 64 selection from
    the 8x8 map's one block of 64 rows (49 x 64 x 16)."""
    class Odd(torch.nn.Module):
        def __init__(self, flatten=False):
            super().__init__()
            self.flatten = flatten
            self.stem = torch.nn.Conv2d(3, 8, 3, stride=2)
            self.pool = torch.nn.MaxPool2d(3, stride=2, ceil_mode=True)
            self.conv = torch.nn.Conv2d(8, 16, 1)
            self.fc = torch.nn.Linear(16 * 7 * 7 if flatten else 16, 10)

        def forward(self, x):
            y = self.conv(self.pool(torch.relu(self.stem(x))))
            y = torch.flatten(y, 1) if self.flatten else torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1)
            return self.fc(y)

    path = str(tmp_path / "odd.onnx")
    torch.onnx.export(Odd().eval(), torch.zeros(1, 3, 31, 31), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.model_macs == 15 * 15 * 8 * 27 + 7 * 7 * 16 * 8 + 16 * 10
    assert report.macs == 16 * 16 * 8 * 27 + 8 * 8 * 16 * 8 + 16 * 64 + 16 * 10
    assert any("sides 15 to 16, 7 to 8" in w for w in report.warnings), report.warnings
    solve_and_verify(report.problem, tmp_path)
    torch.onnx.export(Odd(flatten=True).eval(), torch.zeros(1, 3, 31, 31), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.model_macs == 15 * 15 * 8 * 27 + 7 * 7 * 16 * 8 + 784 * 10
    assert report.macs == 16 * 16 * 8 * 27 + 8 * 8 * 16 * 8 + 784 * 10 + 49 * 64 * 16
    assert report.problem["names"]["op_kinds"].count("Flatten") == 49
    solve_and_verify(report.problem, tmp_path)


def test_inceptions_valid_convolution_and_padded_average_pooling_import(tmp_path):
    """Inception's stem has a 3x3 convolution without padding (a 16x16 map becomes 14x14), and torch exports its
    count_include_pad average pooling as a zero Pad and an AveragePool. The Pad is the pooling's own padding,
    and the shrinking convolution computes its input's size (14 grows to 16). MACs by hand: the first
    convolution 16*16 x 8 x 27, the valid one 16*16 x 8 x 72 (the model's 14*14), the global pooling's
    averaging product 8 x 256, the classifier 8 x 4."""
    class Stem(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = torch.nn.Conv2d(8, 8, 3)
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            y = torch.nn.functional.avg_pool2d(torch.relu(self.c2(torch.relu(self.c1(x)))), 3, 1, 1)
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))

    path = str(tmp_path / "stem.onnx")
    torch.onnx.export(Stem().eval(), torch.zeros(1, 3, 16, 16), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.model_macs == 256 * 8 * 27 + 196 * 8 * 72 + 8 * 4
    assert report.macs == 256 * 8 * 27 + 256 * 8 * 72 + 8 * 256 + 8 * 4
    assert any("sides 14 to 16" in w for w in report.warnings), report.warnings
    solve_and_verify(report.problem, tmp_path)


def test_a_map_flattened_into_a_classifier_keeps_its_blocks(tmp_path):
    """VGG's classifier reads its 7x7 map flattened. Its reduction runs in the map's stored order, one pixel's
    channels per chunk. Each chunk is copied from the map's block by a selection product (a 1 x 16 one-hot
    here), so the map and everything above it keep their blocks instead of being cut to single pixel rows.
    MACs by hand: the convolutions 8*8 x 8 x 27 and 4*4 x 8 x 72, the classifier 128 x 10, the selections
    16 pixels x 16 x 8."""
    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 4 * 4, 10)

        def forward(self, x):
            y = torch.relu(self.c2(torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)))
            return self.fc(torch.flatten(y, 1))

    path = str(tmp_path / "vgg_like.onnx")
    torch.onnx.export(Small().eval(), torch.zeros(1, 3, 8, 8), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.model_macs == 64 * 8 * 27 + 16 * 8 * 72 + 128 * 10
    assert report.macs == report.model_macs + 16 * 16 * 8
    assert report.problem["names"]["op_kinds"].count("Flatten") == 16
    assert report.ops < 60  # the map's blocks kept: no op per pixel above the classifier
    solve_and_verify(report.problem, tmp_path)


def test_a_channel_shuffle_reads_the_runs_of_stored_columns_it_holds(tmp_path):
    """Two ShuffleNet units: split the channels in halves, convolve the second, concatenate, shuffle (groups
    of 2). By hand, with A the first map (8 channels) and B, C the units' outputs (4 each): the first shuffle
    gives A0 B0 A1 B1 A2 B2 A3 B3, so the second unit convolves A2:4 and B2:4; the second shuffle gives
    A0 C0 B0 C1 A1 C2 B1 C3, so the head reads A0:2, B0:2 and C0:4. No data moves: each convolution sums one
    share of its reduction per run, and A is computed once, in the column blocks its readers need."""
    class Shuffle(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b1 = torch.nn.Conv2d(3, 8, 1), torch.nn.Conv2d(4, 4, 1)
            self.b2, self.head = torch.nn.Conv2d(4, 4, 1), torch.nn.Conv2d(8, 6, 1)

        @staticmethod
        def unit(t, conv):
            x1, x2 = t.chunk(2, dim=1)
            out = torch.cat((x1, torch.relu(conv(x2))), 1)
            n, c, h, w = out.shape
            return out.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)

        def forward(self, x):
            return self.head(self.unit(self.unit(torch.relu(self.a(x)), self.b1), self.b2))

    path = str(tmp_path / "shuffle.onnx")
    torch.onnx.export(Shuffle().eval(), torch.zeros(1, 3, 8, 8), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    problem, names = report.problem, report.problem["names"]
    assert report.macs == report.model_macs == 64 * (3 * 8 + 4 * 4 + 4 * 4 + 8 * 6)

    def reads(conv):
        """(producer, columns) of the activation blocks a convolution's products read."""
        found = []
        for op, ins, kind in zip(names["ops"], problem["inputs"], names["op_kinds"]):
            if kind == "Conv" and op.startswith(conv):
                tensor = names["tensors"][ins[0]]
                found.append((tensor.split("_output_0")[0], problem["widths"][ins[0]]))
        return sorted(found)

    assert reads("/head/Conv") == [("/Relu", 2), ("/Relu_1", 2), ("/Relu_2", 4)]
    assert sorted(t for op, ins in zip(names["ops"], problem["inputs"]) if op.startswith("/b2/Conv kernel")
                  for t in [names["tensors"][ins[0]]]) == ["/Relu_1_output_0[c2:4]", "/Relu_output_0[c2:4]"]
    producers = Counter(op.split("[")[0] for op, kind in zip(names["ops"], names["op_kinds"]) if kind == "Conv")
    assert producers["/a/Conv"] == 3  # columns 0:2, 2:4, 4:8: each computed once
    solve_and_verify(problem, tmp_path)

    class Strided(Shuffle):  # a stage's first unit concatenates two whole maps (one stored block), then shuffles
        def __init__(self):
            super().__init__()
            self.p, self.q = torch.nn.Conv2d(3, 4, 1), torch.nn.Conv2d(3, 4, 1)

        def forward(self, x):
            first = torch.cat((torch.relu(self.p(x)), torch.relu(self.q(x))), 1)
            n, c, h, w = first.shape
            first = first.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
            return self.head(self.unit(first, self.b2))

    torch.onnx.export(Strided().eval(), torch.zeros(1, 3, 8, 8), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.macs == report.model_macs == 64 * (3 * 4 + 3 * 4 + 4 * 4 + 8 * 6)


def test_token_mixing_at_196_tokens_multiplies_by_the_weight_on_the_left(tmp_path):
    """MLP-Mixer's token mixing reads the activations transposed. At 256 tokens by 512 channels the squares are
    whole 256 x 256 blocks (two Transpose ops per transposed read). At 196 they would be 4 x 4 (18,816 of them),
    so the products are computed as W1·LN(x) and W2·GELU(...), weights on the left, and the results are read
    transposed: no Transpose op at all. MACs by hand, the model's: 512·196·256 twice, 196·512·2048 twice."""
    sys.path.insert(0, os.path.join(SOURCE, "examples"))
    from models.transformers import MixerBlock
    reports = {}
    for tokens in (196, 256):
        path = str(tmp_path / f"mixer{tokens}.onnx")
        torch.onnx.export(MixerBlock(tokens, 512, 256, 2048).eval(), torch.randn(1, tokens, 512), path,
                          opset_version=17)
        reports[tokens] = import_onnx(path, "tpu-like-core", report=True)
    kinds = {t: Counter(r.problem["names"]["op_kinds"]) for t, r in reports.items()}
    assert reports[196].macs == reports[196].model_macs == 2 * 512 * 196 * 256 + 2 * 196 * 512 * 2048
    assert kinds[196]["Transpose"] == 0 and reports[196].ops < 20
    assert kinds[256]["Transpose"] == 4  # two 256 x 256 squares of each of the two transposed reads
    solve_and_verify(reports[196].problem, tmp_path)


def test_rolled_and_strided_pixels_are_tables_of_source_pixels():
    """torch.roll along H is a Concat of two Slices; Patch Merging's x[:, 0::2, 1::2] a Slice with steps. Both
    are followed as a table of which stored row each output pixel takes (gathers.py): for a map stored pixel by
    pixel, numpy's own roll and strided slice of the pixel numbers."""
    from mlsys_sim.importer.gathers import PixelSelection
    from mlsys_sim.importer.views import Storage, View

    pixels = np.arange(16).reshape(4, 4)
    whole = PixelSelection.of_view(View.row_major(Storage(1, 1, 16, 8), [1, 4, 4, 8]))
    rolled = PixelSelection.concat([whole.slice(1, 3, 4, 1), whole.slice(1, 0, 3, 1)], 1)
    assert np.array_equal(rolled.parts[0].row, np.roll(pixels, 1, axis=0)) and not rolled.parts[0].matrix.any()
    strided = whole.slice(1, 0, 4, 2).slice(2, 1, 4, 2)
    assert np.array_equal(strided.parts[0].row, pixels[0::2, 1::2])
    merged = PixelSelection.concat([strided, whole.slice(1, 1, 4, 2).slice(2, 0, 4, 2)], 3)
    assert merged.shape == (1, 2, 2, 16) and [p.width for p in merged.parts] == [8, 8]
    assert PixelSelection.of_view(View.row_major(Storage(2, 1, 8, 16), [1, 8, 4, 4])) is None  # NCHW


def test_a_cyclic_shift_of_pixels_is_a_copy_by_selection_products(tmp_path):
    """A roll of a computed NHWC map along its pixels (Swin's shifted windows) is a copy the format can express:
    selection products of the map's block, one MAC per output element per source row read (docs/import.md#windows).
    By hand: the 4x4 map of 8 channels is one 16-row block, so the copy is 16·16·8 MACs on top of the
    convolution's 16·48·8 and the Linear's 16·8·8."""
    class Roll(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = torch.nn.Conv2d(3, 8, 4, stride=4), torch.nn.Linear(8, 8)

        def forward(self, x):
            return self.fc(torch.roll(self.conv(x).permute(0, 2, 3, 1), shifts=1, dims=1))

    path = str(tmp_path / "roll.onnx")
    torch.onnx.export(Roll().eval(), torch.zeros(1, 3, 16, 16), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.model_macs == 16 * 48 * 8 + 16 * 8 * 8
    assert report.macs == report.model_macs + 16 * 16 * 8
    assert "Gather" in report.problem["names"]["op_kinds"]
    solve_and_verify(report.problem, tmp_path)


def test_a_roll_of_a_huge_map_is_refused_not_tabled(tmp_path):
    """The copy's tables hold one entry per pixel: a roll of a map over 2048 x 2048 pixels is refused with the
    map's size, instead of building tables a hostile file could make arbitrarily large."""
    class HugeRoll(torch.nn.Module):
        def forward(self, x):
            return torch.roll(x, shifts=1, dims=1) * 2

    path = str(tmp_path / "huge_roll.onnx")
    torch.onnx.export(HugeRoll().eval(), torch.zeros(1, 2049, 2048, 2), path, opset_version=17)
    with pytest.raises(ModelImportError, match=r"huge_roll.onnx: .*rearranging the pixels of a 2049x2048 map: "
                       r"over 4,194,304 pixels"):
        import_onnx(path, "tpu-like-core")


def test_window_attention_reads_a_map_stored_window_by_window(tmp_path):
    """Swin's window partition: 7x7 windows of a 14x14 NHWC map, attention within each window. The 49 tokens
    are padded to 56 (gcd(49, 8) = 1: docs/import.md#attention) and the map is stored window by window, each
    window a 56-row matrix, so that the partition is a view and every product runs per window with its
    padding. MACs by hand: the two Linears 4·56·8·(8 + 24), the two attention products 2·4·56·56·8."""
    class Windows(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inp, self.qkv = torch.nn.Linear(8, 8), torch.nn.Linear(8, 24)

        def forward(self, x):
            w = self.inp(x).view(1, 2, 7, 2, 7, 8).permute(0, 1, 3, 2, 4, 5).reshape(4, 49, 8)
            q, k, v = self.qkv(w).chunk(3, dim=-1)
            return (q @ k.transpose(-2, -1)).softmax(-1) @ v

    path = str(tmp_path / "windows.onnx")
    torch.onnx.export(Windows().eval(), torch.zeros(1, 14, 14, 8), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.model_macs == 196 * 8 * (8 + 24) + 2 * 4 * 49 * 49 * 8
    assert report.macs == 4 * 56 * 8 * (8 + 24) + 2 * 4 * 56 * 56 * 8
    solve_and_verify(report.problem, tmp_path)


def test_a_shifted_window_block_with_patch_merging_solves_and_verifies(tmp_path):
    """A Swin stage in miniature: patch embedding, a window block whose windows are shifted by torch.roll and
    shifted back, with a mask added to the scores (a host tensor of their shape, padded per window like
    them), a residual, then Patch Merging (four strided slices concatenated along the channels). Every
    product but the copies is the model's own, padded per window; the copies are Gather ops."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Conv2d(3, 8, 2, stride=2)
            self.norm, self.qkv, self.proj = torch.nn.LayerNorm(8), torch.nn.Linear(8, 24), torch.nn.Linear(8, 8)
            self.merge = torch.nn.Linear(32, 16)
            self.register_buffer("mask", torch.randn(4, 49, 49))

        def forward(self, image):
            x = self.embed(image).permute(0, 2, 3, 1)
            y = torch.roll(self.norm(x), shifts=(-3, -3), dims=(1, 2))
            w = y.view(1, 2, 7, 2, 7, 8).permute(0, 1, 3, 2, 4, 5).reshape(4, 49, 8)
            q, k, v = self.qkv(w).chunk(3, dim=-1)
            a = self.proj((q @ k.transpose(-2, -1) + self.mask).softmax(-1) @ v)
            a = a.view(1, 2, 2, 7, 7, 8).permute(0, 1, 3, 2, 4, 5).reshape(1, 14, 14, 8)
            x = x + torch.roll(a, shifts=(3, 3), dims=(1, 2))
            merged = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
            return self.merge(merged)

    path = str(tmp_path / "swin_block.onnx")
    torch.onnx.export(Block().eval(), torch.zeros(1, 3, 28, 28), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    problem = report.problem
    kinds = problem["names"]["op_kinds"]
    widths, heights = problem["widths"], problem["heights"]
    own = sum(heights[ins[0]] * widths[ins[0]] * widths[ins[1]]
              for ins, kind, op in zip(problem["inputs"], kinds, problem["op_types"]) if op == "MatMul" and kind != "Gather")
    # the model's products per window padded to 56 rows (4 windows of 14x14, 49 merged pixels of 7x7 padded
    # likewise, as one window)
    assert own == (4 * 56 * 12 * 8 + 4 * 56 * 8 * (24 + 8) + 2 * 4 * 56 * 56 * 8 + 56 * 32 * 16)
    assert report.macs > own and "Gather" in kinds
    solve_and_verify(problem, tmp_path)


def test_block_and_grid_partitions_of_an_nchw_map_solve_and_verify(tmp_path):
    """MaxViT in miniature: a 14x14 map stored by its convolutions in space-to-depth phases (a stride-2 pooling
    reads it), partitioned into 7x7 windows of neighbours, then into a 7x7 grid of pixels 2 apart, attention
    within each, and a 1x1 convolution after. The map is copied into each partition's order and back into the
    convolutions' (Gather ops). Every other product is the model's own, per window padded from 49 tokens to
    56 (gcd(49, 8) = 1). By hand: the image's convolution 196·12·8, per partition the qkv and output
    projections 4·56·8·(24 + 8) and the two attention products 2·4·56·56·8, and the 1x1 convolution 196·8·8."""
    def partition(x, p, grid):
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (h // p) * (w // p), p * p, c)
        return x.transpose(1, 2) if grid else x

    def departition(x, p, grid, h, w):
        x = x.transpose(1, 2) if grid else x
        b, _, _, c = x.shape
        return x.reshape(b, h // p, w // p, p, p, c).permute(0, 5, 1, 3, 2, 4).reshape(b, c, h, w)

    class MaxVitLike(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.mix = torch.nn.Conv2d(3, 8, 2, stride=2), torch.nn.Conv2d(8, 8, 1)
            self.qkv = torch.nn.ModuleList([torch.nn.Linear(8, 24) for _ in range(2)])
            self.proj = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(2)])

        def forward(self, image):
            x = self.stem(image)
            for i, (p, grid) in enumerate(((7, False), (2, True))):
                w = partition(x, p, grid)
                q, k, v = self.qkv[i](w).chunk(3, dim=-1)
                w = w + self.proj[i]((q @ k.transpose(-2, -1)).softmax(-1) @ v)
                x = departition(w, p, grid, 14, 14)
            return torch.nn.functional.max_pool2d(self.mix(x), 2)

    path = str(tmp_path / "maxvit_like.onnx")
    torch.onnx.export(MaxVitLike().eval(), torch.zeros(1, 3, 28, 28), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    problem = report.problem
    kinds, widths, heights = problem["names"]["op_kinds"], problem["widths"], problem["heights"]
    own = sum(heights[ins[0]] * widths[ins[0]] * widths[ins[1]]
              for ins, kind, op in zip(problem["inputs"], kinds, problem["op_types"]) if op == "MatMul" and kind != "Gather")
    assert own == 196 * 12 * 8 + 2 * (4 * 56 * 8 * (24 + 8) + 2 * 4 * 56 * 56 * 8) + 196 * 8 * 8
    assert "Gather" in kinds and report.macs > own
    solve_and_verify(problem, tmp_path)


def test_a_row_wise_op_per_head_reads_each_heads_columns(tmp_path):
    """Swin V2 normalizes each head's query: a row-wise op whose rows are one head's run of the projection's
    columns. Each head's block must read its own columns (it once read the first head's for every head, and
    the other heads' projection columns were never computed). MACs by hand: 8·64·64 + 2·8·8·32."""
    class PerHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(64, 64)

        def forward(self, x):
            q = torch.nn.functional.normalize(self.q(x).view(8, 2, 32).transpose(0, 1), dim=-1)
            return q @ q.transpose(-2, -1)

    path = str(tmp_path / "per_head.onnx")
    torch.onnx.export(PerHead().eval(), torch.zeros(8, 64), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.macs == report.model_macs == 8 * 64 * 64 + 2 * 8 * 8 * 32
    assert not report.problem["names"]["warnings"]
    solve_and_verify(report.problem, tmp_path)


def test_an_l2_normalization_is_one_row_wise_op(tmp_path):
    """F.normalize over the features (Swin V2's cosine attention): ReduceL2 per row, clipped, expanded to the
    row and divided by, all one row-wise Pointwise op between the two products. MACs by hand: 8·16·32 + 8·32·4."""
    class Normalized(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 4)

        def forward(self, x):
            return self.b(torch.nn.functional.normalize(self.a(x), dim=-1))

    path = str(tmp_path / "normalize.onnx")
    torch.onnx.export(Normalized().eval(), torch.zeros(8, 16), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    problem = report.problem
    assert report.macs == report.model_macs == 8 * 16 * 32 + 8 * 32 * 4
    kinds = problem["names"]["op_kinds"]
    normalizing = [i for i, kind in enumerate(kinds) if "ReduceL2" in kind]
    assert [kinds[i] for i in normalizing] == ["ReduceL2+Clip+Expand+Div"]
    assert problem["names"]["row_wise_ops"] == normalizing
    solve_and_verify(problem, tmp_path)


def test_a_network_computed_in_part_says_so(tmp_path):
    """A BERT-like classifier on its first token (an embedding, one encoder layer of d = 64, 4 heads, FFN 128,
    128 tokens): after attention only token 0's block of rows is needed, so the import computes less than
    the model. Derived by hand: the model has 6,291,584 multiply-adds (QKV 128*64*192, scores and attend
    2 * 4*128*128*16, output 128*64*64, FFN 2 * 128*64*128, classifier 64*2); with blocks of 16 rows the
    import computes K and V for all 128 rows, and Q, the scores, attend, output, FFN and classifier for 16:
    1,705,984. The warning and --json say so."""
    class FirstToken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(1000, 64)
            self.enc = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
            self.cls = torch.nn.Linear(64, 2)

        def forward(self, ids):
            return self.cls(self.enc(self.emb(ids))[:, 0])

    path = str(tmp_path / "first_token.onnx")
    torch.onnx.export(FirstToken().eval(), torch.zeros(1, 128, dtype=torch.long), path, opset_version=17)
    r = run("mlsys-import", path, "--json", "-o", str(tmp_path / "p.json"))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["model_macs"] == 128 * 64 * 192 + 2 * 4 * 128 * 128 * 16 + 128 * 64 * 64 + 2 * 128 * 64 * 128 + 64 * 2
    assert summary["macs"] == 2 * 128 * 64 * 64 + 16 * 64 * 64 + 2 * 4 * 16 * 128 * 16 + 16 * 64 * 64 + \
        2 * 16 * 64 * 128 + 16 * 64 * 2
    assert summary["partial"] is True
    assert "computes 1,705,984 of the model's 6,291,584 matrix multiply-adds (27.1 %)" in r.stderr


def test_opsets_13_and_17_give_the_same_problem(exported):
    """Opset 13 decomposes LayerNorm into nine ops; they re-fuse into one row-wise Pointwise op."""
    p13, p17 = (import_onnx(exported[("gpt2-block", o)], "tpu-like-core") for o in (13, 17))
    assert Counter(p13["names"]["op_kinds"]) == Counter(p17["names"]["op_kinds"])
    assert Counter(p17["names"]["op_kinds"])["LayerNorm"] == 2
    for key in ("widths", "heights", "inputs", "outputs", "base_costs", "op_types"):
        assert p13[key] == p17[key], key


def test_hand_written_attention_is_one_matmul_per_batch_and_head(tmp_path):
    """GPT-2 block, batch 2, 4 heads of 32 over 64 tokens: K^T in 32 x 32 squares (gcd of 64 and 32)."""
    from models.transformers import GPT2Block

    torch.manual_seed(0)
    problem = import_torch(GPT2Block(128, 4, 64), (torch.randn(2, 64, 128),), "tpu-like-core")
    kinds, names = problem["names"]["op_kinds"], problem["names"]["ops"]
    scores = [i for i, n in enumerate(names) if n.startswith("/attn/MatMul[") or n.startswith("/attn/MatMul/")]
    # per (batch, head): 2 x 2 row/column blocks of 32 tokens, each one MatMul of K = 32 (the head dimension).
    assert len(scores) == 2 * 4 * 2 * 2
    for i in scores:
        lhs, rhs = problem["inputs"][i]
        assert (problem["heights"][lhs], problem["widths"][lhs]) == (32, 32)
        assert (problem["heights"][rhs], problem["widths"][rhs]) == (32, 32)
    assert kinds.count("Transpose") == 2 * 4 * 2  # each K block of (batch, head, rows) transposed once
    assert problem["names"]["row_block"] == 32
    assert mac_count(problem) == 2 * 64 * (128 * 384 + 2 * 64 * 128 + 128 * 128 + 2 * 128 * 512)


def test_multihead_attention_module_is_split_per_head():
    """nn.MultiheadAttention (packed in_proj, need_weights=False): Q, K and V of each head are column blocks
    of the projection, never the heads folded into N."""
    from models.transformers import BertLayer

    torch.manual_seed(0)
    problem = import_torch(BertLayer(128, 4, 256), (torch.randn(1, 32, 128),), "tpu-like-core")
    proj = [i for i, n in enumerate(problem["names"]["ops"]) if "in_proj" in n or n.startswith("/attn/MatMul")]
    widths = Counter(problem["widths"][problem["outputs"][i][0]] for i in proj
                     if problem["names"]["op_kinds"][i] == "MatMul")
    assert widths[32] >= 3 * 4, widths  # Q, K, V of 4 heads of 32, each its own MatMul
    assert Counter(problem["names"]["op_kinds"])["Softmax"] == 4


def _gemm_model(path, trans_a, trans_b):
    a_shape = [48, 64] if trans_a else [64, 48]
    w_shape = [32, 48] if trans_b else [48, 32]
    w = numpy_helper.from_array(__import__("numpy").ones(w_shape, dtype="float32"), "W")
    bias = numpy_helper.from_array(__import__("numpy").ones([32], dtype="float32"), "bias")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, a_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 32])
    relu = helper.make_node("Relu", ["x"], ["xr"])
    gemm = helper.make_node("Gemm", ["xr", "W", "bias"], ["y"], transA=trans_a, transB=trans_b, name="gemm")
    graph = helper.make_graph([relu, gemm], "g", [x], [y], [w, bias])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_shape_arithmetic_evaluates_transposes_and_reshapes_with_copied_and_inferred_dims():
    """Swin's pads come through a Transpose and a Reshape of constants, and its windows through a Reshape whose
    target holds 0 (copy the input's dimension) and -1 (infer it): both evaluated, by ONNX's definitions."""
    from mlsys_sim.importer import const_eval

    def attr(node, name, default=None):
        return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)

    values = {"m": np.arange(6, dtype=np.int64).reshape(2, 3), "t": np.array([0, 8, -1, 4], dtype=np.int64)}
    transposed = const_eval.evaluate(helper.make_node("Transpose", ["m"], ["y"], perm=[1, 0]), values, {}, attr)
    assert transposed.tolist() == [[0, 3], [1, 4], [2, 5]]
    shape = const_eval.shape_of(helper.make_node("Reshape", ["x", "t"], ["y"]), {"x": (3, 64, 8)}, values, attr)
    assert shape == (3, 8, 16, 4)  # 0 copies 3; -1 is 3*64*8 / (3*8*4)
    values["t"] = np.array([5, -1], dtype=np.int64)
    assert const_eval.shape_of(helper.make_node("Reshape", ["x", "t"], ["y"]), {"x": (3, 64, 8)}, values, attr) is None


@pytest.mark.parametrize("size,padded", [(14, 14), (12, 14)])
def test_pad_amounts_computed_with_mod_are_constants(tmp_path, size, padded):
    """Swin's pad to a multiple of its window: pad = (7 - H mod 7) mod 7, computed from Shape with Mod. Evaluated,
    the Pad is a known constant: nothing when the map is a multiple of 7, else 2 rows and columns of zeros,
    which the convolution reading them takes as its own padding. Either way it imports, not refused for an
    unknown shape, with the convolution's MACs over the padded map."""
    seven = numpy_helper.from_array(np.array([7], dtype=np.int64), "seven")
    zeros = numpy_helper.from_array(np.zeros(6, dtype=np.int64), "zeros")
    w = numpy_helper.from_array(np.ones([16, 8, 1, 1], dtype="float32"), "W")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, size, size])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Shape", ["x"], ["shape"], start=3),
             helper.make_node("Mod", ["shape", "seven"], ["rest"]),
             helper.make_node("Sub", ["seven", "rest"], ["short"]),
             helper.make_node("Mod", ["short", "seven"], ["pad"]),
             helper.make_node("Concat", ["zeros", "pad", "pad"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["xp"]),
             helper.make_node("Conv", ["xp", "W"], ["y"])]
    path = str(tmp_path / "pad.onnx")
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [seven, zeros, w]),
                                opset_imports=[helper.make_opsetid("", 17)]), path)
    problem = import_onnx(path, "gpu-sm-like")
    assert problem_counts(problem)[0] == padded * padded * 8 * 16


def test_a_deep_stack_of_computed_pads_has_all_its_shapes(tmp_path):
    """Swin-S has 18 blocks, each padding its map to a multiple of its window with amounts computed from the
    shape of the block before: every block's shapes wait for the previous block's. 24 such blocks import (the
    first pads 12 to 14, the others nothing), each convolution over 14 x 14 pixels."""
    seven = numpy_helper.from_array(np.array([7], dtype=np.int64), "seven")
    zeros = numpy_helper.from_array(np.zeros(6, dtype=np.int64), "zeros")
    w = numpy_helper.from_array(np.ones([8, 8, 1, 1], dtype="float32"), "W")
    x = helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 8, 12, 12])
    y = helper.make_tensor_value_info("x24", TensorProto.FLOAT, None)
    nodes = []
    for i in range(24):
        nodes += [helper.make_node("Shape", [f"x{i}"], [f"shape{i}"], start=3),
                  helper.make_node("Mod", [f"shape{i}", "seven"], [f"rest{i}"]),
                  helper.make_node("Sub", ["seven", f"rest{i}"], [f"short{i}"]),
                  helper.make_node("Mod", [f"short{i}", "seven"], [f"pad{i}"]),
                  helper.make_node("Concat", ["zeros", f"pad{i}", f"pad{i}"], [f"pads{i}"], axis=0),
                  helper.make_node("Pad", [f"x{i}", f"pads{i}"], [f"padded{i}"]),
                  helper.make_node("Conv", [f"padded{i}", "W"], [f"x{i + 1}"])]
    path = str(tmp_path / "pads.onnx")
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [seven, zeros, w]),
                                opset_imports=[helper.make_opsetid("", 17)]), path)
    problem = import_onnx(path, "gpu-sm-like")
    assert problem_counts(problem)[0] == 24 * 14 * 14 * 8 * 8


def test_a_deep_chain_imports(tmp_path):
    """A block's request recurses through every producer above it: 600 products and ReLUs in a row (ViT-H/14's 32
    layers at 1,440 tokens went deeper than Python's default 1,000 calls). MACs by hand: 600 x 16·32·32."""
    w = numpy_helper.from_array(np.ones([32, 32], dtype="float32"), "W")
    x = helper.make_tensor_value_info("x0", TensorProto.FLOAT, [16, 32])
    y = helper.make_tensor_value_info("x600", TensorProto.FLOAT, [16, 32])
    nodes = []
    for i in range(600):
        nodes += [helper.make_node("MatMul", [f"x{i}", "W"], [f"p{i}"]),
                  helper.make_node("Relu", [f"p{i}"], [f"x{i + 1}"])]
    path = str(tmp_path / "deep.onnx")
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]),
                                opset_imports=[helper.make_opsetid("", 17)]), path)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.macs == 600 * 16 * 32 * 32 and report.ops == 1200


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm_transposes(tmp_path, trans_a, trans_b):
    path = str(tmp_path / "gemm.onnx")
    _gemm_model(path, trans_a, trans_b)
    problem = import_onnx(path, "gpu-sm-like")
    assert problem_counts(problem) == onnx_counts(path) == (64 * 48 * 32, 64 * 32, 48 * 32)
    kinds = problem["names"]["op_kinds"]
    # A transposed activation is read in square blocks (gcd(64, 48) = 16), each a Transpose op.
    assert kinds.count("Transpose") == (12 if trans_a else 0)
    assert "Add" in kinds  # the bias, a Pointwise op after the product


def test_symbolic_dimensions_must_be_pinned_and_then_match_the_static_export(tmp_path):
    from models.transformers import GPT2Block

    torch.manual_seed(0)
    module, x = GPT2Block(128, 2, 64).eval(), torch.randn(1, 64, 128)
    static, dynamic = str(tmp_path / "static.onnx"), str(tmp_path / "dynamic.onnx")
    torch.onnx.export(module, (x,), static, opset_version=17, input_names=["x"])
    torch.onnx.export(module, (x,), dynamic, opset_version=17, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}})
    with pytest.raises(ModelImportError, match=r"batch .*seq|--dim batch=N --dim seq=N"):
        import_onnx(dynamic, "tpu-like-core")
    pinned = import_onnx(dynamic, "tpu-like-core", dims={"batch": 1, "seq": 64})
    plain = import_onnx(static, "tpu-like-core")
    for key in ("widths", "heights", "inputs", "outputs", "base_costs", "op_types"):
        assert pinned[key] == plain[key], key
    assert pinned["names"]["dims"] == {"batch": 1, "seq": 64}


def test_unsupported_ops_are_listed_once_and_passthrough_is_loud(tmp_path):
    class Odd(torch.nn.Module):
        def forward(self, x):
            y = torch.cumsum(x, -1) + torch.cumsum(x + 1, -1)
            return torch.sign(y) * y

    path = str(tmp_path / "odd.onnx")
    torch.onnx.export(Odd(), (torch.randn(1, 4, 8, 8),), path, opset_version=17)
    with pytest.raises(ModelImportError) as refused:
        import_onnx(path, "tpu-like-core")
    assert "CumSum x2" in str(refused.value) and "Sign x1" in str(refused.value)
    cli = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", tmp_path / "odd.json")
    assert cli.returncode == 2 and "CumSum x2" in cli.stderr and not (tmp_path / "odd.json").exists()

    class Blocked(torch.nn.Module):  # every blocker of a model in one error, each with its node
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 6, 3, padding=1, groups=3)
            self.down = torch.nn.Conv2d(6, 8, 3, stride=3, padding=1)

        def forward(self, x):
            return torch.sign(self.down(self.stem(x)))

    path = str(tmp_path / "blocked.onnx")
    torch.onnx.export(Blocked().eval(), (torch.randn(1, 3, 16, 16),), path, opset_version=17)
    with pytest.raises(ModelImportError) as refused:
        import_onnx(path, "tpu-like-core")
    message = str(refused.value)
    assert "3 blockers" in message and "Sign x1" in message
    assert "--passthrough" in message  # Sign is an op without a rule: passthrough may lower it

    class Windows(Blocked):  # only convolutions the format cannot express: no passthrough advice
        def forward(self, x):
            return self.down(self.stem(x))

    path = str(tmp_path / "windows.onnx")
    torch.onnx.export(Windows().eval(), (torch.randn(1, 3, 16, 16),), path, opset_version=17)
    with pytest.raises(ModelImportError) as refused:
        import_onnx(path, "tpu-like-core")
    message = str(refused.value)
    assert "2 blockers," in message and "--passthrough" not in message
    assert "strides [3, 3] and dilations [1, 1] over a computed 16x16 map giving 6x6" in message
    assert "group=3, on the image" in message and "pin every" not in message and "--dim" not in message

    class Signed(torch.nn.Module):
        def forward(self, x):
            return torch.sign(x @ x)

    path = str(tmp_path / "signed.onnx")
    torch.onnx.export(Signed(), (torch.randn(32, 32),), path, opset_version=17)
    cli = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", tmp_path / "signed.json",
              "--passthrough", "Sign=3")
    assert cli.returncode == 0, cli.stderr
    assert "warning: passthrough" in cli.stderr and "Sign=3" in cli.stderr
    problem = json.loads((tmp_path / "signed.json").read_text())
    assert problem["names"]["op_kinds"] == ["MatMul", "Passthrough:Sign"]
    n_w, n_h = problem["native_granularity"]
    assert problem["base_costs"][1] == n_w * n_h * 3 / load_profile("tpu-like-core").vector_elements_per_cycle


def test_import_is_deterministic_and_costs_follow_the_profile(exported, tmp_path):
    path = exported[("gpt2-block", 17)]
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for out in (first, second):
        assert run("mlsys-import", path, "--hardware", "gpu-sm-like", "-o", out).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    problem = json.loads(first.read_text())
    profile = load_profile("gpu-sm-like")
    assert problem["fast_memory_capacity"] == 167936 // 2 and problem["slow_memory_bandwidth"] == 5
    assert problem["native_granularity"] == [64, 64]
    for op, kind, ins, cost in zip(problem["op_types"], problem["names"]["op_kinds"], problem["inputs"],
                                   problem["base_costs"]):
        if kind == "MatMul":  # a native 64 x 64 tile over the whole reduction, at 1,024 MACs per cycle
            assert cost == 64 * 64 * problem["widths"][ins[0]] / 1024
    assert profile.matmul_cost(128) == 512


@pytest.mark.parametrize("content,message", [
    (b"not a protobuf at all", "not an ONNX model"),
    (b"", r"not an ONNX model \(an empty file\)"),
])
def test_bad_model_files_exit_2_naming_the_file(tmp_path, content, message):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    result = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", tmp_path / "out.json")
    assert result.returncode == 2
    assert str(path) in result.stderr
    import re

    assert re.search(message, result.stderr), result.stderr


def test_bad_profiles_and_arguments_exit_2(tmp_path, exported):
    path = exported[("small-cnn", 17)]
    profile = tmp_path / "hw.json"
    profile.write_text(json.dumps({"name": "x", "native_tile": [16, 16], "matrix_macs_per_cycle": -1}))
    result = run("mlsys-import", path, "--hardware", profile, "-o", tmp_path / "o.json")
    assert result.returncode == 2 and "missing" in result.stderr
    result = run("mlsys-import", path, "--hardware", "no-such-preset", "-o", tmp_path / "o.json")
    assert result.returncode == 2 and "preset" in result.stderr
    result = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", tmp_path / "o.json", "--dim", "seq")
    assert result.returncode == 2 and "NAME=VALUE" in result.stderr
    result = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", tmp_path / "o.json", "--dim", "seq=4")
    assert result.returncode == 2 and "no input of the model has such a dimension" in result.stderr


def _matmul_model(path, rows, nodes=None):
    import numpy

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 8])
    w = numpy_helper.from_array(numpy.ones([8, 8], dtype="float32"), "W")
    nodes = nodes or [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_hostile_models_are_refused_with_their_reason(tmp_path):
    cyclic = str(tmp_path / "cycle.onnx")
    _matmul_model(cyclic, 8, [helper.make_node("Add", ["x", "z"], ["z2"], name="first"),
                              helper.make_node("Relu", ["z2"], ["z"], name="second"),
                              helper.make_node("MatMul", ["z", "W"], ["y"], name="mm")])
    with pytest.raises(ModelImportError, match="first|topologically|shape inference"):
        import_onnx(cyclic, "tpu-like-core")
    huge = str(tmp_path / "huge.onnx")
    _matmul_model(huge, 2 ** 31)
    with pytest.raises(ModelImportError, match=r"2\^30"):
        import_onnx(huge, "tpu-like-core")
    slow = {"name": "slow", "native_tile": [8, 8], "matrix_macs_per_cycle": 1e-14, "vector_elements_per_cycle": 1,
            "fast_memory_bytes": 4096, "slow_memory_bytes_per_cycle": 1, "bytes_per_element": 2}
    with pytest.raises(ModelImportError, match=r"1e\+?15"):
        import_onnx(_small_model(tmp_path), slow)


def _small_model(tmp_path):
    path = str(tmp_path / "small.onnx")
    _matmul_model(path, 8)
    return path


def test_the_package_level_functions_are_the_importer(tmp_path):
    import mlsys_sim

    path = _small_model(tmp_path)
    assert mlsys_sim.import_onnx(path, "ipu-like-tile") == import_onnx(path, "ipu-like-tile")
    problem = mlsys_sim.import_onnx(path, "ipu-like-tile")
    assert problem["native_granularity"] == [16, 16] and problem["fast_memory_capacity"] == 638976 // 2
    assert mac_count(problem) == 8 * 8 * 8


def test_weights_stored_as_external_data_are_not_needed(exported, tmp_path):
    """Only shapes matter: a model whose weights live in a separate file imports without that file."""
    model = onnx.load(exported[("gpt2-block", 17)])
    path = tmp_path / "external.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    (tmp_path / "weights.bin").unlink()
    assert path.stat().st_size < 200_000  # the graph without its weights
    problem = import_onnx(str(path), "tpu-like-core")
    reference = import_onnx(exported[("gpt2-block", 17)], "tpu-like-core")
    for key in ("widths", "heights", "inputs", "outputs", "base_costs", "op_types"):
        assert problem[key] == reference[key], key


def test_profile_numbers_can_be_overridden_on_the_command_line(exported, tmp_path):
    """'What does 4 MiB of SRAM and twice the bandwidth do?': --set changes the machine, not the ops' kinds."""
    path = exported[("gpt2-block", 17)]
    out = tmp_path / "p.json"
    result = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", out, "--set", "fast_memory_bytes=4194304",
                 "--set", "slow_memory_bytes_per_cycle=1170")
    assert result.returncode == 0, result.stderr
    problem = json.loads(out.read_text())
    assert problem["fast_memory_capacity"] == 4194304 // 2 and problem["slow_memory_bandwidth"] == 1170 / 2
    assert problem["names"]["hardware"] == ("tpu-like-core+fast_memory_bytes=4194304,"
                                            "slow_memory_bytes_per_cycle=1170")
    assert problem["op_types"] == import_onnx(path, "tpu-like-core")["op_types"]
    bad = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", out, "--set", "native_tile=8")
    assert bad.returncode == 2 and "not a number of the profile" in bad.stderr
    bad = run("mlsys-import", path, "--hardware", "tpu-like-core", "-o", out, "--set", "bytes_per_element=0.5")
    assert bad.returncode == 2


def test_command_line_defaults_writes_stdout_and_usual_permissions(tmp_path):
    """Issue 40: a default profile (tpu-like-core), -o - for stdout, files readable by others (0666 less the
    umask, not mkstemp's 0600)."""
    path = _small_model(tmp_path)
    result = run("mlsys-import", path, "-o", "-")
    assert result.returncode == 0, result.stderr
    problem = json.loads(result.stdout)
    assert problem["names"]["hardware"] == "tpu-like-core"
    assert problem == import_onnx(path, "tpu-like-core")
    assert run("mlsys-import", path, "-o", "-", "--json").returncode == 2  # the summary would mix in
    old = os.umask(0o022)
    try:
        out = tmp_path / "p.json"
        assert run("mlsys-import", path, "-o", out).returncode == 0
        assert os.stat(out).st_mode & 0o777 == 0o644
    finally:
        os.umask(old)
    wrong = run("mlsys-import", path, "--hardware", "no-such-preset", "-o", "-")
    assert wrong.returncode == 2
    assert all(name in wrong.stderr for name in ("tpu-like-core", "ipu-like-tile", "gpu-sm-like"))


def test_unpinned_dimensions_are_named_in_the_callers_syntax(tmp_path):
    path = str(tmp_path / "dynamic.onnx")
    _matmul_model(path, "batch")
    with pytest.raises(ModelImportError) as caught:
        import_onnx(path, "tpu-like-core")
    assert 'dims={"batch": N}' in str(caught.value) and "--dim" not in str(caught.value)
    with pytest.raises(ModelImportError, match=r"dims seq: no input"):
        import_onnx(path, "tpu-like-core", dims={"batch": 2, "seq": 4})
    cli = run("mlsys-import", path, "-o", tmp_path / "o.json")
    assert cli.returncode == 2 and "--dim batch=N" in cli.stderr
    assert import_onnx(path, "tpu-like-core", dims={"batch": 4})["heights"][0] == 4


def test_import_torch_works_under_no_grad():
    """torch.no_grad() would send nn.TransformerEncoderLayer down its fused path, which torch 1.13 cannot
    export: the export turns gradients on itself, and gives the same problem."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
    x = torch.randn(1, 8, 32)
    plain = import_torch(layer, (x,), "tpu-like-core")
    with torch.no_grad():
        quiet = import_torch(layer, (x,), "tpu-like-core")
        assert not torch.is_grad_enabled()  # the caller's mode is back
    assert quiet == plain


def test_passthrough_must_keep_the_shape(tmp_path):
    """--passthrough lowers an op as a Pointwise op, which keeps its input's shape: a SpaceToDepth that
    reshapes the map is refused naming that node and both shapes, not a node the importer made; an op the
    importer lowers itself (MaxPool) cannot be passed through."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=2)
    path = tmp_path / "s2d.onnx"
    onnx.save(helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]),
              str(path))
    with pytest.raises(ModelImportError) as caught:
        import_onnx(str(path), "tpu-like-core", passthrough={"SpaceToDepth": 1})
    message = str(caught.value)
    assert "SpaceToDepth node 's2d'" in message and "(1, 8, 16, 16) to (1, 32, 8, 8)" in message
    with pytest.raises(ModelImportError, match="MaxPool: the importer lowers these itself"):
        import_onnx(str(path), "tpu-like-core", passthrough={"MaxPool": 1})


def test_einsum_matrix_products_import_as_matmuls(tmp_path):
    """Einsums that are matrix products (attention written as bhid,bhjd->bhij and bhij,bhjd->bhid) import with
    the products' exact MACs, for the graph lowering and the T10 one; another Einsum is named as unsupported."""
    from mlsys_sim.importer.t10_lowering import import_onnx_t10

    shape = [2, 4, 8, 16]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("q", "k", "v")]
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, shape)
    nodes = [helper.make_node("Einsum", ["q", "k"], ["s"], name="scores", equation="bhid,bhjd->bhij"),
             helper.make_node("Einsum", ["s", "v"], ["o"], name="context", equation="bhij,bhjd->bhid")]
    path = tmp_path / "einsum.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", ins, [out]), opset_imports=[helper.make_opsetid("", 17)]),
              str(path))
    assert mac_count(import_onnx(str(path), "tpu-like-core")) == 2 * (2 * 4 * 8 * 8 * 16)
    ops = import_onnx_t10(str(path))["t10_program"]["ops"]
    assert [(o["batch"], o["m"], o["k"], o["n"]) for o in ops] == [(8, 8, 16, 8), (8, 8, 8, 16)]

    nodes = [helper.make_node("Einsum", ["q", "k"], ["o"], name="diagonal", equation="bhid,bhid->bhid")]
    path = tmp_path / "other.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", ins[:2], [out]),
                                opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ModelImportError, match="Einsum node 'diagonal'") as refused:
        import_onnx(str(path), "tpu-like-core")
    assert "'bhid,bhid->bhid' is not a matrix product" in str(refused.value)
    assert "'...ij,jk->...ik'" in str(refused.value)  # the forms that import

    # An activation times a weight (bsd,de->bse): the MatMul it is, broadcast over the batch letters.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 32])
    w = numpy_helper.from_array(np.ones((16, 32), dtype=np.float32), "w")
    nodes = [helper.make_node("Einsum", ["x", "w"], ["y"], name="proj", equation="bsd,de->bse")]
    path = tmp_path / "weight.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]),
                                opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert mac_count(import_onnx(str(path), "tpu-like-core")) == 2 * 8 * 16 * 32


def test_a_value_cut_differently_by_its_consumers_is_computed_once(tmp_path):
    """h = LN(x)·W1 feeds a residual Add (whole rows) and h·xᵀ (column blocks, for xᵀ's square transposes):
    the import cuts h, and the Add, into the blocks common to both, so the MACs are the two products' and no
    more (before, h was computed whole and again as two column blocks: +S·D·D MACs)."""
    s, d = 128, 256
    inits = [numpy_helper.from_array(np.ones(d, np.float32), "g"), numpy_helper.from_array(np.zeros(d, np.float32), "b"),
             numpy_helper.from_array(np.ones((d, d), np.float32), "W1")]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], name="ln", axis=-1),
             helper.make_node("MatMul", ["ln", "W1"], ["h"], name="proj"),
             helper.make_node("Add", ["h", "x"], ["y"], name="residual"),
             helper.make_node("Transpose", ["x"], ["xt"], name="xt", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["h", "xt"], ["scores"], name="scores")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, s, d]),
                               helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, s, s])], inits)
    path = tmp_path / "shared.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    report = import_onnx(str(path), "tpu-like-core", report=True)
    assert report.macs == s * d * d + s * d * s
    assert not any("computed twice" in w for w in report.warnings)
    names = report.problem["names"]["ops"]
    # every element of h and of the residual sum is produced by exactly one op
    produced = Counter()
    for op, outs in zip(names, report.problem["outputs"]):
        if op.startswith(("proj", "residual")):
            produced[op.split("[")[0]] += sum(report.problem["widths"][t] * report.problem["heights"][t] for t in outs)
    assert produced == {"proj": s * d, "residual": s * d}


def _torch_counts(module, image):
    """What the network computes, counted from PyTorch's own module calls (independently of the importer):
    dense convolution and Linear MACs, depthwise outputs and taps, max-pool outputs, and the elements the
    global average pool reads (the importer's one documented extra: a mean is a MatMul by an averaging row)."""
    counts = Counter()

    def hook(m, inputs, out):
        if isinstance(m, torch.nn.Conv2d):
            taps = m.kernel_size[0] * m.kernel_size[1]
            if m.groups == 1:
                counts["dense"] += out.numel() * m.in_channels * taps
            else:
                counts["depthwise outputs"] += out.numel()
                counts["depthwise taps"] = taps
        elif isinstance(m, torch.nn.Linear):
            counts["dense"] += out.numel() * m.in_features
        elif isinstance(m, torch.nn.MaxPool2d):
            counts["maxpool outputs"] += out.numel()
        elif isinstance(m, torch.nn.AdaptiveAvgPool2d):
            counts["pooled"] += inputs[0].numel()

    hooks = [m.register_forward_hook(hook) for m in module.modules()]
    if not any(isinstance(m, torch.nn.AdaptiveAvgPool2d) for m in module.modules()):
        # MobileNetV2 pools with the functional call after its `features`, ShuffleNetV2 after its `conv5`
        last = module.features if hasattr(module, "features") else module.conv5
        hooks.append(last.register_forward_hook(lambda m, i, out: counts.update(pooled=out.numel())))
    with torch.no_grad():
        module(image)
    for h in hooks:
        h.remove()
    return counts


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2", "shufflenet_v2_x0_5"])
def test_torchvision_networks_import_solve_and_verify(name, tmp_path):
    """torchvision's ResNet-18, ResNet-50, MobileNetV2 and ShuffleNetV2 x0.5 (224x224, random weights): stride-2
    convolutions and MaxPool read space-to-depth phases, depthwise convolutions are vector ops, channel shuffles
    move no data; MatMul MACs are the network's dense
    convolution and Linear MACs plus the pooled elements, each element of the window ops' outputs is produced
    once, nothing is computed twice, and the schedule verifies --strict (ViT-B/16 and the timings are in
    bench/zoo; its padding is checked on a small ViT below)."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    module, image = getattr(torchvision.models, name)(weights=None).eval(), torch.randn(1, 3, 224, 224)
    path = tmp_path / f"{name}.onnx"
    torch.onnx.export(module, image, str(path), opset_version=17, do_constant_folding=True)
    expected = _torch_counts(module, image)
    report = import_onnx(str(path), "tpu-like-core", report=True)
    problem = report.problem
    assert report.macs == expected["dense"] + expected["pooled"]
    assert report.ops < 20_000
    assert not report.warnings
    elements = Counter()
    for kind, outs in zip(problem["names"]["op_kinds"], problem["outputs"]):
        elements[kind] += sum(problem["widths"][t] * problem["heights"][t] for t in outs)
    assert elements["DepthwiseConv"] == expected["depthwise outputs"]
    assert elements["MaxPool"] == expected["maxpool outputs"]
    if expected["depthwise outputs"]:
        profile = load_profile("tpu-like-core")
        costs = {c for c, k in zip(problem["base_costs"], problem["names"]["op_kinds"]) if k == "DepthwiseConv"}
        assert costs == {profile.pointwise_cost(["Mul", "Add"] * expected["depthwise taps"])}
    solve_and_verify(problem, tmp_path)


def test_stride_two_windows_read_space_to_depth_phases(tmp_path):
    """A stride-2 average pool, 3x3 convolution and max pool over computed maps: each kernel offset reads
    the phase of its parity, whose shape is the output's, so each output element is produced once and the
    convolution's MACs are its 9 taps' (16x16 -> 8x8 -> 4x4 -> 2x2)."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.down = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)

        def forward(self, x):
            y = torch.nn.functional.avg_pool2d(torch.relu(self.stem(x)), 2)
            return torch.nn.functional.max_pool2d(self.down(y), 3, stride=2, padding=1)

    path = str(tmp_path / "windows.onnx")
    torch.onnx.export(Net().eval(), (torch.randn(1, 3, 16, 16),), path, opset_version=17)
    problem = import_onnx(path, "tpu-like-core")
    assert mac_count(problem) == 16 * 16 * 27 * 8 + 4 * 4 * 9 * 8 * 16
    kinds = problem["names"]["op_kinds"]
    produced = Counter()
    for kind, ins, outs in zip(kinds, problem["inputs"], problem["outputs"]):
        produced[kind] += sum(problem["widths"][t] * problem["heights"][t] for t in outs)
        if kind in ("AveragePool", "MaxPool"):
            assert len(ins) == 4  # a 2x2 window and a 3x3 one both touch the four phases
    assert produced["AveragePool"] == 8 * 8 * 8 and produced["MaxPool"] == 2 * 2 * 16
    weights = load_profile("tpu-like-core")
    costs = dict(zip(kinds, problem["base_costs"]))
    assert costs["AveragePool"] == weights.pointwise_cost(["Add"] * 3 + ["Mul"])
    assert costs["MaxPool"] == weights.pointwise_cost(["Max"] * 8)


@pytest.mark.parametrize("classes", [10, 34])
def test_vision_transformer_pads_its_tokens_and_concats_the_class_token(tmp_path, classes):
    """torchvision's VisionTransformer at 64x64, patches of 16: 16 patches and the class token make 17 tokens,
    and gcd(17, head 64) = 1 would cut every token tensor into single rows. The sequence is padded to 64 (one
    block of the head dimension), the class token joins the patches through selection MatMuls, and x[:, 0]
    reads its 64-row block. MACs, derived by hand from docs/import.md#attention and #concat: the patch
    convolution on 16 rows, the two selections (1 and 16 rows into 64), per layer QKV, scores, P·V, output
    projection and MLP on 64 rows, and the classifier on 64 rows. 34 classes, a multiple of the 17 tokens, once
    read as a batch folded into the rows and refused (ViT-B/32: 1,000 classes over 50 tokens)."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    tokens, padded, d, heads, mlp, layers = 17, 64, 128, 2, 256, 2
    module = torchvision.models.VisionTransformer(image_size=64, patch_size=16, num_layers=layers, num_heads=heads,
                                                  hidden_dim=d, mlp_dim=mlp, num_classes=classes).eval()
    path = tmp_path / "vit.onnx"
    torch.onnx.export(module, torch.randn(1, 3, 64, 64), str(path), opset_version=17, do_constant_folding=True)
    report = import_onnx(str(path), "tpu-like-core", report=True)
    head = d // heads
    per_layer = (padded * d * 3 * d + heads * padded * head * padded + heads * padded * padded * head
                 + padded * d * d + 2 * padded * d * mlp)
    expected = (16 * (3 * 16 * 16) * d + padded * 1 * d + padded * 16 * d + layers * per_layer
                + padded * d * classes)
    assert report.macs == expected
    problem = report.problem
    assert problem["names"]["row_block"] == padded
    assert {problem["heights"][t] for outs in problem["outputs"] for t in outs} <= {16, padded}
    assert report.ops < 200 * layers
    assert [w for w in report.warnings if "computed twice" in w] == []
    assert any("index 0 is read as rows 0:64" in w for w in report.warnings)
    solve_and_verify(problem, tmp_path)


def test_concat_and_split_along_features_move_no_data(tmp_path):
    """Concat and Split along the features (a token tensor's last axis, a map's channels) are blocks of their
    parts: the MACs are the Linears' and convolutions' only, and no selection MatMul appears."""
    class Tokens(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(64, 32), torch.nn.Linear(64, 96)
            self.mix, self.up = torch.nn.Linear(128, 64), torch.nn.Linear(64, 128)
            self.left, self.right = torch.nn.Linear(32, 16), torch.nn.Linear(96, 16)

        def forward(self, x):
            y = self.mix(torch.cat([self.a(x), torch.relu(self.b(x))], dim=-1))
            p, q = torch.split(self.up(y), [32, 96], dim=-1)
            return self.left(p) + self.right(q)

    class Maps(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.one, self.three = torch.nn.Conv2d(16, 8, 1), torch.nn.Conv2d(16, 24, 3, padding=1)
            self.out = torch.nn.Conv2d(32, 8, 1)

        def forward(self, x):
            s = torch.relu(self.stem(x))
            return self.out(torch.cat([self.one(s), self.three(s)], dim=1))

    for module, example, macs in (
            (Tokens(), torch.randn(1, 32, 64), 32 * (64 * 32 + 64 * 96 + 128 * 64 + 64 * 128 + 32 * 16 + 96 * 16)),
            (Maps(), torch.randn(1, 3, 8, 8), 64 * (27 * 16 + 16 * 8 + 9 * 16 * 24 + 32 * 8))):
        path = tmp_path / f"{type(module).__name__}.onnx"
        torch.onnx.export(module.eval(), example, str(path), opset_version=17)
        problem = import_onnx(str(path), "tpu-like-core")
        assert mac_count(problem) == macs, type(module).__name__
        assert "Concat" not in problem["names"]["op_kinds"]


def test_too_many_ops_predicts_the_count_and_names_the_blocks(tmp_path):
    """Over --max-ops, the error gives the op count the problem would have and how its token rows are cut."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(128, 2, 256, batch_first=True).eval()
    path = tmp_path / "layer.onnx"
    torch.onnx.export(layer, torch.randn(1, 100, 128), str(path), opset_version=17)
    full = import_onnx(str(path), "tpu-like-core", report=True)
    with pytest.raises(ModelImportError) as caught:
        import_onnx(str(path), "tpu-like-core", max_ops=full.ops - 1)
    message = str(caught.value)
    assert f"would have {full.ops:,} ops, over --max-ops {full.ops - 1:,}" in message
    assert "blocks of 64 (the sequence of 100 padded to 128)" in message
    with pytest.raises(ModelImportError, match=f"more than {5 * 10:,} ops, over --max-ops 10"):
        import_onnx(str(path), "tpu-like-core", max_ops=10)


def test_the_prediction_of_a_refused_size_stops_at_its_deadline(tmp_path, monkeypatch):
    """The count behind an op-count refusal comes from a second walk up to 5x the limit; that walk has a
    deadline (GraphLowering.PREDICTION_SECONDS), so refusing never takes much longer than reaching the limit.
    With time, it gives the exact count; with none left, the walk stops at its first check (every 1,024 ops)
    and the refusal says "more than" the limit, never a count below it."""
    from mlsys_sim.importer.lowering import GraphLowering

    layer = torch.nn.TransformerEncoderLayer(128, 2, 256, batch_first=True).eval()
    path = tmp_path / "layer.onnx"
    torch.onnx.export(layer, torch.randn(1, 1536, 128), str(path), opset_version=17)
    full = import_onnx(str(path), "tpu-like-core", report=True)
    assert full.ops > 2048
    with pytest.raises(ModelImportError, match=f"would have {full.ops:,} ops, over --max-ops 2,000"):
        import_onnx(str(path), "tpu-like-core", max_ops=2000)
    monkeypatch.setattr(GraphLowering, "PREDICTION_SECONDS", 0.0)
    with pytest.raises(ModelImportError, match=r"would have more than 2,000 ops, over --max-ops 2,000"):
        import_onnx(str(path), "tpu-like-core", max_ops=2000)


@pytest.mark.parametrize("attributes, message", [
    ({"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1]}, "pads"),
    ({"kernel_shape": [2, 2, 2], "strides": [2, 2]}, "kernel"),
    ({"kernel_shape": [3, 3], "strides": [3, 3]}, "strides [3, 3]"),
])
def test_malformed_windows_are_refused_naming_the_node(tmp_path, attributes, message):
    """A MaxPool over a computed map with attributes the format (or ONNX) cannot take: refused with exit 2,
    naming the node (or ONNX's shape inference naming it) and why, never a Python traceback."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], name="pool", **attributes)]
    path = tmp_path / "pool.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]),
              str(path))
    cli = run("mlsys-import", path, "-o", tmp_path / "p.json")
    assert cli.returncode == 2 and "pool" in cli.stderr and message in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stderr and not (tmp_path / "p.json").exists()


def test_dense_concatenation_is_cut_at_its_parts_up_to_the_classifier(tmp_path):
    """DenseNet's pattern: every layer reads the channel concat of all earlier features, and the last concat
    goes through BatchNorm, ReLU and global pooling to a classifier. Every reader cuts the concat at its parts
    (the pooling too), so no part is taken whole by a selection and nothing is computed twice: MACs are the
    convolutions', the pooled elements and the classifier's, exactly."""
    class Dense(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 32, 3, padding=1)
            self.layers = torch.nn.ModuleList(torch.nn.Conv2d(32 + 16 * i, 16, 1) for i in range(3))
            self.norm, self.fc = torch.nn.BatchNorm2d(80), torch.nn.Linear(80, 10)

        def forward(self, x):
            features = [self.stem(x)]
            for layer in self.layers:
                features.append(layer(torch.relu(torch.cat(features, 1))))
            y = torch.relu(self.norm(torch.cat(features, 1)))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))

    path = str(tmp_path / "dense.onnx")
    torch.onnx.export(Dense().eval(), torch.randn(1, 3, 8, 8), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    pixels = 64
    assert report.macs == pixels * (27 * 32 + 32 * 16 + 48 * 16 + 64 * 16) + pixels * 80 + 80 * 10
    assert report.warnings == [] and "Concat" not in report.problem["names"]["op_kinds"]


def test_squeeze_and_excite_broadcasts_its_gate_by_a_matmul_of_ones(tmp_path):
    """Squeeze-and-excite (MobileNetV3, EfficientNet): the pooled, gated [1, C, 1, 1] scales every pixel of
    the [1, C, H, W] map. The gate is spread over the map's rows by a MatMul of a column of ones by it (K = 1,
    one MAC per element), so that the scaling is a Pointwise op of one shape. MACs: the two convolutions, the
    pooled elements, the two 1x1 gate convolutions on one pixel, and the broadcast, exactly."""
    class SqueezeExcite(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.conv = torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.Conv2d(32, 32, 3, padding=1)
            self.fc1, self.fc2 = torch.nn.Conv2d(32, 8, 1), torch.nn.Conv2d(8, 32, 1)

        def forward(self, x):
            y = torch.relu(self.conv(torch.relu(self.stem(x))))
            gate = torch.sigmoid(self.fc2(torch.relu(self.fc1(torch.nn.functional.adaptive_avg_pool2d(y, 1)))))
            return y * gate

    path = str(tmp_path / "se.onnx")
    torch.onnx.export(SqueezeExcite().eval(), torch.randn(1, 3, 16, 16), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    pixels = 256
    assert report.macs == pixels * (27 * 32 + 9 * 32 * 32) + pixels * 32 + 32 * 8 + 8 * 32 + pixels * 32
    kinds = report.problem["names"]["op_kinds"]
    assert kinds.count("Broadcast") == 1 and report.warnings == []
    solve_and_verify(report.problem, tmp_path)


def test_grouped_convolutions_run_per_group(tmp_path):
    """A grouped 3x3 convolution (ResNeXt's, here 4 groups of 8 channels) on a computed map, stride 1 and 2:
    every output block lies in one group and reads only its group's input channels, so the MACs are
    pixels x 9 x 8 x 32 for each, not the dense convolution's four times as many. The model's own count (what
    a partial import is measured against) counts them alike."""
    class Grouped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 32, 3, padding=1)
            self.grouped = torch.nn.Conv2d(32, 32, 3, padding=1, groups=4)
            self.down = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=4)

        def forward(self, x):
            return self.down(torch.relu(self.grouped(torch.relu(self.stem(x)))))

    path = str(tmp_path / "grouped.onnx")
    torch.onnx.export(Grouped().eval(), torch.randn(1, 3, 16, 16), path, opset_version=17)
    report = import_onnx(path, "tpu-like-core", report=True)
    assert report.macs == report.model_macs == 256 * 27 * 32 + 256 * 9 * 8 * 32 + 64 * 9 * 8 * 32
    problem = report.problem
    for name, outs in zip(problem["names"]["ops"], problem["outputs"]):
        if name.startswith(("/grouped", "/down")) and "sum" not in name:
            assert all(problem["widths"][t] == 8 for t in outs), name
    solve_and_verify(problem, tmp_path)
