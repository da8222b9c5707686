/* accounts.c: the cloud accounts the daemon buys from (cloud.accounts, or
 * the one default emulated account): each made through the provider
 * registry, the account that serves each offer, their limits
 * (max_instances, max_usd_per_h) and the blocked-offer cache (refusals
 * that rule an offer, a family or a whole account out for a while), told
 * to the engine before each schedule; their events, saves and health. */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/loop_private.h"
#include "providers/registry.h"

/* How long a blocked offer stays blocked when the refusal says nothing
 * (block_s 0) for classes other than NONE, seconds. */
#define SPW_DAEMON_BLOCK_DEFAULT_S 300.0

/* Whether account a serves offer o: its type or name is the offer's
 * provider (an emulated account also serves "emulated" offers), and its
 * regions, when given, hold the offer's region. */
static int serves(const dacct_t *a, const spw_offer_t *o)
{
    if (!a->conf)
        return 1;   /* the default account serves every offer */
    const char *p = o->provider ? o->provider : "";
    if (strcmp(p, a->conf->type) != 0 && strcmp(p, a->conf->name) != 0)
        return 0;
    if (!a->conf->regions)
        return 1;
    for (char **r = a->conf->regions; *r; r++)
        if (strcmp(*r, o->region ? o->region : "") == 0)
            return 1;
    return 0;
}

/* Makes account a's provider.  eo: daemon.emulated's offer emulation. */
static int make_account(spw_daemon_t *d, dacct_t *a, const spw_offer_emulation_t *eo,
                        spw_error_t *err)
{
    const spw_config_t *cfg = d->cfg;
    const spw_account_conf_t *ac = a->conf;
    spw_provider_conf_t pc = {
        .type = ac ? ac->type : SPW_PROVIDER_DEFAULT,
        .offers = d->fleet.offers,
        .noffers = d->fleet.noffers,
        .offer_emulation = eo,
        .noffer_emulation = d->fleet.noffers,
        .seed = cfg->daemon.emulated_seed,
        .state_dir = d->state_dir,
        .name = ac ? ac->name : NULL,
        .daemon_id = d->daemon_id,
        .regions = ac ? (const char *const *)ac->regions : NULL,
        .endpoint_url = ac ? ac->endpoint_url : NULL,
        .dry_run = ac ? ac->dry_run : 0,
        .options = ac ? (const char *const *)ac->options : NULL,
    };
    if (ac) {
        /* Each declared account keeps its state apart:
         * STATE_DIR/accounts/NAME. */
        size_t n = strlen(d->state_dir) + strlen(ac->name) + 16;
        a->state_dir = spw_xmalloc(n);
        snprintf(a->state_dir, n, "%s/accounts", d->state_dir);
        if (mkdir(a->state_dir, 0700) < 0 && errno != EEXIST)
            return spw_errorf(err, "%s: %s", a->state_dir, strerror(errno));
        snprintf(a->state_dir, n, "%s/accounts/%s", d->state_dir, ac->name);
        if (mkdir(a->state_dir, 0700) < 0 && errno != EEXIST)
            return spw_errorf(err, "%s: %s", a->state_dir, strerror(errno));
        pc.state_dir = a->state_dir;
    }
    if (strcmp(pc.type, "emulated") == 0 && d->cloud_hosts_dir) {
        pc.boot_command = cfg->daemon.emulated_boot_command;
        pc.hosts_dir = d->cloud_hosts_dir;
    }
    spw_error_t e2;
    if (spw_provider_create(&pc, &a->ops, &a->pv, &e2) < 0) {
        if (ac)
            return spw_errorf(err, "cloud.accounts[%s] (line %d): %s", ac->name, ac->line, e2.text);
        return spw_errorf(err, "%s", e2.text);
    }
    /* A provider that saves its state saves it once per turn, before the
     * turn's commit (turn.c). */
    if (SPW_PROVIDER_HAS(a->ops, 3, defer_saves))
        a->ops->defer_saves(a->pv, 1);
    return 0;
}

