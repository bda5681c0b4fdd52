"""The body of bench/t10-zoo (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build/release")
parser.add_argument("--models", default="", help="comma-separated zoo names (default: all)")
args = parser.parse_args()
build = os.path.abspath(args.build)
sys.path.insert(0, os.path.join(build, "python"))
sys.path.insert(0, "examples")


from models.zoo import export_network, networks  # noqa: E402

MARKER = "<!-- t10 whole models -->"
env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")


def timed(*command):
    """Runs a command under /usr/bin/time: (completed process, seconds, peak resident MiB)."""
    start = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *map(str, command)], capture_output=True, text=True,
                          env=env)
    seconds = time.monotonic() - start
    peak = int(done.stderr.strip().splitlines()[-1]) / 1024 if done.stderr.strip() else 0
    return done, seconds, peak


NETWORKS = networks()
names = [n for n in NETWORKS if not args.models or n in args.models.split(",")]
rows = []
with tempfile.TemporaryDirectory() as work:
    for name in names:
        print(f"t10-zoo: {name}: exporting", file=sys.stderr, flush=True)
        onnx_path = os.path.join(work, name + ".onnx")
        export_network(name, onnx_path)
        model = os.path.join(work, name + ".t10.json")
        imported, import_s, import_mib = timed(os.path.join(build, "mlsys-import"), "--t10", onnx_path, "-o", model)
        if imported.returncode:
            sys.exit(f"t10-zoo: {name}: mlsys-import --t10 failed: {imported.stderr}")
        ops = json.load(open(model))["t10_program"]["ops"]
        result = {}
        for reconcile in ("exact", "heuristic"):
            print(f"t10-zoo: {name}: {len(ops)} operators, t10 compile --reconcile {reconcile}", file=sys.stderr,
                  flush=True)
            html = os.path.join("docs", "zoo", f"t10-{name}.html") if reconcile == "exact" else os.path.join(
                work, "h.html")
            done, seconds, peak = timed(os.path.join(build, "t10"), "compile", model, "--json", "--reconcile",
                                        reconcile, "--html", html)
            out = json.loads(done.stdout) if done.returncode == 0 else None
            result[reconcile] = (done.returncode, out, seconds, peak, done.stderr.strip().splitlines()[-2:])
        rows.append((name, NETWORKS[name], ops, import_s, import_mib, result))

lines = [MARKER, "", "## Whole models", "",
         f"Produced by `bench/t10-zoo` on {time.strftime('%Y-%m-%d', time.gmtime())} ({os.cpu_count()} cores): every "
         "network of `examples/models` at full size and torchvision's ResNet-18, ResNet-50, MobileNetV2 and ViT-B/16 (224x224), exported by torch.onnx (opset 17), lowered by `mlsys-import "
         "--t10`, compiled by `t10 compile` for the IPU Mk2 (1,472 cores, 638,976 B per core) with both "
         "reconciliations and simulated on every core (docs/t10-programs.md): every distinct operator plan on the "
         "engine (MatMuls, and vector operators with their partial statistics as transfers), and the layout change "
         "along every edge of the data flow replayed core to core, through its views as index maps (a reshape into "
         "heads, a transpose, an im2col, a pooling window, a concatenation's part). Cycles are the "
         "calibrated timing's. "
         "The proven gap is the exact reconciliation's own, over the same option sets. Compile time and peak "
         "memory are whole-process figures of `t10 compile` (its simulation included); the import is separate.", "",
         "| model | operators | MACs | cycles (exact) | cycles (published heuristic) | heuristic / exact | proven gap "
         "| peak SRAM per core | all cores | compile s | compiler peak MiB | import s |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
for name, what, ops, import_s, import_mib, result in rows:
    macs = sum(o.get("batch", 1) * o["m"] * o["k"] * o["n"] for o in ops if o["type"] == "matmul")
    code, exact, seconds, peak, tail = result["exact"]
    hcode, heuristic, _, _, htail = result["heuristic"]
    if exact is None:
        lines.append(f"| {name} | {len(ops)} | {macs:,} | refused: {' '.join(tail)} | - | - | - | - | - | "
                     f"{seconds:.1f} | {peak:.0f} | {import_s:.1f} |")
        continue
    h = heuristic["total_cycles"] if heuristic else None
    gap = 100 * (exact["total_cycles"] / exact["lower_bound_cycles"] - 1) if exact["lower_bound_cycles"] else 0
    sim = exact["simulation"]
    total = exact["total_cycles"]
    h_text, ratio = (f"{h:,.0f}", f"{h / total:.2f}") if h else ("no fit", "-")
    lines.append(
        f"| {name} | {len(ops)} | {macs:,} | {total:,.0f} | {h_text} | {ratio} | "
        f"{gap:.2f} %{'' if exact['compile']['proven'] else ' (clock)'} | {exact['peak_sram_bytes']:,} | "
        f"{'passed' if sim['passed'] else 'FAILED: ' + sim['failure']} ({sim['engine_runs']} plans, "
        f"{sim['layout_changes_replayed']} of {sim['edges']} edges replayed) | "
        f"{seconds:.1f} | {peak:.0f} | {import_s:.1f} |")
lines += ["", "Reports: " + ", ".join(f"[{n}](zoo/t10-{n}.html)" for n, *_ in rows) + ".", ""]

path = "docs/results-t10.md"
text = open(path).read()
head = text.split(MARKER)[0].rstrip() + "\n\n" if MARKER in text else text.rstrip() + "\n\n"
with open(path + ".tmp", "w") as f:
    f.write(head + "\n".join(lines))
os.replace(path + ".tmp", path)
print("\n".join(lines))
