#include "taot/server/planner_service.h"

#include <atomic>
#include <functional>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/arena.h"
#include "taot/planner/case_json.h"
#include "taot/planner/run_planner.h"
#include "taot/wire/framer.h"
#include "taot/wire/identity_wire.h"
#include "taot/wire/load_wire.h"
#include "taot/wire/plan_wire.h"
#include "taot/wire/scorecard_wire.h"

namespace taot::server {

// The job token, when the daemon has one, must come as "authorization: Bearer <token>"; the
// comparison takes the same time wherever the first difference is.
absl::Status CheckToken(const grpc::ServerContextBase& context, const std::string& token) {
  if (token.empty()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  const std::string want = "Bearer " + token;
  bool same = it != metadata.end() && it->second.size() == want.size();
  if (same) {
    unsigned char diff = 0;
    for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>(it->second.data()[i] ^ want[i]);
    same = diff == 0;
  }
  if (same) return absl::OkStatus();
  return absl::UnauthenticatedError("authorization: missing or wrong job token (send 'authorization: Bearer <token>')");
}

absl::Status NotAValid(const google::protobuf::MessageLite& message) {
  return absl::InvalidArgumentError(absl::StrCat("request: not a valid ", message.GetTypeName(), " message"));
}

// body(), with what it throws as a status: running out of memory is RESOURCE_EXHAUSTED, any
// other exception `other` (gRPC would answer UNKNOWN, or abort on a callback thread). The
// exception's text is quoted only in part: it may quote the request.
template <typename Body>
absl::Status Guarded(absl::StatusCode other, const char* field, const char* failed, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  } catch (const std::exception& e) {
    return absl::Status(other, absl::StrCat(field, ": ", failed, ": ", std::string(e.what()).substr(0, 80)));
  } catch (...) {
    return absl::Status(other, absl::StrCat(field, ": ", failed));
  }
  return absl::ResourceExhaustedError(absl::StrCat(field, ": needs more memory than the daemon can give"));
}

// A request from raw bytes; the error names the message type.
template <typename Message>
absl::Status Parse(const grpc::ByteBuffer& bytes, Message& message) {
  grpc::ByteBuffer copy(bytes);  // shares the slices; Deserialize consumes its argument
  if (!grpc::SerializationTraits<Message>::Deserialize(&copy, &message).ok()) return NotAValid(message);
  return absl::OkStatus();
}

template <typename Message>
absl::Status Serialize(const Message& message, grpc::ByteBuffer& out) {
  bool own_buffer = false;
  if (!grpc::SerializationTraits<Message>::Serialize(message, &out, &own_buffer).ok()) {
    return absl::InternalError(absl::StrCat("response: cannot encode a ", message.GetTypeName(), " message"));
  }
  return absl::OkStatus();
}

// A unary RPC answered within its callback: the token first, then the request's bytes, then
// body(request, response); the outcome is counted with the job's observer.
template <typename Request, typename Response, typename Body>
grpc::ServerUnaryReactor* ServeUnary(const Job& job, std::string_view rpc, grpc::CallbackServerContext& context,
                                     const std::string& token, const grpc::ByteBuffer& bytes, grpc::ByteBuffer& out,
                                     Body&& body) {
  absl::Status status = CheckToken(context, token);
  if (status.ok()) {
    status = Guarded(absl::StatusCode::kInternal, "request", "cannot be served", [&]() -> absl::Status {
      Request request;
      if (absl::Status s = Parse(bytes, request); !s.ok()) return s;
      Response response;
      if (absl::Status s = body(request, response); !s.ok()) return s;
      return Serialize(response, out);
    });
  }
  if (JobObserver* observer = job.observer()) observer->OnRequest(rpc, status);
  grpc::ServerUnaryReactor* reactor = context.DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

void ToProto(const RoundPlan& plan, taot::v1::Plan& out, bool with_lists) {
  out.set_step(plan.key.step);
  out.set_layer(plan.key.layer);
  if (with_lists) wire::PlanToProto(plan.plan, out);
  wire::IdentityToProto(plan.identity, out);
  out.set_planner(plan.planner);
  wire::ScorecardToProto(plan.score, *out.mutable_stats());
}

absl::StatusOr<std::shared_ptr<PlanRounds>> PlannerService::RoundsFor(const std::string& job_id,
                                                                      const std::string& run_id) {
  if (job_id != job_.id()) {
    return absl::NotFoundError(
        absl::StrCat("job_id: unknown job '", job_id, "' (this daemon serves '", job_.id(), "')"));
  }
  return job_.Rounds(run_id);
}

grpc::ServerUnaryReactor* PlannerService::RegisterRank(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
  return ServeUnary<taot::v1::RegisterRankRequest, taot::v1::RegisterRankResponse>(
      job_, "RegisterRank", *context, token_, *bytes, *response,
      [&](const auto& request, auto& out) { return DoRegisterRank(request, out); });
}

absl::Status PlannerService::DoRegisterRank(const taot::v1::RegisterRankRequest& request,
                                            taot::v1::RegisterRankResponse& response) {
  RankInfo info{request.job_id(), request.rank(),   request.world_size(), request.node(),          request.local_rank(),
                request.device(), request.run_id(), request.experts(),    request.slots_per_rank()};
  if (absl::Status s = job_.Register(info); !s.ok()) return s;
  const JobStatus status = job_.Status();
  response.set_registered(status.registered);
  response.set_ready(status.nodes > 0);
  return absl::OkStatus();
}

namespace {

// Checked before any row counts (PlanRounds::SubmitRows checks the rows themselves).
absl::Status CheckLayers(const taot::v1::StreamRequest& request) {
  if (request.layers_size() > PlannerService::kMaxStreamLayers) {
    return absl::InvalidArgumentError(absl::StrCat("layers: at most ", PlannerService::kMaxStreamLayers,
                                                   " per message, got ", request.layers_size()));
  }
  return absl::OkStatus();
}

// The plan's shared wire bytes; the plan stays alive until gRPC has sent them.
wire::SharedBytes WireBytes(std::shared_ptr<const RoundPlan> plan) {
  const std::string& bytes = plan->Wire(EncodePlan);
  return {bytes, std::move(plan)};
}

grpc::ByteBuffer WireBuffer(std::shared_ptr<const RoundPlan> plan) {
  return wire::MessageBuffer(WireBytes(std::move(plan)));
}

// A StreamResponse (its `plans`, field 1) made of the plans' shared wire bytes.
grpc::ByteBuffer StreamResponseBuffer(std::vector<std::shared_ptr<const RoundPlan>> plans) {
  std::vector<wire::SharedBytes> elements;
  elements.reserve(plans.size());
  for (std::shared_ptr<const RoundPlan>& plan : plans) elements.push_back(WireBytes(std::move(plan)));
  return wire::RepeatedFieldBuffer(taot::v1::StreamResponse::kPlansFieldNumber, std::move(elements));
}

// The plans one call waits for, shared with the rounds' callbacks. Whichever comes first ends
// the wait: the last plan, or the call's cancellation (its client went away, its deadline passed,
// or the server is shutting down). A callback that comes after a cancellation finds the wait
// closed and touches nothing else: the call's reactor may be gone.
class PlanWait {
 public:
  using Plans = std::vector<std::shared_ptr<const RoundPlan>>;
  explicit PlanWait(size_t n) : plans_(n), unsettled_(n) {}

  // Stores plan `i`; all the plans when it was the last and the wait was still open.
  std::optional<Plans> Settle(size_t i, std::shared_ptr<const RoundPlan> plan) {
    absl::MutexLock lock(&mu_);
    if (closed_) return std::nullopt;
    plans_[i] = std::move(plan);
    if (--unsettled_ > 0) return std::nullopt;
    closed_ = true;
    return std::move(plans_);
  }

  // Closes the wait if it is open; true when it was (the caller then ends the call).
  bool Cancel() {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    closed_ = true;
    return true;
  }

 private:
  absl::Mutex mu_;
  Plans plans_ ABSL_GUARDED_BY(mu_);
  size_t unsettled_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Waits for every ticket's round through `wait`; `done` gets the plans in the tickets' order,
// unless the wait is cancelled first.
void AwaitAll(PlanRounds& rounds, const std::vector<PlanRounds::Ticket>& tickets, const std::shared_ptr<PlanWait>& wait,
              std::function<void(PlanWait::Plans)> done) {
  auto shared_done = std::make_shared<std::function<void(PlanWait::Plans)>>(std::move(done));
  for (size_t i = 0; i < tickets.size(); ++i) {
    rounds.WhenSettled(tickets[i], [wait, i, shared_done](std::shared_ptr<const RoundPlan> plan) {
      if (std::optional<PlanWait::Plans> plans = wait->Settle(i, std::move(plan))) (*shared_done)(*std::move(plans));
    });
  }
}

const absl::Status& CancelledBeforeItsPlan() {
  static const absl::Status status =
      absl::CancelledError("the call ended (cancelled, past its deadline, or the server stopping) before its plan");
  return status;
}

}  // namespace

std::string EncodePlan(const RoundPlan& plan) {
  // The arena makes the message's many small parts one allocation, freed at once.
  google::protobuf::Arena arena;
  auto* message = google::protobuf::Arena::CreateMessage<taot::v1::Plan>(&arena);
  ToProto(plan, *message);
  return message->SerializeAsString();
}

void PlannerService::Finish(grpc::ServerUnaryReactor* reactor, std::string_view rpc, const absl::Status& status) {
  if (JobObserver* observer = job_.observer()) observer->OnRequest(rpc, status);
  reactor->Finish(ToGrpc(status));
}

// One ReportLoad: the row counts at once; the plan comes when its round settles, on whichever
// thread settles it.
class PlannerService::ReportLoadReactor final : public grpc::ServerUnaryReactor {
 public:
  ReportLoadReactor(PlannerService& service, grpc::CallbackServerContext* context, const grpc::ByteBuffer& bytes,
                    grpc::ByteBuffer* response)
      : service_(service), response_(response) {
    absl::StatusOr<PlanRounds::Ticket> ticket = Submit(*context, bytes);
    if (!ticket.ok()) {
      End(ticket.status());
      return;
    }
    wait_ = std::make_shared<PlanWait>(1);
    AwaitAll(*rounds_, {*ticket}, wait_, [this](PlanWait::Plans plans) {
      *response_ = WireBuffer(std::move(plans[0]));
      End(absl::OkStatus());
    });
  }

  // The row still counts; the plan, when it comes, is dropped.
  void OnCancel() override {
    if (wait_ != nullptr && wait_->Cancel()) End(CancelledBeforeItsPlan());
  }

  void OnDone() override { delete this; }

 private:
  absl::StatusOr<PlanRounds::Ticket> Submit(const grpc::CallbackServerContext& context, const grpc::ByteBuffer& bytes) {
    if (absl::Status s = CheckToken(context, service_.token_); !s.ok()) return s;
    taot::v1::ReportLoadRequest request;
    if (absl::Status s = Parse(bytes, request); !s.ok()) return s;
    absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = service_.RoundsFor(request.job_id(), request.run_id());
    if (!rounds.ok()) return rounds.status();
    rounds_ = *std::move(rounds);
    return rounds_->SubmitRow({request.step(), request.layer()}, request.rank(), wire::RowFromProto(request.counts()));
  }

  void End(const absl::Status& status) { service_.Finish(this, "ReportLoad", status); }

  PlannerService& service_;
  grpc::ByteBuffer* const response_;
  std::shared_ptr<PlanWait> wait_;      // set before gRPC can call OnCancel (the constructor runs first)
  std::shared_ptr<PlanRounds> rounds_;  // the run's rounds this call reported to
};

grpc::ServerUnaryReactor* PlannerService::ReportLoad(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
  return new ReportLoadReactor(*this, context, *bytes, response);
}

grpc::ServerUnaryReactor* PlannerService::ReportMatrix(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan = [&]() -> absl::StatusOr<std::shared_ptr<const RoundPlan>> {
    if (absl::Status s = CheckToken(*context, token_); !s.ok()) return s;
    taot::v1::ReportMatrixRequest request;
    if (absl::Status s = Parse(*bytes, request); !s.ok()) return s;
    absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = RoundsFor(request.job_id(), request.run_id());
    if (!rounds.ok()) return rounds.status();
    absl::StatusOr<LoadMatrix> load = wire::MatrixFromProto(request);
    if (!load.ok()) return load.status();
    // The whole matrix is here: the round plans in this call, on gRPC's callback thread.
    return (*rounds)->ReportMatrix({request.step(), request.layer()}, *std::move(load));
  }();
  if (plan.ok()) *response = WireBuffer(*std::move(plan));
  Finish(reactor, "ReportMatrix", plan.status());
  return reactor;
}

// One rank's stream: read a message (one step, several layers), submit every row, and once all
// their rounds settle, write one response with their plans in the message's order; then read the
// next. The reactor holds no thread while it waits. At any time one thing is pending: a read, a
// write, or the wait for plans (which OnCancel can end).
class PlannerService::StreamReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamReactor(PlannerService& service, grpc::CallbackServerContext* context) : service_(service), context_(*context) {
    if (absl::Status s = CheckToken(*context, service_.token_); !s.ok()) {
      End(s);
      return;
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End(absl::OkStatus());  // the client is done writing
      return;
    }
    if (absl::Status s = Submit(); !s.ok()) End(s);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      End(absl::CancelledError("the client closed the stream"));
      return;
    }
    StartRead(&in_);
  }

  // A pending read or write fails on its own; a wait for plans is ended here.
  void OnCancel() override {
    std::shared_ptr<PlanWait> wait;
    {
      absl::MutexLock lock(&mu_);
      wait = wait_;
    }
    if (wait != nullptr && wait->Cancel()) End(CancelledBeforeItsPlan());
  }

  void OnDone() override { delete this; }

 private:
  // Every row first, then the waits: the rounds of all the message's layers fill together.
  absl::Status Submit() {
    taot::v1::StreamRequest request;
    if (absl::Status s = Parse(in_, request); !s.ok()) return s;
    if (absl::Status s = CheckLayers(request); !s.ok()) return s;
    absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = service_.RoundsFor(request.job_id(), request.run_id());
    if (!rounds.ok()) return rounds.status();
    std::vector<PlanRounds::LayerRow> rows;
    for (const taot::v1::LayerLoad& layer : request.layers()) {
      rows.push_back({layer.layer(), wire::RowFromProto(layer.counts())});
    }
    // The message's rows count together and the rounds they complete plan in one batch.
    absl::StatusOr<std::vector<PlanRounds::Ticket>> submitted =
        (*rounds)->SubmitRows(request.step(), request.rank(), rows);
    if (!submitted.ok()) return submitted.status();
    std::vector<PlanRounds::Ticket>& tickets = *submitted;
    if (tickets.empty()) {
      StartRead(&in_);
      return absl::OkStatus();
    }
    auto wait = std::make_shared<PlanWait>(tickets.size());
    {
      absl::MutexLock lock(&mu_);
      wait_ = wait;
    }
    AwaitAll(**rounds, tickets, wait, [this](PlanWait::Plans plans) {
      out_ = StreamResponseBuffer(std::move(plans));
      StartWrite(&out_);
    });
    // A cancellation that came before the wait was visible to OnCancel.
    if (context_.IsCancelled() && wait->Cancel()) End(CancelledBeforeItsPlan());
    return absl::OkStatus();
  }

  void End(const absl::Status& status) {
    if (JobObserver* observer = service_.job_.observer()) observer->OnRequest("Stream", status);
    Finish(ToGrpc(status));
  }

  PlannerService& service_;
  const grpc::CallbackServerContext& context_;
  grpc::ByteBuffer in_, out_;
  absl::Mutex mu_;
  std::shared_ptr<PlanWait> wait_ ABSL_GUARDED_BY(mu_);  // the latest message's
};

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* PlannerService::Stream(
    grpc::CallbackServerContext* context) {
  return new StreamReactor(*this, context);
}

// One rank's watch: every prefetch published since the last one written goes out, one write at
// a time; in between the reactor waits on the feed (PrefetchFeed::WhenPublished), holding no
// thread. At any time one thing is pending: a write, or the wait (which OnCancel can end).
class PlannerService::WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  WatchReactor(PlannerService& service, grpc::CallbackServerContext* context, const grpc::ByteBuffer& bytes)
      : service_(service), context_(*context) {
    absl::Status started =
        Guarded(absl::StatusCode::kInternal, "request", "cannot be served", [&] { return Start(bytes); });
    if (!started.ok()) {
      End(started);
      return;
    }
    Wait();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      End(absl::OkStatus());  // the client went away
      return;
    }
    seen_ = batch_[next_]->sequence;
    if (++next_ < batch_.size()) {
      WriteNext();
      return;
    }
    batch_.clear();
    Wait();
  }

  // A pending write fails on its own; a wait is ended here.
  void OnCancel() override {
    std::shared_ptr<Gate> wait;
    uint64_t id = 0;
    {
      absl::MutexLock lock(&mu_);
      wait = wait_;
      id = wait_id_;
    }
    if (wait != nullptr && wait->Close()) {
      rounds_->prefetches().Forget(id);
      End(absl::OkStatus());
    }
  }

  void OnDone() override { delete this; }

 private:
  // Whoever closes it first, the feed's callback or the call's cancellation, goes on.
  class Gate {
   public:
    bool Close() { return open_.exchange(false); }

   private:
    std::atomic<bool> open_{true};
  };

  absl::Status Start(const grpc::ByteBuffer& bytes) {
    if (absl::Status s = CheckToken(context_, service_.token_); !s.ok()) return s;
    taot::v1::WatchPrefetchesRequest request;
    if (absl::Status s = Parse(bytes, request); !s.ok()) return s;
    absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = service_.RoundsFor(request.job_id(), request.run_id());
    if (!rounds.ok()) return rounds.status();
    rounds_ = *std::move(rounds);
    return absl::OkStatus();
  }

  // Runs in the constructor or OnWriteDone only, so gRPC cannot end the call meanwhile.
  void Wait() {
    auto wait = std::make_shared<Gate>();
    {
      absl::MutexLock lock(&mu_);
      wait_ = wait;
      wait_id_ = 0;
    }
    PrefetchFeed& feed = rounds_->prefetches();
    // The callback may come within WhenPublished; from another thread it touches nothing of the
    // reactor's after StartWrite.
    const uint64_t id = feed.WhenPublished(seen_, [this, wait](PrefetchFeed::Prefetches batch) {
      if (!wait->Close()) return;
      batch_ = std::move(batch);
      next_ = 0;
      WriteNext();
    });
    {
      absl::MutexLock lock(&mu_);
      if (wait_ == wait) wait_id_ = id;
    }
    // A cancellation that came before the wait was visible to OnCancel.
    if (context_.IsCancelled()) {
      feed.Forget(id);
      if (wait->Close()) End(absl::OkStatus());
    }
  }

  void WriteNext() {
    const Prefetch& p = *batch_[next_];
    taot::v1::Prefetch message;
    message.set_step(p.key.step);
    message.set_layer(p.key.layer);
    wire::ReplicasToProto(p.replicas, *message.mutable_replicas());
    wire::IdentityToProto(p.identity, message);
    out_.Clear();
    if (absl::Status s = Serialize(message, out_); !s.ok()) {
      End(s);
      return;
    }
    StartWrite(&out_);
  }

  void End(const absl::Status& status) {
    if (JobObserver* observer = service_.job_.observer()) observer->OnRequest("WatchPrefetches", status);
    Finish(ToGrpc(status));
  }

  PlannerService& service_;
  const grpc::CallbackServerContext& context_;
  std::shared_ptr<PlanRounds> rounds_;  // kept alive while the call watches their feed
  uint64_t seen_ = 0;                   // the sequence of the last prefetch written
  PrefetchFeed::Prefetches batch_;      // what the feed gave, written from next_ on
  size_t next_ = 0;
  grpc::ByteBuffer out_;
  absl::Mutex mu_;
  std::shared_ptr<Gate> wait_ ABSL_GUARDED_BY(mu_);  // the latest wait's, and its id with the feed
  uint64_t wait_id_ ABSL_GUARDED_BY(mu_) = 0;
};

