/* fuzz_telemetry.c: libFuzzer driver for the nvidia-smi CSV reader of the
 * GPU telemetry (spw_telemetry_parse): any bytes, NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    spw_gpu_sample_t out[SPW_TELEMETRY_GPUS_MAX];
    size_t n = spw_telemetry_parse(text, out, SPW_TELEMETRY_GPUS_MAX);
    for (size_t i = 0; i < n; i++)
        if (!(out[i].util_pct >= 0 && out[i].util_pct <= 100) || out[i].index < 0)
            abort();
    free(text);
    return 0;
}
