// The extension `taot._taot`, re-exported by the package `taot` (python/taot/__init__.py):
// libtaot_client for trainers in Python. It takes NumPy arrays, and tensors' memory as raw
// addresses (tensor.data_ptr()), so it never links libtorch (taot.torch is pure Python over it).
// Blocking calls release the GIL. Errors raise ValueError (bad input, nothing changed) or
// RuntimeError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "gloo/rendezvous/store.h"
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

namespace py = pybind11;

namespace taot::client {
namespace {

template <typename T>
T Unwrap(absl::StatusOr<T> value) {
  if (value.ok()) return *std::move(value);
  if (value.status().code() == absl::StatusCode::kInvalidArgument)
    throw py::value_error(std::string(value.status().message()));
  throw std::runtime_error(std::string(value.status().message()));
}

void Check(const absl::Status& status) {
  Unwrap(absl::StatusOr<bool>(status.ok() ? absl::StatusOr<bool>(true) : status));
}

// A timeout argument in seconds: a number in [0, a year], else ValueError naming the argument.
absl::Duration Seconds(double s, const char* name) {
  if (!(s >= 0 && s <= 365 * 86400.0)) {
    throw py::value_error(std::string(name) + ": must be a number of seconds in [0, 31536000], got " +
                          py::repr(py::float_(s)).cast<std::string>());
  }
  return absl::Milliseconds(static_cast<int64_t>(s * 1000));
}

std::vector<void*> Pointers(const std::vector<uintptr_t>& addresses) {
  std::vector<void*> out;
  for (uintptr_t a : addresses) out.push_back(reinterpret_cast<void*>(a));
  return out;
}

// A client with the transport it plans over, so that weight moves use the same peers, and the
// tensor form's workspaces (one per direction).
struct PyClient {
  std::unique_ptr<Client> client;  // null once closed
  // Kept past close(): moves already started still use it.
  std::shared_ptr<Transport> transport;
  std::unique_ptr<MoveWorkspace> weights = std::make_unique<MoveWorkspace>();
  std::unique_ptr<MoveWorkspace> gradients = std::make_unique<MoveWorkspace>();
  // The last plan's tables, loaded once for its moves and its gradients.
  std::unique_ptr<LayerTables> tables = std::make_unique<LayerTables>();
  std::optional<Plan> tables_plan;
  std::unique_ptr<RerouteWorkspace> reroute = std::make_unique<RerouteWorkspace>();

  Client& Open() {
    if (client == nullptr) throw std::runtime_error("taot.Client: closed (close() was called); create a new Client");
    return *client;
  }

  const LayerTables& TablesFor(const Plan& plan) {
    if (!tables_plan.has_value() || *tables_plan != plan || !tables->loaded()) {
      tables_plan.reset();
      Client& open = Open();
      Check(tables->Load(open.transport(), plan, open.options().experts, open.options().slots_per_rank));
      tables_plan = plan;
    }
    return *tables;
  }
};

// (address, expert_stride, chunks, chunk_bytes, chunk_stride) per tensor, as the kernels take it.
using TensorTuple = std::tuple<uintptr_t, int64_t, int64_t, int64_t, int64_t>;
kernels::ExpertTensors Tensors(const std::vector<TensorTuple>& tensors, const char* name) {
  if (tensors.empty() || tensors.size() > static_cast<size_t>(kernels::kMaxTensors)) {
    throw py::value_error(std::string(name) + ": must list 1 to " + std::to_string(kernels::kMaxTensors) +
                          " tensors, got " + std::to_string(tensors.size()));
  }
  kernels::ExpertTensors out;
  for (const auto& [address, expert_stride, chunks, chunk_bytes, chunk_stride] : tensors) {
    kernels::ExpertTensor& t = out.tensor[out.count++];
    t.base = reinterpret_cast<void*>(address);
    t.expert_stride = expert_stride;
    t.chunks = chunks;
    t.chunk_bytes = chunk_bytes;
    t.chunk_stride = chunk_stride;
  }
  return out;
}

// The plan's weight moves for this rank, started (the GIL is released by the caller).
std::unique_ptr<PendingExchange> StartMoves(PyClient& c, const LayerPlan& plan, const std::vector<uintptr_t>& home,
                                            const std::vector<uintptr_t>& slots, size_t nbytes, MovedBytes* moved) {
  const ExpertBuffers buffers{nbytes, Pointers(home), Pointers(slots)};
  Client& client = c.Open();
  return Unwrap(StartWeightMoves(client.transport(), plan.plan, client.options().experts, buffers, moved));
}

// A Gloo rendezvous store over a Python key-value store with torch.distributed.Store's methods
// (set, get, wait), every key under `prefix`. Gloo calls it from a thread that released the GIL;
// a Python error becomes a C++ one (the transport reports it by name) with the GIL still held.
class PythonStore final : public gloo::rendezvous::Store {
 public:
  PythonStore(py::object store, std::string prefix) : store_(std::move(store)), prefix_(std::move(prefix)) {}
  ~PythonStore() override {
    py::gil_scoped_acquire gil;
    store_ = py::object();
  }