int dm_accounts_setup(spw_daemon_t *d, const spw_offer_emulation_t *eo, spw_error_t *err)
{
    const spw_config_t *cfg = d->cfg;
    size_t n = cfg->naccounts ? cfg->naccounts : 1;
    d->acct = spw_xcalloc(n, sizeof(dacct_t));
    d->offer_acct = spw_xcalloc(d->fleet.noffers + 1, sizeof(int32_t));
    size_t nb = 2 * d->fleet.noffers + 1;
    d->blk_until = spw_xcalloc(nb, sizeof(double));
    d->blk_why = spw_xcalloc(nb, sizeof(*d->blk_why));
    for (size_t i = 0; i < n; i++) {
        dacct_t *a = &d->acct[i];
        a->conf = cfg->naccounts ? &cfg->accounts[i] : NULL;
        snprintf(a->name, sizeof(a->name), "%s", a->conf ? a->conf->name : SPW_PROVIDER_DEFAULT);
        d->nacct = i + 1;
        if (make_account(d, a, eo, err) < 0) {
            d->nacct = i;   /* its provider was not made */
            return -1;
        }
    }
    /* Each offer's account: the first that serves it.  An offer none
     * serves is never chosen. */
    for (size_t o = 0; o < d->fleet.noffers; o++) {
        d->offer_acct[o] = -1;
        for (size_t i = 0; i < d->nacct && d->offer_acct[o] < 0; i++)
            if (serves(&d->acct[i], &d->fleet.offers[o]))
                d->offer_acct[o] = (int32_t)i;
        if (d->offer_acct[o] < 0) {
            spw_engine_offer_unavailable(d->engine, o, 0, INFINITY);
            spw_engine_offer_unavailable(d->engine, o, 1, INFINITY);
        }
    }
    return 0;
}

void dm_accounts_destroy(spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nacct; i++) {
        if (d->acct[i].ops && d->acct[i].pv)
            d->acct[i].ops->destroy(d->acct[i].pv);
        free(d->acct[i].state_dir);
    }
    free(d->acct);
    free(d->offer_acct);
    free(d->blk_until);
    free(d->blk_why);
}

dacct_t *dm_acct_of_offer(const spw_daemon_t *d, size_t offer)
{
    if (offer >= d->fleet.noffers || !d->offer_acct || d->offer_acct[offer] < 0)
        return NULL;
    return &d->acct[d->offer_acct[offer]];
}

