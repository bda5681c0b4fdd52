"""The model zoo: each entry builds a torch.nn module (random weights) and example inputs. `full` sizes are
the published architectures' (one block, or GPT-2 medium's 24 layers); `small` ones keep the tests fast."""

import torch

from .cnn import SmallCNN
from .transformers import (BertLayer, GPT2Block, GPT2DecodeStep, GPT2Stack, MixerBlock, ViTBlock,
                           decode_step_inputs, decode_step_names)


def _ids(batch, seq, vocab):
    return (torch.randint(0, vocab, (batch, seq)),)


ZOO = {
    # name: (full factory, full inputs, small factory, small inputs, what)
    "gpt2-block": (lambda: GPT2Block(768, 12, 1024), lambda: (torch.randn(1, 128, 768),),
                   lambda: GPT2Block(128, 2, 64), lambda: (torch.randn(1, 64, 128),),
                   "GPT-2 small decoder block (d=768, 12 heads), 128 tokens"),
    "gpt2-medium": (lambda: GPT2Stack(24, 1024, 16, 50257, 1024), lambda: _ids(1, 64, 50257),
                    lambda: GPT2Stack(2, 128, 2, 1000, 64), lambda: _ids(1, 64, 1000),
                    "GPT-2 medium: embeddings, 24 blocks (d=1024, 16 heads), LM head; 64 tokens"),
    "bert-layer": (lambda: BertLayer(768, 12, 3072), lambda: (torch.randn(1, 128, 768),),
                   lambda: BertLayer(128, 2, 512), lambda: (torch.randn(1, 64, 128),),
                   "BERT-base encoder layer on nn.MultiheadAttention, 128 tokens"),
    "vit-block": (lambda: ViTBlock(256, 16, 768, 12, 1000), lambda: (torch.randn(1, 3, 256, 256),),
                  lambda: ViTBlock(64, 16, 128, 2, 10), lambda: (torch.randn(1, 3, 64, 64),),
                  "ViT-B/16 patch embedding, one block, mean pooling and classifier; 256x256 image"),
    "mixer-block": (lambda: MixerBlock(256, 512, 256, 2048), lambda: (torch.randn(1, 256, 512),),
                    lambda: MixerBlock(64, 128, 64, 256), lambda: (torch.randn(1, 64, 128),),
                    "MLP-Mixer-B block: 256 patches x 512 channels"),
    "small-cnn": (lambda: SmallCNN(64, 10), lambda: (torch.randn(1, 3, 64, 64),),
                  lambda: SmallCNN(16, 10), lambda: (torch.randn(1, 3, 32, 32),),
                  "stem 4x4/4, two 3x3 convolutions with BatchNorm, 1x1, pooling, classifier; 64x64 image"),
}


# Decode steps with a KV cache, for serving (`t10 serve`, docs/t10-serving.md#onnx): name -> (full factory,
# small factory, what). Kept apart from ZOO: a decode step is not a whole-network problem for the graph lowering.
DECODERS = {
    "gpt2-decode": (lambda: GPT2DecodeStep(12, 768, 12, 50257, 4096), lambda: GPT2DecodeStep(2, 128, 2, 1000, 256),
                    "GPT-2 small, one decode step: 12 layers (d=768, 12 heads), LM head, the KV cache as inputs"),
}


# Decoders over a whole prompt, with symbolic "batch" and "seq" axes, for request traffic: `mlsys-import OUT.onnx
# --elk -o model.json` pins them to the Elk model file's codes (docs/t10-traffic.md#onnx). name -> (full
# factory, small factory, what); max_seq is above the code 66, so the causal mask covers the traced prompt.
PREFILLS = {
    "gpt2-prefill": (lambda: GPT2Stack(12, 768, 12, 50257, 1024), lambda: GPT2Stack(2, 128, 2, 1000, 128),
                     "GPT-2 small over a prompt: 12 layers (d=768, 12 heads), causal attention, LM head"),
}


def export_prefill(name: str, path: str, size: str = "full", opset: int = 17, seed: int = 0) -> None:
    """Writes a decoder over a prompt as ONNX with symbolic "batch" and "seq" axes (ids in, logits out)."""
    torch.manual_seed(seed)
    full, small, _ = PREFILLS[name]
    module = (full() if size == "full" else small()).eval()
    ids = torch.randint(0, module.wte.num_embeddings, (2, 5))
    torch.onnx.export(module, (ids,), path, opset_version=opset, do_constant_folding=True, input_names=["ids"],
                      output_names=["logits"], dynamic_axes={"ids": {0: "batch", 1: "seq"},
                                                              "logits": {0: "batch", 1: "seq"}})


def export_decoder(name: str, path: str, size: str = "full", opset: int = 17, seed: int = 0) -> None:
    """Writes a decode step as ONNX with symbolic "batch" and "past" (the cache's length) axes, pinned at import
    (mlsys-import --t10 --dim batch=B --dim past=L); the example inputs are tiny, so no large cache is made."""
    torch.manual_seed(seed)
    full, small, _ = DECODERS[name]
    module = (full() if size == "full" else small()).eval()
    names_in, names_out = decode_step_names(module)
    dynamic = {"ids": {0: "batch"}, "logits": {0: "batch"}}
    dynamic.update({n: {0: "batch", 2: "past"} for n in names_in[1:]})
    dynamic.update({n: {0: "batch"} for n in names_out[1:]})
    torch.onnx.export(module, decode_step_inputs(module, 2, 3), path, opset_version=opset, do_constant_folding=True,
                      input_names=names_in, output_names=names_out, dynamic_axes=dynamic)


def build(name: str, size: str = "full", seed: int = 0):
    """(module, example inputs) of a zoo entry; the seed fixes the random weights and inputs."""
    torch.manual_seed(seed)
    full, full_in, small, small_in, _ = ZOO[name]
    return (full(), full_in()) if size == "full" else (small(), small_in())


# torchvision's networks at their published size (random weights, 224x224), when python3-torchvision is there.
VISION_NAMES = ("resnet18", "resnet50", "mobilenet_v2", "vit_b_16")


def networks() -> dict:
    """Every network the benchmarks run: the zoo's, then torchvision's if installed; name -> what it is."""
    out = {name: entry[4] for name, entry in ZOO.items()}
    try:
        import torchvision  # noqa: F401
    except ImportError:
        return out
    out.update({name: f"torchvision {name}, 224x224" for name in VISION_NAMES})
    return out


def build_network(name: str, seed: int = 0):
    """(module, example inputs) of any entry of networks(), at full size."""
    if name not in VISION_NAMES:
        return build(name, "full", seed)
    import torchvision

    torch.manual_seed(seed)
    return getattr(torchvision.models, name)(weights=None), (torch.randn(1, 3, 224, 224),)


def export_network(name: str, path: str, opset: int = 17) -> None:
    """Writes any entry of networks(), at full size, as an ONNX file (eval mode, constants folded), as the
    benchmarks import it; the module is freed before returning (GPT-2 medium's weights are 1.6 GB)."""
    module, inputs = build_network(name)
    torch.onnx.export(module.eval(), inputs, path, opset_version=opset, do_constant_folding=True)
