#!/usr/bin/python3
"""sluice's CTC speech encoder (docs/model.md) in PyTorch eager: the step-time baseline of sluice's
CUDA trainer and an independent cross-check of the C++ reference (reference/).

The module is exactly sluice's model: Conv2d subsampling (two 3x3/2 convs + ReLU, linear C*F'->C),
sinusoidal positions, n pre-LayerNorm encoder layers (masked MHA, GELU erf FFN, residual dropout),
final LayerNorm, linear head, log_softmax, CTC (blank 0, zero_infinity) averaged over the batch.
Its parameters carry sluice's names and shapes ("head.out.weight", "layers.11.fc2.weight",
"subsampling.conv1.bias", LayerNorms hold "gamma"/"beta"), map one to one onto the flat
ParameterLayout and are checked against the parameter count of docs/model.md on every run.

Benchmark (a training step = zero_grad, forward, CTC, backward, clip to global norm 1, AdamW):

  /usr/bin/python3 tools/bench/asr_torch_step.py --device cuda --preset small --vocab 32 \
      --batch 32 --frames 1000 --steps 50 --warmup-steps 10 --dtype bf16 --json

  --dtype bf16: autocast to bfloat16 on CUDA (fp32 master weights; CTC and log_softmax in fp32 as
  autocast does); fp32: no autocast. AdamW is fused on CUDA (foreach elsewhere). --compile wraps
  the model in torch.compile (off by default: eager is the baseline). --lengths full gives every
  row --frames frames; uniform draws each in [frames/2, frames] (the longest is --frames), to
  exercise padding masks. Labels: --label-ratio of each row's subsampled length, random classes
  in [1, vocab). step_ms is the median over the timed steps, each bracketed by
  torch.cuda.synchronize(). --json prints one object.

Cross-check against sluice-train (eval mode, dropout off):

  tools/make-sample-corpus --out /tmp/c --count 40
  build/tools/shardify audio -m /tmp/c/manifest.jsonl -o /tmp/ds --tokenizer char --features fbank
  build/tools/sluice-train /tmp/ds --preset tiny --steps 5 --features precomputed \
      --checkpoint /tmp/run.ckpt --json              # prints "eval_loss"
  /usr/bin/python3 tools/bench/asr_torch_step.py --check-checkpoint /tmp/run.ckpt --dataset /tmp/ds

  The checkpoint (docs/formats/checkpoint.md) is parsed and validated here (magic, version, sizes,
  end magic, reserved fields, section tags and lengths; the XXH3-64 checksum only when the Python
  module `xxhash` is importable, otherwise a note says it was skipped). Its CONF gives the model
  and the run's eval_fraction / cmvn / features; the script reads the dataset's shards (zstd
  blocks through the `zstd` command), takes the same held-out rows (held_out.h's FNV-1a +
  splitmix64 hash of the key), the stored float16 fbank features (the run must use --features
  precomputed: Python does not reimplement sluice's fbank), applies per-utterance CMVN as the
  loader does, and prints the mean CTC loss per utterance: sluice-train's last "eval_loss".
  --eval-all uses every row (a run with --eval DIR: pass that DIR as --dataset). --expect-loss X
  exits 1 when |loss - X| > --tolerance * max(1, |X|). Computed in float64 by default
  (--check-dtype fp32 for the float32 view). Without --dataset, a deterministic synthetic batch
  is evaluated instead.

  --cpp-harness BIN (with --check-checkpoint, or alone with --preset/--vocab/--seed): runs the C++
  reference through build/tools/reference-case (tools/bench/reference_case.cc; docs/baselines.md) on a
  synthetic ragged batch, in eval and training mode (sluice's hash dropout masks reproduced here),
  double and float, and compares the loss, per-utterance losses and every parameter gradient;
  alone, it also checks that this script's initialisation equals Model::InitParameters bit for bit.

Run with Debian's python here (/usr/bin/python3: torch, numpy); on a GPU machine with whatever
python has torch >= 1.13 (fused AdamW and scaled_dot_product_attention need 2.x; older versions
fall back to foreach AdamW and explicit attention).
"""
import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

# ---- configuration and layout (reference/model.h) -------------------------------------------

PRESETS = {
    "tiny": dict(d_model=32, n_heads=2, n_layers=2, d_ff=128),
    "small": dict(d_model=256, n_heads=4, n_layers=12, d_ff=1024),
}
# docs/model.md's table at F = 80: constant + per_vocab * vocab.
DOC_COUNTS_F80 = {"tiny": (54528, 33), "small": (11315712, 257)}


def conv_out(n):
    return 0 if n < 3 else (n - 3) // 2 + 1


def subsampled_length(n):
    return conv_out(conv_out(n))


