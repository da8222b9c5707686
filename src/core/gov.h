/* gov.h: governance: teams and their dollar budgets, organisation caps,
 * placement rules, residency classes and datasets (data gravity).
 *
 * Two halves:
 * - the spec (spw_gov_t), read from the config and kept inside the fleet
 *   (spw_fleet_t.gov), static for the life of an engine;
 * - the runtime (spw_govrt_t), owned by one engine: the profiles a job's
 *   attributes compile to, the ledger of spend and reservations per team and
 *   period, and the datasets cached in cloud regions.
 *
 * Like the rest of core it never reads a clock and never prints.  Times are
 * engine seconds; the calendar (months, ISO weeks, UTC) is applied to
 * spec.origin_s + now, so the daemon (now = unix time, origin 0) and the
 * simulator (now = trace seconds, origin = the config's sim start) share it.
 *
 * Money rule: every cloud placement reserves its worst case (compute for
 * max_runtime plus egress) against its team's budget period, the team's
 * monthly egress cap and the spend-rate and GPU caps, and is made only when
 * all of them have room; it is charged to the period in which it was placed
 * and settled to its actual cost when it ends.  So settled + reserved never
 * exceeds a budget, at any instant. */
#ifndef SPW_CORE_GOV_H
#define SPW_CORE_GOV_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct spw_fleet;
struct spw_job;

#define SPW_GOV_MAX_TEAMS 64    /* teams in the config (a rule's team set is 64 bits) */
#define SPW_GOV_MAX_CLASSES 64  /* job class names known to rules and residency */
#define SPW_GOV_MAX_LABELS 64   /* distinct key=value labels named in rules */
#define SPW_GOV_MAX_RULES 256   /* rules in the config */
#define SPW_GOV_RULE_WORDS (SPW_GOV_MAX_RULES / 64)

typedef enum spw_period { SPW_PERIOD_MONTH, SPW_PERIOD_WEEK } spw_period_t;
typedef enum spw_exhausted {
    SPW_EXHAUSTED_HOLD,         /* wait (on-prem may still take it) until money frees */
    SPW_EXHAUSTED_ONPREM_ONLY,  /* never burst again; on-prem only */
    SPW_EXHAUSTED_REJECT,       /* the job is rejected */
} spw_exhausted_t;
typedef enum spw_spot_rule {
    SPW_SPOT_UNSET,             /* no rule said (counts as allowed) */
    SPW_SPOT_ALLOWED,
    SPW_SPOT_REQUIRED,          /* cloud only on spot capacity */
    SPW_SPOT_NEVER,
} spw_spot_rule_t;
typedef enum spw_placement {
    SPW_PLACE_UNSET,            /* no rule said (counts as onprem_first) */
    SPW_PLACE_ONPREM_FIRST,     /* the policy's wait rule decides when to burst */
    SPW_PLACE_CLOUD_FIRST,      /* burst at once; on-prem only when the cloud cannot take it */
    SPW_PLACE_ONPREM_ONLY,      /* never the cloud */
} spw_placement_t;

const char *spw_period_name(spw_period_t p);          /* "month", "week" */
const char *spw_exhausted_name(spw_exhausted_t x);    /* "hold", "onprem_only", "reject" */
const char *spw_spot_rule_name(spw_spot_rule_t s);    /* "unset", "allowed", ... */
const char *spw_placement_name(spw_placement_t p);    /* "unset", "onprem_first", ... */
int spw_exhausted_parse(const char *s, spw_exhausted_t *out, spw_error_t *err);
int spw_spot_rule_parse(const char *s, spw_spot_rule_t *out, spw_error_t *err);
int spw_placement_parse(const char *s, spw_placement_t *out, spw_error_t *err);

/* ---- calendar ------------------------------------------------------------ */

/* Start and end (unix seconds, UTC) of the period containing unix time t:
 * a calendar month, or an ISO week (Monday 00:00). */
