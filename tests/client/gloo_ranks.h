// Ranks as threads of the test process, connected by the Gloo transport over loopback TCP
// through an in-memory rendezvous: the same code paths as separate processes.
#pragma once

#include <gtest/gtest.h>

#include <gloo/rendezvous/hash_store.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "taot/client/gloo_transport.h"

namespace taot::client {

// Runs body(transport) on `ranks` connected ranks, one thread each. No rank leaves (closing its
// connections) before every rank's body is done.
inline void OnGlooRanks(int ranks, const std::function<void(std::shared_ptr<Transport>)>& body) {
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      GlooOptions options;
      options.rank = r;
      options.size = ranks;
      options.timeout = absl::Seconds(20);
      absl::StatusOr<std::unique_ptr<Transport>> connected = ConnectGlooThroughStore(options, store);
      ASSERT_TRUE(connected.ok()) << connected.status();
      std::shared_ptr<Transport> transport = *std::move(connected);
      body(transport);
      std::vector<int64_t> all(static_cast<size_t>(ranks));
      EXPECT_TRUE(transport->AllGather(std::vector<int64_t>{0}, all, absl::Seconds(30)).ok());
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace taot::client
