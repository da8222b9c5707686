/* fuzz_config.c: libFuzzer driver for the fleet/policy YAML reader
 * (spw_config_load_mem, over the libyaml-based tree in util/yaml.c).
 *
 * Relative file names (nodes_from, offers) resolve under /nonexistent, so
 * they fail cleanly; absolute ones are read, except that inputs naming
 * /dev, /proc or /sys are skipped (a device such as /dev/zero never ends). */
#include <stdint.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int mentions(const uint8_t *data, size_t size, const char *s)
{
    return memmem(data, size, s, strlen(s)) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (mentions(data, size, "/dev") || mentions(data, size, "/proc")
        || mentions(data, size, "/sys"))
        return 0;
    spw_config_t cfg;
    spw_error_t err;
    if (spw_config_load_mem(&cfg, "<fuzz config>", (const char *)data, size, "/nonexistent",
                            &err) == 0)
        spw_config_free(&cfg);
    return 0;
}
