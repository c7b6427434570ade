"""Type stubs of the sluice package (docs/python.md)."""
import os
from typing import Any, Callable, Iterator, Literal, Mapping, Optional, Sequence, Union

import numpy as np

from . import augment as augment, errors as errors, features as features
from ._sluice import Array as Array, Batch as Batch
from .errors import (CorruptionError as CorruptionError, Error as Error,
                     InvalidArgumentError as InvalidArgumentError, IOError as IOError,
                     NotFoundError as NotFoundError, ShardifyError as ShardifyError,
                     UnsupportedError as UnsupportedError)

__version__: str

DType = Literal["float32", "f32", "float16", "f16", "bfloat16", "bf16"]

class Loader:
    rank: int
    world: int
    def __init__(
        self,
        path: Union[str, os.PathLike[str], Mapping[Union[str, os.PathLike[str]], float],
                    Sequence[tuple[Union[str, os.PathLike[str]], float]]],
        *,
        seed: int,
        rank: Optional[int] = None,
        world: Optional[int] = None,
        digest: bool = False,
        mix_records: int = 0,
        pin_memory: Union[None, bool, tuple[Callable[[int, int], None], Callable[[int], None]]] = None,
        # what the batches hold (the CLI's --flags; python/tests/test_stubs.py checks these
        # against sluice.loader_keywords())
        features: Literal["fbank", "spectrogram", "raw", "precomputed"] = ...,
        cmvn: Literal["none", "mean", "mean-var"] = ...,
        spec_augment: bool = ...,
        freq_masks: int = ...,
        max_freq_width: int = ...,
        time_masks: int = ...,
        max_time_width: int = ...,
        max_time_ratio: float = ...,
        mask_value: float = ...,
        speed_perturb: bool = ...,
        speed_factors: Sequence[float] = ...,
        speed_prob: float = ...,
        tempo_prob: float = ...,
        tempo_factors: Sequence[float] = ...,
        reverb_prob: float = ...,
        reverb_keep_level: bool = ...,
        noise_prob: float = ...,
        noise_min_snr: float = ...,
        noise_max_snr: float = ...,
        babble_prob: float = ...,
        babble_min_snr: float = ...,
        babble_max_snr: float = ...,
        babble_min_speakers: int = ...,
        babble_max_speakers: int = ...,
        babble_pool: int = ...,
        gain_prob: float = ...,
        gain_min_db: float = ...,
        gain_max_db: float = ...,
        clip_prob: float = ...,
        clip_min_level: float = ...,
        clip_max_level: float = ...,
        band_limit_prob: float = ...,
        band_limit_rates: Sequence[float] = ...,
        codec_prob: float = ...,
        codecs: Sequence[str] = ...,
        codec_min_compression: float = ...,
        codec_max_compression: float = ...,
        noise_data: str = ...,
        rir_data: str = ...,
        babble_data: str = ...,
        dtype: DType = ...,
        shuffle: bool = ...,
        shuffle_window: int = ...,
        num_buckets: int = ...,
        max_frames: int = ...,
        max_padded_frames: int = ...,
        max_batch_size: int = ...,
        max_tokens: int = ...,
        max_padded_tokens: int = ...,
        max_bucket_wait: int = ...,
        bucket_2d: bool = ...,
        max_padded_sum: int = ...,
        seq_len: int = ...,
        batch_size: int = ...,
        pack_window: int = ...,
        pack_chunk: int = ...,
        pack_mode: Literal["concat", "first_fit", "best_fit"] = ...,
        fit_window: int = ...,
        split_long: bool = ...,
        too_long: Literal["truncate", "skip"] = ...,
        balance_ranks: bool = ...,
        filter: str = ...,
        window_seconds: float = ...,
        chat_template: str = ...,
        encoder_frames: str = ...,
        corrupt: Literal["fail", "skip"] = ...,
        # features (sluice-features' flags)
        frame_length: float = ...,
        frame_shift: float = ...,
        window_type: str = ...,
        snip_edges: Optional[bool] = ...,
        dither: float = ...,
        preemphasis_coefficient: float = ...,
        remove_dc_offset: bool = ...,
        blackman_coeff: float = ...,
        round_to_power_of_two: bool = ...,
        num_mel_bins: int = ...,
        low_freq: float = ...,
        high_freq: float = ...,
        use_energy: bool = ...,
        raw_energy: bool = ...,
        energy_floor: float = ...,
        htk_compat: bool = ...,
        use_power: bool = ...,
        use_log_fbank: bool = ...,
        n_fft: int = ...,
        power: bool = ...,
        log1p: bool = ...,
        normalize: bool = ...,
        # speed and memory
        threads: int = ...,
        blocks_in_flight: int = ...,
        open_batches: int = ...,
        ready_batches: int = ...,
        consumer_batches: int = 4,
        memory_budget: int = ...,
        verify_checksums: bool = ...,
        # remote datasets (docs/remote.md)
        s3_endpoint: str = ...,
        s3_region: str = ...,
        cache_dir: str = ...,
        cache_size: int = ...,
        requests: int = ...,
        read_ahead: int = ...,
        retries: int = ...,
        request_timeout: int = ...,
        min_rate: int = ...,
    ) -> None: ...
    @property
    def epoch(self) -> int: ...
    @property
    def feature_info(self) -> dict[str, Any]: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Batch]: ...
    # rows, frames, padded_frames, tokens, audio, audio_frames, padded_audio_frames
    def max_batch_shape(self) -> dict[str, int]: ...
    def stats(self) -> dict[str, Any]: ...
    def digest(self) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Loader": ...
    def __exit__(self, *exc: Any) -> None: ...

def default_rank_world() -> tuple[int, int]: ...
def default_threads() -> int: ...
def usable_cores() -> int: ...
def loader_keywords() -> list[tuple[str, str, str]]: ...
def load(source: Union[str, os.PathLike[str], bytes, bytearray, memoryview],
         sample_rate: Optional[int] = None, offset: float = 0.0,
         duration: Optional[float] = None,
         channel: Union[int, Literal["mean"], None] = None) -> tuple[np.ndarray, int]: ...
def shardify(command: str, *args: Union[str, os.PathLike[str]], binary: Optional[str] = None,
             **options: Any) -> dict[str, Any]: ...
def from_hf(dataset_or_parquet_paths: Any, audio: str = "audio", text: str = "text",
            id: str = "id", *, out: Union[str, os.PathLike[str]], binary: Optional[str] = None,
            speaker: Optional[str] = None, language: Optional[str] = None,
            **options: Any) -> dict[str, Any]: ...

# sluice.TorchDataset / sluice.to_torch import torch on first use (sluice/pytorch.py).
def __getattr__(name: str) -> Any: ...
