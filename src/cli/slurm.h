/* slurm.h: `spillway slurm`, helpers around a Slurm cluster (slurm.c). */
#ifndef SPW_CLI_SLURM_H
#define SPW_CLI_SLURM_H

/* `spillway slurm nodes|resume|suspend ...`; returns the exit status. */
int spw_cli_slurm(int argc, char **argv);

#endif