def make_config(preset, vocab, n_mels, dropout=0.1):
    c = dict(PRESETS[preset])
    c.update(n_mels=n_mels, vocab=vocab, dropout=dropout, preset=preset)
    if n_mels < 7 or vocab < 2 or c["d_model"] % c["n_heads"]:
        raise SystemExit("bad model config %r" % c)
    return c


def sluice_layout(c):
    """(name, shape, decay) in sluice's flat buffer order (ParameterLayout)."""
    C, V, D, F2 = c["d_model"], c["vocab"], c["d_ff"], subsampled_length(c["n_mels"])
    out = [("head.out.weight", (V, C), True), ("head.out.bias", (V,), False),
           ("head.ln.gamma", (C,), False), ("head.ln.beta", (C,), False)]
    for l in range(c["n_layers"] - 1, -1, -1):
        p = "layers.%d." % l
        out += [(p + "fc2.weight", (C, D), True), (p + "fc2.bias", (C,), False),
                (p + "fc1.weight", (D, C), True), (p + "fc1.bias", (D,), False),
                (p + "ln2.gamma", (C,), False), (p + "ln2.beta", (C,), False),
                (p + "attn.proj.weight", (C, C), True), (p + "attn.proj.bias", (C,), False),
                (p + "attn.qkv.weight", (3 * C, C), True), (p + "attn.qkv.bias", (3 * C,), False),
                (p + "ln1.gamma", (C,), False), (p + "ln1.beta", (C,), False)]
    out += [("subsampling.out.weight", (C, C * F2), True), ("subsampling.out.bias", (C,), False),
            ("subsampling.conv2.weight", (C, C, 3, 3), True), ("subsampling.conv2.bias", (C,), False),
            ("subsampling.conv1.weight", (C, 1, 3, 3), True), ("subsampling.conv1.bias", (C,), False)]
    return out


# ---- the model ----------------------------------------------------------------------------------

class LayerNorm(torch.nn.Module):
    """Biased variance, eps 1e-5; parameters named as sluice's (gamma, beta)."""

    def __init__(self, n):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(n))
        self.beta = torch.nn.Parameter(torch.zeros(n))

    def forward(self, x):
        if x.dtype in (torch.bfloat16, torch.float16):
            x = x.float()  # what CUDA autocast does for layer_norm; CPU autocast (1.13) does not
        return F.layer_norm(x, (x.shape[-1],), self.gamma, self.beta, 1e-5)


class Subsampling(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        C = c["d_model"]
        self.conv1 = torch.nn.Conv2d(1, C, 3, 2)
        self.conv2 = torch.nn.Conv2d(C, C, 3, 2)
        self.out = torch.nn.Linear(C * subsampled_length(c["n_mels"]), C)

    def forward(self, x):  # [B, T, F] -> [B, T', C]
        x = F.relu(self.conv2(F.relu(self.conv1(x.unsqueeze(1)))))  # [B, C, T', F']
        B, C, T2, F2 = x.shape
        return self.out(x.transpose(1, 2).reshape(B, T2, C * F2))  # channel-major, then frequency


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        C = c["d_model"]
        self.H = c["n_heads"]
        self.qkv = torch.nn.Linear(C, 3 * C)
        self.proj = torch.nn.Linear(C, C)

    def forward(self, x, keep, keep_any):
        # keep [B, 1, 1, T] True for valid keys; keep_any [B, 1, 1] False for rows of length 0,
        # whose output is 0 as in the reference (their mask is widened to avoid NaN, then zeroed).
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.H, C // self.H).permute(2, 0, 3, 1, 4)
        if hasattr(F, "scaled_dot_product_attention") and ATTENTION["impl"] == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        else:
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(C // self.H))
            o = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ v
        o = o.transpose(1, 2).reshape(B, T, C)
        if keep_any is not None:
            o = o * keep_any.to(o.dtype)
        return self.proj(o)


# Residual dropout: torch's own (the benchmark), or sluice's counter-based hash mask (the
# cross-check: the same elements as the reference drop for a given seed and step).
DROPOUT = {"mode": "torch", "seed": 0, "step": 0}


def residual_dropout(x, p, training, tensor_id):
    if not training or p <= 0:
        return x
    if DROPOUT["mode"] == "torch":
        return F.dropout(x, p, True)
    u = hash_uniform(DROPOUT["seed"], DROPOUT["step"], tensor_id, x.numel())
    keep = torch.from_numpy(u >= np.float32(p)).view(x.shape).to(x.device)
    p32 = np.float32(p)  # ModelConfig::dropout is a float; the scale is Real(1) / (Real(1) - p)
    scale = 1.0 / (1.0 - float(p32)) if x.dtype == torch.float64 else float(np.float32(1) / (np.float32(1) - p32))
    return torch.where(keep, x * scale, torch.zeros_like(x))


class EncoderLayer(torch.nn.Module):
    def __init__(self, c, index):
        super().__init__()
        self.index = index
        self.ln1 = LayerNorm(c["d_model"])
        self.attn = Attention(c)
        self.ln2 = LayerNorm(c["d_model"])
        self.fc1 = torch.nn.Linear(c["d_model"], c["d_ff"])
        self.fc2 = torch.nn.Linear(c["d_ff"], c["d_model"])
        self.p = c["dropout"]

    def forward(self, x, keep, keep_any):
        i = 2 * self.index  # sluice's dropout sites: 2l after the projection, 2l + 1 after FC2
        x = x + residual_dropout(self.attn(self.ln1(x), keep, keep_any), self.p, self.training, i)
        return x + residual_dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), self.p, self.training,
                                    i + 1)


