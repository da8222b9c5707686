/* creds.c: the AWS credential chain (see creds.h). */
#include "providers/aws/creds.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "providers/aws/ec2.h"
#include "providers/aws/http.h"
#include "util/file.h"

#define MAX_ROLE_DEPTH 4        /* source_profile hops */
#define IMDS_TIMEOUT_MS 1000L   /* each IMDS call, as AWS's SDKs */

/* Copies s to a fixed field; 0, or -1 when it does not fit. */
static int put(char *dst, size_t len, const char *s)
{
    size_t n = strlen(s);
    if (n >= len)
        return -1;
    memcpy(dst, s, n + 1);
    return 0;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* ---- INI files --------------------------------------------------------- */

/* Copies the value of key in [section] of an INI text to out; 1 if found. */
static int ini_get(const char *text, const char *section, const char *key, char *out,
                   size_t len)
{
    int in = 0;
    size_t sl = strlen(section), kl = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        while (*l == ' ' || *l == '\t')
            l++;
        size_t n = strcspn(l, "\r\n");
        if (*l == '[') {
            const char *s = l + 1, *e = memchr(l, ']', n);
            while (s < l + n && *s == ' ')
                s++;
            while (e && e > s && e[-1] == ' ')
                e--;
            in = e && (size_t)(e - s) == sl && strncmp(s, section, sl) == 0;
            continue;
        }
        if (!in || *l == '#' || *l == ';' || strncasecmp(l, key, kl) != 0)
            continue;
        const char *p = l + kl;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '=')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t vl = (size_t)(l + n - p);
        while (vl && isspace((unsigned char)p[vl - 1]))
            vl--;
        snprintf(out, len, "%.*s", (int)vl, p);
        return 1;
    }
    return 0;
}

/* The two files of a profile. */
typedef struct aws_files {
    char cred_path[1024];       /* the shared credentials file */
    char conf_path[1024];       /* the config file */
    char *cred;                 /* its text, owned; "" when unreadable */
    char *conf;                 /* its text, owned; "" when unreadable */
} aws_files_t;

static void files_load(aws_files_t *f)
{
    const char *home = env("HOME") ? env("HOME") : "/nonexistent";
    const char *c = env("AWS_SHARED_CREDENTIALS_FILE"), *g = env("AWS_CONFIG_FILE");
    if (c)
        snprintf(f->cred_path, sizeof(f->cred_path), "%s", c);
    else
        snprintf(f->cred_path, sizeof(f->cred_path), "%s/.aws/credentials", home);
    if (g)
        snprintf(f->conf_path, sizeof(f->conf_path), "%s", g);
    else
        snprintf(f->conf_path, sizeof(f->conf_path), "%s/.aws/config", home);
    size_t len;
    f->cred = spw_read_file(f->cred_path, &len, NULL);
    f->conf = spw_read_file(f->conf_path, &len, NULL);
    if (!f->cred)
        f->cred = spw_xstrdup("");
    if (!f->conf)
        f->conf = spw_xstrdup("");
}

static void files_free(aws_files_t *f)
{
    if (f->cred)
        OPENSSL_cleanse(f->cred, strlen(f->cred));
    free(f->cred);
    free(f->conf);
}

/* A profile's key in its credentials section, else its config section. */
static int profile_get(const aws_files_t *f, const char *name, const char *key, char *out,
                       size_t len)
{
    char sect[160];
    if (strcmp(name, "default") == 0)
        snprintf(sect, sizeof(sect), "default");
    else
        snprintf(sect, sizeof(sect), "profile %s", name);
    return ini_get(f->cred, name, key, out, len) || ini_get(f->conf, sect, key, out, len);
}

/* ---- STS AssumeRole ------------------------------------------------------ */

