#include "gpu/model/model.h"

#include <algorithm>
#include <map>
#include <string>

#include "gpu/model/attention.h"
#include "gpu/model/ctc.h"
#include "gpu/model/device_array.h"
#include "gpu/model/gemm.h"
#include "gpu/model/ops.h"
#include "reference/conv2d.h"

namespace sluice::gpu::model {
namespace {

using reference::ParamTensor;

// Indices into the layout of one layer's tensors, and of the rest.
struct LayerIds {
  int fc2_w, fc2_b, fc1_w, fc1_b, ln2_g, ln2_b, proj_w, proj_b, qkv_w, qkv_b, ln1_g, ln1_b;
};
struct Ids {
  int out_w, out_b, lnf_g, lnf_b, sub_w, sub_b, conv2_w, conv2_b, conv1_w, conv1_b;
  std::vector<LayerIds> layers;
};

// Per layer, what the backward reads.
struct LayerActs {
  DeviceArray<Bf16> ln1, attn, ln2, act;  // GEMM inputs (act: the feed-forward activation's output)
  DeviceArray<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
  DeviceArray<float> x1;                  // residual stream after attention (LN2's input)
  DeviceArray<float> fc1;                 // FC1 output + bias (the activation's input)
  DeviceArray<Bf16> q, k, v, probs_bf16;  // attention
  DeviceArray<float> probs;
};

// Each tensor's index in reference::ParameterLayout, by its name (docs/model.md).
Ids FindIds(const std::vector<reference::ParamTensor>& layout, int n_layers) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < layout.size(); ++i) index[layout[i].name] = static_cast<int>(i);
  auto id = [&](const std::string& name) { return index.at(name); };
  Ids ids;
  ids.out_w = id("head.out.weight");
  ids.out_b = id("head.out.bias");
  ids.lnf_g = id("head.ln.gamma");
  ids.lnf_b = id("head.ln.beta");
  ids.sub_w = id("subsampling.out.weight");
  ids.sub_b = id("subsampling.out.bias");
  ids.conv2_w = id("subsampling.conv2.weight");
  ids.conv2_b = id("subsampling.conv2.bias");
  ids.conv1_w = id("subsampling.conv1.weight");
  ids.conv1_b = id("subsampling.conv1.bias");
  ids.layers.resize(n_layers);
  for (int l = 0; l < n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    ids.layers[l] =
        LayerIds{id(p + "fc2.weight"),       id(p + "fc2.bias"),       id(p + "fc1.weight"),
                 id(p + "fc1.bias"),         id(p + "ln2.gamma"),      id(p + "ln2.beta"),
                 id(p + "attn.proj.weight"), id(p + "attn.proj.bias"), id(p + "attn.qkv.weight"),
                 id(p + "attn.qkv.bias"),    id(p + "ln1.gamma"),      id(p + "ln1.beta")};
  }
  return ids;
}

}  // namespace

struct CudaModel::State {
  reference::ModelConfig config;
  CudaModelOptions options;
  std::vector<ParamTensor> layout;
  Ids ids;
  size_t P = 0;
  std::unique_ptr<Gemm> gemm;
  void* stream = nullptr;

  // Dimensions at the maximum, and of the last Forward.
  int F = 0, F2 = 0;
  int B = 0, T = 0, T2 = 0, N = 0;
  float dropout_p = 0;
  reference::StepContext ctx;
  const float* features = nullptr;  // the last batch's, for conv1's weight gradient

  DeviceArray<float> params, grads, dw_scratch, col_scratch;
  DeviceArray<Bf16> wbf;           // bf16 copies of the GEMM weights, 256-byte aligned each
  std::vector<size_t> wbf_offset;  // per layout index (only GEMM weights are used)

  DeviceArray<int32_t> out_len, flags;  // flags[0]: bad frames, [1]: bad labels (utterance + 1)
  DeviceArray<float> mean_loss, losses;
  DeviceArray<float> conv2_out, relu2, gemm_out, log_probs, dlogits;
  DeviceArray<Bf16> col, sub_in, lnf, dlogits_bf16;
  DeviceArray<float> lnf_mean, lnf_rstd;
  std::vector<DeviceArray<float>> xs;  // xs[l]: input of layer l; xs[L]: encoder output
  std::vector<LayerActs> layers;
  DeviceArray<double> ctc_ws, conv1_scratch;
  // Backward scratch.
  DeviceArray<float> dx, dC, dC2, dD, dD2, d3C, dsub, dconv2, dcol;
  DeviceArray<Bf16> dx_bf16, dC2_bf16, dD2_bf16, d3C_bf16, dconv2_bf16;
  DeviceArray<float> att_scores, att_y, att_dq, att_dk, att_dv;
  DeviceArray<Bf16> att_ds, att_dy;

