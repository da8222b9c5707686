/* fairshare.c: fair share and quotas in the daemon (docs/fairshare.md): the
 * reclaims the engine lists after each turn's schedule are stopped here, on
 * the path of a spot preemption. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fair.h"
#include "daemon/loop_private.h"

void dm_reclaim(spw_daemon_t *d, double now)
{
    spw_job_t **rec;
    size_t n = spw_engine_reclaims(d->engine, &rec);
    if (!n)
        return;
    /* The engine reuses its list on the next call: copy it. */
    spw_job_t **copy = spw_xmalloc(n * sizeof(*copy));
    memcpy(copy, rec, n * sizeof(*copy));
    const spw_gov_t *g = &d->fleet.gov;
    for (size_t i = 0; i < n; i++) {
        djob_t *j = (djob_t *)((char *)copy[i] - offsetof(djob_t, ej));
        uint32_t t = spw_fair_marked_for(spw_engine_fair(d->engine), copy[i]);
        char what[160];
        snprintf(what, sizeof(what), "preempted: team %s is under its quota and took back the "
                 "GPUs borrowed by team %s",
                 t && t <= g->nteams ? g->teams[t - 1].name : "(none)",
                 copy[i]->team && copy[i]->team <= g->nteams ? g->teams[copy[i]->team - 1].name
                                                             : "(none)");
        dm_say(d, "job %s %s", j->id, what);
        dm_job_interrupt(d, j, SPW_INTERRUPT_RECLAIMED, what, now);
    }
    free(copy);
}
