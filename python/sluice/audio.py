"""sluice.load: one audio file decoded the way shardify decodes it (libsndfile, then soxr when a
rate is asked for), with no FFmpeg: WAV, FLAC, Ogg/Vorbis, Ogg/Opus, MP3 and the rest of what
libsndfile reads. A drop-in for torchaudio.load's common use (docs/python.md, "sluice.load").
"""
import os

from . import _sluice


def _seconds(value, name, allow_none):
    if value is None and allow_none:
        return -1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a number of seconds, got {type(value).__name__}")
    value = float(value)
    if not value >= 0 or value == float("inf"):  # NaN fails the first test
        raise ValueError(f"{name}={value!r}: must be a finite number of seconds >= 0")
    return value


def _channel(channel):
    if channel is None:
        return _sluice.LOAD_ALL_CHANNELS
    if channel == "mean":
        return _sluice.LOAD_MEAN_OF_CHANNELS
    if isinstance(channel, bool) or not isinstance(channel, int) or channel < 0:
        raise ValueError(f"channel={channel!r}: expected None (all channels), a channel's index "
                         "(0, 1, ...) or 'mean' (their average, as shardify stores)")
    return channel


def _sample_rate(sample_rate):
    if sample_rate is None:
        return 0
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
        raise ValueError(f"sample_rate={sample_rate!r}: expected None (the file's rate) or a "
                         "positive number of Hz")
    return sample_rate


def load(source, sample_rate=None, offset=0.0, duration=None, channel=None):
    """Decode an audio file: (samples, rate).

    source: a path (str or os.PathLike), or the encoded file's bytes (bytes, bytearray,
    memoryview or any buffer) read through libsndfile's virtual I/O.
    sample_rate: None keeps the file's rate; else Hz to resample to with soxr (high quality),
    the resampler shardify uses.
    offset, duration: the span in seconds (duration None: to the end). Seekable files (WAV,
    FLAC, Ogg, MP3) are read from the offset on: a 5 s slice of an hour costs the slice.
    channel: None for every channel, an index for one, "mean" for their average.

    Returns (numpy.ndarray float32 of shape [channels, frames] in [-1, 1], rate), the shape and
    order of torchaudio.load; torch.from_numpy(samples) makes the tensor without a copy.
    Errors name the file (or "<bytes>") and the reason: sluice.NotFoundError (a FileNotFoundError)
    for a missing file, sluice.CorruptionError for bytes that are not audio,
    sluice.InvalidArgumentError (a ValueError) for a span outside the audio.
    """
    offset = _seconds(offset, "offset", allow_none=False)
    duration = _seconds(duration, "duration", allow_none=True)
    if duration == 0:
        raise ValueError("duration=0: a span needs at least one sample (None reads to the end)")
    ch = _channel(channel)
    rate = _sample_rate(sample_rate)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return _sluice.load_file(path, offset, duration, ch, rate)
    if isinstance(source, (bytes, bytearray, memoryview)) or hasattr(source, "__buffer__"):
        return _sluice.load_bytes(source, f"<{len(memoryview(source).cast('B'))} bytes>", offset,
                                  duration, ch, rate)
    raise TypeError(f"source: expected a path or the file's bytes, got {type(source).__name__}")
