/* spot.h: one job's per-step choice among idle, spot and on-demand under a
 * deadline: the ondemand, greedy and Uniform Progress policies of "Can't Be
 * Late" (Wu et al., NSDI'24).  Pure functions: no clock, no I/O, no state of
 * their own; docs/spot.md gives the rules and the choices made. */
#ifndef SPW_CORE_SPOT_H
#define SPW_CORE_SPOT_H

#include "util/error.h"

/* checkpoint_interval_s of a job whose progress is never lost. */
#define SPW_CKPT_CONTINUOUS (-1.0)

/* Progress kept when an attempt that began with done_s of progress kept and
 * has since made run_s more is interrupted: done_s + run_s (continuous),
 * done_s + the whole intervals of run_s (interval > 0), or 0 (never). */
double spw_ckpt_kept_s(double checkpoint_interval_s, double done_s, double run_s);

/* The most progress one interruption can lose for a job of work_s: the
 * interval, work_s without checkpoints, 0 when continuous. */
double spw_ckpt_max_loss_s(double checkpoint_interval_s, double work_s);

/* The policies, with their command-line names. */
#define SPW_SPOT_POLICIES(X)                              \
    X(SPW_SPOT_POLICY_ONDEMAND, "ondemand")               \
    X(SPW_SPOT_POLICY_GREEDY, "greedy")                   \
    X(SPW_SPOT_POLICY_UNIFORM_PROGRESS, "uniform-progress")

typedef enum spw_spot_policy {
#define SPW_X(id, name) id,
    SPW_SPOT_POLICIES(SPW_X)
#undef SPW_X
    SPW_SPOT_POLICY_COUNT
} spw_spot_policy_t;

/* What the job runs on during a step. */
#define SPW_SPOT_INSTS(X)                   \
    X(SPW_SPOT_IDLE, "idle")                \
    X(SPW_SPOT_SPOT, "spot")                \
    X(SPW_SPOT_ONDEMAND, "ondemand")

typedef enum spw_spot_inst {
#define SPW_X(id, name) id,
    SPW_SPOT_INSTS(SPW_X)
#undef SPW_X
    SPW_SPOT_INST_COUNT
} spw_spot_inst_t;

/* The job as the policy sees it; every time is in seconds of wall clock. */
typedef struct spw_spot_job {
    double work_s;                /* C(0): computation the job needs, > 0 */
    double deadline_s;            /* R(0): deadline, counted from the job's start */
    double restart_overhead_s;    /* d: paid time without progress after every
                                     instance change, >= 0 */
    double checkpoint_interval_s; /* progress is saved every this many seconds of
                                     running; 0 = never (a preemption loses all
                                     progress); SPW_CKPT_CONTINUOUS = always
                                     (nothing is lost: the paper's model) */
    double step_s;                /* time between two decisions (a trace tick), > 0 */
} spw_spot_job_t;

/* Where the job stands when a decision is due. */
typedef struct spw_spot_view {
    spw_spot_inst_t inst;  /* instance held now; a preempted spot is IDLE */
    double elapsed_s;      /* t: time since the job's start */
    double done_s;         /* cp(t): progress kept so far, 0 .. work_s */
} spw_spot_view_t;

/* The instance the job should hold for the next step, given whether a spot
 * instance is available for it (spot_available != 0).  Deterministic in its
 * arguments.  A view with inst SPOT and no spot available is treated as IDLE
 * (the spot was preempted).  Never returns SPOT when spot_available is 0. */
spw_spot_inst_t spw_spot_decide(spw_spot_policy_t policy, const spw_spot_job_t *job,
                                const spw_spot_view_t *view, int spot_available);

/* The slack, R(t) - C(t), the job needs to stay idle or to move onto spot
 * without putting the deadline at risk: d + max(d, step_s) + the most one
 * preemption can lose (spw_ckpt_max_loss_s).  This is the paper's Safety Net
 * threshold 2d when decisions come at least every d and nothing is lost to
 * a preemption. */
double spw_spot_safety_slack_s(const spw_spot_job_t *job);

/* Whether running on demand from the start (one restart overhead, then the
 * work) meets the deadline. */
int spw_spot_feasible(const spw_spot_job_t *job);

/* Names; "?" for values out of range. */
const char *spw_spot_policy_name(spw_spot_policy_t p);
const char *spw_spot_inst_name(spw_spot_inst_t i);

/* Parses a policy name ("ondemand", "greedy", "uniform-progress"); 0, or -1
 * with err naming the accepted values and *out untouched. */
int spw_spot_policy_parse(const char *s, spw_spot_policy_t *out, spw_error_t *err);

#endif
