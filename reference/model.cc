#include "reference/model.h"

#include <algorithm>
#include <cmath>

#include "reference/activation.h"
#include "reference/attention.h"
#include "reference/conv2d.h"
#include "reference/ctc.h"
#include "reference/dropout.h"
#include "reference/layernorm.h"
#include "reference/linear.h"
#include "reference/residual.h"
#include "reference/softmax.h"

namespace sluice::reference {
namespace {

// Offsets of every tensor, filled while the layout is built so the two cannot disagree.
struct LayerOffsets {
  size_t fc2_w, fc2_b, fc1_w, fc1_b, ln2_g, ln2_b, proj_w, proj_b, qkv_w, qkv_b, ln1_g, ln1_b;
};
struct Offsets {
  size_t out_w, out_b, lnf_g, lnf_b;
  std::vector<LayerOffsets> layers;  // indexed by layer (stored in reverse in the buffer)
  size_t sub_w, sub_b, conv2_w, conv2_b, conv1_w, conv1_b;
};

Offsets BuildLayout(const ModelConfig& c, std::vector<ParamTensor>* layout) {
  const size_t C = c.d_model, V = c.vocab, D = c.d_ff;
  const size_t F2 = SubsampledLength(c.n_mels);
  size_t next = 0;
  auto add = [&](const std::string& name, size_t count, bool decay) {
    layout->push_back({name, next, count, decay});
    next += count;
    return next - count;
  };
  Offsets o;
  o.out_w = add("head.out.weight", V * C, true);
  o.out_b = add("head.out.bias", V, false);
  o.lnf_g = add("head.ln.gamma", C, false);
  o.lnf_b = add("head.ln.beta", C, false);
  o.layers.resize(c.n_layers);
  for (int l = c.n_layers - 1; l >= 0; --l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LayerOffsets& L = o.layers[l];
    L.fc2_w = add(p + "fc2.weight", C * D, true);
    L.fc2_b = add(p + "fc2.bias", C, false);
    L.fc1_w = add(p + "fc1.weight", D * C, true);
    L.fc1_b = add(p + "fc1.bias", D, false);
    L.ln2_g = add(p + "ln2.gamma", C, false);
    L.ln2_b = add(p + "ln2.beta", C, false);
    L.proj_w = add(p + "attn.proj.weight", C * C, true);
    L.proj_b = add(p + "attn.proj.bias", C, false);
    L.qkv_w = add(p + "attn.qkv.weight", 3 * C * C, true);
    L.qkv_b = add(p + "attn.qkv.bias", 3 * C, false);
    L.ln1_g = add(p + "ln1.gamma", C, false);
    L.ln1_b = add(p + "ln1.beta", C, false);
  }
  o.sub_w = add("subsampling.out.weight", C * C * F2, true);
  o.sub_b = add("subsampling.out.bias", C, false);
  o.conv2_w = add("subsampling.conv2.weight", C * C * 9, true);
  o.conv2_b = add("subsampling.conv2.bias", C, false);
  o.conv1_w = add("subsampling.conv1.weight", C * 9, true);
  o.conv1_b = add("subsampling.conv1.bias", C, false);
  return o;
}

// Dropout sites: tensor id 2l after layer l's attention projection, 2l + 1 after its FC2.
DropoutKey Key(const StepContext& ctx, uint32_t tensor_id) {
  return DropoutKey{ctx.seed, ctx.step, tensor_id};
}

}  // namespace

ModelConfig ModelConfig::Tiny(int vocab, int n_mels) {
  ModelConfig c;
  c.n_mels = n_mels;
  c.d_model = 32;
  c.n_heads = 2;
  c.n_layers = 2;
  c.d_ff = 128;
  c.vocab = vocab;
  return c;
}

ModelConfig ModelConfig::Small(int vocab, int n_mels) {
  ModelConfig c;
  c.n_mels = n_mels;
  c.vocab = vocab;
  return c;  // the defaults are the small preset
}

Status ModelConfig::Validate() const {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("model config: " + what);
  };
  if (n_mels < 7) return bad("n_mels " + std::to_string(n_mels) + " < 7 (two 3x3 stride-2 convs)");
  if (d_model < 1 || n_heads < 1 || d_model % n_heads != 0)
    return bad("d_model " + std::to_string(d_model) + " not a positive multiple of n_heads " +
               std::to_string(n_heads));
  if (n_layers < 0 || d_ff < 1) return bad("n_layers < 0 or d_ff < 1");
  if (vocab < 2) return bad("vocab " + std::to_string(vocab) + " < 2 (blank plus one token)");
  if (!(dropout >= 0 && dropout < 1)) return bad("dropout outside [0, 1)");
  return Status::OK();
}

