/* An example taot planner plugin (taot_planner_plugin_v1), in plain C: "greedy" repeatedly moves
 * tokens of the busiest rank's biggest expert to the least loaded rank with a free slot, until
 * every rank is within the target of the mean or no move helps. Topology-blind, like the simple
 * peers; it shows the ABI, it is not meant to compete with taot.
 *   taot-planner --plugin build/server/plugins/libtaot_greedy_plugin.so --planner greedy
 * Parameters: max_moves (default: ranks x slots). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taot/planner_plugin.h"

typedef struct {
  long max_moves; /* 0: ranks x slots */
  taot_log_fn log;
} greedy_t;

static taot_plugin_result_t fail(char* error, int32_t size, const char* message) {
  if (size > 0) snprintf(error, (size_t)size, "%s", message);
  return TAOT_PLUGIN_ERROR;
}

static taot_plugin_result_t greedy_init(void** context, const char* const* keys, const char* const* values,
                                        int32_t count, taot_log_fn log, char* error, int32_t error_size) {
  greedy_t* g = calloc(1, sizeof(greedy_t));
  if (g == NULL) return fail(error, error_size, "out of memory");
  g->log = log;
  for (int32_t i = 0; i < count; ++i) {
    char* end = NULL;
    if (strcmp(keys[i], "max_moves") == 0) {
      g->max_moves = strtol(values[i], &end, 10);
      if (*values[i] == '\0' || *end != '\0' || g->max_moves < 0) {
        free(g);
        return fail(error, error_size, "parameter max_moves: must be an integer >= 0");
      }
    } else {
      free(g);
      return fail(error, error_size, "unknown parameter (known: max_moves)");
    }
  }
  *context = g;
  return TAOT_PLUGIN_OK;
}

static int holds(const taot_plan_v1* plan, int32_t expert, int32_t rank) {
  for (int32_t i = 0; i < plan->replica_count; ++i) {
    if (plan->replicas[i].expert == expert && plan->replicas[i].rank == rank) return 1;
  }
  return 0;
}

static taot_plugin_result_t greedy_make_plan(void* context, const taot_plan_request_v1* q, taot_plan_v1* plan,
                                             char* error, int32_t error_size) {
  const greedy_t* g = context;
  const int32_t R = q->ranks, E = q->experts, per = E / R;
  int64_t* home = malloc(sizeof(int64_t) * (size_t)R * (size_t)E); /* tokens still at home */
  int64_t* rank_load = calloc((size_t)R, sizeof(int64_t));
  int32_t* slots = malloc(sizeof(int32_t) * (size_t)R);
  if (home == NULL || rank_load == NULL || slots == NULL) {
    free(home), free(rank_load), free(slots);
    return fail(error, error_size, "out of memory");
  }
  memcpy(home, q->load, sizeof(int64_t) * (size_t)R * (size_t)E);
  int64_t total = 0;
  for (int32_t s = 0; s < R; ++s) {
    for (int32_t e = 0; e < E; ++e) rank_load[e / per] += q->load[(size_t)s * E + e];
  }
  for (int32_t r = 0; r < R; ++r) total += rank_load[r], slots[r] = q->slots_per_rank;
  const double target = q->target_imbalance_pct >= 0 ? q->target_imbalance_pct : 2.0;
  const int64_t cap = (int64_t)ceil((double)total / R * (1.0 + target / 100.0));
  const int64_t mean = (total + R - 1) / R;
  long moves = g->max_moves > 0 ? g->max_moves : (long)R * q->slots_per_rank;
  plan->replica_count = 0;
  plan->assignment_count = 0;
  while (moves-- > 0) {
    int32_t h = 0, c = -1;
    for (int32_t r = 1; r < R; ++r)
      if (rank_load[r] > rank_load[h]) h = r;
    if (rank_load[h] <= cap) break;
    /* h's biggest expert by tokens still at home */
    int32_t e = -1;
    int64_t best = 0;
    for (int32_t x = h * per; x < (h + 1) * per; ++x) {
      int64_t left = 0;
      for (int32_t s = 0; s < R; ++s) left += home[(size_t)s * E + x];
      if (left > best) best = left, e = x;
    }
    if (e < 0) break;
    for (int32_t r = 0; r < R; ++r) {
      if (r == h || slots[r] == 0 || holds(plan, e, r)) continue;
      if (c < 0 || rank_load[r] < rank_load[c]) c = r;
    }
    if (c < 0 || rank_load[c] >= mean || plan->replica_count == plan->replica_capacity) break;
    int64_t amount = rank_load[h] - mean;
    if (mean - rank_load[c] < amount) amount = mean - rank_load[c];
    if (best < amount) amount = best;
    plan->replicas[plan->replica_count++] = (taot_replica_v1){e, c};
    --slots[c];
    for (int32_t s = 0; s < R && amount > 0; ++s) {
      int64_t* left = &home[(size_t)s * E + e];
      const int64_t take = *left < amount ? *left : amount;
      if (take == 0) continue;
      if (plan->assignment_count == plan->assignment_capacity) {
        free(home), free(rank_load), free(slots);
        return fail(error, error_size, "assignment buffer full");
      }
      plan->assignments[plan->assignment_count++] = (taot_assignment_v1){s, e, c, take};
      *left -= take, amount -= take, rank_load[h] -= take, rank_load[c] += take;
    }
  }
  if (g->log != NULL && plan->replica_count == 0) g->log(TAOT_LOG_DEBUG, "greedy: nothing to move");
  free(home), free(rank_load), free(slots);
  return TAOT_PLUGIN_OK;
}

static void greedy_destroy(void* context) { free(context); }

/* The one symbol the daemon looks up. */
const taot_planner_plugin_v1 taotPlannerPlugin_v1 = {
    "greedy",
    greedy_init,
    greedy_make_plan,
    greedy_destroy,
};
