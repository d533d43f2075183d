/* A plugin that loads but plans wrongly (a replica on its expert's home rank): the daemon must
 * refuse it and keep its planner. Built four times: "broken" always plans wrongly (refused at the
 * probe); "sly" (TAOT_SLY) plans nothing on small requests, so it passes the probe, and
 * wrongly on larger ones (dropped at its first bad plan); "crashing" (TAOT_CRASHING) aborts and
 * "hanging" (TAOT_HANGING) never returns while the library loads, before any plugin function
 * runs (refused without loading it into the daemon). For the tests only. */
#include "taot/planner_plugin.h"

#if defined(TAOT_CRASHING) || defined(TAOT_HANGING)
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void on_load(void) {
#ifdef TAOT_CRASHING
  abort();
#else
  for (;;) pause();
#endif
}
#endif

static taot_plugin_result_t init(void** context, const char* const* keys, const char* const* values, int32_t count,
                                 taot_log_fn log, char* error, int32_t error_size) {
  (void)keys, (void)values, (void)count, (void)log, (void)error, (void)error_size;
  *context = 0;
  return TAOT_PLUGIN_OK;
}

static taot_plugin_result_t make_plan(void* context, const taot_plan_request_v1* request, taot_plan_v1* plan,
                                      char* error, int32_t error_size) {
  (void)context, (void)error, (void)error_size;
  plan->replica_count = 0;
  plan->assignment_count = 0;
#ifdef TAOT_SLY
  if (request->ranks <= 4) return TAOT_PLUGIN_OK;
#else
  (void)request;
#endif
  plan->replicas[0] = (taot_replica_v1){0, 0};
  plan->replica_count = 1;
  return TAOT_PLUGIN_OK;
}

static void destroy(void* context) { (void)context; }

#if defined(TAOT_SLY)
const taot_planner_plugin_v1 taotPlannerPlugin_v1 = {"sly", init, make_plan, destroy};
#elif defined(TAOT_CRASHING)
const taot_planner_plugin_v1 taotPlannerPlugin_v1 = {"crashing", init, make_plan, destroy};
#elif defined(TAOT_HANGING)
const taot_planner_plugin_v1 taotPlannerPlugin_v1 = {"hanging", init, make_plan, destroy};
#else
const taot_planner_plugin_v1 taotPlannerPlugin_v1 = {"broken", init, make_plan, destroy};
#endif
