// The C ABI (taot/client/taot_client.h) over the C++ client.
#include <cstddef>
#include "taot/client/taot_client.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/client/client.h"
#include "taot/client/gloo_transport.h"
#include "taot/client/layer_tables.h"
#include "taot/client/plane_reroute.h"
#include "taot/client/replica_exchange.h"
#include "taot/client/replica_moves.h"
#include "taot/client/reroute.h"
#include "taot/client/tensor_exchange.h"
#include "taot/planner/plan_hash.h"
#if TAOT_WITH_NCCL
#include "taot/client/nccl_transport.h"
#endif

struct taot_transport {
  std::shared_ptr<taot::client::Transport> transport;
};
struct taot_client {
  std::unique_ptr<taot::client::Client> client;
  // One workspace per direction: a layer's weights may be on their way while the last layer's
  // gradients still are.
  std::unique_ptr<taot::client::MoveWorkspace> weights, gradients;
  // The last plan's tables, loaded once for its moves and its gradients.
  std::unique_ptr<taot::client::LayerTables> tables;
  std::optional<taot::Plan> tables_plan;
  std::unique_ptr<taot::client::RerouteWorkspace> reroute;
};
struct taot_pending {
  std::unique_ptr<taot::client::PendingExchange> pending;
};
struct taot_plan {
  taot::client::LayerPlan plan;
};

namespace {

thread_local std::string last_error;

taot_status Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  return static_cast<taot_status>(status.code());
}

// Runs body (returning absl::Status); no exception leaves.
template <typename Body>
taot_status Call(Body&& body) {
  try {
    const absl::Status status = body();
    if (status.ok()) {
      last_error.clear();
      return TAOT_OK;
    }
    return Fail(status);
  } catch (const std::bad_alloc&) {
    return Fail(absl::ResourceExhaustedError("out of memory"));
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(e.what()));
  } catch (...) {
    return Fail(absl::InternalError("unknown error"));
  }
}

absl::Status Null(const char* field) { return absl::InvalidArgumentError(absl::StrCat(field, ": must not be NULL")); }

// The longest timeout the ABI takes: far above any collective's, and far below where a
// double's seconds stop converting exactly to a duration.
constexpr double kMaxTimeoutS = 86400;

absl::StatusOr<absl::Duration> Timeout(const char* field, double seconds) {
  if (std::isnan(seconds)) return absl::InvalidArgumentError(absl::StrCat(field, ": must be a number, got NaN"));
  if (seconds < 0) return absl::InvalidArgumentError(absl::StrCat(field, ": must not be negative, got ", seconds));
  if (seconds > kMaxTimeoutS) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be at most ", kMaxTimeoutS, " seconds (a day), got ", seconds));
  }
  return absl::Seconds(seconds);
}

std::string Text(const char* s) { return s == nullptr ? std::string() : std::string(s); }

// The buffers of a move, checked against the client's shape before the pointer arrays are read:
// a count is the caller's word for how far `home` and `slots` reach.
absl::StatusOr<taot::client::ExpertBuffers> Buffers(taot::client::Client& client, void* const* home, size_t num_home,
                                                    void* const* slots, size_t num_slots, size_t bytes) {
  const auto home_experts = static_cast<size_t>(client.options().experts / client.transport().size());
  if (num_home != home_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("home: must have E / R = ", home_experts, " buffers, got ", num_home));
  }
  const auto slots_per_rank = static_cast<size_t>(client.options().slots_per_rank);
  if (num_slots != slots_per_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("slots: must have K = ", slots_per_rank, " buffers (slots per rank), got ", num_slots));
  }
  if (home == nullptr && num_home > 0) return Null("home");
  if (slots == nullptr && num_slots > 0) return Null("slots");
  constexpr auto kMaxBytes = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  if (bytes > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes: must be at most ", kMaxBytes, " (the byte counters are int64_t), got ", bytes));
  }
  taot::client::ExpertBuffers b;
  b.bytes = bytes;
  b.home.assign(home, home + num_home);
  b.slots.assign(slots, slots + num_slots);
  return b;
}

