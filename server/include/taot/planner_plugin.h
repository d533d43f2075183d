/* taot planner plugins, version 1: a planner in a shared library that taot-planner loads at run
 * time (--plugin PATH), so operators swap planners without rebuilding the trainer or the daemon.
 * Plain C, in the manner of NCCL's tuner plugins: the library exports one struct of function
 * pointers under the versioned symbol below; a later version adds a new symbol and struct, and
 * the daemon keeps loading this one.
 *
 * Rules: no exception or longjmp may leave a plugin function; every pointer the daemon passes is
 * valid only during the call; the plugin writes its plan into buffers the daemon owns. The daemon
 * validates every plan (ValidatePlan) and refuses a plugin whose plan on a probe request is
 * invalid.
 *
 * Loading: the symbol must be a defined, exported data object of at least the struct's size in
 * the library's dynamic symbol table (the daemon reads it there before loading anything), and
 * the library's initialisers must finish, without crashing or exiting, in a probe process the
 * daemon forks first. */
#ifndef TAOT_PLANNER_PLUGIN_H_
#define TAOT_PLANNER_PLUGIN_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TAOT_PLANNER_PLUGIN_V1_SYMBOL "taotPlannerPlugin_v1"

typedef enum { TAOT_PLUGIN_OK = 0, TAOT_PLUGIN_ERROR = 1 } taot_plugin_result_t;

typedef enum { TAOT_LOG_DEBUG = 0, TAOT_LOG_INFO = 1, TAOT_LOG_WARNING = 2, TAOT_LOG_ERROR = 3 } taot_log_level_t;

/* The daemon's log, for the plugin's messages (one line each, no newline needed). */
typedef void (*taot_log_fn)(taot_log_level_t level, const char* message);

/* One layer of one microbatch to plan (the fields of docs/formats.md's CASE). */
typedef struct {
  int32_t ranks;
  int32_t experts; /* a multiple of ranks; expert e lives on rank e / (experts / ranks) */
  int32_t slots_per_rank;
  int64_t expert_bytes;
  const int32_t* node_of_rank; /* ranks entries */
  const double* cost;          /* ranks x ranks, row-major: moving one expert from row to column */
  const int64_t* load;         /* ranks x experts, row-major: tokens source routes to expert */
  const int32_t* resident;     /* resident_count (expert, rank) pairs already in place */
  int32_t resident_count;
  double target_imbalance_pct; /* < 0: the plugin's own default */
} taot_plan_request_v1;

typedef struct {
  int32_t expert;
  int32_t rank;
} taot_replica_v1;

typedef struct {
  int32_t source;
  int32_t expert;
  int32_t rank;
  int64_t tokens;
} taot_assignment_v1;

/* Buffers the daemon owns; the plugin fills at most the capacities and sets the counts. */
typedef struct {
  taot_replica_v1* replicas;
  int32_t replica_capacity; /* ranks x slots_per_rank */
  int32_t replica_count;
  taot_assignment_v1* assignments;
  int32_t assignment_capacity; /* ranks x replica_capacity */
  int32_t assignment_count;
} taot_plan_v1;

typedef struct {
  /* The planner's name in the daemon (taotctl set-planner NAME): letters, digits, '-', '_'. */
  const char* name;
  /* Creates the plugin's state from key=value parameters (count of each); on error writes a
   * message of at most error_size bytes (NUL included) into `error`. */
  taot_plugin_result_t (*init)(void** context, const char* const* keys, const char* const* values, int32_t count,
                               taot_log_fn log, char* error, int32_t error_size);
  /* Plans one request; may be called again and again, from one thread at a time. */
  taot_plugin_result_t (*make_plan)(void* context, const taot_plan_request_v1* request, taot_plan_v1* plan, char* error,
                                    int32_t error_size);
  void (*destroy)(void* context);
} taot_planner_plugin_v1;

#ifdef __cplusplus
}
#endif

#endif /* TAOT_PLANNER_PLUGIN_H_ */
