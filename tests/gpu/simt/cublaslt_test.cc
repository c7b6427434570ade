// The CPU cuBLASLt (gpu/simt/host_include/cublasLt.h) against a double-precision product of the
// same operands, through the API exactly as gemm.cc drives it: every op pair, leading dimensions
// longer than a column, strided batches with gaps, beta 0 and 1, bf16 and fp32 outputs, sizes 1
// and odd. Then what it must refuse, with cuBLASLt's statuses, and its stream behaviour.
//
// Tolerance, per element, from the error analysis of an fp32 dot product (Higham, ch. 3): with
// u = 2^-24 and g = (k + 3) u, the fp32 result lies within g (|alpha| sum_q |a_iq b_qj| +
// |beta c_ij|) of the exact one (k products and sums, then alpha, beta c and their sum). A bf16
// output adds one rounding, 2^-8 of the value. Any index or transpose mix-up is O(1) off.
// On small-integer operands every step is exact, so there the check is bit for bit, including
// bf16's round-to-nearest-even against features::FloatToBFloat16.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "features/half.h"

namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call
#define ASSERT_CUBLAS(call) ASSERT_EQ((call), CUBLAS_STATUS_SUCCESS) << #call

uint16_t Bf16Bits(float f) {
  uint16_t h;
  sluice::features::FloatToBFloat16(&f, 1, &h);
  return h;
}
float FromBits(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A stored column-major matrix (or batch of them) as the test sees it: values as doubles, which
// are exactly what the device holds (bf16-rounded where the type is bf16).
struct HostMatrix {
  cudaDataType_t type = CUDA_R_32F;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
  int batch = 1;
  std::vector<double> v;  // batch * stride elements (or ld * cols when batch == 1)

  size_t elems() const { return static_cast<size_t>(batch > 1 ? stride * batch : ld * cols); }
  double& at(int b, int64_t r, int64_t c) { return v[b * stride + c * ld + r]; }
  double at(int b, int64_t r, int64_t c) const { return v[b * stride + c * ld + r]; }
};

// Fills every element (padding too, so reading it would show) with values from `gen`, rounded
// to the type.
template <typename Gen>
HostMatrix MakeMatrix(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld_pad, int batch,
                      int64_t stride_gap, Gen gen) {
  HostMatrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  m.ld = std::max<int64_t>(rows, 1) + ld_pad;
  m.batch = batch;
  m.stride = batch > 1 ? m.ld * cols + stride_gap : 0;
  m.v.resize(m.elems());
  for (double& x : m.v) {
    const float f = static_cast<float>(gen());
    x = type == CUDA_R_16BF ? FromBits(Bf16Bits(f)) : f;
  }
  return m;
}

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(n, 1)), cudaSuccess);
  }
  ~DeviceBuffer() { EXPECT_EQ(cudaFree(p), cudaSuccess); }
};

size_t Bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

std::vector<uint8_t> Encode(const HostMatrix& m) {
  std::vector<uint8_t> out(m.elems() * Bytes(m.type));
  for (size_t i = 0; i < m.elems(); ++i) {
    const float f = static_cast<float>(m.v[i]);
    if (m.type == CUDA_R_32F) {
      std::memcpy(&out[4 * i], &f, 4);
    } else {
      const uint16_t h = Bf16Bits(f);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

std::vector<double> Decode(const std::vector<uint8_t>& bytes, cudaDataType_t type) {
  std::vector<double> out(bytes.size() / Bytes(type));
  for (size_t i = 0; i < out.size(); ++i) {
    if (type == CUDA_R_32F) {
      float f;
      std::memcpy(&f, &bytes[4 * i], 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[2 * i], 2);
      out[i] = FromBits(h);
    }
  }
  return out;
}

// The descriptors of one product, built as gemm.cc builds them; destroyed with the object.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  ~Plan() {
    if (desc) {
      EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
    }
    for (auto l : {a, b, c}) {
      if (l) {
        EXPECT_EQ(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
      }
    }
  }
};

cublasStatus_t MakeLayout(const HostMatrix& m, cublasLtMatrixLayout_t* out) {
  cublasStatus_t st = cublasLtMatrixLayoutCreate(out, m.type, m.rows, m.cols, m.ld);
  if (st != CUBLAS_STATUS_SUCCESS || m.batch <= 1) return st;
  const int32_t count = m.batch;
  st = cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                        sizeof(count));
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  return cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &m.stride, sizeof(m.stride));
}