  void set(const std::string& key, const std::vector<char>& data) override {
    Call([&] { store_.attr("set")(prefix_ + key, py::bytes(data.data(), data.size())); });
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<char> out;
    Call([&] {
      const std::string value = store_.attr("get")(prefix_ + key).cast<std::string>();
      out.assign(value.begin(), value.end());
    });
    return out;
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    Call([&] {
      py::list prefixed;
      for (const std::string& k : keys) prefixed.append(prefix_ + k);
      store_.attr("wait")(prefixed,
                          py::module_::import("datetime").attr("timedelta")(py::arg("milliseconds") = timeout.count()));
    });
  }

 private:
  template <typename F>
  void Call(F&& f) {
    py::gil_scoped_acquire gil;
    try {
      f();
    } catch (py::error_already_set& e) {
      throw std::runtime_error(std::string("the rendezvous store: ") + e.what());
    }
  }

  py::object store_;
  std::string prefix_;
};

py::dict Stats(const ClientStats& s) {
  py::dict d;
  d["layers"] = s.layers;
  d["daemon_plans"] = s.daemon_plans;
  d["placement_plans"] = s.placement_plans;
  d["local_plans"] = s.local_plans;
  d["daemon_failures"] = s.daemon_failures;
  d["disagreements"] = s.disagreements;
  return d;
}

}  // namespace
}  // namespace taot::client

