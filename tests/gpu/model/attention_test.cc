// Masked multi-head attention (two strided-batched bf16 GEMMs around an fp32 softmax) against
// reference::AttentionForward/Backward. The per-head tensors have rows padded to a multiple of 8
// (attention.h), so with an odd T no GEMM operand, row or batch stride is under 16-byte aligned. q, k, v and the probabilities enter the GEMMs as bf16
// (2^-8 relative at most each) with fp32 accumulation, so outputs and gradients agree to 2e-2
// relative L2 and 5e-2 of each tensor's scale per element. The mask is exact: masked probabilities
// are 0.
#include <gtest/gtest.h>

#include <memory>

#include "gpu/model/attention.h"
#include "reference/attention.h"
#include "test_util.h"

namespace sluice::gpu::model {
namespace {

using namespace testing;

TEST(GpuAttention, ForwardAndBackwardMatchReferenceWithPadding) {
  SKIP_WITHOUT_GPU();
  const int B = 4, T = 37, C = 48, H = 3;  // hs = 16; T odd
  const std::vector<int32_t> lengths = {37, 20, 1, 0};  // full, partial, one key, empty
  const AttentionDims d{B, T, C, H};
  const std::vector<float> qkv = Random(d.head_elems() * 3, 1, -2, 2),
                           bias = Random(3 * C, 2, -0.5, 0.5);
  std::vector<float> qkv_b(qkv.size());
  for (size_t i = 0; i < qkv.size(); ++i) qkv_b[i] = qkv[i] + bias[i % (3 * C)];
  std::vector<float> out(d.head_elems()), att(static_cast<size_t>(B) * H * T * T);
  reference::AttentionForward(out.data(), att.data(), qkv_b.data(), lengths.data(), B, T, C, H);

  std::unique_ptr<Gemm> gemm;
  ASSERT_OK(Gemm::Create(32 << 20, &gemm));
  auto dqkv_in = ToDevice(qkv), dbias = ToDevice(bias);
  auto dlen = ToDevice(lengths);
  // Every saved and scratch tensor starts as NaN: the GEMMs run over the padded Tp rows and
  // columns, so a padding element the kernels did not zero would poison the results.
  auto q = NaNs<Bf16>(d.saved_elems()), k = NaNs<Bf16>(d.saved_elems()),
       v = NaNs<Bf16>(d.saved_elems());
  auto probs = NaNs<float>(d.score_elems());
  auto probs_b = NaNs<Bf16>(d.score_elems());
  auto scores = NaNs<float>(d.score_elems());
  auto ds = NaNs<Bf16>(d.score_elems());
  auto y = NaNs<float>(d.saved_elems()), dq = NaNs<float>(d.saved_elems()),
       dk = NaNs<float>(d.saved_elems()), dv = NaNs<float>(d.saved_elems());
  auto dy = NaNs<Bf16>(d.saved_elems());
  const AttentionSaved saved{q.data(), k.data(), v.data(), probs.data(), probs_b.data()};
  const AttentionScratch scratch{scores.data(), ds.data(), y.data(), dy.data(),
                                 dq.data(),     dk.data(), dv.data()};
  auto out_b = Zeros<Bf16>(d.head_elems());
  auto out_f = Zeros<float>(d.head_elems());
  ASSERT_OK(AttentionForward(*gemm, out_b.data(), out_f.data(), dqkv_in.data(), dbias.data(),
                             dlen.data(), d, saved, scratch, nullptr));
  // The probabilities of [B, H, Tp, Tp], unpadded to the reference's [B, H, T, T].
  const int Tp = d.Tp();
  ASSERT_EQ(Tp, 40);
  const std::vector<float> padded_p = ToHost(probs, d.score_elems());
  std::vector<float> got_p;
  for (int bh = 0; bh < B * H; ++bh)
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < T; ++j)
        got_p.push_back(padded_p[(static_cast<size_t>(bh) * Tp + t) * Tp + j]);
  ExpectClose("probabilities", got_p, att, 2e-2, 5e-2);
  size_t masked_nonzero = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = lengths[b]; j < T; ++j)
          masked_nonzero += got_p[((static_cast<size_t>(b) * H + h) * T + t) * T + j] != 0.0f;
  EXPECT_EQ(masked_nonzero, 0u);
  ExpectClose("attention out", ToHost(out_f, d.head_elems()), out, 2e-2, 5e-2);
  ExpectClose("attention out bf16", FromBf16(ToHost(out_b, d.head_elems())), out, 2e-2, 5e-2);

  const std::vector<float> dout = Random(d.head_elems(), 3);
  std::vector<float> dqkv(qkv.size(), 0.0f);
  reference::AttentionBackward(dqkv.data(), dout.data(), qkv_b.data(), att.data(), lengths.data(),
                               B, T, C, H);
  auto ddout = ToDevice(dout);
  auto got = Zeros<float>(qkv.size());
  auto got_b = Zeros<Bf16>(qkv.size());
  ASSERT_OK(AttentionBackward(*gemm, got.data(), got_b.data(), ddout.data(), dlen.data(), d, saved,
                              scratch, nullptr));
  const std::vector<float> g = ToHost(got, qkv.size());
  // q, k and v separately: their gradients have different scales.
  for (int part = 0; part < 3; ++part) {
    std::vector<float> gp, wp;
    for (size_t i = 0; i < g.size(); ++i)
      if (static_cast<int>((i % (3 * C)) / C) == part) {
        gp.push_back(g[i]);
        wp.push_back(dqkv[i]);
      }
    ExpectClose(std::string("d") + "qkv"[part], gp, wp, 2e-2, 5e-2);
  }
  // The empty utterance gets exactly zero gradient.
  size_t nonzero = 0;
  for (size_t i = static_cast<size_t>(3) * T * 3 * C; i < g.size(); ++i) nonzero += g[i] != 0.0f;
  EXPECT_EQ(nonzero, 0u);
  // Six strided-batched GEMMs over an odd T, none of them under-aligned or on the fallback.
  EXPECT_EQ(gemm->under_aligned_calls(), 0u);
  EXPECT_EQ(gemm->fallback_calls(), 0u);
}

}  // namespace
}  // namespace sluice::gpu::model
