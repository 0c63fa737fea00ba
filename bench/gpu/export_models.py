"""Export the three end-to-end models of issue 21 from PyTorch to ONNX (opset 17, fp32,
random weights), with the TorchScript exporter (``dynamo=False``), as a framework user
would write them:

* ``resnet50_b{N}.onnx`` -- torchvision's ResNet-50, input ``(N, 3, 224, 224)``;
* ``bert_base.onnx`` -- BERT-base as a plain torch module (transformers is not needed):
  token + position embeddings, 12 layers of hidden 768, 12 heads, FFN 3072 with GELU
  (``nn.GELU()``: erf arithmetic at opset 17), LayerNorm written out as
  ``(x - mean) / sqrt(var + eps) * w + b`` (as the original BERT ports did), attention as
  ``softmax(q k^T / sqrt(d)) v``; input ids ``(8, 512)``;
* ``llama_block.onnx`` -- one Llama-style decoder layer: RMSNorm (``x * rsqrt(mean(x^2)
  + eps) * w``, with the fp32 casts Llama code writes), 32 query heads and 8 key/value
  heads (GQA, K/V repeated by expand + reshape), a causal mask, a SiLU-gated MLP of 11008,
  residuals; input ``(1, 2048, 4096)``. No rotary embedding (``--rope`` adds it).

Nothing here runs byocc; the models regenerate the same way from the seed (``--seed``).
The .onnx files are large (ResNet-50 100 MB, BERT 440 MB, the Llama layer 900 MB) and are
not committed. Usage::

    python bench/gpu/export_models.py -o models/ [--models resnet50,bert,llama] [--batch 32]

then, for instance::

    python -m byocc partition models/bert_base.onnx --dtype float16 --backend cutlass \\
        --path merge -o out/bert --explain
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time


def _torch():
    import torch

    return torch


# --------------------------------------------------------------------------- BERT-base
def bert_base(layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int = 3072, vocab: int = 30522,
              max_pos: int = 512):
    torch = _torch()
    nn = torch.nn

    class LayerNorm(nn.Module):  # written out, as exported BERT ports have it
        def __init__(self, n: int, eps: float = 1e-12) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.bias = nn.Parameter(torch.zeros(n))
            self.eps = eps

        def forward(self, x):
            u = x.mean(-1, keepdim=True)
            s = (x - u).pow(2).mean(-1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            return self.weight * x + self.bias

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
            self.o = nn.Linear(hidden, hidden)
            self.ln1 = LayerNorm(hidden)
            self.up = nn.Linear(hidden, ffn)
            self.act = nn.GELU()
            self.down = nn.Linear(ffn, hidden)
            self.ln2 = LayerNorm(hidden)

        def heads(self, x):
            b, s, _ = x.shape
            return x.view(b, s, heads, hidden // heads).permute(0, 2, 1, 3)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hidden // heads)
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, hidden)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.down(self.act(self.up(x))))

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max_pos, hidden)
            self.ln = LayerNorm(hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
            x = self.ln(self.tok(ids) + self.pos(pos))
            for layer in self.layers:
                x = layer(x)
            return x

    return Bert()


# --------------------------------------------------------------------------- Llama layer
def llama_block(hidden: int = 4096, heads: int = 32, kv_heads: int = 8, ffn: int = 11008, seq: int = 2048,
                rope: bool = False):
    torch = _torch()
    nn = torch.nn
    head_dim = hidden // heads

    class RMSNorm(nn.Module):
        def __init__(self, n: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n) + 0.1 * torch.randn(n))
            self.eps = eps

        def forward(self, x):
            dtype = x.dtype
            x = x.to(torch.float32)
            var = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(var + self.eps)
            return self.weight * x.to(dtype)

    def rotate_half(x):
        a, b = x[..., : head_dim // 2], x[..., head_dim // 2:]
        return torch.cat((-b, a), dim=-1)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
            self.q = nn.Linear(hidden, heads * head_dim, bias=False)
            self.k = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, hidden, bias=False)
            self.gate = nn.Linear(hidden, ffn, bias=False)
            self.up = nn.Linear(hidden, ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)
            mask = torch.full((seq, seq), float("-inf")).triu(1)
            self.register_buffer("mask", mask.view(1, 1, seq, seq))
            if rope:
                inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
                freqs = torch.outer(torch.arange(seq).float(), inv)
                emb = torch.cat((freqs, freqs), dim=-1)
                self.register_buffer("cos", emb.cos().view(1, 1, seq, head_dim))
                self.register_buffer("sin", emb.sin().view(1, 1, seq, head_dim))

        def repeat_kv(self, x):  # (B, KV, S, D) -> (B, H, S, D), as Llama code writes it
            b, kv, s, d = x.shape
            rep = heads // kv_heads
            return x[:, :, None, :, :].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)

        def forward(self, x):
            b, s, _ = x.shape
            h = self.norm1(x)
            q = self.q(h).view(b, s, heads, head_dim).transpose(1, 2)
            k = self.k(h).view(b, s, kv_heads, head_dim).transpose(1, 2)
            v = self.v(h).view(b, s, kv_heads, head_dim).transpose(1, 2)
            if rope:
                q = q * self.cos + rotate_half(q) * self.sin
                k = k * self.cos + rotate_half(k) * self.sin
            k, v = self.repeat_kv(k), self.repeat_kv(v)
            scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim) + self.mask
            ctx = torch.matmul(torch.softmax(scores.float(), dim=-1).to(q.dtype), v)
            x = x + self.o(ctx.transpose(1, 2).reshape(b, s, hidden))
            h = self.norm2(x)
            return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))

    return Block()


# --------------------------------------------------------------------------- export
def export(model, example, path: str, input_names: list[str]) -> None:
    torch = _torch()
    model.eval()
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, example, tmp, opset_version=17, dynamo=False, input_names=input_names,
                          output_names=["output"], do_constant_folding=True)
    os.replace(tmp, path)  # a failed export leaves no half-written model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default="models", help="output folder (default: models)")
    ap.add_argument("--models", default="resnet50,bert,llama", help="comma-separated: resnet50, bert, llama")
    ap.add_argument("--batch", type=int, default=32, help="ResNet-50 batch (default 32)")
    ap.add_argument("--bert-batch", type=int, default=8)
    ap.add_argument("--bert-seq", type=int, default=512)
    ap.add_argument("--bert-layers", type=int, default=12)
    ap.add_argument("--llama-seq", type=int, default=2048)
    ap.add_argument("--llama-hidden", type=int, default=4096, help="Llama hidden size (default 4096; 32 q / 8 kv heads)")
    ap.add_argument("--llama-ffn", type=int, default=11008, help="Llama MLP size (default 11008)")
    ap.add_argument("--rope", action="store_true", help="add rotary embeddings to the Llama layer")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch = _torch()
    os.makedirs(args.out, exist_ok=True)
    wanted = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = set(wanted) - {"resnet50", "bert", "llama"}
    if unknown:
        ap.error(f"unknown model(s): {', '.join(sorted(unknown))}")
    for name in wanted:
        torch.manual_seed(args.seed)
        t0 = time.perf_counter()
        if name == "resnet50":
            import torchvision

            path = os.path.join(args.out, f"resnet50_b{args.batch}.onnx")
            export(torchvision.models.resnet50(weights=None), (torch.randn(args.batch, 3, 224, 224),), path, ["x"])
        elif name == "bert":
            path = os.path.join(args.out, "bert_base.onnx")
            ids = torch.randint(0, 30522, (args.bert_batch, args.bert_seq))
            export(bert_base(layers=args.bert_layers), (ids,), path, ["input_ids"])
        else:
            path = os.path.join(args.out, "llama_block.onnx")
            block = llama_block(hidden=args.llama_hidden, ffn=args.llama_ffn, seq=args.llama_seq, rope=args.rope)
            export(block, (torch.randn(1, args.llama_seq, args.llama_hidden),), path, ["x"])
        size = os.path.getsize(path) / 2**20
        print(f"{name}: {path} ({size:.0f} MiB, {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
