#include "gpu/model/linear.cu"  // host C++ for the SIMT build (meson.build here)
