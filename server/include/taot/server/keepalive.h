// HTTP/2 keepalive for taot-planner's listening port (gRPC's doc/keepalive.md). The daemon
// pings its clients to find ranks that vanished without closing their connections (a watch
// whose host died holds a call open for nothing), and accepts its clients' pings as often as
// they send them: every 30 seconds (client_lib's daemon link), well above the least interval
// accepted here, so no ping is refused as too frequent (a refusal counts a "ping strike", and
// at the third the daemon would close the connection with GOAWAY "too_many_pings"). Pings are
// allowed with no call in flight and with no data sent, since an idle watch sends none.
#pragma once

#include <grpcpp/server_builder.h>

#include "absl/time/time.h"

namespace taot::server {

struct Keepalive {
  absl::Duration ping_every = absl::Seconds(60);    // the daemon's pings
  absl::Duration ping_timeout = absl::Seconds(20);  // unanswered this long: the connection is closed
  // A client's pings may come this often (a client pinging every 30 seconds stays well clear).
  absl::Duration min_client_ping_interval = absl::Seconds(10);
};

// Sets the keepalive channel arguments on `builder`.
void SetKeepalive(grpc::ServerBuilder& builder, const Keepalive& keepalive = {});

}  // namespace taot::server
