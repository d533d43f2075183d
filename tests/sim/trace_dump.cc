// Test-only: reads a trace (ReadTrace) and prints it as one JSON object, so test_trace_numpy.py
// can compare it with the arrays numpy saved; with --write, also writes it back (WriteTrace) for
// np.load to read.
//   trace_dump TRACE [--write DIR csv|npy]
//   output: {"shape": {"steps": S, "microbatches": M, "layers": L, "ranks": R, "experts": E},
//            "loads": [layer][step][microbatch][rank][expert]}
//   errors: the status message on stderr, exit 1 (2 for bad arguments).
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "taot/sim/trace.h"

namespace {

nlohmann::json ToJson(const taot::sim::Workload& w) {
  const taot::sim::WorkloadShape s = w.shape();
  nlohmann::json loads = nlohmann::json::array();
  for (int layer = 0; layer < s.layers; ++layer) {
    nlohmann::json steps = nlohmann::json::array();
    for (int step = 0; step < s.steps; ++step) {
      nlohmann::json mbs = nlohmann::json::array();
      for (int mb = 0; mb < s.microbatches; ++mb) {
        const taot::LoadMatrix m = w.Load(step, layer, mb);
        nlohmann::json rows = nlohmann::json::array();
        for (int r = 0; r < m.sources(); ++r) {
          rows.push_back(std::vector<int64_t>(m.row(r).begin(), m.row(r).end()));
        }
        mbs.push_back(std::move(rows));
      }
      steps.push_back(std::move(mbs));
    }
    loads.push_back(std::move(steps));
  }
  return {{"shape",
           {{"steps", s.steps},
            {"microbatches", s.microbatches},
            {"layers", s.layers},
            {"ranks", s.ranks},
            {"experts", s.experts}}},
          {"loads", std::move(loads)}};
}

int Fail(const std::string& message, int code) {
  std::cerr << message << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const bool write = args.size() == 4 && args[1] == "--write";
  if (args.size() != 1 && !(write && (args[3] == "csv" || args[3] == "npy"))) {
    return Fail("usage: trace_dump TRACE [--write DIR csv|npy]", 2);
  }
  const auto workload = taot::sim::ReadTrace(args[0]);
  if (!workload.ok()) return Fail(std::string(workload.status().message()), 1);
  if (write) {
    const auto format = args[3] == "npy" ? taot::sim::TraceFormat::kNpy : taot::sim::TraceFormat::kCsv;
    const absl::Status s = taot::sim::WriteTrace(**workload, args[2], format);
    if (!s.ok()) return Fail(std::string(s.message()), 1);
  }
  std::cout << ToJson(**workload).dump() << "\n";
  return 0;
}
