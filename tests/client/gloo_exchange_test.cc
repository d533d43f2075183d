// The Gloo transport's own checks and the exchanges over it, beyond the contract every transport
// keeps (transport_contract_test.cc): R ranks as threads of this process, connected over
// loopback TCP through an in-memory store (the same code paths as separate processes).
#include <gtest/gtest.h>

#include <functional>

#include "gloo_ranks.h"
#include "taot/client/gloo_transport.h"
#include "taot/client/replica_exchange.h"

namespace taot::client {
namespace {

// Runs body(transport) on `ranks` ranks connected by Gloo, one thread each.
void OnRanks(int ranks, const std::function<void(Transport&)>& body) {
  OnGlooRanks(ranks, [&](std::shared_ptr<Transport> transport) { body(*transport); });
}

TEST(GlooTransportTest, BadOptionsAreRefusedByName) {
  gloo::rendezvous::HashStore store;
  GlooOptions o;
  o.rank = 3;
  o.size = 2;
  EXPECT_NE(ConnectGlooThroughStore(o, store).status().message().find("rank: must be in [0, 2)"), std::string::npos);
  o.rank = 0;
  EXPECT_NE(ConnectGlooThroughDirectory(o, "/nonexistent/dir").status().message().find("directory"), std::string::npos);
}

TEST(ReplicaExchangeTest, BuffersThatDoNotFitThePlanAreRefused) {
  Plan plan;
  plan.replicas = {{0, 1}, {2, 1}, {4, 1}};  // three replicas on rank 1
  OnRanks(2, [&](Transport& t) {
    std::vector<float> a(4), b(4), c(4), d(4), e(4), f(4);
    ExpertBuffers weights{16, {a.data(), b.data(), c.data(), d.data()}, {e.data(), f.data()}};
    if (t.rank() == 1) {
      auto pending = StartWeightMoves(t, plan, 8, weights);
      EXPECT_NE(pending.status().message().find("slots: the plan puts expert 4 in slot 2"), std::string::npos)
          << pending.status();
    }
    weights.home.pop_back();
    EXPECT_NE(StartWeightMoves(t, plan, 8, weights).status().message().find("home: must have E / R = 4"),
              std::string::npos);
  });
}

}  // namespace
}  // namespace taot::client
