// gpu/kernels.cu as host C++ for the SIMT build of gpu/ (gpu_simt_dep, gpu/meson.build): Meson
// picks a source's compiler by its suffix, so the one source is included here rather than copied.
#include "gpu/kernels.cu"