  // Every weight a GEMM reads has a bf16 copy: all but conv1's, which a direct fp32 kernel uses.
  bool HasBf16Copy(size_t i) const { return layout[i].decay && static_cast<int>(i) != ids.conv1_w; }
  // The bf16 copy of weight i, made before each forward. conv2's GEMM reads its kernel as
  // [Cout, 3, 3, Cin] (Conv1Im2Col's column order) while the parameters keep PyTorch's
  // [Cout, Cin, 3, 3].
  Status CopyToBf16(size_t i) {
    Bf16* out = wbf.data() + wbf_offset[i];
    const float* in = params.data() + layout[i].offset;
    if (static_cast<int>(i) != ids.conv2_w) return CastToBf16(out, in, layout[i].count, stream);
    return CastToBf16SwapInner(out, in, config.d_model, config.d_model, 9, stream);
  }
  // grads[w] += the weight gradient a GEMM computed into dw_scratch (in the copy's order).
  Status AddWeightGrad(int w) {
    if (w != ids.conv2_w) return AddTo(Gp(w), dw_scratch.data(), layout[w].count, stream);
    return AddToSwapInner(Gp(w), dw_scratch.data(), config.d_model, config.d_model, 9, stream);
  }
  const Bf16* W(int id) const { return wbf.data() + wbf_offset[id]; }
  const float* Pp(int id) const { return params.data() + layout[id].offset; }
  float* Gp(int id) { return grads.data() + layout[id].offset; }

  AttentionDims Dims() const { return AttentionDims{B, T2, config.d_model, config.n_heads}; }
  // The head GEMM's output (logits) and the bf16 logit gradient have rows of Vp: the vocabulary
  // rounded up to 8, so that their rows stay 16-byte aligned for cuBLASLt whatever the vocabulary.
  int64_t Vp() const { return (config.vocab + 7) / 8 * 8; }
  AttentionScratch Scratch() {
    return AttentionScratch{att_scores.data(), att_ds.data(), att_y.data(), att_dy.data(),
                            att_dq.data(),     att_dk.data(), att_dv.data()};
  }
  AttentionSaved Saved(int l) {
    LayerActs& a = layers[l];
    return AttentionSaved{a.q.data(), a.k.data(), a.v.data(), a.probs.data(), a.probs_bf16.data()};
  }

