// The trace reader (ReadTrace) on one layer file of any content; the NPY and CSV targets differ
// only in the file's extension, which chooses the decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "taot/sim/trace.h"

namespace taot::fuzz {

// Reads `data` as the trace file `name`; an accepted trace must hand out every matrix it
// declares, each R x E of counts a CASE would take.
inline void ReadTraceFile(const std::string& name, const uint8_t* data, size_t size) {
  static ScratchFile file(name);
  const absl::StatusOr<std::unique_ptr<sim::Workload>> trace = sim::ReadTrace(file.Write(AsText(data, size)));
  if (!trace.ok()) {
    Require(!trace.status().message().empty(), "a refused trace gets a message");
    return;
  }
  const sim::WorkloadShape shape = (*trace)->shape();
  Require(shape.ranks > 0 && shape.experts % shape.ranks == 0 && shape.layers == 1 && shape.steps > 0 &&
              shape.microbatches > 0,
          "an accepted trace has a plannable shape");
  for (int step = 0; step < shape.steps; ++step) {
    for (int mb = 0; mb < shape.microbatches; ++mb) {
      const LoadMatrix load = (*trace)->Load(step, 0, mb);
      Require(load.sources() == shape.ranks && load.experts() == shape.experts, "every matrix has the trace's shape");
      int64_t total = 0;
      for (int64_t n : load.data()) {
        Require(n >= 0 && n <= kMaxTokensPerEntry, "every count is in a CASE's range");
        total += n;  // cannot overflow: the last total was at most 2^52, this count at most 2^40
        Require(total <= kMaxTotalTokens, "every matrix's total is in a CASE's range");
      }
    }
  }
}

}  // namespace taot::fuzz
