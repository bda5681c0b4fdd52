"""The body of bench/structure-gaps (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build/release")
parser.add_argument("--fast-memory-bytes", type=int, default=262144)
parser.add_argument("--exhaustive-timeout", type=float, default=300)
args = parser.parse_args()
build = os.path.abspath(args.build)
sys.path.insert(0, os.path.join(build, "python"))

import torch  # noqa: E402

from mlsys_sim.importer import import_onnx  # noqa: E402
from mlsys_sim.importer.cli import problem_text  # noqa: E402
from mlsys_sim.importer.profiles import load_profile, override_profile  # noqa: E402

MARKER = "<!-- structure gaps -->"
nn = torch.nn


class Chain(nn.Module):  # three dependent products: links through Pointwise ops
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(256, 256), nn.Linear(256, 256), nn.Linear(256, 256)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class Residual(nn.Module):  # an MLP whose input is read again by the residual add (mixed readers)
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(256, 512), nn.Linear(512, 256)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


class AttentionHead(nn.Module):  # one head: q, k, v from one input, K^T in square blocks, softmax, P V
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(128, 64), nn.Linear(128, 64), nn.Linear(128, 64)

    def forward(self, x):
        s = self.q(x) @ self.k(x).transpose(-1, -2) / 8.0
        return torch.softmax(s, dim=-1) @ self.v(x)


class FanIn(nn.Module):  # four products of one input summed (siblings sharing an operand, one reader)
    def __init__(self):
        super().__init__()
        self.branches = nn.ModuleList(nn.Linear(256, 256, bias=False) for _ in range(4))

    def forward(self, x):
        return sum(b(x) for b in self.branches)


class Convolution(nn.Module):  # a 3x3 convolution on a computed map: 9 offset products and their sum
    def __init__(self):
        super().__init__()
        self.stem, self.conv = nn.Conv2d(3, 64, 3, padding=1), nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x):
        return self.conv(torch.relu(self.stem(x)))


class Strided(nn.Module):  # a stride-2 3x3 convolution reading the four space-to-depth phases
    def __init__(self):
        super().__init__()
        self.stem, self.down = nn.Conv2d(3, 64, 3, padding=1), nn.Conv2d(64, 128, 3, stride=2, padding=1)

    def forward(self, x):
        return self.down(torch.relu(self.stem(x)))


STRUCTURES = [
    ("chain", "3 Linear 256x256 with ReLU, 256 tokens", Chain(), torch.randn(1, 256, 256)),
    ("residual", "x + W2 GELU(W1 x), 256 -> 512 -> 256, 256 tokens", Residual(), torch.randn(1, 256, 256)),
    ("attention head", "one head, 128 tokens, d = 128, head 64", AttentionHead(), torch.randn(1, 128, 128)),
    ("fan-in", "4 products of one 256x256 input, summed", FanIn(), torch.randn(1, 256, 256)),
    ("convolution", "3x3, 64 -> 64 channels on a computed 16x16 map", Convolution(), torch.randn(1, 3, 16, 16)),
    ("strided convolution", "3x3 stride 2, 64 -> 128 channels, 32x32 -> 16x16", Strided(),
     torch.randn(1, 3, 32, 32)),
]


def run(*command):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


profile = override_profile(load_profile("tpu-like-core"), {"fast_memory_bytes": args.fast_memory_bytes})
rows = []
with tempfile.TemporaryDirectory() as work:
    for name, what, module, example in STRUCTURES:
        print(f"structure-gaps: {name}", file=sys.stderr, flush=True)
        onnx_path = os.path.join(work, "m.onnx")
        torch.onnx.export(module.eval(), example, onnx_path, opset_version=17)
        problem = os.path.join(work, name.replace(" ", "-") + ".json")
        with open(problem, "w") as f:
            f.write(problem_text(import_onnx(onnx_path, profile)))
        ops = len(json.load(open(problem))["op_types"])
        bound = json.loads(run(os.path.join(build, "bound"), problem, "--json").stdout)
        results = {}
        for mode, extra in (("timed", ["--timeout", "5"]),
                            ("exhaustive", ["--exhaustive", "--timeout", args.exhaustive_timeout])):
            stats = os.path.join(work, mode + ".stats.json")
            out = run(os.path.join(build, "mlsys"), problem, os.path.join(work, mode + ".json"), *extra,
                      "--json-stats", stats)
            results[mode] = json.load(open(stats)) if out.returncode == 0 else {"cost": None}
        rows.append((name, what, ops, bound, results))



def raises(theorem):
    """Whether the theorem's bound is the largest on some row (it stands above the others)."""
    names = ("inner_k_steps", "deep_weights", "head_discounts", "tail_runs", "exposed_epilogues")
    return any(bound[theorem]["bound"] > max([bound["lambda_bound"]] + [bound[n]["bound"] for n in names
                                                                         if n != theorem]) * (1 + 1e-9)
               for _, _, _, bound, _ in rows)


