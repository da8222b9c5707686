/* netlibs.h: libcurl, libxml2 and libmicrohttpd are opened on first use
 * (netlibs.c), so that a CLI process that talks to no cloud and serves
 * nothing never loads them. */
#ifndef SPW_UTIL_NETLIBS_H
#define SPW_UTIL_NETLIBS_H

/* Why libcurl, libxml2 or libmicrohttpd could not be loaded ("cannot load libcurl.so.4
 * (...): install Debian's libcurl4"), or NULL when nothing failed. */
const char *spw_netlibs_error(void);

#endif
