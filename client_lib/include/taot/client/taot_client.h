/* The C ABI of libtaot_client, for trainers in other languages.
 *
 * Opaque handles; every call returns a taot_status (absl's codes: 0 is OK) and, on failure,
 * leaves a message naming the bad field for taot_last_error(). Nothing is changed by a failed
 * call, and no exception crosses this boundary (running out of memory is
 * TAOT_RESOURCE_EXHAUSTED). Every count is a size_t and is checked whole against the client's
 * shape before the array it describes is read (E counts, E / R home buffers, K slots); every
 * timeout is a number of seconds in [0, 86400] (NaN, infinities and larger are refused). Handles are not shared between
 * threads without the caller's own locking; taot_last_error is per thread.
 *
 *   taot_transport* t;  taot_gloo_connect(rank, size, "/shared/rendezvous", "10.0.0.5", 60, &t);
 *   taot_client_options o;  taot_client_options_init(&o);  o.experts = 64; o.node = hostname; ...
 *   taot_client* c;  taot_client_create(&o, t, &c);
 *   per MoE layer:  taot_client_plan_layer(c, step, layer, counts, experts, &plan);
 *                   taot_client_move_weights(c, plan, home, E/R, slots, K, bytes, 60, NULL, NULL);
 *                   taot_reroute(plan, R, E, rank, expert_ids, pairs, dest_rank, send_counts);
 *                   ... the trainer's all-to-all, experts, all-to-all back, backward ...
 *                   taot_client_return_gradients(c, plan, home_grads, E/R, slot_grads, K, bytes, 60, NULL, NULL);
 *                   taot_plan_destroy(plan);
 */
#ifndef TAOT_CLIENT_H_
#define TAOT_CLIENT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TAOT_CLIENT_ABI_VERSION 4

typedef enum taot_status {
  TAOT_OK = 0,
  TAOT_CANCELLED = 1,
  TAOT_UNKNOWN = 2,
  TAOT_INVALID_ARGUMENT = 3,
  TAOT_DEADLINE_EXCEEDED = 4,
  TAOT_NOT_FOUND = 5,
  TAOT_RESOURCE_EXHAUSTED = 8,
  TAOT_FAILED_PRECONDITION = 9,
  TAOT_INTERNAL = 13,
  TAOT_UNAVAILABLE = 14,
  TAOT_DATA_LOSS = 15
} taot_status;

/* The ABI version this library implements (TAOT_CLIENT_ABI_VERSION when built). */
int taot_client_abi_version(void);
/* The calling thread's last failure message; "" after a success. Valid until its next call. */
const char* taot_last_error(void);

typedef struct taot_transport taot_transport;
typedef struct taot_client taot_client;
typedef struct taot_plan taot_plan;

/* Connects rank `rank` of `size` over TCP (Gloo); the rendezvous goes through `directory`, which
 * every rank must see; `hostname` is this rank's address for its peers. */
taot_status taot_gloo_connect(int rank, int size, const char* directory, const char* hostname, double timeout_s,
                              taot_transport** out);
/* A client keeps what it needs of its transport: either may be destroyed first. NULL is a no-op. */
void taot_transport_destroy(taot_transport* transport);

typedef struct taot_client_options {
  size_t struct_size; /* sizeof(taot_client_options), set by taot_client_options_init */
  const char* job_id;
  int experts;
  int slots_per_rank;
  int64_t expert_bytes;
  const char* node; /* this rank's host or node name */
  int local_rank;
  const char* device;
  const char* mode;    /* "remote", "predictive" or "local" */
  const char* address; /* the daemon, "host:port"; NULL or "" for none */
  const char* token;
  double call_timeout_s;
  double placement_wait_s;
  double collective_timeout_s;
  const char* planner; /* the in-process planner, "taot" */
  /* Added in ABI version 2; a struct_size that ends before them (version 1) takes the defaults. */
  double connect_timeout_s; /* connecting and registering with the daemon, 10 s */
  const char* run_id;       /* this run of the job, the same on every rank; NULL or "": rank 0 draws one */
} taot_client_options;