grpc::ServerWriteReactor<grpc::ByteBuffer>* PlannerService::WatchPrefetches(grpc::CallbackServerContext* context,
                                                                            const grpc::ByteBuffer* bytes) {
  return new WatchReactor(*this, context, *bytes);
}

grpc::ServerUnaryReactor* AdminService::GetStatus(grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
                                                  grpc::ByteBuffer* response) {
  return ServeUnary<taot::v1::StatusRequest, taot::v1::StatusResponse>(
      job_, "GetStatus", *context, token_, *bytes, *response, [&](const auto&, auto& out) { return DoGetStatus(out); });
}

absl::Status AdminService::DoGetStatus(taot::v1::StatusResponse& response) {
  const JobStatus s = job_.Status();
  response.set_job_id(s.job_id);
  response.set_world_size(s.world_size);
  response.set_registered(s.registered);
  response.set_nodes(s.nodes);
  response.set_planner(s.planner);
  response.set_planner_version(s.planner_version);
  for (const auto& [k, v] : s.params) (*response.mutable_planner_params())[k] = v;
  for (const auto& plan : s.recent) ToProto(*plan, *response.add_recent_plans(), false);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* AdminService::SetPlanner(grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
                                                   grpc::ByteBuffer* response) {
  return ServeUnary<taot::v1::SetPlannerRequest, taot::v1::SetPlannerResponse>(
      job_, "SetPlanner", *context, token_, *bytes, *response,
      [&](const auto& request, auto& out) { return DoSetPlanner(request, out); });
}

absl::Status AdminService::DoSetPlanner(const taot::v1::SetPlannerRequest& request,
                                        taot::v1::SetPlannerResponse& response) {
  const PlannerParams params(request.params().begin(), request.params().end());
  if (absl::Status s = job_.SetPlanner(request.planner(), params); !s.ok()) return s;
  response.set_planner_version(job_.Status().planner_version);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* AdminService::PlanCase(grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
                                                 grpc::ByteBuffer* response) {
  return ServeUnary<taot::v1::PlanCaseRequest, taot::v1::Plan>(
      job_, "PlanCase", *context, token_, *bytes, *response, [&](const auto& request, auto& out) {
        // The case is the caller's: what its parsing or planning throws is the case's fault.
        return Guarded(absl::StatusCode::kInvalidArgument, "case_json", "cannot be planned",
                       [&] { return DoPlanCase(request, out); });
      });
}

namespace {

// A dry run answers for this job only if the case has the job's shape: the same ranks, experts
// and slots, and where the job's configuration fixes the nodes, the same grouping of ranks.
absl::Status CheckCaseFitsJob(const PlanRequest& c, const JobConfig& job) {
  const auto differs = [](const char* field, const char* job_field, int64_t job_value, int64_t value) {
    return absl::InvalidArgumentError(absl::StrCat("case_json: ", field, ": the daemon's job has ", job_field, " = ",
                                                   job_value, ", the case ", value,
                                                   " (a dry run plans cases of this job's shape)"));
  };
  if (c.ranks() != job.world_size) return differs("topology.ranks", "world_size", job.world_size, c.ranks());
  if (c.experts() != job.experts) return differs("experts", "experts", job.experts, c.experts());
  if (c.slots_per_rank() != job.slots_per_rank) {
    return differs("slots_per_rank", "slots", job.slots_per_rank, c.slots_per_rank());
  }
  // Node ids up to renaming: both sides numbered by their lowest rank.
  if (job.node_of_rank && NodeIdsByLowestRank(std::span<const int>(*job.node_of_rank)) !=
                              NodeIdsByLowestRank(std::span<const int>(c.topology().node_of_rank()))) {
    return absl::InvalidArgumentError(
        "case_json: topology: its ranks are grouped into nodes differently from the daemon's job (--ranks-per-node "
        "or the configured nodes)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AdminService::DoPlanCase(const taot::v1::PlanCaseRequest& request, taot::v1::Plan& response) {
  absl::StatusOr<PlanRequest> parsed = ParseCase(request.case_json());
  if (!parsed.ok()) return absl::Status(parsed.status().code(), absl::StrCat("case_json: ", parsed.status().message()));
  if (absl::Status fits = CheckCaseFitsJob(*parsed, job_.config()); !fits.ok()) return fits;
  const JobStatus status = job_.Status();
  const std::string name = request.planner().empty() ? status.planner : request.planner();
  const PlannerParams params =
      request.planner().empty() ? status.params : PlannerParams(request.params().begin(), request.params().end());
  absl::StatusOr<std::unique_ptr<Planner>> planner = job_.config().registry->CreateRunnable(name, params);
  if (!planner.ok()) return planner.status();
  absl::StatusOr<ScoredPlan> scored = RunPlanner(**planner, *parsed);
  if (!scored.ok()) return scored.status();
  RoundPlan result;
  result.plan = std::move(scored->plan);
  result.score = scored->score;
  result.identity = {0, scored->hash, Provenance::kDaemonRound, ""};
  result.planner = name;
  ToProto(result, response);
  return absl::OkStatus();
}

}  // namespace taot::server
