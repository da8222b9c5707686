/* numparse.h: strict, fast parsing of numbers given as (pointer, length)
 * fields that are not NUL-terminated, such as CSV fields. */
#ifndef SPW_UTIL_NUMPARSE_H
#define SPW_UTIL_NUMPARSE_H

#include <stddef.h>
#include <stdint.h>

/* Parses the n bytes at s as a finite decimal number: optional spaces or
 * tabs around it, an optional sign, digits with an optional fraction ("1",
 * "1.5", "1.", ".5") and an optional exponent ("e-3", "E+7").  The whole
 * field must match.  Empty fields, "nan", "inf", hex and values that
 * overflow a double are rejected; results that underflow are accepted.
 * Returns 0 and fills *out, or -1 leaving *out untouched.  The result is
 * correctly rounded (the fallback uses strtod in the C locale's format). */
int spw_parse_double(const char *s, size_t n, double *out);

/* Same rules for a decimal integer (no fraction, no exponent).  Returns -1
 * on anything else or on overflow of int64_t. */
int spw_parse_i64(const char *s, size_t n, int64_t *out);

#endif
