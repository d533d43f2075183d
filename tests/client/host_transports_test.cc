// The transports whose buffers live in host memory, Gloo and in-process, as rows of the
// transport contract (transport_contract_test.cc).
#include <cstring>
#include <thread>

#include "gloo_ranks.h"
#include "taot/client/in_process_transport.h"
#include "transport_contract.h"

namespace taot::client {
namespace {

void OnGloo(int ranks, const RankBody& body) {
  OnGlooRanks(ranks, [&](std::shared_ptr<Transport> transport) { body(*transport); });
}

void OnInProcess(int ranks, const RankBody& body) {
  std::vector<std::unique_ptr<Transport>> transports = ConnectInProcess(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { body(*transports[r]); });
  for (std::thread& t : threads) t.join();
}

void HostCopy(void* to, const void* from, size_t bytes) { std::memcpy(to, from, bytes); }

INSTANTIATE_TEST_SUITE_P(
    Transports, TransportTest,
    ::testing::Values(
        TransportRow{.name = "gloo", .on_ranks = &OnGloo, .to_buffer = &HostCopy, .from_buffer = &HostCopy},
        TransportRow{.name = "in_process", .on_ranks = &OnInProcess, .to_buffer = &HostCopy, .from_buffer = &HostCopy}),
    TransportRowName);

}  // namespace
}  // namespace taot::client
