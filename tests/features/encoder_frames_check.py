"""Encoder frame counts (features/encoder_frames.h) against (a) plain integer formulae written
here, one per preset from its model's own code, for every length 0..N samples, and (b) PyTorch:
torch.stft's frame count for every length 1..M samples and the declared conv/stacking stack run
as torch.nn.Conv1d / unfold on random input of every length 1..F frames.

usage: encoder_frames_check.py SLUICE_FEATURES_BINARY
Exits 77 (skip) without torch, saying why.
"""
import json
import os
import subprocess
import sys
import tempfile

N_SAMPLES = 48000  # 3 s at 16 kHz: every boundary of every stage many times over
M_SAMPLES = 3000   # torch.stft per length is slower; covers the first ~18 frames of each hop
F_FRAMES = 400


def sluice_counts(binary, spec, up_to, stages_only=False):
    cmd = [binary, "encoder-frames", "--encoder-frames", spec, "--up-to", str(up_to)]
    if stages_only:
        cmd.append("--stages-only")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\n")
    pairs = [tuple(int(v) for v in line.split()) for line in out if line]
    assert [p[0] for p in pairs] == list(range(up_to + 1)), "counts out of order"
    return [p[1] for p in pairs]


# (a) Each model's own formula, in plain integers (Python's // floors like torch.floor).
def whisper(n):
    t = n // 160  # openai/whisper audio.py: stft(center=True)[..., :-1]: 1 + n // 160 - 1
    return (t - 1) // 2 + 1 if t > 0 else 0  # HF _get_feat_extract_output_lengths


def fastconformer(n):
    t = n // 160  # NeMo FilterbankFeatures.get_seq_len: (n + 512 - 512) // 160
    for _ in range(3):  # NeMo calc_length: floor((t + 2 - 3) / 2 + 1), three times
        t = (t + 2 - 3) // 2 + 1
    return t


