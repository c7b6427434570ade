// <cublasLt.h> for the SIMT build only (this directory is given to gpu_simt_dep, never to nvcc):
// the subset of cuBLASLt that gpu/model/gemm.cc calls, run on the host by the CPU backend
// (gpu/simt/cublaslt_host.cc, simt_cublaslt_dep). docs/gpu.md "The SIMT layer".
//
// Semantics are cuBLASLt's: column-major D = alpha * op(A) * op(B) + beta * C per batch entry,
// op(X) = X or X^T (CUBLASLT_MATMUL_DESC_TRANSA/B), layouts (type, rows, cols, ld) describe the
// stored matrices, BATCH_COUNT and STRIDED_BATCH_OFFSET (elements) give strided batches, C is read
// only when beta != 0, alpha and beta are host floats read when cublasLtMatmul is called.
// cublasLtMatmul queues the product on `stream` with cudaLaunchHostFunc, so it runs in stream
// order with kernels and copies; on the null stream it is done when the call returns.
//
// Supported (anything else is refused, never computed approximately):
//   compute CUBLAS_COMPUTE_32F, scale CUDA_R_32F, pointer mode host, epilogue default,
//   column order, TRANSC N, and (A, B, C = D) types
//     (CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F)   bf16 inputs, fp32 accumulation, fp32 output
//     (CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF)  ... rounded to bf16 (nearest even) on output
//     (CUDA_R_32F,  CUDA_R_32F,  CUDA_R_32F)   plain sgemm
// Where the real library answers, this one answers the same way:
//   CUBLAS_STATUS_INVALID_VALUE   a null argument, an attribute buffer of the wrong size, a value
//                                 outside the enum, layouts that do not fit together (m, n, k,
//                                 ld < rows, batch counts), requestedAlgoCount <= 0
//   CUBLAS_STATUS_NOT_SUPPORTED   a type, compute type, attribute or attribute value this
//                                 backend does not implement (from AlgoGetHeuristic: "no
//                                 heuristic for this configuration"; gemm.cc then uses its own
//                                 kernel); from the SetAttribute calls for an attribute it lacks
//   CUBLAS_STATUS_NOT_INITIALIZED a null handle
// AlgoGetHeuristic returns one algorithm, which needs no workspace and any element-aligned
// operand; it returns none (count 0, CUBLAS_STATUS_SUCCESS) when a MIN_ALIGNMENT preference is
// below an operand's element size, the one preference it cannot meet.
//
// Own declarations with C++ linkage, as gpu/simt/cuda_runtime_host.h: nothing here can collide
// with libcublasLt's C symbols. Enum values are the toolkit's (library_types.h, cublas_api.h,
// cublasLt.h), so statuses and attributes print the same numbers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/simt/cuda_runtime_host.h"

// library_types.h's guard: the toolkit's header must not follow (its cudaDataType_t would be a
// second definition); nothing in the SIMT build needs the rest of it.
#ifndef __LIBRARY_TYPES_H__
#define __LIBRARY_TYPES_H__
enum cudaDataType_t {
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
};
using cudaDataType = cudaDataType_t;
#endif

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16,
};

enum cublasOperation_t {
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
  CUBLAS_OP_C = 2,  // on real types the same as T, as in cuBLAS
  CUBLAS_OP_CONJG = 3,
};

enum cublasComputeType_t {
  CUBLAS_COMPUTE_16F = 64,
  CUBLAS_COMPUTE_16F_PEDANTIC = 65,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_PEDANTIC = 69,
  CUBLAS_COMPUTE_32F_FAST_16F = 74,
  CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_64F_PEDANTIC = 71,
  CUBLAS_COMPUTE_32I = 72,
  CUBLAS_COMPUTE_32I_PEDANTIC = 73,
};

enum cublasLtPointerMode_t {
  CUBLASLT_POINTER_MODE_HOST = 0,
  CUBLASLT_POINTER_MODE_DEVICE = 1,
};

enum cublasLtOrder_t {
  CUBLASLT_ORDER_COL = 0,
  CUBLASLT_ORDER_ROW = 1,
};

enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_BIAS = 4,
};

enum cublasLtMatmulSearch_t {
  CUBLASLT_SEARCH_BEST_FIT = 0,
};

// The attributes, with the size of each value (the SetAttribute calls check it, as cuBLASLt).
enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,  // int32_t (cublasComputeType_t)
  CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,    // int32_t (cudaDataType_t), only CUDA_R_32F
  CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,  // int32_t, only CUBLASLT_POINTER_MODE_HOST
  CUBLASLT_MATMUL_DESC_TRANSA = 3,        // int32_t (cublasOperation_t)
  CUBLASLT_MATMUL_DESC_TRANSB = 4,        // int32_t
  CUBLASLT_MATMUL_DESC_TRANSC = 5,        // int32_t, only CUBLAS_OP_N (as cuBLASLt)
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,      // uint32_t, only CUBLASLT_EPILOGUE_DEFAULT
};

enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_TYPE = 0,                  // uint32_t (cudaDataType_t)
  CUBLASLT_MATRIX_LAYOUT_ORDER = 1,                 // int32_t, only CUBLASLT_ORDER_COL
  CUBLASLT_MATRIX_LAYOUT_ROWS = 2,                  // uint64_t
  CUBLASLT_MATRIX_LAYOUT_COLS = 3,                  // uint64_t
  CUBLASLT_MATRIX_LAYOUT_LD = 4,                    // int64_t
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,           // int32_t, default 1
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,  // int64_t elements, default 0
};

enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0,            // uint32_t, only CUBLASLT_SEARCH_BEST_FIT
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,    // uint64_t, default 0
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  // uint32_t, default 256
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,  // uint32_t, default 256
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,  // uint32_t, default 256
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,  // uint32_t, default 256
};

// Handles are pointers to this backend's own objects (defined in cublaslt_host.cc).
using cublasLtHandle_t = struct cublasLtContext*;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque_t*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque_t*;

// Plain values, as in cuBLASLt: an algorithm can be copied and kept.
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);
// CUDA's names ("CUBLAS_STATUS_NOT_SUPPORTED") and strings ("the requested functionality is not
// supported"); an unknown value gives "CUBLAS_STATUS_UNKNOWN" / "unknown error".
const char* cublasLtGetStatusName(cublasStatus_t status);
const char* cublasLtGetStatusString(cublasStatus_t status);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale_type);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size);

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size);

// requested >= 1 result slots; *returned is 0 or 1. A null preference means the defaults.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned);

// algo: from AlgoGetHeuristic, or null (cuBLASLt then picks one itself). The workspace is not
// used (the algorithm needs none). Operands must be aligned to their element size; C may equal D
// only with the same layout (cuBLASLt's in-place rule).
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t a, const void* B,
                              cublasLtMatrixLayout_t b, const void* beta, const void* C,
                              cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);
