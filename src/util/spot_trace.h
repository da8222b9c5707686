/* spot_trace.h: spot availability traces, the JSON format of
 * ../shared/data/spot-traces/: {"metadata":{"gap_seconds":N},"data":[...]}
 * where data[k] is how many instances were available during tick k, which
 * lasts gap_seconds.  The emulated provider preempts spot instances from it
 * and the single-job spot replay (sim/spotjob.h) reads availability from it. */
#ifndef SPW_UTIL_SPOT_TRACE_H
#define SPW_UTIL_SPOT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct spw_spot_trace {
    double gap_s;               /* length of one tick, seconds, > 0 and finite */
    uint32_t *avail;            /* owned; instances available in each tick */
    size_t n;                   /* ticks in avail, > 0 */
} spw_spot_trace_t;

/* Parses a trace from text[0 .. len) (no NUL needed); `name` (a file name) is
 * borrowed for the call and starts every error message ("NAME:LINE:COL: ..."
 * for malformed JSON, "NAME: data[4] is -1: ..." for bad values).  Rejected:
 * anything but an object, a missing, non-numeric, zero or negative
 * metadata.gap_seconds, a missing or empty data array, and counts that are not
 * integers in 0 .. 4294967295.  Other members are ignored.  Returns 0 with
 * *out filled (free with spw_spot_trace_clear), or -1 with err and *out
 * untouched. */
int spw_spot_trace_parse(const char *text, size_t len, const char *name,
                         spw_spot_trace_t *out, spw_error_t *err);

/* Reads and parses the file at path (see spw_spot_trace_parse). */
int spw_spot_trace_load(const char *path, spw_spot_trace_t *out, spw_error_t *err);

/* A trace of whole steps of k ticks: tick i of *out is the least count of
 * ticks i*k .. i*k + k - 1 of t (a step has spot only if every tick in it
 * has), gap_s is k times t's, and a partial last step is dropped.  Returns
 * 0 with *out filled (free with spw_spot_trace_clear), or -1 with err when
 * k is 0 or t is shorter than one step. */
int spw_spot_trace_coarsen(const spw_spot_trace_t *t, size_t k, spw_spot_trace_t *out,
                           spw_error_t *err);

/* Frees t's array and leaves an empty trace.  NULL-safe. */
void spw_spot_trace_clear(spw_spot_trace_t *t);

/* The tick that time t_s falls in, for a trace whose tick 0 starts at
 * start_s: floor((t_s - start_s) / gap_s), negative before the start,
 * clamped to +-9e18 (0 for NAN). */
int64_t spw_spot_trace_tick(const spw_spot_trace_t *t, double start_s, double t_s);

/* Instances available during tick k.  The trace repeats forever in both
 * directions (tick n is tick 0 again), so a daemon that runs longer than the
 * trace keeps seeing realistic availability. */
uint32_t spw_spot_trace_at(const spw_spot_trace_t *t, int64_t k);

#endif