def conformer(n):
    t = (n + 80) // 160  # lhotse Fbank, snip_edges=False
    return max(0, ((t - 1) // 2 - 1) // 2)  # icefall Conv2dSubsampling


def zipformer(n):
    t = (n + 80) // 160
    t = max(0, (t - 7) // 2)  # icefall zipformer Conv2dSubsampling
    return (t + 1) // 2  # the encoder's output downsampling by 2


def sluice(n):
    t = 0 if n < 400 else 1 + (n - 400) // 160  # Kaldi snip edges
    return max(0, ((t - 1) // 2 - 1) // 2)  # docs/model.md SubsampledLength


CUSTOM = {  # every knob the JSON has: ms at 8 kHz, dilation, a stack without padding, chunks
    "sample_rate": 8000, "frame_length_ms": 25, "frame_shift_ms": 10, "framing": "snip_edges",
    "stages": [{"type": "conv", "kernel": 5, "stride": 1, "padding": 2, "dilation": 2},
               {"type": "stack", "frames": 3, "stride": 2, "pad_end": False}],
    "chunk_frames": 50,
}


def custom_stages(c):
    a = max(0, c + 4 - 8 - 1 + 1)
    return 0 if a < 3 else (a - 3) // 2 + 1


def custom(n):
    t = 0 if n < 200 else 1 + (n - 200) // 80
    return (t // 50) * custom_stages(50) + custom_stages(t % 50)


# (b) The declared stacks: (framing, n_fft, hop, drop_last, stages, chunk); a stage is
# ("conv", kernel, stride, padding, dilation) or ("stack", frames, stride, pad_end).
def conv(k, s, p, d=1):
    return ("conv", k, s, p, d)


DECLARED = {
    "whisper": ("center", 400, 160, True, [conv(3, 1, 1), conv(3, 2, 1)], 0),
    "fastconformer": ("center", 400, 160, True, [conv(3, 2, 1)] * 3, 0),
    "canary": ("center", 400, 160, True, [conv(3, 2, 1)] * 3, 0),
    "conformer": ("kaldi_center", 400, 160, False, [conv(3, 2, 0)] * 2, 0),
    "zipformer": ("kaldi_center", 400, 160, False,
                  [conv(3, 1, 0), conv(3, 2, 0), conv(3, 1, 0), ("stack", 2, 2, True)], 0),
    "sluice": ("snip_edges", 400, 160, False, [conv(3, 2, 0)] * 2, 0),
    "custom": ("snip_edges", 200, 80, False, [conv(5, 1, 2, 2), ("stack", 3, 2, False)], 50),
}


def torch_stft_frames(torch, framing, n_fft, hop, n):
    x = torch.zeros(n)
    if framing == "snip_edges" and n < n_fft:
        return 0  # torch.stft(center=False) refuses a signal shorter than a frame
    return torch.stft(x, n_fft=n_fft, hop_length=hop, center=framing == "center",
                      pad_mode="constant", return_complex=True).shape[-1]


def torch_stage_frames(torch, stages, chunk, t):
    if t == 0:
        return 0
    pieces = torch.randn(1, 1, t).split(chunk, dim=-1) if chunk else [torch.randn(1, 1, t)]
    total = 0
    for x in pieces:
        for st in stages:
            if x.shape[-1] == 0:
                break
            if st[0] == "conv":
                _, k, s, p, d = st
                layer = torch.nn.Conv1d(1, 1, k, stride=s, padding=p, dilation=d)
                if x.shape[-1] + 2 * p < d * (k - 1) + 1:
                    x = x[..., :0]  # torch refuses an input shorter than the kernel: 0 frames
                else:
                    x = layer(x)
            else:
                _, k, s, pad_end = st
                if pad_end:  # pad so that every stride start inside the input gets a window
                    starts = -(-x.shape[-1] // s)
                    x = torch.nn.functional.pad(x, (0, (starts - 1) * s + k - x.shape[-1]),
                                                mode="replicate")
                x = x.unfold(-1, k, s).mean(-1) if x.shape[-1] >= k else x[..., :0]
        total += x.shape[-1]
    return total


def main():
    binary = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        custom_path = os.path.join(tmp, "custom.json")
        with open(custom_path, "w") as f:
            json.dump(CUSTOM, f)
        specs = {"whisper": whisper, "fastconformer": fastconformer, "canary": fastconformer,
                 "conformer": conformer, "zipformer": zipformer, "sluice": sluice,
                 "custom": custom}
        paths = {name: (custom_path if name == "custom" else name) for name in specs}
        for name, formula in specs.items():
            got = sluice_counts(binary, paths[name], N_SAMPLES)
            bad = [n for n in range(N_SAMPLES + 1) if got[n] != formula(n)]
            print(f"{name}: formula, samples 0..{N_SAMPLES}: {len(bad)} differ")
            if bad:
                n = bad[0]
                failures.append(f"{name}: {n} samples: sluice {got[n]}, formula {formula(n)}")
        try:
            import torch
        except ImportError as e:
            print(f"SKIP the PyTorch half: no torch in {sys.executable} ({e})")
            return 77 if not failures else 1
        torch.manual_seed(0)
        for name, (framing, n_fft, hop, drop_last, stages, chunk) in DECLARED.items():
            # The stages on frames 1..F, then the whole count: torch.stft's frames through them.
            stage_counts = sluice_counts(binary, paths[name], F_FRAMES, stages_only=True)
            bad = [t for t in range(1, F_FRAMES + 1)
                   if stage_counts[t] != torch_stage_frames(torch, stages, chunk, t)]
            print(f"{name}: torch conv stack, frames 1..{F_FRAMES}: {len(bad)} differ")
            if bad:
                t = bad[0]
                failures.append(f"{name}: {t} frames: sluice {stage_counts[t]}, torch "
                                f"{torch_stage_frames(torch, stages, chunk, t)}")
            if framing == "kaldi_center":
                print(f"{name}: Kaldi centred framing has no torch op; formula (a) covers it")
                continue
            full = sluice_counts(binary, paths[name], M_SAMPLES)
            bad = []
            for n in range(1, M_SAMPLES + 1):
                frames = torch_stft_frames(torch, framing, n_fft, hop, n)
                if drop_last:
                    frames = max(0, frames - 1)
                if frames > F_FRAMES or full[n] != stage_counts[frames]:
                    bad.append(n)
            print(f"{name}: torch.stft then the stack, samples 1..{M_SAMPLES}: {len(bad)} differ")
            if bad:
                failures.append(f"{name}: {bad[0]} samples: sluice {full[bad[0]]} differs from "
                                "torch.stft's frames through the stack")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
