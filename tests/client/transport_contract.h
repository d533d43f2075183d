// The contract every Transport keeps, written once in transport_contract_test.cc and run over
// rows: one implementation each, with how its ranks connect and how a check reaches the memory
// its buffers live in (host memory for Gloo and in-process, device memory for NCCL). A test
// binary links the checks (the CMake target taot_transport_contract) and instantiates
// TransportTest over its own rows.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "taot/client/transport.h"

namespace taot::client {

using RankBody = std::function<void(Transport&)>;

inline int AnyNumberOfRanks() { return std::numeric_limits<int>::max(); }

struct TransportRow {
  std::string name;
  // Runs body on `ranks` connected ranks, one thread each, and returns when all are done.
  void (*on_ranks)(int ranks, const RankBody& body) = nullptr;
  // Copies between host memory and a buffer of the transport's memory (from NewBuffer).
  void (*to_buffer)(void* buffer, const void* host, size_t bytes) = nullptr;
  void (*from_buffer)(void* host, const void* buffer, size_t bytes) = nullptr;
  // How many ranks this machine can connect (NCCL: one per CUDA device), and why no more.
  int (*max_ranks)() = &AnyNumberOfRanks;
  std::string why_no_more{};
};

// For gtest: a row prints as, and names its tests after, its name.
void PrintTo(const TransportRow& row, std::ostream* os);
std::string TransportRowName(const ::testing::TestParamInfo<TransportRow>& info);

class TransportTest : public ::testing::TestWithParam<TransportRow> {
 protected:
  // Runs body on `ranks` ranks of the row; skips the check, with the row's reason, where the
  // machine connects fewer.
  void OnRanks(int ranks, const RankBody& body) const;
  // A buffer of the transport's memory holding `values`, and a buffer's first `n` values.
  std::unique_ptr<TransportBuffer> Floats(Transport& transport, const std::vector<float>& values) const;
  std::vector<float> Read(TransportBuffer& buffer, size_t n) const;
  std::unique_ptr<TransportBuffer> Bytes(Transport& transport, const std::vector<uint8_t>& values) const;
  std::vector<uint8_t> ReadBytes(TransportBuffer& buffer, size_t n) const;
};

}  // namespace taot::client