void MakePlan(cublasOperation_t ta, cublasOperation_t tb, const HostMatrix& A, const HostMatrix& B,
              const HostMatrix& C, Plan* p) {
  ASSERT_CUBLAS(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  ASSERT_CUBLAS(
      cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  ASSERT_CUBLAS(
      cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  ASSERT_CUBLAS(MakeLayout(A, &p->a));
  ASSERT_CUBLAS(MakeLayout(B, &p->b));
  ASSERT_CUBLAS(MakeLayout(C, &p->c));
}

// The heuristic with gemm.cc's preferences (a workspace, operands 256-byte aligned).
cublasStatus_t Heuristic(cublasLtHandle_t h, const Plan& p, cublasLtMatmulHeuristicResult_t* r,
                         int* found, uint32_t align_a = 256, uint64_t workspace = 32 << 20) {
  cublasLtMatmulPreference_t pref = nullptr;
  cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &workspace, sizeof(workspace));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                              &align_a, sizeof(align_a));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(h, p.desc, p.a, p.b, p.c, p.c, pref, 1, r, found);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
  return st;
}

// One product on `stream`: uploads, heuristic, matmul, download. Returns D's stored values.
void RunMatmul(cublasLtHandle_t h, cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb,
               float alpha, float beta, const HostMatrix& A, const HostMatrix& B,
               const HostMatrix& C, std::vector<double>* D) {
  Plan p;
  ASSERT_NO_FATAL_FAILURE(MakePlan(ta, tb, A, B, C, &p));
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  ASSERT_CUBLAS(Heuristic(h, p, &r, &found));
  ASSERT_EQ(found, 1);
  EXPECT_EQ(r.state, CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(r.workspaceSize, 0u);
  const std::vector<uint8_t> ha = Encode(A), hb = Encode(B), hc = Encode(C);
  DeviceBuffer da(ha.size()), db(hb.size()), dc(hc.size()), ws(1024);
  ASSERT_CUDA(cudaMemcpyAsync(da.p, ha.data(), ha.size(), cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaMemcpyAsync(db.p, hb.data(), hb.size(), cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaMemcpyAsync(dc.p, hc.data(), hc.size(), cudaMemcpyHostToDevice, stream));
  ASSERT_CUBLAS(cublasLtMatmul(h, p.desc, &alpha, da.p, p.a, db.p, p.b, &beta, dc.p, p.c, dc.p, p.c,
                               &r.algo, ws.p, ws.bytes, stream));
  std::vector<uint8_t> out(hc.size());
  ASSERT_CUDA(cudaMemcpyAsync(out.data(), dc.p, out.size(), cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  *D = Decode(out, C.type);
}

// Compares D with the exact product of the stored operands, element by element, inside the
// bound of the header comment; the padding between columns and batch entries must be C's.
void ExpectProduct(const std::string& what, cublasOperation_t ta, cublasOperation_t tb, float alpha,
                   float beta, const HostMatrix& A, const HostMatrix& B, const HostMatrix& C,
                   const std::vector<double>& D, bool exact = false) {
  const int64_t m = C.rows, n = C.cols, k = ta == CUBLAS_OP_N ? A.cols : A.rows;
  const double g = (k + 3) * std::ldexp(1.0, -24);
  std::vector<bool> written(C.elems(), false);
  int bad = 0;
  for (int b = 0; b < C.batch; ++b)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double sum = 0, mag = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double a = ta == CUBLAS_OP_N ? A.at(b, i, q) : A.at(b, q, i);
          const double bb = tb == CUBLAS_OP_N ? B.at(b, q, j) : B.at(b, j, q);
          sum += a * bb;
          mag += std::abs(a * bb);
        }
        const double c = beta != 0 ? C.at(b, i, j) : 0.0;
        const double want = alpha * sum + beta * c;
        const size_t idx = b * C.stride + j * C.ld + i;
        written[idx] = true;
        double tol = g * (std::abs(alpha) * mag + std::abs(beta * c));
        if (C.type == CUDA_R_16BF) tol += std::ldexp(std::abs(want) + tol, -8);
        double expect = want;
        if (exact) {
          tol = 0;
          if (C.type == CUDA_R_16BF) expect = FromBits(Bf16Bits(static_cast<float>(want)));
        }
        if (!(std::abs(D[idx] - expect) <= tol) && ++bad <= 5)
          ADD_FAILURE() << what << ": D(" << i << ", " << j << ") of batch " << b << " = " << D[idx]
                        << ", want " << expect << " +- " << tol;
      }
  for (size_t idx = 0; idx < written.size(); ++idx)
    if (!written[idx] && D[idx] != C.v[idx] && ++bad <= 5)
      ADD_FAILURE() << what << ": padding element " << idx << " changed";
  EXPECT_EQ(bad, 0) << what;
}

class CublasLtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CUBLAS(cublasLtCreate(&handle_));
    ASSERT_CUDA(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) {
      EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    }
    if (handle_) {
      EXPECT_EQ(cublasLtDestroy(handle_), CUBLAS_STATUS_SUCCESS);
    }
  }
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

const char* OpName(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : "T"; }
const char* TypeName(cudaDataType_t t) { return t == CUDA_R_32F ? "f32" : "bf16"; }

// Random operands in [-1, 1]: every configuration the header lists, at sizes 1, odd and past
// the 128-row block of the loop.
TEST_F(CublasLtTest, MatchesDoubleProductForEveryOpLayoutAndType) {
  struct Types {
    cudaDataType_t in, out;
  };
  const Types types[] = {
      {CUDA_R_16BF, CUDA_R_32F}, {CUDA_R_16BF, CUDA_R_16BF}, {CUDA_R_32F, CUDA_R_32F}};
  struct Size {
    int64_t m, n, k;
  };
  const Size sizes[] = {{1, 1, 1}, {1, 7, 5}, {13, 1, 9}, {17, 23, 1}, {37, 29, 53}, {131, 6, 40}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  auto gen = [&] { return u(rng); };
  int runs = 0;
  for (const Types& t : types)
    for (const Size& s : sizes)
      for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T})
        for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T})
          for (int64_t pad : {0, 3})
            for (int batch : {1, 3})
              for (float beta : {0.0f, 1.0f}) {
                const float alpha = batch == 1 ? 1.0f : -0.75f;
                const HostMatrix A = ta == CUBLAS_OP_N
                                         ? MakeMatrix(t.in, s.m, s.k, pad, batch, 5, gen)
                                         : MakeMatrix(t.in, s.k, s.m, pad, batch, 5, gen);
                const HostMatrix B = tb == CUBLAS_OP_N
                                         ? MakeMatrix(t.in, s.k, s.n, pad + 1, batch, 0, gen)
                                         : MakeMatrix(t.in, s.n, s.k, pad + 1, batch, 0, gen);
                const HostMatrix C = MakeMatrix(t.out, s.m, s.n, pad, batch, 7, gen);
                const std::string what = std::string(TypeName(t.in)) + "->" + TypeName(t.out) +
                                         " m " + std::to_string(s.m) + " n " + std::to_string(s.n) +
                                         " k " + std::to_string(s.k) + " op " + OpName(ta) +
                                         OpName(tb) + " pad " + std::to_string(pad) + " batch " +
                                         std::to_string(batch) + " beta " + std::to_string(beta);
                std::vector<double> D;
                ASSERT_NO_FATAL_FAILURE(
                    RunMatmul(handle_, stream_, ta, tb, alpha, beta, A, B, C, &D))
                    << what;
                ASSERT_NO_FATAL_FAILURE(ExpectProduct(what, ta, tb, alpha, beta, A, B, C, D));
                ++runs;
              }
  EXPECT_EQ(runs, 3 * 6 * 4 * 2 * 2 * 2);
}

