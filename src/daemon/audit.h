/* audit.h: the audit log of `spillway serve`: every mutating API call and
 * admin action (submit, cancel, preempt, node down/up, token reload, and
 * mutating calls refused for their token) as a row of the SQLite table
 * `audit` in the daemon's database: when, which token (by name, never the
 * secret), its team, the action, its target and the HTTP status answered.
 *
 * Cost: spw_audit_add only appends to an in-memory list under its own
 * mutex; the daemon's loop writes the list with one prepared insert per
 * row inside the transaction it opens each turn (spw_audit_flush), so the
 * submit path pays no extra commit.  Rows reach the disk within a turn
 * (daemon.tick_s); a kill -9 can lose the rows of that last turn only.
 *
 * The table is created with CREATE TABLE IF NOT EXISTS: it is not part of
 * the store's versioned schema. */
#ifndef SPW_DAEMON_AUDIT_H
#define SPW_DAEMON_AUDIT_H

#include <jansson.h>
#include <stddef.h>

#include "util/error.h"

struct sqlite3;
typedef struct spw_audit spw_audit_t;

/* Creates the table and its index when missing and prepares the insert on
 * db (borrowed; it must outlive the log).  NULL with err. */
spw_audit_t *spw_audit_open(struct sqlite3 *db, spw_error_t *err);

/* Writes what is still queued (best effort) and frees.  NULL-safe. */
void spw_audit_close(spw_audit_t *a);

/* Queues one row; thread-safe, never blocks on the database.  Strings are
 * copied; NULL ones are stored as NULL.  ts is unix seconds. */
void spw_audit_add(spw_audit_t *a, double ts, const char *token_name, const char *team,
                   const char *action, const char *target, int status);

/* Inserts the queued rows, oldest first, on the database; the caller owns
 * the connection for the call (the daemon's lock).  Inside an open
 * transaction the rows join it; otherwise they get one of their own.
 * Rows that could not be written stay queued.  0 or -1 with err. */
int spw_audit_flush(spw_audit_t *a, spw_error_t *err);

/* Rows queued and not yet written, for tests. */
size_t spw_audit_pending(spw_audit_t *a);

/* Rows with ts >= since_ts (and team == team unless NULL), newest first, at
 * most limit: *out = {"entries":[{"ts","token","team","action","target",
 * "status"}...]}.  Flush first to see the latest.  0 or -1 with err. */
int spw_audit_query(spw_audit_t *a, double since_ts, const char *team, long limit,
                    json_t **out, spw_error_t *err);

#endif