/* The defaults: local mode, 2 slots, the taot planner, timeouts 1 s / 20 ms / 60 s, connect 10 s. */
void taot_client_options_init(taot_client_options* options);
taot_status taot_client_create(const taot_client_options* options, taot_transport* transport, taot_client** out);
void taot_client_destroy(taot_client* client);

/* The plan for (step, layer) from this rank's routed pairs per expert (`experts` counts); the
 * same on every rank. Every rank calls it for the same (step, layer)s in the same order. */
taot_status taot_client_plan_layer(taot_client* client, int64_t step, int32_t layer, const int64_t* counts,
                                   size_t experts, taot_plan** out);
void taot_plan_destroy(taot_plan* plan);
uint64_t taot_plan_version(const taot_plan* plan);
uint64_t taot_plan_hash(const taot_plan* plan);
/* "daemon", "placement", "local" or "none". */
const char* taot_plan_source(const taot_plan* plan);
size_t taot_plan_num_replicas(const taot_plan* plan);
taot_status taot_plan_replica(const taot_plan* plan, size_t index, int32_t* expert, int32_t* rank);
/* The experts in `rank`'s guest slots, slot order: returns how many; writes up to `capacity`. */
size_t taot_plan_guest_slots(const taot_plan* plan, int32_t rank, int32_t* experts, size_t capacity);

/* Destination rank of each of this rank's `pairs` routed pairs, and pairs per destination
 * (`send_counts` has `ranks` entries). */
taot_status taot_reroute(const taot_plan* plan, int32_t ranks, int32_t experts, int32_t rank, const int32_t* expert_ids,
                         size_t pairs, int32_t* dest_rank, int64_t* send_counts);

/* Weights to their guests' slots (each expert one contiguous buffer of `bytes`): `home` has E/R
 * buffers, `slots` K (exactly: other counts are refused). Blocks until done or `timeout_s`. The byte counters may be
 * NULL. */
taot_status taot_client_move_weights(taot_client* client, const taot_plan* plan, void* const* home, size_t num_home,
                                     void* const* slots, size_t num_slots, size_t bytes, double timeout_s,
                                     int64_t* bytes_sent, int64_t* bytes_received);
/* Slots' float32 gradients home, added to the home experts' gradients in ascending guest order. */
taot_status taot_client_return_gradients(taot_client* client, const taot_plan* plan, void* const* home, size_t num_home,
                                         void* const* slots, size_t num_slots, size_t bytes, double timeout_s,
                                         int64_t* bytes_sent, int64_t* bytes_received);

/* ABI version 3: the tensor form and stream order (taot/client/tensor_exchange.h in C++).
 *
 * One parameter tensor over a rank's experts or slots: expert x's part is `chunks` runs of
 * `chunk_bytes`, run c at base + x * expert_stride + c * chunk_stride bytes. Contiguous per expert
 * ([experts, ...]): chunks = 1, chunk_bytes = the expert's bytes. Host memory on a Gloo
 * transport, device memory on an NCCL one. Any dtype moves as bytes (bf16, fp8 and its scales). */
typedef struct taot_expert_tensor {
  void* base;
  int64_t expert_stride;
  int64_t chunks;
  int64_t chunk_bytes;
  int64_t chunk_stride;
} taot_expert_tensor;

/* What the slots' gradients hold; homes add them into float32 (Megatron's main_grad). */
typedef enum taot_grad_type { TAOT_GRAD_FLOAT32 = 0, TAOT_GRAD_BFLOAT16 = 1 } taot_grad_type;

/* No trainer stream: the call orders nothing with the trainer's streams (host transports). */
#define TAOT_NO_STREAM ((uintptr_t)-1)

/* taot_client_plan_layer from the router's ids where they lie (device memory on NCCL): `pairs`
 * ids (tokens x top-k), int64 when `wide` is nonzero, else int32. Counted on the transport's side
 * stream after the work already on `stream`, gathered there, copied to the host once. */
taot_status taot_client_plan_layer_from_ids(taot_client* client, int64_t step, int32_t layer, const void* ids,
                                            size_t pairs, int wide, uintptr_t stream, taot_plan** out);

