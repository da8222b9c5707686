/* test_telemetry.c: the nvidia-smi CSV reader of the GPU telemetry. */
#include <string.h>

#include "daemon/telemetry.h"
#include "tap.h"

int main(void)
{
    spw_gpu_sample_t g[SPW_TELEMETRY_GPUS_MAX];
    size_t n = spw_telemetry_parse("0, GPU-1c2b, 37, 1024, 81920\n"
                                   "1, GPU-9f00, 5, 0, 40960\n", g, SPW_TELEMETRY_GPUS_MAX);
    is(n, 2, "two GPUs read");
    ok(g[0].index == 0 && strcmp(g[0].uuid, "GPU-1c2b") == 0, "index and uuid of GPU 0");
    ok(g[0].util_pct == 37 && g[0].mem_used_mib == 1024 && g[0].mem_total_mib == 81920,
       "utilisation and memory of GPU 0");
    ok(g[1].index == 1 && g[1].util_pct == 5 && g[1].mem_total_mib == 40960, "GPU 1");

    n = spw_telemetry_parse("0, GPU-a, [N/A], [Not Supported], 81920\r\n", g, 8);
    ok(n == 1 && g[0].util_pct == 0 && g[0].mem_used_mib == 0, "[N/A] values read as 0, CRLF ends");

    n = spw_telemetry_parse("index, uuid, utilization.gpu\n"
                            "NVIDIA-SMI has failed because it couldn't communicate\n"
                            "0, GPU-a, -3, 1, 2\n"
                            "0, GPU-a, 3, 1\n"
                            "0, GPU-a, 3, 1, 2, 9\n"
                            "2.5, GPU-a, 3, 1, 2\n", g, 8);
    is(n, 0, "headers, errors, negative values, wrong field counts and a fractional index are skipped");

    n = spw_telemetry_parse("3, GPU-z, 250, 1, 2\n", g, 8);
    ok(n == 1 && g[0].util_pct == 100, "utilisation is clamped to 100");

    char big[8192] = "";
    for (int i = 0; i < 100; i++)
        strcat(big, "1, GPU-x, 1, 1, 1\n");
    is(spw_telemetry_parse(big, g, 4), 4, "no more than max GPUs are written");
    return done_testing();
}