double spw_period_start(spw_period_t p, double t);
double spw_period_end(spw_period_t p, double t);
/* "2026-11" or "2026-W47" for the period containing t. */
void spw_period_label(spw_period_t p, double t, char *buf, size_t len);
/* Parses "2026-11" or "2026-W47" into that period's start; -1 with err. */
int spw_period_parse(const char *s, spw_period_t *p, double *start, spw_error_t *err);

/* ---- spec ---------------------------------------------------------------- */

typedef struct spw_team_spec {
    char *name;                  /* owned, unique */
    int line;                    /* config line, for messages */
    double budget_usd;           /* per period; INFINITY = no budget */
    spw_period_t period;         /* month (monthly_usd) or week (weekly_usd) */
    spw_exhausted_t on_exhausted;
    double max_cloud_usd_per_h;  /* concurrent cloud spend rate; INFINITY = none */
    double max_cloud_gpus;       /* concurrent cloud GPUs; INFINITY = none */
    double max_egress_usd_per_month; /* max_cloud_egress_usd_per_month: every
                                        egress dollar the team causes per calendar
                                        month, dollars: copies into the cloud (with
                                        cache storage) and into on-prem pools;
                                        INFINITY = none */
    /* Fair share and quotas (docs/fairshare.md): */
    int has_quota;               /* quota: was given (0 = none: 0 nominal GPUs
                                    when some other team has one) */
    double quota_gpus;           /* nominal share of the on-prem GPUs (quota:
                                    {gpus: N}), with has_quota */
    double borrowing_limit_gpus; /* GPUs it may use above its quota, borrowed
                                    from idle quota; INFINITY = no limit */
    double lending_limit_gpus;   /* GPUs of its idle quota others may borrow;
                                    INFINITY = all of it */
    double *quota_pool_gpus;     /* owned; per fleet pool (by index), the part
                                    of quota_gpus nominal in that pool (quota:
                                    {pools: {NAME: N}}), GPUs; NULL = none: the
                                    whole quota counts in any pool */
    double weight;               /* fair-share weight among its siblings; 1
                                    (0 counts as 1) */
    uint32_t cohort;             /* cohort index + 1; 0 = none */
} spw_team_spec_t;

/* A cohort: teams (and cohorts below it) that borrow each other's idle
 * quota; cohorts form a tree through parent. */
typedef struct spw_cohort_spec {
    char *name;                  /* owned, unique */
    int line;                    /* config line, for messages */
    int parent;                  /* cohort index; -1 = a root */
    double weight;               /* fair-share weight among its siblings; 1 */
} spw_cohort_spec_t;

/* A place data can live: an on-prem pool or a cloud region. */
typedef struct spw_site {
    int pool;                    /* pool index, or -1 for a region */
    char *provider;              /* owned; region sites only; NULL = any provider */
    char *region;                /* owned; region sites only */
} spw_site_t;

typedef struct spw_dataset_spec {
    char *name;                  /* owned, unique */
    int line;
    double size_gb;              /* > 0 */
    spw_site_t home;
    spw_site_t *replicas;        /* owned; more sites holding a copy */
    size_t nreplicas;
} spw_dataset_spec_t;

typedef struct spw_residency_spec {
    char *name;                  /* owned: "eu", "restricted" */
    int line;
    int onprem;                  /* on-prem pools are allowed */
    char **regions;              /* owned; regions tagged with this residency */
    size_t nregions;
} spw_residency_spec_t;