static int assume_role(const spw_aws_creds_opts_t *o, const aws_files_t *f, const char *profile,
                       const char *role, const spw_aws_creds_t *src, double now_s,
                       spw_aws_creds_t *out, spw_error_t *err)
{
    char region[64] = "", name[128] = "", ext[256] = "", dur[16] = "", url[512];
    if (!profile_get(f, profile, "region", region, sizeof(region)))
        snprintf(region, sizeof(region), "%s", o->region ? o->region : "us-east-1");
    if (!profile_get(f, profile, "role_session_name", name, sizeof(name)))
        snprintf(name, sizeof(name), "spillway");
    profile_get(f, profile, "external_id", ext, sizeof(ext));
    profile_get(f, profile, "duration_seconds", dur, sizeof(dur));
    const char *e = env("AWS_ENDPOINT_URL_STS") ? env("AWS_ENDPOINT_URL_STS")
                                                : env("AWS_ENDPOINT_URL");
    if (e)
        snprintf(url, sizeof(url), "%s", e);
    else
        snprintf(url, sizeof(url), "https://sts.%s.amazonaws.com", region);
    spw_strbuf_t body = {0}, resp = {0};
    spw_strbuf_add(&body, "Action=AssumeRole&Version=2011-06-15");
    spw_ec2_form_add(&body, "RoleArn", role);
    spw_ec2_form_add(&body, "RoleSessionName", name);
    if (ext[0])
        spw_ec2_form_add(&body, "ExternalId", ext);
    if (dur[0])
        spw_ec2_form_add(&body, "DurationSeconds", dur);
    spw_aws_endpoint_t ep = {.url = url, .region = region, .service = "sts",
                             .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000};
    long status = 0;
    int rc = spw_aws_post(&ep, src, (time_t)now_s, body.s, &status, &resp, err);
    free(body.s);
    if (rc < 0)
        return -1;
    static const char *const p_key[] = {"AssumeRoleResult", "Credentials", "AccessKeyId", NULL};
    static const char *const p_sec[] = {"AssumeRoleResult", "Credentials", "SecretAccessKey",
                                        NULL};
    static const char *const p_tok[] = {"AssumeRoleResult", "Credentials", "SessionToken", NULL};
    static const char *const p_exp[] = {"AssumeRoleResult", "Credentials", "Expiration", NULL};
    static const char *const p_code[] = {"Error", "Code", NULL};
    static const char *const p_msg[] = {"Error", "Message", NULL};
    const char *x = resp.s ? resp.s : "";
    char when[64];
    memset(out, 0, sizeof(*out));
    if (status != 200 ||
        spw_aws_xml_text(x, resp.len, p_key, out->access_key_id, sizeof(out->access_key_id)) ||
        spw_aws_xml_text(x, resp.len, p_sec, out->secret_access_key,
                         sizeof(out->secret_access_key)) ||
        spw_aws_xml_text(x, resp.len, p_tok, out->session_token, sizeof(out->session_token))) {
        char code[64], msg[160];
        spw_aws_xml_text(x, resp.len, p_code, code, sizeof(code));
        spw_aws_xml_text(x, resp.len, p_msg, msg, sizeof(msg));
        OPENSSL_cleanse(resp.s, resp.len);
        free(resp.s);
        OPENSSL_cleanse(out, sizeof(*out));
        return spw_errorf(err, "STS AssumeRole of %s (profile %s) at %s: HTTP %ld %s%s%s", role,
                          profile, url, status, code[0] ? code : "without credentials",
                          msg[0] ? ": " : "", msg);
    }
    if (spw_aws_xml_text(x, resp.len, p_exp, when, sizeof(when)) == 0)
        out->expires_s = spw_ec2_time_parse(when);
    OPENSSL_cleanse(resp.s, resp.len);
    free(resp.s);
    return 0;
}

