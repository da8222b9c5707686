/* test_aws_creds.c: the AWS credential chain (providers/aws/creds.c):
 * the environment, profiles of the shared credentials and config files
 * (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE), role_arn +
 * source_profile through STS AssumeRole and IMDSv2 instance credentials
 * against a small loopback endpoint (tests/providers/aws_meta.py, skipped
 * without Debian's python3), refresh before expiry, and errors that name
 * what was tried and never a secret. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "providers/aws/creds.h"
#include "util/file.h"
#include "util/strbuf.h"

extern char **environ;
static char tmp[] = "/tmp/spw-aws-creds-XXXXXX";

/* Writes text to tmp/name. */
static void write_file(const char *name, const char *text)
{
    spw_strbuf_t path = {0};
    spw_strbuf_printf(&path, "%s/%s", tmp, name);
    FILE *f = fopen(path.s, "w");
    if (!f || fputs(text, f) < 0)
        diag("cannot write %s", path.s);
    if (f)
        fclose(f);
    free(path.s);
}

static void clear_env(void)
{
    const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                          "AWS_PROFILE", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL",
                          "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_DISABLED",
                          NULL};
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
}

static int resolve(spw_aws_creds_t *c, char *src, spw_error_t *err)
{
    spw_aws_creds_opts_t o = {.timeout_ms = 3000};
    src[0] = '\0';
    err->text[0] = '\0';
    return spw_aws_creds_resolve(&o, (double)time(NULL), c, src, 192, err);
}

/* No secret of this test may appear in an error's text. */
static int secret_free(const char *text)
{
    const char *s[] = {"-SECRET", "-secret", "-session", NULL};
    for (int i = 0; s[i]; i++)
        if (strstr(text, s[i]))
            return 0;
    return 1;
}

