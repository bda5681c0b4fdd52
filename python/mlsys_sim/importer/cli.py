"""mlsys-import: an ONNX model and a hardware profile in, a problem file out (docs/import.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from . import onnx_graph as og
from .api import DEFAULT_MAX_OPS, import_onnx
from .profiles import ProfileError, load_profile, override_profile, presets

DEFAULT_HARDWARE = "tpu-like-core"

EPILOG = """exit codes: 0 imported; 2 bad usage, an unreadable or unsupported model, or a bad profile (the message
names the file, the node or key, and the reason). Presets: %s (default: """ + DEFAULT_HARDWARE + """). The
cost model and the lowering's conventions: docs/import.md."""


def _pairs(values, what: str, convert):
    out = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} {item!r}: expected NAME=VALUE")
        try:
            out[key] = convert(value)
        except ValueError:
            raise ValueError(f"{what} {item!r}: {value!r} is not a number") from None
        if out[key] <= 0:
            raise ValueError(f"{what} {item!r}: the value must be positive")
    return out


def write_atomically(path: str, text: str) -> None:
    """Writes a temporary file beside path, then renames it; the file gets the usual permissions (0666 less
    the umask), not mkstemp's 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".mlsys-import-", dir=directory)
    umask = os.umask(0)
    os.umask(umask)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def problem_text(problem: dict) -> str:
    """One line per list, so that diffs of two imports read well; the same model gives the same bytes."""
    lines = ["{"]
    keys = list(problem)
    for i, key in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        lines.append(f"  {json.dumps(key)}: {json.dumps(problem[key], sort_keys=True)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="mlsys-import", description="Import an ONNX model as a problem of the MLSys 2026 format: MatMuls "
        "per attention head, convolutions as im2col MatMuls, elementwise chains as Pointwise ops, each op "
        "priced by a hardware profile.", epilog=EPILOG % ", ".join(presets()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="the .onnx file (external weights are not read: only shapes matter)")
    parser.add_argument("--hardware", default=DEFAULT_HARDWARE,
                        help="a profile: a preset name or a JSON file (default: %(default)s)")
    parser.add_argument("-o", "--output", required=True,
                        help="the problem file to write (atomically), or - for stdout")
    parser.add_argument("--dim", action="append", metavar="NAME=N", help="pin a symbolic dimension (repeat)")
    parser.add_argument("--passthrough", action="append", metavar="OP=WEIGHT",
                        help="lower an unsupported op type that keeps shapes as a Pointwise op of WEIGHT vector "
                        "operations per element (repeat; reported as a warning)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="override a number of the profile, e.g. --set fast_memory_bytes=4194304 "
                        "--set slow_memory_bytes_per_cycle=1170 (repeat)")
    parser.add_argument("--max-ops", type=int, default=DEFAULT_MAX_OPS, help="refuse larger problems (%(default)s)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("--t10", action="store_true",
                        help="write a T10 model file for `t10 compile` instead (one operator per MatMul, "
                        "convolution and fused elementwise group; --hardware does not apply)")
    parser.add_argument("--elk", action="store_true",
                        help="write a decoder as an Elk model file for `t10 serve --requests` instead (its input's "
                        "symbolic batch and sequence axes, named by --elk-axes, become the file's codes 99 and 66)")
    parser.add_argument("--elk-axes", default="batch,seq", metavar="BATCH,SEQ",
                        help="the names of the batch and sequence axes for --elk (default: %(default)s)")
    parser.add_argument("--list-elk-ops", action="store_true",
                        help="print the ONNX op types --elk reads and what each becomes, then exit")
    if argv is None:
        argv = sys.argv[1:]
    if "--list-elk-ops" in argv:
        from .elk_export import supported_ops
        for op, becomes in sorted(supported_ops().items()):
            print(f"{op}\t{becomes}")
        return 0
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        dims = _pairs(args.dim, "--dim", int)
        passthrough = _pairs(args.passthrough, "--passthrough", float)
        overrides = _pairs(args.set, "--set", float)
    except ValueError as e:
        print(f"mlsys-import: {e}", file=sys.stderr)
        return 2
    if args.output == "-" and args.json:
        print("mlsys-import: -o - writes the problem on stdout; --json would mix the summary into it",
              file=sys.stderr)
        return 2
    start = time.monotonic()
    print(f"mlsys-import: reading {args.model}", file=sys.stderr)
    if args.t10 and args.elk:
        print("mlsys-import: --t10 and --elk write different files: give one", file=sys.stderr)
        return 2
    if args.t10:
        return _main_t10(args, dims, start)
    if args.elk:
        return _main_elk(args, dims, start)
    try:
        hardware = load_profile(args.hardware)
        if overrides:
            hardware = override_profile(hardware, overrides)
        report = import_onnx(args.model, hardware, dims=dims, passthrough=passthrough, max_ops=args.max_ops,
                             report=True, dim_syntax="cli")
    except (og.ImportError_, ProfileError) as e:
        print(f"mlsys-import: {e}", file=sys.stderr)
        return 2
    if not _write_output(args.output, problem_text(report.problem)):
        return 2
    for warning in report.warnings:
        print(f"mlsys-import: warning: {warning}", file=sys.stderr)
    summary = {"model": args.model, "output": args.output, "hardware": report.problem["names"]["hardware"],
               "ops": report.ops, "tensors": report.tensors, "macs": report.macs, "model_macs": report.model_macs,
               "partial": report.macs < report.model_macs,
               "seconds": round(time.monotonic() - start, 3), "warnings": report.warnings}
    print(f"mlsys-import: {report.ops} ops, {report.tensors} tensors, {report.macs:,} MACs -> {args.output} "
          f"({summary['seconds']} s)", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    return 0


def _write_output(path: str, text: str) -> bool:
    try:
        if path == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_atomically(path, text)
    except OSError as e:
        print(f"mlsys-import: {path}: {e}", file=sys.stderr)
        return False
    return True


def _main_elk(args, dims, start) -> int:
    from .elk_export import elk_text, export_elk
    axes = args.elk_axes.split(",")
    if len(axes) != 2 or not all(axes):
        print(f"mlsys-import: --elk-axes {args.elk_axes}: expected BATCH,SEQ", file=sys.stderr)
        return 2
    try:
        nodes = export_elk(args.model, axes[0], axes[1], dims)
    except og.ImportError_ as e:
        print(f"mlsys-import: {e}", file=sys.stderr)
        return 2
    if not _write_output(args.output, elk_text(nodes)):
        return 2
    return _report(args, start, "elk_nodes", len(nodes), "Elk nodes")


def _main_t10(args, dims, start) -> int:
    from .t10_lowering import import_onnx_t10
    try:
        doc = import_onnx_t10(args.model, dims=dims, dim_syntax="cli")
    except og.ImportError_ as e:
        print(f"mlsys-import: {e}", file=sys.stderr)
        return 2
    if not _write_output(args.output, json.dumps(doc, indent=1) + "\n"):
        return 2
    return _report(args, start, "t10_operators", len(doc["t10_program"]["ops"]), "T10 operators")


def _report(args, start, key: str, count: int, what: str) -> int:
    """The closing line on stderr, and the JSON summary with --json."""
    summary = {"model": args.model, "output": args.output, key: count, "seconds": round(time.monotonic() - start, 3)}
    print(f"mlsys-import: {count} {what} -> {args.output} ({summary['seconds']} s)", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
