"""Transformer blocks of the model zoo, written as plain torch.nn modules (random weights; nothing is
downloaded): a GPT-2-style decoder with hand-written causal attention, a BERT-base encoder layer built on
nn.MultiheadAttention, a ViT block (patch embedding by a strided convolution), and an MLP-Mixer block."""

import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    """GPT-2's attention, as in most reimplementations: one packed QKV projection, heads split by a view and a
    transpose, a causal mask buffer, softmax, and the heads merged back by a transpose and a view."""

    def __init__(self, d_model: int, heads: int, max_seq: int):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)).view(
            1, 1, max_seq, max_seq))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores.masked_fill(~self.mask[:, :, :s, :s], float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, s, d))


class Mlp(nn.Sequential):
    def __init__(self, d_model: int, hidden: int):
        super().__init__(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))


class GPT2Block(nn.Module):
    def __init__(self, d_model: int = 768, heads: int = 12, max_seq: int = 1024):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, max_seq)
        self.mlp = Mlp(d_model, 4 * d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT2Stack(nn.Module):
    """Token and position embeddings, `layers` decoder blocks, the final LayerNorm and the LM head."""

    def __init__(self, layers: int = 2, d_model: int = 768, heads: int = 12, vocab: int = 50257,
                 max_seq: int = 1024, lm_head: bool = True):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d_model), nn.Embedding(max_seq, d_model)
        self.blocks = nn.Sequential(*[GPT2Block(d_model, heads, max_seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False) if lm_head else None

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.ln_f(self.blocks(self.wte(ids) + self.wpe(positions)))
        return self.head(x) if self.head is not None else x


class BertLayer(nn.Module):
    """A BERT-base encoder layer (post-LayerNorm) on nn.MultiheadAttention, batch first."""

    def __init__(self, d_model: int = 768, heads: int = 12, hidden: int = 3072):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = Mlp(d_model, hidden)

    def forward(self, x):
        x = self.ln1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.ln2(x + self.mlp(x))


class ViTBlock(nn.Module):
    """Patch embedding (a convolution with stride = kernel, on the image: the host's im2col), position
    embeddings, one pre-LayerNorm encoder block with hand-written attention, mean pooling and a classifier."""

    def __init__(self, image: int = 128, patch: int = 16, d_model: int = 768, heads: int = 12, classes: int = 1000):
        super().__init__()
        self.embed = nn.Conv2d(3, d_model, patch, stride=patch)
        tokens = (image // patch) ** 2
        self.pos = nn.Parameter(torch.randn(1, tokens, d_model) * 0.02)
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.heads, self.head_dim = heads, d_model // heads
        self.mlp = Mlp(d_model, 4 * d_model)
        self.classifier = nn.Linear(d_model, classes)

    def attention(self, x):
        b, s, d = x.shape
        q, k, v = (t.reshape(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)
                   for t in self.qkv(x).chunk(3, dim=-1))
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
        return self.proj((weights @ v).permute(0, 2, 1, 3).reshape(b, s, d))

    def forward(self, image):
        x = self.embed(image).flatten(2).transpose(1, 2) + self.pos
        x = x + self.attention(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return self.classifier(self.ln_f(x).mean(dim=1))


class MixerBlock(nn.Module):
    """An MLP-Mixer block: token mixing (an MLP across the patches, on the transposed activations) and
    channel mixing."""

    def __init__(self, tokens: int = 196, channels: int = 512, token_hidden: int = 256, channel_hidden: int = 2048):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
        self.token_mlp = Mlp(tokens, token_hidden)
        self.channel_mlp = Mlp(channels, channel_hidden)

    def forward(self, x):
        x = x + self.token_mlp(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.ln2(x))


class GPT2DecodeStep(nn.Module):
    """One decode step of a GPT-2-style stack with a KV cache, as LLM serving runs it: the next token of each
    sequence in the batch (ids [batch, 1]) and, per layer, the cached keys and values [batch, heads, L, head_dim]
    as graph inputs. Each layer appends its new key and value rows to the cache (a Concat) and attends over all
    L + 1 positions; the outputs are the logits and every layer's new rows (what serving writes back)."""

    def __init__(self, layers: int = 2, d_model: int = 768, heads: int = 12, vocab: int = 50257, max_seq: int = 4096):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.wte, self.wpe = nn.Embedding(vocab, d_model), nn.Embedding(max_seq, d_model)
        self.blocks = nn.ModuleList(GPT2Block(d_model, heads, 1) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, ids, *cache):
        b, d = ids.shape[0], self.wte.embedding_dim
        x = self.wte(ids) + self.wpe.weight[cache[0].shape[2]]
        new_rows = []
        for i, block in enumerate(self.blocks):
            q, k, v = (t.view(b, 1, self.heads, self.head_dim).transpose(1, 2)
                       for t in block.attn.qkv(block.ln1(x)).split(d, dim=2))
            keys, values = torch.cat([cache[2 * i], k], dim=2), torch.cat([cache[2 * i + 1], v], dim=2)
            scores = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
            y = torch.softmax(scores, dim=-1) @ values
            x = x + block.attn.proj(y.transpose(1, 2).reshape(b, 1, d))
            x = x + block.mlp(block.ln2(x))
            new_rows += [k, v]
        return (self.head(self.ln_f(x)), *new_rows)


def decode_step_inputs(model: GPT2DecodeStep, batch: int, cached: int):
    """Example inputs of a decode step: token ids and a random cache of `cached` positions per layer."""
    shape = (batch, model.heads, cached, model.head_dim)
    cache = [torch.randn(shape) for _ in range(2 * len(model.blocks))]
    return (torch.randint(0, model.wte.num_embeddings, (batch, 1)), *cache)


def decode_step_names(model: GPT2DecodeStep):
    """ONNX input and output names: ids, past_key_i / past_value_i; logits, new_key_i / new_value_i."""
    layers = range(len(model.blocks))
    inputs = ["ids"] + [f"past_{kv}_{i}" for i in layers for kv in ("key", "value")]
    outputs = ["logits"] + [f"new_{kv}_{i}" for i in layers for kv in ("key", "value")]
    return inputs, outputs
