// The Gloo transport: TCP between ranks, buffers in CPU memory (Debian's libgloo). For CPU
// training (PyTorch's gloo backend works the same way) and for the tests.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"

namespace gloo::rendezvous {
class Store;
}

namespace taot::client {

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // The address this rank listens on for its peers (its own host's).
  std::string hostname = "127.0.0.1";
  // For the rendezvous, and for collectives without a deadline of their own.
  absl::Duration timeout = absl::Seconds(30);
};

// Connects this rank to every other. The rendezvous goes through a directory every rank can see
// (a shared filesystem, or a local one for ranks on one machine), or through a store the caller
// owns (it must outlive the call). Errors name the option, or say which peer did not come.
absl::StatusOr<std::unique_ptr<Transport>> ConnectGlooThroughDirectory(const GlooOptions& options,
                                                                       const std::string& directory);
absl::StatusOr<std::unique_ptr<Transport>> ConnectGlooThroughStore(const GlooOptions& options,
                                                                   gloo::rendezvous::Store& store);

}  // namespace taot::client
