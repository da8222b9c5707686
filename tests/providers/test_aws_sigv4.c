/* test_aws_sigv4.c: Signature Version 4 (providers/aws/sigv4.c) against every
 * case of AWS's own test suite (aws-sig-v4-test-suite: the canonical request,
 * the string to sign and the Authorization header of each .req), read from
 * the shared contract data (skipped, saying so, where it is absent); and the
 * refusals that need no vectors. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "aws_data.h"
#include "providers/aws/sigv4.h"
#include "util/file.h"

/* The suite's context (its README and context.json). */
static const spw_aws_creds_t suite_creds = {
    .access_key_id = "AKIDEXAMPLE",
    .secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};
static const time_t suite_time = 1440938160;  /* 20150830T123600Z */

/* Reads DIR/NAME.EXT; NULL if there is none. */
static char *read_case(const char *dir, const char *name, const char *ext)
{
    char path[2048];
    size_t len;
    snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
    return spw_read_file(path, &len, NULL);
}

/* The value of header NAME in a request text (first line skipped), copied to
 * out; 0 if absent. */
static int find_header(const char *text, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *l = strchr(text, '\n'); l; l = strchr(l + 1, '\n')) {
        if (strncasecmp(l + 1, name, n) == 0 && l[1 + n] == ':') {
            const char *v = l + 2 + n, *e = strchr(v, '\n');
            snprintf(out, len, "%.*s", (int)(e ? (size_t)(e - v) : strlen(v)), v);
            return 1;
        }
    }
    return 0;
}

/* Signs one case DIR/NAME and checks it: 3 results. */
static void run_case(const char *dir, const char *name)
{
    char *req = read_case(dir, name, "req"), *creq = read_case(dir, name, "creq"),
         *sts = read_case(dir, name, "sts"), *authz = read_case(dir, name, "authz"),
         *sreq = read_case(dir, name, "sreq");
    if (!req || !creq || !sts || !authz) {
        ok(0, "%s: the case's .req, .creq, .sts and .authz are readable", name);
        goto done;
    }
    /* "METHOD PATH?QUERY HTTP/1.1" (the path may hold spaces). */
    char *eol = strchr(req, '\n'), *sp = strchr(req, ' ');
    *eol = '\0';
    char *proto = strstr(sp + 1, " HTTP/");
    *sp = '\0';
    *proto = '\0';
    char *target = sp + 1, *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    /* Headers up to a blank line, continuation lines folded in; then the body. */
    spw_sigv4_header_t h[16];
    size_t nh = 0;
    const char *host = NULL, *body = "";
    char *p = eol + 1;
    while (*p && *p != '\n') {
        char *e = p;
        while (*e && !(e[0] == '\n' && e[1] != ' ' && e[1] != '\t'))
            e++;
        char *colon = strchr(p, ':');
        int last = !*e;
        *e = '\0';
        *colon = '\0';
        if (strcasecmp(p, "Host") == 0)
            host = colon + 1;
        else if (strcasecmp(p, "X-Amz-Date") != 0 && strcasecmp(p, "X-Amz-Security-Token") != 0)
            h[nh++] = (spw_sigv4_header_t){p, colon + 1};
        if (last) {
            p = e;
            break;
        }
        p = e + 1;
    }
    if (*p == '\n')
        body = p + 1;

    /* The session token: the one the signed request carries (signed before,
     * or added after signing in post-sts-header-after). */
    spw_aws_creds_t c = suite_creds;
    if (sreq)
        find_header(sreq, "X-Amz-Security-Token", c.session_token, sizeof(c.session_token));
    spw_sigv4_req_t r = {.method = req, .host = host, .path = target, .query = query,
                         .headers = h, .nheaders = nh, .payload = body,
                         .payload_len = strlen(body), .region = "us-east-1",
                         .service = "service",
                         .token_unsigned = strstr(name, "header-after") != NULL};
    spw_sigv4_t s;
    spw_error_t err = {{0}};
    if (spw_sigv4_sign(&r, &c, suite_time, &s, &err) < 0) {
        ok(0, "%s: signs (%s)", name, err.text);
        goto done;
    }
    is_str(s.canonical_request, creq, "%s: canonical request", name);
    is_str(s.string_to_sign, sts, "%s: string to sign", name);
    is_str(s.authorization, authz, "%s: Authorization", name);
    spw_sigv4_clear(&s);
done:
    free(req);
    free(creq);
    free(sts);
    free(authz);
    free(sreq);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every case under dir (a case is a folder holding NAME/NAME.req;
 * other folders are sub-suites); returns how many. */
static int run_suite(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[64];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 64;)
        if (e->d_name[0] != '.' && e->d_type == DT_DIR)
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof(*names), name_cmp);
    int cases = 0;
    for (size_t i = 0; i < n; i++) {
        char sub[1024], req[2048];
        snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]);
        snprintf(req, sizeof(req), "%s/%s.req", sub, names[i]);
        FILE *f = fopen(req, "r");
        if (f) {
            fclose(f);
            run_case(sub, names[i]);
            cases++;
        } else {
            cases += run_suite(sub);
        }
        free(names[i]);
    }
    return cases;
}

int main(void)
{
    char dir[1024];
    if (aws_data_dir("aws-sigv4/aws-sig-v4-test-suite", dir, sizeof(dir))) {
        int cases = run_suite(dir);
        diag("%d cases of the AWS SigV4 test suite in %s", cases, dir);
        ok(cases >= 34, "the suite's cases were all found (%d)", cases);
    } else {
        printf("ok 1 # skip %s not found: the AWS SigV4 test suite lives in the shared "
               "contract data (set SPILLWAY_DATA or run from the repository root with "
               "../shared/data)\n", dir);
        tap_run++;
    }

    /* Without vectors: refusals, and the values EC2 sends. */
    spw_sigv4_t s;
    spw_error_t err = {{0}};
    spw_sigv4_req_t r = {.method = "POST", .host = "ec2.us-east-1.amazonaws.com",
                         .payload = "Action=DescribeInstances&Version=2016-11-15",
                         .payload_len = 43, .region = "us-east-1", .service = "ec2"};
    spw_aws_creds_t none = {.access_key_id = ""};
    ok(spw_sigv4_sign(&r, &none, suite_time, &s, &err) < 0 && strstr(err.text, "AWS_ACCESS_KEY_ID"),
       "no credentials: refused with what to set (%s)", err.text);
    ok(!s.canonical_request, "a refusal leaves nothing to free");
    spw_aws_creds_t tok = suite_creds;
    strcpy(tok.session_token, "SESSIONTOKEN");
    ok(spw_sigv4_sign(&r, &tok, suite_time, &s, &err) == 0, "EC2 POST with a session token signs");
    ok(strstr(s.authorization, "SignedHeaders=host;x-amz-date;x-amz-security-token,") &&
           strstr(s.authorization, "/20150830/us-east-1/ec2/aws4_request") &&
           !strstr(s.authorization, "wJalr") && !strstr(s.authorization, "SESSIONTOKEN"),
       "EC2: the token is signed, the scope is ec2's, no secret in the header");
    is_str(s.amz_date, "20150830T123600Z", "X-Amz-Date");
    spw_sigv4_clear(&s);
    spw_sigv4_clear(&s);
    spw_strbuf_t b = {0};
    spw_aws_uri_encode(&b, "a b/c+~=\xe1\x88\xb4", 11, 0);
    is_str(b.s, "a%20b%2Fc%2B~%3D%E1%88%B4", "query encoding: RFC 3986, upper-case hex");
    free(b.s);
    return done_testing();
}