template <typename Move>
taot_status RunMove(taot_client* client, const taot_plan* plan, void* const* home, size_t num_home, void* const* slots,
                    size_t num_slots, size_t bytes, double timeout_s, int64_t* bytes_sent, int64_t* bytes_received,
                    Move&& move) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (plan == nullptr) return Null("plan");
    absl::StatusOr<absl::Duration> timeout = Timeout("timeout_s", timeout_s);
    if (!timeout.ok()) return timeout.status();
    absl::StatusOr<taot::client::ExpertBuffers> buffers =
        Buffers(*client->client, home, num_home, slots, num_slots, bytes);
    if (!buffers.ok()) return buffers.status();
    taot::client::MovedBytes moved;
    if (absl::Status s = move(*buffers, *timeout, moved); !s.ok()) return s;
    if (bytes_sent != nullptr) *bytes_sent = moved.sent;
    if (bytes_received != nullptr) *bytes_received = moved.received;
    return absl::OkStatus();
  });
}

// num_tensors C tensors as the kernels' description, checked for count before `tensors` is read.
absl::StatusOr<taot::kernels::ExpertTensors> Tensors(const char* field, const taot_expert_tensor* tensors,
                                                     size_t num_tensors) {
  if (num_tensors < 1 || num_tensors > static_cast<size_t>(taot::kernels::kMaxTensors)) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_tensors: must be in [1, ", taot::kernels::kMaxTensors, "], got ", num_tensors));
  }
  if (tensors == nullptr) return Null(field);
  taot::kernels::ExpertTensors out;
  for (size_t k = 0; k < num_tensors; ++k) {
    taot::kernels::ExpertTensor& t = out.tensor[out.count++];
    t.base = tensors[k].base;
    t.expert_stride = tensors[k].expert_stride;
    t.chunks = tensors[k].chunks;
    t.chunk_bytes = tensors[k].chunk_bytes;
    t.chunk_stride = tensors[k].chunk_stride;
  }
  return out;
}

std::optional<uintptr_t> Stream(uintptr_t stream) {
  if (stream == TAOT_NO_STREAM) return std::nullopt;
  return stream;
}

// The plan's tables, uploaded when the plan differs from the last one's.
absl::StatusOr<const taot::client::LayerTables*> TablesFor(taot_client& client, const taot::Plan& plan) {
  if (!client.tables_plan.has_value() || *client.tables_plan != plan || !client.tables->loaded()) {
    client.tables_plan.reset();
    const taot::client::ClientOptions& o = client.client->options();
    if (absl::Status s = client.tables->Load(client.client->transport(), plan, o.experts, o.slots_per_rank); !s.ok()) {
      return s;
    }
    client.tables_plan = plan;
  }
  return client.tables.get();
}

// Runs a tensor-form start and hands out its pending moves and byte counts.
template <typename Start>
taot_status RunStart(taot_client* client, const taot_plan* plan, taot_pending** out, int64_t* bytes_sent,
                     int64_t* bytes_received, Start&& start) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (plan == nullptr) return Null("plan");
    if (out == nullptr) return Null("out");
    taot::client::MovedBytes moved;
    absl::StatusOr<std::unique_ptr<taot::client::PendingExchange>> pending = start(moved);
    if (!pending.ok()) return pending.status();
    *out = new taot_pending{*std::move(pending)};
    if (bytes_sent != nullptr) *bytes_sent = moved.sent;
    if (bytes_received != nullptr) *bytes_received = moved.received;
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

int taot_client_abi_version(void) { return TAOT_CLIENT_ABI_VERSION; }

const char* taot_last_error(void) { return last_error.c_str(); }

taot_status taot_gloo_connect(int rank, int size, const char* directory, const char* hostname, double timeout_s,
                              taot_transport** out) {
  return Call([&]() -> absl::Status {
    if (out == nullptr) return Null("out");
    if (directory == nullptr) return Null("directory");
    absl::StatusOr<absl::Duration> timeout = Timeout("timeout_s", timeout_s);
    if (!timeout.ok()) return timeout.status();
    taot::client::GlooOptions o;
    o.rank = rank;
    o.size = size;
    if (hostname != nullptr) o.hostname = hostname;
    o.timeout = *timeout;
    absl::StatusOr<std::unique_ptr<taot::client::Transport>> t =
        taot::client::ConnectGlooThroughDirectory(o, directory);
    if (!t.ok()) return t.status();
    *out = new taot_transport{std::shared_ptr<taot::client::Transport>(*std::move(t))};
    return absl::OkStatus();
  });
}

