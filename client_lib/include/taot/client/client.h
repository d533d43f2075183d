// libtaot_client's entry point: the plan every rank applies to a layer, in one of three modes
// (docs/design.md, "The data path of one layer"):
//   remote:     each rank reports its load row to the daemon and gets the round's plan;
//   predictive: the daemon pushes each layer's replicas ahead of time; at the layer the ranks
//               split their actual (all-gathered) counts over them, with no RPC on the way;
//   local:      every rank plans in-process on the all-gathered counts (deterministic, so all
//               get the same plan); the daemon, if any, only receives the counts.
// Whatever the mode, the ranks then check they hold the same plan (version and hash) before any
// weight moves; on a difference every rank uses no replication for the layer. If the daemon is
// unreachable, all ranks plan locally for that layer and keep doing so for a growing number of
// layers (1, 2, 4, ... up to reconnect_max_layers) before trying it again. These decisions are
// made from values every rank gathered, so all ranks take them together, and every choice gives
// the same training numbers: only where experts are computed changes.
//
// Collectives run on the transport: every rank must call PlanLayer for the same (step, layer)s in
// the same order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_identity.h"
#include "taot/planner/registry.h"

namespace taot::client {

enum class Mode { kRemote, kPredictive, kLocal };
absl::StatusOr<Mode> ParseMode(std::string_view name);  // "remote", "predictive", "local"
std::string_view ModeName(Mode mode);

struct ClientOptions {
  std::string job_id;
  int experts = 0;  // E, a multiple of the world size
  int slots_per_rank = 2;
  int64_t expert_bytes = 0;
  double inter_node_cost = 3;
  // This rank's host or node name (ranks sharing it share NVLink), local rank and device.
  std::string node;
  int local_rank = 0;
  std::string device;

  Mode mode = Mode::kRemote;
  // The daemon ("host:port"); empty for none (local mode only).
  std::string address;
  std::string token;
  // TLS: the CA that signed the daemon's certificate; a client certificate and key for mutual
  // TLS. PEM file paths; empty for plaintext.
  std::string tls_ca, tls_cert, tls_key;
  // A remote plan's wait; longer than the daemon's round timeout. No layer waits for the daemon
  // longer than this.
  absl::Duration call_timeout = absl::Seconds(1);
  // Connecting and registering (TCP, TLS, the RegisterRank call), tried again with jittered
  // back-off within it: Create waits this long for the daemon, and each background registration
  // attempt after an outage gets this long.
  absl::Duration connect_timeout = absl::Seconds(10);
  // This run of the job: the same on every rank, new at every start or resume of the trainer (the
  // daemon's rounds start over for a new run). Empty: rank 0 draws one at random in Create.
  std::string run_id;
  // Predictive mode: how long a layer waits for its placement before planning locally.
  absl::Duration placement_wait = absl::Milliseconds(20);
  // Every collective on the transport.
  absl::Duration collective_timeout = absl::Seconds(60);
  // After a daemon call fails, the layers that plan locally before the daemon is asked again:
  // 1, 2, 4, ... up to this, reset by a daemon plan (and asked only once every rank is
  // registered again).
  int reconnect_max_layers = 1024;
  // The in-process planner (local mode, and the fallback).
  std::string planner = "taot";
  PlannerParams params;
  // Where the client says what it changed (falling back to local plans, the daemon back, ranks
  // disagreeing): one line each, prefixed "taot rank R:". Default: standard error.
  std::function<void(std::string_view line)> log;
};

// The plan for one layer, the same on every rank.
struct LayerPlan {
  Plan plan;
  // The version and hash every rank checked; where the plan came from (kNoReplication when the
  // ranks disagreed, or for the daemon's own fallback); the reason for no replication, or why
  // local planning stood in for the daemon.
  PlanIdentity identity;
  // This rank's time to get its plan: the daemon's round and the gather of every rank's answer,
  // or the gather of counts and the local plan, or the gather and the split. Either way one
  // collective also settles that every rank holds the same plan.
  absl::Duration plan_time;
};

struct ClientStats {
  int64_t layers = 0;
  int64_t daemon_plans = 0;
  int64_t placement_plans = 0;
  int64_t local_plans = 0;
  int64_t daemon_failures = 0;  // layers where some rank could not get its plan from the daemon
  int64_t disagreements = 0;    // layers where ranks held different plans
};

// The router's top-k expert ids of this rank's tokens, where they are: device memory on the
// NCCL transport, host memory on the others; any layout the routers produce, flattened to pairs
// (tokens x k), int32 or int64 (`wide`).
struct RouterIds {
  const void* data = nullptr;
  int64_t pairs = 0;
  bool wide = false;
};

class Client {
 public:
  // Checks the options (errors name the field), gathers every rank's node name over `transport`
  // to build the topology (nodes numbered in order of their lowest rank, as the daemon does), and
  // registers with the daemon if there is one, within connect_timeout. A daemon that refuses the
  // registration (an unknown job; world size, experts or slots that disagree with its job; a wrong
  // token) fails Create on every rank, with the daemon's message naming both values. A daemon
  // that cannot be reached in time is not an error: layers plan locally while registering goes
  // on in the background, and the daemon is used from the layer after every rank is registered.
  static absl::StatusOr<std::unique_ptr<Client>> Create(const ClientOptions& options,
                                                        std::shared_ptr<Transport> transport);
  ~Client();

  // The plan for (step, layer) given this rank's load row (tokens per expert it routes).
  // Errors: bad input (INVALID_ARGUMENT, nothing changes) and a transport failure (a peer gone);
  // never the daemon's state.
  absl::StatusOr<LayerPlan> PlanLayer(int64_t step, int layer, std::span<const int64_t> row);

  // PlanLayer from the router's ids where they lie, with no host copy of the ids: the transport's
  // plane counts them (after the work already on `trainer_stream`, where given), gathers every
  // rank's counts in its own memory and copies them to the host once (on NCCL: one pinned,
  // asynchronous device-to-host copy of the R x E counts; in remote mode this rank's E only).
  // An id outside [0, E) is INVALID_ARGUMENT on its rank, as a bad row is for PlanLayer.
  absl::StatusOr<LayerPlan> PlanLayerFromIds(int64_t step, int layer, const RouterIds& ids,
                                             std::optional<uintptr_t> trainer_stream = std::nullopt);

  // Predictive mode: the daemon's placement for (step, layer), the replicas the layer's plan
  // will split over, as a plan of replicas only, once every rank has it (waiting at most `wait`
  // for it here). Its weights can then move ahead of the layer: load it in a LayerTables and
  // start the tensor moves on the side stream right after the optimizer step, so that the layer
  // only waits on an event. PlanLayer at (step, layer) returns a plan over the same replicas
  // unless they no longer fit the layer's counts (then the layer moves its own). A collective
  // (every rank calls it for the same (step, layer)s in the same order): every rank gets the
  // placement, or every rank gets none. Other modes: FAILED_PRECONDITION.
  absl::StatusOr<std::optional<Plan>> Placement(int64_t step, int layer, absl::Duration wait = absl::ZeroDuration());

  ClientStats stats() const;
  Transport& transport() { return *transport_; }
  const ClientOptions& options() const { return options_; }

 private:
  class Impl;
  Client(ClientOptions options, std::shared_ptr<Transport> transport, std::unique_ptr<Impl> impl);
  const ClientOptions options_;
  std::shared_ptr<Transport> transport_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taot::client
