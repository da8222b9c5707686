/* jobuser.h: who the daemon's jobs run as, and which of the daemon's own
 * environment variables they inherit.  A daemon running as root runs every
 * job as an unprivileged user (its team's run_as, else daemon.run_as, else
 * spillway-job), never as root unless daemon.allow_root_jobs; a daemon not
 * running as root runs jobs as itself and refuses any run_as naming
 * someone else.  Either way jobs inherit only an allow-list of the daemon's
 * variables, so its tokens never reach them. */
#ifndef SPW_DAEMON_JOBUSER_H
#define SPW_DAEMON_JOBUSER_H

#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"
#include "daemon/jobspec.h"
#include "util/error.h"

/* The user jobs run as when the daemon is root and the config names none. */
#define SPW_JOB_USER_DEFAULT "spillway-job"

/* One resolved user. */
typedef struct spw_jobuser {
    int set;                /* 1: switch to uid/gid; 0: the daemon's own */
    uid_t uid;              /* its user id */
    gid_t gid;              /* its primary group, the only one jobs keep */
    char *name;             /* owned user name; NULL when !set */
    char *home;             /* owned home directory ("/" when none) */
} spw_jobuser_t;

typedef struct spw_jobusers {
    spw_jobuser_t dflt;     /* for teams without their own */
    spw_jobuser_t *teams;   /* owned, nteams: teams with a run_as */
    const char **team_names; /* owned array; names borrowed from the config */
    size_t nteams;
    const char **env_pass;  /* owned NULL-terminated array (strings borrowed
                               from static tables and the config): the
                               daemon's variables jobs inherit */
} spw_jobusers_t;

/* Resolves dc's run_as settings (dc borrowed until clear).  0, or -1 with a
 * sentence saying what to change, and *us left empty. */
int spw_jobusers_init(spw_jobusers_t *us, const spw_daemon_conf_t *dc, spw_error_t *err);

/* Whether the teams cfg knows (its teams: entries and its tokens') run as
 * users of their own, as us resolved them from cfg: 0 when they do, or us
 * does not switch users, or daemon.share_run_as allows sharing; -1 with a
 * sentence naming two teams that would share a user, and how to fix it. */
int spw_jobusers_check_shared(const spw_jobusers_t *us, const spw_config_t *cfg,
                              spw_error_t *err);

/* The user jobs of `team` (NULL or "" = none) run as; borrowed from us. */
const spw_jobuser_t *spw_jobusers_for(const spw_jobusers_t *us, const char *team);

/* 1 when jobs run as users other than the daemon's (it is root). */
int spw_jobusers_switch(const spw_jobusers_t *us);

/* Frees what init made.  NULL-safe. */
void spw_jobusers_clear(spw_jobusers_t *us);

/* Whether user u (set) can pass through every directory above path (links
 * resolved): 1 yes (or u is not set, or path does not resolve); 0 no, with the first directory
 * that stops it copied to blocker (cap bytes).  Reads modes only: ACLs and
 * supplementary groups are not considered (jobs keep their primary group
 * only). */
int spw_jobuser_reaches(const spw_jobuser_t *u, const char *path, char *blocker, size_t cap);

/* As spw_jobuser_reaches, and u may also enter path itself when it is a
 * directory on this machine: 1 yes (or it is not here: a host of a remote
 * backend may have it); 0 no, with the directory that stops it in blocker. */
int spw_jobuser_enters(const spw_jobuser_t *u, const char *path, char *blocker, size_t cap);

/* The variables a job is launched with, for every backend: u's HOME, USER
 * and LOGNAME (when u is set), then the spec's env[0..nenv) without the
 * names spw_jobspec_env_reserved() refuses (a spec stored before they were
 * refused keeps none of them), then own and extra (NULL-terminated
 * "NAME=VALUE", spillway's; either may be NULL), later ones winning.  The
 * daemon's own variables are not in it: backends add those env_pass lets
 * through where the job runs beside the daemon (spw_launch_t.env_pass).
 * Returns a NULL-terminated array; caller frees with spw_jobenv_free. */
char **spw_jobenv_build(const spw_jobuser_t *u, const spw_env_var_t *env, size_t nenv,
                        const char *const *own, const char *const *extra);

/* Frees what spw_jobenv_build returned.  NULL-safe. */
void spw_jobenv_free(char **env);

#endif
