"""Features of one waveform with sluice's CPU kernels: the numbers sluice-features and the loader
compute (docs/features.md), on a numpy array or a torch tensor, without the GIL.

Keywords are sluice-features' flags without their dashes ('-' as '_'): frame_length,
frame_shift, window_type, snip_edges, and for fbank num_mel_bins, dither, preemphasis_coefficient,
remove_dc_offset, blackman_coeff, round_to_power_of_two, low_freq, high_freq, use_energy,
raw_energy, energy_floor, htk_compat, use_power, use_log_fbank; for the spectrogram n_fft,
power, log1p, normalize.
"""
import numbers

import numpy as np

from . import _sluice


# int16 samples are PCM (the WAV file's own values, soundfile.read(dtype="int16")): scaled to
# [-1, 1] here, exactly (x / 2**15 is exact in float32), as the kernels expect. Other integer
# types have no one scale (int32 PCM or 24-bit in int32? uint8 offset by 128?): refused.
PCM_SCALE = 1.0 / 32768.0


def _integer_scale(dtype_name):
    if dtype_name == "int16":
        return PCM_SCALE
    raise TypeError(f"waveform: {dtype_name} samples have no one scale; give int16 PCM or float "
                    "samples in [-1, 1] (soundfile.read(path, dtype='float32'))")


def _samples(waveform):
    """(float32 1-D numpy view or copy in [-1, 1], torch module or None) of a numpy array or
    torch tensor."""
    torch = None
    if type(waveform).__module__.startswith("torch"):
        import torch  # noqa: F811 - only when given a tensor

        if not isinstance(waveform, torch.Tensor):
            raise TypeError(f"waveform: expected a numpy array or torch tensor, got "
                            f"{type(waveform).__name__}")
        if waveform.is_complex():
            raise TypeError("waveform: complex samples")
        scale = None
        if not waveform.is_floating_point():
            scale = _integer_scale(str(waveform.dtype).replace("torch.", ""))
        x = waveform.detach().to("cpu", torch.float32).contiguous().numpy()
        if scale is not None:
            x = x * np.float32(scale)
    elif isinstance(waveform, np.ndarray):
        if np.issubdtype(waveform.dtype, np.integer):
            x = waveform.astype(np.float32) * np.float32(_integer_scale(waveform.dtype.name))
        elif np.issubdtype(waveform.dtype, np.floating):
            x = np.ascontiguousarray(waveform, dtype=np.float32)
        else:
            raise TypeError(f"waveform: expected real samples, got dtype {waveform.dtype}")
    else:
        raise TypeError(f"waveform: expected a numpy array or torch tensor, got "
                        f"{type(waveform).__name__}")
    if x.ndim == 2 and x.shape[0] == 1:  # torchaudio's [channels=1, samples]
        x = x[0]
    if x.ndim != 1:
        raise ValueError(f"waveform: expected samples of one channel, shape [N] or [1, N]; got "
                         f"shape {list(x.shape)}")
    return x, torch


def _rate(sample_rate):
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Integral):
        raise TypeError(f"sample_rate: expected int, got {type(sample_rate).__name__}")
    if sample_rate <= 0:
        raise ValueError(f"sample_rate={sample_rate}: must be positive")
    return int(sample_rate)


def _out(result, torch):
    return torch.from_numpy(result) if torch is not None else result


def fbank(waveform, sample_rate, *, seed=0, **options):
    """Kaldi log-mel filterbank [frames, num_mel_bins (+1 with use_energy)] float32.

    waveform: samples in [-1, 1] (soundfile's and torchaudio.load's scale), or int16 PCM, at
    sample_rate Hz, shape [N] or [1, N]; scaled to Kaldi's int16 range inside, as sluice-features
    does. The result is a numpy array for a numpy input, a torch tensor for a tensor. seed keys
    the dither (as sluice-features --seed). Defaults are Kaldi's but num_mel_bins=80 and
    dither=0.
    """
    x, torch = _samples(waveform)
    return _out(_sluice.fbank(x, _rate(sample_rate), seed, options), torch)


def spectrogram(waveform, sample_rate, **options):
    """DeepSpeech2 spectrogram log(1 + |STFT|), per-utterance normalised, [frames, n_fft/2 + 1].

    waveform: samples in [-1, 1], or int16 PCM, at sample_rate Hz, shape [N] or [1, N].
    Defaults: 20 ms periodic Hamming window, 10 ms hop, centred frames (torch.stft(center=True)).
    """
    x, torch = _samples(waveform)
    return _out(_sluice.spectrogram(x, _rate(sample_rate), options), torch)