void taot_transport_destroy(taot_transport* transport) { delete transport; }

void taot_client_options_init(taot_client_options* o) {
  if (o == nullptr) return;
  *o = taot_client_options{};
  o->struct_size = sizeof(taot_client_options);
  o->slots_per_rank = 2;
  o->mode = "local";
  o->call_timeout_s = 1.0;
  o->placement_wait_s = 0.02;
  o->collective_timeout_s = 60.0;
  o->planner = "taot";
  o->connect_timeout_s = 10.0;
}

taot_status taot_client_create(const taot_client_options* options, taot_transport* transport, taot_client** out) {
  return Call([&]() -> absl::Status {
    if (options == nullptr) return Null("options");
    if (transport == nullptr) return Null("transport");
    if (out == nullptr) return Null("out");
    // Version 1 of the struct ended at `planner`: its callers get version 2's defaults for the rest.
    constexpr size_t kVersion1Size = offsetof(taot_client_options, connect_timeout_s);
    const bool version1 = options->struct_size == kVersion1Size;
    if (options->struct_size != sizeof(taot_client_options) && !version1) {
      return absl::InvalidArgumentError(absl::StrCat("options.struct_size: must be ", sizeof(taot_client_options),
                                                     " (call taot_client_options_init) or ", kVersion1Size,
                                                     " (ABI version 1), got ", options->struct_size));
    }
    taot::client::ClientOptions o;
    o.job_id = Text(options->job_id);
    o.experts = options->experts;
    o.slots_per_rank = options->slots_per_rank;
    o.expert_bytes = options->expert_bytes;
    o.node = Text(options->node);
    o.local_rank = options->local_rank;
    o.device = Text(options->device);
    absl::StatusOr<taot::client::Mode> mode = taot::client::ParseMode(Text(options->mode));
    if (!mode.ok()) return mode.status();
    o.mode = *mode;
    o.address = Text(options->address);
    o.token = Text(options->token);
    for (auto [field, seconds, duration] :
         {std::tuple{"options.call_timeout_s", options->call_timeout_s, &o.call_timeout},
          {"options.placement_wait_s", options->placement_wait_s, &o.placement_wait},
          {"options.collective_timeout_s", options->collective_timeout_s, &o.collective_timeout},
          {"options.connect_timeout_s", version1 ? 10.0 : options->connect_timeout_s, &o.connect_timeout}}) {
      absl::StatusOr<absl::Duration> timeout = Timeout(field, seconds);
      if (!timeout.ok()) return timeout.status();
      *duration = *timeout;
    }
    o.planner = options->planner == nullptr ? "taot" : options->planner;
    if (!version1) o.run_id = Text(options->run_id);
    absl::StatusOr<std::unique_ptr<taot::client::Client>> c = taot::client::Client::Create(o, transport->transport);
    if (!c.ok()) return c.status();
    const absl::Duration wait = o.collective_timeout;
    *out = new taot_client{*std::move(c),
                           std::make_unique<taot::client::MoveWorkspace>(wait),
                           std::make_unique<taot::client::MoveWorkspace>(wait),
                           std::make_unique<taot::client::LayerTables>(wait),
                           std::nullopt,
                           std::make_unique<taot::client::RerouteWorkspace>(wait)};
    return absl::OkStatus();
  });
}

void taot_client_destroy(taot_client* client) { delete client; }

taot_status taot_client_plan_layer(taot_client* client, int64_t step, int32_t layer, const int64_t* counts,
                                   size_t experts, taot_plan** out) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (counts == nullptr && experts > 0) return Null("counts");
    if (out == nullptr) return Null("out");
    // Before `counts` is read: `experts` says how far it reaches.
    const auto client_experts = static_cast<size_t>(client->client->options().experts);
    if (experts != client_experts) {
      return absl::InvalidArgumentError(
          absl::StrCat("experts: must be the client's E = ", client_experts, " (one count per expert), got ", experts));
    }
    absl::StatusOr<taot::client::LayerPlan> plan = client->client->PlanLayer(step, layer, {counts, experts});
    if (!plan.ok()) return plan.status();
    *out = new taot_plan{*std::move(plan)};
    return absl::OkStatus();
  });
}

