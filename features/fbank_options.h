// FbankOptions: what the Kaldi filterbank (fbank.h) computes, and its options table. Apart from
// the computer so that the loader's options (loader/options.h), and the SDK that installs them,
// reach the options alone, not the FFT, mel and window code.
#pragma once

#include "../base/fields.h"
#include "../features/window_type.h"

namespace sluice::features {

// Field names follow Kaldi's options (--frame-length is frame_length_ms, ...). Defaults are
// Kaldi's except num_mel_bins (80, as ASR models use) and dither (0, torchaudio's default: with
// dither on, give Compute a seed).
struct FbankOptions {
  float sample_frequency = 16000;         // Hz, rate of the input samples
  float frame_length_ms = 25;             // window length (ms)
  float frame_shift_ms = 10;              // hop between frames (ms)
  float dither = 0;                       // noise std in input units (int16 scale); 0 = off
  float preemphasis_coefficient = 0.97f;  // x[i] -= coeff * x[i-1]; 0 = off
  bool remove_dc_offset = true;           // subtract each frame's mean before anything else
  WindowType window_type = WindowType::kPovey;
  float blackman_coeff = 0.42f;       // only for the blackman window
  bool round_to_power_of_two = true;  // zero-pad each frame to the next power of two for the FFT
  bool snip_edges = true;             // true: whole frames only; false: mirrored edges (frames.h)
  int num_mel_bins = 80;              // mel bins
  float low_freq = 20;                // Hz, lower edge of the mel range
  float high_freq = 0;                // Hz, upper edge; <= 0 is an offset from Nyquist
  bool use_energy = false;            // add a log-energy column
  bool raw_energy = true;             // energy before preemphasis and windowing (after DC removal)
  float energy_floor = 0;             // floor on the energy (linear); 0 = none (torchaudio uses 1)
  bool htk_compat = false;            // energy column last instead of first
  bool use_power = true;              // power spectrum; false = magnitude
  bool use_log_fbank = true;          // log of the mel energies (floored at FLT_EPSILON)
};

// FbankOptions' table (base/fields.h). Frame length, shift, window and --snip-edges are flags
// shared with the spectrogram (tools/common/feature_options.h); the rate is the dataset's.
template <OptionsOf<FbankOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"sample_frequency", nullptr, "rate of the input samples (Hz)", Affects::kWhat, 1},
    o.sample_frequency);
  v(FieldInfo{"frame_length_ms", nullptr, "window length (ms)", Affects::kWhat, 0},
    o.frame_length_ms);
  v(FieldInfo{"frame_shift_ms", nullptr, "hop between frames (ms)", Affects::kWhat, 0},
    o.frame_shift_ms);
  v(FieldInfo{"dither", "--dither", "fbank: dither noise std in int16 units; 0 = off",
              Affects::kWhat, 0},
    o.dither);
  v(FieldInfo{"preemphasis_coefficient", "--preemphasis-coefficient",
              "fbank: x[i] -= coeff * x[i-1]; 0 = off", Affects::kWhat, 0, 1},
    o.preemphasis_coefficient);
  v(FieldInfo{"remove_dc_offset", "--remove-dc-offset", "fbank: subtract each frame's mean"},
    o.remove_dc_offset);
  v(FieldInfo{"window_type", nullptr, "analysis window"}, o.window_type);
  v(FieldInfo{"blackman_coeff", "--blackman-coeff", "fbank: coefficient of the blackman window"},
    o.blackman_coeff);
  v(FieldInfo{"round_to_power_of_two", "--round-to-power-of-two",
              "fbank: zero-pad frames to a power of two for the FFT"},
    o.round_to_power_of_two);
  v(FieldInfo{"snip_edges", nullptr, "whole frames only; false: mirrored edges"}, o.snip_edges);
  v(FieldInfo{"num_mel_bins", "--num-mel-bins", "fbank: mel bins", Affects::kWhat, 1, 10000},
    o.num_mel_bins);
  v(FieldInfo{"low_freq", "--low-freq", "fbank: low edge of the mel bins (Hz)", Affects::kWhat, 0},
    o.low_freq);
  v(FieldInfo{"high_freq", "--high-freq",
              "fbank: high edge of the mel bins (Hz); <= 0 is an offset from Nyquist"},
    o.high_freq);
  v(FieldInfo{"use_energy", "--use-energy", "fbank: add a log-energy column"}, o.use_energy);
  v(FieldInfo{"raw_energy", "--raw-energy", "fbank: energy before preemphasis and window"},
    o.raw_energy);
  v(FieldInfo{"energy_floor", "--energy-floor", "fbank: floor on the energy (linear); 0 = none",
              Affects::kWhat, 0},
    o.energy_floor);
  v(FieldInfo{"htk_compat", "--htk-compat", "fbank: energy column last"}, o.htk_compat);
  v(FieldInfo{"use_power", "--use-power", "fbank: power (true) or magnitude spectrum"},
    o.use_power);
  v(FieldInfo{"use_log_fbank", "--use-log-fbank", "fbank: log of the mel energies"},
    o.use_log_fbank);
}

}  // namespace sluice::features
