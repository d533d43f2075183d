#include "taot/server/keepalive.h"

#include <grpc/grpc.h>

namespace taot::server {
namespace {

int Millis(absl::Duration d) { return static_cast<int>(absl::ToInt64Milliseconds(d)); }

}  // namespace

void SetKeepalive(grpc::ServerBuilder& builder, const Keepalive& keepalive) {
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(keepalive.ping_every));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Millis(keepalive.ping_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             Millis(keepalive.min_client_ping_interval));
}

}  // namespace taot::server
