/* test_command.c: the command cloud provider against a site's cloud written
 * in Python (scripts/command-cloud.py, the contract of command.h):
 * options refused with a sentence; acquire answers at once while the site's
 * command runs on the op thread; READY with the address from describe; the
 * same token asked again buys nothing; release reaches the site; a
 * preemption and the site's reason; a refusal with its block class, TTL and
 * no cost; an account-wide refusal in health(); a command that hangs is
 * killed at timeout_s; list() finds orphans; reconcile() after a restart
 * finds an instance whose acquire had not answered, by its spillway id. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "providers/provider.h"
#include "providers/registry.h"

static char dir[256];           /* the site's state, removed at the end */
static char cmdopt[1024];       /* "command=python3 command-cloud.py DIR" */
static char s_aws[] = "aws", s_r[] = "us-east-1", s_za[] = "us-east-1a", s_t[] = "g4dn.xlarge";
static spw_offer_t offers[1];
static double clock_s = 1000;   /* the daemon clock the test passes */

static const struct spw_provider_ops *ops;

static void *make(const char *const *options, spw_error_t *err)
{
    spw_provider_conf_t c = {.type = "command", .offers = offers, .noffers = 1,
                             .name = "site", .daemon_id = "d-test", .options = options};
    void *pv = NULL;
    return spw_provider_create(&c, &ops, &pv, err) == 0 ? pv : NULL;
}