int32_t dm_acct_index(const spw_daemon_t *d, const char *name)
{
    for (size_t i = 0; i < d->nacct; i++)
        if (strcmp(d->acct[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

dacct_t *dm_acct_of_inst(const spw_daemon_t *d, const dinst_t *x)
{
    return x->acct >= 0 && (size_t)x->acct < d->nacct ? &d->acct[x->acct] : NULL;
}

int dm_offer_emulated(const spw_daemon_t *d, size_t offer)
{
    const dacct_t *a = dm_acct_of_offer(d, offer);
    return a ? a->ops->emulated : 1;
}

int dm_inst_emulated(const spw_daemon_t *d, const dinst_t *x)
{
    const dacct_t *a = dm_acct_of_inst(d, x);
    return a ? a->ops->emulated : 1;
}

int dm_all_emulated(const spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nacct; i++)
        if (!d->acct[i].ops->emulated)
            return 0;
    return 1;
}

/* ---- limits and blocks ------------------------------------------------ */

/* Why account a cannot take `inst` more instances of offer o (spot or on
 * demand) now, into why; 0 when it can. */
int dm_acct_limit(const spw_daemon_t *d, const dacct_t *a, size_t o, int spot, uint32_t inst,
                  char *why, size_t len)
{
    const spw_offer_t *of = &d->fleet.offers[o];
    double usd_h = (spot ? of->spot_usd_per_h : of->ondemand_usd_per_h) * inst;
    if (a->blocked_until > d->now) {
        snprintf(why, len, "account %s is blocked for %.0f s more: %s", a->name,
                 a->blocked_until - d->now, a->blocked_why);
        return 1;
    }
    if (!a->conf)
        return 0;
    if (a->conf->max_instances && a->live + inst > a->conf->max_instances) {
        snprintf(why, len, "account %s is at max_instances (%u live of %u)", a->name, a->live,
                 a->conf->max_instances);
        return 1;
    }
    if (a->conf->max_usd_per_h > 0 && a->live_usd_per_h + usd_h > a->conf->max_usd_per_h + 1e-9) {
        snprintf(why, len, "account %s is at max_usd_per_h ($%.2f/h live of $%.2f/h)", a->name,
                 a->live_usd_per_h, a->conf->max_usd_per_h);
        return 1;
    }
    return 0;
}

const char *dm_offer_blocked(const spw_daemon_t *d, size_t o, int spot, char *buf, size_t len)
{
    if (o >= d->fleet.noffers)
        return NULL;
    const dacct_t *a = dm_acct_of_offer(d, o);
    if (!a) {
        snprintf(buf, len, "no cloud account serves %s offers", d->fleet.offers[o].provider);
        return buf;
    }
    size_t k = 2 * o + (spot != 0);
    if (d->blk_until[k] > d->now) {
        snprintf(buf, len, "blocked for %.0f s more: %s", d->blk_until[k] - d->now, d->blk_why[k]);
        return buf;
    }
    if (dm_acct_limit(d, a, o, spot, 1, buf, len))
        return buf;
    return NULL;
}

/* Counts each account's live instances and what they cost an hour. */
static void recount(spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nacct; i++) {
        d->acct[i].live = 0;
        d->acct[i].live_usd_per_h = 0;
    }
    for (size_t k = d->inst_lo; k < d->ninst; k++) {
        const dinst_t *x = &d->inst[k];
        dacct_t *a = dm_acct_of_inst(d, x);
        if (!a || !spw_instance_state_live(x->in.state))
            continue;
        a->live++;
        a->live_usd_per_h += x->in.price_usd_per_h;
    }
}

void dm_accounts_gate(spw_daemon_t *d, double now)
{
    recount(d);
    /* An account at a limit (or blocked), or a blocked offer: the engine
     * leaves the offer alone for this turn and picks the next allowed one;
     * asked again at the next turn. */
    double next = now + d->cfg->daemon.tick_s;
    char why[256];
    for (size_t o = 0; o < d->fleet.noffers; o++) {
        dacct_t *a = dm_acct_of_offer(d, o);
        if (!a)
            continue;
        for (int spot = 0; spot < 2; spot++) {
            size_t k = 2 * o + (size_t)spot;
            if (d->blk_until[k] > now)
                spw_engine_offer_unavailable(d->engine, o, spot, d->blk_until[k]);
            else if (dm_acct_limit(d, a, o, spot, 1, why, sizeof(why)))
                spw_engine_offer_unavailable(d->engine, o, spot,
                                             a->blocked_until > now ? a->blocked_until : next);
        }
    }
}

/* Blocks offer o's kind (spot, or both when spot < 0) until `until`. */
static void block_offer(spw_daemon_t *d, size_t o, int spot, double until, const char *why)
{
    for (int s = 0; s < 2; s++) {
        if (spot >= 0 && s != (spot != 0))
            continue;
        size_t k = 2 * o + (size_t)s;
        if (until <= d->blk_until[k])
            continue;
        d->blk_until[k] = until;
        snprintf(d->blk_why[k], sizeof(d->blk_why[k]), "%s", why);
        spw_engine_offer_unavailable(d->engine, o, s, until);
    }
}

/* The family of an instance type: what comes before its first '.'
 * ("p3" of "p3.2xlarge"), or the whole name. */
static size_t family_len(const char *t)
{
    const char *dot = strchr(t, '.');
    return dot ? (size_t)(dot - t) : strlen(t);
}

void dm_block_refusal(spw_daemon_t *d, size_t o, int spot, spw_block_t cls, double block_s,
                      const char *reason, double now)
{
    dacct_t *a = dm_acct_of_offer(d, o);
    const spw_offer_t *of = &d->fleet.offers[o];
    double until = now + (block_s > 0 ? block_s : SPW_DAEMON_BLOCK_DEFAULT_S);
    char why[200], on[200];
    spw_daemon_offer_name(of, on, sizeof(on));
    switch (cls) {
    case SPW_BLOCK_OFFER:
        snprintf(why, sizeof(why), "%s", reason);
        block_offer(d, o, spot, until, why);
        dm_say(d, "offer %s (%s) blocked for %.0f s: %s", on, spot ? "spot" : "on-demand",
               until - now, reason);
        break;
    case SPW_BLOCK_FAMILY: {
        size_t fl = family_len(of->instance_type);
        snprintf(why, sizeof(why), "family %.*s in %s: %s", (int)fl, of->instance_type,
                 of->region, reason);
        for (size_t k = 0; k < d->fleet.noffers; k++) {
            const spw_offer_t *x = &d->fleet.offers[k];
            if (dm_acct_of_offer(d, k) == a && strcmp(x->region, of->region) == 0 &&
                family_len(x->instance_type) == fl &&
                strncmp(x->instance_type, of->instance_type, fl) == 0)
                block_offer(d, k, -1, until, why);
        }
        dm_say(d, "%s: blocked for %.0f s", why, until - now);
        break;
    }
    case SPW_BLOCK_ACCOUNT:
        if (!a)
            break;
        a->blocked_until = until;
        snprintf(a->blocked_why, sizeof(a->blocked_why), "%s", reason);
        snprintf(why, sizeof(why), "account %s: %s", a->name, reason);
        for (size_t k = 0; k < d->fleet.noffers; k++)
            if (dm_acct_of_offer(d, k) == a)
                block_offer(d, k, -1, until, why);
        dm_say(d, "account %s launches nothing for %.0f s: %s", a->name, until - now, reason);
        break;
    default:
        break;
    }
}

void dm_release_all(spw_daemon_t *d, double now)
{
    size_t n = 0;
    for (size_t k = d->inst_lo; k < d->ninst; k++) {
        dinst_t *x = &d->inst[k];
        const dacct_t *a = dm_acct_of_inst(d, x);
        spw_error_t err;
        if (!a || !spw_instance_state_live(x->in.state))
            continue;
        if (a->ops->release(a->pv, &x->in, now, &err) < 0 && errno != ENOENT) {
            dm_say(d, "cannot release instance %s: %s", x->in.id, err.text);
            continue;
        }
        x->in.state = SPW_INSTANCE_RELEASED;
        x->in.ended_s = now;
        dm_inst_save(d, x);
        n++;
    }
    dm_say(d, "released %zu cloud instance(s) on stop (--release-all-on-stop)", n);
}

/* ---- events, saves, health -------------------------------------------- */

/* Account a's live spot prices, when its provider has new ones: they
 * replace the catalog's in the fleet the engine ranks offers by (and
 * reserves budgets at); what is already bought keeps its price. */
static void take_spot_prices(spw_daemon_t *d, dacct_t *a, double now)
{
    size_t n = d->fleet.noffers;
    if (!n || !SPW_PROVIDER_HAS(a->ops, 5, spot_prices))
        return;
    double *p = spw_xmalloc(n * sizeof(double));
    int moved = 0;
    if (a->ops->spot_prices(a->pv, p, n) == 1) {
        for (size_t k = 0; k < n; k++) {
            spw_offer_t *o = &d->fleet.offers[k];
            if (isnan(p[k]) || !(p[k] > 0) || isnan(o->spot_usd_per_h) ||
                dm_acct_of_offer(d, k) != a)
                continue;
            if (p[k] != o->spot_usd_per_h) {
                char on[200];
                dm_say(d, "offer %s: live spot price %.4f USD/h (was %.4f, %s)",
                       spw_daemon_offer_name(o, on, sizeof(on)), p[k], o->spot_usd_per_h,
                       isnan(d->spot_live_ts[k]) ? "the catalog's" : "live");
                o->spot_usd_per_h = p[k];
                moved = 1;
            }
            d->spot_live_ts[k] = now;
        }
    }
    if (moved)
        spw_engine_offers_repriced(d->engine);
    free(p);
}

void dm_accounts_poll(spw_daemon_t *d, double now)
{
    spw_inst_event_t ev[64];
    for (size_t i = 0; i < d->nacct; i++) {
        size_t m;
        while ((m = d->acct[i].ops->poll(d->acct[i].pv, now, ev, 64)) > 0)
            for (size_t k = 0; k < m; k++)
                dm_handle_inst_event(d, &ev[k], now);
        take_spot_prices(d, &d->acct[i], now);
    }
}

void dm_accounts_flush(spw_daemon_t *d, double now)
{
    spw_error_t err;
    int bad = 0;
    const char *name = "";
    for (size_t i = 0; i < d->nacct; i++) {
        dacct_t *a = &d->acct[i];
        if (SPW_PROVIDER_HAS(a->ops, 3, flush) && a->ops->flush(a->pv, &err) < 0 && !bad) {
            bad = 1;
            name = a->name;
        }
    }
    dm_say_repeat(d, &d->rep_flush, bad, now, "saving the cloud's state",
                  "cannot save the state of cloud account %s: %s", name, bad ? err.text : "");
    /* Each account's health, for /healthz (read under hmu, without mu). */
    char why[sizeof(d->acct_health)] = "";
    for (size_t i = 0; i < d->nacct && !why[0]; i++) {
        dacct_t *a = &d->acct[i];
        char w[200] = "";
        if (SPW_PROVIDER_HAS(a->ops, 4, health) && a->ops->health(a->pv, w, sizeof(w)) != 0)
            snprintf(why, sizeof(why), "cloud account %s cannot launch: %.190s", a->name, w);
        else if (a->blocked_until > now)
            snprintf(why, sizeof(why), "cloud account %s cannot launch: %.190s", a->name,
                     a->blocked_why);
    }
    pthread_mutex_lock(&d->hmu);
    snprintf(d->acct_health, sizeof(d->acct_health), "%s", why);
    pthread_mutex_unlock(&d->hmu);
}

json_t *dm_blocked_json(const spw_daemon_t *d)
{
    json_t *arr = json_array();
    char on[200];
    for (size_t o = 0; o < d->fleet.noffers; o++)
        for (int s = 0; s < 2; s++) {
            size_t k = 2 * o + (size_t)s;
            if (!(d->blk_until[k] > d->now))
                continue;
            json_t *b = json_object();
            json_object_set_new(b, "offer", json_string(spw_daemon_offer_name(
                                                &d->fleet.offers[o], on, sizeof(on))));
            json_object_set_new(b, "market", json_string(s ? "spot" : "ondemand"));
            json_object_set_new(b, "until_ts", json_real(d->blk_until[k]));
            json_object_set_new(b, "why", json_string(d->blk_why[k]));
            json_array_append_new(arr, b);
        }
    return arr;
}