int main(void)
{
    if (!mkdtemp(tmp)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    char path[600];
    clear_env();
    snprintf(path, sizeof(path), "%s/credentials", tmp);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    snprintf(path, sizeof(path), "%s/config", tmp);
    setenv("AWS_CONFIG_FILE", path, 1);
    /* Nothing anywhere: IMDS at a closed port. */
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);

    spw_aws_creds_t c;
    char src[192];
    spw_error_t err;

    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "no AWS credentials") &&
           strstr(err.text, "127.0.0.1:1"),
       "nothing at all: refused, naming what was tried (%s)", err.text);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "AWS_EC2_METADATA_DISABLED"),
       "IMDS disabled: said so");
    unsetenv("AWS_EC2_METADATA_DISABLED");

    /* The environment first. */
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    ok(resolve(&c, src, &err) < 0, "AWS_ACCESS_KEY_ID without its secret is not credentials");
    setenv("AWS_SECRET_ACCESS_KEY", "env-SECRET", 1);
    setenv("AWS_SESSION_TOKEN", "env-session", 1);
    write_file("credentials", "[default]\naws_access_key_id = AKIAFILE\n"
                              "aws_secret_access_key = file-SECRET\n");
    ok(resolve(&c, src, &err) == 0 && strcmp(c.access_key_id, "AKIAENV") == 0 &&
           strcmp(c.secret_access_key, "env-SECRET") == 0 &&
           strcmp(c.session_token, "env-session") == 0 && c.expires_s == 0,
       "the environment wins over the files, session token included");
    is_str(src, "environment", "  source: environment");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");

    /* Profiles. */
    write_file("credentials", "# spillway test\n[default]\naws_access_key_id = AKIAFILE\n"
                              "aws_secret_access_key = file-SECRET\n\n"
                              "[dev]\n  aws_access_key_id=AKIADEV  \n"
                              "aws_secret_access_key=dev-SECRET\naws_session_token = dev-session\n"
                              "[half]\naws_access_key_id = AKIAHALF\n");
    write_file("config", "[default]\nregion = us-east-1\n[profile cfg]\n"
                         "aws_access_key_id = AKIACFG\naws_secret_access_key = cfg-SECRET\n"
                         "[profile role]\nrole_arn = arn:aws:iam::123456789012:role/spillway\n"
                         "source_profile = dev\nregion = eu-west-1\nexternal_id = ext-1\n"
                         "[profile norole]\nrole_arn = arn:aws:iam::1:role/x\n"
                         "[profile loop]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = loop2\n"
                         "[profile loop2]\nrole_arn = arn:aws:iam::1:role/y\nsource_profile = loop\n");
    ok(resolve(&c, src, &err) == 0 && strcmp(c.access_key_id, "AKIAFILE") == 0 &&
           strcmp(src, "profile default") == 0 && c.session_token[0] == '\0',
       "the default profile of AWS_SHARED_CREDENTIALS_FILE");
    setenv("AWS_PROFILE", "dev", 1);
    ok(resolve(&c, src, &err) == 0 && strcmp(c.access_key_id, "AKIADEV") == 0 &&
           strcmp(c.secret_access_key, "dev-SECRET") == 0 &&
           strcmp(c.session_token, "dev-session") == 0,
       "AWS_PROFILE=dev: its keys, trimmed, with its session token");
    setenv("AWS_PROFILE", "cfg", 1);
    ok(resolve(&c, src, &err) == 0 && strcmp(c.access_key_id, "AKIACFG") == 0,
       "keys in AWS_CONFIG_FILE's [profile cfg]");
    setenv("AWS_PROFILE", "nosuch", 1);
    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "'nosuch'") && strstr(err.text, tmp),
       "a named profile that does not exist: an error naming both files (%s)", err.text);
    setenv("AWS_PROFILE", "half", 1);
    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "only one of") && secret_free(err.text),
       "a profile with a key id and no secret: refused (%s)", err.text);
    setenv("AWS_PROFILE", "norole", 1);
    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "no source_profile"),
       "role_arn without source_profile: refused");
    setenv("AWS_PROFILE", "loop", 1);
    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "hops"), "a source_profile loop ends");
    setenv("AWS_PROFILE", "role", 1);
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
    ok(resolve(&c, src, &err) < 0 && strstr(err.text, "127.0.0.1:1") && secret_free(err.text),
       "role_arn + source_profile, STS unreachable: an error without secrets (%s)", err.text);

    /* STS and IMDS against a loopback endpoint. */
    const char *py = "/usr/bin/python3";
    char portfile[600], logfile[640];
    snprintf(portfile, sizeof(portfile), "%s/meta.url", tmp);
    snprintf(logfile, sizeof(logfile), "%s.log", portfile);
    pid_t pid = 0;
    if (access(py, X_OK) == 0) {
        char *argv[] = {(char *)py, "tests/providers/aws_meta.py", portfile, "AKIADEV", NULL};
        if (posix_spawn(&pid, py, NULL, NULL, argv, environ) != 0)
            pid = 0;
    }
    size_t len = 0;
    char *url = NULL;
    for (int i = 0; pid && i < 500 && !(url = spw_read_file(portfile, &len, NULL)); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);   /* waits for the endpoint's URL file */
    }
    if (!url) {
        printf("ok %d # skip no loopback endpoint (needs %s and tests/providers/aws_meta.py)\n",
               ++tap_run, py);
    } else {
        setenv("AWS_ENDPOINT_URL_STS", url, 1);
        double before = (double)time(NULL);
        ok(resolve(&c, src, &err) == 0 && strcmp(c.access_key_id, "ASIAROLE") == 0 &&
               strcmp(c.secret_access_key, "role-secret") == 0 &&
               strcmp(c.session_token, "role-session") == 0,
           "role_arn + source_profile: AssumeRole signed with dev's key gives the role's (%s)",
           err.text);
        ok(c.expires_s > before + 800 && c.expires_s < before + 1000,
           "  their Expiration is kept (%.0f s ahead)", c.expires_s - before);
        ok(strstr(src, "arn:aws:iam::123456789012:role/spillway") && strstr(src, "role"),
           "  source names the role (%s)", src);
        char *log = spw_read_file(logfile, &len, NULL);
        ok(log && strstr(log, "Action=AssumeRole") && strstr(log, "ExternalId=ext-1") &&
               strstr(log, "RoleArn=arn:aws:iam::123456789012:role/spillway") &&
               strstr(log, "RoleSessionName=spillway"),
           "  the AssumeRole call carried RoleArn, RoleSessionName and ExternalId");
        free(log);
        setenv("AWS_PROFILE", "cfg", 1);
        unsetenv("AWS_SHARED_CREDENTIALS_FILE");
        write_file("config", "[profile cfg]\nrole_arn = arn:aws:iam::1:role/r\n"
                             "source_profile = cfg\naws_access_key_id = AKIAOTHER\n"
                             "aws_secret_access_key = other-SECRET\n");
        ok(resolve(&c, src, &err) < 0 && strstr(err.text, "AccessDenied") &&
               strstr(err.text, "not allowed") && secret_free(err.text),
           "STS refuses: its code and message, no secret (%s)", err.text);

        /* IMDSv2: no environment, no default profile. */
        unsetenv("AWS_PROFILE");
        write_file("config", "");
        setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
        ok(resolve(&c, src, &err) == 0 && strcmp(c.access_key_id, "ASIAIMDS") == 0 &&
               strcmp(c.session_token, "imds-session") == 0 && c.expires_s > before + 3500,
           "IMDSv2: token, role, then the role's credentials with their expiry (%s)", err.text);
        is_str(src, "instance role role-a", "  source: the instance role");

        /* Refresh: cached until SPW_AWS_CREDS_REFRESH_S before expiry. */
        spw_aws_creds_cache_t cache;
        memset(&cache, 0, sizeof(cache));
        spw_aws_creds_opts_t o = {.timeout_ms = 3000};
        const spw_aws_creds_t *got = NULL;
        ok(spw_aws_creds_get(&cache, &o, before, &got, &err) == 0 &&
               strcmp(got->access_key_id, "ASIAIMDS") == 0,
           "the cache fills from the chain");
        setenv("AWS_ACCESS_KEY_ID", "AKIANEW", 1);
        setenv("AWS_SECRET_ACCESS_KEY", "new-SECRET", 1);
        ok(spw_aws_creds_get(&cache, &o, before + 60, &got, &err) == 0 &&
               strcmp(got->access_key_id, "ASIAIMDS") == 0,
           "  still valid for long: served from the cache");
        ok(spw_aws_creds_get(&cache, &o, cache.creds.expires_s - 200, &got, &err) == 0 &&
               strcmp(got->access_key_id, "AKIANEW") == 0 && got->expires_s == 0,
           "  within %.0f s of expiry: found again", SPW_AWS_CREDS_REFRESH_S);
        ok(spw_aws_creds_get(&cache, &o, before + 1e6, &got, &err) == 0 &&
               strcmp(got->access_key_id, "AKIANEW") == 0,
           "  long-term keys never expire");
        free(url);
    }
    if (pid) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    return done_testing();
}
