// A transport for ranks that are threads of one process (tests and benchmarks that simulate many
// ranks): all-gathers and messages go through shared memory, so what is measured is the
// client's own work, not the thread hand-offs of a TCP ring on a few cores. Host memory.
#pragma once

#include <memory>
#include <vector>

#include "taot/client/transport.h"

namespace taot::client {

// `size` connected transports, one per rank (index = rank); each is used by its rank's thread.
std::vector<std::unique_ptr<Transport>> ConnectInProcess(int size);

}  // namespace taot::client
