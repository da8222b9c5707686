/* config.h: moved to config/config.h; only src/daemon/ still includes it
 * here.  Delete this file once those includes name config/config.h. */
#ifndef SPW_SIM_CONFIG_H
#define SPW_SIM_CONFIG_H

#include "config/config.h"

#endif
