// The per-frame loops of the feature computers, written for the auto-vectoriser: fixed-width
// partial sums instead of one serial accumulator (float addition is not associative, so the
// compiler may not reorder a serial sum itself), no calls to libm inside loops, no aliasing
// between input and output. Internal to features/.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::features::kernels {

float Sum(const float* x, int n);
// Double-precision sums for long arrays (whole utterances).
double SumDouble(const float* x, size_t n);
double SumSquaresCentredDouble(const float* x, size_t n, double mean);
// sum((x[i] - mean)^2)
float SumSquaresCentred(const float* x, int n, float mean);
// out[i] = ((x[i] - mean) - coeff * (x[i-1] - mean)) * window[i], with x[-1] = x[0] (Kaldi).
void PreemphasiseAndWindow(const float* x, int n, float mean, float coeff, const float* window,
                           float* out);
// out[i] = x[i] * window[i]
void Multiply(const float* x, const float* window, int n, float* out);
// From FFTW's (re, im) pairs: out[k] = re^2 + im^2 (power) or its square root (magnitude).
void PowerSpectrum(const float* pairs, int bins, float* out);
void MagnitudeSpectrum(const float* pairs, int bins, float* out);
// out[m] = sum over the band of mel bin m of weight * spectrum (mel.h's sparse layout).
void MelProject(const float* spectrum, const int* start, const int* length, const int* offset,
                const float* weights, int num_bins, float* out);
// x[i] = log(max(x[i], floor)); floor > 0.
void LogFloored(float* x, int n, float floor);
// x[i] = log(1 + x[i]); x[i] >= 0.
void Log1p(float* x, int n);
// dither.h's AddDither into out (which may be in), returning the sum of out (for the frame mean:
// one pass instead of two).
float AddDitherAndSum(const float* in, int n, uint32_t key, float scale, float* out);

}  // namespace sluice::features::kernels
