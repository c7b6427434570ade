#!/usr/bin/python3
"""Makes the reference arrays in data/ that tests/features/*_test.cc compare against.

Run from anywhere with Debian's torch/torchaudio: /usr/bin/python3 tests/features/make_reference.py
(torch 1.13, torchaudio 0.13 when these were made). Outputs are raw little-endian float32,
row-major [frames, bins]; the shapes are in data/reference.txt and in the tests.

The speech clips were made once, with espeak-ng and sox (-D: no dither, so reproducible):
  espeak-ng -v en-us -s 150 -w /tmp/x.wav "The quick brown fox jumps over the lazy dog"
  sox /tmp/x.wav -D -r 16000 -b 16 -c 1 data/speech_16k.wav trim 0.25 1.5
  sox data/speech_16k.wav -D -r 8000 -b 16 data/speech_8k.wav
"""
import os

import numpy as np
import soundfile
import torch
import torchaudio.compliance.kaldi as kaldi

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# Filterbank configurations; the C++ test builds the same FbankOptions. dither is 0 in all.
FBANK = {
    # The default of sluice (80 bins, povey, snip edges).
    "fbank_default": dict(num_mel_bins=80, energy_floor=0.0),
    # Kaldi centre frames, hamming, energy with a floor, no DC removal, magnitude, narrower band.
    "fbank_center_energy": dict(num_mel_bins=40, snip_edges=False, window_type="hamming",
                                use_energy=True, energy_floor=1.0, remove_dc_offset=False,
                                use_power=False, low_freq=60.0, high_freq=-400.0,
                                preemphasis_coefficient=0.9, frame_length=20.0, frame_shift=12.0),
    # Unpadded FFT (400 points), hanning, HTK energy last, energy after windowing.
    "fbank_htk_nopad": dict(num_mel_bins=64, window_type="hanning", round_to_power_of_two=False,
                            use_energy=True, htk_compat=True, raw_energy=False, energy_floor=0.0),
}


def save(name, array):
    array = np.ascontiguousarray(array, dtype="<f4")
    array.tofile(os.path.join(DATA, name + ".f32"))
    return f"{name}.f32 {array.shape[0]} {array.shape[1]}"


def main():
    torch.set_num_threads(1)
    lines = []
    pcm16, rate = soundfile.read(os.path.join(DATA, "speech_16k.wav"), dtype="int16")
    assert rate == 16000
    # Kaldi's scale: the int16 values themselves.
    wave32 = torch.from_numpy(pcm16.astype(np.float32)).unsqueeze(0)
    wave64 = wave32.double()
    for name, opts in FBANK.items():
        lines.append(save(name, kaldi.fbank(wave32, dither=0.0, **opts).numpy()))
    # The default configuration again in float64, to measure how far float32 results are from
    # the exact ones (the criterion: no further from float64 than torchaudio).
    lines.append(save("fbank_default_f64",
                      kaldi.fbank(wave64, dither=0.0, **FBANK["fbank_default"]).numpy()))

    # DeepSpeech2 spectrogram at 8 kHz: window 160, hop 80, periodic Hamming, |STFT|, log1p,
    # before normalisation. Input in [-1, 1] (soundfile's float scale).
    pcm8, rate8 = soundfile.read(os.path.join(DATA, "speech_8k.wav"), dtype="int16")
    assert rate8 == 8000
    x = torch.from_numpy(pcm8.astype(np.float32) / 32768.0)
    for dtype, suffix in ((torch.float32, ""), (torch.float64, "_f64")):
        xs = x.to(dtype)
        spec = torch.stft(xs, n_fft=160, hop_length=80, win_length=160,
                          window=torch.hamming_window(160, periodic=True, dtype=dtype),
                          center=True, pad_mode="reflect", return_complex=True)
        lines.append(save("spectrogram_center" + suffix, spec.abs().log1p().T.numpy()))
    with open(os.path.join(DATA, "reference.txt"), "w") as f:
        f.write("# name frames bins (raw little-endian float32), made by make_reference.py\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
