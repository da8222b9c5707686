/* aws_data.h: where the AWS contract data of the tests lives (published
 * vectors and responses, never copied into this repository): $SPILLWAY_DATA,
 * else $SPW_SHARED_DATA, else ../shared/data from the repository root.
 * Test-only. */
#ifndef SPW_TESTS_AWS_DATA_H
#define SPW_TESTS_AWS_DATA_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Writes DATA/contracts/SUB to path; returns 1 if it is a directory. */
static int aws_data_dir(const char *sub, char *path, size_t len)
{
    const char *root = getenv("SPILLWAY_DATA");
    if (!root || !*root)
        root = getenv("SPW_SHARED_DATA");
    if (!root || !*root)
        root = "../shared/data";
    snprintf(path, len, "%s/contracts/%s", root, sub);
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

#endif
