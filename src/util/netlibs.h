/* netlibs.h: libcurl and libxml2 are opened on first use (netlibs.c), so
 * that a CLI process that talks to no cloud never loads them. */
#ifndef SPW_UTIL_NETLIBS_H
#define SPW_UTIL_NETLIBS_H

/* Why libcurl or libxml2 could not be loaded ("cannot load libcurl.so.4
 * (...): install Debian's libcurl4"), or NULL when nothing failed. */
const char *spw_netlibs_error(void);

#endif