// Small integers make every fp32 step exact (|sums| < 2^24), so the result must be the exact
// product, and a bf16 output its round-to-nearest-even: above 256 about half of the values are
// ties, which truncation or round-half-up would get wrong.
TEST_F(CublasLtTest, IntegerOperandsGiveExactProductsAndNearestEvenBf16) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> u(-15, 15);
  auto gen = [&] { return static_cast<double>(u(rng)); };
  for (cudaDataType_t out : {CUDA_R_32F, CUDA_R_16BF}) {
    const HostMatrix A = MakeMatrix(CUDA_R_16BF, 24, 40, 1, 2, 3, gen);
    const HostMatrix B = MakeMatrix(CUDA_R_16BF, 40, 19, 0, 2, 0, gen);
    const HostMatrix C = MakeMatrix(out, 24, 19, 2, 2, 1, gen);
    for (float beta : {0.0f, 1.0f}) {
      std::vector<double> D;
      ASSERT_NO_FATAL_FAILURE(
          RunMatmul(handle_, stream_, CUBLAS_OP_N, CUBLAS_OP_N, 2.0f, beta, A, B, C, &D));
      ExpectProduct(std::string("integers ") + TypeName(out), CUBLAS_OP_N, CUBLAS_OP_N, 2.0f, beta,
                    A, B, C, D, /*exact=*/true);
    }
  }
  // The ties themselves: v = hi + lo (two bf16 values, k = 2) halfway between two bf16 values;
  // nearest-even takes 257 -> 256, 259 -> 260, 514 -> 512, 518 -> 520.
  for (double v : {257.0, 259.0, -257.0, 514.0, 518.0}) {
    const HostMatrix A = MakeMatrix(CUDA_R_16BF, 1, 2, 0, 1, 0, [] { return 1.0; });
    const double hi = std::copysign(std::ldexp(1.0, std::ilogb(v)), v);
    const double parts[] = {hi, v - hi};
    int next = 0;
    const HostMatrix B = MakeMatrix(CUDA_R_16BF, 2, 1, 0, 1, 0, [&] { return parts[next++]; });
    ASSERT_EQ(B.v[0] + B.v[1], v) << "the parts must be bf16 values";
    const HostMatrix C = MakeMatrix(CUDA_R_16BF, 1, 1, 0, 1, 0, [] { return 0.0; });
    std::vector<double> D;
    ASSERT_NO_FATAL_FAILURE(
        RunMatmul(handle_, stream_, CUBLAS_OP_N, CUBLAS_OP_N, 1.0f, 0.0f, A, B, C, &D));
    const double even = v == 257 ? 256 : v == 259 ? 260 : v == -257 ? -256 : v == 514 ? 512 : 520;
    EXPECT_EQ(D[0], even) << v;
  }
}

