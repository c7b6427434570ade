// gpu/model/gemm_fallback.cu as host C++ on the SIMT layer, for gemm_simt_test.cc only (pattern
// of gpu/simt/kernels_cu.cc: Meson picks a source's compiler by its suffix, so the one source is
// included rather than copied). Test-only until the SIMT build of gpu/model carries it.
#include "gpu/model/gemm_fallback.cu"
