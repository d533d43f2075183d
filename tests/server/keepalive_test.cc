// HTTP/2 keepalive between a client that pings an idle watch often and the daemon's settings
// (SetKeepalive): the pings keep the watch alive, where gRPC's defaults would refuse them as too
// frequent and close the connection. Intervals are short here; docs/operations.md has the real ones.
#include "taot/server/keepalive.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "loopback_daemon.h"
#include "taot/server/planner_service.h"

namespace taot::server {
namespace {

// gRPC (1.51) sends a transport's pings at most once a second, whatever it is asked.
constexpr int kClientPingMs = 1000;
// A watch stays idle this long: several ping intervals, past the third ping strike.
constexpr absl::Duration kIdle = absl::Milliseconds(6 * kClientPingMs);

class KeepaliveTest : public ::testing::Test {
 protected:
  // A daemon for one 8-rank job, with `keepalive` or gRPC's defaults.
  void Start(std::optional<Keepalive> keepalive) {
    testing::LoopbackDaemonOptions options;
    options.build = [keepalive](grpc::ServerBuilder& builder) {
      if (keepalive) SetKeepalive(builder, *keepalive);
    };
    daemon_ = testing::LoopbackDaemon::Start(options);
    ASSERT_NE(daemon_, nullptr);
    request_ = daemon_->request();
    job_ = &daemon_->job();
    port_ = daemon_->port();
  }

  // A channel whose pings go out every kClientPingMs, with or without calls and data.
  std::shared_ptr<grpc::Channel> PingingChannel() const {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kClientPingMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, kClientPingMs);
    return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials(), args);
  }

  struct Watched {
    grpc_connectivity_state after_idle;          // the watching channel's connection
    std::optional<taot::v1::Prefetch> prefetch;  // the first the watch read, if any
    grpc::Status status;
  };
  // Opens a watch, leaves it idle for kIdle, then plans a round on another channel.
  Watched WatchIdleThenPlace() {
    std::shared_ptr<grpc::Channel> channel = PingingChannel();
    std::unique_ptr<taot::v1::Planner::Stub> watcher = taot::v1::Planner::NewStub(channel);
    grpc::ClientContext watch_context;
    watch_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    taot::v1::WatchPrefetchesRequest watch;
    watch.set_job_id("job-1");
    auto reader = watcher->WatchPrefetches(&watch_context, watch);
    // The call is up once the daemon's feed holds its watcher.
    std::shared_ptr<PlanRounds> rounds = *job_->Rounds();
    for (int i = 0; i < 1000 && rounds->prefetches().watchers() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
    EXPECT_EQ(rounds->prefetches().watchers(), 1u);
    absl::SleepFor(kIdle);
    const grpc_connectivity_state after_idle = channel->GetState(false);
    taot::v1::ReportMatrixRequest m;
    m.set_job_id("job-1");
    m.set_step(3);
    m.set_layer(0);
    m.set_ranks(8);
    m.set_experts(32);
    for (int64_t n : request_.load.data()) m.add_counts(n);
    auto reporter = taot::v1::Planner::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials()));
    grpc::ClientContext report_context;
    taot::v1::Plan plan;
    EXPECT_TRUE(reporter->ReportMatrix(&report_context, m, &plan).ok());
    std::optional<taot::v1::Prefetch> got;
    if (taot::v1::Prefetch p; reader->Read(&p)) got = p;
    watch_context.TryCancel();
    return {after_idle, got, reader->Finish()};
  }

  std::unique_ptr<testing::LoopbackDaemon> daemon_;
  PlanRequest request_;
  Job* job_ = nullptr;
  int port_ = 0;
};

TEST_F(KeepaliveTest, AnIdleWatchOutlivesManyPingIntervals) {
  Keepalive keepalive;
  keepalive.min_client_ping_interval = absl::Milliseconds(kClientPingMs / 2);
  Start(keepalive);
  const Watched w = WatchIdleThenPlace();
  EXPECT_EQ(w.after_idle, GRPC_CHANNEL_READY);
  ASSERT_TRUE(w.prefetch.has_value()) << w.status.error_code() << ": " << w.status.error_message();
  EXPECT_EQ(w.prefetch->step(), 4);
  EXPECT_EQ(w.prefetch->layer(), 0);
}

// The control: with gRPC's defaults (pings at most every 5 minutes without data) the same
// client's pings are strikes, and the daemon sends GOAWAY "too_many_pings": the connection
// takes no more calls (the watch in flight may finish on it).
TEST_F(KeepaliveTest, WithoutTheDaemonsSettingsTheSamePingsCloseTheConnection) {
  Start(std::nullopt);
  EXPECT_NE(WatchIdleThenPlace().after_idle, GRPC_CHANNEL_READY);
}

}  // namespace
}  // namespace taot::server