std::vector<ParamTensor> ParameterLayout(const ModelConfig& config) {
  std::vector<ParamTensor> layout;
  BuildLayout(config, &layout);
  return layout;
}

// Activations of the last Forward, sized by resize() so steady-state steps reuse their memory.
template <typename Real>
struct Model<Real>::State {
  Offsets off;
  ModelBatch<Real> batch;
  StepContext ctx;
  int T1 = 0, F1 = 0, T2 = 0, F2 = 0;
  std::vector<int32_t> out_len;
  std::vector<Real> conv1, relu1, conv2, relu2, sub_in;  // subsampling
  struct Layer {
    std::vector<Real> ln1, ln1_mean, ln1_rstd, qkv, att, attn, proj, x1;
    std::vector<Real> ln2, ln2_mean, ln2_rstd, fc1, act, fc2;
  };
  std::vector<std::vector<Real>> xs;  // xs[l]: input of layer l; xs[n_layers]: encoder output
  std::vector<Layer> layers;
  std::vector<Real> lnf, lnf_mean, lnf_rstd, logits, log_probs, losses;
  // backward scratch
  std::vector<Real> dlogits, dx, dC, dC2, d3C, dD, dD2, dsub, drelu2, dconv2, drelu1, dconv1;
};

template <typename Real>
Model<Real>::Model(const ModelConfig& config) : config_(config), state_(std::make_unique<State>()) {
  state_->off = BuildLayout(config_, &layout_);
  const size_t n = layout_.empty() ? 0 : layout_.back().offset + layout_.back().count;
  params_.assign(n, Real(0));
  grads_.assign(n, Real(0));
}

template <typename Real>
Model<Real>::~Model() = default;

template <typename Real>
const ParamTensor* Model<Real>::Find(const std::string& name) const {
  for (const ParamTensor& t : layout_)
    if (t.name == name) return &t;
  return nullptr;
}

template <typename Real>
void Model<Real>::InitParameters(uint64_t seed) {
  for (size_t i = 0; i < layout_.size(); ++i) {
    const ParamTensor& t = layout_[i];
    Real* p = params_.data() + t.offset;
    const bool is_gamma = t.name.ends_with(".gamma");
    if (!t.decay) {
      std::fill(p, p + t.count, is_gamma ? Real(1) : Real(0));
      continue;
    }
    // fan_in: the weight's row length ([out, in] matrices; [out, in, 3, 3] kernels).
    size_t rows = config_.d_model;
    if (t.name == "head.out.weight") rows = config_.vocab;
    if (t.name.ends_with("qkv.weight")) rows = 3 * static_cast<size_t>(config_.d_model);
    if (t.name.ends_with("fc1.weight")) rows = config_.d_ff;
    const double bound = 1.0 / std::sqrt(static_cast<double>(t.count / rows));
    const DropoutKey key{seed, ~uint64_t{0}, static_cast<uint32_t>(i)};
    for (size_t j = 0; j < t.count; ++j)
      p[j] = static_cast<Real>((2.0 * DropoutUniform(key, j) - 1.0) * bound);
  }
}

template <typename Real>
void Model<Real>::ZeroGrad() {
  std::fill(grads_.begin(), grads_.end(), Real(0));
}

