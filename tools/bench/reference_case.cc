// reference-case: runs reference/'s Model<Real> Forward + Backward on one case file written by
// tools/bench/asr_torch_step.py --cpp-harness, so the PyTorch module and the C++ reference can be
// compared loss by loss and gradient by gradient (docs/baselines.md, which specifies the case and
// output layouts). A developer's cross-check, not installed.
//
//   reference-case CASE OUT float|double   OUT: f64 mean loss, f64 losses[B], f64 grads[P]
//   reference-case CASE OUT init           OUT: f32 parameters of InitParameters(case seed)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "reference/model.h"

namespace {

using sluice::Status;
using namespace sluice::reference;

// Little-endian fields read in order; every read is bounds-checked so a short or corrupt case
// file is an error naming the offset, never a read past the buffer.
class CaseReader {
 public:
  explicit CaseReader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  bool Read(T* v) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  template <typename T, typename Out>
  bool ReadArray(size_t n, std::vector<Out>* out) {
    out->resize(n);
    for (auto& x : *out) {
      T v;
      if (!Read(&v)) return false;
      x = static_cast<Out>(v);
    }
    return true;
  }
  size_t pos() const { return pos_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  const std::vector<char>& bytes_;
  size_t pos_ = 0;
};

template <typename Real>
int Run(const char* case_path, const std::vector<char>& bytes, const char* out_path,
        bool init_only) {
  CaseReader r(bytes);
  r.Skip(8);  // magic, checked by main
  ModelConfig c;
  StepContext ctx;
  int32_t training = 0, B = 0, T = 0, S = 0;
  bool ok = r.Read(&c.n_mels) && r.Read(&c.d_model) && r.Read(&c.n_heads) && r.Read(&c.n_layers) &&
            r.Read(&c.d_ff) && r.Read(&c.vocab) && r.Read(&c.dropout) && r.Read(&training) &&
            r.Read(&ctx.seed) && r.Read(&ctx.step) && r.Read(&B) && r.Read(&T) && r.Read(&S);
  ctx.training = training != 0;
  if (ok && (B < 0 || T < 0 || S < 0 || int64_t{B} * T * c.n_mels > (int64_t{1} << 31))) ok = false;
  std::vector<Real> feats;
  std::vector<int32_t> frames, labels, label_lengths;
  uint64_t P = 0;
  ok = ok && r.ReadArray<float>(static_cast<size_t>(B) * T * c.n_mels, &feats) &&
       r.ReadArray<int32_t>(B, &frames) &&
       r.ReadArray<int32_t>(static_cast<size_t>(B) * S, &labels) &&
       r.ReadArray<int32_t>(B, &label_lengths) && r.Read(&P);
  if (!ok) {
    std::fprintf(stderr, "reference-case: %s: truncated or bad header near offset %zu\n", case_path,
                 r.pos());
    return 1;
  }
  Status st = c.Validate();
  if (!st.ok()) {
    std::fprintf(stderr, "reference-case: %s: %s\n", case_path, st.ToString().c_str());
    return 1;
  }
  Model<Real> model(c);
  std::vector<Real> params;
  if (P != model.num_parameters() || !r.ReadArray<float>(P, &params)) {
    std::fprintf(stderr, "reference-case: %s: %llu parameters at offset %zu; the config has %zu\n",
                 case_path, static_cast<unsigned long long>(P), r.pos(), model.num_parameters());
    return 1;
  }
  std::ofstream out(out_path, std::ios::binary);
  if (init_only) {
    model.InitParameters(ctx.seed);
    for (size_t i = 0; i < model.num_parameters(); ++i) {
      const float v = static_cast<float>(model.params()[i]);
      out.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
  } else {
    std::copy(params.begin(), params.end(), model.params());
    const ModelBatch<Real> batch{feats.data(),  frames.data(),        B, T,
                                 labels.data(), label_lengths.data(), S};
    Real loss = 0;
    st = model.Forward(batch, ctx, &loss);
    if (!st.ok()) {
      std::fprintf(stderr, "reference-case: %s: %s\n", case_path, st.ToString().c_str());
      return 1;
    }
    model.ZeroGrad();
    model.Backward();
    auto put = [&out](double d) { out.write(reinterpret_cast<const char*>(&d), sizeof d); };
    put(loss);
    for (Real l : model.losses()) put(l);
    for (size_t i = 0; i < model.num_parameters(); ++i) put(model.grads()[i]);
  }
  if (!out.good()) {
    std::fprintf(stderr, "reference-case: cannot write %s\n", out_path);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[3] : "";
  if (mode != "float" && mode != "double" && mode != "init") {
    std::fprintf(stderr, "usage: reference-case CASE OUT float|double|init\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "reference-case: cannot open %s\n", argv[1]);
    return 1;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "SLCASE01", 8) != 0) {
    std::fprintf(stderr, "reference-case: %s: not a case file (magic SLCASE01)\n", argv[1]);
    return 1;
  }
  return mode == "double" ? Run<double>(argv[1], bytes, argv[2], false)
                          : Run<float>(argv[1], bytes, argv[2], mode == "init");
}
