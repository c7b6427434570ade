#include "gpu/model/softmax.cu"  // host C++ for the SIMT build (meson.build here)