  // Every buffer at the sizes of `options` (the largest batch), bf elements of bf16 weight copies
  // and max_w floats of weight-gradient scratch; F and F2 too.
  Status Allocate(size_t bf, size_t max_w) {
    const int C = config.d_model, D = config.d_ff, V = config.vocab, H = config.n_heads;
    const size_t Bm = options.max_batch;
    F = config.n_mels;
    F2 = reference::SubsampledLength(F);
    const size_t T2m = reference::SubsampledLength(options.max_frames);
    const size_t Nm = Bm * T2m;
    const size_t NC = Nm * C, ND = Nm * D, NV = Nm * V;
    const size_t M2 = Bm * T2m * F2;  // rows of the conv2 GEMM
    // Attention's per-head tensors at the longest batch (attention.h: rows padded to 8).
    const AttentionDims att_max{static_cast<int>(Bm), static_cast<int>(T2m), C, H};
    const size_t scores = att_max.score_elems(), heads = att_max.saved_elems();

    auto alloc = [](auto& arr, size_t n) { return arr.Allocate(std::max<size_t>(n, 1)); };
    SLUICE_RETURN_IF_ERROR(Gemm::Create(options.gemm_workspace_bytes, &gemm));
    SLUICE_RETURN_IF_ERROR(alloc(params, P));
    SLUICE_RETURN_IF_ERROR(alloc(grads, P));
    SLUICE_RETURN_IF_ERROR(alloc(wbf, bf));
    SLUICE_RETURN_IF_ERROR(alloc(dw_scratch, max_w));
    size_t col_floats = 0;
    for (auto [rows, cols] :
         {std::pair<size_t, size_t>{Nm, 3 * C}, {Nm, D}, {Nm, V}, {Nm, C}, {M2, C}})
      col_floats =
          std::max(col_floats, ColumnSumScratch(static_cast<int>(rows), static_cast<int>(cols)));
    SLUICE_RETURN_IF_ERROR(alloc(col_scratch, col_floats));
    SLUICE_RETURN_IF_ERROR(alloc(out_len, Bm));
    SLUICE_RETURN_IF_ERROR(alloc(flags, 2));
    SLUICE_RETURN_IF_ERROR(alloc(mean_loss, 1));
    SLUICE_RETURN_IF_ERROR(alloc(losses, Bm));
    SLUICE_RETURN_IF_ERROR(alloc(col, M2 * 9 * C));
    SLUICE_RETURN_IF_ERROR(alloc(conv2_out, M2 * C));
    SLUICE_RETURN_IF_ERROR(alloc(relu2, M2 * C));
    SLUICE_RETURN_IF_ERROR(alloc(sub_in, M2 * C));
    SLUICE_RETURN_IF_ERROR(alloc(gemm_out, std::max({3 * NC, ND, Nm * Vp()})));
    SLUICE_RETURN_IF_ERROR(alloc(log_probs, NV));
    SLUICE_RETURN_IF_ERROR(alloc(dlogits, NV));
    SLUICE_RETURN_IF_ERROR(alloc(dlogits_bf16, Nm * Vp()));
    SLUICE_RETURN_IF_ERROR(alloc(lnf, NC));
    SLUICE_RETURN_IF_ERROR(alloc(lnf_mean, Nm));
    SLUICE_RETURN_IF_ERROR(alloc(lnf_rstd, Nm));
    xs.resize(config.n_layers + 1);
    for (auto& x : xs) SLUICE_RETURN_IF_ERROR(alloc(x, NC));
    layers.resize(config.n_layers);
    for (LayerActs& a : layers) {
      for (DeviceArray<Bf16>* v : {&a.ln1, &a.attn, &a.ln2}) SLUICE_RETURN_IF_ERROR(alloc(*v, NC));
      for (DeviceArray<Bf16>* v : {&a.q, &a.k, &a.v}) SLUICE_RETURN_IF_ERROR(alloc(*v, heads));
      SLUICE_RETURN_IF_ERROR(alloc(a.act, ND));
      for (DeviceArray<float>* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd})
        SLUICE_RETURN_IF_ERROR(alloc(*v, Nm));
      SLUICE_RETURN_IF_ERROR(alloc(a.x1, NC));
      SLUICE_RETURN_IF_ERROR(alloc(a.fc1, ND));
      SLUICE_RETURN_IF_ERROR(alloc(a.probs, scores));
      SLUICE_RETURN_IF_ERROR(alloc(a.probs_bf16, scores));
    }
    SLUICE_RETURN_IF_ERROR(alloc(
        ctc_ws, CtcWorkspaceElems(options.max_batch, static_cast<int>(T2m), options.max_labels)));
    for (DeviceArray<float>* v : {&dx, &dC, &dC2}) SLUICE_RETURN_IF_ERROR(alloc(*v, NC));
    for (DeviceArray<float>* v : {&dD, &dD2}) SLUICE_RETURN_IF_ERROR(alloc(*v, ND));
    SLUICE_RETURN_IF_ERROR(alloc(d3C, 3 * NC));
    SLUICE_RETURN_IF_ERROR(alloc(dsub, M2 * C));
    SLUICE_RETURN_IF_ERROR(alloc(dconv2, M2 * C));
    SLUICE_RETURN_IF_ERROR(alloc(dcol, M2 * 9 * C));
    SLUICE_RETURN_IF_ERROR(alloc(
        conv1_scratch, Conv1BackwardScratch(static_cast<int>(Bm), options.max_frames, F, C)));
    SLUICE_RETURN_IF_ERROR(alloc(dx_bf16, NC));
    SLUICE_RETURN_IF_ERROR(alloc(dC2_bf16, NC));
    SLUICE_RETURN_IF_ERROR(alloc(dD2_bf16, ND));
    SLUICE_RETURN_IF_ERROR(alloc(d3C_bf16, 3 * NC));
    SLUICE_RETURN_IF_ERROR(alloc(dconv2_bf16, M2 * C));
    SLUICE_RETURN_IF_ERROR(alloc(att_scores, scores));
    SLUICE_RETURN_IF_ERROR(alloc(att_ds, scores));
    for (DeviceArray<float>* v : {&att_y, &att_dq, &att_dk, &att_dv})
      SLUICE_RETURN_IF_ERROR(alloc(*v, heads));
    SLUICE_RETURN_IF_ERROR(alloc(att_dy, heads));
    return Status::OK();
  }

  // out[n, oc] = in[n, :] . W[oc, :] (no bias: the consumer adds it, fused); out's rows are
  // out_ld apart (0: packed).
  Status LinearNoBias(float* out, const Bf16* in, int w, int rows, int in_features,
                      int out_features, int64_t out_ld = 0) {
    GemmShape s;
    s.M = rows;
    s.N = out_features;
    s.K = in_features;
    s.ldc = out_ld;
    s.trans_b = true;  // W is stored [out, in]
    return gemm->Run(s, in, W(w), out, stream);
  }

  // Linear backward: din = dout W (written; skipped when din is null), grads[w] += dout^T in,
  // grads[b] += column sums of dout. The weight gradient goes through 256-byte aligned scratch
  // (the flat buffer's offsets are only 4-byte aligned), then is added in. dout_bf16's rows are
  // dout_ld apart (0: packed); dout (fp32) is packed.
  Status LinearBackward(float* din, int w, int b, const Bf16* dout_bf16, const float* dout,
                        const Bf16* in, int rows, int in_features, int out_features,
                        int64_t dout_ld = 0) {
    GemmShape dw;  // [out, in] = dout^T [out, rows] x in [rows, in]
    dw.M = out_features;
    dw.N = in_features;
    dw.K = rows;
    dw.lda = dout_ld;
    dw.trans_a = true;
    SLUICE_RETURN_IF_ERROR(gemm->Run(dw, dout_bf16, in, dw_scratch.data(), stream));
    SLUICE_RETURN_IF_ERROR(AddWeightGrad(w));
    SLUICE_RETURN_IF_ERROR(
        ColumnSumAdd(Gp(b), dout, rows, out_features, col_scratch.data(), stream));
    if (din == nullptr) return Status::OK();
    GemmShape dx;  // [rows, in] = dout [rows, out] x W [out, in]
    dx.M = rows;
    dx.N = in_features;
    dx.K = out_features;
    dx.lda = dout_ld;
    return gemm->Run(dx, dout_bf16, W(w), din, stream);
  }
};

