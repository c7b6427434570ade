// sluice._sluice: the extension module under the `sluice` package (python/sluice/__init__.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "array.h"
#include "base/cpus.h"
#include "comm/launch_env.h"
#include "core_loader.h"
#include "errors.h"
#include "kwargs.h"
#include "loader/options.h"
#include "loader/resume.h"
#include "storage/url.h"

namespace sluice::python {
void RegisterAugment(py::module_& m);
void RegisterFeatures(py::module_& m);
void RegisterLoad(py::module_& m);
}  // namespace sluice::python

namespace {

namespace py = pybind11;
using namespace sluice::python;

// Every keyword sluice.Loader takes from the options tables, as [(name, type, help)].
py::list LoaderKeywords() {
  std::vector<KeywordDoc> docs;
  sluice::loader::LoaderOptions o;
  DescribeKeywords(
      &o, [](const sluice::FieldInfo&) { return true; }, &docs);
  py::list out;
  for (const KeywordDoc& d : docs) out.append(py::make_tuple(d.name, d.type, d.help));
  return out;
}

}  // namespace

PYBIND11_MODULE(_sluice, m) {
  m.doc() = "sluice's C++ core; the API is the sluice package (docs/python.md).";
  RegisterArray(m);
  RegisterLoader(m);
  RegisterFeatures(m);
  RegisterAugment(m);
  RegisterLoad(m);
  m.def("loader_keywords", &LoaderKeywords,
        "[(keyword, type, help)] of every option sluice.Loader takes under the CLI's names.");
  m.def(
      "launch_env",
      [] {
        sluice::comm::LaunchEnv e;
        Check(sluice::comm::ReadLaunchEnv(&e));
        return py::make_tuple(e.rank, e.world, e.launcher);
      },
      "(rank, world, launcher) from torchrun / mpirun / srun variables (comm/launch_env.h).");
  m.def(
      "check_resume_state",
      [](const std::string& json) {
        sluice::loader::ResumeState s;
        const sluice::Status st = sluice::loader::ResumeState::FromJson(json, &s);
        if (!st.ok()) throw py::value_error("state_dict: " + st.message());
        return s.ToJson();
      },
      "A ResumeState's JSON as ResumeState::ToJson writes it back (every field kept); "
      "ValueError naming the problem.");
  m.def("usable_cores", &sluice::UsableCores,
        "The cores this process may use: its affinity mask and cgroup CPU quota (base/cpus.h).");
  m.def("redact_url", &sluice::storage::RedactUrl, py::arg("text"),
        "text with the password of every URL in it hidden (storage/url.h), for what Python shows.");
}
