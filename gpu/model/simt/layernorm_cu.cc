#include "gpu/model/layernorm.cu"  // host C++ for the SIMT build (meson.build here)
