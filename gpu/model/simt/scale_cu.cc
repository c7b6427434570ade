#include "gpu/model/scale.cu"  // host C++ for the SIMT build (meson.build here)
