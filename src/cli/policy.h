/* policy.h: `spillway policy check|test`, reading the governance of a config
 * without running anything (policy.c). */
#ifndef SPW_CLI_POLICY_H
#define SPW_CLI_POLICY_H

/* Runs `spillway policy ...` (argv[0] is "policy"); returns the exit status:
 * 0 valid / the job may run somewhere, 1 it may run nowhere, 2 bad input. */
int spw_cli_policy(int argc, char **argv);

#endif
