#include "gpu/model/gemm.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "gpu/cuda_check.h"

// Every cuBLASLt call: file:line, the call and the library's status name and string.
#define SLUICE_CUBLAS_RETURN_IF_ERROR(call)                                                       \
  do {                                                                                            \
    const cublasStatus_t _sluice_st = (call);                                                     \
    if (_sluice_st != CUBLAS_STATUS_SUCCESS)                                                      \
      return ::sluice::Status::IOError(std::string(__FILE__) + ":" + std::to_string(__LINE__) +   \
                                       ": " #call ": " + cublasLtGetStatusString(_sluice_st) +    \
                                       " (" + cublasLtGetStatusName(_sluice_st) + ")");           \
  } while (0)

#define SLUICE_CUBLAS_LOG_IF_ERROR(call)                                                          \
  do {                                                                                            \
    const cublasStatus_t _sluice_st = (call);                                                     \
    if (_sluice_st != CUBLAS_STATUS_SUCCESS)                                                      \
      std::fprintf(stderr, "sluice: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                   cublasLtGetStatusString(_sluice_st));                                          \
  } while (0)

namespace sluice::gpu::model {
namespace {

// Largest power of two (<= 256) dividing the address and, for batches, the batch stride in bytes:
// cuBLASLt's heuristic assumes 256-byte aligned operands unless told otherwise.
uint32_t Alignment(const void* p, int64_t stride_elems, size_t elem_bytes, int batch) {
  uint64_t a = reinterpret_cast<uintptr_t>(p) | 256u;
  if (batch > 1) a |= static_cast<uint64_t>(stride_elems) * elem_bytes;
  return static_cast<uint32_t>(a & (~a + 1));  // lowest set bit
}

using Key = std::tuple<int, int, int, bool, bool, int64_t, int64_t, int64_t, int, int64_t, int64_t,
                       int64_t, bool, bool, uint32_t, uint32_t, uint32_t>;

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A, B, C (= D)
  cublasLtMatmulAlgo_t algo{};
  bool use_fallback = false;  // the heuristic found nothing for this shape
};

void Destroy(Plan& p) {
  if (p.desc) SLUICE_CUBLAS_LOG_IF_ERROR(cublasLtMatmulDescDestroy(p.desc));
  for (cublasLtMatrixLayout_t l : {p.a, p.b, p.c})
    if (l) SLUICE_CUBLAS_LOG_IF_ERROR(cublasLtMatrixLayoutDestroy(l));
  p = Plan{};
}

Status SetBatch(cublasLtMatrixLayout_t l, int batch, int64_t stride) {
  if (batch <= 1) return Status::OK();
  const int32_t count = batch;
  SLUICE_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  SLUICE_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return Status::OK();
}

// Fills in the packed leading dimensions and checks the shape.
Status Normalise(GemmShape* s) {
  if (s->M < 0 || s->N < 0 || s->K < 0 || s->batch < 1)
    return Status::InvalidArgument("gemm: negative dimension or batch < 1");
  // Stored shapes (row-major): A is [M, K] or [K, M] (trans_a), B is [K, N] or [N, K] (trans_b).
  const int64_t a_cols = s->trans_a ? s->M : s->K;
  const int64_t b_cols = s->trans_b ? s->K : s->N;
  if (s->lda == 0) s->lda = a_cols;
  if (s->ldb == 0) s->ldb = b_cols;
  if (s->ldc == 0) s->ldc = s->N;
  if (s->lda < a_cols || s->ldb < b_cols || s->ldc < s->N)
    return Status::InvalidArgument("gemm: leading dimension shorter than a row");
  return Status::OK();
}

}  // namespace

struct Gemm::Impl {
  cublasLtHandle_t handle = nullptr;
  DeviceArray<uint8_t> workspace;
  std::map<Key, Plan> plans;
  ~Impl() {
    for (auto& [k, p] : plans) Destroy(p);
    if (handle) SLUICE_CUBLAS_LOG_IF_ERROR(cublasLtDestroy(handle));
  }

  // Builds the descriptors of one shape and asks the heuristic for its best algorithm.
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's A is our B,
  // its B our A, with m = N, n = M. A row-major [r, c] buffer with row stride ld is a
  // column-major [c, r] matrix with the same ld, so no data moves.
  Status MakePlan(const GemmShape& s, bool c_bf16, uint32_t al_a, uint32_t al_b, uint32_t al_c,
                  Plan* p) {
    const cublasOperation_t op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A = our B
    const cublasOperation_t op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's B = our A
    SLUICE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    SLUICE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    SLUICE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    // Column-major stored sizes (rows, cols): our B stored [K, N] -> (N, K); [N, K] -> (K, N).
    const uint64_t a_rows = s.trans_b ? s.K : s.N, a_cols = s.trans_b ? s.N : s.K;
    const uint64_t b_rows = s.trans_a ? s.M : s.K, b_cols = s.trans_a ? s.K : s.M;
    SLUICE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, a_rows, a_cols, s.ldb));
    SLUICE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, b_rows, b_cols, s.lda));
    SLUICE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatrixLayoutCreate(&p->c, c_bf16 ? CUDA_R_16BF : CUDA_R_32F, s.N, s.M, s.ldc));
    SLUICE_RETURN_IF_ERROR(SetBatch(p->a, s.batch, s.stride_b));
    SLUICE_RETURN_IF_ERROR(SetBatch(p->b, s.batch, s.stride_a));
    SLUICE_RETURN_IF_ERROR(SetBatch(p->c, s.batch, s.stride_c));

    cublasLtMatmulPreference_t pref = nullptr;
    SLUICE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = workspace.bytes();
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    // Our B is cuBLASLt's A and our A its B.
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_c}};
    for (const auto& [attr, value] : aligns)
      if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result,
                                          &found);
    SLUICE_CUBLAS_LOG_IF_ERROR(cublasLtMatmulPreferenceDestroy(pref));
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
      p->use_fallback = true;  // no algorithm for this shape/alignment: the plain kernel runs it
      return Status::OK();
    }
    SLUICE_CUBLAS_RETURN_IF_ERROR(st);
    p->algo = result.algo;
    return Status::OK();
  }
};