typedef struct spw_rule {
    char *name;                  /* owned; "rule N" when the config gives none */
    int line;
    /* match: every condition given must hold (none = every job) */
    uint64_t teams;              /* bit t: team index t; 0 = any team */
    uint64_t classes;            /* bit c: class index c; 0 = any class */
    uint64_t labels;             /* every bit must be on the job; 0 = none asked */
    uint32_t gpus_min, gpus_max; /* inclusive; 1 and UINT32_MAX when not given */
    /* effect: lists narrow what earlier rules left; NULL/0 = not given */
    char **allow_providers; size_t n_allow_providers;   /* owned */
    char **deny_providers;  size_t n_deny_providers;
    char **allow_regions;   size_t n_allow_regions;
    char **deny_regions;    size_t n_deny_regions;
    char **allow_families;  size_t n_allow_families;    /* instance families */
    char **deny_families;   size_t n_deny_families;
    char **allow_gpus;      size_t n_allow_gpus;        /* GPU model names */
    spw_spot_rule_t spot;        /* a later matching rule overrides */
    spw_placement_t placement;   /* a later matching rule overrides */
    double max_usd_per_gpu_h;    /* INFINITY = not given; the lowest applies */
} spw_rule_t;

typedef struct spw_gov {
    double origin_s;             /* unix time of engine time 0 (sim: the config's sim start) */
    spw_team_spec_t *teams;      /* owned */
    size_t nteams;
    spw_cohort_spec_t *cohorts;  /* owned */
    size_t ncohorts;
    char **classes;              /* owned: class names rules and residency know */
    size_t nclasses;
    char **labels;               /* owned: "key=value" labels rules name */
    size_t nlabels;
    spw_rule_t *rules;           /* owned, in config order */
    size_t nrules;
    spw_residency_spec_t *residencies; /* owned */
    size_t nresidencies;
    spw_dataset_spec_t *datasets; /* owned */
    size_t ndatasets;
    double max_cloud_usd_per_h;  /* organisation caps; INFINITY = none */
    double max_cloud_gpus;
    double default_max_runtime_s; /* worst case for jobs without max_runtime; 86400 */
    /* data gravity */
    double bandwidth_gbps;       /* between any two sites; 10 */
    double cache_ttl_s;          /* a copied dataset stays in a region this long; 7 days */
    double storage_usd_per_gb_month; /* cost of a cached copy; 0.023 */
    double egress_onprem_usd_per_gb; /* leaving an on-prem pool; 0 */
    double egress_aws_usd_per_gb;    /* list prices of internet egress, first tier */
    double egress_gcp_usd_per_gb;    /* 0.09 aws, 0.12 gcp, 0.087 azure */
    double egress_azure_usd_per_gb;  /* any other provider uses the aws price */
} spw_gov_t;

/* Empty governance with the defaults above (no teams, no rules: everything
 * is allowed and nothing is capped). */
void spw_gov_init(spw_gov_t *g);
void spw_gov_clear(spw_gov_t *g);       /* frees everything, leaves spw_gov_init's state */
void spw_gov_copy(spw_gov_t *dst, const spw_gov_t *src);  /* deep copy into an empty dst */
/* Whether any budget, cap, rule, residency or dataset is configured. */
int spw_gov_active(const spw_gov_t *g);

/* Lookups by name: index, or -1. */
int spw_gov_team(const spw_gov_t *g, const char *name);
int spw_gov_class(const spw_gov_t *g, const char *name);
int spw_gov_label(const spw_gov_t *g, const char *key_eq_value);
int spw_gov_dataset(const spw_gov_t *g, const char *name);
int spw_gov_residency(const spw_gov_t *g, const char *name);

/* The instance family of an offer matches F when its instance type starts
 * with F followed by '.', '-', '_' or the end ("p4d" matches
 * "p4d.24xlarge", "a2" matches "a2-highgpu-1g"). */
int spw_family_matches(const char *family, const char *instance_type);

/* Checks a loaded spec against its fleet: unknown providers, regions, GPU
 * models, families or pools in rules and datasets; a rule whose allow and
 * deny lists contradict each other, that allows nothing at all, or that
 * asks for spot: required with placement: onprem_only; a rule that would
 * widen a residency (allows cloud places for a class whose residency
 * forbids them); a residency with no allowed place.  Errors name the rule
 * or item and its config line (`file` is the config's name). */
int spw_gov_validate(const spw_gov_t *g, const struct spw_fleet *f, const char *file,
                     spw_error_t *err);

/* ---- runtime --------------------------------------------------------------- */

