/* serve.h: `spillway serve`, the daemon's entry point (serve.c). */
#ifndef SPW_CLI_SERVE_H
#define SPW_CLI_SERVE_H

/* Runs the daemon until SIGINT/SIGTERM; returns the exit status. */
int spw_cli_serve(int argc, char **argv);

#endif
