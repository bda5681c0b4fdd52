"""Writes a model of the zoo as an ONNX file: `python3 examples/models/export.py NAME OUT.onnx [--small]
[--opset N] [--symbolic]`. With --symbolic, the batch and sequence axes of a transformer's input are left
symbolic ("batch", "seq"), as exports for serving usually are; mlsys-import then needs --dim for both.
A decode step (gpt2-decode) always has symbolic "batch" and "past" axes: `mlsys-import OUT.onnx --t10 --dim
batch=32 --dim past=2048 -o step.t10.json`, then `t10 serve step.t10.json`. A decoder over a prompt
(gpt2-prefill) has symbolic "batch" and "seq" axes: `mlsys-import OUT.onnx --elk -o model.json`, then
`t10 serve model.json --requests R.jsonl` (request traffic)."""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from models.zoo import DECODERS, PREFILLS, ZOO, build, export_decoder, export_prefill  # noqa: E402

SEQUENCE_MODELS = {"gpt2-block", "gpt2-medium", "bert-layer", "mixer-block"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", choices=sorted(ZOO) + sorted(DECODERS) + sorted(PREFILLS))
    parser.add_argument("output")
    parser.add_argument("--small", action="store_true", help="the small configuration the tests use")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--symbolic", action="store_true", help="symbolic batch and sequence axes")
    args = parser.parse_args()
    if args.name in PREFILLS:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        export_prefill(args.name, args.output, "small" if args.small else "full", args.opset)
        print(f"wrote {args.output}", file=sys.stderr)
        return 0
    if args.name in DECODERS:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        export_decoder(args.name, args.output, "small" if args.small else "full", args.opset)
        print(f"wrote {args.output}", file=sys.stderr)
        return 0
    module, inputs = build(args.name, "small" if args.small else "full")
    dynamic = None
    if args.symbolic:
        if args.name not in SEQUENCE_MODELS:
            parser.error(f"{args.name} has no sequence axis")
        dynamic = {"input": {0: "batch", 1: "seq"}} if args.name != "mixer-block" else {"input": {0: "batch"}}
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    torch.onnx.export(module.eval(), inputs, args.output, opset_version=args.opset, do_constant_folding=True,
                      input_names=["input"], output_names=["output"], dynamic_axes=dynamic)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
