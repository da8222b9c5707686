/* timeparse.c: durations and RFC 3339 times (see timeparse.h); used by the
 * job spec and the config file alike. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "util/numparse.h"
#include "util/timeparse.h"

/* Reads a whole number of at most 9 digits at *p (Slurm's fields). */
static int slurm_field(const char **p, double *out)
{
    const char *start = *p;
    double v = 0;
    while (isdigit((unsigned char)**p) && *p - start < 9)
        v = v * 10 + (*(*p)++ - '0');
    if (*p == start || isdigit((unsigned char)**p))
        return -1;
    *out = v;
    return 0;
}

/* Slurm's forms (sbatch --time): MM:SS, HH:MM:SS, D-HH, D-HH:MM and
 * D-HH:MM:SS.  Returns 0 and fills *out_s, or -1 for anything else. */
static int parse_slurm_time(const char *s, double *out_s)
{
    const char *p = s;
    double f[4], days = 0;
    int n = 0, dash = strchr(s, '-') != NULL;

    if (!dash && !strchr(s, ':'))
        return -1;
    if (dash) {
        if (slurm_field(&p, &days) < 0 || *p++ != '-')
            return -1;
    }
    for (;;) {
        if (n == 3 || slurm_field(&p, &f[n]) < 0)
            return -1;
        n++;
        if (!*p)
            break;
        if (*p++ != ':')
            return -1;
    }
    double h = 0, m = 0, sec = 0;
    if (dash) {           /* D-HH, D-HH:MM, D-HH:MM:SS */
        h = f[0];
        m = n > 1 ? f[1] : 0;
        sec = n > 2 ? f[2] : 0;
    } else if (n == 2) {  /* MM:SS */
        m = f[0];
        sec = f[1];
    } else if (n == 3) {  /* HH:MM:SS */
        h = f[0];
        m = f[1];
        sec = f[2];
    } else {
        return -1;
    }
    /* The leading field may be large (36:00:00, 90:00), as Slurm reads
     * it; the others are clock fields. */
    if ((dash && h > 23) || (m > 59 && (dash || n == 3)) || sec > 59)
        return -1;
    *out_s = days * 86400 + h * 3600 + m * 60 + sec;
    return 0;
}

int spw_parse_duration(const char *s, double *out_s)
{
    static const struct { char unit; double s; } units[] = {
        {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1},
    };
    double total = 0, v;
    size_t next_unit = 0, parts = 0;
    const char *p = s;

    if (spw_parse_double(s, strlen(s), &v) == 0) {
        if (!isfinite(v))
            return -1;
        *out_s = v;
        return 0;
    }
    if (parse_slurm_time(s, out_s) == 0)
        return 0;
    while (*p) {
        const char *start = p;
        size_t k;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '.') {
            p++;
            while (isdigit((unsigned char)*p))
                p++;
        }
        if (p == start || (p - start == 1 && *start == '.') ||
            spw_parse_double(start, (size_t)(p - start), &v) < 0)
            return -1;
        for (k = next_unit; k < 4; k++)
            if (units[k].unit == *p)
                break;
        if (k == 4)
            return -1;  /* no unit, an unknown one, or out of order */
        total += v * units[k].s;
        next_unit = k + 1;
        parts++;
        p++;
    }
    if (parts == 0 || !isfinite(total))
        return -1;
    *out_s = total;
    return 0;
}

/* Reads exactly n digits at *p into *out and advances *p. */
static int digits(const char **p, int n, int *out)
{
    int v = 0, i;

    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), so no time zone or libc state is involved. */
static long days_from_civil(long y, int m, int d)
{
    long era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int spw_parse_rfc3339(const char *s, double *out_s)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec, oh = 0, om = 0, leap, maxd;
    double frac = 0, t;
    const char *p = s;

    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
        *p++ != '-' || digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
        return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
        *p++ != ':' || digits(&p, 2, &sec))
        return -1;
    if (*p == '.') {
        const char *start = p;
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
        if (spw_parse_double(start, (size_t)(p - start), &frac) < 0)
            return -1;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) ||
            oh > 23 || om > 59)
            return -1;
        oh *= sign;
        om *= sign;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    if (y < 1970 || mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 60)
        return -1;
    leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    maxd = mdays[mo - 1] + (mo == 2 && leap);
    if (d < 1 || d > maxd)
        return -1;
    t = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 +
        mi * 60.0 + sec + frac - (oh * 3600.0 + om * 60.0);
    if (t < 0)
        return -1;
    *out_s = t;
    return 0;
}
