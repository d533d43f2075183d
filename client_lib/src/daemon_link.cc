#include "daemon_link.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "taot/wire/credentials.h"
#include "taot/wire/identity_wire.h"
#include "taot/wire/load_wire.h"
#include "taot/wire/plan_wire.h"

namespace taot::client {
namespace {

constexpr size_t kMaxQueuedMatrices = 64;
constexpr size_t kMaxPrefetches = 4096;

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// Registration's back-off between attempts: doubling from 50 ms to 1 s, each drawn uniformly
// from [0.5, 1.5) of that, so ranks that lost the daemon together do not call it together.
class Backoff {
 public:
  absl::Duration Next() {
    const absl::Duration pause = base_ * std::uniform_real_distribution<double>(0.5, 1.5)(random_);
    base_ = std::min(2 * base_, absl::Seconds(1));
    return pause;
  }

 private:
  absl::Duration base_ = absl::Milliseconds(50);
  std::minstd_rand random_{std::random_device{}()};
};

}  // namespace

bool IsRefusal(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::unique_ptr<DaemonLink>> DaemonLink::Create(const ClientOptions& options, int rank, int world_size,
                                                               std::string run_id) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = wire::ChannelCredentials(
      {{"tls_ca", options.tls_ca}, {"tls_cert", options.tls_cert}, {"tls_key", options.tls_key}});
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  // Reconnect soon after a daemon restart (gRPC's default back-off starts at a second and grows
  // to two minutes); layers meanwhile plan locally. gRPC's "minimum reconnect back-off" is also
  // the least time one connection attempt (TCP, TLS handshake, HTTP/2 SETTINGS) is given: a busy
  // machine needs more than a few hundred milliseconds, so it gets the whole connect_timeout.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(options.connect_timeout), 1000, 60000)));
  // Pings keep an idle watch (a rank between steps, a quiet prefetch feed) alive through
  // proxies and load balancers that drop idle connections, and find a dead daemon within
  // 40 seconds. Every 30 seconds, with or without calls and data: three times the least
  // interval taot-planner accepts (taot/server/keepalive.h), so none counts as a ping strike.
  // docs/operations.md has the values.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 30000);
  auto channel = grpc::CreateCustomChannel(options.address, *credentials, args);
  return std::unique_ptr<DaemonLink>(new DaemonLink(options, rank, world_size, std::move(run_id), std::move(channel)));
}

DaemonLink::DaemonLink(const ClientOptions& options, int rank, int world_size, std::string run_id,
                       std::shared_ptr<grpc::Channel> channel)
    : options_(options),
      rank_(rank),
      world_size_(world_size),
      run_id_(std::move(run_id)),
      stub_(taot::v1::Planner::NewStub(channel)) {}

DaemonLink::~DaemonLink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
    // A background registration may be waiting out connect_timeout for a daemon that is gone.
    if (register_context_ != nullptr) register_context_->TryCancel();
  }
  changed_.notify_all();
  if (sender_.joinable()) sender_.join();
  if (watcher_.joinable()) watcher_.join();
  if (reconnector_.joinable()) reconnector_.join();
}

void DaemonLink::Prepare(grpc::ClientContext& context, absl::Duration timeout) const {
  if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

absl::Status DaemonLink::RegisterOnce(absl::Time deadline) {
  taot::v1::RegisterRankRequest request;
  request.set_job_id(options_.job_id);
  request.set_rank(rank_);
  request.set_world_size(world_size_);
  request.set_node(options_.node);
  request.set_local_rank(options_.local_rank);
  request.set_device(options_.device);
  request.set_run_id(run_id_);
  request.set_experts(options_.experts);
  request.set_slots_per_rank(options_.slots_per_rank);
  taot::v1::RegisterRankResponse response;
  grpc::ClientContext context;
  Prepare(context, std::max(absl::ZeroDuration(), deadline - absl::Now()));
  // Wait for a connection (through gRPC's reconnect back-off) rather than fail at once while the
  // channel is down: the deadline bounds it.
  context.set_wait_for_ready(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::CancelledError("the client is closing");
    register_context_ = &context;
  }
  const grpc::Status status = stub_->RegisterRank(&context, request, &response);
  {
    std::lock_guard<std::mutex> lock(mu_);
    register_context_ = nullptr;
  }
  return FromGrpc(status);
}

absl::Status DaemonLink::Register(absl::Time deadline) {
  Backoff backoff;
  while (true) {
    absl::Status s = RegisterOnce(deadline);
    if (s.ok()) ready_ = true;
    if (s.ok() || IsRefusal(s)) return s;
    const absl::Duration pause = std::min(backoff.Next(), deadline - absl::Now());
    if (pause <= absl::ZeroDuration() || !Pause(pause)) return s;
  }
}

bool DaemonLink::ready() const { return ready_; }

bool DaemonLink::Pause(absl::Duration pause) {
  std::unique_lock<std::mutex> lock(mu_);
  return !changed_.wait_for(lock, absl::ToChronoNanoseconds(pause), [this] { return stopping_; });
}

void DaemonLink::Reconnect() {
  ready_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reconnect_wanted_ = true;
    if (!reconnector_.joinable()) reconnector_ = std::thread([this] { Reregister(); });
  }
  changed_.notify_all();
}