class Head(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln = LayerNorm(c["d_model"])
        self.out = torch.nn.Linear(c["d_model"], c["vocab"])

    def forward(self, x):
        return self.out(self.ln(x))


ATTENTION = {"impl": "sdpa"}


class SluiceCtcModel(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.subsampling = Subsampling(c)
        self.layers = torch.nn.ModuleList(EncoderLayer(c, l) for l in range(c["n_layers"]))
        self.head = Head(c)
        self._pe = {}

    def positions(self, T, C, device, dtype):
        key = (T, C, device, dtype)
        if key not in self._pe:
            t = torch.arange(T, dtype=torch.float64)[:, None]
            ch = torch.arange(C)
            angle = t / torch.pow(10000.0, (ch - ch % 2).to(torch.float64) / C)[None, :]
            pe = torch.where(ch % 2 == 0, torch.sin(angle), torch.cos(angle))
            self._pe[key] = pe.to(device=device, dtype=dtype)
        return self._pe[key]

    def forward(self, feats, frames, has_empty=None):
        """feats [B, T, F], frames [B] -> log_probs [B, T', V] (fp32), out_lengths [B].
        has_empty: whether a row has < 7 frames, when the caller knows (else a device sync)."""
        x = self.subsampling(feats)
        B, T2, C = x.shape
        x = x + self.positions(T2, C, x.device, x.dtype)
        out_len = ((frames - 1) // 2 - 1) // 2
        out_len = torch.where(frames < 7, torch.zeros_like(out_len), out_len)
        keep = torch.arange(T2, device=x.device)[None, :] < out_len[:, None]  # [B, T']
        keep_any = out_len[:, None] > 0  # [B, 1]
        keep = keep | ~keep_any  # rows of length 0: attend to everything, output zeroed below
        keep4 = keep[:, None, None, :]
        if has_empty is None:
            has_empty = bool((out_len == 0).any())
        any3 = keep_any[:, :, None] if has_empty else None  # [B, 1, 1]
        for layer in self.layers:
            x = layer(x, keep4, any3)
        logits = self.head(x)
        if logits.dtype not in (torch.float32, torch.float64):
            logits = logits.float()  # CTC in fp32 under bf16 autocast
        return torch.log_softmax(logits, dim=-1), out_len


def ctc_mean_loss(log_probs, out_len, labels, label_len):
    """Per-utterance CTC (blank 0, zero_infinity), mean over the batch."""
    # Rows with no output frames have loss 0 either way (impossible, or empty labels: p = 1), but
    # torch's ctc_loss mishandles input length 0 (garbage on CPU in 1.13): give it one frame and
    # mask the result, which also zeroes that frame's gradient.
    empty = out_len == 0
    losses = F.ctc_loss(log_probs.transpose(0, 1), labels, torch.clamp(out_len, min=1), label_len,
                        blank=0, reduction="none", zero_infinity=True)
    losses = torch.where(empty, torch.zeros_like(losses), losses)
    return losses.mean(), losses


def check_layout(model, c):
    """The module's parameters are exactly sluice's layout (names, shapes); returns the count."""
    named = dict(model.named_parameters())
    layout = sluice_layout(c)
    names = [n for n, _, _ in layout]
    if set(named) != set(names) or len(named) != len(names):
        raise SystemExit("layout mismatch: only torch %s, only sluice %s" %
                         (sorted(set(named) - set(names)), sorted(set(names) - set(named))))
    for n, shape, _ in layout:
        if tuple(named[n].shape) != shape:
            raise SystemExit("%s: torch shape %s, sluice %s" % (n, tuple(named[n].shape), shape))
    total = sum(math.prod(s) for _, s, _ in layout)
    if c["n_mels"] == 80:
        base, per_vocab = DOC_COUNTS_F80[c["preset"]]
        if total != base + per_vocab * c["vocab"]:
            raise SystemExit("parameter count %d != docs/model.md's %d + %d * %d" %
                             (total, base, per_vocab, c["vocab"]))
    return total


def load_flat(model, c, flat):
    """Copies sluice's flat float32 buffer into the module, in ParameterLayout order."""
    named = dict(model.named_parameters())
    off = 0
    with torch.no_grad():
        for n, shape, _ in sluice_layout(c):
            cnt = math.prod(shape)
            named[n].copy_(torch.from_numpy(np.array(flat[off:off + cnt], dtype=np.float32)).view(shape))
            off += cnt
    if off != len(flat):
        raise SystemExit("flat buffer holds %d values, the layout %d" % (len(flat), off))


# ---- sluice's initialisation (Model::InitParameters) --------------------------------------------

M64 = (1 << 64) - 1
GOLDEN = 0x9e3779b97f4a7c15


def _mix(z):  # splitmix64 finaliser on python ints or numpy uint64 arrays
    if isinstance(z, np.ndarray):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return z ^ (z >> np.uint64(31))
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def hash_uniform(seed, step, tensor_id, n):
    """DropoutUniform(key, i) for i in [0, n): float64 holding the exact float32 values."""
    h = _mix((seed + GOLDEN) & M64)
    h = _mix(h ^ ((step + GOLDEN) & M64))
    h = _mix(h ^ ((tensor_id + GOLDEN) & M64))
    with np.errstate(over="ignore"):
        i = np.arange(n, dtype=np.uint64) + np.uint64(GOLDEN)
        hh = _mix(np.uint64(h) ^ i)
    return (hh >> np.uint64(40)).astype(np.float64) / 16777216.0


def sluice_init_flat(c, seed):
    parts = []
    for idx, (name, shape, decay) in enumerate(sluice_layout(c)):
        cnt = math.prod(shape)
        if not decay:
            parts.append(np.full(cnt, 1.0 if name.endswith(".gamma") else 0.0, np.float32))
            continue
        bound = 1.0 / math.sqrt(cnt / shape[0])  # fan_in = row length
        u = hash_uniform(seed, M64, idx, cnt)
        parts.append(((2.0 * u - 1.0) * bound).astype(np.float32))
    return np.concatenate(parts)


# ---- sluice-train checkpoints (docs/formats/checkpoint.md) --------------------------------------

def read_checkpoint(path):
    data = open(path, "rb").read()
    def fail(msg):
        raise SystemExit("%s: %s" % (path, msg))
    if len(data) < 48 or data[:8] != b"SLUICECK":
        fail("not a sluice-train checkpoint")
    version, flags, file_bytes, sections, reserved = struct.unpack_from("<IIQII", data, 8)
    if version > 1:
        fail("version %d is newer than 1" % version)
    if file_bytes != len(data):
        fail("%s: the header says %d bytes, the file has %d" %
             ("truncated" if len(data) < file_bytes else "extended", file_bytes, len(data)))
    if data[-8:] != b"SLCKEND\0":
        fail("bad end magic")
    stored = struct.unpack_from("<Q", data, len(data) - 16)[0]
    try:
        import xxhash
        computed = xxhash.xxh3_64_intdigest(data[:-16], seed=0)
        if computed != stored:
            fail("checksum mismatch (stored %016x, computed %016x)" % (stored, computed))
        note = "checksum XXH3-64 ok"
    except ImportError:
        note = "checksum not verified (no python xxhash module; XXH3-64 %016x stored)" % stored
    if flags or reserved or sections != 6:
        fail("reserved fields or section count %d" % sections)
    out, off = {}, 32
    for tag in (b"CONF", b"TOKN", b"PARM", b"ADAM", b"LOAD", b"CNTR"):
        if off + 16 > len(data) - 16:
            fail("section %s out of bounds" % tag.decode())
        t, res, length = struct.unpack_from("<4sIQ", data, off)
        if t != tag or res:
            fail("expected section %s at %d, found %r" % (tag.decode(), off, t))
        if off + 16 + length > len(data) - 16:
            fail("section %s runs past the footer" % tag.decode())
        out[tag.decode()] = data[off + 16:off + 16 + length]
        off += 16 + ((length + 7) // 8) * 8
    if off != len(data) - 16:
        fail("%d bytes between the last section and the footer" % (len(data) - 16 - off))
    conf = json.loads(out["CONF"].decode("utf-8"))
    fingerprint, vocab, _ = struct.unpack("<QiI", out["TOKN"])
    (count,) = struct.unpack_from("<Q", out["PARM"], 0)
    if len(out["PARM"]) != 8 + 4 * count:
        fail("PARM holds %d bytes for %d floats" % (len(out["PARM"]), count))
    params = np.frombuffer(out["PARM"], dtype="<f4", offset=8, count=count)
    step = struct.unpack_from("<QQ", out["CNTR"], 0)
    return dict(conf=conf, vocab=vocab, fingerprint=fingerprint, params=params, step=step[0],
                seed=step[1], note=note)


# ---- dataset shards (docs/formats/shard.md, manifest.md) ----------------------------------------

def zstd_decompress(blob):
    r = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob, stdout=subprocess.PIPE, check=True)
    return r.stdout


def read_dataset(directory):
    """Yields (key, features float32 [frames, dim] or None, tokens int list) in dataset order."""
    manifest = json.load(open(os.path.join(directory, "manifest.json"), encoding="utf-8"))
    for shard in manifest["shards"]:
        data = open(os.path.join(directory, shard["file"]), "rb").read()
        if data[:8] != b"SLUICESH" or data[-8:] != b"SLUICESH":
            raise SystemExit("%s: not a sluice shard" % shard["file"])
        index_offset, index_size = struct.unpack_from("<QQ", data, len(data) - 48)
        magic, nb, nr, key_bytes = struct.unpack_from("<IIQQ", data, index_offset)
        if magic != 0x58494C53:
            raise SystemExit("%s: bad index magic" % shard["file"])
        blocks = [struct.unpack_from("<QIIQ", data, index_offset + 32 + 24 * b) for b in range(nb)]
        rec0 = index_offset + 32 + 24 * nb
        keys0 = rec0 + 32 * nr
        cache = {}
        for r in range(nr):
            blk, off, size, koff, ksize, _, _ = struct.unpack_from("<IIIIIIQ", data, rec0 + 32 * r)
            key = data[keys0 + koff:keys0 + koff + ksize].decode("utf-8")
            if blk not in cache:
                cache = {blk: zstd_decompress(data[blocks[blk][0]:blocks[blk][0] + blocks[blk][1]])}
            payload = cache[blk][off:off + size]
            feats, tokens, p = None, [], 0
            while p < len(payload):
                ftype, fsize = payload[p], struct.unpack_from("<I", payload, p + 4)[0]
                body = payload[p + 8:p + 8 + fsize]
                if ftype == 4:
                    tokens = list(np.frombuffer(body, dtype="<u4").astype(np.int64))
                elif ftype == 5:
                    frames, bins = struct.unpack_from("<II", body, 0)
                    feats = np.frombuffer(body, dtype="<f2", offset=8,
                                          count=frames * bins).astype(np.float32).reshape(frames, bins)
                p += 8 + ((fsize + 7) // 8) * 8
            yield key, feats, tokens


def is_held_out(key, fraction):
    """trainer/held_out.h: FNV-1a 64 of the key, one splitmix64 round, 53 bits."""
    h = 0xcbf29ce484222325
    for ch in key.encode("utf-8"):
        h = ((h ^ ch) * 0x100000001b3) & M64
    h = _mix(h)
    return (h >> 11) * 2.0 ** -53 < fraction


def utterance_cmvn(x):
    """features/cmvn.cc UtteranceCmvn with norm_vars: double sums, float mean and 1/std."""
    d = x.astype(np.float64)
    m = d.sum(0) / len(d)
    var = (d * d).sum(0) / len(d) - m * m
    inv = np.where(var > 1e-20, 1.0 / np.sqrt(np.maximum(var, 1e-300)), 1.0).astype(np.float32)
    return (x - m.astype(np.float32)) * inv


def pad_batch(items, n_mels):
    """items: (features [n, F] float32, labels list) -> tensors as sluice's RowBatch builds them."""
    T = max(7, max(len(f) for f, _ in items))
    S = max(1, max(len(l) for _, l in items))
    feats = torch.zeros(len(items), T, n_mels, dtype=torch.float32)
    labels = torch.zeros(len(items), S, dtype=torch.long)
    for i, (f, l) in enumerate(items):
        feats[i, :len(f)] = torch.from_numpy(f)
        labels[i, :len(l)] = torch.tensor(l, dtype=torch.long)
    frames = torch.tensor([len(f) for f, _ in items], dtype=torch.long)
    label_len = torch.tensor([len(l) for _, l in items], dtype=torch.long)
    return feats, frames, labels, label_len


# ---- synthetic batches --------------------------------------------------------------------------

def synthetic_batch(B, T, n_mels, vocab, lengths, label_ratio, seed):
    g = torch.Generator().manual_seed(seed)
    feats = torch.randn(B, T, n_mels, generator=g)
    if lengths == "uniform":
        frames = torch.randint(T // 2, T + 1, (B,), generator=g)
        frames[0] = T
    else:
        frames = torch.full((B,), T, dtype=torch.long)
    for b in range(B):
        feats[b, int(frames[b]):] = 0
    out_len = torch.tensor([subsampled_length(int(f)) for f in frames])
    label_len = torch.clamp((out_len.double() * label_ratio).long(), min=1)
    S = int(label_len.max())
    labels = torch.randint(1, vocab, (B, S), generator=g)
    for b in range(B):
        labels[b, int(label_len[b]):] = 0
    return feats, frames, labels, label_len


# ---- the C++ reference through a harness (docs/baselines.md) ------------------------------------

def write_case(path, c, training, seed, step, feats, frames, labels, label_len, flat):
    B, T, _ = feats.shape
    S = labels.shape[1]
    with open(path, "wb") as f:
        f.write(b"SLCASE01")
        f.write(struct.pack("<6if", c["n_mels"], c["d_model"], c["n_heads"], c["n_layers"], c["d_ff"],
                            c["vocab"], c["dropout"]))
        f.write(struct.pack("<iQQ3i", int(training), seed, step, B, T, S))
        f.write(feats.numpy().astype("<f4").tobytes())
        for t in (frames, labels, label_len):
            f.write(t.numpy().astype("<i4").tobytes())
        f.write(struct.pack("<Q", len(flat)))
        f.write(np.asarray(flat, dtype="<f4").tobytes())


def flat_grads(model, c):
    named = dict(model.named_parameters())
    return torch.cat([named[n].grad.reshape(-1).double() for n, _, _ in sluice_layout(c)]).numpy()


def compare_with_harness(args, c, flat):
    """Loss, per-utterance losses and every gradient of the C++ reference vs this module."""
    import tempfile
    feats, frames, labels, label_len = synthetic_batch(4, 203, c["n_mels"], c["vocab"], "uniform", 0.3, 7)
    frames[3] = 5  # a row too short for the subsampling: no output frames, loss 0 (zero_infinity)
    feats[3, 5:] = 0
    label_len[3] = 2
    worst = 0.0
    ok = True
    for training in (False, True):
        for real, tdtype, tol in (("double", torch.float64, 1e-9), ("float", torch.float32, 2e-4)):
            with tempfile.TemporaryDirectory() as tmp:
                case, out = os.path.join(tmp, "case"), os.path.join(tmp, "out")
                write_case(case, c, training, args.seed, 3, feats, frames, labels, label_len, flat)
                subprocess.run([args.cpp_harness, case, out, real], check=True)
                res = np.fromfile(out, dtype="<f8")
            cpp_loss, cpp_losses, cpp_grads = res[0], res[1:5], res[5:]
            model = SluiceCtcModel(c)
            load_flat(model, c, flat)
            model = model.to(tdtype).train(training)
            DROPOUT.update(mode="hash", seed=args.seed, step=3)
            lp, out_len = model(feats.to(tdtype), frames)
            loss, losses = ctc_mean_loss(lp.to(tdtype), out_len, labels, label_len)
            loss.backward()
            g = flat_grads(model, c)
            loss = loss.detach()  # torch 2.x warns when a tensor that requires grad becomes a float
            dl = abs(float(loss) - cpp_loss) / max(1.0, abs(cpp_loss))
            dls = float(np.max(np.abs(losses.detach().double().numpy() - cpp_losses))) / max(1.0, abs(cpp_loss))
            dg = float(np.max(np.abs(g - cpp_grads))) / max(1e-30, float(np.max(np.abs(cpp_grads))))
            good = max(dl, dls, dg) <= tol
            ok &= good
            print("%-8s %-6s loss torch %.12g C++ %.12g | rel diff loss %.2e, per-utterance %.2e, "
                  "gradients (max |diff| / max |g|, %d values) %.2e: %s" %
                  ("training" if training else "eval", real, float(loss), cpp_loss, dl, dls, len(g), dg,
                   "OK" if good else "MISMATCH (tolerance %g)" % tol))
    DROPOUT.update(mode="torch")
    return 0 if ok else 1


# ---- modes ---------------------------------------------------------------------------------------

def run_harness_only(args):
    c = make_config(args.preset, args.vocab, args.n_mels, args.dropout)
    n = check_layout(SluiceCtcModel(c), c)
    print("preset %s, vocab %d: %d parameters (layout matches), sluice init seed %d" %
          (c["preset"], c["vocab"], n, args.seed))
    flat = sluice_init_flat(c, args.seed)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:  # the initialisation itself, bit for bit
        case, out = os.path.join(tmp, "case"), os.path.join(tmp, "out")
        f, fr, l, ll = synthetic_batch(1, 7, c["n_mels"], c["vocab"], "full", 0.5, 0)
        write_case(case, c, False, args.seed, 0, f, fr, l, ll, np.zeros_like(flat))
        subprocess.run([args.cpp_harness, case, out, "init"], check=True)
        cpp = np.fromfile(out, dtype="<f4")
    same = cpp.shape == flat.shape and np.array_equal(cpp, flat)
    print("initialisation (seed %d): %s" % (args.seed, "bit-identical to Model::InitParameters" if same
                                             else "DIFFERS from Model::InitParameters"))
    rc = compare_with_harness(args, c, flat)
    return rc if same else 1


def run_check(args):
    ck = read_checkpoint(args.check_checkpoint)
    m = ck["conf"]["model"]
    run = ck["conf"].get("run", {})
    c = make_config(m["preset"], m["vocab"], m["n_mels"], m["dropout"])
    for k in ("d_model", "n_heads", "n_layers", "d_ff"):
        if m[k] != c[k]:
            raise SystemExit("checkpoint model %s %s != preset %s's %s" % (k, m[k], m["preset"], c[k]))
    dtype = torch.float64 if args.check_dtype == "fp64" else torch.float32
    ATTENTION["impl"] = "manual"
    model = SluiceCtcModel(c)
    n = check_layout(model, c)
    load_flat(model, c, ck["params"])
    model = model.to(dtype).eval()
    print("%s: %s; preset %s, vocab %d, %d parameters (layout matches), step %d" %
          (args.check_checkpoint, ck["note"], c["preset"], c["vocab"], n, ck["step"]))
    if args.cpp_harness:
        rc = compare_with_harness(args, c, ck["params"])
        if rc or not args.dataset:
            return rc
    if args.dataset:
        features = run.get("features", "fbank")
        if isinstance(features, dict):  # CONF's run.features: the feature flags, with "kind"
            features = features.get("kind", "fbank")
        if features != "precomputed":
            raise SystemExit("the run used --features %s; this check needs a run with --features "
                             "precomputed (Python does not recompute sluice's fbank)" % features)
        fraction = 0.0 if args.eval_all else float(run.get("eval_fraction", 0.1))
        cmvn = bool(run.get("cmvn", True))
        items = []
        for key, feats, tokens in read_dataset(args.dataset):
            if fraction > 0 and not is_held_out(key, fraction):
                continue
            if feats is None:
                raise SystemExit("%s: record %s holds no features" % (args.dataset, key))
            if feats.shape[1] != c["n_mels"]:
                raise SystemExit("features of dim %d, model n_mels %d" % (feats.shape[1], c["n_mels"]))
            if len(feats) > 0 and cmvn:
                feats = utterance_cmvn(feats)
            items.append((feats, [int(t) for t in tokens]))
        if not items:
            raise SystemExit("no evaluation rows")
        what = "%d %s rows of %s (cmvn %s)" % (len(items), "all" if fraction <= 0 else
                                               "held-out (fraction %g)" % fraction, args.dataset, cmvn)
    else:
        feats, frames, labels, label_len = synthetic_batch(4, 203, c["n_mels"], c["vocab"], "uniform", 0.3, 7)
        items = [(feats[b, :int(frames[b])].numpy(), labels[b, :int(label_len[b])].tolist()) for b in range(4)]
        what = "the synthetic batch (B 4, T 203, lengths uniform, seed 7)"
    for f, l in items:
        if any(t < 1 or t >= c["vocab"] for t in l):
            raise SystemExit("token id outside [1, %d)" % c["vocab"])
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(items), 16):  # padding changes nothing; batches keep memory small
            feats, frames, labels, label_len = pad_batch(items[i:i + 16], c["n_mels"])
            lp, out_len = model(feats.to(dtype), frames)
            _, losses = ctc_mean_loss(lp.to(dtype), out_len, labels, label_len)
            total += float(losses.double().sum())
            count += len(losses)
    loss = total / count
    print("mean CTC loss per utterance over %s: %.9g (%s)" % (what, loss, args.check_dtype))
    if args.expect_loss is not None:
        diff = abs(loss - args.expect_loss)
        tol = args.tolerance * max(1.0, abs(args.expect_loss))
        print("expected %.9g: |diff| %.3g, relative %.3g, tolerance %.3g: %s" %
              (args.expect_loss, diff, diff / max(1e-300, abs(args.expect_loss)), tol,
               "OK" if diff <= tol else "MISMATCH"))
        return 0 if diff <= tol else 1
    return 0


def run_bench(args):
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device visible to torch")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.attention == "manual" or not hasattr(F, "scaled_dot_product_attention"):
        ATTENTION["impl"] = "manual"
    torch.manual_seed(args.seed)
    c = make_config(args.preset, args.vocab, args.n_mels, args.dropout)
    model = SluiceCtcModel(c)
    n_params = check_layout(model, c)
    load_flat(model, c, sluice_init_flat(c, args.seed))
    model = model.to(device).train()
    decay = {n for n, _, d in sluice_layout(c) if d}
    named = dict(model.named_parameters())
    groups = [{"params": [named[n] for n in named if n in decay], "weight_decay": args.weight_decay},
              {"params": [named[n] for n in named if n not in decay], "weight_decay": 0.0}]
    opt_kw = dict(lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    fused = False
    if device.type == "cuda":
        try:
            opt = torch.optim.AdamW(groups, fused=True, **opt_kw)
            fused = True
        except (TypeError, RuntimeError):
            opt = torch.optim.AdamW(groups, foreach=True, **opt_kw)
    else:
        opt = torch.optim.AdamW(groups, **opt_kw)
    if args.compile and not hasattr(torch, "compile"):
        raise SystemExit("--compile needs torch >= 2.0 (this is %s)" % torch.__version__)
    step_model = torch.compile(model) if args.compile else model

    feats, frames, labels, label_len = synthetic_batch(
        args.batch, args.frames, args.n_mels, args.vocab, args.lengths, args.label_ratio, args.seed)
    has_empty = bool((frames < 7).any())
    feats, frames = feats.to(device), frames.to(device)
    labels, label_len = labels.to(device), label_len.to(device)
    use_amp = args.dtype == "bf16"
    if use_amp and device.type != "cuda":
        print("note: --dtype bf16 autocast on %s" % device.type, file=sys.stderr)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
            lp, out_len = step_model(feats, frames, has_empty)
        loss, _ = ctc_mean_loss(lp, out_len, labels, label_len)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        return loss

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    losses, times = [], []
    for i in range(args.warmup_steps + args.steps):
        sync()
        t0 = time.perf_counter()
        loss = step()
        sync()
        dt = time.perf_counter() - t0
        if i >= args.warmup_steps:
            times.append(dt)
        losses.append(float(loss.detach()))
    step_s = statistics.median(times)
    frames_total = int(frames.sum())
    out_total = sum(subsampled_length(int(f)) for f in frames.tolist())
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (%d threads)" %
                  torch.get_num_threads(),
        "torch": torch.__version__,
        "preset": args.preset, "vocab": args.vocab, "n_mels": args.n_mels,
        "parameters": n_params,
        "dtype": args.dtype, "compile": bool(args.compile), "fused_adamw": fused,
        "attention": ATTENTION["impl"],
        "batch": args.batch, "frames": args.frames, "lengths": args.lengths,
        "encoder_frames": subsampled_length(args.frames),
        "steps": args.steps, "warmup_steps": args.warmup_steps,
        "step_ms": step_s * 1e3,
        "step_ms_min": min(times) * 1e3, "step_ms_mean": statistics.mean(times) * 1e3,
        "utterances_per_second": args.batch / step_s,
        "frames_per_second": frames_total / step_s,
        "encoder_tokens_per_second": out_total / step_s,
        "audio_hours_per_second": frames_total * 0.01 / 3600 / step_s,
        "first_loss": losses[0], "last_loss": losses[-1],
    }
    if device.type == "cuda":
        result["max_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print("%-26s %s" % (k, ("%.4g" % v) if isinstance(v, float) else v))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="small")
    ap.add_argument("--vocab", type=int, default=32, help="classes including the blank (0)")
    ap.add_argument("--n-mels", type=int, default=80)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--frames", type=int, default=1000, help="T: input frames of the longest row")
    ap.add_argument("--lengths", choices=["full", "uniform"], default="full")
    ap.add_argument("--label-ratio", type=float, default=0.4, help="labels per encoder frame")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (off: eager)")
    ap.add_argument("--attention", choices=["sdpa", "manual"], default="sdpa")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check-checkpoint", metavar="PATH", help="cross-check mode (see above)")
    ap.add_argument("--dataset", metavar="DIR", help="with --check-checkpoint: the run's dataset")
    ap.add_argument("--eval-all", action="store_true", help="every row, not the held-out ones")
    ap.add_argument("--check-dtype", choices=["fp64", "fp32"], default="fp64")
    ap.add_argument("--expect-loss", type=float, help="sluice-train's eval_loss to compare with")
    ap.add_argument("--tolerance", type=float, default=1e-4, help="relative, for --expect-loss")
    ap.add_argument("--cpp-harness", metavar="BIN", help="compare losses and gradients with the C++ "
                    "reference through this harness (docs/baselines.md)")
    args = ap.parse_args()
    if args.check_checkpoint:
        return run_check(args)
    if args.cpp_harness:
        return run_harness_only(args)
    if args.steps < 1 or args.batch < 1 or args.frames < 7:
        ap.error("--steps >= 1, --batch >= 1 and --frames >= 7 needed")
    return run_bench(args)


if __name__ == "__main__":
    sys.exit(main())
