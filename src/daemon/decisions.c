/* decisions.c: each placement is kept with what the engine weighed (every
 * candidate, with its reason), so that `spillway explain` can answer "why
 * did my job go there?" after the fact. */

#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/loop_private.h"

/* Every candidate the engine weighs for j now, as JSON: where it could go,
 * whether it may, when it would start, what it would cost and why. */
json_t *spw_daemon_candidates_json(spw_daemon_t *d, djob_t *j)
{
    json_t *arr = json_array();
    if (!j->gpus)
        return arr;
    if (!j->ej.gpus) {
        j->ej.gpus = j->gpus;
        j->ej.gpu_mask = j->gpu_mask;
    }
    size_t cap = d->fleet.npools + d->fleet.noffers + 1;
    spw_candidate_t *c = spw_xmalloc(cap * sizeof(*c));
    size_t n = spw_engine_explain(d->engine, &j->ej, d->now, c, cap);
    char wtxt[48], on[200];
    spw_wait_format(&d->cfg->policy.wait, wtxt, sizeof(wtxt));
    for (size_t i = 0; i < n && i < cap; i++) {
        json_t *o = json_object();
        const char *kind = c[i].kind == SPW_CAND_ONPREM ? "onprem" : c[i].kind == SPW_CAND_WAIT ? "wait" : "cloud";
        const char *name = c[i].kind == SPW_CAND_ONPREM ? d->fleet.pools[c[i].index].name
                           : c[i].kind == SPW_CAND_WAIT
                               ? wtxt
                               : spw_daemon_offer_name(&d->fleet.offers[c[i].index], on, sizeof(on));
        json_object_set_new(o, "kind", json_string(kind));
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "ok", json_boolean(c[i].ok));
        if (c[i].kind == SPW_CAND_CLOUD) {
            json_object_set_new(o, "instances", json_integer(c[i].instances));
            json_object_set_new(o, "emulated", json_boolean(dm_offer_emulated(d, (size_t)c[i].index)));
            /* What the engine cannot see: no account serves the offer,
             * a refusal blocks it, its account is at a limit. */
            char bw[256];
            const char *blocked = dm_offer_blocked(d, (size_t)c[i].index, j->ej.spot, bw, sizeof(bw));
            if (blocked && !c[i].ok)
                snprintf(c[i].why, sizeof(c[i].why), "%s", blocked);
        }
        json_object_set_new(o, "est_start_ts", spw_daemon_ts_json(c[i].est_start_s));
        json_object_set_new(o, "est_cost_usd", spw_daemon_ts_json(c[i].est_cost_usd));
        json_object_set_new(o, "why", json_string(c[i].why));
        json_array_append_new(arr, o);
    }
    free(c);
    return arr;
}

void dm_record_decision(spw_daemon_t *d, djob_t *j, double now)
{
    json_t *o = json_object();
    json_object_set_new(o, "ts", json_real(now));
    json_object_set_new(o, "where", json_string(j->ej.state == SPW_JOB_ONPREM ? "onprem" : "cloud"));
    json_object_set_new(o, "reason", json_string(spw_reason_text(j->ej.reason)));
    if (j->ej.state == SPW_JOB_ONPREM) {
        char pl[160];
        snprintf(pl, sizeof(pl), "%s/%d", d->fleet.pools[j->ej.pool].name, j->ej.node);
        json_object_set_new(o, "placement", json_string(pl));
    } else {
        char on[200];
        json_object_set_new(o, "placement", json_string(spw_daemon_offer_name(
                                                &d->fleet.offers[j->ej.offer], on, sizeof(on))));
        json_object_set_new(o, "instances", json_integer(j->ej.instances));
        json_object_set_new(o, "emulated", json_boolean(dm_offer_emulated(d, (size_t)j->ej.offer)));
    }
    /* To the millisecond: the clock's noise below it is not information. */
    json_object_set_new(o, "waited_s", json_real(round((now - j->submit_ts) * 1000) / 1000));
    json_t *cands = spw_daemon_candidates_json(d, j);
    if (j->ej.state == SPW_JOB_ONPREM) {
        /* The candidates are listed after the placement took its GPUs: say
         * so for the pool that was chosen. */
        json_t *c = json_array_get(cands, (size_t)j->ej.pool);
        char why[200];
        snprintf(why, sizeof(why), "chosen: placed on node %d of pool %s (%s)", j->ej.node,
                 d->fleet.pools[j->ej.pool].name, spw_reason_text(j->ej.reason));
        json_object_set_new(c, "ok", json_true());
        json_object_set_new(c, "est_start_ts", json_real(now));
        json_object_set_new(c, "why", json_string(why));
    }
    json_object_set_new(o, "candidates", cands);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(o);
    spw_error_t err;
    if (text && spw_store_decision_insert(d->store, j->id, now, text, &err) < 0)
        dm_say(d, "cannot record the decision for %s: %s", j->id, err.text);
    free(text);
}