CudaModel::CudaModel(std::unique_ptr<State> state) : s_(std::move(state)) {}
CudaModel::~CudaModel() = default;

Status CudaModel::Create(const reference::ModelConfig& config, const CudaModelOptions& options,
                         std::unique_ptr<CudaModel>* out) {
  SLUICE_RETURN_IF_ERROR(config.Validate());
  if (options.max_batch < 1 || reference::SubsampledLength(options.max_frames) < 1 ||
      options.max_labels < 0)
    return Status::InvalidArgument(
        "CudaModel: options need max_batch >= 1, max_frames >= 7, "
        "max_labels >= 0");
  auto st = std::make_unique<State>();
  State& s = *st;
  s.config = config;
  s.options = options;
  s.stream = options.stream;
  s.layout = reference::ParameterLayout(config);
  s.P = s.layout.back().offset + s.layout.back().count;

  s.ids = FindIds(s.layout, config.n_layers);

  // bf16 weight copies (HasBf16Copy), each at a 128-element (256-byte) boundary.
  s.wbf_offset.assign(s.layout.size(), 0);
  size_t bf = 0, max_w = 0;
  for (size_t i = 0; i < s.layout.size(); ++i) {
    if (!s.HasBf16Copy(i)) continue;
    s.wbf_offset[i] = bf;
    bf += (s.layout[i].count + 127) / 128 * 128;
    max_w = std::max(max_w, s.layout[i].count);
  }

  SLUICE_RETURN_IF_ERROR(s.Allocate(bf, max_w));

  SLUICE_RETURN_IF_ERROR(s.params.Zero(s.stream));
  SLUICE_RETURN_IF_ERROR(s.grads.Zero(s.stream));
  SLUICE_RETURN_IF_ERROR(s.wbf.Zero(s.stream));
  int32_t sync_probe = 0;  // waits for the zeroing (Download synchronises)
  SLUICE_RETURN_IF_ERROR(s.flags.Download(&sync_probe, 1, s.stream));
  out->reset(new CudaModel(std::move(st)));
  return Status::OK();
}