static void touch(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void unflag(const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    unlink(p);
}

/* Lines of calls.log that start with op. */
static int calls(const char *op)
{
    char p[512], line[8192];
    snprintf(p, sizeof(p), "%s/calls.log", dir);
    FILE *f = fopen(p, "r");
    int n = 0;
    size_t l = strlen(op);
    while (f && fgets(line, sizeof(line), f))
        n += strncmp(line, op, l) == 0 && line[l] == ' ';
    if (f)
        fclose(f);
    return n;
}

/* Events polled but not waited for yet (a poll may bring several). */
static spw_inst_event_t backlog[64];
static size_t nbacklog;

static int take(spw_inst_event_kind_t k, const char *id, spw_inst_event_t *got)
{
    for (size_t e = 0; e < nbacklog; e++)
        if (backlog[e].kind == k && (!id || strcmp(backlog[e].instance_id, id) == 0)) {
            if (got)
                *got = backlog[e];
            backlog[e] = backlog[--nbacklog];
            return 1;
        }
    return 0;
}

/* Polls until an event of kind k about id (NULL = any) comes, or ~20 s:
 * waits on the provider's answer, not on a fixed time. */
static int wait_event(void *pv, spw_inst_event_kind_t k, const char *id, spw_inst_event_t *got)
{
    for (int i = 0; i < 2000; i++) {
        if (take(k, id, got))
            return 1;
        nbacklog += ops->poll(pv, clock_s, backlog + nbacklog, 64 - nbacklog);
        clock_s += 0.01;
        if (take(k, id, got))
            return 1;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return 0;
}

static int wait_calls(const char *op, int n)
{
    for (int i = 0; i < 2000 && calls(op) < n; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    return calls(op) >= n;
}

int main(void)
{
    offers[0] = (spw_offer_t){s_aws, s_r, s_za, s_t, -1, 1, 0.526, 0.158, 0, NULL, 0, 0};
    char here[512];
    if (!getcwd(here, sizeof(here)) || access("/usr/bin/python3", X_OK) != 0) {
        plan(1);
        ok(1, "# SKIP needs /usr/bin/python3 (apt-get install python3)");
        return 0;
    }
    snprintf(dir, sizeof(dir), "/tmp/spw-cmd-XXXXXX");
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    snprintf(cmdopt, sizeof(cmdopt), "command=/usr/bin/python3 %s/scripts/command-cloud.py %s",
             here, dir);
    spw_error_t err;

    /* ---- options ---- */
    const char *none[] = {"timeout_s=5", NULL};
    ok(!make(none, &err) && strstr(err.text, "no acquire command"),
       "an account without commands is refused: %s", err.text);
    const char *unknown[] = {cmdopt, "colour=blue", NULL};
    ok(!make(unknown, &err) && strstr(err.text, "colour") && strstr(err.text, "known:"),
       "an unknown option is refused, naming the known ones: %s", err.text);
    const char *badt[] = {cmdopt, "timeout_s=-1", NULL};
    ok(!make(badt, &err) && strstr(err.text, "timeout_s"), "a bad timeout is refused: %s",
       err.text);

    const char *opts[] = {cmdopt, "describe_interval_s=0.2", "timeout_s=20", NULL};
    void *pv = make(opts, &err);
    ok(pv != NULL, "made by type through the registry");
    if (!pv)
        return diag("%s", err.text), done_testing();
    ok(ops->version >= 4 && ops->async && !ops->emulated && SPW_PROVIDER_HAS(ops, 4, list) &&
           SPW_PROVIDER_HAS(ops, 4, health), "an async version-4 provider with list and health");

    /* ---- acquire, ready, asked again ---- */
    spw_instance_t got[2];
    spw_acquire_t req = {.offer = 0, .count = 2, .spot = 1, .job_id = "j-1", .now_s = clock_s,
                         .token = "d-test.j-1.1.a"};
    spw_acquire_t notoken = req;
    notoken.token = NULL;
    ok(ops->acquire(pv, &notoken, got, &err) < 0 && errno == EINVAL,
       "an acquisition without a token is refused: %s", err.text);
    ok(ops->acquire(pv, &req, got, &err) == 0, "acquire 2 spot instances answers at once");
    ok(got[0].state == SPW_INSTANCE_BOOTING && strncmp(got[0].id, "cmd-", 4) == 0 &&
           strcmp(got[0].id, got[1].id) != 0 && strcmp(got[0].account, "site") == 0 &&
           got[0].cloud_id[0] == '\0' && got[0].price_usd_per_h == 0.158,
       "booting, spillway ids %s %s, the spot price, no cloud id yet", got[0].id, got[1].id);
    spw_inst_event_t ev;
    ok(wait_event(pv, SPW_INST_EV_READY, got[0].id, &ev) &&
           wait_event(pv, SPW_INST_EV_READY, got[1].id, NULL),
       "both become READY once the site says so");
    spw_instance_t d0;
    ok(ops->describe(pv, got[0].id, &d0, &err) == 0 && strncmp(d0.cloud_id, "site-", 5) == 0 &&
           strncmp(d0.addr, "10.9.0.", 7) == 0 && d0.state == SPW_INSTANCE_READY,
       "describe: the site's id %s and address %s", d0.cloud_id, d0.addr);
    spw_instance_t again[2];
    ok(ops->acquire(pv, &req, again, &err) == 0 && strcmp(again[0].id, got[0].id) == 0 &&
           strcmp(again[1].id, got[1].id) == 0, "the same token asked again: the same instances");
    is(calls("acquire"), 1, "and the site was asked once: nothing bought twice");
    req.count = 3;
    spw_instance_t three[3];
    ok(ops->acquire(pv, &req, three, &err) < 0 && errno == EINVAL,
       "the token with another count is refused: %s", err.text);
    req.count = 2;

    /* ---- release, preemption ---- */
    ok(ops->release(pv, &got[0], clock_s, &err) == 0 && wait_calls("release", 1),
       "release reaches the site");
    spw_instance_t d1;
    ops->describe(pv, got[1].id, &d1, &err);
    touch("preempt", d1.cloud_id);
    ok(wait_event(pv, SPW_INST_EV_PREEMPTED, got[1].id, &ev) &&
           strstr(ev.reason, "Server.SpotInstanceTermination"),
       "a preemption the site reports: %s", ev.reason);
    unflag("preempt");

    /* ---- refusals ---- */
    touch("refuse", "{\"code\":\"InsufficientInstanceCapacity\",\"message\":\"no g4dn in "
                    "us-east-1a\",\"block\":\"offer\",\"retry_after_s\":300}");
    spw_acquire_t r2 = {.offer = 0, .count = 1, .spot = 0, .job_id = "j-2", .now_s = clock_s,
                        .token = "d-test.j-2.1.a"};
    ok(ops->acquire(pv, &r2, got, &err) == 0, "an acquisition the site will refuse is queued");
    int w = wait_event(pv, SPW_INST_EV_FAILED, got[0].id, &ev);
    ok(w && ev.block == SPW_BLOCK_OFFER && ev.block_s == 300 &&
           strstr(ev.reason, "InsufficientInstanceCapacity"),
       "FAILED, blocking the offer for %g s: %s", ev.block_s, ev.reason);
    char why[256] = "";
    ok(ops->health(pv, why, sizeof(why)) == 0, "a capacity refusal leaves the account healthy");
    touch("refuse", "{\"code\":\"AuthFailure\",\"message\":\"bad key\",\"block\":\"account\"}");
    r2.token = "d-test.j-2.2.a";
    ops->acquire(pv, &r2, got, &err);
    w = wait_event(pv, SPW_INST_EV_FAILED, got[0].id, &ev);
    ok(w && ev.block == SPW_BLOCK_ACCOUNT, "an account-wide refusal: %s", ev.reason);
    ok(ops->health(pv, why, sizeof(why)) < 0 && strstr(why, "AuthFailure"), "health names it: %s",
       why);
    unflag("refuse");
    r2.token = "d-test.j-2.3.a";
    ops->acquire(pv, &r2, got, &err);
    ok(wait_event(pv, SPW_INST_EV_READY, got[0].id, NULL) && ops->health(pv, why, sizeof(why)) == 0,
       "an acquisition that succeeds clears it");
    ok(isnan(got[0].ended_s), "a live instance has no end");

    /* ---- list: orphans ---- */
    spw_instance_t lst[8];
    size_t n = 0;
    w = ops->list(pv, lst, 8, &n, &err) == 0;
    ok(w && n == 1 && strcmp(lst[0].id, got[0].id) == 0 &&
           lst[0].offer == 0 && lst[0].state == SPW_INSTANCE_READY,
       "list: the one live instance, by its spillway id, matched to its offer (%zu)", n);
    ops->destroy(pv);

    /* ---- a hung command ---- */
    const char *fast[] = {cmdopt, "timeout_s=1", "describe_interval_s=0.2", NULL};
    pv = make(fast, &err);
    touch("hang", "");
    r2.token = "d-test.j-3.1.a";
    ok(ops->acquire(pv, &r2, got, &err) == 0, "acquire returns while the site's command hangs");
    w = wait_event(pv, SPW_INST_EV_FAILED, got[0].id, &ev);
    ok(w && ev.block == SPW_BLOCK_NONE && strstr(ev.reason, "did not answer within 1 s"),
       "killed at timeout_s, a passing failure: %s", ev.reason);
    unflag("hang");

    /* ---- a restart: reconcile ---- */
    /* An acquire the site answered but the daemon did not hear of (killed
     * between): the site has the instance; the daemon's record has no
     * cloud id. */
    r2.token = "d-test.j-4.1.a";
    ops->acquire(pv, &r2, got, &err);
    wait_event(pv, SPW_INST_EV_READY, got[0].id, NULL);
    spw_instance_t known[2];
    known[0] = got[0];
    known[0].cloud_id[0] = '\0';
    known[0].state = SPW_INSTANCE_BOOTING;
    known[1] = got[0];
    snprintf(known[1].id, sizeof(known[1].id), "cmd-0000000000000000-0");
    known[1].cloud_id[0] = '\0';
    ops->destroy(pv);
    pv = make(opts, &err);
    size_t norph = 9;
    ok(ops->reconcile(pv, known, 2, clock_s, NULL, 0, &norph, &err) == 0 && norph == 0,
       "reconcile returns at once (orphans come from list)");
    w = wait_event(pv, SPW_INST_EV_LOST, known[1].id, &ev);
    ok(w,
       "an instance the site never made is LOST: %s", ev.reason);
    w = wait_event(pv, SPW_INST_EV_READY, known[0].id, NULL) &&
        ops->describe(pv, known[0].id, &d0, &err) == 0;
    ok(w && d0.cloud_id[0],
       "one the site made is found by its spillway id (%s) and becomes READY", d0.cloud_id);
    int before = calls("release");
    ops->release(pv, &d0, clock_s, &err);
    ops->destroy(pv);
    ok(calls("release") == before + 1, "destroy still runs a queued release");

    char rm[600];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
    if (system(rm) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
