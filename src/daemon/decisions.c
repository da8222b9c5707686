/* decisions.c: each placement is kept with what the engine weighed (every
 * candidate, with its reason), so that `spillway explain` can answer "why
 * did my job go there?" after the fact. */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/loop_private.h"

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
        json_object_set_new(o, "emulated", json_boolean(d->pv_ops->emulated));
    }
    json_object_set_new(o, "waited_s", json_real(now - j->submit_ts));
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
