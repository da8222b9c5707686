/* plan.h: `spillway plan`, the capacity planner's command line. */
#ifndef SPW_CLI_PLAN_H
#define SPW_CLI_PLAN_H

extern const char spw_cli_plan_usage[];
int spw_cli_plan(int argc, char **argv);

#endif
