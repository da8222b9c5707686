/* fuzz_client.c: libFuzzer driver for the CLI's HTTP/1.1 answer reader
 * (read_response in src/cli/client.c): any bytes, as a server would send
 * them, read from a socket pair until the reader stops.  The reader is
 * static, so the driver includes the file (and client_fmt.c,
 * client_context.c and client_tls.c, which it uses): it is the code the
 * CLI runs. */
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/client.c"
#include "cli/client_context.c"
#include "cli/client_fmt.c"
#include "cli/client_tls.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size > 65536 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return 0;
    /* Inputs are far below the socket's buffer: the write never blocks. */
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(sv[1], data + off, size - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(sv[1]);
    spw_client_t c;
    memset(&c, 0, sizeof(c));
    c.fd = sv[0];
    /* Answers one after another, as on a kept-alive connection. */
    for (int k = 0; k < 4 && c.fd >= 0; k++) {
        spw_resp_t r;
        memset(&r, 0, sizeof(r));
        int rc = read_response(&c, &r, k == 3);
        if (rc == 0 && r.body && r.len && r.body[r.len] != '\0')
            abort();   /* bodies are kept NUL-terminated */
        free(r.body);
        if (rc != 0)
            break;
    }
    if (c.fd >= 0)
        close(c.fd);
    free(c.rbuf);
    return 0;
}