void taot_plan_destroy(taot_plan* plan) { delete plan; }
uint64_t taot_plan_version(const taot_plan* plan) { return plan == nullptr ? 0 : plan->plan.identity.version; }
uint64_t taot_plan_hash(const taot_plan* plan) { return plan == nullptr ? 0 : plan->plan.identity.hash; }
const char* taot_plan_source(const taot_plan* plan) {
  return plan == nullptr ? "" : taot::ProvenanceName(plan->plan.identity.provenance);
}
size_t taot_plan_num_replicas(const taot_plan* plan) { return plan == nullptr ? 0 : plan->plan.plan.replicas.size(); }

taot_status taot_plan_replica(const taot_plan* plan, size_t index, int32_t* expert, int32_t* rank) {
  return Call([&]() -> absl::Status {
    if (plan == nullptr) return Null("plan");
    if (expert == nullptr) return Null("expert");
    if (rank == nullptr) return Null("rank");
    const auto& replicas = plan->plan.plan.replicas;
    if (index >= replicas.size()) {
      return absl::InvalidArgumentError(absl::StrCat("index: must be below ", replicas.size(), ", got ", index));
    }
    *expert = replicas[index].expert;
    *rank = replicas[index].rank;
    return absl::OkStatus();
  });
}

size_t taot_plan_guest_slots(const taot_plan* plan, int32_t rank, int32_t* experts, size_t capacity) {
  if (plan == nullptr) return 0;
  const std::vector<int> slots = taot::client::GuestSlots(plan->plan.plan, rank);
  for (size_t i = 0; i < slots.size() && i < capacity && experts != nullptr; ++i) experts[i] = slots[i];
  return slots.size();
}

taot_status taot_reroute(const taot_plan* plan, int32_t ranks, int32_t experts, int32_t rank, const int32_t* expert_ids,
                         size_t pairs, int32_t* dest_rank, int64_t* send_counts) {
  return Call([&]() -> absl::Status {
    if (plan == nullptr) return Null("plan");
    if (pairs > 0 && (expert_ids == nullptr || dest_rank == nullptr)) return Null("expert_ids, dest_rank");
    if (send_counts == nullptr) return Null("send_counts");
    absl::StatusOr<taot::client::RerouteTable> table =
        taot::client::RerouteTable::For(plan->plan.plan, ranks, experts, rank);
    if (!table.ok()) return table.status();
    return taot::client::Reroute(*table, {expert_ids, pairs}, {dest_rank, pairs},
                                 {send_counts, static_cast<size_t>(ranks)});
  });
}

taot_status taot_client_move_weights(taot_client* client, const taot_plan* plan, void* const* home, size_t num_home,
                                     void* const* slots, size_t num_slots, size_t bytes, double timeout_s,
                                     int64_t* bytes_sent, int64_t* bytes_received) {
  return RunMove(client, plan, home, num_home, slots, num_slots, bytes, timeout_s, bytes_sent, bytes_received,
                 [&](const taot::client::ExpertBuffers& buffers, absl::Duration timeout,
                     taot::client::MovedBytes& moved) -> absl::Status {
                   absl::StatusOr<std::unique_ptr<taot::client::PendingExchange>> pending =
                       taot::client::StartWeightMoves(client->client->transport(), plan->plan.plan,
                                                      client->client->options().experts, buffers, &moved);
                   if (!pending.ok()) return pending.status();
                   return (*pending)->Wait(timeout);
                 });
}

taot_status taot_client_return_gradients(taot_client* client, const taot_plan* plan, void* const* home, size_t num_home,
                                         void* const* slots, size_t num_slots, size_t bytes, double timeout_s,
                                         int64_t* bytes_sent, int64_t* bytes_received) {
  return RunMove(
      client, plan, home, num_home, slots, num_slots, bytes, timeout_s, bytes_sent, bytes_received,
      [&](const taot::client::ExpertBuffers& buffers, absl::Duration timeout, taot::client::MovedBytes& moved) {
        return taot::client::ReturnGradients(client->client->transport(), plan->plan.plan,
                                             client->client->options().experts, buffers, timeout, &moved);
      });
}