size_t CudaModel::gemm_fallback_calls() const { return s_->gemm->fallback_calls(); }
size_t CudaModel::gemm_under_aligned_calls() const { return s_->gemm->under_aligned_calls(); }
const reference::ModelConfig& CudaModel::config() const { return s_->config; }
const std::vector<ParamTensor>& CudaModel::layout() const { return s_->layout; }
size_t CudaModel::num_parameters() const { return s_->P; }
float* CudaModel::params() { return s_->params.data(); }
float* CudaModel::grads() { return s_->grads.data(); }
void* CudaModel::stream() const { return s_->stream; }
const float* CudaModel::log_probs() const { return s_->log_probs.data(); }
int CudaModel::output_frames() const { return s_->T2; }

Status CudaModel::InitParameters(uint64_t seed) {
  reference::Model<float> host(s_->config);
  host.InitParameters(seed);
  return UploadParameters(host.params());
}

Status CudaModel::UploadParameters(const float* host) {
  SLUICE_RETURN_IF_ERROR(s_->params.Upload(host, s_->P, s_->stream));
  int32_t probe = 0;
  return s_->flags.Download(&probe, 1, s_->stream);  // waits for the upload: `host` may go away
}
Status CudaModel::DownloadParameters(float* host) {
  return s_->params.Download(host, s_->P, s_->stream);
}
Status CudaModel::DownloadGrads(float* host) { return s_->grads.Download(host, s_->P, s_->stream); }
Status CudaModel::ZeroGrad() { return s_->grads.Zero(s_->stream); }

Status CudaModel::DownloadLogProbs(std::vector<float>* out) {
  out->resize(static_cast<size_t>(s_->N) * s_->config.vocab);
  return s_->log_probs.Download(out->data(), out->size(), s_->stream);
}
Status CudaModel::DownloadLosses(std::vector<float>* out) {
  out->resize(s_->B);
  return s_->losses.Download(out->data(), out->size(), s_->stream);
}
Status CudaModel::DownloadOutputLengths(std::vector<int32_t>* out) {
  out->resize(s_->B);
  return s_->out_len.Download(out->data(), out->size(), s_->stream);
}

