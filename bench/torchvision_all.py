"""The body of bench/torchvision-all (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from docs_section import replace_section

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build/release")
parser.add_argument("--models", default="", help="comma-separated names (default: every classifier)")
parser.add_argument("--max-params", type=float, default=150e6,
                    help="models with more parameters are listed as not run (default 150 M)")
parser.add_argument("--timeout", type=float, default=10, help="mlsys's search budget, seconds")
parser.add_argument("--import-timeout", type=float, default=900)
parser.add_argument("--bound", type=float, default=0,
                    help="also run `bound --timeout S` on each verified problem (its certified bound and the "
                    "proven gap, into docs/results.md); 0 skips it (default)")
parser.add_argument("--results", default="bench/results/torchvision-all.jsonl",
                    help="one JSON line per model, kept between runs (a model run again replaces its line)")
parser.add_argument("--exports", default="",
                    help="keep each model's ONNX export in DIR/NAME/ and reuse it when there (ViT-H/14's export "
                         "takes about 20 minutes)")
parser.add_argument("--no-docs", action="store_true", help="do not rewrite the table in docs/import.md")
parser.add_argument("--docs-only", action="store_true",
                    help="run nothing: rewrite the tables from the results file (after merging runs)")
args = parser.parse_args()
build = os.path.abspath(args.build)

import torch  # noqa: E402
import torchvision.models as tvm  # noqa: E402

MARKER = "<!-- torchvision all -->"


def _zero(g, self):
    """aten::zero (Swin V2 zeroes the key's bias in place), which torch 1.13's exporter lacks: a product by 0."""
    return g.op("Mul", self, g.op("Constant", value_t=torch.tensor(0.0)))


torch.onnx.register_custom_op_symbolic("aten::zero", _zero, 17)


def dense_macs(model, example):
    """Multiply-adds of the module calls the graph lowering turns into MatMuls: convolutions but depthwise ones
    (a grouped one counts C_in / groups per output) and Linear layers, from forward hooks (attention's products
    inside nn.MultiheadAttention are not module calls; the ONNX graph's own count, `model_macs`, has them)."""
    total = [0]

    def conv(module, inputs, output):
        if not (module.groups != 1 and module.groups == module.in_channels == module.out_channels):
            total[0] += (output.numel() * module.in_channels // module.groups * module.kernel_size[0] *
                         module.kernel_size[1])

    def linear(module, inputs, output):
        total[0] += output.numel() * module.in_features

    hooks = [m.register_forward_hook(conv) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    hooks += [m.register_forward_hook(linear) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        model(example)
    for h in hooks:
        h.remove()
    return total[0]


def timed(command, timeout):
    """Runs a command under GNU time: (completed process or None on timeout, seconds, peak MiB)."""
    with tempfile.NamedTemporaryFile() as t:
        start = time.monotonic()
        try:
            done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name, *map(str, command)],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - start, 0
        seconds = time.monotonic() - start
        text = open(t.name).read().split()
        return done, seconds, (int(text[-1]) / 1024 if text and text[-1].isdigit() else 0)


def run_model(name, work):
    row = {"model": name}
    weights = tvm.get_model_weights(name).DEFAULT
    size = weights.transforms().crop_size[0]
    params = weights.meta.get("num_params", 0)
    row.update(resolution=size, params=params)
    if params > args.max_params:
        earlier = results.get(name, {})
        if earlier.get("result", "not run").startswith("not run"):
            row["result"] = f"not run: {params / 1e6:.0f} M parameters, above --max-params"
            return row
        return earlier  # run before with a higher --max-params: its row is kept
    kwargs = {"image_size": size} if name.startswith("vit_") else {}
    model = tvm.get_model(name, weights=None, **kwargs).eval()
    example = torch.zeros(1, 3, size, size)
    # a model's own folder: the largest are written with their weights in external files of generic names
    folder = os.path.join(args.exports, name) if args.exports else work
    path = os.path.join(folder, name + ".onnx")
    earlier = results.get(name, {})
    kept = args.exports and os.path.exists(path)
    # the count runs the model forward: minutes for ViT-H/14, so a kept export keeps its count too
    row["torch_macs"] = earlier["torch_macs"] if kept and earlier.get("torch_macs") else dense_macs(model, example)
    if kept:
        row["export_s"] = earlier.get("export_s")
    else:
        os.makedirs(folder, exist_ok=True)
        start = time.monotonic()
        try:
            torch.onnx.export(model, example, path, opset_version=17)
        except Exception as e:  # an exporter's refusal is a result too
            row["result"] = f"export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            return row
        row["export_s"] = round(time.monotonic() - start, 1)
    problem, schedule = os.path.join(work, name + ".json"), os.path.join(work, name + ".schedule.json")
    done, seconds, mib = timed([os.path.join(build, "mlsys-import"), path, "-o", problem, "--json"],
                               args.import_timeout)
    row.update(import_s=round(seconds, 1), import_mib=round(mib))
    if done is None:
        row["result"] = f"import timed out after {args.import_timeout:g} s"
        return row
    if done.returncode != 0:
        lines = [line.replace(path, name + ".onnx").replace("mlsys-import: ", "").strip()
                 for line in done.stderr.strip().splitlines() if not line.startswith("mlsys-import: reading")]
        row["result"] = "refused: " + " ".join(lines[-12:])[:1500]
        return row
    summary = json.loads(done.stdout)
    row.update(ops=summary["ops"], macs=summary["macs"], model_macs=summary.get("model_macs", 0),
               warnings=summary["warnings"])
    solved, solve_s, solve_mib = timed([os.path.join(build, "mlsys"), problem, schedule, "--timeout", args.timeout],
                                       args.timeout * 20 + 120)
    row.update(solve_s=round(solve_s, 1), solve_mib=round(solve_mib))
    if solved is None or solved.returncode != 0:
        row["result"] = "solve failed: " + ("timed out" if solved is None else solved.stderr.strip()[-300:])
        return row
    verified = subprocess.run([os.path.join(build, "verify"), problem, schedule, "--strict", "--json"],
                              capture_output=True, text=True)
    report = json.loads(verified.stdout) if verified.stdout else {}
    row["cost"] = report.get("total_latency") or report.get("latency")
    row["result"] = "verified --strict" if verified.returncode == 0 else "verify failed: " + verified.stderr[-300:]
    if args.bound and verified.returncode == 0:
        bounded, bound_s, bound_mib = timed([os.path.join(build, "bound"), problem, "--timeout", args.bound,
                                             "--json"], args.bound * 3 + 120)
        if bounded is not None and bounded.returncode == 0:
            certificate = json.loads(bounded.stdout)
            row.update(bound=certificate["bound"], bound_timeout=args.bound, bound_s=round(bound_s, 1),
                       bound_mib=round(bound_mib))
    return row


def table(rows):
    lines = [MARKER, "", "### Every torchvision classifier", "",
             f"Produced by `bench/torchvision-all` (the last run of each model; {os.cpu_count()} cores): every "
             "classification model of the installed torchvision, random weights, batch 1 at the resolution of "
             "its default weights, exported by torch.onnx (opset 17), imported with the default profile and "
             f"`--max-ops`, solved by `mlsys --timeout {args.timeout:g}` and checked by `verify --strict`. "
             "MACs / PyTorch is the problem's matrix multiply-adds over the convolutions' (depthwise ones are vector "
             "work) and Linear "
             "layers' (forward hooks; attention products are not module calls, so transformers show more); "
             "MACs / ONNX is over the ONNX graph's own MatMul, Gemm and non-depthwise Conv count.", "",
             "| model | params M | size | ops | MACs / PyTorch | MACs / ONNX | import s | import MiB | result |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: r["model"]):
        ratio = lambda a, b: f"{a / b:.3f}" if a and b else ""  # noqa: E731
        result = r.get("result", "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['model']} | {r.get('params', 0) / 1e6:.1f} | {r.get('resolution', '')} | "
                     f"{r.get('ops', ''):{','}} | {ratio(r.get('macs'), r.get('torch_macs'))} | "
                     f"{ratio(r.get('macs'), r.get('model_macs'))} | {r.get('import_s', '')} | "
                     f"{r.get('import_mib', '')} | {result} |" if isinstance(r.get("ops"), int) else
                     f"| {r['model']} | {r.get('params', 0) / 1e6:.1f} | {r.get('resolution', '')} |  |  |  | "
                     f"{r.get('import_s', '')} | {r.get('import_mib', '')} | {result} |")
    ok = sum(1 for r in rows if r.get("result") == "verified --strict")
    lines += ["", f"{ok} of {len(rows)} verified `--strict`.", ""]
    return "\n".join(lines)


GAPS_MARKER = "<!-- torchvision gaps -->"


def gap_table(rows):
    """The proven gap of every classifier that verified and was bounded (docs/results.md)."""
    bounded = sorted((r for r in rows if r.get("bound") and r.get("cost")), key=lambda r: r["model"])
    budgets = "/".join(f"{b:g}" for b in sorted({r.get("bound_timeout", 0) for r in bounded}))
    lines = [GAPS_MARKER, "", "### Every torchvision classifier: proven gaps", "",
             f"Produced by `bench/torchvision-all --bound {budgets}` (the last run of each model): the problem of "
             "each classifier that imports (table in [import.md](import.md#every-torchvision-classifier)), solved "
             f"by `mlsys --timeout {args.timeout:g}`, verified `--strict`, and bounded by `bound --timeout "
             f"{budgets}` ([bounds.md](bounds.md); only graphs of at most 16,384 ops spend it, on the cover "
             "bound). The proven gap is cost / bound - 1: no schedule of that problem is cheaper than the bound, "
             "so ours is at most that far from the optimum.", "",
             "| model | ops | cost | certified bound | proven gap | bound s |", "|---|---:|---:|---:|---:|---:|"]
    for r in bounded:
        lines.append(f"| {r['model']} | {r['ops']:,} | {r['cost']:,.0f} | {r['bound']:,.0f} | "
                     f"{100 * (r['cost'] / r['bound'] - 1):.1f} % | {r.get('bound_s', '')} |")
    if bounded:
        gaps = sorted(r["cost"] / r["bound"] - 1 for r in bounded)
        median = gaps[len(gaps) // 2] if len(gaps) % 2 else (gaps[len(gaps) // 2 - 1] + gaps[len(gaps) // 2]) / 2
        lines += ["", f"{len(bounded)} classifiers; median proven gap {100 * median:.1f} %, "
                  f"{sum(g <= 0.5 for g in gaps)} within 50 %, {sum(g <= 0.25 for g in gaps)} within 25 %.", ""]
    return "\n".join(lines)


def write_docs(rows):
    replace_section("docs/import.md", MARKER, table(rows))
    if any(r.get("bound") for r in rows):
        replace_section("docs/results.md", GAPS_MARKER, gap_table(rows))


names = tvm.list_models(module=tvm)
if args.models:
    names = [n for n in names if n in args.models.split(",")]
os.makedirs(os.path.dirname(args.results) or ".", exist_ok=True)
results = {}
if os.path.exists(args.results):
    for line in open(args.results):
        if line.strip():
            r = json.loads(line)
            results[r["model"]] = r
if args.docs_only:
    write_docs(list(results.values()))
    sys.exit(0)
with tempfile.TemporaryDirectory() as work:
    for i, name in enumerate(names):
        print(f"torchvision-all: {i + 1}/{len(names)} {name}", file=sys.stderr, flush=True)
        row = run_model(name, work)
        print(f"torchvision-all: {name}: {row.get('result', '')[:160]}", file=sys.stderr, flush=True)
        results[name] = row
        with open(args.results + ".tmp", "w") as f:
            for r in results.values():
                f.write(json.dumps(r) + "\n")
        os.replace(args.results + ".tmp", args.results)
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        if not args.no_docs:
            write_docs(list(results.values()))
