/* timeparse.h: durations ("1h30m") and RFC 3339 times, as people write them
 * in job specs and config files.  Pure functions: no clock, no locale, no
 * time zone database. */
#ifndef SPW_UTIL_TIMEPARSE_H
#define SPW_UTIL_TIMEPARSE_H

/* Parses a duration: a finite number of seconds ("90", "1.5"), or one or
 * more NUMBER UNIT parts with units d, h, m, s in that order, each at most
 * once ("90s", "30m", "1h30m", "1.5h"), or one of Slurm's forms: MM:SS,
 * HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS ("01:30:00", "2-12:00:00").  Returns
 * 0 and fills *out_s, or -1. */
int spw_parse_duration(const char *s, double *out_s);

/* Parses an RFC 3339 time ("2026-11-21T18:00:00Z", fractional seconds and
 * "+02:00" style offsets allowed, years 1970..9999) into unix seconds.
 * Returns 0 and fills *out_s, or -1. */
int spw_parse_rfc3339(const char *s, double *out_s);

#endif