Status CudaModel::Forward(const CudaBatch& batch, const reference::StepContext& ctx,
                          float* mean_loss) {
  State& s = *s_;
  const reference::ModelConfig& c = s.config;
  const int B = batch.B, T = batch.T, C = c.d_model, D = c.d_ff, V = c.vocab, L = c.n_layers;
  if (B < 1 || B > s.options.max_batch || T > s.options.max_frames || batch.S_max < 0 ||
      batch.S_max > s.options.max_labels)
    return Status::InvalidArgument("CudaModel: batch of B " + std::to_string(B) + ", T " +
                                   std::to_string(T) + ", S_max " + std::to_string(batch.S_max) +
                                   " is empty or exceeds the sizes given to Create");
  if (reference::SubsampledLength(T) < 1)
    return Status::InvalidArgument("CudaModel: batch of " + std::to_string(T) +
                                   " frames, subsampling needs at least 7");
  s.B = B;
  s.T = T;
  s.T2 = reference::SubsampledLength(T);
  s.N = B * s.T2;
  s.ctx = ctx;
  s.features = batch.features;
  s.dropout_p = ctx.training ? c.dropout : 0.0f;
  const int N = s.N, T2 = s.T2, F2 = s.F2;
  void* st = s.stream;

  // bf16 copies of the current master weights.
  for (size_t i = 0; i < s.layout.size(); ++i)
    if (s.HasBf16Copy(i)) SLUICE_RETURN_IF_ERROR(s.CopyToBf16(i));
  SLUICE_RETURN_IF_ERROR(s.flags.Zero(st));
  SLUICE_RETURN_IF_ERROR(
      SubsampledLengths(s.out_len.data(), s.flags.data(), batch.frames, B, T, st));

  // Subsampling: conv1 + ReLU computed inside conv2's im2col, conv2 as GEMM, + bias + ReLU +
  // transpose, linear.
  const Ids& ids = s.ids;
  SLUICE_RETURN_IF_ERROR(Conv1Im2Col(s.col.data(), batch.features, s.Pp(ids.conv1_w),
                                     s.Pp(ids.conv1_b), B, T, s.F, C, st));
  const int M2 = B * T2 * F2;
  SLUICE_RETURN_IF_ERROR(
      s.LinearNoBias(s.conv2_out.data(), s.col.data(), ids.conv2_w, M2, 9 * C, C));
  SLUICE_RETURN_IF_ERROR(Conv2Epilogue(s.relu2.data(), s.sub_in.data(), s.conv2_out.data(),
                                       s.Pp(ids.conv2_b), B, C, T2, F2, st));
  SLUICE_RETURN_IF_ERROR(s.LinearNoBias(s.xs[0].data(), s.sub_in.data(), ids.sub_w, N, C * F2, C));
  SLUICE_RETURN_IF_ERROR(AddBiasPositions(s.xs[0].data(), s.Pp(ids.sub_b), B, T2, C, st));

  const float p = s.dropout_p;
  for (int l = 0; l < L; ++l) {
    LayerActs& a = s.layers[l];
    const LayerIds& w = ids.layers[l];
    const float* x = s.xs[l].data();
    SLUICE_RETURN_IF_ERROR(LayerNormForward(a.ln1.data(), nullptr, a.ln1_mean.data(),
                                            a.ln1_rstd.data(), x, s.Pp(w.ln1_g), s.Pp(w.ln1_b), N,
                                            C, st));
    SLUICE_RETURN_IF_ERROR(s.LinearNoBias(s.gemm_out.data(), a.ln1.data(), w.qkv_w, N, C, 3 * C));
    SLUICE_RETURN_IF_ERROR(AttentionForward(*s.gemm, a.attn.data(), nullptr, s.gemm_out.data(),
                                            s.Pp(w.qkv_b), s.out_len.data(), s.Dims(), s.Saved(l),
                                            s.Scratch(), st));
    SLUICE_RETURN_IF_ERROR(s.LinearNoBias(s.gemm_out.data(), a.attn.data(), w.proj_w, N, C, C));
    SLUICE_RETURN_IF_ERROR(
        BiasDropoutResidual(a.x1.data(), s.gemm_out.data(), s.Pp(w.proj_b), x, N, C, p,
                            reference::DropoutKey{ctx.seed, ctx.step, uint32_t(2 * l)}, st));
    SLUICE_RETURN_IF_ERROR(LayerNormForward(a.ln2.data(), nullptr, a.ln2_mean.data(),
                                            a.ln2_rstd.data(), a.x1.data(), s.Pp(w.ln2_g),
                                            s.Pp(w.ln2_b), N, C, st));
    SLUICE_RETURN_IF_ERROR(s.LinearNoBias(a.fc1.data(), a.ln2.data(), w.fc1_w, N, C, D));
    SLUICE_RETURN_IF_ERROR(BiasActivationForward(s.config.activation, a.fc1.data(), a.act.data(),
                                                 nullptr, s.Pp(w.fc1_b), N, D, st));
    SLUICE_RETURN_IF_ERROR(s.LinearNoBias(s.gemm_out.data(), a.act.data(), w.fc2_w, N, D, C));
    SLUICE_RETURN_IF_ERROR(
        BiasDropoutResidual(s.xs[l + 1].data(), s.gemm_out.data(), s.Pp(w.fc2_b), a.x1.data(), N, C,
                            p, reference::DropoutKey{ctx.seed, ctx.step, uint32_t(2 * l + 1)}, st));
  }

  SLUICE_RETURN_IF_ERROR(LayerNormForward(s.lnf.data(), nullptr, s.lnf_mean.data(),
                                          s.lnf_rstd.data(), s.xs[L].data(), s.Pp(ids.lnf_g),
                                          s.Pp(ids.lnf_b), N, C, st));
  SLUICE_RETURN_IF_ERROR(
      s.LinearNoBias(s.gemm_out.data(), s.lnf.data(), ids.out_w, N, C, V, s.Vp()));
  SLUICE_RETURN_IF_ERROR(BiasLogSoftmaxForward(s.log_probs.data(), s.gemm_out.data(), s.Vp(),
                                               s.Pp(ids.out_b), N, V, st));
  // The CTC gradient (w.r.t. the logits, scaled by 1/B) comes with the forward-backward.
  SLUICE_RETURN_IF_ERROR(CtcLossBatch(s.log_probs.data(), B, T2, V, batch.labels, batch.S_max,
                                      s.out_len.data(), batch.label_lengths, /*zero_infinity=*/true,
                                      1.0f / B, s.losses.data(), s.dlogits.data(), s.ctc_ws.data(),
                                      s.flags.data() + 1, st));
  SLUICE_RETURN_IF_ERROR(MeanOf(s.mean_loss.data(), s.losses.data(), B, st));

  if (mean_loss == nullptr) return Status::OK();
  return ReadForward(mean_loss);
}

