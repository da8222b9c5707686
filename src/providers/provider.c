/* provider.c: names of the provider interface's enums and the cost of an
 * instance. */
#include <math.h>
#include <string.h>

#include "providers/provider.h"

#define SPW_NAME_ENTRY(a, s) s,
static const char *const instance_state_names[] = {SPW_INSTANCE_STATES(SPW_NAME_ENTRY)};
static const char *const inst_event_names[] = {SPW_INST_EVENTS(SPW_NAME_ENTRY)};

const char *spw_instance_state_name(spw_instance_state_t s)
{
    return (int)s >= 0 && s < SPW_INSTANCE_STATE_COUNT ? instance_state_names[s] : "?";
}

int spw_instance_state_parse(const char *s, spw_instance_state_t *out, spw_error_t *err)
{
    for (int i = 0; i < SPW_INSTANCE_STATE_COUNT; i++) {
        if (s && strcmp(s, instance_state_names[i]) == 0) {
            *out = (spw_instance_state_t)i;
            return 0;
        }
    }
    return spw_errorf(err, "unknown instance state '%s' (expected booting, ready, "
                      "released or preempted)", s ? s : "(null)");
}

int spw_instance_state_live(spw_instance_state_t s)
{
    return s == SPW_INSTANCE_BOOTING || s == SPW_INSTANCE_READY;
}

const char *spw_inst_event_name(spw_inst_event_kind_t k)
{
    return (int)k >= 0 && k < SPW_INST_EVENT_COUNT ? inst_event_names[k] : "?";
}

double spw_instance_cost_usd(const spw_instance_t *i, double now_s)
{
    double end = now_s;
    if (!spw_instance_state_live(i->state) && !isnan(i->ended_s) && i->ended_s < end)
        end = i->ended_s;
    if (!(end > i->launched_s))
        return 0.0;
    return i->price_usd_per_h * (end - i->launched_s) / 3600.0;
}
