/* test_ssh_podman.c: the podman command line the ssh backend runs for a job
 * naming an OCI image.  podman cannot start containers in the sandboxes CI
 * runs in (setrlimit is refused), so only the command line is checked here;
 * bubblewrap images run for real in tests/ssh/. */
#include <string.h>

#include "backends/ssh/ssh.h"
#include "tap.h"

static char *joined(char **v)
{
    static char buf[4096];
    buf[0] = '\0';
    for (char **a = v; *a; a++) {
        if (a != v)
            strcat(buf, " ");
        strcat(buf, *a);
    }
    return buf;
}

int main(void)
{
    const uint32_t gpus[] = {0, 3};
    const char *names[] = {"CUDA_VISIBLE_DEVICES", "RANK", NULL};
    char **v = spw_ssh_podman_argv("docker.io/library/ubuntu:22.04", "spw1.j-1.2", "/work/run",
                                   "/ckpt/j-1", gpus, 2, names);
    is_str(joined(v),
           "podman run --rm --name spw-spw1.j-1.2 --pull=missing --network=host "
           "--security-opt=label=disable --device nvidia.com/gpu=0 --device nvidia.com/gpu=3 "
           "-v /work/run:/work/run -w /work/run -v /ckpt/j-1:/ckpt/j-1 -e CUDA_VISIBLE_DEVICES "
           "-e RANK docker.io/library/ubuntu:22.04",
           "GPUs as CDI devices, workdir and checkpoint mounted, env passed by name");
    spw_ssh_argv_free(v);

    v = spw_ssh_podman_argv("oci-archive:/images/train.tar", "t.j.1", NULL, NULL, NULL, 0, NULL);
    is_str(joined(v),
           "podman run --rm --name spw-t.j.1 --pull=missing --network=host "
           "--security-opt=label=disable oci-archive:/images/train.tar",
           "no GPU, no workdir, no env: only the image");
    spw_ssh_argv_free(v);

    char q[64] = "";
    ok(spw_ssh_quote(q, sizeof(q), "it's") == 0 && strcmp(q, "'it'\\''s'") == 0,
       "shell quoting of a single quote: %s", q);
    char small[4] = "";
    ok(spw_ssh_quote(small, sizeof(small), "abcdef") < 0 && small[0] == '\0',
       "quoting that does not fit leaves the buffer alone");
    spw_ssh_argv_free(NULL);
    return done_testing();
}
