/* test_audit.c: the audit log (src/daemon/audit.h) on a real SQLite file:
 * rows queue without touching the database, a flush writes them (joining
 * an open transaction, or in one of its own), a rolled-back transaction
 * loses nothing that was not flushed, queries filter by time and team,
 * newest first, with a limit, and reopening finds the table. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/audit.h"
#include "tap.h"

static long count_rows(sqlite3 *db)
{
    sqlite3_stmt *s;
    long n = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM audit", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
}

int main(void)
{
    char path[256];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/spw-audit-XXXXXX", base && *base ? base : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return 2;
    close(fd);

    sqlite3 *db;
    ok(sqlite3_open(path, &db) == SQLITE_OK, "open %s", path);
    spw_error_t err = {{0}};
    spw_audit_t *a = spw_audit_open(db, &err);
    ok(a != NULL, "the table is created: %s", err.text);
    is(count_rows(db), 0, "empty");

    spw_audit_add(a, 100, "ml-ci", "ml", "submit", "j-000001", 201);
    spw_audit_add(a, 101, "cv-1", "cv", "cancel", "j-000001", 404);
    spw_audit_add(a, 102, NULL, NULL, "cancel", "j-000002", 401);
    is((long)spw_audit_pending(a), 3, "three rows queued");
    is(count_rows(db), 0, "... and none written yet");
    ok(spw_audit_flush(a, &err) == 0, "flush on its own transaction");
    is(count_rows(db), 3, "three rows written");
    is((long)spw_audit_pending(a), 0, "nothing queued");

    /* Inside a transaction the rows join it: a rollback takes them away. */
    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    spw_audit_add(a, 103, "admin-1", NULL, "node.down", "local/0", 200);
    ok(spw_audit_flush(a, &err) == 0, "flush inside an open transaction");
    ok(!sqlite3_get_autocommit(db), "the transaction is still open (the flush joined it)");
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    is(count_rows(db), 3, "rolled back with the transaction");
    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    spw_audit_add(a, 104, "admin-1", NULL, "node.up", "local/0", 200);
    spw_audit_flush(a, &err);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    is(count_rows(db), 4, "committed with it");

    json_t *out = NULL;
    ok(spw_audit_query(a, 0, NULL, 1000, &out, &err) == 0, "query all");
    json_t *e = json_object_get(out, "entries");
    is((long)json_array_size(e), 4, "four entries");
    is_str(json_string_value(json_object_get(json_array_get(e, 0), "action")), "node.up",
           "newest first");
    json_t *last = json_array_get(e, 3);
    is_str(json_string_value(json_object_get(last, "token")), "ml-ci", "the token's name");
    is((long)json_integer_value(json_object_get(last, "status")), 201, "the status");
    ok(json_is_null(json_object_get(json_array_get(e, 1), "token")),
       "an unknown token has no name (null)");
    json_decref(out);

    ok(spw_audit_query(a, 0, "cv", 1000, &out, &err) == 0, "query team cv");
    e = json_object_get(out, "entries");
    ok(json_array_size(e) == 1 &&
           strcmp(json_string_value(json_object_get(json_array_get(e, 0), "team")), "cv") == 0,
       "only cv's row");
    json_decref(out);
    ok(spw_audit_query(a, 101.5, NULL, 1000, &out, &err) == 0, "query since 101.5");
    is((long)json_array_size(json_object_get(out, "entries")), 2, "the two rows from then on");
    json_decref(out);
    ok(spw_audit_query(a, 0, NULL, 1, &out, &err) == 0, "limit 1");
    is((long)json_array_size(json_object_get(out, "entries")), 1, "one row");
    json_decref(out);

    spw_audit_add(a, 105, "ml-ci", "ml", "cancel", "j-000001", 200);
    spw_audit_close(a);  /* writes what is queued */
    is(count_rows(db), 5, "close flushes the queue");
    a = spw_audit_open(db, &err);
    ok(a != NULL, "reopening finds the table (CREATE TABLE IF NOT EXISTS)");
    is(count_rows(db), 5, "with its rows");
    spw_audit_close(a);
    sqlite3_close(db);
    unlink(path);
    return done_testing();
}
