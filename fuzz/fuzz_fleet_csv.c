/* fuzz_fleet_csv.c: libFuzzer driver for the two CSV files a config points
 * at: the cloud offer catalog (spw_offers_load) and the Alibaba node list
 * (spw_nodes_load).  Both read a path, so the bytes go into a memfd first.
 *
 * Input: one selector byte, then the file.  Selector bit 0: node list (1) or
 * catalog (0); bit 1: filter the catalog on providers aws,gcp and region
 * us-east-1.  Each input starts from a fleet that already has one pool and
 * one model, as a config would leave it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"
#include "core/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfd = -1;      /* holds the current input, reused across inputs */
static char memfd_path[64]; /* "/proc/self/fd/N" */

static void put_input(const uint8_t *data, size_t size)
{
    if (memfd < 0) {
        memfd = memfd_create("fuzz_fleet_csv", MFD_CLOEXEC);
        if (memfd < 0)
            abort();
        snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
    }
    if (ftruncate(memfd, 0) < 0)
        abort();
    for (size_t off = 0; off < size;) {
        ssize_t w = pwrite(memfd, data + off, size - off, (off_t)off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned sel = data[0];
    put_input(data + 1, size - 1);

    spw_fleet_t f = {0};
    spw_error_t err;
    if (spw_models_intern(&f.models, "A100", 4, &err) != 0)
        abort();
    f.pools = spw_xcalloc(1, sizeof(spw_pool_spec_t));
    f.npools = 1;
    f.pools[0].name = spw_xstrdup("dc1");
    f.pools[0].nnodes = 1;
    f.pools[0].node_gpus = spw_xcalloc(1, sizeof(uint16_t));
    f.pools[0].node_gpus[0] = 8;
    f.pools[0].model = 0;

    size_t npools = f.npools, noffers = f.noffers;
    int rc;
    if (sel & 1) {
        rc = spw_nodes_load(&f, memfd_path, "openb", 0.9, &err);
    } else {
        static const char *const providers[] = {"aws", "gcp", NULL};
        static const char *const regions[] = {"us-east-1", NULL};
        rc = spw_offers_load(&f, memfd_path, (sel & 2) ? providers : NULL,
                             (sel & 2) ? regions : NULL, 60, &err);
    }
    /* No side effects on failure; on success every pool and offer is sane. */
    if (rc < 0 && (f.npools != npools || f.noffers != noffers))
        abort();
    if (rc == 0) {
        for (size_t i = 0; i < f.npools; i++)
            for (uint32_t k = 0; k < f.pools[i].nnodes; k++)
                if (f.pools[i].node_gpus[k] == 0 || f.pools[i].node_gpus[k] > SPW_MAX_NODE_GPUS)
                    abort();
        for (size_t i = 0; i < f.noffers; i++)
            if (f.offers[i].gpus == 0 || f.offers[i].model < 0 || f.offers[i].model >= f.models.n)
                abort();
    }
    spw_fleet_clear(&f);
    return 0;
}