typedef struct spw_govrt spw_govrt_t;

/* Where a job may run, compiled from the rules it matches and its
 * residency.  Profiles are interned: equal ones share an index, so the
 * engine groups interchangeable jobs by it. */
typedef struct spw_profile {
    const uint64_t *offers;      /* bit i: offer i allowed (words: (noffers+63)/64) */
    const uint64_t *pools;       /* bit i: pool i allowed (words: (npools+63)/64) */
    spw_spot_rule_t spot;
    spw_placement_t placement;
    double max_usd_per_gpu_h;    /* INFINITY = no limit */
    int residency;               /* residency index, -1 = none */
    int onprem_by_residency;     /* residency alone took every cloud offer away */
    uint64_t matched[SPW_GOV_RULE_WORDS]; /* rules that matched, bit = rule index */
} spw_profile_t;

spw_govrt_t *spw_govrt_create(const struct spw_fleet *f);
void spw_govrt_destroy(spw_govrt_t *rt);

/* Profile index for job j (its team, jclass, labels, gpus, residency; a
 * job whose class names a residency gets that residency).  Cheap: a few
 * mask tests per rule, then a hash lookup. */
uint32_t spw_govrt_profile_of(spw_govrt_t *rt, const struct spw_job *j);
const spw_profile_t *spw_govrt_profile(const spw_govrt_t *rt, uint32_t idx);

/* Why profile `profile` does not allow on-prem pool `pool` (>= 0) or cloud
 * offer `offer` (pool < 0): "denied by rule 'no-azure' (line 42)",
 * "residency eu allows only on-prem and eu-west-1, eu-central-1", "over
 * rule 'cheap''s limit of $4.00 per GPU-hour", "placement onprem_only (rule
 * 'prod', line 12)".  Returns 0 with the sentence, or -1 when the place is
 * allowed. */
int spw_govrt_why_not(const spw_govrt_t *rt, uint32_t profile, int pool, int offer, char *why,
                      size_t len);

/* What one cloud placement holds against budgets and caps. */
typedef struct spw_charge {
    double usd;                  /* worst-case compute (reserved), then actual */
    double egress_usd;           /* egress + cache storage */
    double usd_per_h;            /* spend rate while it holds its instances */
    double gpus;                 /* cloud GPUs it holds */
} spw_charge_t;

typedef enum spw_admit {
    SPW_ADMIT_OK,
    SPW_ADMIT_BUDGET,            /* the team's budget for the period */
    SPW_ADMIT_EGRESS,            /* the team's monthly egress cap */
    SPW_ADMIT_TEAM_RATE,         /* the team's max_cloud_usd_per_h */
    SPW_ADMIT_TEAM_GPUS,         /* the team's max_cloud_gpus */
    SPW_ADMIT_ORG_RATE,          /* the organisation's max_cloud_usd_per_h */
    SPW_ADMIT_ORG_GPUS,          /* the organisation's max_cloud_gpus */
    SPW_ADMIT_NEVER,             /* over a budget or cap outright: it would not
                                    fit even if nothing else were spent or held */
} spw_admit_t;

/* Whether charge c of team (index, -1 = no team) fits every budget and cap
 * at now.  On refusal why (may be NULL) gets a sentence such as "team ml
 * has $12.40 of its 2026-11 budget left; this placement may cost $40.00". */
spw_admit_t spw_govrt_admit(const spw_govrt_t *rt, int team, double now, const spw_charge_t *c,
                            char *why, size_t len);
/* Whether charge c could ever be admitted for team: it fits the team's
 * whole budget and egress cap and every rate and GPU cap on its own. */
int spw_govrt_could_fit(const spw_govrt_t *rt, int team, const spw_charge_t *c);
/* Records the reservation (the caller checked admit first). */
void spw_govrt_reserve(spw_govrt_t *rt, int team, double now, const spw_charge_t *c);
/* Settles a reservation made at placed_s: drops `reserved`, adds `actual`
 * (actual.usd <= reserved.usd is the caller's promise) to the settled spend
 * of the period of placed_s, and frees its rate and GPUs. */