taot_status taot_client_plan_layer_from_ids(taot_client* client, int64_t step, int32_t layer, const void* ids,
                                            size_t pairs, int wide, uintptr_t stream, taot_plan** out) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (out == nullptr) return Null("out");
    if (pairs > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat("pairs: must fit an int64_t, got ", pairs));
    }
    absl::StatusOr<taot::client::LayerPlan> plan =
        client->client->PlanLayerFromIds(step, layer, {ids, static_cast<int64_t>(pairs), wide != 0}, Stream(stream));
    if (!plan.ok()) return plan.status();
    *out = new taot_plan{*std::move(plan)};
    return absl::OkStatus();
  });
}

taot_status taot_client_placement(taot_client* client, int64_t step, int32_t layer, double wait_s, taot_plan** out) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (out == nullptr) return Null("out");
    absl::StatusOr<absl::Duration> wait = Timeout("wait_s", wait_s);
    if (!wait.ok()) return wait.status();
    absl::StatusOr<std::optional<taot::Plan>> placement = client->client->Placement(step, layer, *wait);
    if (!placement.ok()) return placement.status();
    *out = nullptr;
    if (!placement->has_value()) return absl::OkStatus();
    taot::client::LayerPlan plan;
    plan.plan = **std::move(placement);
    plan.identity = {0, taot::PlanHash(plan.plan), taot::Provenance::kPushedReplicas,
                     "the placement, ahead of the layer"};
    *out = new taot_plan{std::move(plan)};
    return absl::OkStatus();
  });
}

static_assert(sizeof(taot_route_check) == sizeof(taot::kernels::RouteCheck) &&
              offsetof(taot_route_check, first_short_expert) ==
                  offsetof(taot::kernels::RouteCheck, first_short_expert));

taot_status taot_client_reroute_on_plane(taot_client* client, const taot_plan* plan, const int32_t* expert_ids,
                                         size_t pairs, int32_t* virtual_expert, int32_t* dest_rank,
                                         int64_t* send_counts, int64_t* order, taot_route_check* check,
                                         uintptr_t stream) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (plan == nullptr) return Null("plan");
    if (pairs > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat("pairs: must fit an int64_t, got ", pairs));
    }
    absl::StatusOr<const taot::client::LayerTables*> tables = TablesFor(*client, plan->plan.plan);
    if (!tables.ok()) return tables.status();
    const taot::client::RerouteOutputs outputs{virtual_expert, dest_rank, send_counts, order,
                                               reinterpret_cast<taot::kernels::RouteCheck*>(check)};
    return taot::client::StartReroute(client->client->transport(), **tables, expert_ids, static_cast<int64_t>(pairs),
                                      outputs, *client->reroute, Stream(stream));
  });
}

taot_status taot_client_reserve_reroute(taot_client* client, size_t max_pairs) {
  return Call([&]() -> absl::Status {
    if (client == nullptr) return Null("client");
    if (max_pairs > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat("max_pairs: must fit an int64_t, got ", max_pairs));
    }
    const taot::client::ClientOptions& o = client->client->options();
    return taot::client::ReserveRerouteWorkspace(client->client->transport(), o.experts, o.slots_per_rank,
                                                 static_cast<int64_t>(max_pairs), *client->reroute);
  });
}

taot_status taot_client_start_tensor_moves(taot_client* client, const taot_plan* plan, const taot_expert_tensor* home,
                                           const taot_expert_tensor* slots, size_t num_tensors, uintptr_t stream,
                                           taot_pending** out, int64_t* bytes_sent, int64_t* bytes_received) {
  return RunStart(
      client, plan, out, bytes_sent, bytes_received,
      [&](taot::client::MovedBytes& moved) -> absl::StatusOr<std::unique_ptr<taot::client::PendingExchange>> {
        taot::client::ExpertLayout layout;
        absl::StatusOr<taot::kernels::ExpertTensors> h = Tensors("home", home, num_tensors);
        if (!h.ok()) return h.status();
        absl::StatusOr<taot::kernels::ExpertTensors> k = Tensors("slots", slots, num_tensors);
        if (!k.ok()) return k.status();
        layout.home = *h;
        layout.slots = *k;
        absl::StatusOr<const taot::client::LayerTables*> tables = TablesFor(*client, plan->plan.plan);
        if (!tables.ok()) return tables.status();
        return taot::client::StartTensorMoves(client->client->transport(), **tables, layout, *client->weights,
                                              Stream(stream), &moved);
      });
}