Status CudaModel::ReadForward(float* mean_loss) {
  State& s = *s_;
  int32_t flags[2];
  SLUICE_RETURN_IF_ERROR(s.flags.Download(flags, 2, s.stream));
  SLUICE_RETURN_IF_ERROR(ForwardStatus(flags, s.T, s.config.vocab));
  return s.mean_loss.Download(mean_loss, 1, s.stream);
}

Status CudaModel::CopyForwardAsync(int32_t* flags, float* mean_loss) {
  State& s = *s_;
  SLUICE_RETURN_IF_ERROR(s.flags.DownloadAsync(flags, 2, s.stream));
  return s.mean_loss.DownloadAsync(mean_loss, 1, s.stream);
}

Status CudaModel::ForwardStatus(const int32_t* flags, int frames, int vocab) {
  if (flags[0] != 0)
    return Status::InvalidArgument("CudaModel: utterance " + std::to_string(flags[0] - 1) +
                                   " has frames outside [0, " + std::to_string(frames) + "]");
  if (flags[1] != 0)
    return Status::InvalidArgument(
        "CudaModel: utterance " + std::to_string(flags[1] - 1) +
        " has a label length outside [0, S_max] or a label outside [1, " + std::to_string(vocab) +
        ")");
  return Status::OK();
}

