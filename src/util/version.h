/* version.h: the one place spillway's version is written. */
#ifndef SPW_UTIL_VERSION_H
#define SPW_UTIL_VERSION_H

#ifndef SPW_VERSION
#define SPW_VERSION "0.1.0"
#endif

#endif
