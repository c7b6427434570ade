#include "core_loader.h"

#include <pybind11/stl.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "array.h"
#include "errors.h"
#include "kwargs.h"
#include "option_scope.h"
#include "storage/url.h"

namespace sluice::python {

namespace {

using loader::Batch;
using loader::DType;

// One batch as Python sees it: arrays over the batch's memory (holding its lease) and the
// per-row strings, copied now (keys are views into the Loader's index, which a retire drops).
struct PyBatch {
  py::object features, lengths, tokens, token_lengths;
  // Packed batches' per-column arrays (loader/batch.h); None for batches of records.
  py::object positions = py::none(), doc_ids = py::none(), loss_mask = py::none(),
             cu_seqlens = py::none(), row_cu_seqlens = py::none();
  // Conversation batches' audio turns (loader/conversation_audio.h); None without.
  py::object audio_features = py::none(), audio_lengths = py::none(), audio_spans = py::none();
  py::list keys, texts, record_ids, sequences;
  uint64_t epoch = 0, index = 0;
  size_t size = 0, repeated = 0, skipped = 0;
  int64_t frames = 0, max_tokens = 0, seq_len = 0;
  int dim = 0;
  std::string dtype;
};

ElementType ElementTypeOf(DType t) {
  switch (t) {
    case DType::kFloat32: return ElementType::kFloat32;
    case DType::kFloat16: return ElementType::kFloat16;
    case DType::kBFloat16: return ElementType::kBFloat16;
  }
  return ElementType::kFloat32;
}

// TypeError naming the new name for a former one (loader::kRenamedKeywords): `tokens=` once meant
// blocks in flight, where a batch's `tokens` are its token ids; it is never read as anything.
void ThrowIfRenamed(const std::set<std::string>& keys, const char* function) {
  for (const loader::RenamedOption& r : loader::kRenamedKeywords)
    if (keys.count(r.old_name) != 0)
      throw py::type_error(std::string(function) + "(): keyword '" + r.old_name +
                           "' was renamed '" + r.new_name + "'");
}

// The keywords as options, checked for type and range; Loader::Open resolves the feature
// keywords at the dataset's rate and checks them. As on the command line, `features` (the kind)
// decides the features: precomputed ones only when it says so.
loader::LoaderOptions ParseOptions(const py::dict& kwargs) {
  loader::LoaderOptions o;
  o.use_precomputed = false;
  std::set<std::string> unused = KeysOf(kwargs);
  ThrowIfRenamed(unused, "Loader");
  const auto all = [](const FieldInfo&) { return true; };
  ApplyKwargs(kwargs, &o, all, &unused);
  if (!unused.empty()) {
    std::vector<std::string> accepted = KeywordsOf(&o, all);
    // sluice.Loader's own keywords (python/sluice/loader.py), which a typo passes on to here.
    for (const char* own : {"digest", "pin_memory", "mix_records"}) accepted.emplace_back(own);
    ThrowIfUnused(unused, "Loader", accepted);
  }
  return o;
}

// How often a wait without the GIL looks for a signal: Ctrl-C raises KeyboardInterrupt within
// this, however long the data takes (remote storage can stall for its whole retry schedule).
constexpr std::chrono::milliseconds kSignalPoll{100};

// How long an exiting process waits for a Loader to close: its reads in flight end, or are
// left to the exit.
constexpr std::chrono::milliseconds kExitCloseWait{2000};

// Raises the exception of a signal that arrived (KeyboardInterrupt for SIGINT). Needs the GIL.
void ThrowIfSignalled() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Opening a Loader (manifest, shard indexes: over the network for a URL), on a thread of its own
// so that the caller can stop waiting for it on Ctrl-C. A job given up on finishes in the
// background and drops what it opened; the job shares nothing with the CoreLoader but this.
struct OpenJob {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::unique_ptr<loader::Loader> loader;
};

std::vector<std::pair<uintptr_t, size_t>> Addresses(
    const std::vector<std::pair<void*, size_t>>& blocks) {
  std::vector<std::pair<uintptr_t, size_t>> out;
  for (const auto& [p, n] : blocks) out.emplace_back(reinterpret_cast<uintptr_t>(p), n);
  return out;
}

// A state_dict's JSON as the ResumeState it describes; ValueError naming the problem.
loader::ResumeState ParseState(const std::string& json) {
  loader::ResumeState s;
  const Status st = loader::ResumeState::FromJson(json, &s);
  if (!st.ok()) throw py::value_error("state_dict: " + st.message());
  return s;
}

py::object JsonToPython(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

}  // namespace

CoreLoader::CoreLoader(const std::vector<std::pair<std::string, double>>& sources,
                       uint64_t epoch_records, const py::dict& options, bool digest, bool pin)
    : allocator_(std::make_shared<LeaseAllocator>(pin)), owner_pid_(getpid()) {
  if (sources.empty()) throw py::value_error("sluice.Loader: no dataset given");
  for (const auto& [location, weight] : sources) mix_.sources.push_back({location, weight});
  mix_.epoch_records = epoch_records;
  options_ = ParseOptions(options);
  options_.allocator = allocator_;
  if (digest) digest_.emplace();
  auto job = std::make_shared<OpenJob>();
  std::thread([job, mix = mix_, o = options_]() mutable {
    std::unique_ptr<loader::Loader> l;
    const Status st = OpenLoader(mix, o, &l);
    std::lock_guard<std::mutex> lock(job->mu);
    job->status = st;
    job->loader = std::move(l);
    job->done = true;
    job->cv.notify_all();
  }).detach();
  while (true) {
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(job->mu);
      if (job->cv.wait_for(lock, kSignalPoll, [&] { return job->done; })) break;
    }
    ThrowIfSignalled();  // the job goes on alone and drops its Loader
  }
  std::lock_guard<std::mutex> lock(job->mu);
  Check(job->status);
  loader_ = std::move(job->loader);
  options_ = loader_->options();  // with what Open added (the dataset's tokenizer)
  const loader::FeatureInfo& f = loader_->feature_info();
  // A conversation dataset's audio turns take the feature keywords as audio records do.
  Check(CheckKeywordsApply(options,
                           DatasetShape{f.audio || f.audio_turns, f.kind, options_.packing.seq_len},
                           storage::RedactUrl(sources[0].first)));
}

CoreLoader::~CoreLoader() { Close(); }

Status CoreLoader::OpenLoader(const loader::MixOptions& mix, const loader::LoaderOptions& options,
                              std::unique_ptr<loader::Loader>* out) {
  if (mix.sources.size() == 1 && mix.epoch_records == 0)
    return loader::Loader::Open(mix.sources[0].dir, options, out);
  return loader::Loader::Open(mix, options, out);
}

void CoreLoader::Close() {
  if (!loader_) return;
  // A forked child's copy: its threads are the parent's, so stopping it would wait forever
  // (see the header); the child's memory goes when it exits. And a process that is exiting
  // after Ctrl-C cut a wait short need not wait for the data any longer: the read in flight can
  // take the storage's whole retry schedule to end.
  if (getpid() != owner_pid_ || (wait_cut_ && Finalizing())) {
    (void)loader_.release();
    started_ = false;
    return;
  }
  started_ = false;
  // Exiting otherwise (an exception raised by Python code, Ctrl-C outside next()'s wait, or an
  // exit mid-epoch) the pipeline may as well be stuck on a read no wait of ours saw: it is
  // closed on a thread of its own and waited for only so long.
  if (Finalizing()) return CloseWithin(kExitCloseWait);
  py::gil_scoped_release release;  // joins the pipeline's threads
  loader_.reset();
}

void CoreLoader::CloseWithin(std::chrono::milliseconds limit) {
  struct CloseJob {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::unique_ptr<loader::Loader> loader;
  };
  auto job = std::make_shared<CloseJob>();
  job->loader = std::move(loader_);  // holds the allocator it returns its buffers to
  py::gil_scoped_release release;
  std::thread([job] {
    job->loader.reset();
    std::lock_guard<std::mutex> l(job->mu);
    job->done = true;
    job->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> l(job->mu);
  job->cv.wait_for(l, limit, [&] { return job->done; });
}

void CoreLoader::CheckProcess() const {
  const pid_t pid = getpid();
  if (pid != owner_pid_)
    throw std::runtime_error(
        "sluice.Loader: used in process " + std::to_string(pid) + ", forked from process " +
        std::to_string(owner_pid_) +
        " that created it: a forked child has a copy of the loader but not its threads. HINT: "
        "create the Loader in the process that iterates it (multiprocessing: the 'spawn' start "
        "method; torch DataLoader: num_workers=0, the loader's own threads decode)");
}

void CoreLoader::CheckOpen() const {
  CheckProcess();
  if (!loader_) throw std::runtime_error("sluice.Loader: used after close()");
}

bool CoreLoader::AnyHandedOutAlive() const {
  for (const auto& w : handed_out_)
    if (!w.expired()) return true;
  return false;
}

void CoreLoader::Reopen(const std::optional<loader::ResumeState>& resume) {
  Status st;
  {
    py::gil_scoped_release release;
    // The buffers Python holds stay allocated (LeaseAllocator); the others wait in its cache
    // for the new Loader's pool, which Start (here, or the caller's) reserves at once.
    allocator_->Keep(true);
    loader_.reset();
    st = OpenLoader(mix_, options_, &loader_);
    if (st.ok() && resume) st = loader_->Start(*resume);
    if (resume || !st.ok()) allocator_->Keep(false);
  }
  handed_out_.clear();
  ++restarts_;
  if (!st.ok()) {
    loader_.reset();
    started_ = false;
    ThrowStatus(st);
  }
}

void CoreLoader::Start(const loader::ResumeState& state) {
  CheckOpen();
  // Start takes back every batch handed out; a fresh Loader reuses none of them.
  if (AnyHandedOutAlive()) Reopen(std::nullopt);
  handed_out_.clear();
  started_ = false;
  Status st;
  {
    py::gil_scoped_release release;
    st = loader_->Start(state);
    allocator_->Keep(false);  // after a Reopen: what the new pool did not take back
  }
  Check(st);
  started_ = true;
  wait_cut_ = false;  // the stopped epoch's read, if it was stuck, is over
  if (digest_) digest_.emplace();
}

py::object CoreLoader::Next() {
  CheckOpen();
  if (!started_) throw std::runtime_error("sluice.Loader: next() before start()");
  if (handed_out_.size() >= static_cast<size_t>(options_.consumer_batches)) {
    // This Next() recycles the oldest batch the Loader counts as held.
    if (handed_out_.front().expired()) {
      handed_out_.pop_front();
    } else {
      Reopen(loader_->state());
    }
  }
  const Batch* b = nullptr;
  Status st;
  bool ready = false;
  while (true) {
    {
      py::gil_scoped_release release;
      st = loader_->NextFor(&b, kSignalPoll, &ready);
    }
    if (!st.ok() || ready) break;
    // Nothing was taken: after the exception, next() goes on waiting for the same batch.
    wait_cut_ = true;
    ThrowIfSignalled();
    wait_cut_ = false;
  }
  wait_cut_ = false;
  Check(st);
  if (b == nullptr) return py::none();
  if (digest_) digest_->Add(*b);

  auto lease = std::make_shared<BatchLease>(
      allocator_, std::vector<const void*>{b->features(), b->lengths().data(), b->tokens(),
                                           b->token_lengths().data(), b->positions(), b->doc_ids(),
                                           b->loss_mask(), b->cu_seqlens().data(),
                                           b->row_cu_seqlens(), b->audio_features(),
                                           b->audio_lengths().data(), b->audio_spans().data()});
  handed_out_.push_back(lease);
  PyBatch out;
  const auto rows = static_cast<int64_t>(b->size());
  if (b->dim() > 0) {
    out.features = py::cast(
        Array(lease, b->features(), {rows, b->frames(), b->dim()}, ElementTypeOf(b->dtype())));
  } else {
    out.features = py::none();
  }
  out.lengths = py::cast(Array(lease, b->lengths().data(), {rows}, ElementType::kInt32));
  out.tokens = py::cast(Array(lease, b->tokens(), {rows, b->max_tokens()}, ElementType::kInt32));
  out.token_lengths =
      py::cast(Array(lease, b->token_lengths().data(), {rows}, ElementType::kInt32));
  if (b->seq_len() > 0) {
    const int64_t L = b->seq_len();
    out.positions = py::cast(Array(lease, b->positions(), {rows, L}, ElementType::kInt32));
    out.doc_ids = py::cast(Array(lease, b->doc_ids(), {rows, L}, ElementType::kInt64));
    out.loss_mask = py::cast(Array(lease, b->loss_mask(), {rows, L}, ElementType::kUInt8));
    out.cu_seqlens =
        py::cast(Array(lease, b->cu_seqlens().data(),
                       {static_cast<int64_t>(b->cu_seqlens().size())}, ElementType::kInt32));
    out.row_cu_seqlens =
        py::cast(Array(lease, b->row_cu_seqlens(), {rows, L + 1}, ElementType::kInt32));
  } else if (b->loss_mask() != nullptr) {  // padded conversation rows: per token id
    out.loss_mask =
        py::cast(Array(lease, b->loss_mask(), {rows, b->max_tokens()}, ElementType::kUInt8));
  }
  if (b->num_audio() > 0) {
    const auto n = static_cast<int64_t>(b->num_audio());
    out.audio_features =
        py::cast(Array(lease, b->audio_features(), {n, b->audio_frames(), b->audio_dim()},
                       ElementTypeOf(b->dtype())));
    out.audio_lengths = py::cast(Array(lease, b->audio_lengths().data(), {n}, ElementType::kInt32));
    out.audio_spans = py::cast(Array(lease, b->audio_spans().data(), {n, 3}, ElementType::kInt32));
  }
  for (std::string_view k : b->keys()) out.keys.append(py::str(k.data(), k.size()));
  for (const std::string& t : b->texts()) out.texts.append(py::str(t));
  for (uint64_t id : b->record_ids()) out.record_ids.append(id);
  for (uint64_t s : b->sequences()) out.sequences.append(s);
  out.epoch = b->epoch();
  out.index = b->index();
  out.size = b->size();
  out.frames = b->frames();
  out.dim = b->dim();
  out.dtype = loader::DTypeName(b->dtype());
  out.max_tokens = b->max_tokens();
  out.seq_len = b->seq_len();
  out.repeated = b->repeated();
  out.skipped = b->skipped();
  return py::cast(std::move(out));
}

loader::ResumeState CoreLoader::state() const {
  CheckOpen();
  return loader_->state();
}

loader::EpochStats CoreLoader::stats() const {
  CheckOpen();
  return loader_->stats();
}

uint64_t CoreLoader::num_batches() const {
  CheckOpen();
  return loader_->num_batches();
}

uint64_t CoreLoader::CountBatches(uint64_t epoch) const {
  CheckOpen();
  uint64_t n = 0;
  Check(loader_->CountBatches(epoch, &n));
  return n;
}

std::string CoreLoader::digest() const {
  CheckProcess();
  if (!digest_) throw std::runtime_error("sluice.Loader: digest() needs Loader(..., digest=True)");
  return digest_->hex();
}

namespace {

void RegisterBatch(py::module_& m) {
  py::class_<PyBatch>(m, "Batch", R"(One padded mini-batch (loader/batch.h).

features [size, frames, dim] (None for text datasets), lengths [size], tokens [size, max_tokens]
and token_lengths [size] are sluice.Array objects over the batch's own memory (zero copy through
DLPack); keys, texts, record_ids are lists, one per row. Packed batches (seq_len > 0) also have,
per input column of [size, seq_len]: positions (int32, from 0 per document), doc_ids (int64
record ids, -1 for padding), loss_mask (uint8, 1 where tokens[:, 1:] is the same document's next
id), and cu_seqlens (int32 segment starts over the flattened inputs, then size * seq_len) and
row_cu_seqlens ([size, seq_len + 1], each row's, padded with seq_len); None otherwise.
Padded batches of a conversation dataset have loss_mask [size, max_tokens] (uint8, 1 where the
row's next id carries the template's loss; 0 on padding) and the rest None.
Conversation batches with audio turns also have, per audio turn in row then span order:
audio_features [num_audio, frames, dim] (the batch's dtype, zero past each length),
audio_lengths [num_audio] int32, and audio_spans [num_audio, 3] int32 (row, start column,
length of its placeholder span in the row's inputs); None otherwise.)")
      .def_readonly("features", &PyBatch::features)
      .def_readonly("lengths", &PyBatch::lengths)
      .def_readonly("tokens", &PyBatch::tokens)
      .def_readonly("token_lengths", &PyBatch::token_lengths)
      .def_readonly("keys", &PyBatch::keys)
      .def_readonly("texts", &PyBatch::texts)
      .def_readonly("record_ids", &PyBatch::record_ids)
      .def_readonly("sequences", &PyBatch::sequences)
      .def_readonly("positions", &PyBatch::positions)
      .def_readonly("doc_ids", &PyBatch::doc_ids)
      .def_readonly("loss_mask", &PyBatch::loss_mask)
      .def_readonly("cu_seqlens", &PyBatch::cu_seqlens)
      .def_readonly("row_cu_seqlens", &PyBatch::row_cu_seqlens)
      .def_readonly("audio_features", &PyBatch::audio_features)
      .def_readonly("audio_lengths", &PyBatch::audio_lengths)
      .def_readonly("audio_spans", &PyBatch::audio_spans)
      .def_readonly("epoch", &PyBatch::epoch)
      .def_readonly("index", &PyBatch::index)
      .def_readonly("size", &PyBatch::size)
      .def_readonly("frames", &PyBatch::frames)
      .def_readonly("dim", &PyBatch::dim)
      .def_readonly("dtype", &PyBatch::dtype)
      .def_readonly("max_tokens", &PyBatch::max_tokens)
      .def_readonly("seq_len", &PyBatch::seq_len)
      .def_readonly("repeated", &PyBatch::repeated)
      .def_readonly("skipped", &PyBatch::skipped)
      .def("__len__", [](const PyBatch& b) { return b.size; })
      .def("__repr__", [](const PyBatch& b) {
        return "sluice.Batch(epoch=" + std::to_string(b.epoch) +
               ", index=" + std::to_string(b.index) + ", size=" + std::to_string(b.size) +
               ", frames=" + std::to_string(b.frames) + ")";
      });
}

py::dict FeatureInfoDict(const loader::FeatureInfo& f) {
  py::dict d;
  d["audio"] = f.audio;
  d["kind"] = loader::FeatureKindName(f.kind);
  d["dim"] = f.dim;
  d["sample_rate"] = f.sample_rate;
  d["frame_shift_seconds"] = f.frame_shift_seconds;
  d["dtype"] = loader::DTypeName(f.dtype);
  d["audio_turns"] = f.audio_turns;
  return d;
}

py::dict BatchShapeDict(const loader::BatchShape& s) {
  py::dict d;
  d["rows"] = s.rows;
  d["frames"] = s.frames;
  d["padded_frames"] = s.padded_frames;
  d["tokens"] = s.tokens;
  d["audio"] = s.audio;
  d["audio_frames"] = s.audio_frames;
  d["padded_audio_frames"] = s.padded_audio_frames;
  return d;
}

void RegisterCoreLoader(py::module_& m) {
  py::class_<CoreLoader>(m, "Loader", "The C++ loader; use sluice.Loader.")
      .def(py::init<const std::vector<std::pair<std::string, double>>&, uint64_t, const py::dict&,
                    bool, bool>(),
           py::arg("sources"), py::arg("epoch_records"), py::arg("options"),
           py::arg("digest") = false, py::arg("pin") = false)
      .def(
          "start",
          [](CoreLoader& l, const std::string& state_json) { l.Start(ParseState(state_json)); },
          py::arg("state_json"),
          "Starts at a ResumeState given as its JSON (ResumeState::ToJson), whole.")
      .def("next", &CoreLoader::Next)
      .def("close", &CoreLoader::Close)
      .def(
          "state_json", [](const CoreLoader& l) { return l.state().ToJson(); },
          "The whole ResumeState (epoch, batches, world, earlier) as JSON (ResumeState::ToJson).")
      .def("stats",
           [](const CoreLoader& l) {
             nlohmann::json j = l.stats().ToJson();
             j["restarts"] = l.restarts();
             return JsonToPython(j);
           })
      .def("num_batches", &CoreLoader::num_batches)
      .def("count_batches", &CoreLoader::CountBatches, py::arg("epoch"))
      .def("digest", &CoreLoader::digest)
      .def_property_readonly("restarts", &CoreLoader::restarts)
      .def_property_readonly("owner_pid", &CoreLoader::owner_pid,
                             "The process that created the loader (the only one it runs in).")
      .def_property_readonly("consumer_batches",
                             [](const CoreLoader& l) { return l.options().consumer_batches; })
      .def("feature_info", [](const CoreLoader& l) { return FeatureInfoDict(l.feature_info()); })
      .def("max_batch_shape",
           [](const CoreLoader& l) { return BatchShapeDict(l.max_batch_shape()); })
      .def(
          "memory_blocks",
          [](CoreLoader& l) {
            return py::make_tuple(l.allocator().live_blocks(), l.allocator().deferred_blocks(),
                                  l.allocator().allocations());
          },
          "(blocks allocated, of which freed by a Loader but still held by Python, allocations "
          "from the system so far)")
      .def(
          "take_new_blocks", [](CoreLoader& l) { return Addresses(l.allocator().TakeNew()); },
          "pin_memory: [(address, bytes)] allocated since the last call, to register")
      .def(
          "take_dead_blocks", [](CoreLoader& l) { return Addresses(l.allocator().TakeDead()); },
          "pin_memory: [(address, bytes)] to unregister, then free_dead_block(address)")
      .def("free_dead_block",
           [](CoreLoader& l, uintptr_t p) { l.allocator().FreeDead(reinterpret_cast<void*>(p)); });
}

}  // namespace

void RegisterLoader(py::module_& m) {
  RegisterBatch(m);
  RegisterCoreLoader(m);
}

}  // namespace sluice::python