Status CudaModel::Backward(const GradReadyFn& ready) {
  State& s = *s_;
  const reference::ModelConfig& c = s.config;
  const int B = s.B, C = c.d_model, D = c.d_ff, V = c.vocab, L = c.n_layers;
  const int N = s.N, T2 = s.T2, F2 = s.F2;
  if (N == 0) return Status::InvalidArgument("CudaModel::Backward before a Forward");
  const size_t NC = static_cast<size_t>(N) * C, ND = static_cast<size_t>(N) * D;
  const float p = s.dropout_p;
  void* st = s.stream;
  const Ids& ids = s.ids;
  auto done = [&](int w, int b) {
    if (!ready) return;
    ready(s.layout[w].offset, s.layout[w].count);
    ready(s.layout[b].offset, s.layout[b].count);
  };
  auto key = [&](int site) {
    return reference::DropoutKey{s.ctx.seed, s.ctx.step, static_cast<uint32_t>(site)};
  };

  // Head: dlogits is d loss / d logits already (CTC differentiates through the log_softmax).
  SLUICE_RETURN_IF_ERROR(CastRowsToBf16(s.dlogits_bf16.data(), s.Vp(), s.dlogits.data(), N, V, st));
  SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dC.data(), ids.out_w, ids.out_b, s.dlogits_bf16.data(),
                                          s.dlogits.data(), s.lnf.data(), N, C, V, s.Vp()));
  done(ids.out_w, ids.out_b);
  SLUICE_RETURN_IF_ERROR(s.dx.Zero(st));  // the residual stream's gradient, carried down the layers
  SLUICE_RETURN_IF_ERROR(LayerNormBackward(
      s.dx.data(), s.Gp(ids.lnf_g), s.Gp(ids.lnf_b), s.dC.data(), s.xs[L].data(), s.Pp(ids.lnf_g),
      s.lnf_mean.data(), s.lnf_rstd.data(), N, C, s.col_scratch.data(), st));
  done(ids.lnf_g, ids.lnf_b);

  for (int l = L - 1; l >= 0; --l) {
    LayerActs& a = s.layers[l];
    const LayerIds& w = ids.layers[l];
    // x2 = x1 + Dropout(FC2(Act(FC1(LN2(x1))))): dx holds d/dx2 and becomes d/dx1.
    SLUICE_RETURN_IF_ERROR(
        DropoutBackward(s.dC2.data(), s.dC2_bf16.data(), s.dx.data(), NC, p, key(2 * l + 1), st));
    SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dD.data(), w.fc2_w, w.fc2_b, s.dC2_bf16.data(),
                                            s.dC2.data(), a.act.data(), N, D, C));
    done(w.fc2_w, w.fc2_b);
    SLUICE_RETURN_IF_ERROR(ActivationBackward(s.config.activation, s.dD2.data(), s.dD2_bf16.data(),
                                              s.dD.data(), a.fc1.data(), ND, st));
    SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dC.data(), w.fc1_w, w.fc1_b, s.dD2_bf16.data(),
                                            s.dD2.data(), a.ln2.data(), N, C, D));
    done(w.fc1_w, w.fc1_b);
    SLUICE_RETURN_IF_ERROR(LayerNormBackward(s.dx.data(), s.Gp(w.ln2_g), s.Gp(w.ln2_b), s.dC.data(),
                                             a.x1.data(), s.Pp(w.ln2_g), a.ln2_mean.data(),
                                             a.ln2_rstd.data(), N, C, s.col_scratch.data(), st));
    done(w.ln2_g, w.ln2_b);
    // x1 = x + Dropout(Proj(Attention(QKV(LN1(x))))): dx becomes d/dx.
    SLUICE_RETURN_IF_ERROR(
        DropoutBackward(s.dC2.data(), s.dC2_bf16.data(), s.dx.data(), NC, p, key(2 * l), st));
    SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dC.data(), w.proj_w, w.proj_b, s.dC2_bf16.data(),
                                            s.dC2.data(), a.attn.data(), N, C, C));
    done(w.proj_w, w.proj_b);
    SLUICE_RETURN_IF_ERROR(AttentionBackward(*s.gemm, s.d3C.data(), s.d3C_bf16.data(), s.dC.data(),
                                             s.out_len.data(), s.Dims(), s.Saved(l), s.Scratch(),
                                             st));
    SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dC.data(), w.qkv_w, w.qkv_b, s.d3C_bf16.data(),
                                            s.d3C.data(), a.ln1.data(), N, C, 3 * C));
    done(w.qkv_w, w.qkv_b);
    SLUICE_RETURN_IF_ERROR(LayerNormBackward(s.dx.data(), s.Gp(w.ln1_g), s.Gp(w.ln1_b), s.dC.data(),
                                             s.xs[l].data(), s.Pp(w.ln1_g), a.ln1_mean.data(),
                                             a.ln1_rstd.data(), N, C, s.col_scratch.data(), st));
    done(w.ln1_g, w.ln1_b);
  }

  // Subsampling (the positions add a constant: the gradient passes through).
  SLUICE_RETURN_IF_ERROR(CastToBf16(s.dx_bf16.data(), s.dx.data(), NC, st));
  SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dsub.data(), ids.sub_w, ids.sub_b, s.dx_bf16.data(),
                                          s.dx.data(), s.sub_in.data(), N, C * F2, C));
  done(ids.sub_w, ids.sub_b);
  const int M2 = B * T2 * F2;
  SLUICE_RETURN_IF_ERROR(Conv2EpilogueBackward(s.dconv2.data(), s.dconv2_bf16.data(), s.dsub.data(),
                                               s.relu2.data(), B, C, T2, F2, st));
  SLUICE_RETURN_IF_ERROR(s.LinearBackward(s.dcol.data(), ids.conv2_w, ids.conv2_b,
                                          s.dconv2_bf16.data(), s.dconv2.data(), s.col.data(), M2,
                                          9 * C, C));
  done(ids.conv2_w, ids.conv2_b);
  SLUICE_RETURN_IF_ERROR(Conv1Backward(s.Gp(ids.conv1_w), s.Gp(ids.conv1_b), s.dcol.data(),
                                       s.features, s.Pp(ids.conv1_w), s.Pp(ids.conv1_b),
                                       s.conv1_scratch.data(), B, s.T, s.F, C, st));
  done(ids.conv1_w, ids.conv1_b);
  return Status::OK();
}

}  // namespace sluice::gpu::model