Gemm::Gemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gemm::~Gemm() = default;

Status Gemm::Create(size_t workspace_bytes, std::unique_ptr<Gemm>* out) {
  auto impl = std::make_unique<Impl>();
  SLUICE_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&impl->handle));
  SLUICE_RETURN_IF_ERROR(impl->workspace.Allocate(workspace_bytes));
  out->reset(new Gemm(std::move(impl)));
  return Status::OK();
}

size_t Gemm::cached_plans() const { return impl_->plans.size(); }

Status Gemm::Run(const GemmShape& shape, const Bf16* A, const Bf16* B, float* C, void* stream) {
  return RunTyped(shape, A, B, C, false, stream);
}
Status Gemm::Run(const GemmShape& shape, const Bf16* A, const Bf16* B, Bf16* C, void* stream) {
  return RunTyped(shape, A, B, C, true, stream);
}

Status Gemm::RunTyped(const GemmShape& in, const Bf16* A, const Bf16* B, void* C, bool c_bf16,
                      void* stream) {
  GemmShape s = in;
  SLUICE_RETURN_IF_ERROR(Normalise(&s));
  if (s.M == 0 || s.N == 0) return Status::OK();
  if (s.K == 0 || force_fallback_) {  // K == 0: C = beta C, which cuBLASLt may not accept
    ++fallback_calls_;
    return internal::FallbackGemm(s, A, B, C, c_bf16, stream);
  }
  const uint32_t al_a = Alignment(A, s.stride_a, 2, s.batch);
  const uint32_t al_b = Alignment(B, s.stride_b, 2, s.batch);
  const size_t c_bytes = c_bf16 ? 2 : 4;
  const uint32_t al_c = Alignment(C, s.stride_c, c_bytes, s.batch);
  const bool rows_aligned = (s.lda * 2) % 16 == 0 && (s.ldb * 2) % 16 == 0 &&
                            (s.ldc * static_cast<int64_t>(c_bytes)) % 16 == 0;
  if (std::min({al_a, al_b, al_c}) < 16 || !rows_aligned) ++under_aligned_calls_;
  const Key key{s.M, s.N, s.K, s.trans_a, s.trans_b, s.lda, s.ldb, s.ldc, s.batch, s.stride_a,
                s.stride_b, s.stride_c, c_bf16, s.beta != 0.0f, al_a, al_b, al_c};
  auto it = impl_->plans.find(key);
  if (it == impl_->plans.end()) {
    Plan p;
    const Status st = impl_->MakePlan(s, c_bf16, al_a, al_b, al_c, &p);
    if (!st.ok()) {
      Destroy(p);
      return st;
    }
    it = impl_->plans.emplace(key, p).first;
  }
  const Plan& p = it->second;
  if (p.use_fallback) {
    ++fallback_calls_;
    return internal::FallbackGemm(s, A, B, C, c_bf16, stream);
  }
  SLUICE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(
      impl_->handle, p.desc, &s.alpha, B, p.a, A, p.b, &s.beta, C, p.c, C, p.c, &p.algo,
      impl_->workspace.data(), impl_->workspace.bytes(), static_cast<cudaStream_t>(stream)));
  return Status::OK();
}

}  // namespace sluice::gpu::model
