/* fuzz_spot_trace.c: libFuzzer driver for the spot availability trace
 * parser ({"metadata":{"gap_seconds":N},"data":[...]}). */
#include <stdint.h>

#include "util/spot_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spw_spot_trace_t t;
    spw_error_t err;
    if (spw_spot_trace_parse((const char *)data, size, "fuzz.json", &t, &err) == 0) {
        (void)spw_spot_trace_at(&t, spw_spot_trace_tick(&t, 0, 1e6));
        (void)spw_spot_trace_at(&t, spw_spot_trace_tick(&t, 5, 0));
        spw_spot_trace_clear(&t);
    }
    return 0;
}
