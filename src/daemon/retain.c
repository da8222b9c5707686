/* retain.c: ended jobs leave memory daemon.job_retention_s after their end,
 * so the daemon's memory follows its live jobs and not its history: the
 * sweep that lets them go, what they still count for once gone (/metrics'
 * job counts and interruptions, costs per period, team and pool), and their
 * records read back from the store when a user asks for one. */

#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/loop_private.h"

/* The loop looks for jobs to let go at most this often, seconds. */
#define EVICT_EVERY_S 1.0

/* After letting go of at least this many jobs at once, the allocator gives
 * the freed pages back to the system (malloc_trim), so that the daemon's
 * RSS falls with them rather than staying at its peak. */
#define TRIM_AFTER 256

int dm_job_retained(const spw_daemon_t *d, double end_ts, double now)
{
    return end_ts + d->cfg->daemon.job_retention_s > now;
}

/* The index of team in g->teams (added when missing), whose job seq is. */
static uint32_t gone_team(dgone_t *g, const char *team, int64_t seq)
{
    for (size_t i = 0; i < g->nteams; i++)
        if (strcmp(g->teams[i].name, team) == 0) {
            if (seq < g->teams[i].first_seq)
                g->teams[i].first_seq = seq;
            return (uint32_t)i;
        }
    g->teams = spw_xrealloc(g->teams, (g->nteams + 1) * sizeof(*g->teams));
    g->teams[g->nteams] = (dgone_team_t){spw_xstrdup(team), seq};
    return (uint32_t)g->nteams++;
}

/* The costs row of (kind, start, team, pool, commit), added when missing. */
static dgone_cost_t *gone_row(dgone_t *g, spw_period_t kind, double start, uint32_t team,
                              int32_t pool, int32_t commit)
{
    for (size_t i = g->ncost; i-- > 0;) {
        dgone_cost_t *r = &g->cost[i];
        if (r->kind == kind && r->start_ts == start && r->team == team && r->pool == pool &&
            r->commit == commit)
            return r;
    }
    if (g->ncost == g->capcost) {
        g->capcost = g->capcost ? 2 * g->capcost : 16;
        g->cost = spw_xrealloc(g->cost, g->capcost * sizeof(*g->cost));
    }
    dgone_cost_t *r = &g->cost[g->ncost++];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->start_ts = start;
    r->team = team;
    r->pool = pool;
    r->commit = commit;
    return r;
}

void dm_job_retire(spw_daemon_t *d, const djob_t *j)
{
    dgone_t *g = &d->gone;
    size_t np = d->fleet.npools;
    if (!g->by_state)
        g->by_state = spw_xcalloc((np + 1) * SPW_DJOB_STATE_COUNT, sizeof(uint64_t));
    size_t p = j->pool >= 0 && (size_t)j->pool < np ? (size_t)j->pool : np;
    g->by_state[p * SPW_DJOB_STATE_COUNT + j->st]++;
    g->n++;
    g->preemptions += spw_job_rare(&j->ej)->preemptions;
    g->restarts += spw_job_rare(&j->ej)->restarts;
    g->failures += spw_job_rare(&j->ej)->failures;
    g->onprem_usd += j->onprem_usd;
    /* An ended job holds nothing, so its settled figures are its whole
     * cost, charged (as `costs` does) to the period of its last placement. */
    uint32_t team = gone_team(g, j->team, j->seq);
    double at = isnan(j->charge_ts) ? j->submit_ts : j->charge_ts;
    if (isnan(at))
        return;
    static const spw_period_t kinds[] = {SPW_PERIOD_MONTH, SPW_PERIOD_WEEK};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        dgone_cost_t *r = gone_row(g, kinds[k], spw_period_start(kinds[k], at), team,
                                   p < np ? (int32_t)p : -1, dm_job_commitment(d, j));
        r->onprem_usd += j->onprem_usd;
        r->onprem_gpu_h += j->onprem_gpu_h;
        r->cloud_usd += j->cloud_usd;
        r->commit_usd += j->commit_usd;
        r->cloud_gpu_h += j->cloud_gpu_h;
        r->settled_usd += j->led_usd + spw_daemon_job_budget_egress(j);
        r->egress_usd += j->led_egress_usd;
        r->jobs++;
        r->rejected += j->st == SPW_DJOB_REJECTED;
    }
}

/* Whether ended job j may leave memory at now: past its retention, its end
 * committed, nothing of it left running, held or waited for. */
