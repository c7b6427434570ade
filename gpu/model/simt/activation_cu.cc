#include "gpu/model/activation.cu"  // host C++ for the SIMT build (meson.build here)
