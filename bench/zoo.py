"""The body of bench/zoo (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("--hardware", default="tpu-like-core")
parser.add_argument("--timeout", type=float, default=20)
parser.add_argument("--build", default="build/release")
args = parser.parse_args()
build = os.path.abspath(args.build)
sys.path.insert(0, os.path.join(build, "python"))
sys.path.insert(0, "examples")


from models.zoo import export_network, networks  # noqa: E402

MARKER = "<!-- model zoo -->"
# GPT-2 medium is the scale test: its 24 layers get the contest's longest budget.
TIMEOUTS = {"gpt2-medium": 60.0}


def run(*command):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


rows = []
with tempfile.TemporaryDirectory() as work:
    for name, what in networks().items():
        print(f"zoo: {name}: exporting", file=sys.stderr, flush=True)
        onnx_path = os.path.join(work, name + ".onnx")
        export_network(name, onnx_path)
        problem = os.path.join(work, name + ".json")
        schedule = os.path.join(work, name + ".schedule.json")
        stats = os.path.join(work, name + ".stats.json")
        start = time.monotonic()
        imported = run("/usr/bin/time", "-f", "%M", "-o", problem + ".rss", os.path.join(build, "mlsys-import"),
                       onnx_path, "--hardware", args.hardware, "-o", problem, "--json")
        import_seconds = time.monotonic() - start
        import_kib = int(open(problem + ".rss").read().split()[-1])
        if imported.returncode:
            sys.exit(f"zoo: {name}: mlsys-import failed: {imported.stderr}")
        summary = json.loads(imported.stdout)
        limit = TIMEOUTS.get(name, args.timeout)
        print(f"zoo: {name}: {summary['ops']} ops, solving for {limit:g} s", file=sys.stderr, flush=True)
        solved = run("/usr/bin/time", "-f", "%M", os.path.join(build, "mlsys"), problem, schedule, "--timeout",
                     limit, "--json-stats", stats)
        peak_kib = int(solved.stderr.strip().splitlines()[-1]) if solved.stderr.strip() else 0
        verified = run(os.path.join(build, "verify"), problem, schedule, "--strict", "--json")
        report = json.loads(verified.stdout) if verified.stdout else {}
        # verify attempts the cover bound only on small graphs; `bound` tries up to its default limits.
        bounded = run(os.path.join(build, "bound"), problem, "--json")
        if bounded.returncode == 0 and bounded.stdout:
            report["certified_bound"] = json.loads(bounded.stdout)
        search = json.load(open(stats))
        if name == "gpt2-block":
            os.makedirs("docs/zoo", exist_ok=True)
            run(os.path.join(build, "report"), problem, schedule, "-o", "docs/zoo/gpt2-block.html")
        rows.append((name, what, summary, report, search, limit, import_seconds, import_kib, peak_kib,
                     verified.returncode == 0))

lines = [MARKER, "", "## Model zoo", "",
         f"Produced by `bench/zoo` on {time.strftime('%Y-%m-%d', time.gmtime())} ({os.cpu_count()} cores): every network "
         f"of `examples/models` at full size and torchvision's ResNet-18, ResNet-50, MobileNetV2 and ViT-B/16 "
         f"(224x224, random weights), exported by torch.onnx (opset 17), imported by `mlsys-import --hardware "
         f"{args.hardware}`, solved by `mlsys --timeout S`, checked by `verify --strict`. MACs count the problem's "
         "MatMuls (equal to the ONNX graph's MatMul, Gemm and dense Conv MACs, plus one per pooled element; ViT-B/16 "
         "adds its padding to 256 tokens and its class-token selections, docs/import.md#attention; the tests check "
         "it). Costs are in cycles of the profile. The lower bound is the rule book's (docs/model.md#lower-bounds); the "
         "certified bound and the proven gap are `bound`'s (docs/bounds.md). "
         "One report: [docs/zoo/gpt2-block.html](zoo/gpt2-block.html).", "",
         "| model | ops | tensors | MACs | lower bound | certified bound | cost | proven gap | timeout s | "
         "time to best s | import s | import peak MiB | solver peak MiB | verified |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
for name, what, summary, report, search, limit, import_seconds, import_kib, peak_kib, ok in rows:
    cost = report.get("total_latency")
    lb = report.get("lower_bound", {}).get("bound")
    certified = (report.get("certified_bound") or {}).get("bound")
    gap = f"{100 * (cost / certified - 1):.1f} %" if cost and certified else "-"
    lines.append(f"| {name} ({what}) | {summary['ops']:,} | {summary['tensors']:,} | {summary['macs']:,} | "
                 f"{lb:,.0f} | {certified:,.0f} | {cost:,.0f} | {gap} | {limit:g} | {search['time_to_best']:.2f} | "
                 f"{import_seconds:.1f} | {import_kib / 1024:,.0f} | {peak_kib / 1024:,.0f} | {'yes' if ok else 'NO'} |")
section = "\n".join(lines) + "\n"
path = "docs/results.md"
text = open(path).read() if os.path.exists(path) else ""
head = text.split(MARKER)[0].rstrip("\n")
with open(path + ".tmp", "w") as f:
    f.write((head + "\n\n" if head else "") + section)
os.replace(path + ".tmp", path)
print(f"zoo: wrote {path}", file=sys.stderr)
sys.exit(0 if all(r[-1] for r in rows) else 1)
