/* client.h: the command-line client of `spillway serve`: submit, queue,
 * show, cancel, explain, logs, pools, costs and admin, each a thin caller of
 * the HTTP API in docs/api.md.
 *
 * Each entry point takes the command's own argv (argv[0] is the command
 * name), prints, and returns the process exit status:
 *   0  done;
 *   1  the daemon answered with an error (its message is on stderr), its
 *      answer could not be read, or stdout could not be written;
 *   2  bad usage, or the daemon could not be reached at all.
 * Usage errors exit(2) from inside the entry point, as in main.c. */
#ifndef SPW_CLI_CLIENT_H
#define SPW_CLI_CLIENT_H

int spw_cli_submit(int argc, char **argv);
int spw_cli_queue(int argc, char **argv);
int spw_cli_show(int argc, char **argv);
int spw_cli_cancel(int argc, char **argv);
int spw_cli_explain(int argc, char **argv);
int spw_cli_logs(int argc, char **argv);
int spw_cli_context(int argc, char **argv);
int spw_cli_pools(int argc, char **argv);
int spw_cli_costs(int argc, char **argv);
int spw_cli_audit(int argc, char **argv);
int spw_cli_instances(int argc, char **argv);
int spw_cli_admin(int argc, char **argv);

/* The --help texts, for `spillway help COMMAND`. */
extern const char spw_cli_submit_usage[];
extern const char spw_cli_queue_usage[];
extern const char spw_cli_show_usage[];
extern const char spw_cli_cancel_usage[];
extern const char spw_cli_explain_usage[];
extern const char spw_cli_logs_usage[];
extern const char spw_cli_context_usage[];
extern const char spw_cli_pools_usage[];
extern const char spw_cli_costs_usage[];
extern const char spw_cli_audit_usage[];
extern const char spw_cli_instances_usage[];
extern const char spw_cli_admin_usage[];

#endif
