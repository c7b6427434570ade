#include "features/window.h"

#include <cmath>
#include <numbers>

namespace sluice::features {

bool ParseWindowType(std::string_view name, WindowType* out) {
  if (name == "povey") *out = WindowType::kPovey;
  else if (name == "hamming") *out = WindowType::kHamming;
  else if (name == "hanning" || name == "hann") *out = WindowType::kHanning;
  else if (name == "rectangular") *out = WindowType::kRectangular;
  else if (name == "blackman") *out = WindowType::kBlackman;
  else if (name == "sine") *out = WindowType::kSine;
  else return false;
  return true;
}

const char* WindowTypeName(WindowType type) {
  switch (type) {
    case WindowType::kPovey: return "povey";
    case WindowType::kHamming: return "hamming";
    case WindowType::kHanning: return "hanning";
    case WindowType::kRectangular: return "rectangular";
    case WindowType::kBlackman: return "blackman";
    case WindowType::kSine: return "sine";
  }
  return "unknown";
}

namespace {

// Window value at sample i, where a = 2 pi / period.
double WindowAt(WindowType type, int i, double a, double period, double blackman_coeff) {
  switch (type) {
    case WindowType::kHanning: return 0.5 - 0.5 * std::cos(a * i);
    case WindowType::kSine: return std::sin(0.5 * a * i);
    case WindowType::kHamming: return 0.54 - 0.46 * std::cos(a * i);
    case WindowType::kPovey: return std::pow(0.5 - 0.5 * std::cos(a * i), 0.85);
    case WindowType::kRectangular: return 1.0;
    case WindowType::kBlackman:
      return blackman_coeff - 0.5 * std::cos(a * i) + (0.5 - blackman_coeff) * std::cos(2 * a * i);
  }
  (void)period;
  return 1.0;
}

}  // namespace

std::vector<float> KaldiWindow(WindowType type, int length, float blackman_coeff) {
  std::vector<float> w(static_cast<size_t>(std::max(length, 0)));
  // A one-sample window has no period; Kaldi's formula would divide by zero.
  const double period = length > 1 ? length - 1 : 1;
  const double a = 2 * std::numbers::pi / period;
  for (int i = 0; i < length; ++i) {
    w[i] = static_cast<float>(WindowAt(type, i, a, period, blackman_coeff));
  }
  return w;
}

std::vector<float> PeriodicWindow(WindowType type, int length) {
  std::vector<float> w(static_cast<size_t>(std::max(length, 0)));
  const double period = length > 0 ? length : 1;
  const double a = 2 * std::numbers::pi / period;
  for (int i = 0; i < length; ++i) w[i] = static_cast<float>(WindowAt(type, i, a, period, 0.42));
  return w;
}

}  // namespace sluice::features
