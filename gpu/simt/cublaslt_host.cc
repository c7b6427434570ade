// The CPU backend of cuBLASLt (contract: gpu/simt/host_include/cublasLt.h). Descriptors are
// small structs; every call that uses them checks the whole configuration first (Resolve), so a
// configuration either runs with cuBLASLt's exact meaning or is refused with cuBLASLt's status.
// The product itself is a plain blocked loop: operands widened to fp32 (bf16 -> fp32 is exact),
// fp32 products and sums in ascending k, alpha/beta applied in fp32, one rounding to the output
// type. That is the contract of CUBLAS_COMPUTE_32F; the order of the fp32 sums is not a GPU
// kernel's (which splits k across threads and tensor-core fragments), so results agree with a GPU
// to fp32 accumulation error, not bit for bit. OpenBLAS's sgemm would be no more exact and only
// faster; the SIMT build runs the model's small shapes, where this loop is quick enough.
#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

struct cublasLtContext {
  uint64_t magic;
};

struct cublasLtMatmulDescOpaque_t {
  int32_t compute;
  int32_t scale_type;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t trans_a = CUBLAS_OP_N;
  int32_t trans_b = CUBLAS_OP_N;
  int32_t trans_c = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

struct cublasLtMatrixLayoutOpaque_t {
  uint32_t type;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows;
  uint64_t cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;  // elements
};

struct cublasLtMatmulPreferenceOpaque_t {
  uint32_t search = CUBLASLT_SEARCH_BEST_FIT;
  uint64_t max_workspace = 0;
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D, as cuBLASLt's defaults
};

namespace {

constexpr uint64_t kHandleMagic = 0x736c75696365'4c74ull;  // "sluiceLt"
// data[0] of the one algorithm AlgoGetHeuristic returns; cublasLtMatmul refuses anything else.
constexpr uint64_t kAlgoMagic = 0x736c75696365'4131ull;

// Reads an attribute value: cuBLASLt wants a buffer of exactly the attribute's size.
template <typename T>
cublasStatus_t Read(const void* buf, size_t size, T* out) {
  if (buf == nullptr || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(out, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

size_t ElementBytes(uint32_t type) { return type == CUDA_R_32F ? 4 : 2; }

// One matrix as the loop reads it: element (r, c) of the stored column-major matrix of batch
// entry b is at base + (b * stride + c * ld + r) elements.
struct Operand {
  const void* base = nullptr;
  uint32_t type = CUDA_R_32F;
  int64_t ld = 0;
  int64_t stride = 0;
};

// A whole cublasLtMatmul, by value: the descriptors may be destroyed and alpha/beta go out of
// scope as soon as the call returns, before the stream runs it.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int32_t batch = 1;
  bool trans_a = false, trans_b = false;
  Operand a, b, c;
  void* d = nullptr;
  uint32_t d_type = CUDA_R_32F;
  int64_t ldd = 0, stride_d = 0;
  float alpha = 1.0f, beta = 0.0f;
};

// Checks a descriptor and four layouts against what this backend implements and against each
// other, and fills in the sizes and ops of `p`. NOT_SUPPORTED: a valid configuration it does not
// implement; INVALID_VALUE: one cuBLASLt would refuse too.
cublasStatus_t Resolve(const cublasLtMatmulDescOpaque_t* desc,
                       const cublasLtMatrixLayoutOpaque_t* a, const cublasLtMatrixLayoutOpaque_t* b,
                       const cublasLtMatrixLayoutOpaque_t* c, const cublasLtMatrixLayoutOpaque_t* d,
                       Problem* p) {
  if (!desc || !a || !b || !c || !d) return CUBLAS_STATUS_INVALID_VALUE;
  for (int32_t op : {desc->trans_a, desc->trans_b, desc->trans_c})
    if (op < CUBLAS_OP_N || op > CUBLAS_OP_CONJG) return CUBLAS_STATUS_INVALID_VALUE;
  if (desc->compute != CUBLAS_COMPUTE_32F || desc->scale_type != CUDA_R_32F ||
      desc->pointer_mode != CUBLASLT_POINTER_MODE_HOST ||
      desc->epilogue != CUBLASLT_EPILOGUE_DEFAULT || desc->trans_c != CUBLAS_OP_N ||
      desc->trans_a == CUBLAS_OP_CONJG || desc->trans_b == CUBLAS_OP_CONJG)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const cublasLtMatrixLayoutOpaque_t* all[] = {a, b, c, d};
  for (const auto* l : all) {
    if (l->order != CUBLASLT_ORDER_COL) return CUBLAS_STATUS_NOT_SUPPORTED;
    // cuBLASLt: "usually only values that can be expressed as int32_t are supported".
    if (l->rows > uint64_t{std::numeric_limits<int32_t>::max()} ||
        l->cols > uint64_t{std::numeric_limits<int32_t>::max()})
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const bool bf16_in = a->type == CUDA_R_16BF && b->type == CUDA_R_16BF;
  const bool f32_in = a->type == CUDA_R_32F && b->type == CUDA_R_32F;
  const bool out_ok =
      c->type == d->type && (d->type == CUDA_R_32F || (bf16_in && d->type == CUDA_R_16BF));
  if (!(bf16_in || f32_in) || !out_ok) return CUBLAS_STATUS_NOT_SUPPORTED;

  // op(A) is m x k, op(B) k x n, C and D m x n. CUBLAS_OP_C on real types is CUBLAS_OP_T.
  const bool ta = desc->trans_a != CUBLAS_OP_N, tb = desc->trans_b != CUBLAS_OP_N;
  const int64_t m = static_cast<int64_t>(d->rows), n = static_cast<int64_t>(d->cols);
  const int64_t k = static_cast<int64_t>(ta ? a->rows : a->cols);
  const int64_t a_m = static_cast<int64_t>(ta ? a->cols : a->rows);
  const int64_t b_k = static_cast<int64_t>(tb ? b->cols : b->rows);
  const int64_t b_n = static_cast<int64_t>(tb ? b->rows : b->cols);
  if (a_m != m || b_k != k || b_n != n || static_cast<int64_t>(c->rows) != m ||
      static_cast<int64_t>(c->cols) != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (const auto* l : all) {
    // Columns must not overlap: ld >= rows (and >= 1, as every BLAS wants).
    if (l->ld < std::max<int64_t>(1, static_cast<int64_t>(l->rows)))
      return CUBLAS_STATUS_INVALID_VALUE;
    if (l->batch < 1 || l->batch != d->batch || l->stride < 0) return CUBLAS_STATUS_INVALID_VALUE;
  }
  p->m = m;
  p->n = n;
  p->k = k;
  p->batch = d->batch;
  p->trans_a = ta;
  p->trans_b = tb;
  p->a = Operand{nullptr, a->type, a->ld, a->stride};
  p->b = Operand{nullptr, b->type, b->ld, b->stride};
  p->c = Operand{nullptr, c->type, c->ld, c->stride};
  p->d_type = d->type;
  p->ldd = d->ld;
  p->stride_d = d->stride;
  return CUBLAS_STATUS_SUCCESS;
}

float LoadBf16(const void* base, int64_t i) {
  uint16_t h;
  std::memcpy(&h, static_cast<const uint16_t*>(base) + i, 2);
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float Load(const Operand& x, int64_t i) {
  return x.type == CUDA_R_16BF ? LoadBf16(x.base, i) : static_cast<const float*>(x.base)[i];
}

// Round to nearest even, as __float2bfloat16_rn; NaN becomes CUDA's canonical 0x7fff.
uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Rows of D computed together: the op(A) panel of one block (kRowBlock x k fp32) stays in cache
// while every column of D passes over it, kColBlock columns at a time (each panel element is
// loaded once per kColBlock columns). Blocking changes only which sums run side by side: each
// element's sum still runs over ascending k.
constexpr int64_t kRowBlock = 128;
constexpr int64_t kColBlock = 4;

// D[i, j] for the rows [i0, i0 + rows) of batch entry `batch`, from the packed panel.
void ComputeRows(const Problem& p, int32_t batch, int64_t i0, int64_t rows,
                 const std::vector<float>& panel, std::vector<float>* acc_buf) {
  const int64_t ob = batch * p.b.stride, oc = batch * p.c.stride, od = batch * p.stride_d;
  float* const acc = acc_buf->data();  // acc[c * kRowBlock + r]: D(i0 + r, j0 + c) so far
  for (int64_t j0 = 0; j0 < p.n; j0 += kColBlock) {
    const int64_t cols = std::min(kColBlock, p.n - j0);
    std::fill(acc_buf->begin(), acc_buf->end(), 0.0f);
    for (int64_t q = 0; q < p.k; ++q) {
      // Never skipped when zero: 0 * inf must still give NaN, as on the GPU. Lanes past `cols`
      // multiply by 0 into sums that are never stored.
      float bv[kColBlock] = {};
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t j = j0 + c;
        bv[c] = Load(p.b, ob + (p.trans_b ? q * p.b.ld + j : j * p.b.ld + q));
      }
      const float* col = &panel[q * rows];
      for (int64_t r = 0; r < rows; ++r) {
        const float a = col[r];
        for (int64_t c = 0; c < kColBlock; ++c) acc[c * kRowBlock + r] += a * bv[c];
      }
    }
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t j = j0 + c;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float v = p.k == 0 ? 0.0f : p.alpha * acc[c * kRowBlock + r];
        if (p.beta != 0.0f) v += p.beta * Load(p.c, oc + j * p.c.ld + i);  // C read only then
        const int64_t at = od + j * p.ldd + i;
        if (p.d_type == CUDA_R_16BF) {
          const uint16_t h = ToBf16(v);
          std::memcpy(static_cast<uint16_t*>(p.d) + at, &h, 2);
        } else {
          static_cast<float*>(p.d)[at] = v;
        }
      }
    }
  }
}

void Compute(const Problem& p) {
  std::vector<float> panel(static_cast<size_t>(std::min(p.m, kRowBlock) * p.k));
  std::vector<float> acc(static_cast<size_t>(kColBlock * kRowBlock));
  for (int32_t batch = 0; batch < p.batch; ++batch) {
    const int64_t oa = batch * p.a.stride;
    for (int64_t i0 = 0; i0 < p.m; i0 += kRowBlock) {
      const int64_t rows = std::min(kRowBlock, p.m - i0);
      // panel[q * rows + r] = op(A)(i0 + r, q): A(i, q) is at q * lda + i, A^T(i, q) at
      // i * lda + q.
      for (int64_t q = 0; q < p.k; ++q)
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          panel[q * rows + r] = Load(p.a, oa + (p.trans_a ? i * p.a.ld + q : q * p.a.ld + i));
        }
      ComputeRows(p, batch, i0, rows, panel, &acc);
    }
  }
}

void RunOnStream(void* data) {
  const std::unique_ptr<Problem> p(static_cast<Problem*>(data));
  Compute(*p);
}

bool Aligned(const void* ptr, uint32_t type) {
  return reinterpret_cast<uintptr_t>(ptr) % ElementBytes(type) == 0;
}

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext{kHandleMagic};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr || handle->magic != kHandleMagic) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

// The strings are libcublasLt's own.
const char* cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "the function requires an architectural feature absent from the device";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the function failed to launch on the GPU";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the requested functionality is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the license check failed";
  }
  return "unknown error";
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale_type) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new cublasLtMatmulDescOpaque_t{compute, scale_type};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return Read(buf, size, &desc->compute);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return Read(buf, size, &desc->scale_type);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return Read(buf, size, &desc->pointer_mode);
    case CUBLASLT_MATMUL_DESC_TRANSA: return Read(buf, size, &desc->trans_a);
    case CUBLASLT_MATMUL_DESC_TRANSB: return Read(buf, size, &desc->trans_b);
    case CUBLASLT_MATMUL_DESC_TRANSC: return Read(buf, size, &desc->trans_c);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return Read(buf, size, &desc->epilogue);
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;  // a cuBLASLt attribute this backend does not implement
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtMatrixLayoutOpaque_t l;
  l.type = static_cast<uint32_t>(type);
  l.rows = rows;
  l.cols = cols;
  l.ld = ld;
  *layout = new cublasLtMatrixLayoutOpaque_t(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return Read(buf, size, &layout->type);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return Read(buf, size, &layout->order);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return Read(buf, size, &layout->rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return Read(buf, size, &layout->cols);
    case CUBLASLT_MATRIX_LAYOUT_LD: return Read(buf, size, &layout->ld);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return Read(buf, size, &layout->batch);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return Read(buf, size, &layout->stride);
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = new cublasLtMatmulPreferenceOpaque_t();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return Read(buf, size, &pref->search);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return Read(buf, size, &pref->max_workspace);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return Read(buf, size,
                  &pref->min_alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES]);
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  if (returned != nullptr) *returned = 0;
  if (handle == nullptr || handle->magic != kHandleMagic) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || results == nullptr || returned == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  Problem p;
  const cublasStatus_t st = Resolve(desc, a, b, c, d, &p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  const cublasLtMatmulPreferenceOpaque_t defaults;
  const cublasLtMatmulPreferenceOpaque_t& pr = pref != nullptr ? *pref : defaults;
  if (pr.search != CUBLASLT_SEARCH_BEST_FIT) return CUBLAS_STATUS_NOT_SUPPORTED;
  // The algorithm needs no workspace, so any MAX_WORKSPACE_BYTES is met; it reads and writes
  // single elements, so it needs only element alignment: a promise below that it cannot meet.
  const uint32_t types[4] = {a->type, b->type, c->type, d->type};
  for (int i = 0; i < 4; ++i)
    if (pr.min_alignment[i] < ElementBytes(types[i])) return CUBLAS_STATUS_SUCCESS;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].algo.data[0] = kAlgoMagic;
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t a, const void* B,
                              cublasLtMatrixLayout_t b, const void* beta, const void* C,
                              cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  (void)workspace;  // the algorithm needs none (workspaceSize 0 in its heuristic result)
  (void)workspace_bytes;
  if (handle == nullptr || handle->magic != kHandleMagic) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto p = std::make_unique<Problem>();
  const cublasStatus_t st = Resolve(desc, a, b, c, d, p.get());
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (algo != nullptr && algo->data[0] != kAlgoMagic) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&p->alpha, alpha, sizeof(float));  // host pointer mode: read now
  std::memcpy(&p->beta, beta, sizeof(float));
  if (p->m == 0 || p->n == 0) return CUBLAS_STATUS_SUCCESS;
  const bool reads_c = p->beta != 0.0f, reads_ab = p->k > 0;
  if (D == nullptr || (reads_c && C == nullptr) || (reads_ab && (A == nullptr || B == nullptr)))
    return CUBLAS_STATUS_INVALID_VALUE;
  // A GPU faults on a misaligned element; refuse it here instead.
  if (!Aligned(A, a->type) || !Aligned(B, b->type) || !Aligned(C, c->type) || !Aligned(D, d->type))
    return CUBLAS_STATUS_INVALID_VALUE;
  // In place (C == D) only with one layout, as cuBLASLt requires.
  if (C == D && (c->ld != d->ld || c->stride != d->stride)) return CUBLAS_STATUS_INVALID_VALUE;
  p->a.base = A;
  p->b.base = B;
  p->c.base = C;
  p->d = D;
  if (cudaLaunchHostFunc(stream, RunOnStream, p.get()) != cudaSuccess)
    return CUBLAS_STATUS_EXECUTION_FAILED;
  p.release();  // RunOnStream owns it now
  return CUBLAS_STATUS_SUCCESS;
}
