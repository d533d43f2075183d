/* The C ABI from plain C: two ranks (threads) plan a layer locally, move a replica's weights,
 * reroute their pairs and return the guest's gradient; bad calls get a status and a message.
 * Exits 0 when every check holds; prints the first failure otherwise. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taot/client/taot_client.h"

#define EXPERTS 8
#define FLOATS 64

static const char* directory;
static int failures;

#define CHECK(cond)                                                                                    \
  do {                                                                                                 \
    if (!(cond)) {                                                                                     \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, taot_last_error()); \
      __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);                                              \
      return NULL;                                                                                     \
    }                                                                                                  \
  } while (0)

static void* rank_main(void* arg) {
  const int rank = (int)(size_t)arg;
  taot_transport* transport = NULL;
  CHECK(taot_gloo_connect(rank, 2, directory, "127.0.0.1", 30, &transport) == TAOT_OK);
  taot_client_options options;
  taot_client_options_init(&options);
  options.experts = EXPERTS;
  options.node = "n0";
  taot_client* client = NULL;
  /* Timeouts are checked for what they are, not only their sign. */
  options.collective_timeout_s = INFINITY;
  CHECK(taot_client_create(&options, transport, &client) == TAOT_INVALID_ARGUMENT && client == NULL);
  CHECK(strstr(taot_last_error(), "options.collective_timeout_s: must be at most 86400 seconds (a day), got inf") !=
        NULL);
  options.collective_timeout_s = 60;
  options.call_timeout_s = NAN;
  CHECK(taot_client_create(&options, transport, &client) == TAOT_INVALID_ARGUMENT && client == NULL);
  CHECK(strstr(taot_last_error(), "options.call_timeout_s: must be a number, got NaN") != NULL);
  options.call_timeout_s = 1;
  options.connect_timeout_s = NAN;
  CHECK(taot_client_create(&options, transport, &client) == TAOT_INVALID_ARGUMENT && client == NULL);
  CHECK(strstr(taot_last_error(), "options.connect_timeout_s: must be a number, got NaN") != NULL);
  options.connect_timeout_s = 10;
  options.struct_size = sizeof(taot_client_options) + 8;
  CHECK(taot_client_create(&options, transport, &client) == TAOT_INVALID_ARGUMENT && client == NULL);
  CHECK(strstr(taot_last_error(), "options.struct_size") != NULL);
  /* A caller built against ABI version 1 (its options end before connect_timeout_s) still works. */
  options.struct_size = offsetof(taot_client_options, connect_timeout_s);
  options.connect_timeout_s = NAN; /* past its struct: never read */
  CHECK(taot_client_create(&options, transport, &client) == TAOT_OK);
  taot_client_destroy(client);
  client = NULL;
  options.struct_size = sizeof(taot_client_options);
  options.connect_timeout_s = 10;
  CHECK(taot_client_create(&options, transport, &client) == TAOT_OK);
  taot_transport_destroy(transport); /* the client keeps what it needs */

  /* Expert 0 (on rank 0) is hot from both ranks. */
  int64_t counts[EXPERTS] = {40, 1, 1, 1, 1, 1, 1, 1};
  counts[0] += rank * 10;
  taot_plan* plan = NULL;
  CHECK(taot_client_plan_layer(client, 0, 0, counts, EXPERTS, &plan) == TAOT_OK);
  CHECK(strcmp(taot_plan_source(plan), "local") == 0);
  CHECK(taot_plan_num_replicas(plan) >= 1);
  int32_t expert = -1, guest = -1;
  CHECK(taot_plan_replica(plan, 0, &expert, &guest) == TAOT_OK);
  CHECK(expert == 0 && guest == 1);
  int32_t slot_experts[2];
  CHECK(taot_plan_guest_slots(plan, 1, slot_experts, 2) == 1 && slot_experts[0] == 0);

  /* Weights: expert e is all (e + 1); rank 1's slot receives expert 0's. */
  static float weights[2][4][FLOATS], slots[2][2][FLOATS];
  void* home[4];
  void* slot[2];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < FLOATS; ++j) weights[rank][i][j] = (float)(rank * 4 + i + 1);
    home[i] = weights[rank][i];
  }
  slot[0] = slots[rank][0];
  slot[1] = slots[rank][1];
  int64_t sent = -1, received = -1;
  CHECK(taot_client_move_weights(client, plan, home, 4, slot, 2, sizeof(float) * FLOATS, 30, &sent, &received) ==
        TAOT_OK);
  if (rank == 1)
    CHECK(slots[1][0][0] == 1.0f && slots[1][0][FLOATS - 1] == 1.0f && received == (int64_t)(sizeof(float) * FLOATS));
  if (rank == 0) CHECK(sent == (int64_t)(sizeof(float) * FLOATS));

  /* Reroute this rank's pairs: every pair of expert 0 beyond the plan's share goes home. */
  int32_t ids[EXPERTS * 6];
  size_t pairs = 0;
  for (int e = 0; e < EXPERTS; ++e)
    for (int64_t n = 0; n < counts[e] && pairs < sizeof ids / sizeof ids[0]; ++n) ids[pairs++] = e;
  int32_t dest[EXPERTS * 6];
  int64_t send_counts[2];
  CHECK(taot_reroute(plan, 2, EXPERTS, rank, ids, pairs, dest, send_counts) == TAOT_OK);
  CHECK(send_counts[0] + send_counts[1] == (int64_t)pairs);
  /* The same on the transport's plane (host memory on Gloo), with virtual ids and the send order. */
  int32_t plane_dest[EXPERTS * 6], virtual_ids[EXPERTS * 6];
  int64_t plane_counts[2], order[EXPERTS * 6];
  taot_route_check route_check;
  CHECK(taot_client_reserve_reroute(client, pairs) == TAOT_OK);
  CHECK(taot_client_reserve_reroute(NULL, pairs) == TAOT_INVALID_ARGUMENT);
  CHECK(taot_client_reserve_reroute(client, SIZE_MAX) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "max_pairs: must fit an int64_t") != NULL);
  CHECK(taot_client_reroute_on_plane(client, plan, ids, pairs, virtual_ids, plane_dest, plane_counts, order,
                                     &route_check, TAOT_NO_STREAM) == TAOT_OK);
  CHECK(route_check.first_bad_pair == (int64_t)pairs && route_check.first_short_expert == EXPERTS);
  CHECK(plane_counts[0] == send_counts[0] && plane_counts[1] == send_counts[1]);
  for (size_t i = 0; i < pairs; ++i) CHECK(plane_dest[i] == dest[i]);
  CHECK(taot_client_reroute_on_plane(client, plan, ids, pairs, NULL, plane_dest, plane_counts, order, &route_check,
                                     TAOT_NO_STREAM) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "outputs.virtual_expert: must not be null") != NULL);

  /* Gradients: home ones 1, the guest's slot 5; expert 0's home ends with 6. */
  static float grads[2][4][FLOATS], slot_grads[2][2][FLOATS];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < FLOATS; ++j) grads[rank][i][j] = 1.0f;
    home[i] = grads[rank][i];
  }
  for (int j = 0; j < FLOATS; ++j) slot_grads[rank][0][j] = 5.0f;
  slot[0] = slot_grads[rank][0];
  slot[1] = slot_grads[rank][1];
  CHECK(taot_client_return_gradients(client, plan, home, 4, slot, 2, sizeof(float) * FLOATS, 30, NULL, NULL) ==
        TAOT_OK);
  if (rank == 0) CHECK(grads[0][0][0] == 6.0f && grads[0][0][FLOATS - 1] == 6.0f && grads[0][1][0] == 1.0f);

  /* The same plan from the router's ids (host memory on Gloo): each expert's id counts[e] times. */
  int32_t router_ids[EXPERTS * 8];
  size_t routed = 0;
  for (int e = 0; e < EXPERTS; ++e)
    for (int64_t n = 0; n < counts[e]; ++n) router_ids[routed++] = e;
  taot_plan* from_ids = NULL;
  CHECK(taot_client_plan_layer_from_ids(client, 0, 5, router_ids, routed, 0, TAOT_NO_STREAM, &from_ids) == TAOT_OK);
  CHECK(taot_plan_hash(from_ids) == taot_plan_hash(plan));
  taot_plan_destroy(from_ids);

  /* The tensor form: the weights as one [4 experts, FLOATS] tensor, the slots as [FLOATS / 2 rows,
   * 2 slots, 2 floats] (strided); bf16 slot gradients added into the fp32 home gradients. */
  static float tensor_slots[2][FLOATS / 2][2][2];
  memset(tensor_slots[rank], 0, sizeof tensor_slots[rank]);
  const taot_expert_tensor home_t = {weights[rank], sizeof(float) * FLOATS, 1, sizeof(float) * FLOATS, 0};
  const taot_expert_tensor slot_t = {tensor_slots[rank], 2 * sizeof(float), FLOATS / 2, 2 * sizeof(float),
                                     2 * 2 * sizeof(float)};
  taot_pending* pending = NULL;
  CHECK(taot_client_start_tensor_moves(client, plan, &home_t, &slot_t, 1, TAOT_NO_STREAM, &pending, &sent, &received) ==
        TAOT_OK);
  CHECK(taot_pending_wait(pending, 30) == TAOT_OK);
  taot_pending_destroy(pending);
  if (rank == 1)
    CHECK(tensor_slots[1][0][0][0] == 1.0f && tensor_slots[1][FLOATS / 2 - 1][0][1] == 1.0f &&
          tensor_slots[1][3][1][0] == 0.0f);
  static uint16_t bf16_slot_grads[2][2][FLOATS];
  for (int j = 0; j < FLOATS; ++j) bf16_slot_grads[rank][0][j] = 0x4040; /* 3.0 */
  const taot_expert_tensor grad_slot_t = {bf16_slot_grads[rank], 2 * FLOATS, 1, 2 * FLOATS, 0};
  const taot_expert_tensor grad_home_t = {grads[rank], sizeof(float) * FLOATS, 1, sizeof(float) * FLOATS, 0};
  CHECK(taot_client_start_gradient_return(client, plan, &grad_slot_t, TAOT_GRAD_BFLOAT16, &grad_home_t, 1,
                                          TAOT_NO_STREAM, &pending, NULL, NULL) == TAOT_OK);
  CHECK(taot_pending_wait(pending, 30) == TAOT_OK);
  taot_pending_destroy(pending);
  if (rank == 0) CHECK(grads[0][0][0] == 9.0f && grads[0][0][FLOATS - 1] == 9.0f && grads[0][1][0] == 1.0f);
  CHECK(taot_client_start_tensor_moves(client, plan, &home_t, &slot_t, 9, TAOT_NO_STREAM, &pending, NULL, NULL) ==
        TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "num_tensors: must be in [1, 8], got 9") != NULL);
  CHECK(taot_client_start_gradient_return(client, plan, &grad_home_t, TAOT_GRAD_BFLOAT16, &grad_home_t, 1,
                                          TAOT_NO_STREAM, &pending, NULL, NULL) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "gradients.slots.tensor[0]: holds 256 bytes per expert, must be 2 x the 64") != NULL);
  CHECK(taot_pending_wait(NULL, 1) == TAOT_INVALID_ARGUMENT);
  taot_plan* ahead = NULL;
  CHECK(taot_client_placement(client, 0, 0, 0, &ahead) == TAOT_FAILED_PRECONDITION && ahead == NULL);
  CHECK(strstr(taot_last_error(), "placement: only predictive mode gets placements") != NULL);
  char id[128];
  const taot_status nccl = taot_nccl_unique_id(id);
  CHECK(nccl == TAOT_OK || nccl == TAOT_UNAVAILABLE);

  /* Bad calls: a status, a message naming the field, nothing changed. */
  taot_plan* none = NULL;
  CHECK(taot_client_plan_layer(client, 0, 1, counts, 3, &none) == TAOT_INVALID_ARGUMENT && none == NULL);
  CHECK(strstr(taot_last_error(), "experts: must be the client's E = 8 (one count per expert), got 3") != NULL);
  /* Sizes stay size_t: a length that is E once cut to 32 bits is refused before counts is read. */
  const size_t wraps = ((size_t)1 << 32) + EXPERTS;
  CHECK(taot_client_plan_layer(client, 0, 1, counts, wraps, &none) == TAOT_INVALID_ARGUMENT && none == NULL);
  CHECK(strstr(taot_last_error(), "experts: must be the client's E = 8 (one count per expert), got 4294967304") !=
        NULL);
  CHECK(taot_client_move_weights(client, plan, home, ((size_t)1 << 32) + 4, slot, 2, 64, 30, NULL, NULL) ==
        TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "home: must have E / R = 4 buffers, got 4294967300") != NULL);
  CHECK(taot_client_return_gradients(client, plan, home, 4, slot, ((size_t)1 << 32) + 2, 64, 30, NULL, NULL) ==
        TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "slots: must have K = 2 buffers (slots per rank), got 4294967298") != NULL);
  CHECK(taot_client_move_weights(client, plan, home, 4, slot, 2, 64, NAN, NULL, NULL) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "timeout_s: must be a number, got NaN") != NULL);
  CHECK(taot_client_move_weights(client, plan, home, 4, slot, 2, 64, 1e300, NULL, NULL) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "timeout_s: must be at most 86400 seconds (a day), got 1e+300") != NULL);
  CHECK(taot_client_return_gradients(client, plan, home, 4, slot, 2, 64, -1, NULL, NULL) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "timeout_s: must not be negative, got -1") != NULL);
  CHECK(taot_client_plan_layer(NULL, 0, 1, counts, EXPERTS, &none) == TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "client: must not be NULL") != NULL);
  CHECK(taot_plan_replica(plan, 99, &expert, &guest) == TAOT_INVALID_ARGUMENT);
  CHECK(taot_client_move_weights(client, plan, home, 3, slot, 2, sizeof(float) * FLOATS, 30, NULL, NULL) ==
        TAOT_INVALID_ARGUMENT);
  CHECK(strstr(taot_last_error(), "home: must have E / R = 4") != NULL);
  CHECK(taot_reroute(plan, 2, EXPERTS, 5, ids, pairs, dest, send_counts) == TAOT_INVALID_ARGUMENT);
  CHECK(taot_plan_version(plan) == 0 && taot_plan_hash(plan) != 0);
  taot_plan_destroy(plan);
  taot_client_destroy(client);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s RENDEZVOUS_DIR\n", argv[0]);
    return 2;
  }
  directory = argv[1];
  if (taot_client_abi_version() != TAOT_CLIENT_ABI_VERSION) return 1;
  taot_client_options bad;
  taot_client_options_init(&bad);
  bad.struct_size = 3;
  taot_client* c = NULL;
  if (taot_client_create(&bad, NULL, &c) != TAOT_INVALID_ARGUMENT || strstr(taot_last_error(), "transport") == NULL) {
    fprintf(stderr, "a NULL transport was not refused by name: %s\n", taot_last_error());
    return 1;
  }
  taot_transport* t = NULL;
  if (taot_gloo_connect(0, 2, directory, "127.0.0.1", NAN, &t) != TAOT_INVALID_ARGUMENT || t != NULL ||
      strstr(taot_last_error(), "timeout_s: must be a number, got NaN") == NULL) {
    fprintf(stderr, "a NaN timeout was not refused as one: %s\n", taot_last_error());
    return 1;
  }
  pthread_t threads[2];
  for (size_t r = 0; r < 2; ++r) pthread_create(&threads[r], NULL, rank_main, (void*)r);
  for (int r = 0; r < 2; ++r) pthread_join(threads[r], NULL);
  if (failures == 0) printf("c_api_test: ok\n");
  return failures == 0 ? 0 : 1;
}
