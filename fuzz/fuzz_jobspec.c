/* fuzz_jobspec.c: libFuzzer driver for the job spec parser (YAML or JSON).
 * Anything that parses must round-trip through its canonical JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spw_jobspec_t s, back;
    spw_error_t err;
    if (spw_jobspec_parse("fuzz", (const char *)data, size, &s, &err) < 0)
        return 0;
    char *json = spw_jobspec_to_json(&s);
    if (!json)
        abort();
    if (spw_jobspec_parse("canon", json, strlen(json), &back, &err) < 0
        || !spw_jobspec_equal(&s, &back))
        abort();
    spw_jobspec_free(&back);
    free(json);
    spw_jobspec_free(&s);
    return 0;
}
