#include "gpu/model/ctc.cu"  // host C++ for the SIMT build (meson.build here)