static int evictable(const spw_daemon_t *d, const djob_t *j, double now)
{
    return spw_djob_state_terminal(j->st) && !j->touched && !j->running && !j->stopping &&
           !j->pending && !j->unsure && !j->holds && !j->ninst && !j->ej.l &&
           !dm_job_retained(d, j->end_ts, now);
}

void dm_note_ended(spw_daemon_t *d, const djob_t *j)
{
    if (d->nended == d->capended) {
        d->capended = d->capended ? 2 * d->capended : 1024;
        d->ended = spw_xrealloc(d->ended, d->capended * sizeof(*d->ended));
    }
    d->ended[d->nended++] = j->seq;
}

void dm_evict(spw_daemon_t *d, double now)
{
    if (now - d->evict_ts < EVICT_EVERY_S)
        return;
    d->evict_ts = now;
    while (d->evict_lo < d->njobs && !d->jobs[d->evict_lo])
        d->evict_lo++;
    /* Only ended jobs can leave: those in d->ended (an entry whose job left
     * already, or was noted twice, finds NULL and goes). */
    size_t n = 0, k = 0;
    for (size_t i = 0; i < d->nended; i++) {
        const djob_t *j = d->jobs[d->ended[i]];
        n += j && evictable(d, j, now);
    }
    if (n)
        spw_engine_forget_left(d->engine);   /* it may still point at them */
    for (size_t i = 0; i < d->nended; i++) {
        int64_t s = d->ended[i];
        djob_t *j = d->jobs[s];
        if (!j)
            continue;
        if (!n || !evictable(d, j, now)) {
            d->ended[k++] = s;
            continue;
        }
        dm_job_retire(d, j);
        d->jobs[s] = NULL;
        d->njobs_mem--;
        dm_job_free(j);
    }
    d->nended = k;
    if (n >= TRIM_AFTER)
        malloc_trim(0);
}

void dm_gone_free(spw_daemon_t *d)
{
    dgone_t *g = &d->gone;
    for (size_t i = 0; i < g->nteams; i++)
        free(g->teams[i].name);
    free(g->teams);
    free(g->cost);
    free(g->by_state);
    memset(g, 0, sizeof(*g));
}

/* ---- records read back from the store ------------------------------------------ */

djob_t *spw_daemon_find_stored(spw_daemon_t *d, const char *id, djob_t **owned)
{
    *owned = NULL;
    djob_t *j = spw_daemon_find(d, id);
    if (j || strncmp(id, "j-", 2) != 0)
        return j;
    spw_store_job_t r;
    spw_error_t err;
    if (spw_store_job_get(d->store, id, &r, &err) < 0)
        return NULL;
    /* Only an ended job leaves memory; any other row not in memory is not
     * a job the daemon has (yet). */
    if (spw_djob_state_terminal(r.state))
        *owned = dm_job_from_row(d, &r, &err);
    spw_store_job_clear(&r);
    return *owned;
}

void spw_daemon_view_free(djob_t *owned)
{
    dm_job_free(owned);
}

typedef struct listctx {
    spw_daemon_t *d;
    djob_t **out;               /* records made so far */
    long n, max;                /* how many, at most */
    spw_error_t *err;
    int failed;                 /* a row could not be read */
} listctx_t;

static int list_one(const spw_store_job_t *r, void *arg)
{
    listctx_t *c = arg;
    spw_daemon_t *d = c->d;
    if ((size_t)r->seq < d->njobs && d->jobs[r->seq])
        return 0;   /* in memory: the caller has it */
    if (!spw_djob_state_terminal(r->state))
        return 0;
    if (!(c->out[c->n] = dm_job_from_row(d, r, c->err))) {
        c->failed = 1;
        return 1;
    }
    return ++c->n == c->max;
}

long spw_daemon_stored_jobs(spw_daemon_t *d, long long after, long long before, int st,
                            const char *team, long max, djob_t **out, spw_error_t *err)
{
    if (max <= 0 || !d->gone.n)
        return 0;   /* none has left memory */
    spw_store_filter_t f = {.state = st, .team = team, .after_seq = after, .before_seq = before};
    listctx_t c = {.d = d, .out = out, .max = max, .err = err};
    if (spw_store_job_list(d->store, &f, list_one, &c, err) < 0 || c.failed) {
        for (long i = 0; i < c.n; i++)
            dm_job_free(out[i]);
        return -1;
    }
    return c.n;
}