/* A profile's credentials: 0 found, 1 absent, -1 an error. */
static int from_profile(const spw_aws_creds_opts_t *o, const aws_files_t *f, const char *name,
                        int depth, double now_s, spw_aws_creds_t *out, char *source,
                        size_t slen, spw_error_t *err)
{
    char role[512], srcp[128];
    if (profile_get(f, name, "role_arn", role, sizeof(role))) {
        if (!profile_get(f, name, "source_profile", srcp, sizeof(srcp)))
            return spw_errorf(err, "profile %s has role_arn but no source_profile (%s); "
                                   "credential_source is not supported",
                              name, f->conf_path);
        if (depth >= MAX_ROLE_DEPTH)
            return spw_errorf(err, "profile %s: more than %d source_profile hops (a loop?)",
                              name, MAX_ROLE_DEPTH);
        spw_aws_creds_t src;
        char s2[192];
        int rc = strcmp(srcp, name) == 0 ? 1 : from_profile(o, f, srcp, depth + 1, now_s, &src,
                                                             s2, sizeof(s2), err);
        if (rc == 1 && strcmp(srcp, name) != 0)
            return spw_errorf(err, "profile %s: its source_profile %s is in neither %s nor %s",
                              name, srcp, f->cred_path, f->conf_path);
        if (rc == 1) {
            /* A profile that is its own source: its static keys. */
            memset(&src, 0, sizeof(src));
            if (!profile_get(f, name, "aws_access_key_id", src.access_key_id,
                             sizeof(src.access_key_id)) ||
                !profile_get(f, name, "aws_secret_access_key", src.secret_access_key,
                             sizeof(src.secret_access_key)))
                return spw_errorf(err, "profile %s is its own source_profile but has no keys",
                                  name);
        } else if (rc < 0) {
            return -1;
        }
        rc = assume_role(o, f, name, role, &src, now_s, out, err);
        OPENSSL_cleanse(&src, sizeof(src));
        if (rc < 0)
            return -1;
        snprintf(source, slen, "role %s via profile %s", role, name);
        return 0;
    }
    memset(out, 0, sizeof(*out));
    int k = profile_get(f, name, "aws_access_key_id", out->access_key_id,
                        sizeof(out->access_key_id));
    int s = profile_get(f, name, "aws_secret_access_key", out->secret_access_key,
                        sizeof(out->secret_access_key));
    profile_get(f, name, "aws_session_token", out->session_token, sizeof(out->session_token));
    if (!k && !s)
        return 1;
    if (!k || !s) {
        OPENSSL_cleanse(out, sizeof(*out));
        return spw_errorf(err, "profile %s has only one of aws_access_key_id and "
                               "aws_secret_access_key (%s)",
                          name, f->cred_path);
    }
    snprintf(source, slen, "profile %s", name);
    return 0;
}

/* ---- IMDSv2 ------------------------------------------------------------ */

