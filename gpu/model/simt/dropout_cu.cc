#include "gpu/model/dropout.cu"  // host C++ for the SIMT build (meson.build here)