// beta == 0: C is not read, so NaN in C must not reach D (cuBLASLt's rule); beta != 0 reads it.
TEST_F(CublasLtTest, CIsReadOnlyWhenBetaIsNonZero) {
  auto one = [] { return 1.0; };
  const HostMatrix A = MakeMatrix(CUDA_R_16BF, 3, 2, 0, 1, 0, one);
  const HostMatrix B = MakeMatrix(CUDA_R_16BF, 2, 4, 0, 1, 0, one);
  const HostMatrix C = MakeMatrix(CUDA_R_32F, 3, 4, 0, 1, 0,
                                  [] { return std::numeric_limits<double>::quiet_NaN(); });
  std::vector<double> D;
  ASSERT_NO_FATAL_FAILURE(
      RunMatmul(handle_, stream_, CUBLAS_OP_N, CUBLAS_OP_N, 1.0f, 0.0f, A, B, C, &D));
  for (double d : D) EXPECT_EQ(d, 2.0);
  ASSERT_NO_FATAL_FAILURE(
      RunMatmul(handle_, stream_, CUBLAS_OP_N, CUBLAS_OP_N, 1.0f, 1.0f, A, B, C, &D));
  for (double d : D) EXPECT_TRUE(std::isnan(d));
}

// k == 0 is D = beta C; m == 0 or n == 0 writes nothing and reads nothing (null pointers pass).
TEST_F(CublasLtTest, EmptyDimensions) {
  auto three = [] { return 3.0; };
  const HostMatrix A = MakeMatrix(CUDA_R_16BF, 4, 0, 0, 1, 0, three);
  const HostMatrix B = MakeMatrix(CUDA_R_16BF, 0, 5, 0, 1, 0, three);
  const HostMatrix C = MakeMatrix(CUDA_R_32F, 4, 5, 0, 1, 0, three);
  std::vector<double> D;
  ASSERT_NO_FATAL_FAILURE(
      RunMatmul(handle_, stream_, CUBLAS_OP_N, CUBLAS_OP_N, 2.0f, 0.5f, A, B, C, &D));
  for (double d : D) EXPECT_EQ(d, 1.5);

  Plan p;
  const HostMatrix A0 = MakeMatrix(CUDA_R_16BF, 0, 3, 0, 1, 0, three);
  const HostMatrix B0 = MakeMatrix(CUDA_R_16BF, 3, 5, 0, 1, 0, three);
  const HostMatrix C0 = MakeMatrix(CUDA_R_32F, 0, 5, 0, 1, 0, three);
  ASSERT_NO_FATAL_FAILURE(MakePlan(CUBLAS_OP_N, CUBLAS_OP_N, A0, B0, C0, &p));
  const float alpha = 1, beta = 1;
  EXPECT_EQ(cublasLtMatmul(handle_, p.desc, &alpha, nullptr, p.a, nullptr, p.b, &beta, nullptr, p.c,
                           nullptr, p.c, nullptr, nullptr, 0, stream_),
            CUBLAS_STATUS_SUCCESS);
}