static int from_imds(spw_aws_creds_t *out, char *source, size_t slen, spw_error_t *err)
{
    const char *base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                           ? env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                           : "http://169.254.169.254";
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        bl--;
    char url[1024], tokhdr[256], role[256];
    long status;
    spw_strbuf_t r = {0};
    snprintf(url, sizeof(url), "%.*s/latest/api/token", (int)bl, base);
    const char *const put_hdr[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
    if (spw_aws_http("PUT", url, put_hdr, "", IMDS_TIMEOUT_MS, &status, &r, err) < 0)
        return -1;
    if (status != 200 || !r.s || r.len >= 200) {
        free(r.s);
        return spw_errorf(err, "IMDSv2 at %.*s: the token PUT answered HTTP %ld", (int)bl, base,
                          status);
    }
    snprintf(tokhdr, sizeof(tokhdr), "X-aws-ec2-metadata-token: %s", r.s);
    OPENSSL_cleanse(r.s, r.len);
    free(r.s);
    r = (spw_strbuf_t){0};
    const char *const get_hdr[] = {tokhdr, NULL};
    snprintf(url, sizeof(url), "%.*s/latest/meta-data/iam/security-credentials/", (int)bl, base);
    int rc = spw_aws_http("GET", url, get_hdr, NULL, IMDS_TIMEOUT_MS, &status, &r, err);
    if (rc == 0 && (status != 200 || !r.s || !r.s[0])) {
        rc = spw_errorf(err, "IMDSv2 at %.*s: no instance role (HTTP %ld)", (int)bl, base,
                        status);
    }
    if (rc < 0) {
        free(r.s);
        OPENSSL_cleanse(tokhdr, sizeof(tokhdr));
        return -1;
    }
    snprintf(role, sizeof(role), "%.*s", (int)strcspn(r.s, "\r\n"), r.s);
    free(r.s);
    r = (spw_strbuf_t){0};
    snprintf(url, sizeof(url), "%.*s/latest/meta-data/iam/security-credentials/%s", (int)bl,
             base, role);
    rc = spw_aws_http("GET", url, get_hdr, NULL, IMDS_TIMEOUT_MS, &status, &r, err);
    OPENSSL_cleanse(tokhdr, sizeof(tokhdr));
    if (rc < 0) {
        free(r.s);
        return -1;
    }
    json_t *j = status == 200 && r.s ? json_loadb(r.s, r.len, 0, NULL) : NULL;
    if (r.s)
        OPENSSL_cleanse(r.s, r.len);
    free(r.s);
    const char *k = json_string_value(json_object_get(j, "AccessKeyId"));
    const char *s = json_string_value(json_object_get(j, "SecretAccessKey"));
    const char *t = json_string_value(json_object_get(j, "Token"));
    const char *x = json_string_value(json_object_get(j, "Expiration"));
    memset(out, 0, sizeof(*out));
    if (!k || !s || put(out->access_key_id, sizeof(out->access_key_id), k) ||
        put(out->secret_access_key, sizeof(out->secret_access_key), s) ||
        put(out->session_token, sizeof(out->session_token), t ? t : "")) {
        json_decref(j);
        OPENSSL_cleanse(out, sizeof(*out));
        return spw_errorf(err, "IMDSv2 at %.*s: role %s's credentials are unreadable (HTTP %ld)",
                          (int)bl, base, role, status);
    }
    out->expires_s = x ? spw_ec2_time_parse(x) : 0;
    json_decref(j);
    snprintf(source, slen, "instance role %s", role);
    return 0;
}

/* ---- The chain ----------------------------------------------------------- */

int spw_aws_creds_resolve(const spw_aws_creds_opts_t *o, double now_s, spw_aws_creds_t *out,
                          char *source, size_t slen, spw_error_t *err)
{
    const char *k = env("AWS_ACCESS_KEY_ID"), *s = env("AWS_SECRET_ACCESS_KEY");
    memset(out, 0, sizeof(*out));
    if (k && s) {
        const char *t = env("AWS_SESSION_TOKEN");
        if (put(out->access_key_id, sizeof(out->access_key_id), k) ||
            put(out->secret_access_key, sizeof(out->secret_access_key), s) ||
            put(out->session_token, sizeof(out->session_token), t ? t : "")) {
            OPENSSL_cleanse(out, sizeof(*out));
            return spw_errorf(err, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or "
                                   "AWS_SESSION_TOKEN is longer than AWS issues");
        }
        snprintf(source, slen, "environment");
        return 0;
    }
    const char *named = o->profile ? o->profile : env("AWS_PROFILE");
    const char *profile = named ? named : "default";
    aws_files_t f;
    memset(&f, 0, sizeof(f));
    files_load(&f);
    int rc = from_profile(o, &f, profile, 0, now_s, out, source, slen, err);
    if (rc == 1 && named)
        rc = spw_errorf(err, "AWS profile '%s' is in neither %s nor %s", profile, f.cred_path,
                        f.conf_path);
    files_free(&f);
    if (rc <= 0)
        return rc;
    /* No default profile: the instance's role. */
    const char *off = env("AWS_EC2_METADATA_DISABLED");
    if (off && strcasecmp(off, "true") == 0)
        return spw_errorf(err, "no AWS credentials: none in the environment, no profile "
                               "'default', and IMDS is disabled (AWS_EC2_METADATA_DISABLED)");
    spw_error_t why = {{0}};
    if (from_imds(out, source, slen, &why) == 0)
        return 0;
    return spw_errorf(err, "no AWS credentials: none in the environment (AWS_ACCESS_KEY_ID), "
                           "no profile 'default', and no instance role (%s)",
                      why.text);
}

int spw_aws_creds_get(spw_aws_creds_cache_t *c, const spw_aws_creds_opts_t *o, double now_s,
                      const spw_aws_creds_t **out, spw_error_t *err)
{
    int due = c->have && c->creds.expires_s > 0 &&
              now_s >= c->creds.expires_s - SPW_AWS_CREDS_REFRESH_S;
    if (!c->have || due) {
        spw_aws_creds_t fresh;
        char source[sizeof(c->source)];
        if (spw_aws_creds_resolve(o, now_s, &fresh, source, sizeof(source), err) < 0) {
            /* Old credentials that still work keep serving. */
            if (c->have && (c->creds.expires_s == 0 || now_s < c->creds.expires_s)) {
                *out = &c->creds;
                return 0;
            }
            return -1;
        }
        c->creds = fresh;
        OPENSSL_cleanse(&fresh, sizeof(fresh));
        memcpy(c->source, source, sizeof(source));
        c->have = 1;
    }
    *out = &c->creds;
    return 0;
}