void spw_govrt_settle(spw_govrt_t *rt, int team, double placed_s, const spw_charge_t *reserved,
                      const spw_charge_t *actual);
/* What spw_govrt_set_aside changed, for spw_govrt_put_back to restore. */
typedef struct spw_govrt_aside {
    int team;                    /* team index, -1 = none */
    double period_s, month_s;    /* unix starts of the two ledger entries touched */
    double period_reserved_usd;  /* their reserved USD before */
    double month_reserved_usd;
    uint32_t period_nlive, month_nlive;  /* and their live reservations */
    double team_usd_per_h;       /* the team's held spend rate, USD/h */
    double team_gpus;            /* and cloud GPUs */
    uint32_t team_nlive;
    double org_usd_per_h;        /* the organisation's, USD/h */
    double org_gpus;
    uint32_t org_nlive;
} spw_govrt_aside_t;

/* Sets a reservation made at placed_s aside, as spw_govrt_settle with
 * nothing spent would, so that its job's other possible placements can be
 * weighed as if it held none; spw_govrt_put_back then restores every figure
 * it changed exactly (no float drift), before anything else changes rt. */
void spw_govrt_set_aside(spw_govrt_t *rt, int team, double placed_s,
                         const spw_charge_t *reserved, spw_govrt_aside_t *a);
void spw_govrt_put_back(spw_govrt_t *rt, const spw_govrt_aside_t *a);
/* Dollars of team's egress cap left in the calendar month containing now
 * (settled + reserved egress taken off; never below 0); INFINITY when the
 * team (index, -1 = none) has no cap. */
double spw_govrt_egress_left(const spw_govrt_t *rt, int team, double now);
/* Settles usd of egress paid at once at now (a copy into an on-prem pool)
 * in the team's egress month; the caller checked spw_govrt_egress_left. */
void spw_govrt_egress_paid(spw_govrt_t *rt, int team, double now, double usd);
/* Adds spend already settled before a restart (the daemon's ended jobs). */
void spw_govrt_add_settled(spw_govrt_t *rt, int team, double placed_s, double usd,
                           double egress_usd);

/* A team's ledger for the period containing `at`. */
typedef struct spw_team_ledger {
    double period_start_s, period_end_s;  /* engine seconds */
    double budget_usd;           /* INFINITY = none */
    double settled_usd;          /* compute + egress of ended placements */
    double reserved_usd;         /* worst case of placements still live */
    double remaining_usd;        /* budget - settled - reserved (INFINITY = none) */
    double egress_settled_usd, egress_reserved_usd;  /* this calendar month */
    double cloud_usd_per_h;      /* now */
    double cloud_gpus;           /* now */
} spw_team_ledger_t;
void spw_govrt_ledger(const spw_govrt_t *rt, int team, double at, spw_team_ledger_t *out);
/* Organisation-wide: spend rate and GPUs held now. */
void spw_govrt_org(const spw_govrt_t *rt, double *usd_per_h, double *gpus);

/* ---- data gravity ------------------------------------------------------------- */

/* What running job data set `dataset` at a site costs at `now`: egress and
 * cache storage in dollars (returned), gigabytes moved and transfer seconds.
 * Zero when the site holds the data (home, replica, or a cached copy not
 * yet expired, in a region or a pool).  site_pool >= 0 for an on-prem pool, else offer index. */
double spw_govrt_data_cost(const spw_govrt_t *rt, int dataset, int site_pool, int site_offer,
                           double now, double *gb, double *transfer_s);
/* Records that the dataset was copied at now to on-prem pool site_pool
 * (>= 0) or to the region of offer site_offer: it is cached there until
 * now + cache_ttl_s (storage is charged by data_cost for regions only). */
void spw_govrt_data_placed(spw_govrt_t *rt, int dataset, int site_pool, int site_offer,
                           double now);

#endif