void DaemonLink::Reregister() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stopping_ || reconnect_wanted_; });
      if (stopping_) return;
      reconnect_wanted_ = false;
    }
    Backoff backoff;
    while (!ready_) {
      const absl::Status s = Register(absl::Now() + options_.connect_timeout);
      if (s.ok()) break;
      // A refusal (a new run of the job took over, say) is tried again too, slowly: the daemon
      // may be reconfigured, and layers meanwhile plan locally.
      if (!Pause(IsRefusal(s) ? absl::Seconds(1) : backoff.Next())) return;
    }
  }
}

absl::StatusOr<LayerPlan> DaemonLink::ReportLoad(int64_t step, int layer, std::span<const int64_t> row) {
  if (!ready_) return absl::UnavailableError("not registered with the daemon (registering again in the background)");
  taot::v1::ReportLoadRequest request;
  request.set_job_id(options_.job_id);
  request.set_run_id(run_id_);
  request.set_rank(rank_);
  request.set_step(step);
  request.set_layer(layer);
  wire::RowToProto(row, *request.mutable_counts());
  taot::v1::Plan reply;
  grpc::ClientContext context;
  Prepare(context, options_.call_timeout);
  if (absl::Status s = FromGrpc(stub_->ReportLoad(&context, request, &reply)); !s.ok()) return s;
  absl::StatusOr<Plan> plan = wire::PlanFromProto(reply);
  if (!plan.ok()) {
    return absl::DataLossError(absl::StrCat("the daemon's plan for (step ", step, ", layer ", layer,
                                            ") is not whole: ", plan.status().message()));
  }
  LayerPlan out;
  out.plan = *std::move(plan);
  out.identity = wire::IdentityFromProto(reply);
  return out;
}

void DaemonLink::ReportMatrixLater(int64_t step, int layer, LoadMatrix load) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!sender_.joinable()) sender_ = std::thread([this] { SendMatrices(); });
    if (matrices_.size() >= kMaxQueuedMatrices) matrices_.pop_front();
    matrices_.push_back({step, layer, std::move(load)});
  }
  changed_.notify_all();
}

void DaemonLink::SendMatrices() {
  std::unique_lock<std::mutex> lock(mu_);
  // When the client closes, what is queued still goes out, for one call timeout at most.
  std::optional<absl::Time> drain_until;
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !matrices_.empty(); });
    if (stopping_ && !drain_until) drain_until = absl::Now() + options_.call_timeout;
    if (matrices_.empty() || (drain_until && absl::Now() > *drain_until)) return;
    QueuedMatrix next = std::move(matrices_.front());
    matrices_.pop_front();
    lock.unlock();
    taot::v1::ReportMatrixRequest request;
    request.set_job_id(options_.job_id);
    request.set_run_id(run_id_);
    request.set_step(next.step);
    request.set_layer(next.layer);
    wire::MatrixToProto(next.load, request);
    taot::v1::Plan reply;
    grpc::ClientContext context;
    Prepare(context, drain_until ? std::max(absl::ZeroDuration(), *drain_until - absl::Now()) : options_.call_timeout);
    stub_->ReportMatrix(&context, request, &reply);  // telemetry: a lost one costs nothing
    lock.lock();
  }
}

std::optional<std::vector<Replica>> DaemonLink::Prefetched(int64_t step, int layer, absl::Duration wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!watcher_.joinable()) watcher_ = std::thread([this] { WatchPrefetches(); });
  const auto key = std::pair{step, layer};
  changed_.wait_for(lock, absl::ToChronoNanoseconds(wait), [&] { return stopping_ || prefetches_.contains(key); });
  const auto it = prefetches_.find(key);
  if (it == prefetches_.end()) return std::nullopt;
  return it->second;
}

void DaemonLink::WatchPrefetches() {
  while (true) {
    grpc::ClientContext context;
    if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      watch_context_ = &context;
    }
    taot::v1::WatchPrefetchesRequest request;
    request.set_job_id(options_.job_id);
    request.set_run_id(run_id_);
    auto reader = stub_->WatchPrefetches(&context, request);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) context.TryCancel();  // the destructor came before the call started
    }
    taot::v1::Prefetch prefetch;
    while (reader->Read(&prefetch)) {
      // A prefetch that does not decode is as good as one that never came: the layer plans locally.
      absl::StatusOr<std::vector<Replica>> replicas = wire::ReplicasFromProto(prefetch.replicas());
      if (!replicas.ok()) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        prefetches_[{prefetch.step(), prefetch.layer()}] = *std::move(replicas);
        if (prefetches_.size() > kMaxPrefetches) prefetches_.erase(prefetches_.begin());
      }
      changed_.notify_all();
    }
    reader->Finish();
    std::unique_lock<std::mutex> lock(mu_);
    watch_context_ = nullptr;
    // The daemon went away: try again soon.
    if (changed_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; })) return;
  }
}

}  // namespace taot::client
