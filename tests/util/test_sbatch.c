/* test_sbatch.c: util/sbatch reads the #SBATCH directives of Slurm batch
 * scripts: GPUs, nodes, time, name and output, and where they stop. */
#include <string.h>

#include "tap.h"
#include "util/sbatch.h"

static int parse(const char *text, spw_sbatch_t *s, spw_error_t *err)
{
    return spw_sbatch_parse("job.sh", text, strlen(text), s, err);
}

int main(void)
{
    spw_sbatch_t s;
    spw_error_t err;

    if (ok(parse("#!/bin/bash\n"
                 "#SBATCH --job-name=train\n"
                 "#SBATCH --nodes=2\n"
                 "#SBATCH --gres=gpu:a100:4   # per node\n"
                 "#SBATCH -t 1-02:00:00\n"
                 "#SBATCH --output=train-%j.out\n"
                 "#SBATCH --partition=gpu\n"
                 "\n"
                 "srun python train.py\n"
                 "#SBATCH --gpus=99\n", &s, &err) == 0, "a typical script")) {
        is_str(s.name, "train", "--job-name");
        is(s.nodes, 2, "--nodes 2");
        is(s.gpus_per_node, 4, "--gres=gpu:a100:4: 4 per node");
        is_str(s.model, "A100", "its model, as the fleet writes it");
        is(spw_sbatch_total_gpus(&s), 8, "8 GPUs in all");
        is_double(s.time_s, 93600, 0, "-t 1-02:00:00 = 26 h");
        is_str(s.output, "train-%j.out", "--output keeps its pattern");
        is_str(s.ignored, "--partition", "--partition is noted as ignored");
        ok(s.gpus == 0, "a directive after the first command is not read");
        spw_sbatch_free(&s);
    }
    if (ok(parse("#SBATCH -G 2\n#SBATCH -J eval\n#SBATCH --time=30\n#SBATCH -N 1-3\n", &s,
                 &err) == 0, "short options")) {
        is(spw_sbatch_total_gpus(&s), 2, "-G 2");
        is_str(s.name, "eval", "-J eval");
        is_double(s.time_s, 30, 0, "--time=30 (seconds, as spillway reads a bare number)");
        is(s.nodes, 1, "-N 1-3: the lower bound");
        spw_sbatch_free(&s);
    }
    if (ok(parse("#SBATCH --gres=gpu\n", &s, &err) == 0, "--gres=gpu"))
        is(spw_sbatch_total_gpus(&s), 1, "--gres=gpu is one GPU");
    spw_sbatch_free(&s);
    static const struct { const char *text, *want; } bad[] = {
        {"#SBATCH --time=soon\n", "job.sh:1: --time=soon is not understood"},
        {"#!/bin/sh\n#SBATCH --gres=gpu:x:0\n", "job.sh:2: --gres=gpu:x:0 is not understood"},
        {"#SBATCH --gres=disk:2\n", "job.sh:1: --gres=disk:2 is not understood"},
        {"#SBATCH nodes=2\n", "job.sh:1: 'nodes=2' is not an option"},
        {"#SBATCH --job-name=\n", "job.sh:1: --job-name needs a value"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err.text[0] = '\0';
        ok(parse(bad[i].text, &s, &err) == -1 && strncmp(err.text, bad[i].want,
                                                         strlen(bad[i].want)) == 0,
           "refused: %s", bad[i].want);
        if (strncmp(err.text, bad[i].want, strlen(bad[i].want)) != 0)
            diag("got: %s", err.text);
    }
    spw_sbatch_free(NULL);
    return done_testing();
}
