/* A plugin that loads but plans wrongly (a replica on its expert's home rank): the daemon must
 * refuse it and keep its planner. For the tests only. */
#include "taot/planner_plugin.h"

static taot_plugin_result_t init(void** context, const char* const* keys, const char* const* values, int32_t count,
                                 taot_log_fn log, char* error, int32_t error_size) {
  (void)keys, (void)values, (void)count, (void)log, (void)error, (void)error_size;
  *context = 0;
  return TAOT_PLUGIN_OK;
}

static taot_plugin_result_t make_plan(void* context, const taot_plan_request_v1* request, taot_plan_v1* plan,
                                      char* error, int32_t error_size) {
  (void)context, (void)request, (void)error, (void)error_size;
  plan->replicas[0] = (taot_replica_v1){0, 0};
  plan->replica_count = 1;
  plan->assignment_count = 0;
  return TAOT_PLUGIN_OK;
}

static void destroy(void* context) { (void)context; }

const taot_planner_plugin_v1 taotPlannerPlugin_v1 = {"broken", init, make_plan, destroy};