// Work is queued on the stream, not run by the caller, and everything it needs (alpha, beta,
// the descriptors) is taken when cublasLtMatmul is called, as cuBLASLt does with host scalars.
TEST_F(CublasLtTest, MatmulRunsInStreamOrderWithValuesTakenAtTheCall) {
  auto two = [] { return 2.0; };
  const HostMatrix A = MakeMatrix(CUDA_R_16BF, 8, 8, 0, 1, 0, two);
  const HostMatrix B = MakeMatrix(CUDA_R_16BF, 8, 8, 0, 1, 0, two);
  const HostMatrix C = MakeMatrix(CUDA_R_32F, 8, 8, 0, 1, 0, [] { return 0.0; });
  const std::vector<uint8_t> ha = Encode(A), hb = Encode(B);
  DeviceBuffer da(ha.size()), db(hb.size()), dd(8 * 8 * 4);
  ASSERT_CUDA(cudaMemcpy(da.p, ha.data(), ha.size(), cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(db.p, hb.data(), hb.size(), cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(dd.p, 0, dd.bytes));

  // A host function that holds the stream until the test lets it go.
  static std::atomic<bool> release;
  release = false;
  struct Release {  // a failed assertion must not leave the stream held (TearDown would hang)
    ~Release() { release = true; }
  } release_on_exit;
  ASSERT_CUDA(cudaLaunchHostFunc(
      stream_,
      [](void*) {
        while (!release.load()) std::this_thread::yield();
      },
      nullptr));
  {
    Plan p;
    ASSERT_NO_FATAL_FAILURE(MakePlan(CUBLAS_OP_N, CUBLAS_OP_N, A, B, C, &p));
    float alpha = 0.5f, beta = 0.0f;
    ASSERT_CUBLAS(cublasLtMatmul(handle_, p.desc, &alpha, da.p, p.a, db.p, p.b, &beta, dd.p, p.c,
                                 dd.p, p.c, nullptr, nullptr, 0, stream_));
    alpha = 100.0f;  // too late: the call has taken 0.5
    beta = std::numeric_limits<float>::quiet_NaN();
  }  // descriptors destroyed while the product is still queued
  // D through a non-blocking stream: the legacy null stream (cudaMemcpy) would wait for the
  // held stream, as on a GPU.
  cudaStream_t side = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  std::vector<float> before(64, -1.0f);
  const cudaError_t copied =
      cudaMemcpyAsync(before.data(), dd.p, dd.bytes, cudaMemcpyDeviceToHost, side);
  const cudaError_t synced = cudaStreamSynchronize(side);
  release = true;  // before any assertion can return and leave the stream held
  ASSERT_CUDA(cudaStreamDestroy(side));
  ASSERT_CUDA(copied);
  ASSERT_CUDA(synced);
  for (float v : before) ASSERT_EQ(v, 0.0f) << "the product ran before its stream reached it";
  std::vector<float> after(64, -1.0f);
  ASSERT_CUDA(cudaMemcpyAsync(after.data(), dd.p, dd.bytes, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  for (float v : after) EXPECT_EQ(v, 0.5f * 8 * 2 * 2);
}

// --- what it refuses -----------------------------------------------------------------------

class CublasLtRefusalTest : public CublasLtTest {
 protected:
  void SetUp() override {
    CublasLtTest::SetUp();
    auto one = [] { return 1.0; };
    A_ = MakeMatrix(CUDA_R_16BF, 6, 4, 0, 1, 0, one);
    B_ = MakeMatrix(CUDA_R_16BF, 4, 5, 0, 1, 0, one);
    C_ = MakeMatrix(CUDA_R_32F, 6, 5, 0, 1, 0, one);
    ASSERT_NO_FATAL_FAILURE(MakePlan(CUBLAS_OP_N, CUBLAS_OP_N, A_, B_, C_, &plan_));
    da_ = std::make_unique<DeviceBuffer>(A_.elems() * 2);
    db_ = std::make_unique<DeviceBuffer>(B_.elems() * 2);
    dc_ = std::make_unique<DeviceBuffer>(C_.elems() * 4);
    const std::vector<uint8_t> ha = Encode(A_), hb = Encode(B_);
    ASSERT_CUDA(cudaMemcpy(da_->p, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(db_->p, hb.data(), hb.size(), cudaMemcpyHostToDevice));
  }
  // The heuristic's and the matmul's answer for plan_ as it is now.
  void ExpectBoth(cublasStatus_t want, const char* what) {
    cublasLtMatmulHeuristicResult_t r{};
    int found = -1;
    EXPECT_EQ(Heuristic(handle_, plan_, &r, &found), want) << what << " (heuristic)";
    if (want != CUBLAS_STATUS_SUCCESS) {
      EXPECT_EQ(found, 0) << what;
    }
    const float alpha = 1, beta = 0;
    EXPECT_EQ(cublasLtMatmul(handle_, plan_.desc, &alpha, da_->p, plan_.a, db_->p, plan_.b, &beta,
                             dc_->p, plan_.c, dc_->p, plan_.c, nullptr, nullptr, 0, stream_),
              want)
        << what << " (matmul)";
  }
  template <typename T>
  void SetDesc(cublasLtMatmulDescAttributes_t attr, T value) {
    ASSERT_CUBLAS(cublasLtMatmulDescSetAttribute(plan_.desc, attr, &value, sizeof(value)));
  }
  template <typename T>
  void SetLayout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T value) {
    ASSERT_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, attr, &value, sizeof(value)));
  }
  HostMatrix A_, B_, C_;
  Plan plan_;
  std::unique_ptr<DeviceBuffer> da_, db_, dc_;
};

TEST_F(CublasLtRefusalTest, TheUntouchedPlanRuns) { ExpectBoth(CUBLAS_STATUS_SUCCESS, "plain"); }

TEST_F(CublasLtRefusalTest, UnimplementedComputeScaleAndTypesAreNotSupported) {
  SetDesc(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, int32_t{CUBLAS_COMPUTE_32F_FAST_TF32});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "compute 32F_FAST_TF32");
  SetDesc(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, int32_t{CUBLAS_COMPUTE_32F});
  SetDesc(CUBLASLT_MATMUL_DESC_SCALE_TYPE, int32_t{CUDA_R_16BF});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "scale bf16");
  SetDesc(CUBLASLT_MATMUL_DESC_SCALE_TYPE, int32_t{CUDA_R_32F});
  ExpectBoth(CUBLAS_STATUS_SUCCESS, "restored");

  const struct {
    cudaDataType_t a, b, c;
    const char* what;
  } refused[] = {{CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, "fp16 inputs"},
                 {CUDA_R_32F, CUDA_R_16BF, CUDA_R_32F, "mixed inputs"},
                 {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16F, "fp16 output"},
                 {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, "fp64"}};
  for (const auto& t : refused) {
    SetLayout(plan_.a, CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<uint32_t>(t.a));
    SetLayout(plan_.b, CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<uint32_t>(t.b));
    SetLayout(plan_.c, CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<uint32_t>(t.c));
    ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, t.what);
  }
  // fp32 inputs with a bf16 output: not a cuBLASLt combination for COMPUTE_32F either.
  SetLayout(plan_.a, CUBLASLT_MATRIX_LAYOUT_TYPE, uint32_t{CUDA_R_32F});
  SetLayout(plan_.b, CUBLASLT_MATRIX_LAYOUT_TYPE, uint32_t{CUDA_R_32F});
  SetLayout(plan_.c, CUBLASLT_MATRIX_LAYOUT_TYPE, uint32_t{CUDA_R_16BF});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "fp32 in, bf16 out");
}