def rows_raised(theorem):
    return "it raises some rows" if raises(theorem) else "it raises no row here"


lines = [MARKER, "", "### Where the bound and where the search are loose, by graph structure", "",
         "Produced by `bench/structure-gaps`: one small network per structure, imported on `tpu-like-core` with "
         f"{args.fast_memory_bytes:,} bytes of fast memory (so that capacity and retention matter), then "
         "`bound --json`, `mlsys --timeout 5` and `mlsys --exhaustive` (every grouping, retention subset, tile "
         "count and k; no recomputation). Where the exhaustive search completes, its optimum splits the proven "
         "gap in two: the bound's part (exhaustive optimum over the certified bound; the true optimum, which may "
         "recompute, lies between them) and the search's part (the timed search over the exhaustive optimum).", "",
         "The certified bound is the largest of the lambda bound, the inner k-step bound "
         "(docs/bounds.md#theorem-11; never the largest on these networks), the deep-weight bound "
         f"(docs/bounds.md#theorem-12), the head-discount bound (docs/bounds.md#theorem-13; "
         f"{rows_raised('head_discounts')}), the tail-run bound (docs/bounds.md#theorem-14; "
         f"{rows_raised('tail_runs')}), the exposed-epilogue bound (docs/bounds.md#theorem-15; "
         f"{rows_raised('exposed_epilogues')}) and the cover bound (docs/bounds.md#theorem-6); the lambda and cover "
         "bounds are shown.", "",
         "| structure | network | ops | section 8 | lambda bound | cover bound | certified bound | exhaustive optimum "
         "| complete | timed search | proven gap | bound's part | search's part |",
         "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
for name, what, ops, bound, results in rows:
    certified = bound["bound"]
    section8 = bound["rule_book_bound"]
    exhaustive, timed = results["exhaustive"].get("cost"), results["timed"].get("cost")
    # Complete: every grouping walked, or the certified bound met first (then the result is optimal outright).
    complete = (results["exhaustive"].get("exhaustive_complete", False)
                or results["exhaustive"].get("stopped_by") == "certified bound")
    pct = lambda a, b: f"{100 * (a / b - 1):.1f} %" if a and b else "-"  # noqa: E731
    lam = bound.get("lambda_bound", certified)
    cover = bound.get("cover", {})
    cover_text = f"{cover['bound']:,.1f}" if cover.get("attempted") else "-"
    lines.append(f"| {name} | {what} | {ops} | {section8:,.1f} | {lam:,.1f} | {cover_text} | {certified:,.1f} | "
                 f"{exhaustive:,.1f} | {'yes' if complete else 'no'} | {timed:,.1f} | {pct(timed, certified)} | "
                 f"{pct(exhaustive, certified) if complete else '-'} | {pct(timed, exhaustive) if complete else '-'} |")
section = "\n".join(lines) + "\n"
path = "docs/bounds.md"
text = open(path).read()
head, _, tail = text.partition(MARKER)
# Replace the generated part (up to the table's last row) and keep what follows: notes on the table, then the
# next sections.
old_lines = tail.split("\n")
end = next((i for i, line in enumerate(old_lines) if line.startswith("|")), len(old_lines))
while end < len(old_lines) and old_lines[end].startswith("|"):
    end += 1
after = "\n".join(old_lines[end:])
with open(path + ".tmp", "w") as f:
    f.write(head.rstrip("\n") + "\n\n" + section + after)
os.replace(path + ".tmp", path)
print(f"structure-gaps: wrote {path}", file=sys.stderr)