template <typename Real>
Status Model<Real>::Forward(const ModelBatch<Real>& batch, const StepContext& ctx,
                            Real* mean_loss) {
  State& s = *state_;
  const int B = batch.B, T = batch.T, F = config_.n_mels, C = config_.d_model, H = config_.n_heads;
  const int D = config_.d_ff, V = config_.vocab;
  if (B < 1) return Status::InvalidArgument("model: empty batch");
  if (SubsampledLength(T) < 1)
    return Status::InvalidArgument("model: batch of " + std::to_string(T) +
                                   " frames, subsampling needs at least 7");
  for (int b = 0; b < B; ++b)
    if (batch.frames[b] < 0 || batch.frames[b] > T)
      return Status::InvalidArgument("model: utterance " + std::to_string(b) + " has " +
                                     std::to_string(batch.frames[b]) + " frames, batch holds " +
                                     std::to_string(T));
  s.batch = batch;
  s.ctx = ctx;
  s.T1 = Conv2dOutSize(T);
  s.F1 = Conv2dOutSize(F);
  s.T2 = Conv2dOutSize(s.T1);
  s.F2 = Conv2dOutSize(s.F1);
  const int T2 = s.T2, N = B * T2;
  const size_t NC = static_cast<size_t>(N) * C;
  const Real* P = params_.data();
  const Offsets& o = s.off;
  s.out_len.resize(B);
  for (int b = 0; b < B; ++b) s.out_len[b] = SubsampledLength(batch.frames[b]);

  // Conv2d subsampling: [B, 1, T, F] -> [B, C, T1, F1] -> [B, C, T2, F2] -> [B, T2, C * F2] -> C.
  const size_t n1 = static_cast<size_t>(B) * C * s.T1 * s.F1;
  const size_t n2 = static_cast<size_t>(B) * C * T2 * s.F2;
  s.conv1.resize(n1);
  s.relu1.resize(n1);
  s.conv2.resize(n2);
  s.relu2.resize(n2);
  s.sub_in.resize(n2);
  Conv2dForward(s.conv1.data(), batch.features, P + o.conv1_w, P + o.conv1_b, B, 1, T, F, C);
  ReluForward(s.relu1.data(), s.conv1.data(), n1);
  Conv2dForward(s.conv2.data(), s.relu1.data(), P + o.conv2_w, P + o.conv2_b, B, C, s.T1, s.F1, C);
  ReluForward(s.relu2.data(), s.conv2.data(), n2);
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c)
      for (int t = 0; t < T2; ++t)
        for (int f = 0; f < s.F2; ++f)
          s.sub_in[((static_cast<size_t>(b) * T2 + t) * C + c) * s.F2 + f] =
              s.relu2[((static_cast<size_t>(b) * C + c) * T2 + t) * s.F2 + f];
  const int L = config_.n_layers;
  s.xs.resize(L + 1);
  for (auto& x : s.xs) x.resize(NC);
  LinearForward(s.xs[0].data(), s.sub_in.data(), P + o.sub_w, P + o.sub_b, N, C * s.F2, C);
  // Sinusoidal positions (Vaswani et al.): sin on even channels, cos on odd; no parameters.
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T2; ++t)
      for (int c = 0; c < C; ++c) {
        const double angle = t / std::pow(10000.0, static_cast<double>(c - c % 2) / C);
        s.xs[0][(static_cast<size_t>(b) * T2 + t) * C + c] +=
            static_cast<Real>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }

  const float p = ctx.training ? config_.dropout : 0.0f;
  s.layers.resize(L);
  for (int l = 0; l < L; ++l) {
    typename State::Layer& a = s.layers[l];
    const LayerOffsets& w = o.layers[l];
    for (auto* v : {&a.ln1, &a.attn, &a.proj, &a.x1, &a.ln2, &a.fc2}) v->resize(NC);
    for (auto* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd}) v->resize(N);
    a.qkv.resize(3 * NC);
    a.att.resize(static_cast<size_t>(B) * H * T2 * T2);
    a.fc1.resize(static_cast<size_t>(N) * D);
    a.act.resize(static_cast<size_t>(N) * D);
    const Real* x = s.xs[l].data();
    LayerNormForward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, P + w.ln1_g,
                     P + w.ln1_b, N, C);
    LinearForward(a.qkv.data(), a.ln1.data(), P + w.qkv_w, P + w.qkv_b, N, C, 3 * C);
    AttentionForward(a.attn.data(), a.att.data(), a.qkv.data(), s.out_len.data(), B, T2, C, H);
    LinearForward(a.proj.data(), a.attn.data(), P + w.proj_w, P + w.proj_b, N, C, C);
    DropoutForward(a.x1.data(), a.proj.data(), NC, p, Key(ctx, 2 * l));
    ResidualForward(a.x1.data(), a.x1.data(), x, NC);
    LayerNormForward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.x1.data(), P + w.ln2_g,
                     P + w.ln2_b, N, C);
    LinearForward(a.fc1.data(), a.ln2.data(), P + w.fc1_w, P + w.fc1_b, N, C, D);
    ActivationForward(config_.activation, a.act.data(), a.fc1.data(), a.act.size());
    LinearForward(a.fc2.data(), a.act.data(), P + w.fc2_w, P + w.fc2_b, N, D, C);
    Real* y = s.xs[l + 1].data();
    DropoutForward(y, a.fc2.data(), NC, p, Key(ctx, 2 * l + 1));
    ResidualForward(y, y, a.x1.data(), NC);
  }

  const size_t NV = static_cast<size_t>(N) * V;
  s.lnf.resize(NC);
  s.lnf_mean.resize(N);
  s.lnf_rstd.resize(N);
  s.logits.resize(NV);
  s.log_probs.resize(NV);
  s.losses.resize(B);
  s.dlogits.resize(NV);
  LayerNormForward(s.lnf.data(), s.lnf_mean.data(), s.lnf_rstd.data(), s.xs[L].data(), P + o.lnf_g,
                   P + o.lnf_b, N, C);
  LinearForward(s.logits.data(), s.lnf.data(), P + o.out_w, P + o.out_b, N, C, V);
  LogSoftmaxForward(s.log_probs.data(), s.logits.data(), N, V);
  // The CTC gradient is computed here (it comes with the forward-backward); Backward uses it.
  CtcOptions ctc;
  ctc.zero_infinity = true;
  const std::vector<Real> scale(B, Real(1) / B);
  SLUICE_RETURN_IF_ERROR(CtcLossBatch(s.log_probs.data(), B, T2, V, batch.labels, batch.S_max,
                                      s.out_len.data(), batch.label_lengths, ctc, s.losses.data(),
                                      s.dlogits.data(), scale.data()));
  double sum = 0;
  for (Real l : s.losses) sum += l;
  *mean_loss = static_cast<Real>(sum / B);
  return Status::OK();
}