taot_status taot_client_start_gradient_return(taot_client* client, const taot_plan* plan,
                                              const taot_expert_tensor* slot_grads, taot_grad_type slot_type,
                                              const taot_expert_tensor* home_grads, size_t num_tensors,
                                              uintptr_t stream, taot_pending** out, int64_t* bytes_sent,
                                              int64_t* bytes_received) {
  return RunStart(
      client, plan, out, bytes_sent, bytes_received,
      [&](taot::client::MovedBytes& moved) -> absl::StatusOr<std::unique_ptr<taot::client::PendingExchange>> {
        taot::client::GradientLayout layout;
        absl::StatusOr<taot::kernels::ExpertTensors> k = Tensors("slot_grads", slot_grads, num_tensors);
        if (!k.ok()) return k.status();
        absl::StatusOr<taot::kernels::ExpertTensors> h = Tensors("home_grads", home_grads, num_tensors);
        if (!h.ok()) return h.status();
        layout.slots = *k;
        layout.home = *h;
        layout.slot_type = static_cast<taot::kernels::GradType>(slot_type);
        absl::StatusOr<const taot::client::LayerTables*> tables = TablesFor(*client, plan->plan.plan);
        if (!tables.ok()) return tables.status();
        return taot::client::StartGradientReturn(client->client->transport(), **tables, layout, *client->gradients,
                                                 Stream(stream), &moved);
      });
}

taot_status taot_pending_wait(taot_pending* pending, double timeout_s) {
  return Call([&]() -> absl::Status {
    if (pending == nullptr) return Null("pending");
    absl::StatusOr<absl::Duration> timeout = Timeout("timeout_s", timeout_s);
    if (!timeout.ok()) return timeout.status();
    return pending->pending->Wait(*timeout);
  });
}

void taot_pending_destroy(taot_pending* pending) { delete pending; }

taot_status taot_nccl_unique_id(char id[128]) {
  return Call([&]() -> absl::Status {
    if (id == nullptr) return Null("id");
#if TAOT_WITH_NCCL
    absl::StatusOr<taot::client::NcclUniqueId> made = taot::client::NewNcclUniqueId();
    if (!made.ok()) return made.status();
    std::memcpy(id, made->data(), made->size());
    return absl::OkStatus();
#else
    return absl::UnavailableError("this libtaot_client was built without NCCL");
#endif
  });
}

taot_status taot_nccl_connect(int rank, int size, int device, const char id[128], uintptr_t side_stream,
                              double timeout_s, taot_transport** out) {
  return Call([&]() -> absl::Status {
    if (out == nullptr) return Null("out");
    if (id == nullptr) return Null("id");
    absl::StatusOr<absl::Duration> timeout = Timeout("timeout_s", timeout_s);
    if (!timeout.ok()) return timeout.status();
#if TAOT_WITH_NCCL
    taot::client::NcclOptions o;
    o.rank = rank;
    o.size = size;
    o.device = device;
    std::memcpy(o.id.data(), id, o.id.size());
    o.stream = side_stream;
    o.timeout = *timeout;
    absl::StatusOr<std::unique_ptr<taot::client::Transport>> t = taot::client::ConnectNccl(o);
    if (!t.ok()) return t.status();
    *out = new taot_transport{std::shared_ptr<taot::client::Transport>(*std::move(t))};
    return absl::OkStatus();
#else
    std::ignore = rank, std::ignore = size, std::ignore = device, std::ignore = side_stream;
    return absl::UnavailableError("this libtaot_client was built without NCCL");
#endif
  });
}

}  // extern "C"