TEST_F(CublasLtRefusalTest, UnimplementedEpilogueOrderPointerModeAndOpsAreNotSupported) {
  SetDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t{CUBLASLT_EPILOGUE_RELU});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "epilogue relu");
  SetDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t{CUBLASLT_EPILOGUE_DEFAULT});
  SetDesc(CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t{CUBLASLT_POINTER_MODE_DEVICE});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "device pointer mode");
  SetDesc(CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t{CUBLASLT_POINTER_MODE_HOST});
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSC, int32_t{CUBLAS_OP_T});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "transc");
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSC, int32_t{CUBLAS_OP_N});
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSA, int32_t{CUBLAS_OP_CONJG});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "conjg");
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSA, int32_t{9});
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE, "op 9");
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSA, int32_t{CUBLAS_OP_N});
  SetLayout(plan_.b, CUBLASLT_MATRIX_LAYOUT_ORDER, int32_t{CUBLASLT_ORDER_ROW});
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED, "row order");
  SetLayout(plan_.b, CUBLASLT_MATRIX_LAYOUT_ORDER, int32_t{CUBLASLT_ORDER_COL});
  ExpectBoth(CUBLAS_STATUS_SUCCESS, "restored");
}

TEST_F(CublasLtRefusalTest, AttributesNeedTheirExactSizeAndUnknownOnesAreNotSupported) {
  const int64_t wide = CUBLAS_OP_T;
  EXPECT_EQ(
      cublasLtMatmulDescSetAttribute(plan_.desc, CUBLASLT_MATMUL_DESC_TRANSA, &wide, sizeof(wide)),
      CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(plan_.desc, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  const int32_t narrow = 3;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(plan_.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &narrow, sizeof(narrow)),
            CUBLAS_STATUS_INVALID_VALUE);
  // cuBLASLt's BIAS_POINTER (8), PLANE_OFFSET (7), IMPL_MASK (12): real attributes not implemented.
  const uint64_t v = 0;
  EXPECT_EQ(
      cublasLtMatmulDescSetAttribute(plan_.desc, cublasLtMatmulDescAttributes_t(8), &v, sizeof(v)),
      CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      cublasLtMatrixLayoutSetAttribute(plan_.a, cublasLtMatrixLayoutAttribute_t(7), &v, sizeof(v)),
      CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, cublasLtMatmulPreferenceAttributes_t(12), &v,
                                                 sizeof(v)),
            CUBLAS_STATUS_NOT_SUPPORTED);
  const uint32_t ws32 = 1024;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws32, sizeof(ws32)),
            CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
  ExpectBoth(CUBLAS_STATUS_SUCCESS, "nothing was changed by the refused calls");
}