PYBIND11_MODULE(_taot, m) {
  using namespace taot::client;
  m.doc() = "taot: topology-aware expert replication for MoE training (libtaot_client)";

  py::class_<Transport, std::shared_ptr<Transport>>(m, "Transport", "Ranks connected for taot's collectives and moves")
      .def_property_readonly("rank", &Transport::rank)
      .def_property_readonly("size", &Transport::size);

  m.def(
      "connect_gloo",
      [](int rank, int size, const std::string& directory, const std::string& hostname, double timeout_s) {
        GlooOptions o;
        o.rank = rank;
        o.size = size;
        o.hostname = hostname;
        o.timeout = Seconds(timeout_s, "timeout_s");
        py::gil_scoped_release release;
        return std::shared_ptr<Transport>(Unwrap(ConnectGlooThroughDirectory(o, directory)));
      },
      py::arg("rank"), py::arg("size"), py::arg("directory"), py::arg("hostname") = "127.0.0.1",
      py::arg("timeout_s") = 60.0,
      "Connects this rank to the others over TCP (Gloo); the rendezvous goes through `directory`, "
      "which every rank must see.");

  m.def(
      "connect_store",
      [](int rank, int size, py::object store, const std::string& prefix, const std::string& hostname,
         double timeout_s) {
        for (const char* method : {"set", "get", "wait"}) {
          if (!py::hasattr(store, method)) {
            throw py::value_error(std::string("store: must have set, get and wait (a torch.distributed.Store); it "
                                              "has no ") +
                                  method);
          }
        }
        GlooOptions o;
        o.rank = rank;
        o.size = size;
        o.hostname = hostname;
        o.timeout = Seconds(timeout_s, "timeout_s");
        PythonStore adapter(std::move(store), prefix);
        py::gil_scoped_release release;
        return std::shared_ptr<Transport>(Unwrap(ConnectGlooThroughStore(o, adapter)));
      },
      py::arg("rank"), py::arg("size"), py::arg("store"), py::arg("prefix"), py::arg("hostname") = "127.0.0.1",
      py::arg("timeout_s") = 60.0,
      "connect_gloo with the rendezvous through a key-value store every rank reaches (a torch.distributed.Store, "
      "e.g. the process group's), every key under `prefix`: a prefix no earlier run used gives a fresh rendezvous "
      "with no files left behind.");

#if TAOT_WITH_NCCL
  m.def(
      "nccl_unique_id",
      [] {
        NcclUniqueId id = Unwrap(NewNcclUniqueId());
        return py::bytes(id.data(), id.size());
      },
      "A new NCCL unique id (bytes), made on one rank and handed to all (e.g. by the trainer's broadcast).");
  m.def(
      "connect_nccl",
      [](int rank, int size, int device, const py::bytes& unique_id, uintptr_t stream, double timeout_s) {
        const std::string id = unique_id;
        NcclOptions o;
        if (id.size() != o.id.size()) throw py::value_error("unique_id: must be the 128 bytes of nccl_unique_id()");
        std::copy(id.begin(), id.end(), o.id.begin());
        o.rank = rank;
        o.size = size;
        o.device = device;
        o.stream = stream;
        o.timeout = Seconds(timeout_s, "timeout_s");
        py::gil_scoped_release release;
        return std::shared_ptr<Transport>(Unwrap(ConnectNccl(o)));
      },
      py::arg("rank"), py::arg("size"), py::arg("device"), py::arg("unique_id"), py::arg("stream") = 0,
      py::arg("timeout_s") = 60.0,
      "Connects over NCCL with a communicator of taot's own on `device`; moves run on `stream` (a cudaStream_t as an "
      "integer, e.g. torch.cuda.Stream().cuda_stream; 0: a stream of its own). Buffers are device addresses.");
#endif
#if TAOT_WITH_NCCL
  m.attr("has_nccl") = true;
#else
  m.attr("has_nccl") = false;
#endif

  py::class_<PendingExchange>(m, "PendingMove", "Weight moves under way")
      .def(
          "wait",
          [](PendingExchange& p, double timeout_s) {
            const absl::Duration timeout = Seconds(timeout_s, "timeout_s");  // raises with the GIL held
            py::gil_scoped_release release;
            Check(p.Wait(timeout));
          },
          py::arg("timeout_s") = 60.0, "Blocks until every send and receive is done, or fails after timeout_s.");

  py::class_<LayerPlan>(m, "LayerPlan", "The plan every rank applies to one layer")
      .def_property_readonly(
          "source", [](const LayerPlan& p) { return std::string(taot::ProvenanceName(p.identity.provenance)); })
      .def_property_readonly("reason", [](const LayerPlan& p) { return p.identity.reason; })
      .def_property_readonly("version", [](const LayerPlan& p) { return p.identity.version; })
      .def_property_readonly("plan_seconds", [](const LayerPlan& p) { return absl::ToDoubleSeconds(p.plan_time); })
      .def_property_readonly("hash", [](const LayerPlan& p) { return p.identity.hash; })
      .def_property_readonly(
          "replicas",
          [](const LayerPlan& p) {
            std::vector<std::pair<int, int>> out;
            for (const taot::Replica& r : p.plan.replicas) out.emplace_back(r.expert, r.rank);
            return out;
          },
          "(expert, guest rank) pairs")
      .def_property_readonly(
          "assignments",
          [](const LayerPlan& p) {
            py::array_t<int64_t> out({static_cast<py::ssize_t>(p.plan.assignments.size()), py::ssize_t{4}});
            auto v = out.mutable_unchecked<2>();
            for (size_t i = 0; i < p.plan.assignments.size(); ++i) {
              const taot::Assignment& a = p.plan.assignments[i];
              v(i, 0) = a.source;
              v(i, 1) = a.expert;
              v(i, 2) = a.rank;
              v(i, 3) = a.tokens;
            }
            return out;
          },
          "rows of (source, expert, guest rank, tokens)")
      .def(
          "guest_slots", [](const LayerPlan& p, int rank) { return GuestSlots(p.plan, rank); }, py::arg("rank"),
          "The expert in each of `rank`'s guest slots, slot order");

  m.def(
      "reroute",
      [](const LayerPlan& plan, int ranks, int experts, int rank,
         py::array_t<int32_t, py::array::c_style | py::array::forcecast> expert_ids) {
        if (expert_ids.ndim() != 1)
          throw py::value_error("expert_ids: must be one-dimensional (one entry per routed pair)");
        RerouteTable table = Unwrap(RerouteTable::For(plan.plan, ranks, experts, rank));
        py::array_t<int32_t> dest(expert_ids.shape(0));
        py::array_t<int64_t> sends(ranks);
        Check(Reroute(table, std::span<const int32_t>(expert_ids.data(), static_cast<size_t>(expert_ids.shape(0))),
                      std::span<int32_t>(dest.mutable_data(), static_cast<size_t>(dest.shape(0))),
                      std::span<int64_t>(sends.mutable_data(), static_cast<size_t>(ranks))));
        return py::make_tuple(dest, sends);
      },
      py::arg("plan"), py::arg("ranks"), py::arg("experts"), py::arg("rank"), py::arg("expert_ids"),
      "Destination rank of each of this rank's routed pairs (home or guest, honouring the plan's counts), and the "
      "pairs sent to each rank. Returns (dest_rank int32[n], send_counts int64[ranks]).");

  py::class_<PyClient>(m, "Client", "A rank's taot client: plans, agreement, weight moves, gradient return")
      .def(py::init([](std::shared_ptr<Transport> transport, int experts, const std::string& node,
                       const std::string& mode, const std::string& address, const std::string& job_id,
                       int slots_per_rank, int64_t expert_bytes, const std::string& token, double call_timeout_s,
                       double placement_wait_s, double collective_timeout_s, const std::string& planner,
                       const std::map<std::string, std::string>& params, const std::string& tls_ca,
                       const std::string& tls_cert, const std::string& tls_key, double connect_timeout_s,
                       const std::string& run_id) {
             ClientOptions o;
             o.experts = experts;
             o.node = node;
             o.mode = Unwrap(ParseMode(mode));
             o.address = address;
             o.job_id = job_id;
             o.slots_per_rank = slots_per_rank;
             o.expert_bytes = expert_bytes;
             o.token = token;
             o.call_timeout = Seconds(call_timeout_s, "call_timeout_s");
             o.connect_timeout = Seconds(connect_timeout_s, "connect_timeout_s");
             o.run_id = run_id;
             o.placement_wait = Seconds(placement_wait_s, "placement_wait_s");
             o.collective_timeout = Seconds(collective_timeout_s, "collective_timeout_s");
             o.planner = planner;
             o.params = params;
             o.tls_ca = tls_ca;
             o.tls_cert = tls_cert;
             o.tls_key = tls_key;
             py::gil_scoped_release release;
             PyClient c;
             c.transport = transport;
             c.client = Unwrap(Client::Create(o, std::move(transport)));
             return c;
           }),
           py::arg("transport"), py::arg("experts"), py::arg("node"), py::arg("mode") = "local",
           py::arg("address") = "", py::arg("job_id") = "", py::arg("slots_per_rank") = 2, py::arg("expert_bytes") = 0,
           py::arg("token") = "", py::arg("call_timeout_s") = 1.0, py::arg("placement_wait_s") = 0.02,
           py::arg("collective_timeout_s") = 60.0, py::arg("planner") = "taot",
           py::arg("params") = std::map<std::string, std::string>{}, py::arg("tls_ca") = "", py::arg("tls_cert") = "",
           py::arg("tls_key") = "", py::arg("connect_timeout_s") = 10.0, py::arg("run_id") = "",
           "connect_timeout_s bounds connecting and registering (tried again with back-off within it); run_id "
           "names this run of the job (the same on every rank; default: drawn by rank 0), so that a restarted "
           "or resumed trainer's steps start over at the daemon")
      .def(
          "plan_layer",
          [](PyClient& c, int64_t step, int layer,
             py::array_t<int64_t, py::array::c_style | py::array::forcecast> counts) {
            if (counts.ndim() != 1) throw py::value_error("counts: must be one-dimensional (tokens per expert)");
            std::span<const int64_t> row(counts.data(), static_cast<size_t>(counts.shape(0)));
            py::gil_scoped_release release;
            return Unwrap(c.Open().PlanLayer(step, layer, row));
          },
          py::arg("step"), py::arg("layer"), py::arg("counts"),
          "The plan for (step, layer) from this rank's routed pairs per expert; the same on every rank.")
      .def(
          "plan_layer_from_ids",
          [](PyClient& c, int64_t step, int layer, uintptr_t ids, int64_t pairs, bool wide,
             std::optional<uintptr_t> stream) {
            py::gil_scoped_release release;
            return Unwrap(
                c.Open().PlanLayerFromIds(step, layer, {reinterpret_cast<const void*>(ids), pairs, wide}, stream));
          },
          py::arg("step"), py::arg("layer"), py::arg("ids"), py::arg("pairs"), py::arg("wide") = false,
          py::arg("stream") = py::none(),
          "plan_layer from the router's top-k ids where they lie (ids: their address, tensor.data_ptr(); device "
          "memory on NCCL, host memory on Gloo): pairs ids, int64 when wide else int32. Counted on the transport's "
          "side stream after the work on stream (the trainer's CUDA stream as an integer), gathered there and "
          "copied to the host once.")
      .def(
          "placement",
          [](PyClient& c, int64_t step, int layer, double wait_s) -> std::optional<LayerPlan> {
            const absl::Duration wait = Seconds(wait_s, "wait_s");
            py::gil_scoped_release release;
            std::optional<taot::Plan> placement = Unwrap(c.Open().Placement(step, layer, wait));
            if (!placement.has_value()) return std::nullopt;
            LayerPlan out;
            out.plan = *std::move(placement);
            out.identity = {0, taot::PlanHash(out.plan), taot::Provenance::kPushedReplicas,
                            "the placement, ahead of the layer"};
            return out;
          },
          py::arg("step"), py::arg("layer"), py::arg("wait_s") = 0.0,
          "Predictive mode: the daemon's placement for (step, layer) once every rank has it (else None), as a plan "
          "of replicas only: pass it to start_tensor_moves right after the optimizer step to move the layer's "
          "weights ahead of it; plan_layer at (step, layer) then splits over the same replicas. A collective.")
      .def(
          "reroute_on_plane",
          [](PyClient& c, const LayerPlan& plan, uintptr_t ids, int64_t pairs, uintptr_t virtual_expert,
             uintptr_t dest_rank, uintptr_t send_counts, uintptr_t order, uintptr_t check,
             std::optional<uintptr_t> stream) {
            const RerouteOutputs outputs{reinterpret_cast<int32_t*>(virtual_expert),
                                         reinterpret_cast<int32_t*>(dest_rank), reinterpret_cast<int64_t*>(send_counts),
                                         reinterpret_cast<int64_t*>(order),
                                         reinterpret_cast<taot::kernels::RouteCheck*>(check)};
            py::gil_scoped_release release;
            const LayerTables& tables = c.TablesFor(plan.plan);
            Check(StartReroute(c.Open().transport(), tables, reinterpret_cast<const int32_t*>(ids), pairs, outputs,
                               *c.reroute, stream));
          },
          py::arg("plan"), py::arg("ids"), py::arg("pairs"), py::arg("virtual_expert"), py::arg("dest_rank"),
          py::arg("send_counts"), py::arg("order"), py::arg("check"), py::arg("stream") = py::none(),
          "The reroute where the ids lie (plane_reroute.h), every argument an address (tensor.data_ptr()) in the "
          "transport's memory: pairs int32 ids in; per pair its virtual expert id and rank (int32), per rank the "
          "pairs sent (int64), the stable send order (int64 per pair), and check: 16 bytes, int64 first bad pair "
          "(pairs when none) then int32 first short expert (E when none). On NCCL it runs on the side stream after "
          "the work on stream, which then waits for it.")
      .def(
          "reserve_reroute",
          [](PyClient& c, int64_t max_pairs) {
            Client& client = c.Open();  // raises with the GIL held
            const ClientOptions& o = client.options();
            py::gil_scoped_release release;
            Check(ReserveRerouteWorkspace(client.transport(), o.experts, o.slots_per_rank, max_pairs, *c.reroute));
          },
          py::arg("max_pairs"),
          "Sizes reroute_on_plane's workspace now for layers of up to max_pairs pairs, so that no later reroute of "
          "at most that many allocates or waits on the host (what a CUDA graph that captures it needs).")
      .def(
          "move_weights",
          [](PyClient& c, const LayerPlan& plan, const std::vector<uintptr_t>& home,
             const std::vector<uintptr_t>& slots, size_t nbytes, double timeout_s) {
            const absl::Duration timeout = Seconds(timeout_s, "timeout_s");  // raises with the GIL held
            MovedBytes moved;
            py::gil_scoped_release release;
            Check(StartMoves(c, plan, home, slots, nbytes, &moved)->Wait(timeout));
            return std::pair{moved.sent, moved.received};
          },
          py::arg("plan"), py::arg("home"), py::arg("slots"), py::arg("nbytes"), py::arg("timeout_s") = 60.0,
          "Sends this rank's replicated home experts to their guests and receives its replicas into its slots. home: "
          "E/R addresses, slots: K addresses, each a contiguous buffer of nbytes. Returns (bytes sent, bytes "
          "received).")
      .def(
          "start_weight_moves",
          [](PyClient& c, const LayerPlan& plan, const std::vector<uintptr_t>& home,
             const std::vector<uintptr_t>& slots, size_t nbytes) {
            py::gil_scoped_release release;
            return StartMoves(c, plan, home, slots, nbytes, nullptr);
          },
          py::arg("plan"), py::arg("home"), py::arg("slots"), py::arg("nbytes"),
          "move_weights without waiting: returns a PendingMove; the buffers must live until its wait() returns.")
      .def(
          "return_gradients",
          [](PyClient& c, const LayerPlan& plan, const std::vector<uintptr_t>& home,
             const std::vector<uintptr_t>& slots, size_t nbytes, double timeout_s) {
            ExpertBuffers buffers{nbytes, Pointers(home), Pointers(slots)};
            const absl::Duration timeout = Seconds(timeout_s, "timeout_s");  // raises with the GIL held
            MovedBytes moved;
            py::gil_scoped_release release;
            Client& client = c.Open();
            Check(ReturnGradients(client.transport(), plan.plan, client.options().experts, buffers, timeout, &moved));
            return std::pair{moved.sent, moved.received};
          },
          py::arg("plan"), py::arg("home"), py::arg("slots"), py::arg("nbytes"), py::arg("timeout_s") = 60.0,
          "Sends the slots' float32 gradients home; adds the ones received to the home experts' gradients.")
      .def(
          "start_tensor_moves",
          [](PyClient& c, const LayerPlan& plan, const std::vector<TensorTuple>& home,
             const std::vector<TensorTuple>& slots, std::optional<uintptr_t> stream) {
            ExpertLayout layout{Tensors(home, "home"), Tensors(slots, "slots")};
            MovedBytes moved;
            py::gil_scoped_release release;
            const LayerTables& tables = c.TablesFor(plan.plan);
            std::unique_ptr<PendingExchange> pending =
                Unwrap(StartTensorMoves(c.Open().transport(), tables, layout, *c.weights, stream, &moved));
            return std::tuple{std::move(pending), moved.sent, moved.received};
          },
          py::arg("plan"), py::arg("home"), py::arg("slots"), py::arg("stream") = py::none(),
          "The tensor form of the weight moves (tensor_exchange.h): home and slots list 1 to 8 tensors as "
          "(data_ptr, expert_stride, chunks, chunk_bytes, chunk_stride) in bytes, over the E/R home experts and the "
          "K slots; tensor k holds the same bytes per expert on both sides. stream: the trainer's CUDA stream "
          "(torch.cuda.current_stream().cuda_stream); on NCCL the moves are enqueued on taot's side stream after the "
          "work already on it, and it waits for them. Returns (PendingMove, bytes sent, bytes received); wait() on a "
          "host transport before the next call, on NCCL it checks the moves finished.")
      .def(
          "start_gradient_return",
          [](PyClient& c, const LayerPlan& plan, const std::vector<TensorTuple>& slot_grads,
             const std::string& slot_dtype, const std::vector<TensorTuple>& home_grads,
             std::optional<uintptr_t> stream) {
            taot::kernels::GradType type;
            if (slot_dtype == "float32") {
              type = taot::kernels::GradType::kFloat32;
            } else if (slot_dtype == "bfloat16") {
              type = taot::kernels::GradType::kBfloat16;
            } else {
              throw py::value_error("slot_dtype: must be 'float32' or 'bfloat16', got '" + slot_dtype + "'");
            }
            GradientLayout layout{Tensors(slot_grads, "slot_grads"), type, Tensors(home_grads, "home_grads")};
            MovedBytes moved;
            py::gil_scoped_release release;
            const LayerTables& tables = c.TablesFor(plan.plan);
            std::unique_ptr<PendingExchange> pending =
                Unwrap(StartGradientReturn(c.Open().transport(), tables, layout, *c.gradients, stream, &moved));
            return std::tuple{std::move(pending), moved.sent, moved.received};
          },
          py::arg("plan"), py::arg("slot_grads"), py::arg("slot_dtype"), py::arg("home_grads"),
          py::arg("stream") = py::none(),
          "The slots' gradients (slot_dtype 'float32' or 'bfloat16') home, added into the home experts' float32 "
          "gradients (main_grad) in ascending guest order; tensors as in start_tensor_moves. Returns (PendingMove, "
          "bytes sent, bytes received).")
      .def("stats", [](PyClient& c) { return Stats(c.Open().stats()); })
      .def(
          "close",
          [](PyClient& c) {
            // Taken while the GIL is held, so a call after this one finds the client closed; the
            // daemon link's threads are joined (its queued reports sent, within one call timeout)
            // without the GIL, which nothing they do needs.
            std::unique_ptr<Client> closing = std::move(c.client);
            py::gil_scoped_release release;
            closing.reset();
          },
          "Ends the client now rather than whenever Python frees it: stops its threads (reports still queued "
          "for the daemon go out within one call timeout) and releases its channel. Idempotent; any other "
          "call after it raises RuntimeError. The transport and moves already started are not affected.");
}
