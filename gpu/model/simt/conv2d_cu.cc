#include "gpu/model/conv2d.cu"  // host C++ for the SIMT build (meson.build here)