/* Predictive mode: the daemon's placement for (step, layer) once every rank has it (waiting at
 * most wait_s), as a plan of replicas only, to start its tensor moves ahead of the layer; *out is
 * NULL when some rank has none yet. A collective. FAILED_PRECONDITION in other modes. */
taot_status taot_client_placement(taot_client* client, int64_t step, int32_t layer, double wait_s, taot_plan** out);

/* Every pair's virtual expert id and rank, the pairs sent to each rank (send_counts: R entries)
 * and the stable send order (order[p] is the p-th pair of the send buffer), from `pairs` int32
 * expert ids, under the plan's tables (taot/client/plane_reroute.h), every pointer in the
 * transport's memory (device memory on NCCL). On NCCL it runs on the side stream after the work
 * on `stream`, which then waits for it. `check` receives the kernel's verdict on the ids (a
 * kernels::RouteCheck: the first pair whose id is outside [0, E) or pairs, then the first expert
 * the plan gives more pairs than were routed or E), read like the outputs. */
typedef struct taot_route_check {
  int64_t first_bad_pair;
  int32_t first_short_expert;
} taot_route_check;
taot_status taot_client_reroute_on_plane(taot_client* client, const taot_plan* plan, const int32_t* expert_ids,
                                         size_t pairs, int32_t* virtual_expert, int32_t* dest_rank,
                                         int64_t* send_counts, int64_t* order, taot_route_check* check,
                                         uintptr_t stream);
/* Sizes the reroute's workspace now for layers of up to `max_pairs` pairs, so that no later
 * taot_client_reroute_on_plane of at most that many allocates or waits on the host (what a CUDA
 * graph that captures it needs). Since ABI version 4. */
taot_status taot_client_reserve_reroute(taot_client* client, size_t max_pairs);

/* Moves started and not yet waited for. */
typedef struct taot_pending taot_pending;

/* Starts the plan's weight moves for this rank: `home` and `slots` are num_tensors (1 to 8)
 * tensors each, over the E / R home experts and the K slots; tensor k holds the same bytes per
 * expert on both sides. On NCCL everything is enqueued on taot's side stream: it first waits for
 * the work already on `stream` (the trainer's cudaStream_t as an integer), and `stream` then waits
 * for the moves, so no host thread waits inside the layer. Wait on *out before the next call over a
 * host transport; over NCCL its wait only checks, within a deadline, that the moves finished. */
taot_status taot_client_start_tensor_moves(taot_client* client, const taot_plan* plan, const taot_expert_tensor* home,
                                           const taot_expert_tensor* slots, size_t num_tensors, uintptr_t stream,
                                           taot_pending** out, int64_t* bytes_sent, int64_t* bytes_received);
/* After the backward pass: the slots' gradients (slot_type) go home and are added into the
 * home experts' float32 gradients, expert by expert in ascending guest order. Tensor k of
 * home_grads holds as many float32 values per expert as tensor k of slot_grads holds of slot_type. */
taot_status taot_client_start_gradient_return(taot_client* client, const taot_plan* plan,
                                              const taot_expert_tensor* slot_grads, taot_grad_type slot_type,
                                              const taot_expert_tensor* home_grads, size_t num_tensors,
                                              uintptr_t stream, taot_pending** out, int64_t* bytes_sent,
                                              int64_t* bytes_received);
/* Completes the moves (host transports: the unpack or the adds run here), or fails when
 * timeout_s passes (DEADLINE_EXCEEDED: a peer did not answer). */
taot_status taot_pending_wait(taot_pending* pending, double timeout_s);
/* Destroy after a successful wait; destroyed before, its client refuses further moves of that
 * kind (their memory may still be in use). NULL is a no-op. */
void taot_pending_destroy(taot_pending* pending);

/* The NCCL transport: buffers in device memory, taot's own communicator and a side stream (0:
 * taot makes one). Rank 0 makes the id and the trainer hands it to every rank. UNAVAILABLE where
 * the library was built without NCCL. */
taot_status taot_nccl_unique_id(char id[128]);
taot_status taot_nccl_connect(int rank, int size, int device, const char id[128], uintptr_t side_stream,
                              double timeout_s, taot_transport** out);

#ifdef __cplusplus
}
#endif

#endif /* TAOT_CLIENT_H_ */