TEST_F(CublasLtRefusalTest, LayoutsThatDoNotFitTogetherAreInvalid) {
  SetLayout(plan_.b, CUBLASLT_MATRIX_LAYOUT_ROWS, uint64_t{3});  // k 4 vs 3
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE, "k mismatch");
  SetLayout(plan_.b, CUBLASLT_MATRIX_LAYOUT_ROWS, uint64_t{4});
  SetLayout(plan_.c, CUBLASLT_MATRIX_LAYOUT_COLS, uint64_t{6});  // n 5 vs 6
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE, "n mismatch");
  SetLayout(plan_.c, CUBLASLT_MATRIX_LAYOUT_COLS, uint64_t{5});
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSA, int32_t{CUBLAS_OP_T});  // A^T is 4 x 6: m 4 vs 6
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE, "op(A) shape");
  SetDesc(CUBLASLT_MATMUL_DESC_TRANSA, int32_t{CUBLAS_OP_N});
  SetLayout(plan_.a, CUBLASLT_MATRIX_LAYOUT_LD, int64_t{5});  // 6 rows
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE, "lda < rows");
  SetLayout(plan_.a, CUBLASLT_MATRIX_LAYOUT_LD, int64_t{6});
  SetLayout(plan_.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{2});
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE, "batch counts differ");
  SetLayout(plan_.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{1});
  ExpectBoth(CUBLAS_STATUS_SUCCESS, "restored");
}