template <typename Real>
void Model<Real>::Backward(const GradReadyFn& ready) {
  State& s = *state_;
  const int B = s.batch.B, T = s.batch.T, F = config_.n_mels, C = config_.d_model;
  const int H = config_.n_heads, D = config_.d_ff, V = config_.vocab, L = config_.n_layers;
  const int T2 = s.T2, N = B * T2;
  const size_t NC = static_cast<size_t>(N) * C, ND = static_cast<size_t>(N) * D;
  const Real* P = params_.data();
  Real* G = grads_.data();
  const Offsets& o = s.off;
  const float p = s.ctx.training ? config_.dropout : 0.0f;
  auto done = [&](size_t w, size_t w_count, size_t b, size_t b_count) {
    if (!ready) return;
    ready(w, w_count);
    ready(b, b_count);
  };
  auto zeroed = [](std::vector<Real>& v, size_t n) -> Real* {
    v.assign(n, Real(0));
    return v.data();
  };

  // Head. dlogits already is d loss / d logits (CTC differentiates through the log_softmax).
  Real* dlnf = zeroed(s.dC, NC);
  LinearBackward(dlnf, G + o.out_w, G + o.out_b, s.dlogits.data(), s.lnf.data(), P + o.out_w, N, C,
                 V);
  done(o.out_w, static_cast<size_t>(V) * C, o.out_b, V);
  Real* dx = zeroed(s.dx, NC);  // gradient of the residual stream, carried down the layers
  LayerNormBackward(dx, G + o.lnf_g, G + o.lnf_b, dlnf, s.xs[L].data(), P + o.lnf_g,
                    s.lnf_mean.data(), s.lnf_rstd.data(), N, C);
  done(o.lnf_g, C, o.lnf_b, C);

  for (int l = L - 1; l >= 0; --l) {
    const typename State::Layer& a = s.layers[l];
    const LayerOffsets& w = o.layers[l];
    // x2 = x1 + Dropout(FC2(Act(FC1(LN2(x1))))): dx holds d/dx2, becomes d/dx1.
    Real* dfc2 = zeroed(s.dC2, NC);
    DropoutBackward(dfc2, dx, NC, p, Key(s.ctx, 2 * l + 1));
    Real* dact = zeroed(s.dD, ND);
    LinearBackward(dact, G + w.fc2_w, G + w.fc2_b, dfc2, a.act.data(), P + w.fc2_w, N, D, C);
    done(w.fc2_w, static_cast<size_t>(C) * D, w.fc2_b, C);
    Real* dfc1 = zeroed(s.dD2, ND);
    ActivationBackward(config_.activation, dfc1, dact, a.fc1.data(), ND);
    Real* dln2 = zeroed(s.dC, NC);
    LinearBackward(dln2, G + w.fc1_w, G + w.fc1_b, dfc1, a.ln2.data(), P + w.fc1_w, N, C, D);
    done(w.fc1_w, static_cast<size_t>(D) * C, w.fc1_b, D);
    LayerNormBackward(dx, G + w.ln2_g, G + w.ln2_b, dln2, a.x1.data(), P + w.ln2_g,
                      a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    done(w.ln2_g, C, w.ln2_b, C);
    // x1 = x + Dropout(Proj(Attention(QKV(LN1(x))))): dx becomes d/dx.
    Real* dproj = zeroed(s.dC2, NC);
    DropoutBackward(dproj, dx, NC, p, Key(s.ctx, 2 * l));
    Real* dattn = zeroed(s.dC, NC);
    LinearBackward(dattn, G + w.proj_w, G + w.proj_b, dproj, a.attn.data(), P + w.proj_w, N, C, C);
    done(w.proj_w, static_cast<size_t>(C) * C, w.proj_b, C);
    Real* dqkv = zeroed(s.d3C, 3 * NC);
    AttentionBackward(dqkv, dattn, a.qkv.data(), a.att.data(), s.out_len.data(), B, T2, C, H);
    Real* dln1 = zeroed(s.dC2, NC);
    LinearBackward(dln1, G + w.qkv_w, G + w.qkv_b, dqkv, a.ln1.data(), P + w.qkv_w, N, C, 3 * C);
    done(w.qkv_w, 3 * static_cast<size_t>(C) * C, w.qkv_b, 3 * static_cast<size_t>(C));
    LayerNormBackward(dx, G + w.ln1_g, G + w.ln1_b, dln1, s.xs[l].data(), P + w.ln1_g,
                      a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
    done(w.ln1_g, C, w.ln1_b, C);
  }

  // Subsampling (the positional encoding adds a constant: its gradient passes through).
  const int F2 = s.F2, T1 = s.T1, F1 = s.F1;
  const size_t n1 = static_cast<size_t>(B) * C * T1 * F1;
  const size_t n2 = static_cast<size_t>(B) * C * T2 * F2;
  Real* dsub = zeroed(s.dsub, n2);
  LinearBackward(dsub, G + o.sub_w, G + o.sub_b, dx, s.sub_in.data(), P + o.sub_w, N, C * F2, C);
  done(o.sub_w, static_cast<size_t>(C) * C * F2, o.sub_b, C);
  Real* drelu2 = zeroed(s.drelu2, n2);
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c)
      for (int t = 0; t < T2; ++t)
        for (int f = 0; f < F2; ++f)
          drelu2[((static_cast<size_t>(b) * C + c) * T2 + t) * F2 + f] =
              dsub[((static_cast<size_t>(b) * T2 + t) * C + c) * F2 + f];
  Real* dconv2 = zeroed(s.dconv2, n2);
  ReluBackward(dconv2, drelu2, s.conv2.data(), n2);
  Real* drelu1 = zeroed(s.drelu1, n1);
  Conv2dBackward(drelu1, G + o.conv2_w, G + o.conv2_b, dconv2, s.relu1.data(), P + o.conv2_w, B, C,
                 T1, F1, C);
  done(o.conv2_w, static_cast<size_t>(C) * C * 9, o.conv2_b, C);
  Real* dconv1 = zeroed(s.dconv1, n1);
  ReluBackward(dconv1, drelu1, s.conv1.data(), n1);
  Conv2dBackward<Real>(nullptr, G + o.conv1_w, G + o.conv1_b, dconv1, s.batch.features,
                       P + o.conv1_w, B, 1, T, F, C);
  done(o.conv1_w, static_cast<size_t>(C) * 9, o.conv1_b, C);
}

template <typename Real>
const Real* Model<Real>::log_probs() const {
  return state_->log_probs.data();
}
template <typename Real>
int Model<Real>::output_frames() const {
  return state_->T2;
}
template <typename Real>
const std::vector<int32_t>& Model<Real>::output_lengths() const {
  return state_->out_len;
}
template <typename Real>
const std::vector<Real>& Model<Real>::losses() const {
  return state_->losses;
}

template class Model<float>;
template class Model<double>;

}  // namespace sluice::reference
