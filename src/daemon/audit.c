/* audit.c: the audit log (audit.h): an in-memory queue filled by the HTTP
 * threads and written by the daemon's loop into the table `audit`. */
#include "daemon/audit.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* One row waiting to be written. */
typedef struct arow {
    double ts;                  /* unix seconds */
    char *token_name;           /* owned or NULL */
    char *team;                 /* owned or NULL */
    char *action;               /* owned */
    char *target;               /* owned or NULL */
    int status;                 /* HTTP status answered */
    struct arow *next;
} arow_t;

struct spw_audit {
    struct sqlite3 *db;         /* borrowed: the daemon's store */
    sqlite3_stmt *insert;       /* the prepared insert */
    pthread_mutex_t mu;         /* guards the queue */
    arow_t *head;               /* queued rows, oldest first */
    arow_t **tail;              /* where the next row goes */
    size_t n;                   /* rows queued */
};

static const char audit_schema[] =
    "CREATE TABLE IF NOT EXISTS audit ("
    " id INTEGER PRIMARY KEY,"
    " ts REAL NOT NULL,"
    " token_name TEXT,"
    " team TEXT,"
    " action TEXT NOT NULL,"
    " target TEXT,"
    " status INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS audit_ts ON audit(ts);";

static const char audit_insert[] =
    "INSERT INTO audit(ts, token_name, team, action, target, status) VALUES (?,?,?,?,?,?)";

spw_audit_t *spw_audit_open(struct sqlite3 *db, spw_error_t *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, audit_schema, NULL, NULL, &msg) != SQLITE_OK) {
        spw_errorf(err, "cannot create the audit table: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return NULL;
    }
    spw_audit_t *a = spw_xcalloc(1, sizeof(*a));
    a->db = db;
    if (sqlite3_prepare_v2(db, audit_insert, -1, &a->insert, NULL) != SQLITE_OK) {
        spw_errorf(err, "cannot prepare the audit insert: %s", sqlite3_errmsg(db));
        free(a);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    a->tail = &a->head;
    return a;
}

static void row_free(arow_t *r)
{
    free(r->token_name);
    free(r->team);
    free(r->action);
    free(r->target);
    free(r);
}

void spw_audit_close(spw_audit_t *a)
{
    if (!a)
        return;
    spw_audit_flush(a, NULL);
    for (arow_t *r = a->head, *nx; r; r = nx) {
        nx = r->next;
        row_free(r);
    }
    sqlite3_finalize(a->insert);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static char *dup_or_null(const char *s)
{
    return s ? spw_xstrdup(s) : NULL;
}

void spw_audit_add(spw_audit_t *a, double ts, const char *token_name, const char *team,
                   const char *action, const char *target, int status)
{
    if (!a)
        return;
    arow_t *r = spw_xcalloc(1, sizeof(*r));
    r->ts = ts;
    r->token_name = dup_or_null(token_name);
    r->team = dup_or_null(team);
    r->action = spw_xstrdup(action ? action : "?");
    r->target = target && *target ? spw_xstrdup(target) : NULL;
    r->status = status;
    pthread_mutex_lock(&a->mu);
    *a->tail = r;
    a->tail = &r->next;
    a->n++;
    pthread_mutex_unlock(&a->mu);
}

size_t spw_audit_pending(spw_audit_t *a)
{
    pthread_mutex_lock(&a->mu);
    size_t n = a->n;
    pthread_mutex_unlock(&a->mu);
    return n;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

int spw_audit_flush(spw_audit_t *a, spw_error_t *err)
{
    if (!a)
        return 0;
    pthread_mutex_lock(&a->mu);
    arow_t *list = a->head;
    a->head = NULL;
    a->tail = &a->head;
    a->n = 0;
    pthread_mutex_unlock(&a->mu);
    if (!list)
        return 0;
    int own = sqlite3_get_autocommit(a->db);
    if (own && sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    for (arow_t *r = list; r; r = r->next) {
        sqlite3_stmt *s = a->insert;
        sqlite3_reset(s);
        sqlite3_bind_double(s, 1, r->ts);
        bind_text(s, 2, r->token_name);
        bind_text(s, 3, r->team);
        bind_text(s, 4, r->action);
        bind_text(s, 5, r->target);
        sqlite3_bind_int(s, 6, r->status);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        if (rc != SQLITE_DONE) {
            if (own)
                sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
    }
    if (own && sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    for (arow_t *r = list, *nx; r; r = nx) {
        nx = r->next;
        row_free(r);
    }
    return 0;
fail:
    if (err)
        spw_errorf(err, "cannot write the audit log: %s", sqlite3_errmsg(a->db));
    /* Put the rows back in front of any queued since. */
    pthread_mutex_lock(&a->mu);
    arow_t **end = &list;
    size_t n = 0;
    while (*end) {
        end = &(*end)->next;
        n++;
    }
    *end = a->head;
    if (!a->head)
        a->tail = end;
    a->head = list;
    a->n += n;
    pthread_mutex_unlock(&a->mu);
    return -1;
}

static json_t *col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    return v ? json_string((const char *)v) : json_null();
}

int spw_audit_query(spw_audit_t *a, double since_ts, const char *team, long limit,
                    json_t **out, spw_error_t *err)
{
    static const char sql[] =
        "SELECT ts, token_name, team, action, target, status FROM audit"
        " WHERE ts >= ?1 AND (?2 IS NULL OR team = ?2) ORDER BY id DESC LIMIT ?3";
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(a->db, sql, -1, &s, NULL) != SQLITE_OK)
        return spw_errorf(err, "cannot read the audit log: %s", sqlite3_errmsg(a->db));
    sqlite3_bind_double(s, 1, since_ts);
    bind_text(s, 2, team);
    sqlite3_bind_int64(s, 3, limit);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *o = json_object();
        json_object_set_new(o, "ts", json_real(sqlite3_column_double(s, 0)));
        json_object_set_new(o, "token", col_text(s, 1));
        json_object_set_new(o, "team", col_text(s, 2));
        json_object_set_new(o, "action", col_text(s, 3));
        json_object_set_new(o, "target", col_text(s, 4));
        json_object_set_new(o, "status", json_integer(sqlite3_column_int(s, 5)));
        json_array_append_new(arr, o);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return spw_errorf(err, "cannot read the audit log: %s", sqlite3_errmsg(a->db));
    }
    *out = json_pack("{s:o}", "entries", arr);
    return 0;
}