TEST_F(CublasLtRefusalTest, BadHandlesCountsPointersAndAlgorithms) {
  cublasLtMatmulHeuristicResult_t r{};
  int found = -1;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(nullptr, plan_.desc, plan_.a, plan_.b, plan_.c, plan_.c,
                                           nullptr, 1, &r, &found),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, plan_.desc, plan_.a, plan_.b, plan_.c, plan_.c,
                                           nullptr, 0, &r, &found),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(found, 0);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, nullptr, plan_.a, plan_.b, plan_.c, plan_.c,
                                           nullptr, 1, &r, &found),
            CUBLAS_STATUS_INVALID_VALUE);
  // A null preference is the defaults (256-byte alignment, no workspace): one algorithm.
  ASSERT_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle_, plan_.desc, plan_.a, plan_.b, plan_.c,
                                               plan_.c, nullptr, 1, &r, &found));
  EXPECT_EQ(found, 1);

  const float alpha = 1, beta = 0;
  auto matmul = [&](const void* A, const void* C, void* D, const cublasLtMatmulAlgo_t* algo,
                    cublasLtMatrixLayout_t dl) {
    return cublasLtMatmul(handle_, plan_.desc, &alpha, A, plan_.a, db_->p, plan_.b, &beta, C,
                          plan_.c, D, dl, algo, nullptr, 0, stream_);
  };
  EXPECT_EQ(matmul(da_->p, dc_->p, dc_->p, &r.algo, plan_.c), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulAlgo_t foreign{};
  foreign.data[0] = 42;
  EXPECT_EQ(matmul(da_->p, dc_->p, dc_->p, &foreign, plan_.c), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(matmul(nullptr, dc_->p, dc_->p, nullptr, plan_.c), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(matmul(da_->p, dc_->p, nullptr, nullptr, plan_.c), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(matmul(static_cast<char*>(da_->p) + 1, dc_->p, dc_->p, nullptr, plan_.c),
            CUBLAS_STATUS_INVALID_VALUE)
      << "a bf16 operand at an odd address";
  // In place needs one layout for C and D.
  cublasLtMatrixLayout_t wide = nullptr;
  ASSERT_CUBLAS(cublasLtMatrixLayoutCreate(&wide, CUDA_R_32F, 6, 5, 7));
  DeviceBuffer big(7 * 5 * 4);
  ASSERT_CUDA(cudaMemset(big.p, 0xff, big.bytes));  // NaN everywhere
  EXPECT_EQ(matmul(da_->p, big.p, big.p, nullptr, wide), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(matmul(da_->p, dc_->p, big.p, nullptr, wide), CUBLAS_STATUS_SUCCESS)
      << "out of place, D with its own leading dimension";
  ASSERT_CUBLAS(cublasLtMatrixLayoutDestroy(wide));
  std::vector<float> d(7 * 5);
  ASSERT_CUDA(cudaMemcpyAsync(d.data(), big.p, big.bytes, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  for (int j = 0; j < 5; ++j)
    for (int i = 0; i < 7; ++i) {
      if (i < 6) {
        EXPECT_EQ(d[j * 7 + i], 4.0f) << i << ", " << j;  // a row of ones times a column of ones
      } else {
        EXPECT_TRUE(std::isnan(d[j * 7 + i])) << "padding row written, column " << j;
      }
    }
  EXPECT_EQ(cublasLtMatmul(nullptr, plan_.desc, &alpha, da_->p, plan_.a, db_->p, plan_.b, &beta,
                           dc_->p, plan_.c, dc_->p, plan_.c, nullptr, nullptr, 0, stream_),
            CUBLAS_STATUS_NOT_INITIALIZED);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
}

// The one preference it cannot meet: an operand promised less than its element's alignment.
// gemm.cc reads found == 0 as "use the fallback kernel".
TEST_F(CublasLtRefusalTest, AlignmentBelowTheElementSizeFindsNoAlgorithm) {
  for (uint32_t align : {1u, 2u, 4u, 256u}) {
    for (uint64_t workspace : {uint64_t{0}, uint64_t{1} << 25}) {
      cublasLtMatmulHeuristicResult_t r{};
      int found = -1;
      ASSERT_CUBLAS(Heuristic(handle_, plan_, &r, &found, align, workspace));
      EXPECT_EQ(found, align >= 2 ? 1 : 0) << "alignment " << align;
      if (found == 1) {
        EXPECT_EQ(r.workspaceSize, 0u);
      }
    }
  }
}

TEST(CublasLtStatus, NamesAndStringsAreCublasLts) {
  EXPECT_STREQ(cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED),
               "the requested functionality is not supported");
  EXPECT_STREQ(cublasLtGetStatusString(cublasStatus_t(99)), "unknown error");
  // The toolkit's numbers, which messages print.
  EXPECT_EQ(int{CUBLAS_STATUS_NOT_SUPPORTED}, 15);
  EXPECT_EQ(int{CUDA_R_16BF}, 14);
  EXPECT_EQ(int{CUBLAS_COMPUTE_32F}, 68);
  EXPECT_EQ(int{CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET}, 6);
  EXPECT_EQ(int{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}, 8);
}

}  // namespace
